#include "cache/huge_chunk.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace wombatkv {
namespace {

constexpr size_t k256K = 256 << 10;

// The VmFlags line of the mapping in /proc/self/smaps that contains `p`, or "" if none does.
std::string VmFlagsOf(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= addr && addr < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

// How many of the pages of [p, p + bytes) are resident; -1 if the range is not mapped.
int ResidentPages(const uint8_t* p, size_t bytes) {
  const size_t pages = bytes / 4096;
  std::vector<unsigned char> v(pages);
  if (::mincore(const_cast<uint8_t*>(p), bytes, v.data()) != 0) return errno == ENOMEM ? -1 : -2;
  int n = 0;
  for (unsigned char c : v) n += c & 1;
  return n;
}

TEST(HugeChunk, SlotsOnlyForSizesThatDivideAChunkWell) {
  EXPECT_EQ(SlotsPerHugeChunk(64 << 10), 32u);
  EXPECT_EQ(SlotsPerHugeChunk(k256K), 8u);
  EXPECT_EQ(SlotsPerHugeChunk(1 << 20), 2u);
  EXPECT_EQ(SlotsPerHugeChunk(600 << 10), 3u);  // 248 KiB left over: under an eighth
  EXPECT_EQ(SlotsPerHugeChunk(700 << 10), 0u);  // 648 KiB left over
  EXPECT_EQ(SlotsPerHugeChunk((1 << 20) + 4096), 0u);
  EXPECT_EQ(SlotsPerHugeChunk(kHugeChunkBytes), 0u);
  EXPECT_EQ(SlotsPerHugeChunk(0), 0u);
}

TEST(HugeChunk, NoSlotsThatWouldShareAPageWithASibling) {
  // A 64 KiB block read back with its 48-byte envelope header: 68 KiB after rounding to 4 KiB.
  EXPECT_EQ(SlotsPerHugeChunk(68 << 10, 4 << 10), 30u);
  // With 16 KiB pages a 68 KiB slot would end inside its sibling's first page (H1, H3).
  EXPECT_EQ(SlotsPerHugeChunk(68 << 10, 16 << 10), 0u);
  EXPECT_EQ(SlotsPerHugeChunk(64 << 10, 16 << 10), 32u);
  EXPECT_EQ(SlotsPerHugeChunk(k256K, 64 << 10), 8u);
  EXPECT_EQ(SlotsPerHugeChunk(192 << 10, 64 << 10), 10u);
  EXPECT_EQ(SlotsPerHugeChunk(k256K + (4 << 10), 64 << 10), 0u);
  EXPECT_EQ(SlotsPerHugeChunk(k256K, 0), 0u);
  EXPECT_EQ(SlotsPerHugeChunk(k256K), SlotsPerHugeChunk(k256K, SystemPageBytes()));
}

TEST(HugeChunk, SlotsTileOneAlignedChunkAdvisedForHugePages) {
  auto slots = CarveHugeChunk(k256K, 8);
  ASSERT_EQ(slots.size(), 8u);
  const uint8_t* base = slots[0]->data();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(base) % kHugeChunkBytes, 0u);
  for (size_t i = 0; i < slots.size(); ++i) {
    EXPECT_EQ(slots[i]->data(), base + i * k256K) << "slot " << i;
    EXPECT_EQ(slots[i]->size(), k256K);
    std::memset(slots[i]->data(), int(i), k256K);
  }
  for (size_t i = 0; i < slots.size(); ++i) EXPECT_EQ(slots[i]->data()[k256K - 1], uint8_t(i));
  // "hg": the mapping carries MADV_HUGEPAGE, whatever the host's THP setting makes of it.
  EXPECT_NE(VmFlagsOf(base).find(" hg"), std::string::npos) << VmFlagsOf(base);
}

TEST(HugeChunk, ASlotGoneWhileASiblingLivesGivesItsPagesBack) {
  auto slots = CarveHugeChunk(k256K, 8);
  ASSERT_EQ(slots.size(), 8u);
  const uint8_t* second = slots[1]->data();
  for (auto& s : slots) std::memset(s->data(), 7, k256K);
  ASSERT_EQ(ResidentPages(second, k256K), int(k256K / 4096));
  slots[1].reset();
  EXPECT_EQ(ResidentPages(second, k256K), 0) << "a dropped slot kept its memory";
  EXPECT_EQ(slots[0]->data()[0], 7);  // its siblings keep theirs
  EXPECT_EQ(slots[2]->data()[k256K - 1], 7);
}

TEST(HugeChunk, TheChunkIsUnmappedWithItsLastSlot) {
  auto slots = CarveHugeChunk(k256K, 8);
  ASSERT_EQ(slots.size(), 8u);
  const uint8_t* base = slots[0]->data();
  auto last = slots[5];
  slots.clear();
  EXPECT_GE(ResidentPages(base, kHugeChunkBytes), 0) << "unmapped while a slot lives";
  last.reset();
  EXPECT_EQ(ResidentPages(base, kHugeChunkBytes), -1) << "the chunk outlived its slots";
}

}  // namespace
}  // namespace wombatkv
