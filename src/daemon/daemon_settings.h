// DaemonSettings: the settings only wombatkvd has (the store's own — data directory, L2, cache,
// log level — stay in Config). Each is a WMBT_KV_* environment variable and a wombatkvd flag;
// both parse through Set(), so a flag and the variable accept exactly the same text and fail
// with the same message. DaemonSettingDocs() is the source of the daemon rows in
// docs/configuration.md and of `wombatkvd --help`.
//
// Thread-safety: a value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "daemon/service.h"
#include "wombatkv/status.h"

namespace wombatkv {

struct DaemonSettings {
  // WMBT_KV_TCP / --tcp: "HOST:PORT[,HOST:PORT...]"; port 0 = any free port (printed at start).
  std::vector<std::string> tcp;
  // WMBT_KV_DAEMON_SHM_PREFIX / --prefix: the shared-memory prefix clients attach to
  // (WMBT_KV_REMOTE_PREFIX on their side).
  std::string shm_prefix;
  // WMBT_KV_SHM_DATA_BYTES / --shm-data-bytes: each attached client's request area and response
  // area (ShmServerOptions::layout), so the largest put batch / get response over shared memory.
  // Virtual size: pages are allocated only when touched.
  uint64_t shm_data_bytes = 1ull << 30;
  // WMBT_KV_SHM_ARENA_BYTES / --shm-arena-bytes: each namespace's payload arena, from which the
  // store's copies of put payloads come so that gets over shared memory pass references
  // (shm::PayloadArenas; docs/shm.md, "Zero-copy gets"). Virtual; touched pages stay resident.
  // 0 = no arenas: every get copies into the client's response area.
  uint64_t shm_arena_bytes = 1ull << 30;
  // WMBT_KV_SHM_ARENAS / --shm-arenas: namespaces that get an arena (the first ones to put).
  uint32_t shm_arenas = 8;
  // WMBT_KV_AUTH_TOKENS / --auth-token (repeatable): "TOKEN" or "TOKEN=NS1,NS2", ';'-separated.
  std::vector<TokenGrant> tokens;
  // WMBT_KV_DAEMON_HTTP / --http: HOST:PORT of /healthz, /readyz and /metrics (empty = none).
  std::string http;
  // WMBT_KV_MAX_FRAME_BYTES / --max-frame-bytes: largest request frame body.
  uint32_t max_frame_bytes = wire::kDefaultMaxBodyBytes;
  // WMBT_KV_SHUTDOWN_TIMEOUT_MS / --shutdown-timeout: how long SIGTERM waits for running requests.
  uint64_t shutdown_timeout_ms = 30'000;
  // WMBT_KV_IDLE_TIMEOUT_MS / --idle-timeout: a silent TCP connection is closed after this.
  uint64_t idle_timeout_ms = 300'000;
  // WMBT_KV_DAEMON_WORKERS / --workers: threads running requests (a publish blocks one).
  uint32_t workers = 16;
  // WMBT_KV_TCP_POLL / --tcp-poll: after a wake-up with work, a TCP event loop polls for the next
  // request (yielding its core) before it sleeps (TcpServerOptions::spin); false = only while one
  // connection alone sends (docs/daemon.md, "Spinning").
  bool tcp_poll = true;

  static constexpr uint32_t kMaxFrameBytesMin = 4096;
  static constexpr uint32_t kWorkersMax = 1024;

  // Defaults, then every variable of DaemonSettingDocs() that is set and non-empty.
  static Result<DaemonSettings> FromLookup(const EnvLookup& lookup);
  static Result<DaemonSettings> FromEnv();

  // Sets one setting by its variable name. WMBT_KV_AUTH_TOKENS *adds* grants (so a repeated
  // --auth-token accumulates); every other setting replaces. InvalidArgument naming the variable
  // and the expected form (a token is never echoed).
  Status Set(std::string_view name, std::string_view value);

  // One "NAME=value" line per setting; tokens shown as a count.
  std::string Describe() const;
};

const std::vector<SettingDoc>& DaemonSettingDocs();

}  // namespace wombatkv
