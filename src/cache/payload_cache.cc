#include "cache/payload_cache.h"

#include "base/check.h"

namespace wombatkv {

PayloadCache::PayloadCache(uint64_t capacity_bytes, uint64_t hash_seed)
    : capacity_(capacity_bytes), map_(0, KeyHash{hash_seed}) {}

std::optional<BufferSlice> PayloadCache::Lookup(const CacheKey& key) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) {
    ++stats_.misses;
    return std::nullopt;
  }
  ++stats_.hits;
  TouchLocked(it->second);
  return it->second.payload;
}

std::optional<BufferSlice> PayloadCache::LookupUncounted(const CacheKey& key) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return std::nullopt;
  TouchLocked(it->second);
  return it->second.payload;
}

void PayloadCache::CountHits(uint64_t n) {
  std::lock_guard<std::mutex> g(mu_);
  stats_.hits += n;
}

void PayloadCache::CountMiss() {
  std::lock_guard<std::mutex> g(mu_);
  ++stats_.misses;
}

BufferSlice PayloadCache::Insert(const CacheKey& key, BufferSlice payload, bool pin) {
  Evicted dead;  // freed after the mutex (declared first: destroyed last)
  std::lock_guard<std::mutex> g(mu_);
  auto [it, inserted] = map_.try_emplace(key);
  Entry& e = it->second;
  if (inserted) {
    e.payload = std::move(payload);
    lru_.push_front(key);
    e.lru = lru_.begin();
    stats_.bytes += e.payload.size;
    ++stats_.entries;
  } else {
    TouchLocked(e);
  }
  if (pin && e.pins++ == 0) {
    stats_.pinned_bytes += e.payload.size;
    pinned_.splice(pinned_.begin(), lru_, e.lru);  // C4
  }
  BufferSlice out = e.payload;
  EvictLocked(&dead, &key);  // `out` is ours, not a borrower's: the new entry may go at once
  return out;
}

void PayloadCache::Unpin(const CacheKey& key) {
  Evicted dead;
  std::lock_guard<std::mutex> g(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return;
  Entry& e = it->second;
  WMBT_CHECK(e.pins > 0);
  if (--e.pins == 0) {
    stats_.pinned_bytes -= e.payload.size;
    lru_.splice(lru_.begin(), pinned_, e.lru);  // C4: back, as the most recent
  }
  EvictLocked(&dead);
}

void PayloadCache::Trim() {
  Evicted dead;
  std::lock_guard<std::mutex> g(mu_);
  EvictLocked(&dead);
}

void PayloadCache::EvictLocked(Evicted* dead, const CacheKey* fresh) {
  // Take victims from the least recently used end, skipping borrowed entries (C2; pinned ones
  // are not on the list: C4). A skipped entry moves to the recent end — it is in use — so later
  // calls do not walk past it again; each entry is looked at most once per call, so the loop is
  // bounded.
  for (size_t looked = 0, n = lru_.size(); stats_.bytes > capacity_ && looked < n; ++looked) {
    ++stats_.eviction_looks;
    auto it = std::prev(lru_.end());
    auto m = map_.find(*it);
    WMBT_DCHECK(m != map_.end());
    Entry& e = m->second;
    WMBT_DCHECK(e.pins == 0);
    // Only the cache holds the buffer (plus the slice Insert is about to return, for `fresh`),
    // so nobody borrows it (C2).
    const long owners = (fresh && *fresh == *it) ? 2 : 1;
    if (e.payload.owner.use_count() > owners) {
      lru_.splice(lru_.begin(), lru_, it);
      continue;
    }
    stats_.bytes -= e.payload.size;
    --stats_.entries;
    ++stats_.evictions;
    dead->push_back(std::move(e.payload));
    map_.erase(m);
    lru_.erase(it);
  }
}

bool PayloadCache::InUse(const CacheKey& key) const {
  std::lock_guard<std::mutex> g(mu_);
  auto it = map_.find(key);
  return it != map_.end() && (it->second.pins > 0 || it->second.payload.owner.use_count() > 1);
}

CacheStats PayloadCache::Stats() const {
  std::lock_guard<std::mutex> g(mu_);
  return stats_;
}

}  // namespace wombatkv
