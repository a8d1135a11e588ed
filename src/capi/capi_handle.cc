// Handles: choosing a backend from the environment (embedded, or wombatkvd over shared memory
// or TCP: every backend is a Store, so every entry point behaves the same), opening, closing.
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>

#include "base/setting_text.h"
#include "capi/capi_internal.h"
#include "config/unknown_settings.h"
#include "connect/open_client_store.h"
#include "setup/store_from_config.h"

namespace wombatkv::capi {
namespace {

std::atomic<uint64_t> forks{0};

}  // namespace

uint64_t ForkGeneration() noexcept {
  static const bool registered = [] {
    return ::pthread_atfork(nullptr, nullptr,
                            [] { forks.fetch_add(1, std::memory_order_relaxed); }) == 0;
  }();
  (void)registered;  // without the handler (ENOMEM) a child is not told; nothing else changes
  return forks.load(std::memory_order_relaxed);
}

namespace {

// The backend choice itself lives in src/connect (shared with the `wombatkv` CLI).
Result<std::unique_ptr<wmbt_kv_handle>> HandleFor(const Config& config,
                                                  Result<ClientStore> opened) {
  if (!opened.ok()) return opened.status();
  // Which backend the environment chose, for an operator who set WMBT_KV_LOG_LEVEL=info.
  const char* mode = opened->backend == ClientBackend::kShm   ? "shared memory to "
                     : opened->backend == ClientBackend::kTcp ? "TCP to "
                                                              : "embedded store in ";
  StderrLogSink(config.log_level, "libwombatkv")(LogLevel::kInfo,
                                                 std::string("opened: ") + mode + opened->where);
  auto handle = std::make_unique<wmbt_kv_handle>();
  handle->config = config;
  handle->store = std::move(opened)->store;
  handle->opener_pid = static_cast<int>(::getpid());
  return handle;
}

// The environment's WMBT_KV_* names that are no setting, each once per process (an engine may
// open many handles), at the configured log level.
// With `chosen_by_settings` (the backend follows the settings, not the call), also the daemon's
// listener settings given where a client's were likely meant.
void WarnAboutUnknownSettingsOnce(const Config& config, bool chosen_by_settings = false) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> g(mu);
  LogSink log = StderrLogSink(config.log_level, "libwombatkv");
  const std::vector<std::string> names = SettingNamesInEnvironment();
  for (const UnknownSetting& u : FindUnknownSettings(names)) {
    if (warned.insert(u.name).second) log(LogLevel::kWarn, DescribeUnknownSetting(u));
  }
  // The daemon's own listener settings in an engine's environment, and no client transport: the
  // engine most likely meant to reach that daemon, and gets a store of its own instead.
  if (!chosen_by_settings || !config.remote_prefix.empty() || !config.tcp_addr.empty()) return;
  for (const auto& [daemon, client] : {std::pair{"WMBT_KV_TCP", "WMBT_KV_TCP_ADDR"},
                                       {"WMBT_KV_DAEMON_SHM_PREFIX", "WMBT_KV_REMOTE_PREFIX"}}) {
    if (std::find(names.begin(), names.end(), daemon) == names.end()) continue;
    if (!warned.insert(daemon).second) continue;
    log(LogLevel::kWarn, std::string(daemon) + " is set, which only wombatkvd reads (where it " +
                             "listens), and " + client + " is not: this process opens an " +
                             "embedded store of its own. To use that daemon, set " + client + ".");
  }
}

// Every line the library writes is "libwombatkv [level] ...", the store's own included.
ClientStoreSetup LibrarySetup(const Config& config) {
  ClientStoreSetup setup;
  setup.embedded.program = "libwombatkv";
  setup.remote_log = StderrLogSink(config.log_level, "libwombatkv");
  return setup;
}

// OK if `name` (names[i] of wmbt_kv_open_with_settings) is a client's setting; else an error
// saying what it is instead, or what it may have meant.
Status KnownSetting(const std::string& name, size_t i) {
  for (const SettingDoc& doc : AllSettings()) {
    if (doc.name == name) return Status::Ok();
  }
  const std::string what = "names[" + std::to_string(i) + "] \"" + name.substr(0, 80) + "\"";
  for (std::string_view daemon : DaemonSettingNames()) {
    if (daemon == name) {
      return Status::InvalidArgument(what +
                                     " is a setting of wombatkvd, not of a client: set it "
                                     "where the daemon runs");
    }
  }
  const std::vector<UnknownSetting> unknown = FindUnknownSettings(std::vector<std::string>{name});
  return Status::InvalidArgument(what + " is not a WombatKV setting" +
                                 (unknown.empty() ? std::string() : DidYouMean(unknown[0])) +
                                 "; docs/configuration.md lists them");
}

// The settings that choose a daemon. One given to a call (an argument, a name passed to
// wmbt_kv_open_with_settings) chooses alone: the environment's others are not read, neither to
// take precedence (shared memory over TCP) nor to fail the open with a value the caller replaced.
const std::set<std::string>& TransportSettings() {
  static const std::set<std::string> names = {"WMBT_KV_REMOTE_PREFIX", "WMBT_KV_TCP_ADDR",
                                              "WMBT_KV_HTTP_ADDR"};
  return names;
}

wmbt_kv_handle* Release(Result<std::unique_ptr<wmbt_kv_handle>> handle) {
  if (!handle.ok()) return Fail(handle.status());
  return std::move(handle).value().release();
}

// The first setting, by name, in which two configurations would make different stores (what a
// handle alone uses — namespace, fingerprint — and a client's transport settings aside), or "".
std::string StoreSettingThatDiffers(const Config& a, const Config& b) {
  static const std::set<std::string> kPerHandle = {
      "WMBT_KV_DATA_DIR",      "WMBT_KV_NAMESPACE",   "WMBT_KV_FINGERPRINT",
      "WMBT_KV_REMOTE_PREFIX", "WMBT_KV_TCP_ADDR",    "WMBT_KV_RUN_DIR",
      "WMBT_KV_SHM_GROUP",     "WMBT_KV_CLIENT_POLL", "WMBT_KV_REQUEST_TIMEOUT_MS",
      "WMBT_KV_HTTP_ADDR",     "WMBT_KV_AUTH_TOKEN",  "WMBT_KV_LOG_LEVEL"};
  if (a.s3_access_key != b.s3_access_key) return "WMBT_KV_S3_ACCESS_KEY";
  if (a.s3_secret_key != b.s3_secret_key) return "WMBT_KV_S3_SECRET_KEY";
  std::istringstream la(a.Describe()), lb(b.Describe());
  for (std::string x, y; std::getline(la, x) && std::getline(lb, y);) {
    const std::string name = x.substr(0, x.find('='));
    if (x != y && kPerHandle.count(name) == 0) return name;
  }
  return "";
}

// The embedded stores open in this process, by data directory: a directory belongs to one
// process, and within it to one store, which every handle opened on it shares — as handles on one
// daemon share its store. So an engine that opens a handle per model works the same embedded.
Result<ClientStore> OpenSharedEmbedded(const Config& config, const ClientStoreSetup& setup) {
  struct Open {
    std::weak_ptr<Store> store;
    Config config;
    uint64_t fork_generation;  // a forked child does not share the parent's (capi_internal.h)
  };
  static std::mutex mu;
  static std::map<std::string, Open> by_dir;  // GUARDED_BY(mu)
  std::error_code ec;
  std::string dir = std::filesystem::weakly_canonical(config.data_dir, ec).string();
  if (ec || dir.empty()) dir = config.data_dir;
  std::lock_guard<std::mutex> g(mu);  // one open at a time: a second waits to share the first
  auto it = by_dir.find(dir);
  if (it != by_dir.end() && it->second.fork_generation == ForkGeneration()) {
    if (std::shared_ptr<Store> store = it->second.store.lock()) {
      const std::string differs = StoreSettingThatDiffers(it->second.config, config);
      if (!differs.empty()) {
        return Status::FailedPrecondition(
            "data directory " + dir + " is already open in this process with another " + differs +
            ": a second handle shares the first one's store, so give it the same store settings "
            "(only the namespace and fingerprint may differ)");
      }
      return ClientStore{std::move(store), ClientBackend::kEmbedded,
                         "data directory " + dir + " (shared with this process's other handles)"};
    }
  }
  auto opened = OpenClientStoreAs(ClientBackend::kEmbedded, config, setup);
  if (opened.ok()) by_dir[dir] = Open{opened->store, config, ForkGeneration()};
  return opened;
}

// The backend the config selects; an embedded one shared as above.
Result<ClientStore> OpenSelected(const Config& config, const ClientStoreSetup& setup) {
  if (SelectClientBackend(config) == ClientBackend::kEmbedded && config.http_addr.empty()) {
    return OpenSharedEmbedded(config, setup);
  }
  return OpenClientStore(config, setup);
}

}  // namespace

Result<std::unique_ptr<wmbt_kv_handle>> OpenEmbedded(const Config& config) {
  return HandleFor(config, OpenSharedEmbedded(config, LibrarySetup(config)));
}

wmbt_kv_handle* InitFromEnv() {
  auto config = Config::FromEnv();
  if (!config.ok()) return Fail(config.status());
  WarnAboutUnknownSettingsOnce(*config, /*chosen_by_settings=*/true);
  // Precedence (SPEC §7): shared memory > TCP > HTTP (refused) > embedded.
  return Release(HandleFor(*config, OpenSelected(*config, LibrarySetup(*config))));
}

wmbt_kv_handle* OpenWithSettings(const char* const* names, const char* const* values,
                                 size_t count) {
  constexpr size_t kSettingsMax = 256;
  if (Status st = CheckCount(count, kSettingsMax, "count"); !st.ok()) return Fail(st);
  if (count > 0) {
    if (Status st = CheckNotNull(names, "names"); !st.ok()) return Fail(st);
    if (Status st = CheckNotNull(values, "values"); !st.ok()) return Fail(st);
  }
  std::map<std::string, size_t> given;  // name -> its index
  for (size_t i = 0; i < count; ++i) {
    const std::string at = "[" + std::to_string(i) + "]";
    if (names[i] == nullptr) return Fail(Status::InvalidArgument("names" + at + " is NULL"));
    if (values[i] == nullptr) return Fail(Status::InvalidArgument("values" + at + " is NULL"));
    auto [it, fresh] = given.try_emplace(names[i], i);
    if (!fresh) {
      return Fail(Status::InvalidArgument("names" + at + " repeats names[" +
                                          std::to_string(it->second) + "] (\"" + it->first +
                                          "\"): give each setting once"));
    }
  }
  std::set<std::string> names_given;
  for (const auto& [name, i] : given) {
    names_given.insert(name);
    if (TransportSettings().count(name) > 0) {
      names_given.insert(TransportSettings().begin(), TransportSettings().end());
    }
  }
  auto config = Config::FromLookup(Config::Without(ProcessEnv, std::move(names_given)));
  if (!config.ok()) return Fail(config.status());
  for (const auto& [name, i] : given) {
    if (Status st = KnownSetting(name, i); !st.ok()) return Fail(st);
    Status st = config->Set(name, values[i]);
    if (!st.ok()) return Fail(SettingGivenAs(st, name, "values[" + std::to_string(i) + "]"));
  }
  WarnAboutUnknownSettingsOnce(*config, /*chosen_by_settings=*/true);
  return Release(HandleFor(*config, OpenSelected(*config, LibrarySetup(*config))));
}

wmbt_kv_handle* OpenEmbeddedAt(const char* data_dir) {
  auto config = Config::FromEnv();
  if (!config.ok()) return Fail(config.status());
  WarnAboutUnknownSettingsOnce(*config);
  if (data_dir != nullptr && data_dir[0] != '\0') config->data_dir = data_dir;
  return Release(OpenEmbedded(*config));
}

wmbt_kv_handle* OpenTcp(const char* addr) {
  if (addr == nullptr) return Fail(Status::InvalidArgument("addr is NULL"));
  // The rest of the configuration (fingerprint, namespace, auth token) from the environment.
  auto config = Config::FromLookup(Config::Without(ProcessEnv, TransportSettings()));
  if (!config.ok()) return Fail(config.status());
  WarnAboutUnknownSettingsOnce(*config);
  if (addr[0] == '\0') {
    return Fail(Status::InvalidArgument(
        "addr is empty: pass HOST:PORT of a wombatkvd --tcp listener, e.g. 127.0.0.1:7070"));
  }
  // Validates HOST:PORT as the variable would; the error names the argument, not the variable.
  Status st = config->Set("WMBT_KV_TCP_ADDR", addr);
  if (!st.ok()) return Fail(SettingGivenAs(st, "WMBT_KV_TCP_ADDR", "addr"));
  return Release(
      HandleFor(*config, OpenClientStoreAs(ClientBackend::kTcp, *config, LibrarySetup(*config))));
}

wmbt_kv_handle* OpenHttp(const char* addr) {
  return Fail(HttpTransportUnsupported(addr ? std::string_view(addr) : std::string_view("NULL")));
}

}  // namespace wombatkv::capi

using wombatkv::capi::Guarded;
using Handle = wmbt_kv_handle_t*;

extern "C" {

wmbt_kv_handle_t* wmbt_kv_init_from_env(void) {
  return Guarded("wmbt_kv_init_from_env", Handle{nullptr}, nullptr, 0,
                 [] { return wombatkv::capi::InitFromEnv(); });
}

wmbt_kv_handle_t* wmbt_kv_open_embedded(const char* data_dir) {
  return Guarded("wmbt_kv_open_embedded", Handle{nullptr}, nullptr, 0,
                 [&] { return wombatkv::capi::OpenEmbeddedAt(data_dir); });
}

wmbt_kv_handle_t* wmbt_kv_open_with_settings(const char* const* names, const char* const* values,
                                             size_t count) {
  return Guarded("wmbt_kv_open_with_settings", Handle{nullptr}, nullptr, 0,
                 [&] { return wombatkv::capi::OpenWithSettings(names, values, count); });
}

wmbt_kv_handle_t* wmbt_kv_open_tcp(const char* addr) {
  return Guarded("wmbt_kv_open_tcp", Handle{nullptr}, nullptr, 0,
                 [&] { return wombatkv::capi::OpenTcp(addr); });
}

wmbt_kv_handle_t* wmbt_kv_open_http(const char* addr) {
  return Guarded("wmbt_kv_open_http", Handle{nullptr}, nullptr, 0,
                 [&] { return wombatkv::capi::OpenHttp(addr); });
}

// These two cannot fail (destructors do not throw) and leave the last error as it is: an engine's
// finalizer may release a borrow between a failed call and the read of its error. In a forked
// child they leave the parent's handle or borrow alone: closing its store there would flush into
// the parent's files, or write to the parent's socket or shared memory (the memory is left to the
// child's exit).
void wmbt_kv_free(wmbt_kv_handle_t* handle) {
  if (handle != nullptr && handle->fork_generation != wombatkv::capi::ForkGeneration()) return;
  delete handle;  // NULL is a no-op; outstanding borrows keep the store alive
}

void wmbt_kv_release_borrow(wmbt_kv_borrow_t* borrow) {
  if (borrow != nullptr && borrow->fork_generation != wombatkv::capi::ForkGeneration()) return;
  delete borrow;  // NULL is a no-op
}

}  // extern "C"

