// RadixIndex: the L0 plane. For each scope (namespace, fingerprint) it holds the published
// chains as one tree of block keys: a node is (parent node, key) → block meta, so a lookup walks
// from the scope's roots down the caller's key path, one hash probe per block.
//
// Invariants (referred to in the code as I1..I7):
//   I1. A node exists iff at least one published chain passes through it (refs > 0).
//   I2. refs(node) >= refs(child) for every child: chains are paths from a root.
//   I3. A node's identity is (scope, parent node, key); the same key under two different parents
//       is two nodes. A root's parent is its scope.
//   I4. Every chain record names a tip node, and walking parent links from the tip reaches a root
//       in exactly `length` steps.
//   I5. children(node) counts live nodes whose parent is node: a node with children == 0 is a tip
//       of some chain, so eviction can trim chains from the tip without breaking any prefix.
//   I7. used(node) is a coarse time stamp chosen by the caller (the store uses seconds): PutChain
//       raises it on every node of the path, a touching lookup on the deepest node it matched.
//       Using a node uses its ancestors too, so the use of a tail is the running maximum of the
//       stamps from the tip; eviction reads it that way, and a trim carries the trimmed nodes'
//       stamp onto the new tip (PutChain with `used`).
//   I8. A node's meta (content hash, length) is that of the chain of the newest order through
//       it, as far as PutChain and ReassignStaleMeta have been told: a chain put with an older
//       order than the node's does not replace it (heads learned late from L2 stay behind the
//       newer publishes), and a node whose meta a departing chain gave it is given that of the
//       newest chain left (the store asks ReassignStaleMeta after every change).
//   I6. The hash table holds exactly one slot per live node, reached by probing linearly from the
//       home slot of hash(scope, key) with no empty slot in between (deletion shifts back).
//
// Layout: nodes live in a chunked arena addressed by 32-bit index (free list for reuse); one
// global open-addressing table maps hash(scope, key) → node index, the candidate is confirmed by
// comparing its key and parent. Because the probe position does not depend on the parent, a
// lookup computes and prefetches the slots of the next keys while it verifies the current one.
//
// Memory: ≤ 128 bytes per indexed block (asserted by a test via MemoryBytes(), with 64-, 2- and
// 1-block chains): an 80-byte node, one 8-byte slot in a table kept 3/16..3/4 full (3/8 right
// after it grows), and ~28 bytes per chain (ChainTable: a 20-byte record and its slot; +40 when
// the chain id is not its tip's key, as after an eviction trim). A head's ETag, which the store
// needs only to write that head again, is not kept: a 64-bit digest of it is (EtagDigest).
// 1M blocks: 64-block chains 98 B per block, 2-block chains 113 B, 1-block chains, whose one
// block pays a whole record, 128 B (the 8-byte order of I8 took the last 4 bytes of headroom).
// Freed nodes are reused, not returned.
//
// Thread-safety: none. The store guards it with a reader/writer lock: const methods may run
// concurrently with each other, mutators need exclusive access. LookupPrefix and Resolve never
// allocate; the other const methods allocate only what they return (ForEachBlock and
// CheckInvariants also use a temporary of a few bytes per node). The one write a const method
// makes — a touching lookup raising a use stamp (I7) — is a relaxed atomic store, so concurrent
// readers may touch the same node; two racing touches may leave the older of their two stamps.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "wombatkv/types.h"

namespace wombatkv {

struct BlockMeta {
  ContentHash hash;
  uint32_t length = 0;
};

// One block of a chain; its parent is the previous entry (the root's parent is the zero key).
struct ChainEntry {
  BlockKey key;
  ContentHash hash;
  uint32_t length = 0;
  bool operator==(const ChainEntry&) const = default;
};

struct ChainInfo {
  ChainId chain_id;
  uint64_t version = 0;
  // RadixIndex::EtagDigest of the ETag of the head object in L2 it was loaded from / written as.
  uint64_t etag_digest = 0;
  BlockKey tip;
  uint32_t length = 0;  // number of blocks
};

class RadixIndex {
 public:
  // `hash_seed` is mixed into the table's hash: give each process a random one so that keys chosen
  // by one tenant cannot be crafted to collide in the table every tenant shares.
  explicit RadixIndex(uint64_t hash_seed = 0);
  ~RadixIndex();
  RadixIndex(const RadixIndex&) = delete;
  RadixIndex& operator=(const RadixIndex&) = delete;

  // Inserts chain `info.chain_id` of scope (ns, fp) with `entries` root→tip, replacing any chain
  // of that id (its nodes no other chain uses are removed, I1). Nodes shared with other chains are
  // shared; an existing node takes the entry's meta unless a chain of a newer `order` (the store
  // passes the head's publish time) gave it its meta (I8). Every node of the path gets
  // used = max(its stamp, `used`) (I7).
  // REQUIRES: entries non-empty; info.tip == entries.back().key; info.length == entries.size().
  void PutChain(std::string_view ns, const Fingerprint& fp, const ChainInfo& info,
                std::span<const ChainEntry> entries, uint32_t used = 0, uint64_t order = 0);

  // A chain's own entry at a position, as its head names it, and the order it was put with.
  struct OwnEntry {
    BlockMeta meta;
    uint64_t order = 0;
  };
  using OwnEntryFn =
      std::function<std::optional<OwnEntry>(const ChainId& chain_id, uint32_t position)>;
  // After a chain put with `departed_order` left or changed: the nodes on its old path `keys`
  // from a root of scope (ns, fp) (as far as it exists) whose meta may have been its — the node
  // has its order, or a content hash `stale` says no chain names any more — take the meta of the
  // chain with the newest order among those passing through each, as `own` gives it (I8).
  // Returns how many nodes changed bytes. Walks every chain of the scope when such a node exists:
  // O(Σ their lengths), paid only when the departing chain was the newest through a node another
  // chain keeps, or held bytes no other chain names.
  size_t ReassignStaleMeta(std::string_view ns, const Fingerprint& fp,
                           std::span<const BlockKey> keys, uint64_t departed_order,
                           const std::function<bool(const ContentHash&)>& stale,
                           const OwnEntryFn& own);

  // What L0 keeps of a head's ETag: 64 bits of a BLAKE3 hash of it keyed with this index's seed,
  // so equal digests mean equal ETags but for a 2^-64 chance that no ETag can be crafted to hit.
  uint64_t EtagDigest(std::string_view etag) const;

  // Removes a chain; returns false if it was not there.
  bool RemoveChain(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id);

  // Number of leading keys that form a path from a root of the scope. No allocation. With
  // `touch` != 0 the deepest matched node's use stamp is raised to `touch` (I7).
  size_t LookupPrefix(std::string_view ns, const Fingerprint& fp, std::span<const BlockKey> keys,
                      uint32_t touch = 0) const;

  // Number of leading keys that form a path in the scope starting at any node with key keys[0]
  // (what GetBlocks serves: a get may ask for blocks in the middle of a chain): the longest such
  // path, from the root's child with that key if it matches as many, else from the node whose meta
  // has the newest order among the longest (I8). Fills out[i] for each matched key; touches as
  // LookupPrefix. When the path from the root falls short, each other node with key keys[0]
  // costs a walk to its root. REQUIRES: out.size() >= keys.size().
  size_t Resolve(std::string_view ns, const Fingerprint& fp, std::span<const BlockKey> keys,
                 std::span<BlockMeta> out, uint32_t touch = 0) const;

  std::optional<ChainInfo> GetChain(std::string_view ns, const Fingerprint& fp,
                                    const ChainId& chain_id) const;

  // The entries root→tip of a chain (walking parent links from its tip); empty if absent.
  std::vector<ChainEntry> ChainEntries(std::string_view ns, const Fingerprint& fp,
                                       const ChainId& chain_id) const;

  // The entries root→`key` of the path ending at a node with key `key` (if several nodes of the
  // scope carry this key under different parents, the one whose meta has the newest order, I8;
  // ties broken arbitrarily); empty if no node has it. Used by publish to continue a chain whose
  // earlier blocks are already indexed.
  std::vector<ChainEntry> PathTo(std::string_view ns, const Fingerprint& fp,
                                 const BlockKey& key) const;

  // Calls fn for every chain of every scope (order unspecified).
  void ForEachChain(const std::function<void(std::string_view ns, const Fingerprint& fp,
                                             const ChainInfo& info)>& fn) const;
  // As ForEachChain, for the chains of namespace `ns` only: visits no other namespace's chains.
  void ForEachChainIn(std::string_view ns,
                      const std::function<void(const Fingerprint& fp, const ChainInfo& info)>& fn)
      const;
  // The namespaces that have a chain, each once (order unspecified). Visits no chain.
  std::vector<std::string> Namespaces() const;

  // Every content hash referenced by any node, once per node (for GC and audit).
  void ForEachBlock(const std::function<void(std::string_view ns, const Fingerprint& fp,
                                             const BlockKey& key, const BlockMeta& meta)>& fn) const;

  // --- eviction (I5, I7) ---

  // Calls fn for every chain of namespace `ns` (all fingerprints) whose tip has no children: the
  // chains that can be trimmed without shortening any other path. `tip_used` is the tip's stamp.
  // Allocates nothing per chain (an eviction pass visits every chain of a namespace).
  void ForEachTrimmableChain(
      std::string_view ns,
      const std::function<void(const Fingerprint& fp, const ChainId& chain_id, uint32_t tip_used)>&
          fn) const;
  // Chains fall in kChainSlices slices by id. A visit of one slice reads only its own chains
  // (a big scope keeps them apart), so a caller can sweep the index a slice at a time.
  static constexpr size_t kChainSlices = 64;
  static size_t ChainSlice(const ChainId& id) { return id.bytes[31] % kChainSlices; }
  // Calls fn for every chain of slice `slice` (< kChainSlices) with its newest use stamp (as
  // ChainUsed), allocating nothing per chain.
  void ForEachChainUse(size_t slice,
                       const std::function<void(std::string_view ns, const Fingerprint& fp,
                                                const ChainId& chain_id, uint32_t used)>& fn) const;

  struct TailNode {
    ChainEntry entry;
    uint32_t used = 0;  // the node's own stamp
  };
  // The tail of a chain, tip first: its nodes while every chain through them ends at this tip
  // (their refs equal the tip's), so removing them shortens no other path; at most `nodes_max`.
  // Empty if the chain is absent or its tip has children.
  std::vector<TailNode> TrimmableTail(std::string_view ns, const Fingerprint& fp,
                                      const ChainId& chain_id, size_t nodes_max) const;

  // The newest use stamp on the path of a chain (the chain's last use); nullopt if absent.
  std::optional<uint32_t> ChainUsed(std::string_view ns, const Fingerprint& fp,
                                    const ChainId& chain_id) const;

  // Whether any node of scope (ns, fp) carries `key` (under any parent).
  bool HasKey(std::string_view ns, const Fingerprint& fp, const BlockKey& key) const;

  size_t block_count() const;  // live nodes
  size_t chain_count() const;
  // How many times removing or replacing a chain left another chain's tip without children (so
  // newly trimmable, I5), counted since construction.
  uint64_t tips_exposed() const;
  // Bytes of RAM held by the index (nodes, tables, chain records), approximately.
  size_t MemoryBytes() const;

  // Deep validation of I1..I6, O(nodes + chain blocks); for tests and the sampled checks of the
  // simulator. Returns Internal naming the first broken invariant.
  Status CheckInvariants() const;

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace wombatkv
