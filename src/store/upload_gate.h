// Background uploads step aside while a large PutBlocks copies and hashes its payloads.
//
// On a machine with few cores the uploads (a kernel copy into the page cache per blob) and the
// put's copy + hash compete for the same CPUs, and the put, which the engine waits for, loses. The
// gate parks an upload submitted while such a put runs and starts it once no put copies any more:
// in the gaps between puts, when a publish needs it (Release), or when later uploads push it out
// of the parked window. The window is bounded in bytes because parked payloads stay pinned in the
// RAM cache (readable, not evictable): past the bound the oldest parked upload starts at once, so
// under a stream of puts that never pauses the uploads run alongside them, each one late by at
// most the bound's worth of later uploads, as before the gate.
//
// Parked uploads are started by "pumps": executor tasks that take parked uploads, oldest first,
// while no put copies. A put that ends with uploads parked and no pump running submits one; a
// pump that finds more work submits another, up to `pumps_max`. So back-to-back puts cost one
// task each, and an idle store drains its parked uploads on `pumps_max` threads.
//
// Invariant: whenever uploads are parked and no put copies, a pump is queued or running.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <span>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "wombatkv/env.h"

namespace wombatkv {

class UploadGate {
 public:
  UploadGate(Executor* executor, uint64_t parked_bytes_max, size_t pumps_max);
  UploadGate(const UploadGate&) = delete;
  UploadGate& operator=(const UploadGate&) = delete;

  // A put whose copy the uploads should not compete with begins / ends.
  void PutBegins();
  void PutEnds();

  // Submits `upload` (`bytes` of payload) to the executor now, or parks it while a put copies.
  // `id` names it for Release (several uploads may share an id).
  void Submit(uint64_t id, uint64_t bytes, std::function<void()> upload);

  // Submits the parked uploads named by `ids` to the executor now: a publish waits for them.
  void Release(std::span<const uint64_t> ids);
  // Submits every parked upload to the executor now: the store closes.
  void ReleaseAll();

  struct Stats {
    uint64_t parked = 0;        // uploads parked since the start
    uint64_t parked_now = 0;    // parked at this moment
    uint64_t parked_bytes = 0;  // their payload bytes
  };
  Stats stats() const;

 private:
  struct Parked {
    uint64_t id;
    uint64_t bytes;
    std::function<void()> upload;
  };

  void Pump();
  // REQUIRES: mu_ held. Whether a pump should be queued now (counted as running if so): uploads
  // are parked, no put copies and no pump is running.
  bool TakePumpLocked();
  using ParkedList = std::list<Parked>;
  // REQUIRES: mu_ held. Removes a parked upload (from the list and the index by id).
  std::function<void()> TakeLocked(ParkedList::iterator it);

  Executor* const executor_;
  const uint64_t parked_bytes_max_;
  const size_t pumps_max_;

  mutable std::mutex mu_;
  ParkedList parked_;  // GUARDED_BY(mu_): oldest first
  // GUARDED_BY(mu_): the parked uploads of each id, oldest first, so that a publish's Release
  // costs its own ids, not a scan of everything parked (up to half the RAM cache's worth).
  absl::flat_hash_map<uint64_t, absl::InlinedVector<ParkedList::iterator, 1>> by_id_;
  uint64_t parked_bytes_ = 0;  // GUARDED_BY(mu_)
  uint64_t parked_total_ = 0;  // GUARDED_BY(mu_)
  size_t puts_copying_ = 0;    // GUARDED_BY(mu_)
  size_t pumps_ = 0;           // GUARDED_BY(mu_): queued or running
};

// Closes `gate` (if not null) for its own lifetime: a put's scope.
class GatedPut {
 public:
  explicit GatedPut(UploadGate* gate) : gate_(gate) {
    if (gate_) gate_->PutBegins();
  }
  ~GatedPut() {
    if (gate_) gate_->PutEnds();
  }
  GatedPut(const GatedPut&) = delete;
  GatedPut& operator=(const GatedPut&) = delete;

 private:
  UploadGate* const gate_;
};

}  // namespace wombatkv
