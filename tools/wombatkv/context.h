// Context: what every `wombatkv` command shares — the global options (resolved from flags, then
// WMBT_KV_* environment variables through Config, then built-in defaults), the Output, the
// lazily opened Store, and the argument parsers that turn hex text into identifiers with errors
// that name the argument.
//
// Not thread-safe: the CLI is single-threaded (the Store runs its own workers).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "tools/wombatkv/output.h"
#include "wombatkv/buffer.h"
#include "wombatkv/store.h"
#include "wombatkv/types.h"

namespace wombatkv::cli {

struct GlobalOptions {
  std::string data_dir;
  std::string ns;
  std::string fingerprint_hex;
  bool json = false;
  bool quiet = false;
  bool verbose = false;
  // How long to wait for another wombatkv command holding the data directory (--lock-wait).
  std::string lock_wait = "30s";
  uint64_t lock_wait_us = 0;  // parsed by Context::Validate
  // A daemon to talk to instead of the data directory (--remote-prefix / WMBT_KV_REMOTE_PREFIX
  // over shared memory, else --tcp-addr / WMBT_KV_TCP_ADDR); both empty = embedded.
  std::string remote_prefix;
  std::string tcp_addr;
  // Every setting: the environment, then the store-setting flags (tools/wombatkv/setting_flags.h)
  // as parsed; the options above override it when the store is opened.
  Config config;
  // The settings given as flags on the command line (SettingsGivenAsFlags).
  std::set<std::string> flag_settings;
};

class Context {
 public:
  GlobalOptions opts;
  Output out;
  // Whether --namespace/-n was given on the command line (ls lists every namespace otherwise).
  bool ns_given = false;
  // Valid after Validate().
  Fingerprint fp;

  // Checks the global options after parsing. Returns an exit code (0 = fine).
  int Validate();

  // Whether a command may create the data directory: a command that only reads (or publishes
  // what must already be stored) finds a missing one instead, when it would hold every block
  // (no S3 L2, no daemon): a mistyped --data-dir is then an error, not an empty store.
  enum class DataDir { kCreate, kMustExist };

  // Opens the store on first use: the embedded store on --data-dir, or a wombatkvd daemon when
  // --remote-prefix / --tcp-addr (or their variables) name one — the selection the C ABI makes
  // (src/connect/open_client_store.h). On failure reports the error and returns nullptr with
  // *exit_code set (1 when a kMustExist data directory is missing, 5 when another process owns
  // it, 6 when no daemon answers).
  Store* OpenStore(int* exit_code, DataDir data_dir = DataDir::kCreate);
  // The kMustExist check on its own: reports a missing data directory that would hold every
  // block and returns its exit code (1; 2 for a path that is no directory); else 0.
  int RequireDataDir();

  // Whether the commands go to a daemon rather than a data directory, and which ("wombatkvd
  // (WMBT_KV_TCP_ADDR=...)"; empty when embedded).
  bool remote() const { return !opts.remote_prefix.empty() || !opts.tcp_addr.empty(); }
  std::string RemoteName() const;

  // For commands that work on the data directory's planes directly (audit, du, gc): when a daemon
  // is selected, reports what they need instead and returns its exit code; else 0.
  int RequireLocalPlanes(std::string_view command);

  // The S3 L2 when WMBT_KV_BUCKET is set (opened and probed on first use); null when L2 is the
  // local directory. On failure reports the error, sets *exit_code and returns null.
  ObjectStore* OpenConfiguredS3(int* exit_code);

 private:
  std::unique_ptr<ObjectStore> l2_;  // S3 for audit, du and gc (the store opens its own)
  std::shared_ptr<Store> store_;     // embedded (owning its S3 L2) or a RemoteStore
};

// The settings whose flag (or global option: --data-dir, -n, ...) appears on the command line
// (before any "--"): their variables are not read, so a flag overrides even a variable whose value
// would not parse, as in wombatkvd.
std::set<std::string> SettingsGivenAsFlags(int argc, char** argv);

// Fills `opts` with the defaults from the environment (Config), but for the settings `given`.
// Returns the error of a malformed WMBT_KV_* variable, naming it.
Status LoadEnvironmentDefaults(GlobalOptions* opts, std::set<std::string> given);

// A duration given as a flag, in microseconds: digits with one unit (90s, 30m, 1h, 2d, 500ms), or
// "0". Bare digits other than 0 are refused (nullopt), as is anything that does not parse: a
// flag's number is not guessed to mean seconds (a variable's is, as documented).
std::optional<uint64_t> ParseDurationFlag(std::string_view text);
// Its usage hint: "use digits with one unit: 90s, 30m, 1h, 2d (1h30m is 90m)".
inline constexpr std::string_view kDurationFlagHint =
    "use digits with one unit: 500ms, 90s, 30m, 1h, 2d (1h30m is 90m)";
// Why `text` is no duration flag: "\"90\" is not a duration (a number needs its unit)".
inline std::string NotADuration(const std::string& text) {
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  return "\"" + text + "\" is not a duration" + (digits ? " (a number needs its unit)" : "");
}

// Identifier parsers: InvalidArgument naming `arg` (e.g. "KEY_HEX", "--parent").
Result<BlockKey> ParseKey(std::string_view arg, std::string_view text);
Result<ContentHash> ParseContentHash(std::string_view arg, std::string_view text);
Result<std::vector<BlockKey>> ParseKeys(std::string_view arg, const std::vector<std::string>& text);

// Where a payload comes from: exactly one of --file PATH, --stdin, --value STR.
struct PayloadSource {
  std::string file;
  bool from_stdin = false;
  std::string value;
  bool value_given = false;  // --value "" is a valid (empty) payload
};
void AddPayloadOptions(CLI::App* app, PayloadSource* src, std::string_view what);
// Reads the payload; InvalidArgument if not exactly one source is given or it exceeds
// `max_bytes`, NotFound if the file does not exist.
Result<std::shared_ptr<Buffer>> ReadPayload(const PayloadSource& src, uint64_t max_bytes);

// Reads a whole regular file of at most `max_bytes`.
Result<std::shared_ptr<Buffer>> ReadWholeFile(const std::string& path, uint64_t max_bytes);
// Writes `bytes` to `path` atomically (temporary file + rename).
Status WriteWholeFile(const std::string& path, ByteView bytes);

}  // namespace wombatkv::cli
