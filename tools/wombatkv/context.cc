#include "tools/wombatkv/context.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <string_view>
#include <utility>

#include "base/setting_text.h"
#include "config/config.h"
#include "config/unknown_settings.h"
#include "connect/open_client_store.h"
#include "object/s3/l2_from_config.h"
#include "store/data_dir_owner.h"
#include "tools/wombatkv/exit_codes.h"
#include "tools/wombatkv/setting_flags.h"
#include "wombatkv/env.h"

namespace wombatkv::cli {

int Context::Validate() {
  out.Configure(opts.json, opts.quiet);
  out.SetRemote(remote());
  WarnAboutUnknownSettings([&](const std::string& line) { out.Warn(line); });
  if (Status s = ValidateNamespace(opts.ns); !s.ok()) {
    return out.Error("--namespace", s, kNamespaceHint);
  }
  auto parsed = Fingerprint::FromHex(opts.fingerprint_hex, "--fingerprint");
  if (!parsed.ok()) {
    return out.Error("--fingerprint", parsed.status(),
                     "pass the 24-hex-digit digest of the model identity (WMBT_KV_FINGERPRINT)");
  }
  fp = *parsed;
  if (opts.data_dir.empty()) {
    return out.Usage("--data-dir", "the data directory is empty",
                     "pass --data-dir DIR or set WMBT_KV_DATA_DIR");
  }
  auto wait = ParseDurationFlag(opts.lock_wait);
  if (!wait) {
    return out.Usage("--lock-wait", NotADuration(opts.lock_wait),
                     std::string(kDurationFlagHint) + "; 0 does not wait");
  }
  opts.lock_wait_us = *wait;
  return kExitOk;
}

std::string Context::RemoteName() const {
  if (!opts.remote_prefix.empty()) {
    return "wombatkvd (WMBT_KV_REMOTE_PREFIX=" + opts.remote_prefix + ")";
  }
  if (!opts.tcp_addr.empty()) return "wombatkvd (WMBT_KV_TCP_ADDR=" + opts.tcp_addr + ")";
  return "";
}

int Context::RequireLocalPlanes(std::string_view command) {
  if (!remote()) return kExitOk;
  return out.Error(
      command,
      Status::FailedPrecondition(std::string(command) +
                                 " works on the data directory's planes (L2, and L1 when "
                                 "no process owns it) directly, not through " +
                                 RemoteName()),
      "run it on the daemon's host without --remote-prefix/--tcp-addr (unset "
      "WMBT_KV_REMOTE_PREFIX and WMBT_KV_TCP_ADDR), with --data-dir set to the daemon's data "
      "directory and the daemon's WMBT_KV_BUCKET; L2 checks, repairs and gc are safe while the "
      "daemon runs, L1 is checked and repaired only while it is stopped");
}

namespace {

// Whether opening failed because a `wombatkv` command (not a daemon or an engine) holds the data
// directory: the LOCK's note names the program (src/store/store_open.cc). A holder with no note
// yet is one between taking the lock and writing its note (commands in parallel meet that).
bool HeldByAnotherCommand(const Status& s) {
  const std::string& m = s.message();
  return s.code() == Code::kFailedPrecondition && m.find(" is in use: ") != std::string::npos &&
         (HeldByProgram(m, "wombatkv") || m.find("(no owner note)") != std::string::npos);
}

// Whether some process holds the data directory's LOCK now (taken and let go at once if not,
// noted as a wombatkv command's, so that another command waiting meanwhile waits on).
bool LockIsHeld(const std::string& data_dir) {
  auto lock = PosixFileSystem()->LockFile(data_dir + "/LOCK", DataDirOwnerNote());
  return !lock.ok() && lock.status().code() == Code::kFailedPrecondition;
}

}  // namespace

int Context::RequireDataDir() {
  std::error_code ec;
  if (remote() || !opts.config.http_addr.empty() || !opts.config.s3_bucket.empty()) return kExitOk;
  const auto type = std::filesystem::status(opts.data_dir, ec).type();
  const char* const hint =
      "check --data-dir (or WMBT_KV_DATA_DIR); only a command that stores creates it";
  if (type == std::filesystem::file_type::directory) {
    // A directory some store has used holds one of these; any other is left untouched (a read
    // would otherwise create a LOCK, l1/ and l2/ in it).
    for (const char* name : {"LOCK", "l1", "l2"}) {
      if (std::filesystem::exists(opts.data_dir + "/" + name, ec)) return kExitOk;
      // Not knowable (a directory this user may not read): the open says why.
      if (ec && ec != std::errc::no_such_file_or_directory) return kExitOk;
    }
    return out.Error("open data directory " + opts.data_dir,
                     Status::NotFound(opts.data_dir +
                                      " is not a WombatKV data directory (no LOCK, l1/ or l2/ in "
                                      "it), so nothing is stored there"),
                     hint, {{"data_dir", opts.data_dir}});
  }
  if (type != std::filesystem::file_type::not_found) {
    return out.Usage("--data-dir",
                     opts.data_dir + (ec ? ": " + ec.message() : " is not a directory"),
                     "check --data-dir (or WMBT_KV_DATA_DIR): it names the data directory");
  }
  return out.Error("open data directory " + opts.data_dir,
                   Status::NotFound("there is no data directory at " + opts.data_dir +
                                    ", so nothing is stored there"),
                   hint, {{"data_dir", opts.data_dir}});
}

Store* Context::OpenStore(int* exit_code, DataDir data_dir) {
  if (store_) return store_.get();
  if (data_dir == DataDir::kMustExist && (*exit_code = RequireDataDir()) != kExitOk) {
    return nullptr;
  }
  // The flags override the environment; Set parses them exactly as the variables.
  Config config = opts.config;
  config.data_dir = opts.data_dir;
  config.ns = opts.ns;
  config.fingerprint = fp;
  for (auto [name, value] : {std::pair<const char*, const std::string*>{"WMBT_KV_REMOTE_PREFIX",
                                                                        &opts.remote_prefix},
                             {"WMBT_KV_TCP_ADDR", &opts.tcp_addr}}) {
    if (Status s = config.Set(name, *value); !s.ok()) {
      *exit_code =
          out.Usage(name == std::string_view("WMBT_KV_TCP_ADDR") ? "--tcp-addr" : "--remote-prefix",
                    SettingGivenAs(s, name, "").message(), "see `wombatkv --help`");
      return nullptr;
    }
  }
  // Through a daemon the store is the daemon's, with its own settings: a store setting given as a
  // flag would be silently ignored (a --bucket would seem to list another bucket).
  if (!config.remote_prefix.empty() || !config.tcp_addr.empty()) {
    // The client's own settings, those both sides read (where the daemon's control socket is, and
    // whose daemon a client may attach to), the data directory (ignored through a daemon,
    // docs/cli.md, as the default may be) and the log level (the CLI's own log).
    auto client_side = [](std::string_view setting) {
      if (setting == "WMBT_KV_DATA_DIR" || setting == "WMBT_KV_LOG_LEVEL" ||
          setting == "WMBT_KV_RUN_DIR" || setting == "WMBT_KV_SHM_GROUP") {
        return true;
      }
      const auto& all = AllSettings();
      return std::any_of(all.begin(), all.end(),
                         [&](const SettingDoc& d) { return d.client && d.name == setting; });
    };
    for (const std::string& setting : opts.flag_settings) {
      if (client_side(setting)) continue;
      *exit_code = out.Usage(SettingFlagName(setting),
                             "not taken through " + RemoteName() +
                                 ": it is a setting of the store, which is the daemon's and runs "
                                 "with the daemon's settings",
                             "give it to wombatkvd, or leave out --tcp-addr/--remote-prefix (and "
                             "their variables) to open a local data directory");
      return nullptr;
    }
  }
  // The CLI's store lives for one command: it does not evict (docs/configuration.md). Said when
  // asked for by a flag: a budget given on the command line and silently dropped misleads.
  for (const char* setting : {"WMBT_KV_NAMESPACE_MAX_BYTES", "WMBT_KV_NAMESPACE_TTL",
                              "WMBT_KV_GC_INTERVAL", "WMBT_KV_EVICTION_LEASE"}) {
    if (opts.flag_settings.count(setting) > 0) {
      out.Note("wombatkv: " + SettingFlagName(setting) +
               " is ignored: the CLI's store lives for one command and does not evict or collect "
               "in the background (use `wombatkv gc`, or give it to wombatkvd)");
    }
  }
  config.namespace_bytes_max.clear();
  config.namespace_ttl_seconds.clear();
  config.log_level = opts.verbose ? Config::LogLevel::kDebug : Config::LogLevel::kWarn;
  ClientStoreSetup setup;
  setup.client_name = "wombatkv";
  // Called from store threads too: Output's stderr writes are one fprintf each.
  setup.embedded.log = [this](LogLevel level, const std::string& message) {
    if (level >= LogLevel::kWarn) {
      out.Warn(message);
    } else if (opts.verbose) {
      out.Note("wombatkv: " + message);
    }
  };
  setup.remote_log = setup.embedded.log;
  auto opened = OpenClientStore(config, setup);
  // Another wombatkv command holds the directory: a moment's work (a script running several in
  // parallel), so wait for it. A daemon or an engine holds it for good: no wait. While it is
  // held, only the lock is tried (an open would probe an S3 L2 every time).
  constexpr uint64_t kLockPollMicros = 50'000;
  Clock* clock = RealClock();
  const uint64_t now = clock->NowMicros();
  const uint64_t deadline =
      opts.lock_wait_us > UINT64_MAX - now ? UINT64_MAX : now + opts.lock_wait_us;
  bool said = false;
  while (!opened.ok() && !remote() && config.http_addr.empty() &&
         HeldByAnotherCommand(opened.status()) && clock->NowMicros() < deadline) {
    if (!std::exchange(said, true)) {
      out.Note("waiting for another wombatkv command to finish with " + opts.data_dir +
               " (at most " + opts.lock_wait + ", --lock-wait)");
    }
    while (LockIsHeld(opts.data_dir) && clock->NowMicros() < deadline) {
      clock->SleepMicros(kLockPollMicros);
    }
    opened = OpenClientStore(config, setup);
  }
  if (!opened.ok()) {
    const Status& s = opened.status();
    if (remote() || !config.http_addr.empty()) {
      // The status already names the daemon (or the unsupported HTTP transport) and the setting.
      *exit_code = out.Error("connect", s, "docs/daemon.md tells how to start and reach wombatkvd");
      return nullptr;
    }
    // A held or unwritable directory's message says what to do (--data-dir included); another
    // command still holding it after the wait is a matter of waiting longer.
    const std::string hint =
        HeldByAnotherCommand(s)
            ? "it is another wombatkv command's for now: retry once it is done, or wait longer "
              "with --lock-wait (waited " +
                  opts.lock_wait + ")"
            : "";
    *exit_code =
        out.Error("open data directory " + opts.data_dir, s, hint, {{"data_dir", opts.data_dir}});
    return nullptr;
  }
  store_ = std::move(opened)->store;
  return store_.get();
}

ObjectStore* Context::OpenConfiguredS3(int* exit_code) {
  const std::string& bucket = opts.config.s3_bucket;
  // Without a bucket, L2 is the local directory, unless S3 settings say otherwise (an error).
  if (l2_ || (bucket.empty() && opts.config.s3_named.empty())) return l2_.get();
  auto l2 = OpenL2FromConfig(opts.config, L2Env{nullptr, nullptr, [this](const std::string& m) {
                                                  out.Warn(m);
                                                }});
  if (!l2.ok()) {
    *exit_code =
        out.Error(bucket.empty() ? std::string("open L2") : "open S3 bucket " + bucket, l2.status(),
                  "check the WMBT_KV_S3_* settings (docs/s3.md)", {{"bucket", bucket}});
    return nullptr;
  }
  l2_ = std::move(l2).value();
  return l2_.get();
}

std::optional<uint64_t> ParseDurationFlag(std::string_view text) {
  const bool bare = text.find_first_not_of("0123456789") == std::string_view::npos &&
                    text.find_first_not_of('0') != std::string_view::npos;
  if (bare) return std::nullopt;
  return ParseDurationMicros(text);
}

Result<BlockKey> ParseKey(std::string_view arg, std::string_view text) {
  return BlockKey::FromHex(text, arg);
}

Result<ContentHash> ParseContentHash(std::string_view arg, std::string_view text) {
  return ContentHash::FromHex(text, arg);
}

Result<std::vector<BlockKey>> ParseKeys(std::string_view arg,
                                        const std::vector<std::string>& text) {
  std::vector<BlockKey> keys;
  keys.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    std::string name = std::string(arg) + " #" + std::to_string(i + 1);
    auto key = BlockKey::FromHex(text[i], name);
    if (!key.ok()) return key.status();
    keys.push_back(*key);
  }
  return keys;
}

void AddPayloadOptions(CLI::App* app, PayloadSource* src, std::string_view what) {
  std::string w(what);
  auto* file = app->add_option("--file", src->file,
                               "Read the " + w +
                                   " from PATH (a pipe is read to its end; - is standard input)")
                   ->type_name("PATH");
  auto* in = app->add_flag("--stdin", src->from_stdin, "Read the " + w + " from standard input");
  auto* value = app->add_option_function<std::string>(
                       "--value",
                       [src](const std::string& v) {
                         src->value = v;
                         src->value_given = true;
                       },
                       "Use STR (its bytes, no trailing newline) as the " + w)
                    ->type_name("STR");
  file->excludes(in)->excludes(value);
  in->excludes(value);
}

namespace {

// Reads `in` to its end, whatever size it claims (a pipe, a FIFO, /proc), refusing more than
// max_bytes; `name` names it in errors. The bytes are read straight into one block grown with
// realloc (which moves a large block by remapping its pages, not by copying them), so a block
// read this way costs its own size in memory plus the untouched tail of the last doubling.
Result<std::shared_ptr<Buffer>> ReadToEnd(std::FILE* in, const std::string& name,
                                          uint64_t max_bytes) {
  std::unique_ptr<uint8_t, decltype(&std::free)> data(nullptr, &std::free);
  size_t size = 0;
  size_t capacity = 0;
  for (;;) {
    if (size == capacity) {
      if (size > max_bytes) {
        return Status::InvalidArgument(name + " has more than " + std::to_string(max_bytes) +
                                       " bytes, the limit");
      }
      // One byte past the limit shows whether the stream goes beyond it.
      const size_t grown =
          std::min<uint64_t>(std::max<size_t>(capacity * 2, 64 << 10), max_bytes + 1);
      auto* bigger = static_cast<uint8_t*>(std::realloc(data.get(), grown));
      if (bigger == nullptr) {
        return Status::ResourceExhausted("out of memory reading " + name);
      }
      data.release();
      data.reset(bigger);
      capacity = grown;
    }
    const size_t n = std::fread(data.get() + size, 1, capacity - size, in);
    size += n;
    if (size > max_bytes) {
      return Status::InvalidArgument(name + " has more than " + std::to_string(max_bytes) +
                                     " bytes, the limit");
    }
    if (size < capacity) {
      if (std::ferror(in)) return Status::InvalidArgument("cannot read " + name);
      break;
    }
  }
  uint8_t* bytes = data.release();
  return Buffer::Adopt(bytes, size, [bytes] { std::free(bytes); });
}

// An input file that cannot be read (a permission, an I/O error) is the caller's argument that
// does not work: InvalidArgument, exit 2 (docs/cli.md), whatever the file system's code.
Status UnreadableInput(const std::string& path, const Status& why) {
  return Status::InvalidArgument("cannot read " + path + ": " + why.message());
}

}  // namespace

Result<std::shared_ptr<Buffer>> ReadWholeFile(const std::string& path, uint64_t max_bytes) {
  if (path == "-") return ReadToEnd(stdin, "standard input", max_bytes);
  FileSystem* fs = PosixFileSystem();
  auto info = fs->Stat(path);
  if (!info.ok()) {
    if (info.status().IsNotFound()) {
      return Status::InvalidArgument("no such file: " + path);
    }
    return UnreadableInput(path, info.status());
  }
  if (info->is_dir) return Status::InvalidArgument(path + " is a directory, not a file");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) || info->size == 0) {
    // Its size says nothing about what it holds (a pipe; a /proc file, regular but of size 0):
    // read it as a stream.
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
    if (!in) {
      return Status::InvalidArgument("cannot open " + path + ": " + std::strerror(errno));
    }
    return ReadToEnd(in.get(), path, max_bytes);
  }
  if (info->size > max_bytes) {
    return Status::InvalidArgument(path + " has " + std::to_string(info->size) +
                                   " bytes, more than the limit of " +
                                   std::to_string(max_bytes));
  }
  auto data = fs->ReadFile(path, 0, info->size);
  if (!data.ok()) return UnreadableInput(path, data.status());
  return std::move(data).value();
}

Status WriteWholeFile(const std::string& path, ByteView bytes) {
  return PosixFileSystem()->WriteFileAtomic(path, {bytes}, /*sync=*/false);
}

Result<std::shared_ptr<Buffer>> ReadPayload(const PayloadSource& src, uint64_t max_bytes) {
  int sources = (src.file.empty() ? 0 : 1) + (src.from_stdin ? 1 : 0) + (src.value_given ? 1 : 0);
  if (sources != 1) {
    return Status::InvalidArgument("give the bytes with exactly one of --file PATH, --stdin, "
                                   "--value STR");
  }
  if (!src.file.empty()) return ReadWholeFile(src.file, max_bytes);
  if (src.from_stdin) return ReadToEnd(stdin, "standard input", max_bytes);
  if (src.value.size() > max_bytes) {
    return Status::InvalidArgument("--value has more than " + std::to_string(max_bytes) +
                                   " bytes");
  }
  return Buffer::CopyOf(AsBytes(src.value));
}

}  // namespace wombatkv::cli
