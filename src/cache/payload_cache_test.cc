#include "cache/payload_cache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <future>
#include <thread>

namespace wombatkv {
namespace {

CacheKey K(uint8_t i, uint32_t ns = 0) {
  CacheKey k;
  k.ns_id = ns;
  k.hash.bytes.fill(i);
  return k;
}

BufferSlice Bytes(size_t n) {
  auto b = Buffer::Allocate(n);
  return BufferSlice{b, b->data(), n};
}

TEST(PayloadCache, EvictsLeastRecentlyUsedBeyondCapacity) {
  PayloadCache c(300);
  c.Insert(K(1), Bytes(100), false);
  c.Insert(K(2), Bytes(100), false);
  c.Insert(K(3), Bytes(100), false);
  ASSERT_TRUE(c.Lookup(K(1)).has_value());  // 1 is now most recent
  c.Insert(K(4), Bytes(100), false);
  EXPECT_FALSE(c.Lookup(K(2)).has_value());
  EXPECT_TRUE(c.Lookup(K(1)).has_value());
  EXPECT_EQ(c.Stats().bytes, 300u);
  EXPECT_EQ(c.Stats().evictions, 1u);
}

TEST(PayloadCache, PinnedEntriesAreNeverEvicted) {
  PayloadCache c(100);
  c.Insert(K(1), Bytes(100), /*pin=*/true);
  c.Insert(K(2), Bytes(100), false);
  EXPECT_TRUE(c.Lookup(K(1)).has_value());
  EXPECT_FALSE(c.Lookup(K(2)).has_value());
  c.Unpin(K(1));
  c.Insert(K(3), Bytes(100), false);
  EXPECT_FALSE(c.Lookup(K(1)).has_value());
}

CacheKey Numbered(uint32_t i) {
  CacheKey k;
  k.hash.bytes.fill(0);
  std::memcpy(k.hash.bytes.data(), &i, sizeof i);
  return k;
}

// C4: a cache over its capacity with uploads in flight (pinned entries) evicts without walking
// past them, so each insert looks at O(1) entries however many are pinned; once unpinned they are
// the most recent and go in LRU order. (With pinned entries on the LRU list, each insert looked at
// every one of them: 1000 × 1000 looks here.)
TEST(PayloadCache, EvictionDoesNotWalkPastPinnedEntries) {
  PayloadCache c(100 * 100);
  constexpr uint32_t kPinned = 1000;
  for (uint32_t i = 0; i < kPinned; ++i) c.Insert(Numbered(i), Bytes(100), /*pin=*/true);
  for (uint32_t i = kPinned; i < 2 * kPinned; ++i) {
    c.Insert(Numbered(i), Bytes(100), false);
    // A lookup of a pinned entry is a use that must leave it pinned and off the LRU list.
    ASSERT_TRUE(c.Lookup(Numbered(i % kPinned)).has_value());
  }
  CacheStats s = c.Stats();
  EXPECT_EQ(s.pinned_bytes, kPinned * 100u);
  EXPECT_EQ(s.bytes, kPinned * 100u);  // every unpinned entry went: the pinned ones fill it
  EXPECT_EQ(s.evictions, kPinned);
  EXPECT_LE(s.eviction_looks, 2u * kPinned);
  for (uint32_t i = 0; i < kPinned; ++i) ASSERT_TRUE(c.Lookup(Numbered(i)).has_value());
  // Unpinned one by one while the rest still fill the cache, each goes at once (it is the only
  // evictable entry); the last 100 fit.
  for (uint32_t i = 0; i < kPinned; ++i) c.Unpin(Numbered(i));
  EXPECT_EQ(c.Stats().bytes, 100u * 100u);
  for (uint32_t i = 0; i < kPinned; ++i) {
    EXPECT_EQ(c.Lookup(Numbered(i)).has_value(), i >= kPinned - 100) << i;
  }
}

TEST(PayloadCache, BorrowedEntriesAreNotEvictedAndStayValid) {
  PayloadCache c(100);
  c.Insert(K(1), Bytes(100), false);
  auto borrowed = c.Lookup(K(1));
  ASSERT_TRUE(borrowed.has_value());
  c.Insert(K(2), Bytes(100), false);  // over capacity, but 1 is borrowed: 2 goes instead
  EXPECT_TRUE(c.Lookup(K(1)).has_value());
  EXPECT_FALSE(c.Lookup(K(2)).has_value());
  EXPECT_EQ(c.Stats().bytes, 100u);
  borrowed.reset();
  c.Insert(K(3), Bytes(50), false);  // 1 is no longer borrowed and is least recent
  EXPECT_FALSE(c.Lookup(K(1)).has_value());
  EXPECT_EQ(c.Stats().bytes, 50u);
}

TEST(PayloadCache, InUseMeansPinnedOrBorrowed) {
  PayloadCache c(1000);
  c.Insert(K(1), Bytes(10), /*pin=*/true);
  (void)c.Insert(K(2), Bytes(10), /*pin=*/false);
  EXPECT_TRUE(c.InUse(K(1)));
  EXPECT_FALSE(c.InUse(K(2)));
  EXPECT_FALSE(c.InUse(K(3)));  // a miss
  {
    std::optional<BufferSlice> lent = c.Lookup(K(2));
    ASSERT_TRUE(lent.has_value());
    EXPECT_TRUE(c.InUse(K(2)));
  }
  EXPECT_FALSE(c.InUse(K(2)));
  c.Unpin(K(1));
  EXPECT_FALSE(c.InUse(K(1)));
}

TEST(PayloadCache, NamespacesAreSeparateKeys) {
  PayloadCache c(1000);
  c.Insert(K(1, 0), Bytes(10), false);
  EXPECT_FALSE(c.Lookup(K(1, 1)).has_value());
  EXPECT_TRUE(c.Lookup(K(1, 0)).has_value());
}

TEST(PayloadCache, InsertOfAnExistingKeyKeepsOneCopy) {
  PayloadCache c(1000);
  auto a = c.Insert(K(1), Bytes(10), false);
  auto b = c.Insert(K(1), Bytes(10), false);
  EXPECT_EQ(a.data, b.data);
  EXPECT_EQ(c.Stats().entries, 1u);
}

// An evicted buffer is let go after the cache's mutex: freeing a large one (munmap, a pool's lock,
// huge pages given back) held every get, put and unpin of every tenant meanwhile. Here the
// release of an evicted buffer asks another thread to read the cache's stats, which needs the
// mutex: under it, that thread could not answer (given ten seconds) until the release returned.
TEST(PayloadCache, AnEvictedBufferIsFreedOutsideTheMutex) {
  PayloadCache c(100);
  std::future<void> answered;
  bool answered_during_release = false;
  static uint8_t bytes[100];
  auto adopted = Buffer::Adopt(bytes, sizeof bytes, [&] {
    auto done = std::make_shared<std::promise<void>>();
    answered = done->get_future();
    std::thread([&c, done] {
      (void)c.Stats();
      done->set_value();
    }).detach();
    answered_during_release =
        answered.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  });
  c.Insert(K(1), BufferSlice{adopted, adopted->data(), adopted->size()}, false);
  adopted.reset();
  c.Insert(K(2), Bytes(100), false);  // evicts K(1), the last owner of its buffer
  ASSERT_TRUE(answered.valid()) << "K(1)'s buffer was not released";
  answered.wait();
  EXPECT_TRUE(answered_during_release) << "the buffer was freed under the cache's mutex";
  EXPECT_EQ(c.Stats().evictions, 1u);
}

}  // namespace
}  // namespace wombatkv
