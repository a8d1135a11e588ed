#include "index/compact_etag.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "object/object_key.h"

namespace wombatkv {
namespace {

void ExpectPacked(const std::string& etag) {
  SCOPED_TRACE(etag);
  auto c = CompactEtag::Encode(etag);
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->spilled());
  EXPECT_EQ(c->Decode(), etag);
}

TEST(CompactEtag, PacksTheShapesOurObjectStoresHandOut) {
  ExpectPacked("9b2cf535f27731c974343645a3985328");      // S3 / radosgw (quotes stripped)
  ExpectPacked("\"9b2cf535f27731c974343645a3985328\"");  // as some servers send it
  // The local L2: loose files (inode, mtime in ns, size) and packed objects (id, mtime in µs,
  // size), with the fields far past what they hold in practice (a 4-billionth file or object,
  // packed objects of up to 2 MiB).
  ExpectPacked(HexEtag("", 0x2f41a3, 0x187b2a3c4d5e6f70, 0x40020));
  ExpectPacked(HexEtag("", UINT32_MAX, INT64_MAX, 0x200020));
  ExpectPacked(HexEtag("p", 0x1a2b, 0x61a2b3c4d5e6f, 0x1c3));
  ExpectPacked(HexEtag("p", UINT32_MAX, 0xffffffffffffff, 0x1fffff));
  ExpectPacked("mem-1234567");  // the in-memory store
  ExpectPacked("");
  ExpectPacked("0");
}

TEST(CompactEtag, RefusesWhatItCannotGiveBackExactly) {
  // Too long for any form: the caller spills these.
  EXPECT_FALSE(CompactEtag::Encode("9B2CF535F27731C974343645A3985328").has_value());  // upper
  EXPECT_FALSE(CompactEtag::Encode("9b2cf535f27731c974343645a3985328-12").has_value());
  EXPECT_FALSE(CompactEtag::Encode(std::string(19, 'x')).has_value());
  // Shapes a packed form would not give back byte for byte fall through to the raw form.
  for (const char* e : {"0012-3", "p-1", "1--2", "-", "fffffffffffffffff", "\"ab"}) {
    SCOPED_TRACE(e);
    auto c = CompactEtag::Encode(e);
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(c->Decode(), e);
  }
}

TEST(CompactEtag, AnyStringEitherRoundTripsOrIsRefused) {
  std::mt19937_64 rng(7);
  const std::string alphabet("0123456789abcdef-pqzAF\"\x00\xff", 25);
  size_t packed = 0;
  for (int i = 0; i < 200'000; ++i) {
    std::string s(rng() % 48, '0');
    for (char& ch : s) ch = alphabet[rng() % (rng() % 4 == 0 ? alphabet.size() : 17)];
    auto c = CompactEtag::Encode(s);
    if (!c) continue;
    ++packed;
    ASSERT_FALSE(c->spilled());
    ASSERT_EQ(c->Decode(), s);
  }
  EXPECT_GT(packed, 10'000u);  // the property was exercised, not vacuous
}

TEST(CompactEtag, SpilledKeepsItsIndex) {
  const CompactEtag c = CompactEtag::Spilled(0xdeadbeef);
  EXPECT_TRUE(c.spilled());
  EXPECT_EQ(c.spill_index(), 0xdeadbeefu);
}

}  // namespace
}  // namespace wombatkv
