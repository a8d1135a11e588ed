#include "layout/chain_head.h"

#include <gtest/gtest.h>

namespace wombatkv::layout {
namespace {

ChainHead Sample(size_t n) {
  ChainHead h;
  h.ns = "team-a";
  h.fp.bytes.fill(9);
  h.chain_id.bytes.fill(5);
  h.version = 42;
  h.published_us = 1700000000000000ull;
  for (size_t i = 0; i < n; ++i) {
    ChainEntry e;
    e.key.bytes.fill(static_cast<uint8_t>(i + 1));
    e.hash.bytes.fill(static_cast<uint8_t>(i + 100));
    e.length = static_cast<uint32_t>(1000 + i);
    h.entries.push_back(e);
  }
  return h;
}

TEST(ChainHead, EncodeDecodeRoundTrips) {
  ChainHead h = Sample(5);
  std::string bytes = EncodeChainHead(h);
  EXPECT_EQ(bytes.size(), 72 + h.ns.size() + 56 * 5 + 4);
  EXPECT_EQ(bytes.size(), ChainHeadBytes(h.ns.size(), 5));
  auto d = DecodeChainHead(AsBytes(bytes), "t");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->ns, h.ns);
  EXPECT_EQ(d->fp, h.fp);
  EXPECT_EQ(d->chain_id, h.chain_id);
  EXPECT_EQ(d->version, 42u);
  EXPECT_EQ(d->published_us, h.published_us);
  EXPECT_EQ(d->entries, h.entries);
}

TEST(ChainHead, GoldenBytesOfTheHeaderArePinned) {
  std::string bytes = EncodeChainHead(Sample(1));
  EXPECT_EQ(bytes.substr(0, 4), "WKH1");
  EXPECT_EQ(static_cast<uint8_t>(bytes[4]), 1);   // format version
  EXPECT_EQ(static_cast<uint8_t>(bytes[6]), 6);   // namespace length, little-endian
  EXPECT_EQ(static_cast<uint8_t>(bytes[52]), 42); // version, little-endian
  EXPECT_EQ(bytes.substr(72, 6), "team-a");
}

TEST(ChainHead, EveryFlippedByteIsDetected) {
  std::string good = EncodeChainHead(Sample(3));
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x10;
    EXPECT_EQ(DecodeChainHead(AsBytes(bad), "t").status().code(), Code::kCorruption) << i;
  }
}

TEST(ChainHead, TruncationIsDetected) {
  std::string good = EncodeChainHead(Sample(3));
  for (size_t n = 0; n < good.size(); n += 7) {
    EXPECT_FALSE(DecodeChainHead(AsBytes(good.substr(0, n)), "t").ok()) << n;
  }
}

}  // namespace
}  // namespace wombatkv::layout
