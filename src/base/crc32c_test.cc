#include "base/crc32c.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string_view>
#include <vector>

namespace wombatkv {
namespace {

// A bit-at-a-time CRC32C written straight from the definition: an oracle that shares no tables
// or tricks with either implementation under test.
uint32_t Crc32cBitwise(uint32_t crc, const uint8_t* p, size_t n) {
  uint32_t c = ~crc;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
  }
  return ~c;
}

std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

using CrcFn = uint32_t (*)(uint32_t, const uint8_t*, size_t);

// The dispatch (Crc32cAppend picks by size and CPU) and every implementation this CPU can run,
// each called on its own.
std::vector<std::pair<std::string_view, CrcFn>> Paths() {
  std::vector<std::pair<std::string_view, CrcFn>> paths = {{"dispatch", &Crc32cAppend},
                                                           {"portable", &Crc32cAppendPortable}};
  if (Crc32cHardwareAvailable()) paths.push_back({"crc32 instruction", &Crc32cAppendInstruction});
  if (Crc32cFoldingAvailable()) paths.push_back({"folding", &Crc32cAppendFolding});
  return paths;
}

struct Vector {
  std::vector<uint8_t> data;
  uint32_t crc;
};

// RFC 3720 (iSCSI) appendix B.4 vectors plus the classic check value.
std::vector<Vector> StandardVectors() {
  std::vector<Vector> v;
  std::string_view check = "123456789";
  v.push_back({std::vector<uint8_t>(check.begin(), check.end()), 0xE3069283u});
  v.push_back({std::vector<uint8_t>(32, 0x00), 0x8A9136AAu});
  v.push_back({std::vector<uint8_t>(32, 0xFF), 0x62A8AB43u});
  std::vector<uint8_t> asc(32), desc(32);
  for (int i = 0; i < 32; ++i) {
    asc[i] = static_cast<uint8_t>(i);
    desc[i] = static_cast<uint8_t>(31 - i);
  }
  v.push_back({asc, 0x46DD794Eu});
  v.push_back({desc, 0x113FDB5Cu});
  return v;
}

TEST(Crc32c, MatchesStandardVectorsOnEveryPath) {
  auto paths = Paths();
  paths.push_back({"bitwise", &Crc32cBitwise});
  for (auto [name, fn] : paths) {
    for (const Vector& v : StandardVectors()) {
      EXPECT_EQ(fn(0, v.data.data(), v.data.size()), v.crc) << name;
    }
  }
  const std::vector<uint8_t> check = StandardVectors()[0].data;
  EXPECT_EQ(Crc32c(check), 0xE3069283u);
  EXPECT_EQ(Crc32c(check.data(), check.size()), 0xE3069283u);
}

TEST(Crc32c, OfEmptyInputIsZero) {
  EXPECT_EQ(Crc32c(nullptr, 0), 0u);
  EXPECT_EQ(Crc32c(std::span<const uint8_t>()), 0u);
  EXPECT_EQ(Crc32cAppendPortable(0, nullptr, 0), 0u);
}

TEST(Crc32c, AppendingNothingLeavesTheCrcUnchanged) {
  EXPECT_EQ(Crc32cAppend(0xE3069283u, nullptr, 0), 0xE3069283u);
  EXPECT_EQ(Crc32cAppendPortable(0xE3069283u, nullptr, 0), 0xE3069283u);
}

TEST(Crc32c, AppendToZeroEqualsOneShot) {
  std::mt19937_64 rng(1);
  auto data = RandomBytes(rng, 5000);
  EXPECT_EQ(Crc32cAppend(0, data.data(), data.size()), Crc32c(data));
  EXPECT_EQ(Crc32c(data), Crc32cBitwise(0, data.data(), data.size()));
}

TEST(Crc32c, AppendInPiecesEqualsOneCall) {
  std::vector<uint8_t> check = StandardVectors()[0].data;
  uint32_t crc = 0;
  for (uint8_t b : check) crc = Crc32cAppend(crc, &b, 1);
  EXPECT_EQ(crc, 0xE3069283u);

  std::mt19937_64 rng(2);
  for (int trial = 0; trial < 200; ++trial) {
    auto data = RandomBytes(rng, rng() % 100001);
    const uint32_t whole = Crc32c(data);
    // Up to four random split points, so pieces of every size (including empty) occur.
    std::vector<size_t> cuts = {0, data.size()};
    for (int i = 0; i < 3; ++i) cuts.push_back(data.empty() ? 0 : rng() % (data.size() + 1));
    std::sort(cuts.begin(), cuts.end());
    uint32_t hw = 0, portable = 0;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      hw = Crc32cAppend(hw, data.data() + cuts[i], cuts[i + 1] - cuts[i]);
      portable = Crc32cAppendPortable(portable, data.data() + cuts[i], cuts[i + 1] - cuts[i]);
    }
    ASSERT_EQ(hw, whole) << "size " << data.size() << " trial " << trial;
    ASSERT_EQ(portable, whole) << "size " << data.size() << " trial " << trial;
  }
}

TEST(Crc32c, CombineEqualsAppendingTheBytes) {
  std::mt19937_64 rng(7);
  std::vector<uint8_t> data(300000);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  for (size_t a_len : {size_t{0}, size_t{1}, size_t{37}, size_t{4096}}) {
    for (size_t b_len : {size_t{0}, size_t{1}, size_t{8}, size_t{1000}, size_t{65536 + 13},
                         size_t{290000}}) {
      const uint8_t* a = data.data();
      const uint8_t* b = data.data() + a_len;
      EXPECT_EQ(Crc32cCombine(Crc32c(a, a_len), Crc32c(b, b_len), b_len),
                Crc32cAppend(Crc32c(a, a_len), b, b_len))
          << a_len << " + " << b_len;
    }
  }
}

TEST(Crc32c, LengthsAroundStreamBlockBoundariesAgreeWithTheDefinition) {
  // The crc32 instruction's path changes strategy at multiples of 3 * 256 and 3 * 8192 bytes
  // and after the 8-byte alignment prologue; probe just below, at and above each of those edges.
  std::mt19937_64 rng(5);
  auto data = RandomBytes(rng, 4 * 3 * 8192 + 64);
  for (size_t edge : {size_t{8}, size_t{3 * 256}, size_t{2 * 3 * 256}, size_t{3 * 8192},
                      size_t{2 * 3 * 8192}, size_t{3 * 8192 + 3 * 256}}) {
    for (size_t n = edge - 8; n <= edge + 8; ++n) {
      for (size_t offset = 0; offset < 8; ++offset) {
        const uint8_t* p = data.data() + offset;
        for (auto [name, fn] : Paths()) {
          ASSERT_EQ(fn(0, p, n), Crc32cBitwise(0, p, n))
              << name << ": n " << n << " off " << offset;
        }
      }
    }
  }
}

TEST(Crc32c, MisalignedStartsGiveTheSameCrcAsAlignedCopies) {
  std::mt19937_64 rng(6);
  for (size_t n : {size_t{1}, size_t{7}, size_t{9}, size_t{100}, size_t{777}, size_t{5000},
                   size_t{3 * 8192 + 13}, size_t{70001}}) {
    auto data = RandomBytes(rng, n);
    const uint32_t expect = Crc32cBitwise(0, data.data(), n);
    // Copy the same bytes to every offset 0..15 of a fresh buffer: the crc must not depend on
    // where in memory the input starts.
    std::vector<uint8_t> buf(n + 16);
    for (size_t offset = 0; offset < 16; ++offset) {
      std::memcpy(buf.data() + offset, data.data(), n);
      ASSERT_EQ(Crc32cAppend(0, buf.data() + offset, n), expect) << "n " << n << " off " << offset;
      ASSERT_EQ(Crc32cAppendPortable(0, buf.data() + offset, n), expect)
          << "n " << n << " off " << offset;
    }
  }
}

TEST(Crc32c, EachPathAgreesWithTheDefinitionAroundTheFoldingEdges) {
  // Folding takes 256 bytes per step in four registers, then 64, then 16, then the crc32
  // instruction; it starts at 256 bytes. Probe each edge with every start offset in a cache line
  // and a nonzero starting crc, on every path (so that the folding is checked on its own too).
  std::mt19937_64 rng(8);
  auto data = RandomBytes(rng, 4096 + 64);
  for (auto [name, fn] : Paths()) {
    for (size_t edge : {size_t{16}, size_t{64}, size_t{256}, size_t{320}, size_t{512},
                        size_t{256 + 64 + 16}, size_t{1024}, size_t{4096 - 8}}) {
      for (size_t n = edge - 9; n <= edge + 9; ++n) {
        for (size_t offset = 0; offset < 64; offset += 7) {
          const uint8_t* p = data.data() + offset;
          const auto seed = static_cast<uint32_t>(rng());
          ASSERT_EQ(fn(seed, p, n), Crc32cBitwise(seed, p, n))
              << name << ": n " << n << " off " << offset;
        }
      }
    }
  }
}

TEST(Crc32c, EachPathAgreesWithTheDefinitionOnRandomLengths) {
  // With a nonzero starting crc too; the dispatch and the portable path agreeing here is what
  // makes the hardware paths interchangeable with the portable one.
  std::mt19937_64 rng(9);
  auto data = RandomBytes(rng, 300'064);
  for (auto [name, fn] : Paths()) {
    for (int trial = 0; trial < 40; ++trial) {
      const size_t n = rng() % 300'001;
      const size_t offset = rng() % 64;
      const auto seed = static_cast<uint32_t>(rng());
      ASSERT_EQ(fn(seed, data.data() + offset, n), Crc32cBitwise(seed, data.data() + offset, n))
          << name << ": n " << n << " off " << offset;
    }
  }
}

TEST(Crc32c, DetectsEverySingleBitFlip) {
  std::mt19937_64 rng(7);
  auto data = RandomBytes(rng, 3 * 8192 + 100);  // long enough to cross every path
  const uint32_t good = Crc32c(data);
  for (size_t i = 0; i < data.size(); i += 97) {
    data[i] ^= static_cast<uint8_t>(1u << (i % 8));
    ASSERT_NE(Crc32c(data), good) << "flip at byte " << i;
    ASSERT_NE(Crc32cAppendPortable(0, data.data(), data.size()), good) << "flip at byte " << i;
    data[i] ^= static_cast<uint8_t>(1u << (i % 8));
  }
  EXPECT_EQ(Crc32c(data), good);
}

}  // namespace
}  // namespace wombatkv
