// OpenClientStore: the one way a client (an engine through the C ABI, the `wombatkv` CLI) turns a
// Config into a Store — embedded in this process, or a wombatkvd daemon reached over shared
// memory or TCP through RemoteStore. Every backend is a Store, so callers behave the same in
// every mode; only what a daemon cannot do for a client (offline maintenance of its data
// directory) differs, and `backend` tells the caller which mode it got.
//
// Selection (SPEC §7 precedence): WMBT_KV_REMOTE_PREFIX (shared memory, control socket in
// WMBT_KV_RUN_DIR) > WMBT_KV_TCP_ADDR (TCP, with WMBT_KV_AUTH_TOKEN) > WMBT_KV_HTTP_ADDR
// (refused: no HTTP transport) > embedded (OpenStoreFromConfig on WMBT_KV_DATA_DIR).
//
// Thread-safety: functions; the Store returned is thread-safe.
#pragma once

#include <memory>
#include <string>

#include "config/config.h"
#include "setup/store_from_config.h"
#include "wombatkv/store.h"

namespace wombatkv {

enum class ClientBackend { kEmbedded, kShm, kTcp };

// The backend a Config selects (HTTP counts as embedded here; OpenClientStore refuses it).
ClientBackend SelectClientBackend(const Config& config);

struct ClientStoreSetup {
  // For the embedded store (log sink, program name).
  StoreSetup embedded;
  // Named in the daemon's logs at attach ("libwombatkv", "wombatkv").
  std::string client_name = "libwombatkv";
  // RemoteStore's log (calls that cannot return a status, e.g. ListChains); null = none.
  LogSink remote_log;
};

struct ClientStore {
  std::shared_ptr<Store> store;
  ClientBackend backend = ClientBackend::kEmbedded;
  // For messages: "data directory DIR", "wombatkvd (WMBT_KV_REMOTE_PREFIX=P)",
  // "wombatkvd (WMBT_KV_TCP_ADDR=HOST:PORT)".
  std::string where;
};

// Opens the backend the Config selects. Errors: a daemon that cannot be reached is Unavailable
// (or what ConnectShm / ConnectTcp return) with the context "connecting to wombatkvd
// (<SETTING>=<value>)"; HTTP is FailedPrecondition (HttpTransportUnsupported); the embedded
// store's errors are those of OpenStoreFromConfig.
Result<ClientStore> OpenClientStore(const Config& config, const ClientStoreSetup& setup = {});

// Opens `backend` whatever else the Config selects (wmbt_kv_open_tcp: TCP even when
// WMBT_KV_REMOTE_PREFIX is set). The backend's own setting must be set.
Result<ClientStore> OpenClientStoreAs(ClientBackend backend, const Config& config,
                                      const ClientStoreSetup& setup = {});

// The FailedPrecondition for a daemon over HTTP, which this build cannot speak.
Status HttpTransportUnsupported(std::string_view addr);

}  // namespace wombatkv
