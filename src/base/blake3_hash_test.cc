#include "base/blake3_hash.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "base/hex.h"

namespace wombatkv {
namespace {

std::span<const uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// The official BLAKE3 test-vector input: byte i is i % 251.
std::vector<uint8_t> Pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i % 251);
  return v;
}

std::string Hex(std::span<const uint8_t> b) { return HexEncode(b); }

TEST(Blake3, OfEmptyInputMatchesTheOfficialVector) {
  EXPECT_EQ(Hex(Blake3({})), "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262");
}

TEST(Blake3, OfAbcMatchesTheKnownDigest) {
  EXPECT_EQ(Hex(Blake3(Bytes("abc"))),
            "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85");
}

TEST(Blake3, MultiChunkInputsMatchTheOfficialVectors) {
  // Lengths straddling the 1024-byte chunk boundary and several tree levels, so the SIMD
  // many-chunk paths of the library are exercised, not only the single-chunk compressor.
  struct Case {
    size_t len;
    const char* hex;
  };
  const Case cases[] = {
      {1, "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213"},
      {1023, "10108970eeda3eb932baac1428c7a2163b0e924c9a9e25b35bba72b28f70bd11"},
      {1024, "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7"},
      {1025, "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444"},
      {2049, "5f4d72f40d7a5f82b15ca2b2e44b1de3c2ef86c426c95c1af0b6879522563030"},
      {8193, "bab6c09cb8ce8cf459261398d2e7aef35700bf488116ceb94a36d0f5f1b7bc3b"},
      {31744, "62b6960e1a44bcc1eb1a611a8d6235b6b4b78f32e7abc4fb4c6cdcce94895c47"},
      {102400, "bc3e3d41a1146b069abffad3c0d44860cf664390afce4d9661f7902e7943e085"},
  };
  for (const Case& c : cases) {
    auto in = Pattern(c.len);
    EXPECT_EQ(Hex(Blake3(in)), c.hex) << "len " << c.len;
  }
}

TEST(Blake3Hasher, ExtendedOutputMatchesTheOfficialVector) {
  // 64 bytes of output for the 2049-byte pattern: the first 32 are the ordinary digest.
  auto in = Pattern(2049);
  Blake3Hasher h;
  h.Update(in);
  std::vector<uint8_t> out(64);
  h.Finalize(out);
  EXPECT_EQ(Hex(out),
            "5f4d72f40d7a5f82b15ca2b2e44b1de3c2ef86c426c95c1af0b6879522563030"
            "96de31d71d74103403822a2e0bc1eb193e7aecc9643a76b7bbc0c9f9c52e8783");
}

TEST(Blake3Hasher, ShortOutputIsAPrefixOfTheFullDigest) {
  auto in = Pattern(5000);
  auto full = Blake3(in);
  Blake3Hasher h;
  h.Update(in);
  std::vector<uint8_t> twenty(20);
  h.Finalize(twenty);
  EXPECT_EQ(Hex(twenty), Hex(std::span<const uint8_t>(full.data(), 20)));
}

TEST(Blake3Hasher, IncrementalUpdatesEqualOneShot) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<uint8_t> in(rng() % 20000);
    for (auto& b : in) b = static_cast<uint8_t>(rng());
    Blake3Hasher h;
    size_t pos = 0;
    while (pos < in.size()) {
      // Piece sizes from 0 up, so empty updates and chunk-straddling ones both happen.
      size_t piece = std::min<size_t>(in.size() - pos, rng() % 3000);
      h.Update(std::span<const uint8_t>(in.data() + pos, piece));
      pos += piece;
    }
    std::array<uint8_t, 32> out;
    h.Finalize(out);
    ASSERT_EQ(Hex(out), Hex(Blake3(in))) << "size " << in.size() << " trial " << trial;
  }
}

TEST(Blake3Hasher, FinalizeDoesNotConsumeTheState) {
  Blake3Hasher h;
  h.Update(Bytes("ab"));
  std::array<uint8_t, 32> first, second;
  h.Finalize(first);
  h.Finalize(second);
  EXPECT_EQ(first, second);
  h.Update(Bytes("c"));  // hashing continues after a Finalize
  h.Finalize(second);
  EXPECT_EQ(Hex(second), "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85");
}

}  // namespace
}  // namespace wombatkv
