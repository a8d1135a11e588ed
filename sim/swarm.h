// Swarm configuration: every knob of a run drawn from its seed (TigerBeetle's swarm testing,
// FoundationDB's randomised knobs). Each fault class is switched on for some seeds and off for
// others, so a bug that needs "crashes but no 503s" is not drowned out by noise; sizes and limits
// lean to hostile extremes (empty payloads, a cache smaller than one block).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "sim/sim_env.h"
#include "sim/sim_planes.h"

namespace wombatkv::sim {

// Fault classes and hostile knobs that `--no-fault NAME` (and the shrinker) switch off after the
// seed drew them: every other draw of the seed stays what it was.
const std::vector<std::string>& FaultClassNames();

// What a command line changes in a seed's configuration (the shrinker's levers).
struct SwarmOverrides {
  std::set<std::string> off;  // names from FaultClassNames()
  int hosts = 0;              // 0 = as drawn
  uint64_t list_lag_us = 0;   // 0 = as drawn (the list-lag scenario on every seed otherwise)
  uint32_t buggify_percent = 0;  // 0 = as drawn, else p_buggify on every seed (1..100 %)
  uint64_t refresh_interval_ms = 0;  // 0 = as drawn, else automatic refresh on every seed
};

struct SwarmConfig {
  uint64_t seed = 0;
  int hosts = 2;
  int namespaces = 1;
  int fingerprints = 1;
  uint64_t block_bytes_min = 0;
  uint64_t block_bytes_max = 4096;
  uint64_t cache_bytes_max = 1 << 20;
  FaultRates faults;  // for the safety phase
  double p_crash_step = 0;    // a host crashes between steps
  double p_crash_mid = 0;     // a host crash is armed inside the next operation
  double p_brownout_toggle = 0;
  double p_corrupt = 0;       // flip a byte in a stored blob or sidecar
  double p_session = 0;       // a writer races on a shared chain id instead of id = tip
  double p_cas = 0;           // a session write uses compare-and-swap
  double p_variant = 0;       // an engine re-saves a key with different bytes
  double p_resave_all = 0.5;  // a writer puts the whole chain again, not just new blocks
  double p_buggify = 0;       // rate of the workload's own hostile decisions
  uint64_t safety_steps = 300;
  // Capacity scenario ("evict-gc", docs/testing.md): small namespace budgets and TTLs, a short
  // orphan-GC grace, eviction and GC passes at random steps (and in the background), and clock
  // jumps of seconds so TTLs and the grace come into play.
  bool capacity = false;
  uint64_t ns_budget_bytes = 0;   // every namespace; 0 = none
  uint64_t ns_ttl_seconds = 0;    // every namespace; 0 = none
  uint64_t gc_grace_us = 0;
  double p_evict = 0;             // an Evict() call on a random host after a step
  double p_gc = 0;                // a CollectOrphans() call on a random host after a step
  double p_clock_jump = 0;        // the clock jumps 1..4 s after a step
  // Drawn after the capacity knobs (so those stay what they were for older seeds).
  double p_corrupt_head = 0;      // flip a byte in a stored chain head
  // Drawn last: zstd level of the even-numbered hosts' blob uploads (WMBT_KV_BLOCK_COMPRESS),
  // 0 = none. The odd-numbered hosts write raw, so hosts read and reuse each other's codec.
  // Payloads are then half zero bytes, so that most compress.
  int block_compress_level = 0;
  // Drawn after that: hosts refresh from L2 by themselves every this many ms of simulated time
  // (WMBT_KV_REFRESH_INTERVAL; started by puts and gets, run as a background task), 0 = off —
  // every host, or (drawn last of all) only the odd-numbered ones, the others relying on Refresh.
  uint64_t refresh_interval_ms = 0;
  bool refresh_odd_hosts_only = false;
  bool RefreshesByItself(int host) const {
    return refresh_interval_ms > 0 && (!refresh_odd_hosts_only || host % 2 == 1);
  }
  // Drawn last, evict-gc only: StoreOptions::publish_grace_seconds (G10's in-flight protection,
  // and with the GC grace the age at which a put never published is forgotten).
  uint64_t publish_grace_seconds = 600;
  // Drawn after all of the above. The engines' own write path: a writer's put (of a chain under
  // its own tip, last writer wins) is a whole save instead (Store::SaveChain: the put and the
  // publish in one call, no L1 record of the puts, the last upload run by the publish) at this
  // rate; and saves, publishes and gets go through the daemon's forms (SaveChainAsync,
  // PublishChainAsync, GetBlocksIfCached / GetByContentHashIfCached) at `p_async`.
  double p_save = 0;
  double p_async = 0;
  // Drawn after all of the above, evict-gc only (the hosts have a data directory there): the
  // local disk cache of L2's payloads (StoreOptions::disk_cache_bytes_max, on by default in
  // production with S3) with this budget, 0 = off. Its files are never synced: a crash of the
  // host may lose, keep or garble each (CrashModelFs), and `corrupt` also flips bytes in, or
  // truncates, a random cache file of a random host (G9: never served).
  uint64_t disk_cache_bytes_max = 0;
  // L1 crash kinds still allowed (a disallowed kind becomes a process crash).
  bool l1_machine = true, l1_lost = true, l1_corrupt = true;

  // `capacity`: force the capacity scenario on (else the seed decides, for about 40% of seeds).
  static SwarmConfig FromSeed(uint64_t seed, uint64_t steps, bool capacity = false,
                              const SwarmOverrides& overrides = {});
  // The fault classes this configuration has on (candidates for the shrinker).
  std::vector<std::string> FaultsOn() const;
  L1CrashMode Allowed(L1CrashMode m) const;
  std::string Describe() const;
};

}  // namespace wombatkv::sim
