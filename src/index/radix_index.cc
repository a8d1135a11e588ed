#include "index/radix_index.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "base/blake3_hash.h"
#include "base/check.h"
#include "base/limits.h"
#include "index/chain_table.h"

namespace wombatkv {
namespace {

constexpr uint32_t kNone = UINT32_MAX;         // no node / empty slot
constexpr uint32_t kRootBit = 0x8000'0000u;    // parent field of a root: kRootBit | scope id (I3)
constexpr uint32_t kNodesMax = kRootBit - 1;   // node indices stay below kRootBit
constexpr uint32_t kScopesMax = kRootBit - 2;  // so kRootBit | id never equals kNone
constexpr uint32_t kChunkShift = 12;           // 4096 nodes (304 KiB) per arena chunk
constexpr uint32_t kChunkNodes = 1u << kChunkShift;
constexpr size_t kSlotsMin = 64;

inline bool IsRoot(uint32_t parent) { return (parent & kRootBit) != 0; }
inline uint32_t RootOf(uint32_t scope) { return kRootBit | scope; }
inline uint32_t ScopeOfRoot(uint32_t parent) { return parent & ~kRootBit; }

inline uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline bool SameKey(const BlockKey& a, const BlockKey& b) {
  const uint8_t* x = a.data();
  const uint8_t* y = b.data();
  return ((Load64(x) ^ Load64(y)) | (Load64(x + 8) ^ Load64(y + 8)) |
          (Load64(x + 16) ^ Load64(y + 16)) | (Load64(x + 24) ^ Load64(y + 24))) == 0;
}

// hash(scope, key). Keys are normally hashes already, but engines may pass structured keys, so all
// 32 bytes are mixed (four independent multiplies, then a finaliser). The scope takes part so the
// same prompt under many tenants does not pile up in one probe run.
inline uint32_t KeyHash(uint64_t seed, uint32_t scope, const BlockKey& key) {
  const uint8_t* p = key.data();
  uint64_t h = ((Load64(p) ^ seed) * 0x9E3779B97F4A7C15ull) ^
               std::rotl(Load64(p + 8) * 0xC2B2AE3D27D4EB4Full, 17) ^
               std::rotl(Load64(p + 16) * 0x165667B19E3779F9ull, 31) ^
               std::rotl(Load64(p + 24) * 0xD6E8FEB86659FD93ull, 47);
  h += (uint64_t{scope} + 1) * 0xFF51AFD7ED558CCDull;
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  h ^= h >> 32;
  return static_cast<uint32_t>(h);
}

inline void Prefetch(const void* p) { __builtin_prefetch(p, 0, 3); }

// Approximate heap footprint of one malloc of n bytes (glibc: 8-byte header, 16-byte granules).
inline size_t HeapBytes(size_t n) { return std::max<size_t>(32, (n + 8 + 15) & ~size_t{15}); }
inline size_t StringHeapBytes(const std::string& s) {
  return s.capacity() > 15 ? HeapBytes(s.capacity() + 1) : 0;  // libstdc++ SSO holds 15 chars
}

// Fields are ordered so that a lookup step reads bytes [0, 36) (parent, key) and Resolve [0, 60).
struct Node {
  uint64_t order = 0;   // order of the chain whose meta this is (I8; also PathTo's "newest")
  uint32_t parent = 0;  // node index, or kRootBit | scope for a root (I3); next free if free
  BlockKey key;
  ContentHash hash;  // meta of the chain of the newest order through this node (I8)
  uint32_t length = 0;
  uint32_t refs = 0;      // chains through this node (I1, I2); 0 = on the free list
  uint32_t children = 0;  // live nodes whose parent is this one (I5)
  // Use stamp (I7). Written by shared-lock readers through UseOf() (relaxed atomics); plain
  // accesses only under the exclusive lock.
  mutable uint32_t used = 0;
};
static_assert(sizeof(Node) == 80, "the memory budget in radix_index.h assumes 80-byte nodes");
static_assert(alignof(Node) >= std::atomic_ref<uint32_t>::required_alignment);

inline std::atomic_ref<uint32_t> UseOf(const Node& n) { return std::atomic_ref<uint32_t>(n.used); }

// Raises a node's stamp; a no-op (one load) when it is already there, which is the common case:
// stamps are coarse, so a hot node is written at most once per tick.
inline void Touch(const Node& n, uint32_t tick) {
  auto u = UseOf(n);
  if (u.load(std::memory_order_relaxed) < tick) u.store(tick, std::memory_order_relaxed);
}

// A table slot: the node and the 32-bit hash of (scope, key); home = hash & mask. Keeping the hash
// lets the table grow and shift back without touching nodes, and filters candidates before the
// node is read: entries of other homes always differ in their low bits.
struct Slot {
  uint32_t node;
  uint32_t hash;
};
static_assert(sizeof(Slot) == 8);

struct Scope {
  Scope(std::string_view name, const Fingerprint& f, const NodeKeys* keys, uint64_t seed)
      : ns(name), fp(f), chains(keys, seed) {}
  std::string ns;
  Fingerprint fp;
  ChainTable chains;
  size_t nodes = 0;  // live nodes of this scope
};

struct ScopeName {
  std::string ns;
  Fingerprint fp;
};
struct ScopeView {
  std::string_view ns;
  const Fingerprint& fp;
};
struct ScopeNameHash {
  using is_transparent = void;
  size_t operator()(const ScopeView& v) const {
    return std::hash<std::string_view>{}(v.ns) ^ (v.fp.Prefix64() * 0x9E3779B97F4A7C15ull);
  }
  size_t operator()(const ScopeName& n) const { return (*this)(ScopeView{n.ns, n.fp}); }
};
struct ScopeNameEq {
  using is_transparent = void;
  static bool Eq(std::string_view ans, const Fingerprint& afp, std::string_view bns,
                 const Fingerprint& bfp) {
    return afp == bfp && ans == bns;
  }
  bool operator()(const ScopeName& a, const ScopeName& b) const {
    return Eq(a.ns, a.fp, b.ns, b.fp);
  }
  bool operator()(const ScopeView& a, const ScopeName& b) const {
    return Eq(a.ns, a.fp, b.ns, b.fp);
  }
  bool operator()(const ScopeName& a, const ScopeView& b) const {
    return Eq(a.ns, a.fp, b.ns, b.fp);
  }
};

}  // namespace

struct RadixIndex::Impl final : NodeKeys {
  // --- arena ---
  std::vector<std::unique_ptr<Node[]>> chunks;
  uint32_t nodes_allocated = 0;  // high-water mark of node indices
  uint32_t free_head = kNone;
  size_t live_nodes = 0;

  // --- table (I6) ---
  std::unique_ptr<Slot[]> slots;
  uint32_t mask = 0;
  size_t slots_used = 0;

  // --- scopes and chains ---
  std::unordered_map<ScopeName, uint32_t, ScopeNameHash, ScopeNameEq> scope_ids;
  std::vector<std::unique_ptr<Scope>> scopes;  // by id; null = free id
  std::vector<uint32_t> free_scope_ids;
  size_t chains = 0;
  uint64_t tips_exposed = 0;

  explicit Impl(uint64_t hash_seed) : seed(hash_seed) { ResetTable(kSlotsMin); }
  const uint64_t seed;  // mixed into every key hash (crafted keys cannot aim at one probe run)

  Node& N(uint32_t i) { return chunks[i >> kChunkShift][i & (kChunkNodes - 1)]; }
  const Node& N(uint32_t i) const { return chunks[i >> kChunkShift][i & (kChunkNodes - 1)]; }

  // ---------------------------------------------------------------- arena

  uint32_t NewNode() {
    if (free_head != kNone) {
      uint32_t i = free_head;
      free_head = N(i).parent;
      ++live_nodes;
      return i;
    }
    WMBT_CHECK(nodes_allocated < kNodesMax);
    if ((nodes_allocated >> kChunkShift) == chunks.size()) {
      chunks.push_back(std::make_unique<Node[]>(kChunkNodes));
    }
    ++live_nodes;
    return nodes_allocated++;
  }

  void FreeNode(uint32_t i) {
    Node& n = N(i);
    n.refs = 0;
    n.children = 0;
    n.parent = free_head;
    free_head = i;
    --live_nodes;
  }

  // ---------------------------------------------------------------- table

  void ResetTable(size_t capacity) {
    WMBT_CHECK(std::has_single_bit(capacity) && capacity <= (size_t{1} << 32));
    slots = std::make_unique_for_overwrite<Slot[]>(capacity);
    std::memset(slots.get(), 0xFF, capacity * sizeof(Slot));
    mask = static_cast<uint32_t>(capacity - 1);
    slots_used = 0;
  }

  size_t capacity() const { return size_t{mask} + 1; }

  void Rehash(size_t capacity) {
    std::unique_ptr<Slot[]> old = std::move(slots);
    size_t old_capacity = size_t{mask} + 1;
    size_t used = slots_used;
    ResetTable(capacity);
    for (size_t i = 0; i < old_capacity; ++i) {
      if (old[i].node != kNone) PlaceSlot(old[i]);
    }
    WMBT_CHECK(slots_used == used);
  }

  void PlaceSlot(Slot s) {
    uint32_t i = s.hash & mask;
    while (slots[i].node != kNone) i = (i + 1) & mask;
    slots[i] = s;
    ++slots_used;
  }

  void InsertSlot(uint32_t hash, uint32_t node) {
    if ((slots_used + 1) * 4 > capacity() * 3) Rehash(capacity() * 2);  // load ≤ 3/4
    PlaceSlot({node, hash});
  }

  // Removes the slot of `node`, shifting later members of its probe run back so that every entry
  // stays reachable from its home without crossing an empty slot (I6).
  void EraseSlot(uint32_t hash, uint32_t node) {
    uint32_t i = hash & mask;
    for (size_t probes = 0; slots[i].node != node; ++probes) {
      WMBT_CHECK(slots[i].node != kNone && probes <= mask);  // I6: a live node has its slot
      i = (i + 1) & mask;
    }
    uint32_t j = i;
    for (;;) {
      j = (j + 1) & mask;
      if (slots[j].node == kNone) break;
      uint32_t home = slots[j].hash & mask;
      if (((j - home) & mask) >= ((j - i) & mask)) {  // home not in (i, j]: may move to i
        slots[i] = slots[j];
        i = j;
      }
    }
    slots[i] = {kNone, kNone};
    --slots_used;
  }

  void MaybeShrink() {
    size_t cap = capacity();
    size_t target = cap;
    while (target > kSlotsMin && slots_used * 16 < target * 3) target /= 2;  // load < 3/16
    if (target != cap) Rehash(target);
  }

  // The node (parent, key) with hash(scope, key) == hash, or kNone. parent pins the scope (I3).
  uint32_t Find(uint32_t hash, uint32_t parent, const BlockKey& key) const {
    // The table is never full (load ≤ 3/4), so the run ends at an empty slot.
    for (uint32_t i = hash & mask;; i = (i + 1) & mask) {
      const Slot s = slots[i];
      if (s.node == kNone) return kNone;
      if (s.hash == hash) {
        const Node& n = N(s.node);
        if (n.parent == parent && SameKey(n.key, key)) return s.node;
      }
    }
  }

  // ---------------------------------------------------------------- scopes

  uint32_t FindScope(std::string_view ns, const Fingerprint& fp) const {
    auto it = scope_ids.find(ScopeView{ns, fp});
    return it == scope_ids.end() ? kNone : it->second;
  }

  uint32_t FindOrAddScope(std::string_view ns, const Fingerprint& fp) {
    uint32_t id = FindScope(ns, fp);
    if (id != kNone) return id;
    if (!free_scope_ids.empty()) {
      id = free_scope_ids.back();
      free_scope_ids.pop_back();
    } else {
      WMBT_CHECK(scopes.size() < kScopesMax);
      id = static_cast<uint32_t>(scopes.size());
      scopes.emplace_back();
    }
    scopes[id] = std::make_unique<Scope>(ns, fp, this, seed);
    scope_ids.emplace(ScopeName{std::string(ns), fp}, id);
    return id;
  }

  void DropScopeIfEmpty(uint32_t id) {
    Scope& sc = *scopes[id];
    if (!sc.chains.empty()) return;
    WMBT_CHECK(sc.nodes == 0);  // I1: no chain, no node
    scope_ids.erase(scope_ids.find(ScopeView{sc.ns, sc.fp}));
    scopes[id].reset();
    free_scope_ids.push_back(id);
  }

  // ---------------------------------------------------------------- chains

  // Drops one reference along the path of a chain, tip to root, freeing nodes no chain uses (I1).
  // Returns the node left without children by the freeing, if one is (at most one: the nearest
  // node that stays), else kNone.
  uint32_t ReleasePath(uint32_t scope, uint32_t tip, uint32_t length) {
    uint32_t bared = kNone;
    Scope& sc = *scopes[scope];
    uint32_t n = tip;
    for (uint32_t step = 0; step < length; ++step) {
      WMBT_CHECK(!IsRoot(n));  // I4: not at a root before `length` steps
      Node& x = N(n);
      WMBT_CHECK(x.refs > 0);  // I1
      const uint32_t parent = x.parent;
      if (--x.refs == 0) {
        // I2: the chains through a child also pass through x, so a node losing its last chain is
        // a tip, and nodes are released tip first.
        WMBT_CHECK(x.children == 0);  // I5
        EraseSlot(KeyHash(seed, scope, x.key), n);
        if (!IsRoot(parent)) {
          WMBT_CHECK(N(parent).children > 0);  // I5
          if (--N(parent).children == 0) bared = parent;
        }
        FreeNode(n);
        --sc.nodes;
      }
      n = parent;
    }
    WMBT_CHECK(n == RootOf(scope));  // I4: exactly `length` steps, and the chain's own scope
    MaybeShrink();
    return bared;
  }

  void Put(std::string_view ns, const Fingerprint& fp, const ChainInfo& info,
           std::span<const ChainEntry> entries, uint32_t used, uint64_t order) {
    WMBT_CHECK(!entries.empty());
    WMBT_CHECK(entries.size() <= limits::kChainBlocksMax);
    WMBT_CHECK(info.length == entries.size());
    WMBT_CHECK(info.tip == entries.back().key);
    const uint32_t scope = FindOrAddScope(ns, fp);
    Scope& sc = *scopes[scope];
    // Take the new path first so nodes shared with the replaced chain never drop to zero refs.
    uint32_t parent = RootOf(scope);
    for (const ChainEntry& e : entries) {
      const uint32_t hash = KeyHash(seed, scope, e.key);
      uint32_t n = Find(hash, parent, e.key);
      if (n == kNone) {
        n = NewNode();
        Node& x = N(n);
        x.parent = parent;
        x.key = e.key;
        x.refs = 0;
        x.children = 0;
        x.used = 0;
        x.order = 0;
        if (!IsRoot(parent)) ++N(parent).children;  // I5
        InsertSlot(hash, n);                        // I6
        ++sc.nodes;
      }
      Node& x = N(n);
      WMBT_CHECK(x.refs < UINT32_MAX);
      ++x.refs;                // I1, I2: every node of the path gains the same one reference
      if (order >= x.order) {  // I8: the newest publish wins (a tie: the later put)
        x.hash = e.hash;
        x.length = e.length;
        x.order = order;
      }
      x.used = std::max(x.used, used);  // I7 (exclusive lock: a plain access)
      parent = n;
    }
    WMBT_DCHECK(PathMatches(parent, entries));  // I3, I4 for the new chain
    const ChainValue value{parent, N(parent).key, info.length, info.version, info.etag_digest};
    ChainTable::Ref ref;
    if (!sc.chains.Locate(info.chain_id, &ref)) {
      sc.chains.Add(info.chain_id, value);
      ++chains;
      return;
    }
    // A chain that ends at the node the old path leaves bare (other than this one, if it ends
    // there now) has a trimmable tip it did not have (I5).
    const ChainRecord& old = sc.chains[ref];
    const uint32_t bared = ReleasePath(scope, old.tip, old.length);
    if (bared != kNone && N(bared).refs > (bared == parent ? 1u : 0u)) ++tips_exposed;
    sc.chains.Set(ref, info.chain_id, value);
  }

  const BlockKey& KeyOf(uint32_t node) const override { return N(node).key; }

  ChainInfo InfoOf(const ChainTable& table, const ChainId& id, const ChainRecord& rec) const {
    return ChainInfo{id, table.VersionOf(rec), rec.etag_digest(), N(rec.tip).key, rec.length};
  }

  // The newest use stamp on a chain's path (I7: a lookup stamps only the deepest node it matched).
  uint32_t NewestUse(const ChainRecord& rec) const {
    uint32_t newest = 0;
    uint32_t n = rec.tip;
    for (uint32_t step = 0; step < rec.length; ++step) {
      const Node& x = N(n);
      newest = std::max(newest, UseOf(x).load(std::memory_order_relaxed));
      n = x.parent;
    }
    return newest;
  }

  // Whether walking parent links from `tip` spells `entries` backwards and then reaches a root.
  bool PathMatches(uint32_t tip, std::span<const ChainEntry> entries) const {
    uint32_t n = tip;
    for (size_t k = entries.size(); k-- > 0;) {
      if (IsRoot(n) || !SameKey(N(n).key, entries[k].key)) return false;
      n = N(n).parent;
    }
    return IsRoot(n);
  }

  bool Remove(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id) {
    const uint32_t scope = FindScope(ns, fp);
    if (scope == kNone) return false;
    Scope& sc = *scopes[scope];
    ChainTable::Ref ref;
    if (!sc.chains.Locate(chain_id, &ref)) return false;
    const uint32_t tip = sc.chains[ref].tip;
    const uint32_t length = sc.chains[ref].length;
    sc.chains.Erase(ref, chain_id);
    const uint32_t bared = ReleasePath(scope, tip, length);
    if (bared != kNone && N(bared).refs > 0) ++tips_exposed;  // as in Put
    --chains;
    DropScopeIfEmpty(scope);
    return true;
  }

  // ---------------------------------------------------------------- lookups

  // The lookup loop. The home slot of a key depends only on (scope, key), so the hashes of the
  // next kAhead keys are computed and their slots prefetched while the current step is verified,
  // and the likely node of the next step is prefetched too: steps overlap their cache misses
  // although each one needs the node found by the previous.
  //
  // Starts below `parent` (a scope's root marker or a node) and returns the number of keys
  // matched; *last is the deepest node matched (`parent` if none).
  size_t Walk(uint32_t scope, uint32_t parent, std::span<const BlockKey> keys, BlockMeta* out,
              uint32_t* last) const {
    constexpr size_t kAhead = 8;
    static_assert(std::has_single_bit(kAhead));
    const size_t n = keys.size();
    uint32_t ring[kAhead];
    for (size_t j = 0; j < std::min(n, kAhead); ++j) {
      ring[j] = KeyHash(seed, scope, keys[j]);
      Prefetch(&slots[ring[j] & mask]);
    }
    for (size_t i = 0; i < n; ++i) {
      const uint32_t hash = ring[i & (kAhead - 1)];
      if (i + kAhead < n) {
        const uint32_t ahead = KeyHash(seed, scope, keys[i + kAhead]);
        ring[i & (kAhead - 1)] = ahead;
        Prefetch(&slots[ahead & mask]);
      }
      if (i + 1 < n) {
        const Slot next = slots[ring[(i + 1) & (kAhead - 1)] & mask];
        if (next.node != kNone) Prefetch(&N(next.node));
      }
      const uint32_t node = Find(hash, parent, keys[i]);
      if (node == kNone) {
        *last = parent;
        return i;
      }
      if (out != nullptr) Describe(node, &out[i]);
      parent = node;
    }
    *last = parent;
    return n;
  }

  void Describe(uint32_t node, BlockMeta* out) const {
    const Node& x = N(node);
    out->hash = x.hash;
    out->length = x.length;
  }

  // Leading keys that form a path from a root of the scope, or with `anywhere` a path that may
  // start at any node with key keys[0]: the longest match wins (a root's child first, then the
  // node a chain wrote most recently), so a get of a stretch of any chain holding its keys
  // resolves even when its first key also sits under other parents. Only a path from the root
  // that falls short pays for the other starts: each walks as far as keys match, and only those
  // that beat the best so far are walked to their root (to check scope and depth).
  // The deepest node matched is touched (I7).
  size_t Match(uint32_t scope, std::span<const BlockKey> keys, BlockMeta* out, uint32_t touch,
               bool anywhere) const {
    uint32_t last;
    size_t got = Walk(scope, RootOf(scope), keys, out, &last);
    if (anywhere && got < keys.size()) {
      uint32_t best = kNone;
      size_t best_got = got;
      ForEachNodeWithKey(scope, keys[0], [&](uint32_t node) {
        uint32_t end;
        const size_t g = 1 + Walk(scope, node, keys.subspan(1), nullptr, &end);
        if (g < best_got || (g == best_got && (best == kNone || !Newer(node, best)))) return;
        // A root's child was walked above; a node of another scope only shares a hash.
        if (DepthInScope(node, scope) <= 1) return;
        best = node;
        best_got = g;
      });
      if (best != kNone) {
        if (out != nullptr) Describe(best, &out[0]);
        got = 1 + Walk(scope, best, keys.subspan(1), out ? out + 1 : nullptr, &last);
      }
    }
    if (touch != 0 && got > 0) Touch(N(last), touch);
    return got;
  }

  // Entries root→node.
  std::vector<ChainEntry> PathFrom(uint32_t node, uint32_t depth) const {
    std::vector<ChainEntry> out(depth);
    for (size_t k = depth; k-- > 0;) {
      const Node& x = N(node);
      out[k] = ChainEntry{x.key, x.hash, x.length};
      node = x.parent;
    }
    WMBT_CHECK(IsRoot(node));  // I4
    return out;
  }

  // Walks to the root: returns (root marker, depth). Bounded: depth ≤ kChainBlocksMax (I4).
  std::pair<uint32_t, uint32_t> RootAndDepth(uint32_t node) const {
    uint32_t depth = 0;
    while (!IsRoot(node)) {
      node = N(node).parent;
      ++depth;
      WMBT_CHECK(depth <= limits::kChainBlocksMax);
    }
    return {node, depth};
  }

  std::vector<ChainEntry> PathToKey(std::string_view ns, const Fingerprint& fp,
                                    const BlockKey& key) const {
    const uint32_t scope = FindScope(ns, fp);
    if (scope == kNone) return {};
    const auto [node, depth] = NewestNode(scope, key);
    if (node == kNone) return {};
    return PathFrom(node, depth);
  }

  // The node of the scope with key `key` that a PutChain went through most recently (several
  // nodes carry one key when it was published under different parents), and its depth; kNone if
  // the scope has no such node.
  std::pair<uint32_t, uint32_t> NewestNode(uint32_t scope, const BlockKey& key) const {
    uint32_t best = kNone;
    uint32_t best_depth = 0;
    ForEachNodeWithKey(scope, key, [&](uint32_t node) {
      if (best != kNone && !Newer(node, best)) return;
      const uint32_t depth = DepthInScope(node, scope);
      if (depth == 0) return;
      best = node;
      best_depth = depth;
    });
    return {best, best_depth};
  }

  // Whether a's meta is of a newer order than b's (I8).
  bool Newer(uint32_t a, uint32_t b) const { return N(a).order > N(b).order; }

  // I8 after a change: see RadixIndex::ReassignStaleMeta.
  size_t Reassign(uint32_t scope, std::span<const BlockKey> keys, uint64_t departed_order,
                  const std::function<bool(const ContentHash&)>& stale,
                  const RadixIndex::OwnEntryFn& own) {
    std::vector<uint32_t> path;  // the nodes of `keys` from the root, as far as they exist
    uint32_t parent = RootOf(scope);
    for (const BlockKey& k : keys) {
      const uint32_t n = Find(KeyHash(seed, scope, k), parent, k);
      if (n == kNone) break;
      path.push_back(n);
      parent = n;
    }
    std::vector<uint32_t> targets;  // positions on the path
    for (uint32_t i = 0; i < path.size(); ++i) {
      const Node& x = N(path[i]);
      if (x.order == departed_order || stale(x.hash)) targets.push_back(i);
    }
    if (targets.empty()) return 0;
    std::vector<std::optional<RadixIndex::OwnEntry>> best(path.size());
    scopes[scope]->chains.ForEach([&](const ChainId& id, const ChainRecord& rec) {
      // The deepest node of the path this chain passes through (a node is its whole path, I3):
      // walking up from its tip, the first node at a depth the path reaches that is the path's.
      uint32_t n = rec.tip;
      for (uint32_t depth = rec.length; depth > targets.front(); --depth) {
        if (depth <= path.size() && n == path[depth - 1]) {
          for (const uint32_t t : targets) {
            if (t >= depth) break;
            auto e = own(id, t);
            if (e && (!best[t] || e->order >= best[t]->order)) best[t] = e;
          }
          return;
        }
        n = N(n).parent;
      }
    });
    size_t changed = 0;
    for (const uint32_t t : targets) {
      if (!best[t]) continue;  // no chain through it told: left as it was
      Node& x = N(path[t]);
      if (x.hash != best[t]->meta.hash) ++changed;
      x.hash = best[t]->meta.hash;
      x.length = best[t]->meta.length;
      x.order = best[t]->order;
    }
    return changed;
  }

  // Calls fn(node) for every node with key `key` whose slot hash matches this scope's: the
  // scope's nodes with that key, and rarely (a 32-bit hash collision) another scope's. Callers
  // check a candidate with DepthInScope only when it would change their answer, since that walks
  // to the root.
  template <typename Fn>
  void ForEachNodeWithKey(uint32_t scope, const BlockKey& key, Fn fn) const {
    const uint32_t hash = KeyHash(seed, scope, key);
    for (uint32_t i = hash & mask; slots[i].node != kNone; i = (i + 1) & mask) {
      if (slots[i].hash == hash && SameKey(N(slots[i].node).key, key)) fn(slots[i].node);
    }
  }

  // The node's depth (≥ 1) if it belongs to `scope`, else 0. Walks to its root.
  uint32_t DepthInScope(uint32_t node, uint32_t scope) const {
    const auto [root, depth] = RootAndDepth(node);
    return root == RootOf(scope) ? depth : 0;
  }

  // Scope id of every node index (kNone for free ones), each node resolved once.
  std::vector<uint32_t> ScopeOfNodes() const {
    std::vector<uint32_t> scope_of(nodes_allocated, kNone);
    for (uint32_t i = 0; i < nodes_allocated; ++i) {
      if (N(i).refs == 0 || scope_of[i] != kNone) continue;
      uint32_t n = i;
      uint32_t steps = 0;
      while (!IsRoot(n) && scope_of[n] == kNone) {
        n = N(n).parent;
        WMBT_CHECK(++steps <= limits::kChainBlocksMax + 1);
      }
      const uint32_t scope = IsRoot(n) ? ScopeOfRoot(n) : scope_of[n];
      for (n = i; !IsRoot(n) && scope_of[n] == kNone; n = N(n).parent) scope_of[n] = scope;
    }
    return scope_of;
  }

  size_t MemoryBytes() const {
    size_t b = sizeof(Impl);
    b += chunks.capacity() * sizeof(chunks[0]) +
         chunks.size() * HeapBytes(kChunkNodes * sizeof(Node));
    b += HeapBytes(capacity() * sizeof(Slot));
    b += scopes.capacity() * sizeof(scopes[0]) + free_scope_ids.capacity() * sizeof(uint32_t);
    b += scope_ids.bucket_count() * sizeof(void*) +
         scope_ids.size() * HeapBytes(sizeof(void*) + sizeof(std::pair<const ScopeName, uint32_t>) +
                                      sizeof(size_t));
    for (const auto& sc : scopes) {
      if (!sc) continue;
      b += HeapBytes(sizeof(Scope)) + 2 * StringHeapBytes(sc->ns);  // the name is held twice
      b += sc->chains.MemoryBytes();
    }
    return b;
  }

  Status Check() const;
};

Status RadixIndex::Impl::Check() const {
  auto fail = [](std::string what) { return Status::Internal("radix index: " + what); };
  // Free list and node count.
  std::vector<uint8_t> is_free(nodes_allocated, 0);
  size_t free_count = 0;
  for (uint32_t n = free_head; n != kNone; n = N(n).parent) {
    if (n >= nodes_allocated || is_free[n]) return fail("free list is corrupt");
    if (N(n).refs != 0) return fail("I1: a node on the free list has refs");
    is_free[n] = 1;
    ++free_count;
  }
  if (free_count + live_nodes != nodes_allocated) return fail("live + free != allocated nodes");
  for (uint32_t i = 0; i < nodes_allocated; ++i) {
    if (!is_free[i] && N(i).refs == 0) return fail("I1: a live node has no refs");
  }
  // Parents of live nodes are live roots' scopes or live nodes; depths are bounded (no cycles).
  for (uint32_t i = 0; i < nodes_allocated; ++i) {
    if (is_free[i]) continue;
    uint32_t n = i;
    for (uint32_t steps = 0; !IsRoot(n); ++steps) {
      n = N(n).parent;
      if (steps > limits::kChainBlocksMax || (!IsRoot(n) && (n >= nodes_allocated || is_free[n])))
        return fail("I3: a live node's parent is not a live node");
    }
    uint32_t s = ScopeOfRoot(n);
    if (s >= scopes.size() || !scopes[s]) return fail("I3: a root names a scope that is gone");
  }
  const std::vector<uint32_t> scope_of = ScopeOfNodes();
  // I1, I4: recount references by walking every chain.
  std::vector<uint32_t> refs(nodes_allocated, 0);
  std::vector<uint32_t> children(nodes_allocated, 0);
  std::vector<size_t> scope_nodes(scopes.size(), 0);
  size_t chain_total = 0;
  for (size_t s = 0; s < scopes.size(); ++s) {
    if (!scopes[s]) continue;
    const Scope& sc = *scopes[s];
    if (sc.chains.empty()) return fail("a scope without chains was kept");
    if (FindScope(sc.ns, sc.fp) != s) return fail("scope map does not name scope " + sc.ns);
    chain_total += sc.chains.size();
    std::string bad;
    sc.chains.ForEach([&](const ChainId& id, const ChainRecord& rec) {
      if (sc.chains.Find(id) != &rec && bad.empty()) bad = "chain " + id.ToHex() + " not found";
      uint32_t n = rec.tip;
      for (uint32_t step = 0; step < rec.length; ++step) {
        if (IsRoot(n) || n >= nodes_allocated || is_free[n]) {
          if (bad.empty()) bad = "I4: chain " + id.ToHex() + " is shorter than its length";
          return;
        }
        ++refs[n];
        n = N(n).parent;
      }
      if (n != RootOf(static_cast<uint32_t>(s)) && bad.empty()) {
        bad = "I4: chain " + id.ToHex() + " does not end at a root of its scope";
      }
    });
    if (!bad.empty()) return fail(bad);
  }
  if (chain_total != chains) return fail("chain count is wrong");
  for (uint32_t i = 0; i < nodes_allocated; ++i) {
    if (is_free[i]) continue;
    const Node& x = N(i);
    if (refs[i] != x.refs) return fail("I1: refs differ from the chains through a node");
    ++scope_nodes[scope_of[i]];
    if (!IsRoot(x.parent)) {
      ++children[x.parent];
      if (N(x.parent).refs < x.refs) return fail("I2: a child has more refs than its parent");
    }
  }
  for (size_t s = 0; s < scopes.size(); ++s) {
    if (scopes[s] && scopes[s]->nodes != scope_nodes[s]) return fail("per-scope node count");
  }
  for (uint32_t i = 0; i < nodes_allocated; ++i) {
    if (!is_free[i] && children[i] != N(i).children) return fail("I5: children count is wrong");
  }
  // I3, I6: one slot per live node, reachable from its home; identities unique.
  std::vector<uint8_t> seen(nodes_allocated, 0);
  size_t used = 0;
  for (uint32_t i = 0; i <= mask; ++i) {
    const Slot s = slots[i];
    if (s.node == kNone) continue;
    ++used;
    if (s.node >= nodes_allocated || is_free[s.node] || seen[s.node])
      return fail("I6: a slot names a free node or a node twice");
    seen[s.node] = 1;
    const Node& x = N(s.node);
    if (KeyHash(seed, scope_of[s.node], x.key) != s.hash) return fail("I6: a slot's hash is wrong");
    for (uint32_t j = s.hash & mask; j != i; j = (j + 1) & mask) {
      if (slots[j].node == kNone) return fail("I6: an empty slot separates a node from its home");
    }
    if (Find(s.hash, x.parent, x.key) != s.node) return fail("I3: two nodes share an identity");
  }
  if (used != live_nodes || used != slots_used) return fail("I6: slot count != live nodes");
  if (slots_used * 4 > capacity() * 3) return fail("table load above 3/4");
  return Status::Ok();
}

// ------------------------------------------------------------------ RadixIndex

RadixIndex::RadixIndex(uint64_t hash_seed) : impl_(new Impl(hash_seed)) {}
RadixIndex::~RadixIndex() { delete impl_; }

void RadixIndex::PutChain(std::string_view ns, const Fingerprint& fp, const ChainInfo& info,
                          std::span<const ChainEntry> entries, uint32_t used, uint64_t order) {
  impl_->Put(ns, fp, info, entries, used, order);
}

size_t RadixIndex::ReassignStaleMeta(std::string_view ns, const Fingerprint& fp,
                                     std::span<const BlockKey> keys, uint64_t departed_order,
                                     const std::function<bool(const ContentHash&)>& stale,
                                     const OwnEntryFn& own) {
  const uint32_t scope = impl_->FindScope(ns, fp);
  if (scope == kNone) return 0;
  return impl_->Reassign(scope, keys, departed_order, stale, own);
}

bool RadixIndex::RemoveChain(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id) {
  return impl_->Remove(ns, fp, chain_id);
}

size_t RadixIndex::LookupPrefix(std::string_view ns, const Fingerprint& fp,
                                std::span<const BlockKey> keys, uint32_t touch) const {
  const uint32_t scope = impl_->FindScope(ns, fp);
  if (scope == kNone) return 0;
  return impl_->Match(scope, keys, nullptr, touch, /*anywhere=*/false);
}

size_t RadixIndex::Resolve(std::string_view ns, const Fingerprint& fp,
                           std::span<const BlockKey> keys, std::span<BlockMeta> out,
                           uint32_t touch) const {
  WMBT_CHECK(out.size() >= keys.size());
  const uint32_t scope = impl_->FindScope(ns, fp);
  if (scope == kNone) return 0;
  return impl_->Match(scope, keys, out.data(), touch, /*anywhere=*/true);
}

std::optional<ChainInfo> RadixIndex::GetChain(std::string_view ns, const Fingerprint& fp,
                                              const ChainId& chain_id) const {
  const uint32_t scope = impl_->FindScope(ns, fp);
  if (scope == kNone) return std::nullopt;
  const Scope& sc = *impl_->scopes[scope];
  const ChainRecord* rec = sc.chains.Find(chain_id);
  if (rec == nullptr) return std::nullopt;
  return impl_->InfoOf(sc.chains, chain_id, *rec);
}

std::vector<ChainEntry> RadixIndex::ChainEntries(std::string_view ns, const Fingerprint& fp,
                                                 const ChainId& chain_id) const {
  const uint32_t scope = impl_->FindScope(ns, fp);
  if (scope == kNone) return {};
  const Scope& sc = *impl_->scopes[scope];
  const ChainRecord* rec = sc.chains.Find(chain_id);
  if (rec == nullptr) return {};
  return impl_->PathFrom(rec->tip, rec->length);
}

std::vector<ChainEntry> RadixIndex::PathTo(std::string_view ns, const Fingerprint& fp,
                                           const BlockKey& key) const {
  return impl_->PathToKey(ns, fp, key);
}

void RadixIndex::ForEachChain(const std::function<void(std::string_view ns, const Fingerprint& fp,
                                                       const ChainInfo& info)>& fn) const {
  for (const auto& sc : impl_->scopes) {
    if (!sc) continue;
    sc->chains.ForEach([&](const ChainId& id, const ChainRecord& rec) {
      fn(sc->ns, sc->fp, impl_->InfoOf(sc->chains, id, rec));
    });
  }
}

void RadixIndex::ForEachChainIn(
    std::string_view ns,
    const std::function<void(const Fingerprint& fp, const ChainInfo& info)>& fn) const {
  for (const auto& sc : impl_->scopes) {
    if (!sc || sc->ns != ns) continue;
    sc->chains.ForEach([&](const ChainId& id, const ChainRecord& rec) {
      fn(sc->fp, impl_->InfoOf(sc->chains, id, rec));
    });
  }
}

std::vector<std::string> RadixIndex::Namespaces() const {
  std::vector<std::string> out;
  for (const auto& sc : impl_->scopes) {
    if (sc) out.push_back(sc->ns);  // a scope exists only while it has a chain
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void RadixIndex::ForEachBlock(
    const std::function<void(std::string_view ns, const Fingerprint& fp, const BlockKey& key,
                             const BlockMeta& meta)>& fn) const {
  const std::vector<uint32_t> scope_of = impl_->ScopeOfNodes();
  for (uint32_t i = 0; i < impl_->nodes_allocated; ++i) {
    const Node& x = impl_->N(i);
    if (x.refs == 0) continue;
    const Scope& sc = *impl_->scopes[scope_of[i]];
    fn(sc.ns, sc.fp, x.key, BlockMeta{x.hash, x.length});
  }
}

void RadixIndex::ForEachTrimmableChain(
    std::string_view ns,
    const std::function<void(const Fingerprint& fp, const ChainId& chain_id, uint32_t tip_used)>&
        fn) const {
  for (const auto& sc : impl_->scopes) {
    if (!sc || sc->ns != ns) continue;
    sc->chains.ForEach([&](const ChainId& id, const ChainRecord& rec) {
      const Node& tip = impl_->N(rec.tip);
      if (tip.children != 0) return;  // I5: a prefix of a longer path, not a tip
      fn(sc->fp, id, UseOf(tip).load(std::memory_order_relaxed));
    });
  }
}

void RadixIndex::ForEachChainUse(
    size_t slice,
    const std::function<void(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id,
                             uint32_t used)>& fn) const {
  WMBT_CHECK(slice < kChainSlices);
  for (const auto& sc : impl_->scopes) {
    if (!sc) continue;
    sc->chains.ForEachIn(slice, [&](const ChainId& id, const ChainRecord& rec) {
      fn(sc->ns, sc->fp, id, impl_->NewestUse(rec));
    });
  }
}

std::vector<RadixIndex::TailNode> RadixIndex::TrimmableTail(std::string_view ns,
                                                            const Fingerprint& fp,
                                                            const ChainId& chain_id,
                                                            size_t nodes_max) const {
  std::vector<TailNode> out;
  const uint32_t scope = impl_->FindScope(ns, fp);
  if (scope == kNone) return out;
  const Scope& sc = *impl_->scopes[scope];
  const ChainRecord* rec = sc.chains.Find(chain_id);
  if (rec == nullptr) return out;
  uint32_t n = rec->tip;
  const Node& tip = impl_->N(n);
  if (tip.children != 0) return out;
  // I2: refs never grow toward the tip, so the first node with more refs than the tip is where
  // another chain joins (or passes); it and everything above it stay.
  for (uint32_t step = 0; step < rec->length && out.size() < nodes_max; ++step) {
    const Node& x = impl_->N(n);
    if (x.refs != tip.refs) break;
    out.push_back(TailNode{ChainEntry{x.key, x.hash, x.length},
                           UseOf(x).load(std::memory_order_relaxed)});
    n = x.parent;
  }
  return out;
}

std::optional<uint32_t> RadixIndex::ChainUsed(std::string_view ns, const Fingerprint& fp,
                                              const ChainId& chain_id) const {
  const uint32_t scope = impl_->FindScope(ns, fp);
  if (scope == kNone) return std::nullopt;
  const Scope& sc = *impl_->scopes[scope];
  const ChainRecord* rec = sc.chains.Find(chain_id);
  if (rec == nullptr) return std::nullopt;
  return impl_->NewestUse(*rec);
}

bool RadixIndex::HasKey(std::string_view ns, const Fingerprint& fp, const BlockKey& key) const {
  const uint32_t scope = impl_->FindScope(ns, fp);
  if (scope == kNone) return false;
  const uint32_t hash = KeyHash(impl_->seed, scope, key);
  const uint32_t mask = impl_->mask;
  for (uint32_t i = hash & mask; impl_->slots[i].node != kNone; i = (i + 1) & mask) {
    const Slot s = impl_->slots[i];
    if (s.hash != hash || !SameKey(impl_->N(s.node).key, key)) continue;
    if (impl_->RootAndDepth(s.node).first == RootOf(scope)) return true;
  }
  return false;
}

size_t RadixIndex::block_count() const { return impl_->live_nodes; }
size_t RadixIndex::chain_count() const { return impl_->chains; }
uint64_t RadixIndex::tips_exposed() const { return impl_->tips_exposed; }
size_t RadixIndex::MemoryBytes() const { return impl_->MemoryBytes(); }

uint64_t RadixIndex::EtagDigest(std::string_view etag) const {
  uint8_t seed[8];
  std::memcpy(seed, &impl_->seed, sizeof seed);
  Blake3Hasher h;
  h.Update(seed);
  h.Update({reinterpret_cast<const uint8_t*>(etag.data()), etag.size()});
  uint64_t digest;
  h.Finalize({reinterpret_cast<uint8_t*>(&digest), sizeof digest});
  return digest;
}
Status RadixIndex::CheckInvariants() const { return impl_->Check(); }

}  // namespace wombatkv
