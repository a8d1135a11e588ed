// PayloadCache: the RAM payload plane. Maps (namespace id, content hash) → payload bytes,
// bounded in bytes, least-recently-used first out: every Lookup hit and Insert counts as a use.
//
// Invariants:
//   C1. An entry that is pinned (a put whose upload to L2 has not finished) is never evicted:
//       it holds the only copy of those bytes.
//   C2. An entry whose bytes are borrowed (someone else holds a reference to its Buffer) is never
//       evicted; its bytes also stay valid after eviction because the borrower co-owns them.
//   C3. bytes() == sum of sizes of live entries; after Insert/Unpin/Release, bytes() <=
//       capacity unless the excess is pinned or borrowed.
//   C4. Pinned entries are not on the LRU list (they wait on their own list until their last pin
//       goes, then are the most recent): eviction never walks past them, so a cache full of
//       uploads still in flight costs an insert O(1), not a walk of every pinned entry.
// The namespace id is part of the key so one tenant can never read (or probe) another's entry.
//
// Thread-safety: all methods are safe to call concurrently (one internal mutex; the critical
// sections are O(1), never copy payload bytes, and never free them: an evicted buffer is let go
// after the mutex, as freeing a large one — munmap, a pool's lock — takes long).
//
// The budget counts payload bytes. A payload read from L2 or the disk cache shares its buffer
// with the envelope's header, and allocators round buffers of 2 MiB and more up to whole 2 MiB
// pages: a cached 2 MiB block read cold holds 4 MiB (docs/capacity.md, "RAM cache").
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "wombatkv/buffer.h"
#include "wombatkv/types.h"

namespace wombatkv {

struct CacheKey {
  uint32_t ns_id = 0;
  ContentHash hash;
  bool operator==(const CacheKey&) const = default;
};

struct CacheStats {
  uint64_t bytes = 0;
  uint64_t entries = 0;
  uint64_t pinned_bytes = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;
  uint64_t eviction_looks = 0;  // entries eviction looked at (evicted or skipped as borrowed)
};

class PayloadCache {
 public:
  // `hash_seed` is mixed into the table's hash: give each process a random one, so that content
  // hashes one tenant grinds cannot be made to collide in the table every tenant shares.
  explicit PayloadCache(uint64_t capacity_bytes, uint64_t hash_seed = 0);

  // A borrowed view of the payload, or nullopt (a miss).
  std::optional<BufferSlice> Lookup(const CacheKey& key);

  // Lookup that leaves the hit/miss counters alone (the entry still counts as used), for a
  // caller that may give up and repeat the lookup with Lookup; CountHits(n) then records the n
  // hits of a probe it did not give up on, so every answered lookup is counted once.
  std::optional<BufferSlice> LookupUncounted(const CacheKey& key);
  void CountHits(uint64_t n);
  // A miss found without a lookup (nothing of the namespace can be cached, or a test fault).
  void CountMiss();

  // Inserts (or, if present, keeps the existing bytes — content-addressed, so equal) and returns
  // the cached slice. With pin=true the entry gets one more pin (C1).
  BufferSlice Insert(const CacheKey& key, BufferSlice payload, bool pin);

  // Drops one pin; the entry becomes evictable when its pins reach zero.
  void Unpin(const CacheKey& key);

  // Evicts down to the capacity (C3), for a caller that just dropped a reference it held to a
  // cached buffer (a borrow the cache cannot see end, e.g. a disk cache fill's).
  void Trim();

  // Whether the entry is pinned (C1) or borrowed (C2) right now: L2 eviction leaves such blocks
  // alone (SPEC G10). A miss is not in use — though bytes lent earlier and since dropped from the
  // cache stay valid for their borrower anyway, who co-owns them.
  bool InUse(const CacheKey& key) const;

  CacheStats Stats() const;

 private:
  struct Entry {
    BufferSlice payload;
    uint32_t pins = 0;
    std::list<CacheKey>::iterator lru;  // position in lru_ (front = most recent), or pinned_
  };
  struct KeyHash {
    uint64_t seed = 0;
    size_t operator()(const CacheKey& k) const {
      // The seed goes through a multiply, so it changes which keys share buckets, not only the
      // buckets' names (a XOR after it would leave collisions colliding).
      uint64_t h = (k.hash.Prefix64() ^ seed) * 0x9e3779b97f4a7c15ull;
      h ^= uint64_t{k.ns_id} * 0xc2b2ae3d27d4eb4full;
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };
  // Payloads evicted under mu_, dropped after it (an insert into a full cache evicts about one:
  // no allocation for that).
  using Evicted = absl::InlinedVector<BufferSlice, 2>;
  // REQUIRES: mu_ held. `fresh`: the entry Insert is returning a slice of. The payloads evicted
  // go to `dead`, for the caller to drop after releasing mu_.
  void EvictLocked(Evicted* dead, const CacheKey* fresh = nullptr);
  // REQUIRES: mu_ held. A use: an unpinned entry becomes the most recent (C4: a pinned one is
  // not on the LRU list).
  void TouchLocked(Entry& e) {
    if (e.pins == 0) lru_.splice(lru_.begin(), lru_, e.lru);
  }

  const uint64_t capacity_;
  mutable std::mutex mu_;
  // Flat (open addressing): a lookup, every get's and put's, reads a group of control bytes and
  // the entry, not a bucket, the node before it and its own (BENCHMARKS.md, "Session 35").
  absl::flat_hash_map<CacheKey, Entry, KeyHash> map_;
  std::list<CacheKey> lru_;     // unpinned entries
  std::list<CacheKey> pinned_;  // pinned entries, in no order (C4)
  CacheStats stats_;
};

}  // namespace wombatkv
