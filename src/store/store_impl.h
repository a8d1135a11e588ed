// StoreImpl: the engine behind Store. It only composes planes; each plane is its own module.
// The .cc files are split by operation: store_open.cc (open, L1 load, refresh/reconcile),
// store_write.cc (put, publish, sidecar put), store_read.cc (lookup, get, stats),
// store_evict.cc (usage accounting, use stamps, eviction; docs/capacity.md), store_gc.cc (orphan
// GC), store_auto_refresh.cc (refreshes in the background), store_abandoned_puts.cc (puts never
// published).
//
// Locking (always acquired in this order, never the reverse):
//   refresh_mu_          one Refresh at a time (held across its L2 listing and reads)
//   evict_mu_            one eviction pass at a time (held across its L2 I/O); a pass never
//                        takes refresh_mu_, but an inline executor may run one inside a refresh
//   gc_mu_               one orphan GC pass at a time (held across its L2 I/O; the collector
//                        keeps state between passes). Taken after evict_mu_ is released, never
//                        with it; while held only leaf locks are taken, briefly, between I/O
//   publish_stripes_[i]  serialises head changes of chains hashing to stripe i (publish,
//                        refresh, compaction); at most one stripe is held at a time. Taken
//                        through LockChain, which also waits out the chain's completion-based
//                        save (store_save_async.cc), whose head write runs without the stripe
//   async_mu_            leaf: the chains with such a save in flight
//   forget_mu_           puts (shared, until their blocks are pending); a pass forgetting
//                        abandoned puts and a publish deleting its puts' L1 records
//                        (exclusive); held across L1 writes, never L2 I/O
//   index_mu_            the L0 index (shared for reads, exclusive for changes)
//   upload_mu_ → the cache's mutex;  pending_mu_, ns_mu_, fork_hints_mu_, the ledger's mutex:
//                        leaf locks
// Only evict_mu_, gc_mu_, refresh_mu_ and a publish stripe are ever held across L2 I/O.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/limits.h"
#include "base/log_budget.h"
#include "cache/buffer_pool.h"
#include "cache/disk_cache.h"
#include "cache/payload_cache.h"
#include "gc/orphan_gc.h"
#include "index/radix_index.h"
#include "layout/chain_head.h"
#include "meta/meta_store.h"
#include "store/cold_set.h"
#include "store/engine_key_hash.h"
#include "store/evict_lease.h"
#include "store/upload_gate.h"
#include "store/usage_ledger.h"
#include "wombatkv/store.h"

namespace wombatkv {

class StoreImpl final : public Store {
 public:
  explicit StoreImpl(const StoreOptions& options);
  ~StoreImpl() override;

  // Everything Open does after construction: directory lock, planes, L1 load, reconcile.
  Status Init();

  Result<std::vector<ContentHash>> PutBlocks(std::string_view ns, const Fingerprint& fp,
                                             std::span<const BlockPut> blocks) override;
  Result<uint64_t> PublishChain(std::string_view ns, const Fingerprint& fp,
                                const ChainId& chain_id, const BlockKey& tip,
                                std::optional<uint64_t> expected_version,
                                ChainState* current) override;
  void SaveChainAsync(std::string_view ns, const Fingerprint& fp,
                      std::span<const BlockPut> blocks, SaveDone done) override;
  void PublishChainAsync(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id,
                         const BlockKey& tip, std::optional<uint64_t> expected_version,
                         PublishDone done) override;
  Result<uint64_t> SaveChain(std::string_view ns, const Fingerprint& fp,
                             std::span<const BlockPut> blocks) override;
  Result<size_t> LookupPrefix(std::string_view ns, const Fingerprint& fp,
                              std::span<const BlockKey> keys) override;
  Result<Borrow> GetBlocks(std::string_view ns, const Fingerprint& fp,
                           std::span<const BlockKey> keys) override;
  Result<BufferSlice> GetByContentHash(std::string_view ns, const ContentHash& hash) override;
  std::optional<Result<Borrow>> GetBlocksIfCached(std::string_view ns, const Fingerprint& fp,
                                                  std::span<const BlockKey> keys) override;
  std::optional<Result<BufferSlice>> GetByContentHashIfCached(std::string_view ns,
                                                              const ContentHash& hash) override;
  Status PutSidecar(std::string_view ns, const Fingerprint& fp, const BlockKey& tip,
                    ByteView bytes) override;
  Result<BufferSlice> GetSidecar(std::string_view ns, const Fingerprint& fp,
                                 const BlockKey& tip) override;
  Result<RefreshReport> Refresh() override;
  Result<std::vector<ChainState>> ListChains(std::string_view ns) override;
  Result<std::vector<ChainBlock>> GetChain(std::string_view ns, const Fingerprint& fp,
                                           const ChainId& chain_id) override;
  StoreStats Stats() override;
  Status Health() override;
  Status L2Reachability() override;
  std::vector<NamespaceUsage> Usage(std::string_view ns, bool by_fingerprint) override;
  Result<EvictionReport> Evict() override;
  Result<OrphanGcReport> CollectOrphans() override;
  // "s3://bucket/ (prefix kv)": two setups sharing a bucket under other prefixes look different.
  std::string DescribeL2() const override {
    return l2_->Describe() + " (prefix " + options_.l2_prefix + ")";
  }

 private:
  // A block put in this process and not yet published.
  struct PendingKey {
    uint32_t ns_id;
    Fingerprint fp;
    BlockKey key;
    bool operator==(const PendingKey&) const = default;
  };
  struct PendingKeyHash {
    size_t operator()(const PendingKey& k) const {
      return EngineKeyHash{}(k.fp, k.key) ^ k.ns_id;
    }
  };
  struct PendingBlock {
    BlockKey parent;
    ContentHash hash;
    uint32_t length = 0;
    uint64_t put_us = 0;  // wall clock
    bool in_l1 = false;   // its L1 pending record was written (a SaveChain writes none)
  };
  // For G10: how many pending blocks name a key as their own key or their parent, and the newest
  // of their put times. Such a key is "in flight" while that time is within the publish grace.
  struct PendingRef {
    uint32_t count = 0;
    uint64_t newest_put_us = 0;
  };
  // The pending blocks a publish collected, claimed until it is done with them (its head written
  // and the blocks forgotten as published, or the publish failed): ForgetAbandonedPuts leaves a
  // claimed block, its blob and its upload alone (store_abandoned_puts.cc). The blobs of the
  // indexed prefix it continues are kept from this store's orphan GC as well.
  class PublishClaim {
   public:
    // The pending puts a publish collected: each key, and the blob it named then.
    struct Claimed {
      PendingKey key;
      ContentHash hash;
    };
    // REQUIRES: store->pending_mu_ held.
    PublishClaim(StoreImpl* store, std::vector<Claimed> claimed);
    ~PublishClaim();  // takes pending_mu_
    PublishClaim(const PublishClaim&) = delete;
    PublishClaim& operator=(const PublishClaim&) = delete;
    void KeepBlobs(std::vector<CacheKey> blobs);  // takes pending_mu_; once
    // G10: eviction leaves the chain alone until the publish has answered (its claim goes just
    // before the answer) — after its head is installed and its pending puts forgotten too, while
    // its prefix is re-checked. Takes pending_mu_; once.
    void HoldChain(const ChainId& chain_id);

   private:
    StoreImpl* store_;
    std::vector<Claimed> claimed_;
    std::vector<CacheKey> blobs_;
    std::optional<ChainId> chain_;
  };
  // One background upload of a blob to L2. Lives in uploads_ until a publish consumes it.
  struct Upload {
    Completion done;
    // Whoever sets this runs the upload: the executor's task, or a publisher that would
    // otherwise wait for a task still queued (or deferred by SaveChain) to start.
    std::atomic<bool> started{false};
    std::string ns;
    BufferSlice payload;  // kept (and pinned in the cache) until the blob is durable
    uint64_t bytes = 0;   // the payload's size, for the upload gate (payload may be dropped)
    // After a failed background upload, publishers retry it themselves: one at a time, and the
    // pin is released exactly once.
    std::mutex retry_mu;
    // The blob was already in L2 (another writer's): set by the upload before `done` (or by the
    // retry, under retry_mu). Such a blob is re-checked after the head names it (R4).
    bool reused = false;
    // Wall clock when this process made the blob durable (0: not yet): a publish long after it
    // cannot count on the blob being too young for any collector (BlobsNotWrittenHere).
    std::atomic<uint64_t> durable_us{0};
    bool retried_ok = false;  // GUARDED_BY(retry_mu)
    bool superseded = false;  // GUARDED_BY(retry_mu): failed, and a newer upload replaced it
  };
  struct CacheKeyHash {
    size_t operator()(const CacheKey& k) const {
      return static_cast<size_t>(k.hash.Prefix64() ^ k.ns_id);
    }
  };

  // --- helpers (store_read.cc) ---
  // GetBlocks, or with !may_block GetBlocksIfCached: nullopt (nothing counted) instead of L2.
  std::optional<Result<Borrow>> ReadBlocks(std::string_view ns, const Fingerprint& fp,
                                           std::span<const BlockKey> keys, bool may_block);

  // --- helpers (store_write.cc) ---
  // PutBlocks; for SaveChain (`save`) without L1 pending records, and with the last block's
  // upload not queued but returned in *deferred (null if a live upload of those bytes exists),
  // for the publish to run in the caller's thread.
  Result<std::vector<ContentHash>> PutBlocksImpl(std::string_view ns, const Fingerprint& fp,
                                                 std::span<const BlockPut> blocks, bool save,
                                                 std::shared_ptr<Upload>* deferred);
  // Starts an upload of `payload` unless a live one of the same bytes exists (then null). With
  // `defer` it is not queued: whoever sets its `started` first runs it.
  std::shared_ptr<Upload> StartUpload(const CacheKey& ck, std::string ns, BufferSlice payload,
                                      bool defer = false);
  // Queues the upload, or parks it in the upload gate while a large put copies; the task runs
  // it unless someone has started it by then.
  void SubmitUpload(const CacheKey& ck, const std::shared_ptr<Upload>& up);
  // The upload's work; REQUIRES: the caller set up->started.
  void RunUpload(const CacheKey& ck, const std::shared_ptr<Upload>& up);
  // A failed upload that no publisher is retrying gives way to a new upload of the same bytes
  // (a later put): releases its pin and returns true. REQUIRES: upload_mu_ held.
  bool RetireFailedUpload(const CacheKey& ck, Upload& old);
  void DropUploadPayload(Upload& up);  // takes upload_mu_
  // `*reused` (optional) is set when the blob was already in L2 and nothing was written. The
  // payload's owner lets a journaled local L2 write it without a copy (PutOptions::value_owner).
  Status UploadBlob(const std::string& ns, const ContentHash& hash, const BufferSlice& payload,
                    bool* reused = nullptr);
  Status EnsureDurable(std::string_view ns, const CacheKey& ck);
  // The leading entries a publish took from L0 (CollectChain), and a chain whose head may name
  // them as its own leading entries (checked in L2 before use): the chain L0 has whose head is
  // exactly those, else the one the last fork from that block wrote (RememberFork).
  struct IndexedPrefix {
    size_t length = 0;
    std::optional<ChainId> witness;
    std::string witness_etag;  // as read before the head write (CheckIndexedPrefix)
  };
  // A chain this process wrote whose head starts with the `length` entries ending at `key`: the
  // witness for the next publish continuing them (a fork from the middle of a chain has no chain
  // of its own). Hints only, bounded: each is read from L2 before it is relied on.
  struct ForkPoint {
    PendingKey at;
    size_t length;
    bool operator==(const ForkPoint&) const = default;
  };
  struct ForkPointHash {
    size_t operator()(const ForkPoint& f) const { return PendingKeyHash{}(f.at) ^ f.length; }
  };
  static constexpr size_t kForkHintsMax = 4096;
  void RememberFork(uint32_t ns_id, const Fingerprint& fp, const std::vector<ChainEntry>& entries,
                    const IndexedPrefix& indexed, const ChainId& written);
  // The chain root→tip; `*indexed` gets how many leading entries came from L0 (published, so
  // durable in L2 while some head in L2 still names them: CheckIndexedPrefix), and the chain
  // L0 has whose head names exactly those entries, if it knows one.
  Result<std::vector<ChainEntry>> CollectChain(std::string_view ns, uint32_t ns_id,
                                               const Fingerprint& fp, const BlockKey& tip,
                                               IndexedPrefix* indexed,
                                               std::shared_ptr<PublishClaim>* claim);
  // Orphan-GC safety for publishers (R4 in gc/orphan_gc.h). Before the head is written: the new
  // entries' blobs this process did not write itself (found in L2, or put by another process).
  // `copies` gets the bytes this process still holds of those blobs (their uploads' payloads).
  using ReusedCopies = std::unordered_map<ContentHash, BufferSlice, FixedBytesHash>;
  std::vector<ContentHash> BlobsNotWrittenHere(uint32_t ns_id,
                                               const std::vector<ChainEntry>& entries, size_t from,
                                               ReusedCopies* copies);
  // After the head is written: each of those blobs still exists, else it is put back from this
  // process's copy of its bytes. FailedPrecondition (naming the blob) if it is gone and no copy
  // is left. Up to kParallelHeads HEADs at once once one took kRoundTripUs (a remote L2).
  static constexpr size_t kParallelHeads = 8;
  static constexpr uint64_t kRoundTripUs = 200;
  Status ReverifyReusedBlobs(std::string_view ns, uint32_t ns_id,
                             const std::vector<ContentHash>& hashes, const ReusedCopies& copies);
  // What a publish learns before it writes the head, durability barrier passed: the chain's
  // entries, and the blobs it relies on without having written them (R4) with the bytes this
  // process still holds of them.
  struct PublishPlan {
    uint32_t ns_id = 0;
    std::vector<ChainEntry> entries;
    IndexedPrefix indexed;
    std::vector<ContentHash> reused;
    ReusedCopies copies;
    std::shared_ptr<PublishClaim> claim;  // of the entries that were pending
  };
  Result<PublishPlan> PreparePublish(std::string_view ns, const Fingerprint& fp,
                                     const ChainId& chain_id, const BlockKey& tip);
  // The blobs of the indexed prefix (store_indexed_prefix.cc). Before the head write: a head in
  // L2 names them (the witness, whose ETag is kept), else each blob is there or put back from
  // memory; FailedPrecondition naming a blob that is gone with no copy left.
  Status CheckIndexedPrefix(std::string_view ns, const Fingerprint& fp, uint32_t ns_id,
                            const ChainId& written, const std::vector<ChainEntry>& entries,
                            IndexedPrefix* indexed);
  // After it: the witness is unchanged, else each blob again. Then, for a chain `written` without
  // a witness, remembers it as the next one's (RememberFork).
  Status RecheckIndexedPrefix(std::string_view ns, const Fingerprint& fp, uint32_t ns_id,
                              const ChainId& written, const std::vector<ChainEntry>& entries,
                              const IndexedPrefix& indexed);
  Status PrefixBlobsInL2(std::string_view ns, uint32_t ns_id,
                         const std::vector<ChainEntry>& entries, const IndexedPrefix& indexed);
  // A last-writer-wins publish whose head write completes from L2 (PutAsync). Falls back to
  // PublishChain, in this thread, where that cannot be done without blocking in the completion:
  // reused blobs to re-check, a conflicting head write.
  void PublishAsync(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id,
                    const BlockKey& tip, SaveDone done);
  // Count what the destructor waits for: SaveChainAsync calls and their completions in flight.
  // (So a store must not be destroyed from inside a completion of its own.)
  void AsyncBegan();
  void AsyncEnded();
  struct AsyncCall {  // counts a call while it runs
    explicit AsyncCall(StoreImpl* s) : store(s) { store->AsyncBegan(); }
    ~AsyncCall() { store->AsyncEnded(); }
    AsyncCall(const AsyncCall&) = delete;
    AsyncCall& operator=(const AsyncCall&) = delete;
    StoreImpl* store;
  };
  // After a publish: the puts it published are no longer pending, their uploads are done.
  Status ForgetPublished(std::string_view ns, uint32_t ns_id, const Fingerprint& fp,
                         const std::vector<ChainEntry>& entries);
  // The chain as L0 has it (L2 is not read).
  std::optional<ChainInfo> IndexedHead(std::string_view ns, const Fingerprint& fp,
                                       const ChainId& chain_id);
  // A head to write over: the chain and the ETag of its head object, the base of a conditional
  // write (L0 keeps only a digest of ETags: radix_index.h).
  struct HeadBase {
    ChainInfo chain;
    std::string etag;
  };
  // The base of a write of the chain's head. Nullopt if L0 has no such chain (the write creates
  // it; if L2 has one, the conditional write says so). Else L2's head is looked up for its ETag:
  // if it is the head L0 has, that is the base, else L2's head is read and installed first
  // (SyncHeadFromL2). REQUIRES: the chain's stripe is held.
  Result<std::optional<HeadBase>> WriteBase(std::string_view ns, const Fingerprint& fp,
                                            const ChainId& chain_id);
  // The ETag of the chain's head in L2 if that head is the one whose ETag has `etag_digest`
  // (RadixIndex::EtagDigest); nullopt if L2 has another head or none. An error: L2 could not say.
  Result<std::optional<std::string>> L2EtagIfDigest(const std::string& key, uint64_t etag_digest);
  // The chain's head as L2 has it now, installed in L1 and L0 (removed there if L2 has none).
  // REQUIRES: the chain's stripe is held.
  Result<std::optional<HeadBase>> SyncHeadFromL2(std::string_view ns, const Fingerprint& fp,
                                                 const ChainId& chain_id);
  Status StaleConflict(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id,
                       const ChainInfo* base, uint64_t expected_version, ChainState* current);
  static uint64_t VersionOf(const std::optional<ChainInfo>& c) { return c ? c->version : 0; }
  static uint64_t VersionOf(const std::optional<HeadBase>& b) { return b ? b->chain.version : 0; }
  void CompactRedundantHeads(std::string_view ns, const Fingerprint& fp,
                             const std::vector<ChainEntry>& entries);
  // Deletes a redundant head if L2 still holds exactly `expected` under it.
  Status DeleteRedundantHead(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id,
                             std::span<const ChainEntry> expected);

  // A put of ours awaits the blob's publish, or its upload is unfinished or failed: the RAM cache
  // may hold its only copy (used to keep buggify off such reads).
  bool MayBeOnlyInRam(uint32_t ns_id, const ContentHash& hash);

  // --- local disk cache (store_read.cc) ---
  // Opens the disk cache when one is configured and L2 is not a local directory.
  Status OpenDiskCache();
  // Writes the payload to the disk cache on the executor, off the caller's path (no-op without
  // a disk cache). REQUIRES: `payload` hashes to `hash` (verified, or hashed at the put).
  // A queued fill holds its payload in RAM, over the cache's budget (C2), so the queue is bounded
  // (FillQueueBytesMax) and a payload already queued is not queued again: a fill that does not
  // fit is skipped (counted), as the cache itself skips one that does not fit its budget.
  void FillDiskCacheLater(std::string_view ns, const ContentHash& hash, BufferSlice payload);
  uint64_t FillQueueBytesMax() const;

  // --- helpers (store_open.cc) ---
  Status OpenPlanes();
  Status LoadFromL1(bool* l1_was_empty);
  // Empties L1 for a rebuild from L2. L1 opened here from a data directory is started afresh
  // (its directory deleted and made again): deleting its keys would read the damaged block that
  // may have called for the wipe (RocksDB seeks to the last key), and leave it on disk.
  Status WipeL1();
  Status OpenL1Dir();  // owned_l1_ in l1_dir_, rebuilt when RocksDB finds it corrupt
  // Reads the current head of a chain from L2: nullopt if absent.
  Result<std::optional<std::pair<std::string, layout::ChainHead>>> ReadHead(
      std::string_view ns, const Fingerprint& fp, const ChainId& chain_id);
  // Installs a head in L1 and L0 (REQUIRES: the chain's stripe is held, or the chain is marked in
  // async_chains_ by the caller).
  Status ApplyHead(const layout::ChainHead& head, const std::string& etag,
                   const std::string& encoded);
  // ApplyHead's first part: installs the head in L0 and adds its L1 records to *b (not written).
  Status InstallHead(const layout::ChainHead& head, const std::string& etag,
                     const std::string& encoded, MetaWriteBatch* b);
  // ApplyHead's second part: writes InstallHead's records to L1 (returning that write's
  // outcome) and lets eviction look at the namespace the head grew.
  Status RecordInstalledHead(std::string_view ns, const MetaWriteBatch& b);
  // Writes `b` to L1, then calls `then` with the outcome: at once, or — inside a journal round's
  // completions (base/defer_scope.h) — once the round is through, in one write with the other
  // completions' batches (store_save_async.cc).
  void WriteL1Then(MetaWriteBatch b, std::function<void(Status)> then);
  Status RemoveHeadLocally(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id);
  Result<std::vector<std::string>> ListNamespacesInL2();
  Status RefreshNamespace(const std::string& ns, RefreshReport* report);
  // One listing of `ns`'s heads: installs those new or changed since L0 saw them, and adds to
  // `listed` each chain listed and still there when read (store_open.cc).
  // L1 is a copy: a change it cannot record is counted here, not an error of the refresh (L0
  // follows L2; the next open or refresh repairs L1).
  struct UnrecordedChanges {
    uint64_t count = 0;
    Status first;
    void Add(const Status& s) {
      if (s.ok()) return;
      if (count++ == 0) first = s;
    }
  };
  using ListedChains = std::set<std::tuple<Fingerprint, ChainId>>;
  Status InstallListedHeads(const std::string& ns, ListedChains* listed, RefreshReport* report,
                            UnrecordedChanges* unrecorded);

  // --- capacity (store_evict.cc) ---
  // Every change of a chain in L0 goes through these two (REQUIRES: index_mu_ held exclusively):
  // they keep the ledger in step and add the L1 records of blobs that became unreferenced, or
  // referenced again, to `batch`. Install stamps the chain's nodes with `used` (I7); an
  // eviction pass's own trim says so (`trim`: its pass puts the chain back in its cold set).
  // Both return the bytes of blobs that became unreferenced.
  // `order` is the head's publish time (RadixIndex I8: the newest publish's bytes win a node).
  uint64_t InstallChainLocked(std::string_view ns, const Fingerprint& fp, const ChainInfo& info,
                              std::span<const ChainEntry> entries, uint32_t used, uint64_t order,
                              MetaWriteBatch* batch, bool trim = false);
  uint64_t DropChainLocked(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id,
                           MetaWriteBatch* batch);
  // A chain's entries as its head names them: L0's keys, the ledger's hashes (L0 keeps the
  // newest publish's bytes per block, I8). REQUIRES: index_mu_ held (shared is enough).
  std::vector<ChainEntry> OwnEntriesLocked(std::string_view ns, const Fingerprint& fp,
                                           const ChainId& chain_id) const;
  // A chain about to leave L0 or be replaced: its path's keys and the order it was put with.
  struct DepartingChain {
    std::vector<BlockKey> path;  // empty if L0 has no such chain
    uint64_t order = 0;
  };
  DepartingChain DepartingLocked(std::string_view ns, const Fingerprint& fp,
                                 const ChainId& chain_id) const;
  void ReassignStaleLocked(std::string_view ns, const Fingerprint& fp,
                           const DepartingChain& departed, const UsageLedger::Changes& changes);
  void RecordOrphans(std::string_view ns, const UsageLedger::Changes& changes,
                     MetaWriteBatch* batch);
  // The pending map and its G10 references change only through these (REQUIRES: pending_mu_).
  void AddPendingLocked(const PendingKey& key, const PendingBlock& block);
  void ErasePendingLocked(const PendingKey& key);
  void ReleasePendingRefsLocked(const PendingKey& key, const PendingBlock& block);
  // Whether a put awaiting its publish (within the grace) names `key` or has it as parent.
  bool InFlightLocked(uint32_t ns_id, const Fingerprint& fp, const BlockKey& key,
                      uint64_t now_us) const;  // REQUIRES: pending_mu_
  // Use stamps: seconds since kUseEpochMicros, at least 1.
  static uint32_t TickOf(uint64_t wall_us);
  static uint64_t MicrosOfTick(uint32_t tick);
  uint32_t RefreshUseTick();  // reads the clock; the tick never goes back
  // A head's publish time: the wall clock, strictly after every earlier one of this process, so
  // two publishes of one process never tie for a node's bytes (RadixIndex I8).
  uint64_t NextPublishMicros();
  bool EvictionConfigured() const { return evict_configured_; }
  // Starts a background pass on the executor unless one is queued: at once when `urgent`, else
  // only if the interval has passed since the last one.
  void MaybeScheduleEviction(bool urgent);
  void MaybeScheduleEvictionFor(std::string_view ns);  // urgent if `ns` is over its budget
  void BackgroundPass();
  // The body of a timer thread (a store with its own executor): `work` every interval until the
  // store closes.
  void TimerLoop(uint64_t interval_ms, const std::function<void()>& work);
  EvictionReport EvictPass();
  // --- automatic refresh (store_auto_refresh.cc) ---
  // With an injected executor or clock: starts a refresh on the executor when the interval has
  // passed since the last one began (puts and gets call it). With the store's timer: nothing.
  void MaybeScheduleRefresh();
  void AutoRefresh();                     // one refresh; a failure is logged within a budget
  // Marks this thread as inside this store's Refresh() (holding refresh_mu_) for its lifetime.
  class RefreshingHere {
   public:
    explicit RefreshingHere(const StoreImpl* store);
    ~RefreshingHere();
    static bool In(const StoreImpl* store);  // whether this thread is inside store's Refresh()

   private:
    const StoreImpl* previous_;
  };
  Result<RefreshReport> RefreshOnce();    // one listing, under refresh_mu_
  Result<RefreshReport> RefreshLocked();  // REQUIRES: refresh_mu_
  // Before an eviction pass, a store with no refresh interval on a shared L2 loads the namespaces
  // whose eviction lease its last pass held, at most every half lease: it is the only one to
  // evict there, and without this it saw other hosts' chains as of its open only, so with a TTL
  // (which renews the lease for as long as it runs) those chains were evicted by no one.
  // Not with evict_mu_ held (a refresh may run a pass inline: refresh_mu_ comes first).
  void RefreshLeasedNamespaces();
  // "N added, N updated, N removed" of a refresh or reconcile; empty when nothing changed.
  static std::string ChangesText(const RefreshReport& r);
  std::atomic<uint64_t> next_leased_refresh_us_{0};
  // --- abandoned puts (store_abandoned_puts.cc) ---
  // The age after which a put never published is forgotten: the larger of the two graces.
  uint64_t AbandonedAfterUs() const;
  // ForgetAbandonedPuts once its period has passed (puts and Open call it); failures are logged.
  void MaybeForgetAbandonedPuts();
  Status ForgetAbandonedPuts(uint64_t now_us);  // wall clock
  // --- orphan GC (store_gc.cc) ---
  // After a background eviction pass: starts a GC pass if background GC is on, its interval
  // passed and none is under way — on the GC thread (or the injected executor), never on the
  // evictor's: a pass against S3 takes seconds (the listing lag alone), and eviction must keep
  // holding namespaces to their budgets meanwhile.
  void MaybeScheduleGc();
  // Whether this store may evict in `ns` now (StoreOptions::eviction_lease_ms). Pass only.
  bool HoldsEvictLease(const std::string& ns);
  // Whether the lease HoldsEvictLease took for `ns` still runs (true without one): no I/O.
  bool EvictLeaseRunning(const std::string& ns) const;
  // Where the collector keeps the bytes of its deletes until their re-check (GcOptions::hold_dir):
  // with a shared L2 (S3, an injected object store) and a data directory, else none (empty); and
  // whether an earlier process left some there.
  std::string GcHoldDir() const {
    return options_.object_store && !options_.data_dir.empty() ? options_.data_dir + "/gc-held"
                                                               : std::string();
  }
  bool HasGcLeftovers();
  Result<OrphanGcReport> GcPass();
  // GcOptions::keep: a put of this store awaiting publish, or a publish under way, names the blob.
  bool PendingBlob(const std::string& ns, const ContentHash& hash);
  struct EvictBudget {
    size_t heads_left = 0;
    size_t blocks_left = 0;
  };
  // Returns whether the namespace is still over its budget.
  bool EvictNamespace(const std::string& ns, uint32_t tick, uint64_t now_us, EvictBudget* work,
                      EvictionReport* report);
  struct TrimPlan;
  // What a trim may cut: while the tail is older than `cutoff` (the TTL), or while `excess`
  // bytes remain to free and the tail is no newer than `next_used`; at most blocks_max blocks.
  struct TrimBounds {
    uint32_t next_used;
    uint32_t cutoff;
    uint64_t excess;
    size_t blocks_max;
  };
  // Plans candidate c's trim from its tail in L0, stopping at a block in flight or borrowed
  // (G10; then plan.held). nullopt if the chain is gone.
  std::optional<TrimPlan> PlanTrim(const std::string& ns, uint32_t ns_id, const EvictCandidate& c,
                                   const TrimBounds& bounds, uint64_t now_us);
  enum class Trimmed : uint8_t { kDone, kConflict, kInFlight, kFailed };
  Trimmed TrimChain(const std::string& ns, uint32_t ns_id, const Fingerprint& fp,
                    const TrimPlan& plan, uint64_t now_us, EvictionReport* report);
  void ProbeUnreferenced(uint64_t now_us, EvictionReport* report);
  // Writes the use of chains (a slice of them per pass, all at close) to L1 "U" records.
  void PersistUse(bool all);
  // Referenced bytes of a namespace (REQUIRES: index_mu_ held, shared is enough).
  uint64_t ReferencedBytesLocked(std::string_view ns) const;
  // Lists the namespace's sidecars in L2 into the ledger.
  Status ListSidecars(const std::string& ns);

  // --- shared ---
  uint32_t NamespaceId(std::string_view ns);  // creates the id on first use
  std::optional<uint32_t> FindNamespaceId(std::string_view ns);
  static size_t StripeOf(const ChainId& chain_id) {
    return chain_id.Prefix64() % limits::kPublishStripes;
  }
  std::mutex& StripeFor(const ChainId& chain_id) { return publish_stripes_[StripeOf(chain_id)]; }
  // Counts every change of a chain in L0 (installed, replaced, trimmed or removed) per stripe,
  // under index_mu_ held exclusively. A refresh compares them, under a chain's stripe, with what
  // they were before it read the chain's head: if they moved by more than its own changes, the
  // head it read may be older than L0's (docs/layout.md, "refresh").
  void CountHeadChange(const ChainId& chain_id) {
    head_changes_[StripeOf(chain_id)].fetch_add(1, std::memory_order_relaxed);
  }
  // The chain's stripe, once no completion-based save of the chain is in flight (its head may
  // be written but not yet in L0: whoever reads or changes the head under the stripe must not
  // see it half done).
  std::unique_lock<std::mutex> LockChain(const ChainId& chain_id);
  void Log(LogLevel level, const std::string& message) const;
  // StoreOptions::buggify at `site` (a literal naming the point, e.g. "read.cache_miss"): whether
  // to take the branch the store must survive anyway. Always false in production.
  bool Buggify(const char* site) const { return options_.buggify && options_.buggify(site); }
  // Reads a whole object of at most `bytes_max` bytes: a larger one is Corruption, found before
  // it is allocated (a hostile or broken bucket cannot exhaust memory).
  Result<ObjectData> L2Read(const std::string& key, uint64_t bytes_max);

  StoreOptions options_;
  Clock* clock_;
  FileSystem* fs_;
  std::unique_ptr<Random> owned_random_;
  Random* random_;
  // Seeds the hashes of the tables every tenant shares (RAM cache, L0), one draw per process.
  const uint64_t hash_seed_;
  std::unique_ptr<Executor> owned_executor_;
  Executor* executor_;
  std::unique_ptr<FileLock> dir_lock_;
  std::unique_ptr<ObjectStore> owned_l2_;
  ObjectStore* l2_ = nullptr;
  std::unique_ptr<MetaStore> owned_l1_;
  std::string l1_dir_;  // where owned_l1_ lives ("" for an injected L1)
  MetaStore* l1_ = nullptr;

  // Failed background uploads are logged (an engine may take the publish's error for a miss and
  // say nothing), at most 5 lines a minute: an L2 outage fails every one.
  LogBudget upload_warnings_{5, 60'000'000};

  PayloadCache cache_;
  // The local disk plane in front of a remote L2; null when there is none. Set in Init, then
  // never changed (so read without a lock).
  std::unique_ptr<DiskCache> disk_cache_;
  std::mutex fill_mu_;
  std::unordered_set<CacheKey, CacheKeyHash> fills_queued_;  // under fill_mu_
  uint64_t fill_queued_bytes_ = 0;                          // under fill_mu_
  std::atomic<uint64_t> fills_not_queued_{0};
  // Copies of put payloads come from here (cache/buffer_pool.h); fed by the buffers the cache and
  // their borrowers drop. Idle memory at most 1/4 of the cache (a put copies a whole batch
  // before inserting it, so the pool must hold a batch), capped at 256 MiB.
  std::shared_ptr<BufferPool> payload_pool_ =
      BufferPool::Create(std::min<uint64_t>(options_.cache_bytes_max / 4, uint64_t{256} << 20));
  // Reads of the local L2 and the disk cache land in that pool's memory too: recycled or
  // huge-page chunks instead of fresh pages faulted in one by one.
  FileSystem::ReadBuffers PoolReadBuffers() const {
    return [pool = payload_pool_](size_t n) { return pool->Allocate(n); };
  }
  // Shares a large put's copy and hash with the calling thread (put_copy.h). Only a store that
  // owns its executor has one: with an injected executor (tests, the simulator) every put stays
  // on the calling thread, deterministic.
  std::unique_ptr<Executor> copy_helper_ =
      options_.executor ? nullptr : NewThreadPoolExecutor(1, "wmbt-copy");
  // Uploads wait while a large put copies (upload_gate.h). Parked payloads stay pinned in the
  // cache, so at most half of it is parked; past that, uploads run alongside the puts.
  UploadGate upload_gate_{executor_, options_.cache_bytes_max / 2, options_.upload_threads};

  mutable std::shared_mutex index_mu_;
  RadixIndex index_;  // GUARDED_BY(index_mu_)

  std::mutex ns_mu_;
  std::unordered_map<std::string, uint32_t> ns_ids_;  // GUARDED_BY(ns_mu_); never shrinks

  std::mutex pending_mu_;
  std::unordered_map<PendingKey, PendingBlock, PendingKeyHash> pending_;  // GUARDED_BY
  std::unordered_map<PendingKey, PendingRef, PendingKeyHash> pending_refs_;  // GUARDED_BY
  // How many pending blocks name each blob (orphan GC keeps those: GcOptions::keep).
  std::unordered_map<CacheKey, uint32_t, CacheKeyHash> pending_hashes_;  // GUARDED_BY(pending_mu_)
  std::unordered_map<PendingKey, uint32_t, PendingKeyHash> publishing_;  // GUARDED_BY(pending_mu_)
  // Blobs of the indexed prefixes publishes continue (PublishClaim::KeepBlobs).
  std::unordered_map<CacheKey, uint32_t, CacheKeyHash>
      publishing_blobs_;  // GUARDED_BY(pending_mu_)
  // Chains whose publish has not answered yet (PublishClaim::HoldChain): eviction skips them.
  std::unordered_map<ChainId, uint32_t, EngineKeyHash> publishing_chains_;  // GUARDED_BY
  // Blobs of pending puts replaced by a put of the same key with other bytes, no longer named by
  // any pending put: their upload slots (and the payload a failed or reused upload keeps) are
  // dropped by the next ForgetAbandonedPuts, as a forgotten put's are.
  std::vector<CacheKey> replaced_uploads_;  // GUARDED_BY(pending_mu_)
  // Abandoned puts (store_abandoned_puts.cc): puts hold it shared until their blocks are pending,
  // a pass exclusively. Blobs whose upload slots a pass could not drop yet (running, or retried
  // by a publisher) wait in forget_leftovers_ for the next pass.
  std::shared_mutex forget_mu_;
  std::vector<CacheKey> forget_leftovers_;            // GUARDED_BY(forget_mu_)
  std::atomic<uint64_t> next_abandoned_check_us_{0};  // wall clock; MaybeForgetAbandonedPuts

  std::mutex upload_mu_;
  std::unordered_map<CacheKey, std::shared_ptr<Upload>, CacheKeyHash> uploads_;  // GUARDED_BY

  std::mutex fork_hints_mu_;                                          // leaf
  std::unordered_map<ForkPoint, ChainId, ForkPointHash> fork_hints_;  // GUARDED_BY(fork_hints_mu_)

  std::array<std::mutex, limits::kPublishStripes> publish_stripes_;
  std::array<std::atomic<uint64_t>, limits::kPublishStripes> head_changes_{};  // CountHeadChange
  std::mutex async_mu_;
  std::condition_variable async_cv_;  // a chain left async_chains_, or async_pending_ fell
  std::unordered_set<ChainId, EngineKeyHash> async_chains_;  // GUARDED_BY(async_mu_)
  size_t async_pending_ = 0;  // GUARDED_BY(async_mu_): AsyncBegan - AsyncEnded
  std::mutex refresh_mu_;
  // Refresh calls that arrive while one runs share the next one (Refresh): a burst of them — a
  // tenant pipelining 128 over TCP — costs two listings, not one each behind refresh_mu_.
  std::mutex refresh_share_mu_;
  std::condition_variable refresh_share_cv_;
  uint64_t refreshes_started_ = 0;                     // GUARDED_BY(refresh_share_mu_)
  uint64_t refreshes_finished_ = 0;                    // GUARDED_BY(refresh_share_mu_)
  bool refresh_running_ = false;                       // GUARDED_BY(refresh_share_mu_)
  std::optional<Result<RefreshReport>> refresh_last_;  // GUARDED_BY(refresh_share_mu_)
  // Automatic refresh (store_auto_refresh.cc). last_refresh_us_: when the last completed refresh
  // began (monotonic clock, at least 1; 0 = none yet).
  std::atomic<uint64_t> last_refresh_us_{0};
  std::atomic<uint64_t> last_l2_probe_us_{0};  // L2Reachability's (monotonic clock)
  std::atomic<uint64_t> next_refresh_us_{0};
  std::atomic<bool> refresh_queued_{false};
  std::unique_ptr<Executor> refresh_thread_;  // only with an internal executor and clock
  LogBudget refresh_warnings_{5, 600'000'000};

  // Capacity.
  UsageLedger ledger_;  // in step with index_ (changed under index_mu_ held exclusively)
  std::atomic<uint32_t> use_tick_{1};
  std::atomic<uint64_t> last_publish_us_{0};
  bool evict_configured_ = false;  // any budget or TTL
  std::mutex evict_mu_;            // one pass at a time
  uint64_t use_sweeps_ = 0;        // GUARDED_BY(evict_mu_): PersistUse slices done
  uint32_t use_slice_tick_ = 0;    // GUARDED_BY(evict_mu_): tick of the last slice written
  std::vector<EvictCandidate> evict_candidates_;  // GUARDED_BY(evict_mu_): a scan's scratch
  std::map<std::string, ColdSet, std::less<>> cold_sets_;  // GUARDED_BY(evict_mu_): by namespace
  // GUARDED_BY(evict_mu_): by namespace, made at its first pass with something to evict.
  std::map<std::string, std::unique_ptr<EvictLease>, std::less<>> evict_leases_;
  std::string evict_lease_holder_;  // EvictLeaseHolder(data_dir, its seat), set at Init
  // ColdSet C2: L0 installs stamped older than cold_scan_tick_ (the newest tick a pass started a
  // cold set's check at), but for an eviction pass's own trims. cold_installs_ is written under
  // index_mu_ (exclusive), cold_scan_tick_ by passes (under evict_mu_).
  std::atomic<uint64_t> cold_installs_{0};
  std::atomic<uint32_t> cold_scan_tick_{0};
  // C2's generation: changes whenever a chain may have become colder than a cold set's members.
  uint64_t ColdGeneration() const;  // REQUIRES: index_mu_ not held
  // GUARDED_BY(evict_mu_): per slice
  std::array<uint32_t, RadixIndex::kChainSlices> use_swept_tick_{};
  std::atomic<bool> pass_queued_{false};
  std::atomic<bool> last_pass_stuck_{false};  // over a limit and could evict nothing
  std::atomic<uint64_t> next_pass_us_{0};  // monotonic clock
  std::atomic<bool> evict_stopped_{true};  // until Init has finished, and from the destructor
  std::atomic<bool> closing_{false};       // from the destructor: a running refresh stops early
  std::unique_ptr<Executor> evict_thread_;  // only with an internal executor and eviction set
  // The timer threads (evictor, refresher) wait here; the destructor wakes them.
  std::mutex evict_wait_mu_;
  std::condition_variable evict_wait_cv_;

  // Orphan GC (store_gc.cc): one collector for the store's life, so failed deletes are retried
  // (R5) and blobs without L2 modification times age across passes (R1).
  std::mutex gc_mu_;
  std::unique_ptr<gc::OrphanCollector> gc_;  // GUARDED_BY(gc_mu_); made at Init
  std::atomic<uint64_t> next_gc_us_{0};       // monotonic clock
  std::atomic<bool> gc_queued_{false};        // a background pass is queued or running
  std::unique_ptr<Executor> gc_thread_;       // only with an internal executor and clock, GC on
  static constexpr size_t kGcIoThreads = 8;
  std::unique_ptr<Executor> gc_io_;  // with gc_thread_: the pass's reads and deletes

  struct Counters {
    std::atomic<uint64_t> lookups{0}, lookup_keys{0}, lookup_hit_keys{0};
    std::atomic<uint64_t> puts{0}, put_bytes{0}, publishes{0}, publish_conflicts{0};
    std::atomic<uint64_t> gets{0}, get_hits{0}, get_misses{0}, get_bytes{0};
    std::atomic<uint64_t> heads_compacted{0};
    std::atomic<uint64_t> l2_puts{0}, l2_put_bytes{0}, l2_gets{0}, l2_get_bytes{0}, l2_errors{0};
    std::atomic<uint64_t> l2_blobs_compressed{0}, l2_compress_saved_bytes{0};
    std::atomic<uint64_t> corruptions{0};
    std::atomic<uint64_t> evict_passes{0}, evict_chains{0}, evict_heads_deleted{0};
    std::atomic<uint64_t> evict_blocks{0}, evict_bytes{0}, evict_freed_bytes{0};
    std::atomic<uint64_t> evict_skipped_in_flight{0}, evict_conflicts{0};
    std::atomic<uint64_t> gc_passes{0}, gc_blobs_deleted{0}, gc_bytes_freed{0};
    std::atomic<uint64_t> gc_delete_failures{0};
    std::atomic<uint64_t> put_blocks_helped{0};
    std::atomic<uint64_t> refreshes{0}, refresh_failures{0};
    std::atomic<uint64_t> pending_blocks_forgotten{0};
    std::atomic<uint64_t> l0_blocks_reassigned{0};
    std::atomic<uint64_t> gc_heads_read{0}, gc_heads_unchanged{0}, gc_pass_micros{0};
    std::atomic<uint64_t> gc_blobs_recovered{0}, evict_lease_waits{0};
  };
  mutable Counters counters_;
};

}  // namespace wombatkv
