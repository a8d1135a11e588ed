#include "transport/shm/region_allocator.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <random>
#include <vector>

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

// The linear first fit this allocator replaced, as a model: same calls, same offsets.
class FirstFitModel {
 public:
  explicit FirstFitModel(uint64_t capacity) { free_[0] = capacity; }
  std::optional<uint64_t> Allocate(uint64_t bytes) {
    const uint64_t n = RegionAllocator::Rounded(bytes);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < n) continue;
      const auto [offset, length] = *it;
      free_.erase(it);
      if (length > n) free_[offset + n] = length - n;
      return offset;
    }
    return std::nullopt;
  }
  void Free(uint64_t offset, uint64_t bytes) {
    uint64_t start = offset, length = RegionAllocator::Rounded(bytes);
    auto next = free_.lower_bound(offset);
    if (next != free_.begin() && std::prev(next)->first + std::prev(next)->second == offset) {
      start = std::prev(next)->first;
      length += std::prev(next)->second;
      free_.erase(std::prev(next));
    }
    if (next != free_.end() && next->first == offset + RegionAllocator::Rounded(bytes)) {
      length += next->second;
      free_.erase(next);
    }
    free_[start] = length;
  }
  size_t fragments() const { return free_.size(); }

 private:
  std::map<uint64_t, uint64_t> free_;
};

TEST(RegionAllocator, GivesTheOffsetsOfALinearFirstFit) {
  // Mixed sizes, frees in random order (as a cache evicts): every answer, success or not, and
  // the number of free extents match the linear scan's.
  constexpr uint64_t kCapacity = 64 << 20;
  RegionAllocator a(kCapacity);
  FirstFitModel model(kCapacity);
  std::mt19937_64 rng(7);
  std::vector<std::pair<uint64_t, uint64_t>> live;
  for (int i = 0; i < 50000; ++i) {
    if (live.empty() || rng() % 5 < 3) {
      const uint64_t sizes[] = {1, 100, 4096, 65536, 262144, 2 << 20};
      const uint64_t n = sizes[rng() % 6] + rng() % 64;
      const auto got = a.Allocate(n);
      ASSERT_EQ(got, model.Allocate(n)) << "call " << i << ", " << n << " bytes";
      if (got) live.emplace_back(*got, n);
    } else {
      const size_t k = rng() % live.size();
      a.Free(live[k].first, live[k].second);
      model.Free(live[k].first, live[k].second);
      live[k] = live.back();
      live.pop_back();
    }
    ASSERT_EQ(a.fragments(), model.fragments()) << "call " << i;
  }
}

TEST(RegionAllocator, AnAllocationDoesNotLookAtEveryHoleBelowTheFirstFit) {
  // 20,000 64-byte holes between live regions, then a request only the tail fits: a scan in
  // offset order would look at all of them.
  constexpr int kHoles = 20000;
  RegionAllocator a(uint64_t{4} << 20);
  std::vector<uint64_t> offsets;
  for (int i = 0; i < 2 * kHoles; ++i) offsets.push_back(*a.Allocate(64));
  for (int i = 0; i < 2 * kHoles; i += 2) a.Free(offsets[i], 64);
  ASSERT_EQ(a.fragments(), size_t{kHoles} + 1);
  const uint64_t before = a.looks();
  const auto big = a.Allocate(1 << 20);
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(*big, uint64_t{2 * kHoles} * 64);
  EXPECT_LE(a.looks() - before, 100u);  // expected depth ~2 ln(20,000) = 20
  EXPECT_EQ(*a.Allocate(1), 0u);        // and the lowest hole is still found first
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
