#include "connect/open_client_store.h"

#include "client/remote_store.h"
#include "transport/shm/shm_channel.h"
#include "transport/tcp/tcp_channel.h"

namespace wombatkv {
namespace {

Result<ClientStore> Over(Result<std::unique_ptr<Channel>> channel, ClientBackend backend,
                         std::string where, const ClientStoreSetup& setup) {
  if (!channel.ok()) return channel.status().WithContext("connecting to " + where);
  ClientStore out;
  out.store = std::make_shared<RemoteStore>(std::move(channel).value(), setup.remote_log);
  out.backend = backend;
  out.where = std::move(where);
  return out;
}

}  // namespace

ClientBackend SelectClientBackend(const Config& config) {
  if (!config.remote_prefix.empty()) return ClientBackend::kShm;
  if (!config.tcp_addr.empty()) return ClientBackend::kTcp;
  return ClientBackend::kEmbedded;
}

Status HttpTransportUnsupported(std::string_view addr) {
  return Status::FailedPrecondition(
      "HTTP transport (" + std::string(addr.substr(0, 200)) +
      ") is not supported in this build; use wombatkvd over shared memory "
      "(WMBT_KV_REMOTE_PREFIX) or TCP (WMBT_KV_TCP_ADDR), or the embedded store (unset "
      "WMBT_KV_HTTP_ADDR)");
}

Result<ClientStore> OpenClientStoreAs(ClientBackend backend, const Config& config,
                                      const ClientStoreSetup& setup) {
  switch (backend) {
    case ClientBackend::kShm: {
      ShmClientOptions o;
      o.prefix = config.remote_prefix;
      o.run_dir = config.run_dir;
      o.group = config.shm_group;
      o.client_name = setup.client_name;
      o.poll = config.client_poll;
      o.request_timeout_ms = config.request_timeout_ms;
      return Over(ConnectShm(o), backend,
                  "wombatkvd (WMBT_KV_REMOTE_PREFIX=" + config.remote_prefix + ")", setup);
    }
    case ClientBackend::kTcp: {
      tcp::TcpClientOptions o;
      o.address = config.tcp_addr;
      o.auth_token = config.auth_token;
      o.client_name = setup.client_name;
      o.spin = config.client_poll;
      o.request_timeout_ms = config.request_timeout_ms;
      return Over(tcp::ConnectTcp(o), backend,
                  "wombatkvd (WMBT_KV_TCP_ADDR=" + config.tcp_addr + ")", setup);
    }
    case ClientBackend::kEmbedded:
      break;
  }
  auto store = OpenStoreFromConfig(config, setup.embedded);
  if (!store.ok()) return store.status().WithContext("opening the embedded store");
  ClientStore out;
  out.store = std::move(store).value();
  out.where = "data directory " + config.data_dir;
  return out;
}

Result<ClientStore> OpenClientStore(const Config& config, const ClientStoreSetup& setup) {
  const ClientBackend backend = SelectClientBackend(config);
  if (backend == ClientBackend::kEmbedded && !config.http_addr.empty())
    return HttpTransportUnsupported(config.http_addr);
  return OpenClientStoreAs(backend, config, setup);
}

}  // namespace wombatkv
