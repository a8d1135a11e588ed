// The simulator: several hosts (each a real Store with its own L1, executor and view of the
// bucket) driven by a seeded workload through a safety phase with faults and a liveness phase
// without them, every answer judged by the checkers. `Simulate(seed)` is a pure function of the
// seed, the options and the commit: the trace digest proves it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/swarm.h"

namespace wombatkv::sim {

struct SimOptions {
  uint64_t steps = 300;          // safety-phase steps
  bool verbose = false;          // print every event
  bool l2_invariants = true;     // check L2 at every head write (off: only API-visible checks)
  size_t tail_events = 50;       // events printed on failure
  bool capacity = false;         // force the evict-gc scenario on for every seed (swarm.h)
  SwarmOverrides overrides;      // --no-fault, --hosts (the shrinker's levers)
  // Test only: PublishChain skips its durability barrier (store/store_test_hooks.h), to prove
  // the checkers and the shrinker catch a broken G3.
  bool break_publish_order = false;
  // Stores are not told the bucket's listing lag (StoreOptions::l2_list_lag_us stays 0), as with
  // an operator who did not set it: orphan GC may then delete a blob a new head names.
  bool gc_ignores_list_lag = false;
};

struct SimResult {
  bool ok = true;
  std::string guarantee;  // of the first violation
  std::string failure;
  std::vector<std::string> tail;  // last events before the violation
  uint64_t digest = 0;
  uint64_t events = 0;
  uint64_t steps_run = 0;
  std::string config;
  // Counters for the report.
  uint64_t crashes = 0, acked_publishes = 0, faults_seen = 0;
};

SimResult Simulate(uint64_t seed, const SimOptions& options);

}  // namespace wombatkv::sim
