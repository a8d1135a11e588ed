// Daemon: the core of the wombatkvd process (tools/wombatkvd is its thin main). It composes the
// store (opened from Config, exactly as an embedded handle is: setup/store_from_config.h), the
// Service, the transports (shared memory, docs/shm.md, and TCP, docs/wire.md) and the
// HTTP endpoint (/healthz, /readyz, /metrics). docs/daemon.md is the operator's guide.
//
// Lifecycle:
//   Start   refuses a non-loopback TCP listener without auth tokens (SPEC §10) before touching
//           anything; starts HTTP (not ready yet), opens the store (bootstrap from L1/L2), starts
//           the Service and the transports, then reports ready.
//   Shutdown  not ready; transports stop accepting and reading, running requests get up to
//           `shutdown_timeout_ms` to finish and be answered; then the transports, the Service
//           and the store close (the store drains its background uploads: flush).
// A daemon killed with SIGKILL instead recovers at the next Start per G3/G4: acknowledged
// publishes are durable in L2, unpublished puts stay invisible.
//
// Thread-safety: Start/Shutdown/destructor from one thread; Metrics() and the HTTP endpoint from
// any.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "daemon/daemon_settings.h"
#include "wombatkv/env.h"
#include "wombatkv/status.h"
#include "wombatkv/store.h"

namespace wombatkv {

struct DaemonOptions {
  Config config;             // the store: data directory, L2, cache, log level
  DaemonSettings settings;   // transports, tokens, HTTP, limits, timeouts
  std::string version = "wombatkvd";
  LogSink log;               // null = stderr at config.log_level, "wombatkvd [level] ..."
  // Start-up and shutdown lines for the operator ("listening on tcp://..."); null = stdout.
  std::function<void(const std::string&)> announce;
  Clock* clock = nullptr;    // null = RealClock()
};

class Daemon {
 public:
  // Errors: FailedPrecondition (non-loopback listener without tokens, data directory owned by
  // another process), InvalidArgument (bad address, nothing to serve: the flags' fault),
  // Unavailable (cannot bind, S3 unreachable), and those of opening the store. Nothing keeps
  // running on failure.
  static Result<std::unique_ptr<Daemon>> Start(DaemonOptions options);

  // Shutdown() if it was not called.
  ~Daemon();

  // The graceful stop above. Returns how many requests did not finish within the bound. When
  // that is not 0 the store is deliberately left open (closing it under running requests would
  // be unsafe) and the caller should end the process at once (_exit): what was acknowledged is
  // durable, the rest is as after a crash.
  size_t Shutdown();

  bool ready() const;
  // The /metrics page.
  std::string Metrics() const;
  // TCP listeners as bound ("127.0.0.1:41234"), and the HTTP endpoint ("" when none).
  std::vector<std::string> tcp_addresses() const;
  std::string http_url() const;

  struct Impl;

 private:
  explicit Daemon(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace wombatkv
