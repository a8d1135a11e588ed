#include "transport/shm/region_allocator.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace wombatkv::shm {
namespace {

TEST(RegionAllocator, FirstFitReusesTheLowestFreedRegion) {
  RegionAllocator a(4096);
  auto x = a.Allocate(100);
  auto y = a.Allocate(64);
  ASSERT_TRUE(x && y);
  EXPECT_EQ(*x, 0u);
  EXPECT_EQ(*y, 128u);  // 100 rounded up to 128
  a.Free(*x, 100);
  EXPECT_EQ(*a.Allocate(1), 0u);  // the warm start of the area again
}

TEST(RegionAllocator, RefusesWhatDoesNotFitAndCoalescesOnFree) {
  RegionAllocator a(1024);
  auto x = a.Allocate(512);
  auto y = a.Allocate(512);
  ASSERT_TRUE(x && y);
  EXPECT_FALSE(a.Allocate(1).has_value());
  a.Free(*x, 512);
  EXPECT_FALSE(a.Allocate(513).has_value());
  a.Free(*y, 512);
  EXPECT_EQ(a.fragments(), 1u);
  EXPECT_EQ(*a.Allocate(1024), 0u);
  EXPECT_FALSE(a.Allocate(UINT64_MAX).has_value());
}

TEST(RegionAllocator, RandomAllocationsNeverOverlap) {
  RegionAllocator a(1 << 20);
  std::mt19937_64 rng(42);
  std::map<uint64_t, uint64_t> live;
  for (int i = 0; i < 20000; ++i) {
    if (live.empty() || rng() % 3 != 0) {
      const uint64_t n = 1 + rng() % 20000;
      auto off = a.Allocate(n);
      if (!off) continue;
      auto next = live.lower_bound(*off);
      if (next != live.end()) {
        ASSERT_LE(*off + n, next->first);
      }
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second, *off);
      }
      live.emplace(*off, n);
    } else {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      a.Free(it->first, it->second);
      live.erase(it);
    }
  }
  for (auto& [off, n] : live) a.Free(off, n);
  EXPECT_EQ(a.free_bytes(), a.capacity());
  EXPECT_EQ(a.fragments(), 1u);
}

TEST(RegionAllocatorDeathTest, DoubleFreeIsCaught) {
  RegionAllocator a(4096);
  auto x = a.Allocate(64);
  ASSERT_TRUE(x);
  a.Free(*x, 64);
  EXPECT_DEATH(a.Free(*x, 64), "");
}

}  // namespace
}  // namespace wombatkv::shm
