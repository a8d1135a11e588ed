// UsageLedger: the exact L2 bytes one store's chain heads reference, per namespace (heads and
// sidecars also per fingerprint). The store keeps it in step with L0: every chain installed in or
// dropped from L0 passes through ChainSet / ChainRemoved. docs/capacity.md explains the numbers.
//
// What is counted (object sizes as they are in L2, docs/layout.md):
//   blobs         distinct content hashes named by at least one head entry of the namespace, each
//                 48 (envelope) + the payload length the head gives — a block learned from L2
//                 counts its real size. Referenced by head *entries*, as the heads name them (the
//                 ledger keeps each chain's hashes), not by L0 nodes: L0 keeps one hash per node,
//                 the newest, while two heads naming different bytes under one key keep both.
//   heads         every chain head: layout::ChainHeadBytes(len(ns), entries).
//   sidecars      sidecar objects this store wrote or listed (their object size). Which of them
//                 are referenced (their tip key is indexed) is decided by the caller at query time.
//   unreferenced  blobs whose last referencing entry went away in this process (eviction, a
//                 replaced or removed head) and that are not known to be deleted yet: orphans
//                 waiting for orphan GC. They are bytes still in L2, never counted as freed.
//
// Invariants:
//   U1. blob_bytes(ns) == Σ object size over hashes with refs > 0; blobs(ns) is their number.
//   U2. A hash is never referenced (refs > 0) and unreferenced at once: a new reference takes it
//       off the unreferenced list (reported in Changes::rereferenced).
//   U3. head_bytes(ns, fp) == Σ over the chains of (ns, fp) of their head size; chains(ns, fp)
//       is their number.
//   U4. refs(hash) == the number of entries naming it over all chains of the namespace.
//
// Thread-safety: one internal mutex (a leaf lock); every method may be called concurrently. The
// store calls ChainSet/ChainRemoved while it holds L0's exclusive lock, so readers holding L0's
// shared lock see both agree.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "index/radix_index.h"
#include "store/engine_key_hash.h"
#include "wombatkv/types.h"

namespace wombatkv {

class UsageLedger {
 public:
  struct UnrefBlob {
    ContentHash hash;
    uint64_t bytes = 0;   // object size in L2
    uint64_t since_us = 0;
  };
  // What a change did to the unreferenced list, for the store's L1 records (G records).
  struct Changes {
    std::vector<UnrefBlob> unreferenced;      // newly unreferenced
    std::vector<ContentHash> rereferenced;    // were unreferenced, referenced again
  };

  // Chain `chain_id` of (ns, fp) now has the head with `entries` (new, or replacing its previous
  // head: blobs both name are never unreferenced in between), put in L0 with `order` (its
  // publish time: RadixIndex I8).
  void ChainSet(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id,
                std::span<const ChainEntry> entries, uint64_t order, uint64_t now_us,
                Changes* changes);
  // The chain's own entry at `position` (as its head names it) and its order; nullopt if the
  // ledger has no such chain or position. What RadixIndex::ReassignStaleMeta asks.
  std::optional<RadixIndex::OwnEntry> OwnEntry(std::string_view ns, const Fingerprint& fp,
                                               const ChainId& chain_id, uint32_t position) const;
  // The order the chain was set with; nullopt if the ledger has no such chain.
  std::optional<uint64_t> ChainOrder(std::string_view ns, const Fingerprint& fp,
                                     const ChainId& chain_id) const;
  // The chain's head is gone. False if the ledger did not have it.
  bool ChainRemoved(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id,
                    uint64_t now_us, Changes* changes);

  // Sidecars: one written (or overwritten), one deleted.
  void SidecarPut(std::string_view ns, const Fingerprint& fp, const BlockKey& tip, uint64_t bytes);
  void SidecarDeleted(std::string_view ns, const Fingerprint& fp, const BlockKey& tip);
  // Object size of a known sidecar; 0 if unknown.
  uint64_t SidecarBytes(std::string_view ns, const Fingerprint& fp, const BlockKey& tip) const;
  // A cheap upper bound of a namespace's referenced bytes (every known sidecar counted): to decide
  // whether an eviction pass is due, not what it evicts.
  uint64_t QuickBytes(std::string_view ns) const;
  // A full listing of the namespace's sidecars: call BeginSidecarListing before listing, then
  // ReplaceSidecars with its token and what was listed. Sidecars known before the listing began
  // and not listed are dropped (L2 wins); those put meanwhile are kept.
  struct ListedSidecar {
    Fingerprint fp;
    BlockKey tip;
    uint64_t bytes = 0;
  };
  uint64_t BeginSidecarListing();
  void ReplaceSidecars(std::string_view ns, uint64_t token, std::span<const ListedSidecar> listed);

  // Unreferenced blobs loaded from L1 at open (skipped if the hash is referenced: returned false).
  bool UnrefLoaded(std::string_view ns, const UnrefBlob& blob);
  // Up to `max` unreferenced blobs due for an existence probe: each is due `interval_us` after it
  // was unreferenced and after each probe. Looks at no more than 4·max entries per call.
  std::vector<std::pair<std::string, UnrefBlob>> DueForProbe(uint64_t now_us, uint64_t interval_us,
                                                             size_t max);
  // Entries in the probe round robin, stale ones included (bounded: tests).
  size_t ProbeQueueSize() const {
    std::lock_guard<std::mutex> g(mu_);
    return probe_queue_.size();
  }
  // The blob is gone from L2 (orphan GC deleted it): returns the bytes freed (0 if it was no
  // longer on the list).
  uint64_t UnrefDeleted(std::string_view ns, const ContentHash& hash);
  bool IsReferenced(std::string_view ns, const ContentHash& hash) const;
  // Object size of a referenced blob, and whether only `refs` entries reference it (so dropping
  // them would unreference it); 0 if it is not referenced.
  uint64_t BytesFreedIfDropped(std::string_view ns, const ContentHash& hash, uint32_t refs) const;

  struct Totals {
    uint64_t chains = 0, head_bytes = 0;
    uint64_t blobs = 0, blob_bytes = 0;
    uint64_t sidecars = 0, sidecar_bytes = 0;              // tip indexed
    uint64_t stray_sidecars = 0, stray_sidecar_bytes = 0;  // tip not indexed
    uint64_t unreferenced_blobs = 0, unreferenced_bytes = 0;
  };
  // `indexed(fp, tip)` says whether a sidecar's tip is indexed; it is called under the ledger's
  // lock, so it must not call back into the ledger.
  using IndexedFn = std::function<bool(const Fingerprint& fp, const BlockKey& tip)>;
  Totals NamespaceTotals(std::string_view ns, const IndexedFn& indexed) const;
  // Per fingerprint: chains, heads, blobs (distinct within the fingerprint) and sidecars.
  // O(entries of the namespace).
  std::map<Fingerprint, Totals> FingerprintTotals(std::string_view ns,
                                                  const IndexedFn& indexed) const;
  std::vector<std::string> Namespaces() const;
  // Σ over namespaces of blob_bytes + head_bytes + all known sidecars, and of unreferenced bytes.
  uint64_t AllReferencedBytes() const;
  uint64_t AllUnreferencedBytes() const;

  using ChainName = std::pair<Fingerprint, ChainId>;
  // Engines choose chain ids (a tip's key): store/engine_key_hash.h.
  struct ChainNameHash {
    size_t operator()(const ChainName& c) const {
      return EngineKeyHash{}(c.first, c.second);
    }
  };

 private:
  struct BlobRef {
    uint32_t length = 0;
    uint32_t refs = 0;
  };
  struct Unref {
    uint64_t bytes = 0;
    uint64_t since_us = 0;
    uint64_t probed_us = 0;  // 0 = never
  };
  struct ChainHashes {
    uint64_t order = 0;
    std::vector<ContentHash> hashes;
  };
  struct ScopeTotals {
    uint64_t chains = 0, head_bytes = 0;
  };
  struct Sidecar {
    uint64_t bytes = 0;
    uint64_t token = 0;  // BeginSidecarListing generation when it was last put or listed
  };
  struct Ns {
    // Each chain's hashes, in entry order (what its head names; U4). Hashed, not ordered: a
    // new chain's insert into an ordered map of a million missed the cache on every level, on
    // the thread that completes saves. The maps are flat (open addressing): a key not held,
    // what every save looks for, is told absent from one group of control bytes, where
    // std::unordered_map reads a bucket and the node before it (BENCHMARKS.md, "Session 35").
    absl::flat_hash_map<ChainName, ChainHashes, ChainNameHash> chains;
    absl::flat_hash_map<ContentHash, BlobRef, FixedBytesHash> blobs;
    uint64_t blob_bytes = 0;
    std::map<Fingerprint, ScopeTotals> scopes;
    std::map<std::pair<Fingerprint, BlockKey>, Sidecar> sidecars;
    uint64_t sidecar_bytes = 0;
    absl::flat_hash_map<ContentHash, Unref, FixedBytesHash> unref;
    uint64_t unref_bytes = 0;
  };
  Ns& NsFor(std::string_view ns);  // REQUIRES: mu_ held
  const Ns* FindNs(std::string_view ns) const;
  void AddUnref(const std::string& ns, Ns& n, const UnrefBlob& b);
  void AddRefs(Ns& n, std::span<const ChainEntry> entries, Changes* changes);
  void DropRefs(const std::string& ns, Ns& n, std::span<const ContentHash> hashes, uint64_t now_us,
                Changes* changes);

  mutable std::mutex mu_;
  std::map<std::string, Ns, std::less<>> ns_;  // GUARDED_BY(mu_)
  // Round robin over the unreferenced blobs. An entry whose blob was referenced again or deleted
  // stays until it reaches the front, and a blob unreferenced again is queued again: so the queue
  // is rebuilt from the live entries whenever it doubles past its last rebuild (CompactProbeQueue),
  // or churn would grow it without bound.
  std::deque<std::pair<std::string, ContentHash>> probe_queue_;  // GUARDED_BY(mu_)
  size_t compact_probe_queue_at_ = kProbeQueueCompactMin;        // GUARDED_BY(mu_)
  static constexpr size_t kProbeQueueCompactMin = 4096;
  void CompactProbeQueue();                                      // REQUIRES: mu_ held
  uint64_t sidecar_token_ = 0;                                   // GUARDED_BY(mu_)
};

// Object size in L2 of a blob with a payload of `length` bytes (envelope header + payload).
uint64_t BlobObjectBytes(uint64_t length);

}  // namespace wombatkv
