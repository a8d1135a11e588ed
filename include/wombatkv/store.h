// Store: the WombatKV engine in one process. It composes the planes:
//   L0  RadixIndex (RAM)            published chains → block meta; lookups touch only this
//   RAM PayloadCache                recently used payloads, bounded, pinned while borrowed
//   L1  MetaStore (RocksDB)         chain heads and unpublished puts, written before returning
//   L2  ObjectStore (dir, S3, mem)  blobs, chain heads, sidecars: the source of truth
// See docs/architecture.md for the data flow of each operation and docs/layout.md for L2.
//
// Consistency (SPEC §5): a PutBlocks that returned OK is readable by content hash at once (G1);
// a PublishChain that returned OK is durable in L2 and visible to the next lookup (G1, G3); blocks
// whose chain was never published are invisible to lookups, also after a restart (G4).
//
// Thread-safety: every method may be called from any number of threads at once. A Borrow may be
// used and destroyed on any thread; it keeps its payloads alive (and unevictable) until destroyed.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "wombatkv/buffer.h"
#include "wombatkv/env.h"
#include "wombatkv/object_store.h"
#include "wombatkv/status.h"
#include "wombatkv/types.h"

namespace wombatkv {

class MetaStore;

enum class LogLevel : uint8_t { kDebug, kInfo, kWarn, kError };
// "debug", "info", "warn", "error": the tag log lines carry.
inline const char* LogLevelTag(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "?";
}
using LogSink = std::function<void(LogLevel, const std::string&)>;

// Memory for the store's copies of put payloads other than its own buffers. wombatkvd passes
// shared-memory arenas, one per namespace, that its shared-memory clients map read-only, so a
// get hands them a reference instead of a copy (docs/shm.md, "Zero-copy gets").
class PayloadAllocator {
 public:
  virtual ~PayloadAllocator() = default;
  // `bytes` uninitialised bytes for a payload of namespace `ns`, which the store fills before
  // anyone reads it, or null (the store then uses its own buffers). The memory must hold only
  // payloads of `ns` from now on. Called from any thread.
  virtual std::shared_ptr<Buffer> Allocate(std::string_view ns, size_t bytes) = 0;
};

struct StoreOptions {
  // Data directory: holds LOCK (one owner process), l1/ (RocksDB) and, when no object store is
  // given, l2/ (the local-directory L2). Created if missing. May be empty only when both
  // `object_store` and `meta_store` are injected.
  std::string data_dir;
  // Key prefix of every object in L2 (WMBT_KV_S3_PREFIX).
  std::string l2_prefix = "kv";
  // Bytes of payload the RAM cache keeps (pinned payloads may exceed it until released).
  uint64_t cache_bytes_max = 1ull << 30;
  // Largest total a GetBlocks may return: a call whose blocks add up to more fails with
  // ResourceExhausted before anything is read or pinned. 0 = no bound (an embedded caller asks
  // for its own memory). wombatkvd sets it to what one response frame carries, so that a remote
  // client cannot make the daemon read and pin a whole long chain only to refuse the answer.
  uint64_t get_bytes_max = 0;
  // Background upload workers when no executor is injected.
  size_t upload_threads = 16;
  // Local disk cache of payloads in front of a remote L2 (docs/capacity.md): at most this many
  // bytes of cache files under data_dir/cache/ (WMBT_KV_DISK_CACHE_BYTES). 0 = none. Ignored
  // when L2 is a local directory (the store's own, or an injected one describing itself as
  // "file://"): the cache would be a second copy of L2 on the same disks. Needs a data_dir.
  uint64_t disk_cache_bytes_max = 0;
  // Blocks of up to this size (and other objects of the local-directory L2 up to this size plus
  // the 48-byte blob envelope header) are packed into its journal instead of getting a file each
  // (WMBT_KV_L2_PACKED_BYTES; docs/layout.md, "Packed objects"). 0 = none; at most 1 MiB. Unused
  // with an injected or S3 L2.
  uint64_t l2_packed_object_bytes_max = 1u << 20;
  // Blobs are written zstd-compressed at this level (1..9) when that saves at least 1/16 of the
  // block, else raw; 0 = always raw (WMBT_KV_BLOCK_COMPRESS; docs/layout.md §2). Compressing
  // runs in the upload, so it delays the publish awaiting it, never the put. Reads decode either
  // form, whatever this is set to. Namespace budgets count blocks uncompressed.
  int block_compress_level = 0;

  // Capacity (docs/capacity.md). Per-namespace values: key = namespace, "" = every namespace not
  // named; a namespace with no entry (and no "") or 0 has no limit. See NamespaceSetting().
  // L2 bytes a namespace's heads may reference (blobs + heads + sidecars); over it, the least
  // recently used chain tails are evicted (WMBT_KV_NAMESPACE_MAX_BYTES).
  std::map<std::string, uint64_t> namespace_bytes_max;
  // Chain tails unused for longer than this many seconds are evicted (WMBT_KV_NAMESPACE_TTL).
  std::map<std::string, uint64_t> namespace_ttl_seconds;
  // A put not yet published keeps the chain it extends from eviction for this long after the put
  // (SPEC G10; WMBT_KV_PUBLISH_GRACE). Older unpublished puts are taken as abandoned.
  uint64_t publish_grace_seconds = 600;
  // The background evictor runs a pass at most this often (and at once when a publish pushes a
  // namespace over its budget). With an injected executor or clock there is no timer: passes are
  // started by operations (puts, publishes, gets, sidecar puts). 0 = no background passes at
  // all, only Evict().
  uint64_t eviction_interval_ms = 1000;
  // Work bound of one pass: chain heads rewritten or deleted (one L2 write each), and blocks.
  size_t eviction_heads_per_pass = 64;
  size_t eviction_blocks_per_pass = 65536;
  // With a shared L2 (object_store set): only the holder of a namespace's eviction lease, an
  // object in L2, evicts in it, so that hosts sharing a budget remove its excess once, not once
  // each (docs/capacity.md, "Several hosts with one budget"). Its duration: a holder that stops
  // keeps the others from evicting for at most this long. 0 = no lease (every host evicts what
  // it sees over).
  uint64_t eviction_lease_ms = 30'000;
  // Orphan GC in the background work (docs/layout.md §7, rules R1–R5): eviction leaves the blobs
  // it stops referencing in L2; only orphan GC deletes them and so frees their bytes. When set,
  // a store whose eviction is configured (a budget or TTL) runs a GC pass after an eviction pass,
  // at most every gc_interval_ms, on the same executor and clock. Off: only CollectOrphans() and
  // `wombatkv gc` delete orphans.
  bool background_gc = true;
  // R1: an unreferenced blob is deleted only once older than this (WMBT_KV_GC_GRACE). Also what
  // keeps blobs of another host's in-flight publish: keep it above the longest publish.
  uint64_t gc_grace_us = 3600ull * 1000000;
  // A GC pass lists every blob and head of L2, so it runs less often than eviction passes.
  uint64_t gc_interval_ms = 60000;
  // The longest an L2 listing may lag behind writes (0: listings are current, as on AWS S3 and
  // the local directory). Orphan GC waits this long before its re-check (gc::GcOptions).
  uint64_t l2_list_lag_us = 0;
  // Deletes one GC pass attempts at most (0 = unbounded); the rest wait for the next pass.
  size_t gc_deletes_per_pass = 4096;
  // Refresh() in the background this often (WMBT_KV_REFRESH_INTERVAL), so that what other hosts
  // publish to the same L2 becomes visible here without a call (G11: within about this interval
  // plus one refresh's duration; StoreStats::refresh_staleness_us measures it). With an injected
  // executor or clock there is no timer: refreshes are started by puts and gets. 0 = only at
  // open and on Refresh().
  uint64_t refresh_interval_ms = 0;

  // Injected planes and environment (not owned; must outlive the Store). Null = the default:
  // FsObjectStore under data_dir/l2, RocksDB under data_dir/l1, the real clock, the POSIX file
  // system, a system-seeded random source, an internal thread pool.
  ObjectStore* object_store = nullptr;
  MetaStore* meta_store = nullptr;
  Clock* clock = nullptr;
  Random* random = nullptr;
  FileSystem* fs = nullptr;
  Executor* executor = nullptr;
  // Where copies of put payloads go first (null = the store's own buffers). Not owned.
  PayloadAllocator* payload_allocator = nullptr;
  // Where log lines go; null = warnings and errors to stderr. Called from any store thread (the
  // background uploads, eviction, refresh), several at once: it must be thread-safe.
  LogSink log;
  // Testing only (docs/testing.md, "Buggify points"): asked at a few decisions the store must
  // survive anyway — a retry, a re-read, a cache miss, a pass run early; true takes the hostile
  // branch. The simulator answers from its seeded randomness. Null (production) = never, at the
  // cost of one test of an empty function per point. May be called from any store thread.
  std::function<bool(const char* site)> buggify;
};

// One block of a PutBlocks call. `parent` is the zero key for a chain's root.
struct BlockPut {
  BlockKey key;
  BlockKey parent;
  // Up to limits::kBlockBytesMax. Copied before PutBlocks returns — unless `owned` is set.
  ByteView payload;
  // Zero-copy put: bytes the caller hands over (e.g. filled in a Buffer::Allocate'd buffer).
  // When set, `payload` is ignored, the store keeps a reference instead of a copy, and the caller
  // must never write these bytes again — and should drop its own reference: while it holds one,
  // the cached block counts as borrowed (never evicted from RAM, its chain never trimmed in L2).
  BufferSlice owned;

  ByteView bytes() const { return owned.owner ? owned.view() : payload; }
};

// The value of a per-namespace setting (StoreOptions::namespace_*): the namespace's own entry,
// else the "" entry, else 0 (none).
inline uint64_t NamespaceSetting(const std::map<std::string, uint64_t>& values,
                                 std::string_view ns) {
  auto it = values.find(std::string(ns));
  if (it == values.end()) it = values.find("");
  return it == values.end() ? 0 : it->second;
}

// Payloads lent by GetBlocks: valid (and pinned in the cache) until the Borrow is destroyed.
class Borrow {
 public:
  Borrow() = default;
  explicit Borrow(std::vector<BufferSlice> slices) : slices_(std::move(slices)) {}
  size_t size() const { return slices_.size(); }
  ByteView payload(size_t i) const { return slices_[i].view(); }
  const std::vector<BufferSlice>& slices() const { return slices_; }
  uint64_t total_bytes() const {
    uint64_t n = 0;
    for (const auto& s : slices_) n += s.size;
    return n;
  }

 private:
  std::vector<BufferSlice> slices_;
};

// The state of a published chain.
struct ChainState {
  std::string ns;
  Fingerprint fp;
  ChainId chain_id;
  BlockKey tip;
  uint64_t version = 0;
  uint32_t length = 0;  // blocks
};

struct ChainBlock {
  BlockKey key;
  ContentHash hash;
  uint32_t length = 0;
};

struct RefreshReport {
  size_t chains_added = 0;
  size_t chains_updated = 0;
  size_t chains_removed = 0;
  size_t heads_listed = 0;
};

struct StoreStats {
  // L0
  uint64_t l0_blocks = 0;
  uint64_t l0_chains = 0;
  uint64_t l0_memory_bytes = 0;
  uint64_t lookups = 0;
  uint64_t lookup_keys = 0;
  uint64_t lookup_hit_keys = 0;
  // RAM cache
  uint64_t cache_bytes = 0;
  uint64_t cache_entries = 0;
  uint64_t cache_pinned_bytes = 0;
  uint64_t cache_hits = 0;
  uint64_t cache_misses = 0;
  uint64_t cache_evictions = 0;
  // Operations
  uint64_t puts = 0;
  uint64_t put_bytes = 0;
  uint64_t publishes = 0;
  uint64_t publish_conflicts = 0;
  uint64_t gets = 0;
  uint64_t get_hits = 0;
  uint64_t get_misses = 0;
  uint64_t get_bytes = 0;
  uint64_t pending_blocks = 0;  // put but not yet published
  uint64_t heads_compacted = 0;
  // L2
  uint64_t l2_puts = 0;
  uint64_t l2_put_bytes = 0;
  uint64_t l2_gets = 0;
  uint64_t l2_get_bytes = 0;
  uint64_t l2_errors = 0;
  uint64_t corruptions_detected = 0;
  // Capacity (docs/capacity.md; append new counters at the end: the wire carries them in order)
  uint64_t l2_referenced_bytes = 0;    // blobs and heads the heads name + known sidecars, all ns
  uint64_t l2_unreferenced_bytes = 0;  // blobs no head references any more, not yet seen deleted
  uint64_t evict_passes = 0;
  uint64_t evict_chains = 0;           // heads rewritten shorter or deleted by eviction
  uint64_t evict_heads_deleted = 0;
  uint64_t evict_blocks = 0;           // head entries removed
  uint64_t evict_bytes = 0;            // bytes eviction stopped referencing (blobs, heads, ...)
  uint64_t evict_freed_bytes = 0;      // bytes actually gone from L2 (heads, sidecars, GC'd blobs)
  uint64_t evict_skipped_in_flight = 0;  // trims stopped by an unpublished put or a borrow (G10)
  uint64_t evict_conflicts = 0;        // a head changed under eviction; re-read and re-planned
  // Orphan GC run by this store (background or CollectOrphans; docs/layout.md §7)
  uint64_t gc_passes = 0;
  uint64_t gc_blobs_deleted = 0;       // deleted and not put back (R3)
  uint64_t gc_bytes_freed = 0;         // object bytes of those: only deleted bytes count (R5)
  uint64_t gc_delete_failures = 0;     // left in L2, retried at the next pass (R5)
  // Local disk cache (docs/capacity.md; all 0 without one)
  uint64_t disk_cache_bytes = 0;         // sizes of its files (those being written included)
  uint64_t disk_cache_files = 0;
  uint64_t disk_cache_budget_bytes = 0;  // StoreOptions::disk_cache_bytes_max when enabled
  uint64_t disk_cache_hits = 0;          // payloads served from a verified cache file
  uint64_t disk_cache_misses = 0;        // RAM misses the disk cache did not serve (→ L2)
  uint64_t disk_cache_evictions = 0;     // files deleted to stay within the budget
  uint64_t disk_cache_fills = 0;         // files written (after an L2 read or an upload)
  uint64_t disk_cache_dropped = 0;       // files that failed their check: deleted, never served
  // The L2 backend's own requests (ObjectStore::Counters; all 0 for a local directory)
  uint64_t l2_attempts = 0;   // requests sent to S3, retries included
  uint64_t l2_retries = 0;    // attempts after a transient failure
  uint64_t l2_throttled = 0;  // 503 SlowDown / 429 answers
  // Disk cache fills not made: no room within the eviction bound, larger than the budget, or
  // too many fills already waiting to be written (their payloads are held in RAM meanwhile)
  uint64_t disk_cache_fills_skipped = 0;
  // The put path's use of the second CPU (docs/architecture.md, "Put")
  uint64_t put_blocks_helped = 0;      // blocks a large put's copy helper thread copied and hashed
  uint64_t uploads_parked = 0;         // uploads that waited for a large put to stop copying
  uint64_t uploads_parked_bytes = 0;   // payload bytes of the uploads waiting right now
  // A local-directory L2's journal (ObjectStoreCounters; all 0 for S3): its group commits, and
  // the zero-fills of journal space that delay the round needing them (docs/layout.md)
  uint64_t l2_journal_syncs = 0;
  uint64_t l2_journal_records_synced = 0;  // per sync: how many records a commit carried
  uint64_t l2_journal_sync_micros = 0;
  uint64_t l2_journal_preallocations = 0;
  uint64_t l2_journal_preallocate_micros = 0;
  // The RAM cache's byte budget (StoreOptions::cache_bytes_max), beside cache_bytes above
  uint64_t cache_budget_bytes = 0;
  // Blobs written zstd-compressed (WMBT_KV_BLOCK_COMPRESS), and the bytes that saved against
  // writing them raw (l2_put_bytes counts what was written)
  uint64_t l2_blobs_compressed = 0;
  uint64_t l2_compress_saved_bytes = 0;
  // Refresh (G11): completed (at open, Refresh(), automatic), failed, and *now* how long ago the
  // last completed one began (what other hosts published before then is visible here)
  uint64_t refreshes = 0;
  uint64_t refresh_failures = 0;
  uint64_t refresh_staleness_us = 0;
  // Blocks put but never published that were forgotten once older than both graces (publish and
  // GC; docs/capacity.md, "Abandoned puts")
  uint64_t pending_blocks_forgotten = 0;
  // L0 blocks whose bytes a departed chain had given and that took the newest remaining chain's,
  // other bytes (RadixIndex I8: a key published with different bytes by several chains)
  uint64_t l0_blocks_reassigned = 0;
  // Orphan GC passes: chain heads read, heads not read because listed with the ETag an earlier
  // pass read (docs/layout.md §7), and the time spent in passes (µs)
  uint64_t gc_heads_read = 0;
  uint64_t gc_heads_unchanged = 0;
  uint64_t gc_pass_micros = 0;
  // Blobs orphan GC re-checked from the hold files of an earlier process that ended mid-pass
  // (docs/layout.md §7), and eviction passes that left a namespace to another host holding its
  // eviction lease (docs/capacity.md)
  uint64_t gc_blobs_recovered = 0;
  uint64_t evict_lease_waits = 0;
  // 1 when L2 does not honour conditional writes (an S3 server found so at open: they are
  // emulated, last writer wins, and compare-and-swap publishes are refused), else 0 (docs/s3.md)
  uint64_t l2_conditional_writes_emulated = 0;
};

// L2 bytes one fingerprint's heads reference (part of NamespaceUsage).
struct FingerprintUsage {
  Fingerprint fp;
  uint64_t chains = 0, head_bytes = 0;
  uint64_t blobs = 0, blob_bytes = 0;  // distinct within this fingerprint
  uint64_t sidecars = 0, sidecar_bytes = 0;
  uint64_t stray_sidecars = 0, stray_sidecar_bytes = 0;
};

// What a namespace holds in L2 as this store knows it (object sizes, docs/capacity.md). Exact
// for what this process indexes; another host's heads count once Refresh has loaded them.
struct NamespaceUsage {
  std::string ns;
  uint64_t chains = 0, head_bytes = 0;
  uint64_t blobs = 0, blob_bytes = 0;  // distinct blobs the heads name (48 + payload each, as if
                                       // uncompressed: docs/layout.md §2)
  uint64_t sidecars = 0, sidecar_bytes = 0;  // sidecars whose tip key is indexed
  // Sidecars whose tip is not indexed (never published, or its chain went): not evictable, not
  // in the budget.
  uint64_t stray_sidecars = 0, stray_sidecar_bytes = 0;
  // Blobs this store stopped referencing that are not yet seen deleted: orphans awaiting orphan
  // GC. Still in L2, not in the budget (docs/capacity.md states the bound).
  uint64_t unreferenced_blobs = 0, unreferenced_bytes = 0;
  uint64_t budget_bytes = 0;  // 0 = unlimited
  uint64_t ttl_seconds = 0;   // 0 = none
  // This namespace's files in the local disk cache (a copy of some of its blobs; not in the
  // budget above, which counts L2). The cache's own budget is StoreStats::disk_cache_budget_bytes.
  uint64_t disk_cache_files = 0, disk_cache_bytes = 0;
  std::vector<FingerprintUsage> fingerprints;  // by fingerprint, when asked for

  // What the budget limits.
  uint64_t referenced_bytes() const { return blob_bytes + head_bytes + sidecar_bytes; }
};

// What one eviction pass did.
struct EvictionReport {
  uint64_t chains = 0;         // heads rewritten shorter or deleted
  uint64_t heads_deleted = 0;
  uint64_t blocks = 0;         // head entries removed
  uint64_t bytes = 0;          // bytes no longer referenced (what the budget counts as gone)
  uint64_t freed_bytes = 0;    // bytes deleted from L2 in this pass
  uint64_t skipped_in_flight = 0;
  uint64_t conflicts = 0;
  uint64_t orphans_gone = 0;   // unreferenced blobs found deleted (by orphan GC) in this pass
  bool work_left = false;      // stopped at the pass's work bound with more to do
};

// What one orphan GC pass of a store did (docs/layout.md §7).
struct OrphanGcReport {
  uint64_t orphans = 0, orphan_bytes = 0;    // unreferenced blobs listed
  uint64_t expired = 0;                      // of those, older than the grace period
  uint64_t deleted = 0, freed_bytes = 0;     // deleted and not put back
  uint64_t restored = 0;                     // deleted, then put back for a new head (R3)
  uint64_t delete_failures = 0;              // retried at the next pass (R5)
  uint64_t kept_in_flight = 0;               // expired, but a put of this store awaits publish
  uint64_t namespaces_skipped = 0;           // a head could not be read (R2)
  uint64_t retry_backlog = 0;                // failed deletes waiting for the next pass
};

class Store {
 public:
  // Opens the store: takes ownership of the data directory (FailedPrecondition naming the owner
  // if another process has it), loads L0 from L1, then reconciles with L2 (L2 wins). A lost or
  // corrupt L1 is rebuilt from L2 (logged).
  static Result<std::unique_ptr<Store>> Open(const StoreOptions& options);

  virtual ~Store() = default;

  // Hashes and stores payloads: readable by content hash when this returns (G1); uploaded to L2
  // in the background; invisible to lookups until a chain containing them is published.
  // Idempotent (G5). Not atomic across blocks. Returns the content hashes in order.
  // InvalidArgument: bad namespace, empty batch, oversized payload, key == parent.
  virtual Result<std::vector<ContentHash>> PutBlocks(std::string_view ns, const Fingerprint& fp,
                                                     std::span<const BlockPut> blocks) = 0;

  // Publishes chain `chain_id` with tip `tip`: the chain is the blocks from `tip` back to a root
  // through parent links (blocks put in this process, or already indexed). Waits until every blob
  // is durable in L2, then writes the head (one object), L1 and L0. Returns the new version.
  // Without `expected_version` the last writer wins. With it (0 = "must not exist yet") it is a
  // compare-and-swap: Conflict if the current version differs, and `*current` (if non-null) gets
  // the chain's current state so the caller can rebase (G6).
  // FailedPrecondition: a block of the chain was never put, or `expected_version` was given and
  // L2 cannot make it atomic (ObjectStore::HonoursConditionalWrites). Unavailable: L2 failed
  // (retryable).
  virtual Result<uint64_t> PublishChain(std::string_view ns, const Fingerprint& fp,
                                        const ChainId& chain_id, const BlockKey& tip,
                                        std::optional<uint64_t> expected_version = std::nullopt,
                                        ChainState* current = nullptr) = 0;

  // PutBlocks(blocks) then PublishChain(chain id = tip = the last block's key, last writer wins),
  // as one call: what an engine's save is. A store may do less work than the pair because the
  // publish is known to follow (StoreImpl keeps no L1 record for a publish that may never come
  // and runs the last upload in the caller's thread). Returns the new version.
  virtual Result<uint64_t> SaveChain(std::string_view ns, const Fingerprint& fp,
                                     std::span<const BlockPut> blocks) {
    if (blocks.empty()) return Status::InvalidArgument("SaveChain: no blocks");
    WMBT_RETURN_IF_ERROR(PutBlocks(ns, fp, blocks).status());
    const BlockKey tip = blocks.back().key;
    return PublishChain(ns, fp, tip, tip);
  }

  // SaveChain with a completion: calls `done` exactly once with what SaveChain would return —
  // before returning, or later on another thread. The payloads are read only during the call.
  // For a server: a thread need not wait out the save's sync (StoreImpl over a journaled local
  // L2 completes it from the thread that syncs for everyone; docs/daemon.md, "Completions").
  // `done` must be short, must not call this store's durable operations, and must not destroy
  // the store (its destructor waits for the completions in flight).
  using SaveDone = std::function<void(Result<uint64_t>)>;
  virtual void SaveChainAsync(std::string_view ns, const Fingerprint& fp,
                              std::span<const BlockPut> blocks, SaveDone done) {
    done(SaveChain(ns, fp, blocks));
  }

  // PublishChain with a completion, as SaveChainAsync: `done` gets what PublishChain would
  // return and, after a compare-and-swap Conflict, the chain's current state (else empty).
  using PublishDone = std::function<void(Result<uint64_t>, const ChainState& current)>;
  virtual void PublishChainAsync(std::string_view ns, const Fingerprint& fp,
                                 const ChainId& chain_id, const BlockKey& tip,
                                 std::optional<uint64_t> expected_version, PublishDone done) {
    ChainState current;
    Result<uint64_t> v = PublishChain(ns, fp, chain_id, tip, expected_version, &current);
    done(std::move(v), current);
  }

  // Number of leading keys present, as a path from a root, in published chains of (ns, fp).
  // Touches only L0: no I/O.
  virtual Result<size_t> LookupPrefix(std::string_view ns, const Fingerprint& fp,
                                      std::span<const BlockKey> keys) = 0;

  // Payloads of all `keys`, all or nothing: NotFound if any key is missing (a miss). `keys` are
  // consecutive blocks of a published chain, root to tip, starting at any of its blocks (the
  // root, or one in the middle: a get of one block asks for that block alone); a key that does
  // not follow the one before it is a miss. Bytes read from L2 are checked against their content
  // hash: Corruption, never wrong bytes (G9).
  virtual Result<Borrow> GetBlocks(std::string_view ns, const Fingerprint& fp,
                                   std::span<const BlockKey> keys) = 0;

  // GetBlocks with block i's bytes copied into dsts[i] rather than lent: nothing stays held, so it
  // suits memory the caller owns (wmbt_kv_get_kv_blocks_into). OK: every block copied, lens[i]
  // its length. A block larger than its buffer: InvalidArgument before anything is copied, with
  // every lens[i] set. A miss (NotFound) writes nothing; after another error lens are as they
  // were and the buffers may hold part of the answer (RemoteStore over TCP receives straight
  // into them). REQUIRES: dsts and lens as long as keys; the buffers do not overlap.
  virtual Status GetBlocksInto(std::string_view ns, const Fingerprint& fp,
                               std::span<const BlockKey> keys,
                               std::span<const std::span<uint8_t>> dsts, std::span<size_t> lens) {
    auto blocks = GetBlocks(ns, fp, keys);
    if (!blocks.ok()) return blocks.status();
    return CopyBlocksInto(blocks->slices(), dsts, lens);
  }

  // What GetBlocksInto does with the payloads it got (a payload already at dsts[i], received
  // there, is not copied again).
  static Status CopyBlocksInto(std::span<const BufferSlice> payloads,
                               std::span<const std::span<uint8_t>> dsts, std::span<size_t> lens) {
    if (payloads.size() != dsts.size() || lens.size() != dsts.size()) {
      return Status::Internal("a get into buffers got " + std::to_string(payloads.size()) +
                              " payloads for " + std::to_string(dsts.size()) + " buffers");
    }
    for (size_t i = 0; i < payloads.size(); ++i) {
      if (payloads[i].size <= dsts[i].size()) continue;
      for (size_t j = 0; j < payloads.size(); ++j) lens[j] = payloads[j].size;
      return Status::InvalidArgument(
          "buffer " + std::to_string(i) + " has room for " + std::to_string(dsts[i].size()) +
          " bytes, block " + std::to_string(i) + " has " + std::to_string(payloads[i].size));
    }
    for (size_t i = 0; i < payloads.size(); ++i) {
      if (payloads[i].size > 0 && payloads[i].data != dsts[i].data()) {
        std::memcpy(dsts[i].data(), payloads[i].data, payloads[i].size);
      }
      lens[i] = payloads[i].size;
    }
    return Status::Ok();
  }

  // A payload by content hash, published or not (orphans too). NotFound if absent.
  virtual Result<BufferSlice> GetByContentHash(std::string_view ns, const ContentHash& hash) = 0;

  // Non-blocking forms of GetBlocks and GetByContentHash, for callers that must never wait for
  // I/O or a lock held across I/O (the daemon's event loop). When the answer is at hand — every
  // payload in the RAM cache, or a miss that L0 alone proves — they return exactly what the
  // blocking call would (counted once, the same way); nullopt when it needs L2: call the
  // blocking form then (nothing was counted). They start no background work (no eviction pass).
  // The defaults always say nullopt, so a Store that does not implement them stays correct.
  virtual std::optional<Result<Borrow>> GetBlocksIfCached(std::string_view /*ns*/,
                                                          const Fingerprint& /*fp*/,
                                                          std::span<const BlockKey> /*keys*/) {
    return std::nullopt;
  }
  virtual std::optional<Result<BufferSlice>> GetByContentHashIfCached(
      std::string_view /*ns*/, const ContentHash& /*hash*/) {
    return std::nullopt;
  }

  // Sidecar bytes keyed by chain tip. Put is durable in L2 on return; independent of the head:
  // a chain may be visible without its sidecar (G7), then GetSidecar is NotFound.
  virtual Status PutSidecar(std::string_view ns, const Fingerprint& fp, const BlockKey& tip,
                            ByteView bytes) = 0;
  virtual Result<BufferSlice> GetSidecar(std::string_view ns, const Fingerprint& fp,
                                         const BlockKey& tip) = 0;

  // Loads what other processes or hosts published to L2 since the last look (new, changed and
  // removed heads), so they become visible here (G11): everything published before the call
  // began. Calls made while one runs share the next listing (and its report), so a burst of them
  // costs two listings.
  virtual Result<RefreshReport> Refresh() = 0;

  // Published chains, optionally of one namespace (empty = all), sorted by (ns, fp, chain id).
  // InvalidArgument for a malformed namespace; through wombatkvd also its refusals
  // (PermissionDenied for a namespace the session's token does not grant) and Unavailable.
  virtual Result<std::vector<ChainState>> ListChains(std::string_view ns) = 0;
  // Blocks root→tip of a published chain; NotFound if absent.
  virtual Result<std::vector<ChainBlock>> GetChain(std::string_view ns, const Fingerprint& fp,
                                                   const ChainId& chain_id) = 0;

  virtual StoreStats Stats() = 0;
  // Stats, or why they could not be had: a client of wombatkvd that cannot reach it gets
  // Unavailable (its Stats() logs that and reports zeros). The embedded store always has them.
  virtual Result<StoreStats> TryStats() { return Stats(); }

  // OK while the store can take writes; otherwise the failure that stops them until the store is
  // opened again — a local-directory L2 whose journal could not write or sync (a full disk, an
  // I/O error) or whose checkpoint failed; reads go on. A daemon answers /healthz with it. The
  // client of a daemon (RemoteStore) always says OK: ask the daemon's /healthz.
  virtual Status Health() { return Status::Ok(); }
  // OK unless L2 is a remote store whose requests have all failed lately (down, unreachable,
  // credentials or bucket refused): then Unavailable, for how long and why. While it fails, each
  // call (at most every 5 s) also sends L2 one small request in the background, so that the
  // answer clears once L2 is back even when nothing else asks it. A daemon answers /readyz with
  // it. RemoteStore: OK.
  virtual Status L2Reachability() { return Status::Ok(); }

  // L2 usage per namespace (`ns` empty = every namespace this store knows), sorted by name; with
  // `by_fingerprint`, each with a breakdown per fingerprint (costs a walk of the namespace's
  // chains). No I/O. For `wombatkv du` and monitoring.
  virtual std::vector<NamespaceUsage> Usage(std::string_view ns, bool by_fingerprint) = 0;

  // Runs one eviction pass on the calling thread: namespace budgets, TTLs, and probes of
  // unreferenced blobs (docs/capacity.md). The background evictor runs the same pass; at most one
  // runs at a time. Never removes a borrowed block or the chain a pending put extends (G10);
  // trims chains from the tip only. Errors of single trims are logged and counted, not returned.
  virtual Result<EvictionReport> Evict() = 0;

  // Runs one orphan GC pass on the calling thread (docs/layout.md §7): deletes, up to
  // StoreOptions::gc_deletes_per_pass, the blobs of L2 that no head references and that are older
  // than the grace period, except those a put of this store awaiting its publish names. Their
  // bytes leave the usage figures' unreferenced count. At most one pass runs at a time. Stores
  // that cannot run it (a remote store) return FailedPrecondition.
  virtual Result<OrphanGcReport> CollectOrphans() {
    return Status::FailedPrecondition("this store does not run orphan GC: run `wombatkv gc`");
  }

  // Where L2 lives ("file:///...", "s3://..."), for messages.
  virtual std::string DescribeL2() const = 0;
};

}  // namespace wombatkv
