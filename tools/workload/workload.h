// The engine-like workload: N conversations share a system prompt; each of T turns appends a few
// user+assistant blocks to its conversation and does what an inference engine with a KV-cache
// store does before and after prefill:
//
//   1. LookupPrefix over the conversation's whole key list   → h leading blocks are cached
//   2. GetBlocks(keys[0, h))  (restore instead of prefill)    → every byte checked against the
//                                                                synthetic payload of its key
//   3. PutBlocks(keys[h, n))  (the "prefilled" suffix)
//   4. PublishChain(chain id = tip, tip)                      → visible to the next lookup
//
// Turns run round-robin across conversations (turn 0 of every conversation, then turn 1, ...), as
// a server interleaves its users. Single-threaded; every duration is read from the injected Clock.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "tools/workload/latency.h"
#include "tools/workload/synthetic.h"
#include "wombatkv/env.h"
#include "wombatkv/status.h"
#include "wombatkv/store.h"

namespace wombatkv::workload {

struct Counters {
  uint64_t turns_total = 0;
  uint64_t turns = 0;
  uint64_t lookups = 0;
  uint64_t keys_looked_up = 0;
  uint64_t blocks_hit = 0;     // restored (lookup hit and get returned them)
  uint64_t blocks_missed = 0;  // had to be "prefilled" and put
  // Hits on blocks this run never put: stored by an earlier run or another process.
  uint64_t blocks_from_earlier = 0;
  uint64_t get_misses = 0;  // a lookup hit that GetBlocks then missed (evicted in between)
  uint64_t mismatched_blocks = 0;
  uint64_t bytes_restored = 0;
  uint64_t blocks_put = 0;
  uint64_t bytes_put = 0;
  uint64_t publishes = 0;
  uint64_t publishes_skipped = 0;  // the whole conversation was already cached
  uint64_t elapsed_micros = 0;
};

struct WorkloadResult {
  Counters counters;
  LatencyRecorder lookup;
  LatencyRecorder get;
  LatencyRecorder put;
  LatencyRecorder publish;
  // The first store error, which stopped the run (OK when the run completed).
  Status error;
  std::string error_what;  // e.g. "conversation 3, turn 2: publish"
};

struct WorkloadOptions {
  Shape shape;
  std::string ns;
  Fingerprint fp;
  Clock* clock = nullptr;  // REQUIRED
  // Called after every turn (for the progress line).
  std::function<void(const Counters&)> on_turn;
};

WorkloadResult RunWorkload(Store& store, const WorkloadOptions& options);

}  // namespace wombatkv::workload
