#include "store/meta_records.h"

#include <gtest/gtest.h>

namespace wombatkv::meta_records {
namespace {

layout::ChainHead Head() {
  layout::ChainHead h;
  h.ns = "n";
  h.fp.bytes.fill(1);
  h.chain_id.bytes.fill(2);
  h.version = 3;
  ChainEntry e;
  e.key.bytes.fill(4);
  e.hash.bytes.fill(5);
  e.length = 6;
  h.entries.push_back(e);
  return h;
}

TEST(MetaRecords, HeadRecordRoundTrips) {
  auto h = Head();
  const std::string key = HeadKey(h.ns, h.fp, h.chain_id);
  auto r = DecodeHeadRecord(key, EncodeHeadValue("etag-1", layout::EncodeChainHead(h)));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->etag, "etag-1");
  EXPECT_EQ(r->head.entries, h.entries);
}

TEST(MetaRecords, HeadUnderTheWrongKeyIsCorruption) {
  auto h = Head();
  ChainId other;
  other.bytes.fill(9);
  auto r = DecodeHeadRecord(HeadKey(h.ns, h.fp, other),
                            EncodeHeadValue("e", layout::EncodeChainHead(h)));
  EXPECT_EQ(r.status().code(), Code::kCorruption);
}

TEST(MetaRecords, TruncatedValueIsCorruption) {
  auto h = Head();
  const std::string key = HeadKey(h.ns, h.fp, h.chain_id);
  std::string v = EncodeHeadValue("etag", layout::EncodeChainHead(h));
  for (size_t n : {size_t{0}, size_t{1}, size_t{4}, v.size() - 1}) {
    EXPECT_EQ(DecodeHeadRecord(key, v.substr(0, n)).status().code(), Code::kCorruption) << n;
  }
}

TEST(MetaRecords, KeysOfNamespacesThatArePrefixesOfEachOtherDoNotCollide) {
  Fingerprint fp;
  ChainId id;
  EXPECT_NE(HeadKey("ab", fp, id).substr(0, 4), HeadKey("a", fp, id).substr(0, 4));
}

TEST(MetaRecords, UseAndOrphanRecordsRoundTripAndRejectBadShapes) {
  auto h = Head();
  auto u = DecodeUse(UseKey(h.ns, h.fp, h.chain_id), EncodeUse(123456));
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->ns, "n");
  EXPECT_EQ(u->fp, h.fp);
  EXPECT_EQ(u->chain_id, h.chain_id);
  EXPECT_EQ(u->tick, 123456u);
  EXPECT_EQ(DecodeUse(UseKey(h.ns, h.fp, h.chain_id), "abc").status().code(), Code::kCorruption);
  EXPECT_EQ(DecodeUse(HeadKey(h.ns, h.fp, h.chain_id), EncodeUse(1)).status().code(),
            Code::kCorruption);

  ContentHash hash;
  hash.bytes.fill(7);
  auto o = DecodeOrphan(OrphanKey("tenant", hash), EncodeOrphan(4144, 99));
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->ns, "tenant");
  EXPECT_EQ(o->hash, hash);
  EXPECT_EQ(o->bytes, 4144u);
  EXPECT_EQ(o->since_us, 99u);
  std::string key = OrphanKey("tenant", hash);
  EXPECT_EQ(DecodeOrphan(key.substr(0, key.size() - 1), EncodeOrphan(1, 1)).status().code(),
            Code::kCorruption);
  EXPECT_EQ(DecodeOrphan(OrphanKey("../x", hash), EncodeOrphan(1, 1)).status().code(),
            Code::kCorruption);
}

}  // namespace
}  // namespace wombatkv::meta_records
