// The simulated planes: one shared bucket (L2) seen by every host through its own fault-injecting
// view, and a per-host L1 that forgets unsynced writes when its machine crashes.
//
// Fault model (docs/testing.md has the why):
//   L2  latency (simulated time), 503 Unavailable before the request is applied, timeouts (the
//       request may or may not have been applied), lost responses (applied, reported
//       Unavailable), short list pages, byte flips in stored blobs and sidecars, brown-outs
//       (most requests fail for a while), and crash points (the host dies before or after a
//       request is applied).
//   L1  process crash (everything written survives), machine crash (only what the last sync
//       write covered, plus a seed-chosen subset or prefix of later writes), L1 lost entirely,
//       a stored value corrupted (fails its CRC); crash points before/after a write.
//
// Thread-safety: none (single-threaded simulator).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "meta/meta_store.h"
#include "sim/sim_env.h"
#include "wombatkv/object_store.h"

namespace wombatkv::sim {

// Fault rates; the simulator changes them between phases (the liveness phase zeroes them).
struct FaultRates {
  double unavailable = 0;    // 503 before applying
  double timeout = 0;        // long latency, then Unavailable; applied with probability 1/2
  double lost_response = 0;  // applied, then Unavailable (writes only)
  double short_list = 0;     // a list page shorter than asked
  uint64_t latency_us_max = 0;
  // Eventual listing: for this long after a key is created (deleted), a listing may still omit
  // (include) it, as some S3-compatible servers do. GET/HEAD stay strongly consistent.
  uint64_t list_lag_us = 0;
  bool brownout = false;  // while set, 90% of requests fail with 503
};

// "<ns>/<kind>/<name>", cut to fit a trace line.
std::string ShortObjectKey(std::string_view key);

// Called by a plane at each request of a host: true = crash that host now.
using CrashPoint = std::function<bool(int host, const char* where)>;

// The one bucket every host shares: a MemObjectStore (the truth) plus what the simulator did to
// it behind the hosts' backs.
class SimBucket {
 public:
  SimBucket();
  ObjectStore* truth() { return truth_.get(); }
  // Flips one byte of a stored object (a bit rot / bad disk / bad proxy in the bucket).
  bool Corrupt(const std::string& key, uint64_t offset_seed);
  bool IsCorrupted(const std::string& key) const { return corrupted_.count(key) > 0; }
  // Corrupted at some point, even if rewritten or deleted since.
  bool EverCorrupted(const std::string& key) const { return ever_corrupted_.count(key) > 0; }
  // A write through any host replaces the object, so it is no longer corrupt.
  void Rewritten(const std::string& key) { corrupted_.erase(key); }
  // Damaged at some instant since the current step began. A read within a step may meet the
  // damage before a delete or rewrite later in the same step (orphan GC run by the executor while
  // a get waits) removes it, so a Corruption it reports is judged against this, not IsCorrupted.
  bool CorruptedThisStep(const std::string& key) const {
    return corrupted_this_step_.count(key) > 0;
  }
  void BeginStep() {
    corrupted_this_step_ = corrupted_;
    deleted_this_step_.clear();
    delete_unanswered_this_step_.clear();
  }
  // Deleted by a host since the current step began (one host's call and its tasks).
  bool DeletedThisStep(const std::string& key) const { return deleted_this_step_.count(key) > 0; }
  // Deleted since the current step began, but its deleter was told it failed (a lost response,
  // a timeout after the delete applied): the deleter may still believe the object is there.
  void DeleteUnanswered(const std::string& key) { delete_unanswered_this_step_.insert(key); }
  bool DeleteUnansweredThisStep(const std::string& key) const {
    return delete_unanswered_this_step_.count(key) > 0;
  }
  // Called after every applied head write with the key: lets the simulator check invariants at
  // the instant a head becomes visible in L2.
  std::function<void(const std::string& key)> on_head_written;
  std::function<void(const std::string& key)> on_head_deleted;

  // Eventual listing: when each key was last created (absent before the write) or deleted, with
  // the deleted object's listing entry (a lagging listing may still show it).
  void Created(const std::string& key, uint64_t now_us);
  void Deleted(const ObjectInfo& gone, uint64_t now_us);
  struct Change {
    uint64_t at_us = 0;
    bool deleted = false;
    ObjectInfo info;  // of the deleted object
  };
  const std::map<std::string, Change>& changes() const { return changes_; }

 private:
  std::unique_ptr<ObjectStore> truth_;
  std::set<std::string> corrupted_;
  std::set<std::string> ever_corrupted_;
  std::set<std::string> corrupted_this_step_;
  std::set<std::string> deleted_this_step_;
  std::set<std::string> delete_unanswered_this_step_;
  std::map<std::string, Change> changes_;
};

// One host's view of the bucket: every request goes through the fault model.
class FaultyObjectStore final : public ObjectStore {
 public:
  FaultyObjectStore(int host, SimBucket* bucket, const FaultRates* rates, SimRandom* rng,
                    SimClock* clock, Trace* trace, CrashPoint crash_point);
  std::string Describe() const override { return "sim://bucket"; }
  Result<std::string> Put(std::string_view key, const std::vector<ByteView>& parts,
                          const PutOptions& options) override;
  Result<ObjectData> Get(std::string_view key, uint64_t offset, uint64_t length) override;
  Result<ObjectInfo> Head(std::string_view key) override;
  Status Delete(std::string_view key) override;
  Result<ListPage> List(std::string_view prefix, std::string_view delimiter,
                        std::string_view token, size_t max_keys) override;

 private:
  // Latency, brown-out, 503 and timeouts before the request; a non-OK status means "not applied".
  Status Before(const char* op, std::string_view key);
  // After an applied write: maybe lose the response, maybe crash.
  Status AfterWrite(const char* op, std::string_view key);
  void Note(const std::string& what);
  // A listing as a server with eventual listings might answer it (FaultRates::list_lag_us).
  Result<ListPage> LaggingList(std::string_view prefix, std::string_view delimiter,
                               std::string_view token, size_t max_keys);

  int host_;
  SimBucket* bucket_;
  const FaultRates* rates_;
  SimRandom* rng_;
  SimClock* clock_;
  Trace* trace_;
  CrashPoint crash_point_;
  bool timed_out_applied_ = false;  // the current request timed out after being applied
};

// How a host's L1 comes back after its crash.
enum class L1CrashMode {
  kProcess,      // the OS kept every write (a process crash)
  kMachineSubset,  // only synced state plus a random subset of later writes
  kMachinePrefix,  // only synced state plus a prefix of later writes (a WAL)
  kLost,         // the L1 directory is gone
  kCorrupt,      // every write kept, then one stored value flipped (fails its CRC)
};
const char* L1CrashModeName(L1CrashMode m);

class CrashableMetaStore final : public MetaStore {
 public:
  CrashableMetaStore(int host, CrashPoint crash_point);
  Status Write(const MetaWriteBatch& batch, bool sync) override;
  Result<std::string> Get(std::string_view key) override { return live_->Get(key); }
  Status Scan(std::string_view prefix,
              const std::function<bool(std::string_view, std::string_view)>& fn) override {
    return live_->Scan(prefix, fn);
  }
  Status DeletePrefix(std::string_view prefix) override;
  // Rebuilds the live store as the machine would find it after a crash in `mode`.
  void Crash(L1CrashMode mode, SimRandom* rng);
  // Corruption may hit pending records ("P...") as well as heads. (It once made Open fail for
  // good: docs/testing.md, "Bugs found".)
  bool corrupt_pending_records = true;

 private:
  using Op = std::variant<MetaWriteBatch, std::string /* DeletePrefix */>;
  static void Apply(std::map<std::string, std::string>* m, const Op& op);

  int host_;
  CrashPoint crash_point_;
  std::unique_ptr<MetaStore> live_;
  std::map<std::string, std::string> durable_;  // state as of the last sync write
  std::vector<Op> unsynced_;                    // writes since then, in order
};

}  // namespace wombatkv::sim
