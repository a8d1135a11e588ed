// Orphan GC: deletes blobs that no chain head references once they are older than a grace period
// (docs/layout.md §7). Used by `wombatkv gc` / `wombatkv audit --repair`, and meant for the
// store's background work: construct one OrphanCollector per L2 prefix and call RunPass
// periodically.
//
// Safety against concurrent publishers (on this host or any other), in numbered rules that
// orphan_gc.cc and store_write.cc refer to:
//   R1. Age. A blob is a candidate only if no head named it when the pass listed and read the
//       heads, and it is older than the grace period: by its L2 modification time, or — when the
//       backend does not report one — since this collector first saw it unreferenced (so an
//       object of unknown age survives at least one full grace period of observation).
//   R2. Unknown references stop deletion. If any head of a namespace cannot be decoded, its
//       references are unknown and no blob of that namespace is deleted in that pass.
//   R3. Read, delete, re-check, restore. Before deleting a candidate the collector reads it
//       whole and keeps the bytes. After each batch of deletes it lists the heads again and
//       reads every head that is new or changed since the first listing; any deleted blob such a
//       head names is put back (put-if-absent) from the kept bytes. This covers a publisher
//       whose head was written after the collector's first listing and before its re-check.
//       A delete that failed is re-checked too (its answer may have been lost after it was
//       applied); a restore that fails is retried at every later pass; with listings that lag
//       (GcOptions::list_lag_us) the re-check first waits out the lag, and so does a second
//       listing of the heads before the deletes (so that only heads written during the pass are
//       left to the re-check). With a hold directory
//       (GcOptions::hold_dir) the kept bytes are on disk before the deletes, so a collector that
//       dies before its re-check leaves it to the next one.
//   R4. Publisher re-check (StoreImpl::ReverifyReusedBlobs). A publisher that relied on a blob
//       it did not upload itself (it found the blob already in L2) checks, after writing its
//       head, that the blob still exists, and re-uploads it from its own copy if not. This
//       covers a head written after the collector's re-check in R3: the collector's delete
//       happened before that re-check, so before the head write, so the publisher sees it.
//       The published prefix a publish continues is checked too, through a head that names it
//       throughout the head write or else blob by blob (store/store_indexed_prefix.cc).
//   Together: for any head H naming blob B written while B was being deleted, either the
//   collector's re-check (R3) sees H and restores B, or H was written after that re-check and
//   the publisher's check (R4) sees B missing. The window in which B is absent is short
//   (between the delete and the restore), and a reader in it gets a miss, never wrong bytes.
//   R5. A failed delete is reported, retried at the next pass, and never counted as freed;
//       a restored blob is never counted as freed either.
//
// Thread-safety: RunPass must not be called concurrently on one collector (it keeps state between
// passes); different collectors, and any number of publishers, may run at the same time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "gc/hold_files.h"
#include "gc/l2_scan.h"
#include "gc/orphan_blob.h"
#include "wombatkv/env.h"
#include "wombatkv/object_store.h"
#include "wombatkv/status.h"
#include "wombatkv/types.h"

namespace wombatkv::gc {

struct GcOptions {
  std::string l2_prefix = "kv";
  // R1. WMBT_KV_GC_GRACE (Config::gc_grace_us).
  uint64_t grace_us = 3600ull * 1000000;
  // Find and report expired orphans, delete nothing.
  bool dry_run = false;
  // Only this namespace (empty: every namespace in L2).
  std::string only_ns;
  // R3: orphan bytes held in memory per delete batch (a batch always takes at least one blob).
  uint64_t batch_bytes_max = 64ull << 20;
  // Deletes attempted per pass, 0 = unbounded: lets a background caller bound its work.
  uint64_t deletes_per_pass_max = 0;
  // R3 with eventual listings: the longest a listing of this L2 may lag behind a head write (0
  // for a strongly consistent store: AWS S3, the local directory). The re-check after a batch of
  // deletes waits this long first, so that every head written before the deletes is listed.
  uint64_t list_lag_us = 0;
  // Called just before each such wait (optional): a tool says why it is quiet.
  std::function<void(uint64_t wait_us)> on_list_lag_wait;
  // Reads heads, and reads and deletes orphans, in parallel when set (not owned).
  Executor* executor = nullptr;
  // Keep the blob names of every head read, by its ETag, between passes, and read only heads
  // listed with another ETag than the one read (a collector that runs again and again: the
  // store's). Costs 20 bytes per block and about 150 per head in memory; saves a GET per
  // unchanged head per pass.
  bool cache_heads = false;
  // Blobs the caller knows are, or are about to be, named by a head (a store's puts awaiting
  // publish, and the blobs its own index references): asked as each chunk of deletes is formed,
  // just before the chunk's reads and deletes, and a blob it returns true for is left alone this
  // pass. Lets a store collect with a grace shorter than
  // its own publishes take, and keeps it from deleting a blob of a head it published itself but
  // a lagging listing does not show yet (R3 would restore it, but not across a crash between the
  // delete and the re-check). Must not do L2 I/O.
  std::function<bool(const std::string& ns, const ContentHash& hash)> keep;
  // R3 across a crash: where the bytes kept for the re-check are also written, and synced,
  // before the deletes they cover (optional; the collector's own directory, not shared with
  // another collector while it runs). A collector that dies between its deletes and its re-check
  // leaves them there, and the next collector given the same directory does that re-check at
  // its first pass (and puts back what a head names). Needed wherever other processes may
  // publish heads naming what this collector deletes: a shared L2.
  FileSystem* hold_fs = nullptr;
  std::string hold_dir;
  // Asked before each chunk of deletes and each namespace (optional): true ends the pass early —
  // after the re-check of the deletes already made (R3), which is never skipped. A store closing.
  std::function<bool()> stop;
};

using HashSet = std::unordered_set<ContentHash, FixedBytesHash>;

// The blobs of `listing` that no hash in `referenced` names, in key order, aged against `now_us`
// by their L2 modification time.
std::vector<OrphanBlob> FindOrphans(const NamespaceListing& listing, const HashSet& referenced,
                                    uint64_t now_us);

struct GcReport {
  uint64_t namespaces = 0;      // scanned
  uint64_t heads = 0;           // read
  uint64_t heads_unchanged =
      0;                        // not read: listed with the ETag an earlier pass read (cache_heads)
  uint64_t blobs = 0;           // listed
  uint64_t orphans = 0;         // unreferenced blobs
  uint64_t orphan_bytes = 0;
  uint64_t expired = 0;         // orphans older than the grace period (deleted unless dry run)
  uint64_t expired_bytes = 0;
  uint64_t deleted = 0;         // deleted and not restored
  uint64_t freed_bytes = 0;     // bytes of those (R5: nothing else counts)
  uint64_t restored = 0;        // deleted, then put back because a new head names them (R3)
  uint64_t delete_failures = 0; // left in place; retried at the next pass (R5)
  uint64_t retried = 0;         // of this pass's attempts, blobs whose delete failed last pass
  uint64_t namespaces_skipped = 0;  // R2
  uint64_t kept = 0;            // expired, but GcOptions::keep held them
  // Expired, but a head the lagging first listing hid names them (list_lag_us): not deleted.
  uint64_t named_late = 0;
  uint64_t list_lag_waited_us = 0;  // R3: waited for lagging listings (list_lag_us per re-check)
  // Blobs an earlier collector deleted and died (or closed) before re-checking or putting back,
  // found in the hold directory and re-checked by this pass (their outcome is counted above).
  uint64_t recovered = 0;
  std::vector<OrphanBlob> removed;  // deleted (or, with dry_run, that would be), oldest first
  std::vector<std::string> problems;  // one line each: skipped namespaces, failed deletes
};

class OrphanCollector {
 public:
  // `l2` and `clock` are not owned and must outlive the collector. `clock` gives "now" (wall
  // time) to age blobs against their modification times.
  OrphanCollector(ObjectStore* l2, Clock* clock, GcOptions options);
  // Blobs not yet re-checked or put back stay in the hold directory (GcOptions::hold_dir).
  ~OrphanCollector();
  OrphanCollector(const OrphanCollector&) = delete;
  OrphanCollector& operator=(const OrphanCollector&) = delete;

  // One pass over L2 (or options.only_ns). An error means L2 could not be listed or read; what
  // was deleted before it is in neither the error nor a report, but every rule above still held.
  Result<GcReport> RunPass(const ScanProgressFn& progress = {});

  // Deletes that failed and will be retried at the next pass.
  size_t retry_backlog() const { return failed_.size(); }

  const GcOptions& options() const { return options_; }

 private:
  // Candidates read and deleted at once, per namespace, with an executor.
  static constexpr size_t kParallelDeletes = 32;
  // One candidate: read whole (its bytes kept for R3), then deleted unless larger than any blob
  // (or its bytes could not be written to the hold directory).
  struct Taken {
    Result<ObjectData> object = Status::Internal("not read");
    bool oversized = false;
    Status deleted = Status::Internal("not deleted");
    bool intact = false;  // the bytes decode to the blob's name
    bool to_delete() const { return object.ok() && !oversized; }
  };
  // L2 I/O only: safe on several threads at once.
  Taken Read(const OrphanBlob& o) const;
  // Reads a chunk of candidates, writes their bytes to the hold directory (if any), deletes them.
  Status TakeChunk(const std::vector<const OrphanBlob*>& chunk, std::vector<Taken>* taken,
                   std::shared_ptr<HoldFiles::File>* hold);
  // Lists, reads the heads, finds the namespace's expired orphans; deletes them at once with a
  // current listing, else leaves them to DeleteConfirmed.
  Status CollectNamespace(const NamespaceListing& listing, GcReport* report);
  // R3 for one batch: re-lists the heads, restores what a new or changed head names, and
  // accounts the rest as freed. `known` maps head keys to the ETag already read (updated).
  struct Held {
    HeldBlob blob;
    // The hold file with these bytes (GcOptions::hold_dir): removed once every blob in it is done.
    std::shared_ptr<HoldFiles::File> hold;
    // The kept bytes decode to the blob's name. Corrupt bytes are never put back: a restore
    // would only hide the damage; the publisher's re-check (R4) re-uploads good bytes instead.
    bool intact = true;
    // The delete failed — but a failure may follow an applied delete (a lost response), so the
    // re-check still puts it back if a new head names it. Never counted as deleted (R5).
    bool delete_failed = false;
    // Left by an earlier process (a hold file): its delete may never have happened (that process
    // died between the file and the delete), so it is counted as deleted only once L2 says so.
    bool leftover = false;
  };
  using KnownHeads = std::map<std::string, std::string>;  // head key → ETag read
  // Lists the heads of `ns` and reads those new or changed since `known` (updated), adding what
  // they name to `refs`; `unreadable` is set if one cannot be decoded (R2).
  Status ReadChangedHeads(const std::string& ns, KnownHeads* known, HashSet* refs,
                          bool* unreadable);
  struct Candidates {
    std::string ns;
    std::shared_ptr<KnownHeads> known;
    std::vector<OrphanBlob> expired;
  };
  // Candidates held for DeleteConfirmed, across the namespaces of a pass (one wait serves all);
  // at kCandidatesMax they are confirmed and deleted mid-pass, bounding the memory they take.
  static constexpr size_t kCandidatesMax = 65536;
  std::vector<Candidates> candidates_;
  size_t candidates_count_ = 0;
  // R1 with a lagging listing (list_lag_us): waits out the lag, lists each namespace's heads
  // again, and deletes only the candidates no head then names. A head written before the first
  // listing but hidden from it by the lag would otherwise see its blobs deleted, and be left to
  // the re-check (R3) alone — which a collector that dies first does not make until it runs again.
  Status DeleteConfirmed(GcReport* report);
  // Reads, keeps (hold directory) and deletes `expired` in chunks, deferring their re-check.
  Status DeleteExpired(const std::string& ns, const std::shared_ptr<KnownHeads>& known,
                       const std::vector<OrphanBlob>& expired, GcReport* report);
  void WaitListLag(GcReport* report);  // list_lag_us, counted in the report
  Status RecheckAndRestore(const std::string& ns, KnownHeads* known, std::vector<Held>* held,
                           GcReport* report);
  // Deletes whose re-check (R3) is still to come, across the namespaces of a pass, so that one
  // wait for the listing lag serves them all (a wait per namespace made a pass over N namespaces
  // take at least N lags). Their bytes count against batch_bytes_max together.
  struct Deferred {
    std::string ns;
    std::shared_ptr<KnownHeads> known;  // the namespace's, shared by its batches
    std::vector<Held> held;
  };
  // GcOptions::hold_dir; what an earlier collector left there is re-checked by the first pass.
  // Declared before every Held it outlives (their files are removed through it).
  std::unique_ptr<HoldFiles> holds_;
  bool leftovers_taken_ = false;
  // Hold files of another L2 prefix (the CLI run with other settings on the data directory):
  // kept on disk, unread, until a collector of that prefix takes them.
  std::vector<std::shared_ptr<HoldFiles::File>> other_prefix_holds_;
  std::vector<Deferred> deferred_;
  uint64_t deferred_bytes_ = 0;
  // Adds a namespace's batch; re-checks everything deferred once it reaches batch_bytes_max or
  // when `now` is set.
  Status Defer(const std::string& ns, const std::shared_ptr<KnownHeads>& known,
               std::vector<Held>* held, uint64_t bytes, bool now, GcReport* report);
  // Waits out the listing lag once, then re-checks every deferred batch — each of them, even
  // after one fails (the first error is returned).
  Status RecheckDeferred(GcReport* report);

  ObjectStore* const l2_;
  Clock* const clock_;
  const GcOptions options_;
  // cache_heads: head key → the ETag read and the blobs that version names.
  struct CachedHead {
    std::string etag;
    std::vector<ContentHash> hashes;
  };
  std::map<std::string, CachedHead> head_cache_;
  std::set<std::string> pass_roots_;  // the namespace roots this pass visited
  // R1 for backends without modification times: key → wall µs when first seen unreferenced.
  std::map<std::string, uint64_t> first_seen_;
  // R5: keys whose delete failed in the last pass.
  std::unordered_set<std::string> failed_;
  // R3: blobs a new head may name whose restore failed (or whose re-check could not be done):
  // their bytes are kept and put back (put-if-absent) at the start of every later pass until
  // L2 takes them. Putting back an orphan is harmless: a later pass collects it again.
  std::vector<Held> unrestored_;
  void RetryRestores(GcReport* report);
  Status TakeLeftovers(GcReport* report);
};

}  // namespace wombatkv::gc
