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

}  // namespace
}  // namespace wombatkv::meta_records
