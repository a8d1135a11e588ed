#include "cache/buffer_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cache/payload_cache.h"

namespace wombatkv {
namespace {

constexpr size_t k256K = 256 << 10;

CacheKey K(uint8_t i) {
  CacheKey k;
  k.hash.bytes.fill(i);
  return k;
}

BufferSlice Slice(const std::shared_ptr<Buffer>& b) { return BufferSlice{b, b->data(), b->size()}; }

TEST(BufferPool, ReusesAReleasedBufferOfTheSameCapacity) {
  auto pool = BufferPool::Create(1 << 20);
  auto a = pool->Allocate(k256K);
  ASSERT_EQ(a->size(), k256K);
  const uint8_t* first = a->data();
  a.reset();
  EXPECT_EQ(pool->Stats().idle_bytes, k256K);
  auto b = pool->Allocate(k256K - 100);  // same 4 KiB-rounded capacity
  EXPECT_EQ(b->data(), first);
  EXPECT_EQ(b->size(), k256K - 100);
  EXPECT_EQ(pool->Stats().reused, 1u);
  EXPECT_EQ(pool->Stats().idle_bytes, 0u);
  // Another capacity does not take it.
  b.reset();
  auto c = pool->Allocate(k256K + 8192);
  EXPECT_NE(c->data(), first);
  EXPECT_EQ(pool->Stats().fresh, 2u);
}

TEST(BufferPool, NeverHandsOutABufferStillReferenced) {
  auto pool = BufferPool::Create(8 << 20);
  auto a = pool->Allocate(k256K);
  const uint8_t* first = a->data();
  BufferSlice borrow = Slice(a);  // a borrower co-owns the bytes
  a.reset();
  for (int i = 0; i < 4; ++i) {
    auto other = pool->Allocate(k256K);
    EXPECT_NE(other->data(), first) << "handed out memory a borrower still reads";
  }
  borrow = BufferSlice{};
  EXPECT_EQ(pool->Allocate(k256K)->data(), first);
}

TEST(BufferPool, FedByCacheEvictionOnlyOnceUnpinnedAndUnborrowed) {
  auto pool = BufferPool::Create(8 << 20);
  PayloadCache cache(k256K);  // room for one entry
  const uint8_t* pinned_bytes = nullptr;
  {
    auto b = pool->Allocate(k256K);
    pinned_bytes = b->data();
    cache.Insert(K(1), Slice(b), /*pin=*/true);
  }
  // Pinned (an upload in flight): over capacity, but neither evicted nor recycled.
  cache.Insert(K(2), Slice(pool->Allocate(k256K)), /*pin=*/false);
  auto fresh = pool->Allocate(k256K);
  EXPECT_NE(fresh->data(), pinned_bytes);
  fresh.reset();
  std::optional<BufferSlice> borrowed = cache.Lookup(K(1));
  ASSERT_TRUE(borrowed.has_value());
  cache.Unpin(K(1));  // evictable now, but borrowed
  cache.Insert(K(3), Slice(pool->Allocate(k256K)), /*pin=*/false);
  for (int i = 0; i < 3; ++i) {
    auto b = pool->Allocate(k256K);
    EXPECT_NE(b->data(), pinned_bytes) << "handed out memory that is borrowed";
  }
  borrowed.reset();
  // Whether K(1) left the cache already or leaves now, once it has gone its memory is reused.
  cache.Insert(K(4), Slice(pool->Allocate(k256K)), /*pin=*/false);
  auto k5 = pool->Allocate(k256K);
  bool reused = k5->data() == pinned_bytes;  // K(4)'s insert may have let it go already
  cache.Insert(K(5), Slice(k5), /*pin=*/false);
  k5.reset();
  EXPECT_FALSE(cache.Lookup(K(1)).has_value());
  std::vector<std::shared_ptr<Buffer>> held;
  // Every idle buffer is handed out before new memory (8 MiB of them at most): in whatever order
  // the cache let its entries go, K(1)'s comes back.
  for (int i = 0; i < 40 && !reused; ++i) {
    held.push_back(pool->Allocate(k256K));
    reused = held.back()->data() == pinned_bytes;
  }
  EXPECT_TRUE(reused);
}

TEST(BufferPool, IdleMemoryIsBounded) {
  auto pool = BufferPool::Create(2 * k256K);
  std::vector<std::shared_ptr<Buffer>> held;
  for (int i = 0; i < 5; ++i) held.push_back(pool->Allocate(k256K));
  held.clear();
  EXPECT_EQ(pool->Stats().idle_bytes, 2 * k256K);
  EXPECT_EQ(pool->Stats().dropped, 3u);
}

TEST(BufferPool, ACapacityThatDividesAHugePageIsCutFromOneChunk) {
  auto pool = BufferPool::Create(8 << 20);
  auto first = pool->Allocate(k256K);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first->data()) % (2 << 20), 0u);
  EXPECT_EQ(pool->Stats().chunks, 1u);
  EXPECT_EQ(pool->Stats().idle_bytes, 7 * k256K);  // its seven siblings wait, counted (P2)
  std::vector<std::shared_ptr<Buffer>> held;
  for (size_t i = 1; i < 8; ++i) {
    held.push_back(pool->Allocate(k256K - 100));
    EXPECT_EQ(held.back()->data(), first->data() + i * k256K) << "slot " << i;
  }
  EXPECT_EQ(pool->Stats().reused, 7u);
  EXPECT_EQ(pool->Stats().idle_bytes, 0u);
  held.push_back(pool->Allocate(k256K));  // the chunk is used up: a second one
  EXPECT_EQ(pool->Stats().chunks, 2u);
  EXPECT_EQ(pool->Stats().fresh, 2u);
}

TEST(BufferPool, CutsNoChunkWhoseSiblingsTheIdleBoundCannotHold) {
  auto pool = BufferPool::Create(1 << 20);  // room for 4 of 256 KiB, not 7
  auto a = pool->Allocate(k256K);
  EXPECT_EQ(pool->Stats().chunks, 0u);
  EXPECT_EQ(pool->Stats().idle_bytes, 0u);
  auto b = pool->Allocate(700 << 10);  // does not divide a chunk well: never cut
  EXPECT_EQ(pool->Stats().chunks, 0u);
  auto big = BufferPool::Create(64 << 20);
  auto c = big->Allocate(700 << 10);
  EXPECT_EQ(big->Stats().chunks, 0u);
  EXPECT_EQ(big->Stats().idle_bytes, 0u);
}

TEST(BufferPool, SmallSizesAreNotPooled) {
  auto pool = BufferPool::Create(1 << 20);
  auto a = pool->Allocate(BufferPool::kMinPooledBytes - 1);
  EXPECT_EQ(a->size(), BufferPool::kMinPooledBytes - 1);
  a.reset();
  EXPECT_EQ(pool->Stats().idle_bytes, 0u);
  EXPECT_EQ(pool->Stats().fresh, 0u);
}

TEST(BufferPool, BuffersOutliveThePoolHandle) {
  auto pool = BufferPool::Create(1 << 20);
  auto a = pool->Allocate(k256K);
  pool.reset();
  a->data()[0] = 1;
  a.reset();  // returns to a pool kept alive by the buffer itself, which then goes
}

// A payload read with its envelope's header: kept in a buffer of its own only when the shared
// one takes a quarter or more above what the payload alone would.
TEST(BufferPool, CompactGivesAPayloadMemoryOfItsOwnWhenItsBufferIsAQuarterLarger) {
  auto pool = BufferPool::Create(64 << 20);
  auto slice_after_header = [&](size_t payload) {
    auto b = pool->Allocate(payload + 48);
    for (size_t i = 0; i < b->size(); ++i) b->data()[i] = static_cast<uint8_t>(i * 7);
    const uint8_t* data = b->data() + 48;
    return BufferSlice{std::move(b), data, payload};
  };
  const BufferSlice two_mib = slice_after_header(2 << 20);  // 4 MiB of 2 MiB pages
  const BufferSlice own = pool->Compact(two_mib);
  EXPECT_NE(own.owner, two_mib.owner);
  EXPECT_EQ(own.owner->size(), size_t{2} << 20);
  EXPECT_EQ(own.size, two_mib.size);
  EXPECT_TRUE(std::equal(own.data, own.data + own.size, two_mib.data));
  const BufferSlice small = slice_after_header(64 << 10);  // 68 KiB for 64: kept
  EXPECT_EQ(pool->Compact(small).owner, small.owner);
  const BufferSlice large = slice_after_header(16 << 20);  // 18 MiB for 16: kept
  EXPECT_EQ(pool->Compact(large).owner, large.owner);
}

}  // namespace
}  // namespace wombatkv
