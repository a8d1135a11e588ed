// Handles: choosing a backend from the environment, opening the embedded store, closing.
#include <cstdio>
#include <string>

#include "capi/capi_internal.h"
#include "object/s3/l2_from_config.h"

namespace wombatkv::capi {
namespace {

LogLevel ToStoreLevel(Config::LogLevel level) {
  switch (level) {
    case Config::LogLevel::kDebug: return LogLevel::kDebug;
    case Config::LogLevel::kInfo: return LogLevel::kInfo;
    case Config::LogLevel::kWarn: return LogLevel::kWarn;
    case Config::LogLevel::kError: return LogLevel::kError;
  }
  return LogLevel::kWarn;
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "?";
}

// The transports this build does not have yet: why the call fails, and what to do instead.
Status TransportUnavailable(std::string_view what, std::string_view setting,
                            std::string_view value) {
  return Status::FailedPrecondition(std::string(what) + " (" + std::string(setting) + "=" +
                                    std::string(value) +
                                    ") is not available yet in this build; unset it to use the "
                                    "embedded store");
}

}  // namespace

Result<std::unique_ptr<wmbt_kv_handle>> OpenEmbedded(const Config& config) {
  // L2: S3 when WMBT_KV_BUCKET is set (opened and probed here), else the local directory.
  L2Env l2_env;
  l2_env.warn = [](const std::string& line) {
    std::fprintf(stderr, "wombatkv [warn] %s\n", line.c_str());
  };
  auto s3 = OpenL2FromConfig(config, l2_env);
  if (!s3.ok()) return s3.status().WithContext("opening the S3 L2");
  std::shared_ptr<ObjectStore> l2(std::move(s3).value());
  StoreOptions options;
  options.data_dir = config.data_dir;
  options.l2_prefix = config.l2_prefix;
  options.cache_bytes_max = config.cache_bytes;
  options.upload_threads = config.upload_threads;
  options.object_store = l2.get();  // null: the local directory
  LogLevel threshold = ToStoreLevel(config.log_level);
  options.log = [threshold](LogLevel level, const std::string& line) {
    if (level < threshold) return;
    std::fprintf(stderr, "wombatkv [%s] %s\n", LevelName(level), line.c_str());
  };
  auto store = Store::Open(options);
  if (!store.ok()) return store.status().WithContext("opening the embedded store");
  auto handle = std::make_unique<wmbt_kv_handle>();
  handle->config = config;
  // The store's deleter also owns the S3 L2, which must outlive the store.
  handle->store = std::shared_ptr<Store>(std::move(store).value().release(),
                                         [l2](Store* s) { delete s; });
  return handle;
}

wmbt_kv_handle* InitFromEnv() {
  auto config = Config::FromEnv();
  if (!config.ok()) return Fail(config.status());
  // Precedence (SPEC §7): shared memory > TCP > HTTP > embedded.
  if (!config->remote_prefix.empty())
    return Fail(TransportUnavailable("daemon transport over shared memory",
                                     "WMBT_KV_REMOTE_PREFIX", config->remote_prefix));
  if (!config->tcp_addr.empty())
    return Fail(
        TransportUnavailable("daemon transport over TCP", "WMBT_KV_TCP_ADDR", config->tcp_addr));
  if (!config->http_addr.empty())
    return Fail(TransportUnavailable("daemon transport over HTTP", "WMBT_KV_HTTP_ADDR",
                                     config->http_addr));
  auto handle = OpenEmbedded(*config);
  if (!handle.ok()) return Fail(handle.status());
  return std::move(handle).value().release();
}

wmbt_kv_handle* OpenEmbeddedAt(const char* data_dir) {
  auto config = Config::FromEnv();
  if (!config.ok()) return Fail(config.status());
  if (data_dir != nullptr && data_dir[0] != '\0') config->data_dir = data_dir;
  auto handle = OpenEmbedded(*config);
  if (!handle.ok()) return Fail(handle.status());
  return std::move(handle).value().release();
}

wmbt_kv_handle* OpenTcp(const char* addr) {
  if (addr == nullptr) return Fail(Status::InvalidArgument("addr is NULL"));
  Config probe;  // validates HOST:PORT exactly as the environment variable would be
  Status st = probe.Set("WMBT_KV_TCP_ADDR", addr);
  if (!st.ok()) return Fail(st);
  return Fail(Status::FailedPrecondition(
      std::string("daemon transport over TCP (") + addr +
      ") is not available yet in this build; use the embedded store (wmbt_kv_open_embedded, or "
      "wmbt_kv_init_from_env without WMBT_KV_TCP_ADDR)"));
}

wmbt_kv_handle* OpenHttp(const char* addr) {
  std::string shown = addr ? std::string(addr).substr(0, 200) : "NULL";
  return Fail(Status::FailedPrecondition(
      "HTTP transport (" + shown +
      ") is not supported in this build; use the embedded store (wmbt_kv_open_embedded, or "
      "wmbt_kv_init_from_env without WMBT_KV_HTTP_ADDR)"));
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

wmbt_kv_handle_t* wmbt_kv_open_tcp(const char* addr) {
  return Guarded("wmbt_kv_open_tcp", Handle{nullptr}, nullptr, 0,
                 [&] { return wombatkv::capi::OpenTcp(addr); });
}

wmbt_kv_handle_t* wmbt_kv_open_http(const char* addr) {
  return Guarded("wmbt_kv_open_http", Handle{nullptr}, nullptr, 0,
                 [&] { return wombatkv::capi::OpenHttp(addr); });
}

void wmbt_kv_free(wmbt_kv_handle_t* handle) {
  Guarded("wmbt_kv_free", -1, nullptr, 0, [&] {
    delete handle;  // NULL is a no-op; outstanding borrows keep the store alive
    return 0;
  });
}

void wmbt_kv_release_borrow(wmbt_kv_borrow_t* borrow) {
  Guarded("wmbt_kv_release_borrow", -1, nullptr, 0, [&] {
    delete borrow;  // NULL is a no-op
    return 0;
  });
}

}  // extern "C"

