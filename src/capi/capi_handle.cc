// Handles: choosing a backend from the environment (embedded, or wombatkvd over shared memory
// or TCP: every backend is a Store, so every entry point behaves the same), opening, closing.
#include <cstdio>
#include <string>

#include "capi/capi_internal.h"
#include "client/remote_store.h"
#include "setup/store_from_config.h"
#include "transport/shm/shm_channel.h"
#include "transport/tcp/tcp_channel.h"

namespace wombatkv::capi {
namespace {

wmbt_kv_handle* HandleOver(const Config& config, Result<std::unique_ptr<Channel>> channel,
                           std::string_view setting, std::string_view value) {
  if (!channel.ok()) {
    return Fail(channel.status().WithContext("connecting to wombatkvd (" + std::string(setting) +
                                             "=" + std::string(value) + ")"));
  }
  auto handle = std::make_unique<wmbt_kv_handle>();
  handle->config = config;
  handle->store = std::make_shared<RemoteStore>(std::move(channel).value());
  return handle.release();
}

wmbt_kv_handle* ConnectTcpHandle(const Config& config, const std::string& addr) {
  tcp::TcpClientOptions o;
  o.address = addr;
  o.auth_token = config.auth_token;
  o.client_name = "libwombatkv";
  return HandleOver(config, tcp::ConnectTcp(o), "WMBT_KV_TCP_ADDR", addr);
}

}  // namespace

wmbt_kv_handle* OpenHttp(const char* addr);

Result<std::unique_ptr<wmbt_kv_handle>> OpenEmbedded(const Config& config) {
  // L2 from the Config (S3 when WMBT_KV_BUCKET is set, else the local directory), shared with
  // the daemon: src/setup/store_from_config.h.
  auto store = OpenStoreFromConfig(config);
  if (!store.ok()) return store.status().WithContext("opening the embedded store");
  auto handle = std::make_unique<wmbt_kv_handle>();
  handle->config = config;
  handle->store = std::move(store).value();
  return handle;
}

wmbt_kv_handle* InitFromEnv() {
  auto config = Config::FromEnv();
  if (!config.ok()) return Fail(config.status());
  // Precedence (SPEC §7): shared memory > TCP > HTTP > embedded.
  if (!config->remote_prefix.empty()) {
    ShmClientOptions o;
    o.prefix = config->remote_prefix;
    return HandleOver(*config, ConnectShm(o), "WMBT_KV_REMOTE_PREFIX", config->remote_prefix);
  }
  if (!config->tcp_addr.empty()) return ConnectTcpHandle(*config, config->tcp_addr);
  if (!config->http_addr.empty()) return OpenHttp(config->http_addr.c_str());
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
  // The rest of the configuration (fingerprint, namespace, auth token) from the environment.
  auto config = Config::FromEnv();
  if (!config.ok()) return Fail(config.status());
  Status st = config->Set("WMBT_KV_TCP_ADDR", addr);  // validates HOST:PORT as the variable would
  if (!st.ok()) return Fail(st);
  return ConnectTcpHandle(*config, addr);
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

