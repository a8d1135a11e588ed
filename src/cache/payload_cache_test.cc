#include "cache/payload_cache.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace wombatkv
