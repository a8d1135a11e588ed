// RenderMetrics: the daemon's /metrics page in the Prometheus text exposition format (0.0.4):
// per-op and per-transport request, error and latency-histogram series from ServiceMetrics,
// the store's StoreStats
// (hit/miss per plane, cache sizes, L2 traffic and errors), and the TCP and shared-memory
// transports' counters.
// Names are documented in docs/daemon.md. Secrets never appear (no metric carries a token).
//
// Thread-safety: a function; the sources are read with relaxed loads, so series of one page are
// not a consistent snapshot of each other (as usual for Prometheus counters).
#pragma once

#include <array>
#include <string>

#include "daemon/service.h"
#include "transport/shm/shm_server.h"
#include "transport/tcp/tcp_server.h"
#include "wombatkv/store.h"

namespace wombatkv {

struct MetricsSources {
  // Indexed by Transport; null: no request series (store not open yet).
  std::array<const ServiceMetrics*, kTransports> service{};
  const StoreStats* store = nullptr;
  const tcp::TcpServerStats* tcp = nullptr;
  bool ready = false;
  const ShmServerStats* shm = nullptr;  // null: no shared-memory transport
  bool healthy = true;                  // Store::Health() is OK
  bool l2_up = true;                    // Store::L2Reachability() is OK
  std::string version;                  // "1.5.0": wombatkv_build_info{version=...}
  uint64_t start_unix_seconds = 0;      // when the daemon started (wall clock)
};

std::string RenderMetrics(const MetricsSources& sources);

}  // namespace wombatkv
