#include "layout/object_keys.h"

#include <gtest/gtest.h>

#include "wombatkv/object_store.h"

namespace wombatkv::layout {
namespace {

TEST(ObjectKeys, NamesFollowTheDocumentedLayout) {
  ContentHash h;
  h.bytes.fill(0xab);
  Fingerprint fp;
  fp.bytes.fill(0x01);
  ChainId id;
  id.bytes.fill(0x02);
  EXPECT_EQ(BlobKey("kv", "ns", h), "kv/ns/wombatkv/v1/blob/" + h.ToHex());
  EXPECT_EQ(ChainKey("kv", "ns", fp, id), "kv/ns/wombatkv/v1/chain/" + fp.ToHex() + "/" + id.ToHex());
  EXPECT_EQ(SidecarKey("kv", "ns", fp, id), "kv/ns/wombatkv/v1/sidecar/" + fp.ToHex() + "/" + id.ToHex());
  EXPECT_TRUE(ValidateObjectKey(ChainKey("team/kv", "ns", fp, id)).ok());
}

TEST(ObjectKeys, ChainKeysParseBackAndOthersDoNot) {
  Fingerprint fp;
  fp.bytes.fill(0x0c);
  ChainId id;
  id.bytes.fill(0xfe);
  const std::string prefix = ChainsPrefix("kv", "ns");
  auto parsed = ParseChainKey(prefix, ChainKey("kv", "ns", fp, id));
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->fp, fp);
  EXPECT_EQ(parsed->chain_id, id);
  EXPECT_FALSE(ParseChainKey(prefix, prefix + "zz/" + id.ToHex()).has_value());
  EXPECT_FALSE(ParseChainKey(prefix, prefix + fp.ToHex() + "/" + id.ToHex() + "0").has_value());
  EXPECT_FALSE(ParseChainKey(prefix, "other/" + fp.ToHex()).has_value());
}

TEST(ObjectKeys, BlobAndSidecarKeysParseBackAndOthersDoNot) {
  ContentHash h;
  h.bytes.fill(0xcd);
  Fingerprint fp;
  fp.bytes.fill(0x03);
  BlockKey tip;
  tip.bytes.fill(0x04);
  const std::string blobs = BlobsPrefix("kv", "ns");
  EXPECT_EQ(blobs, "kv/ns/wombatkv/v1/blob/");
  EXPECT_EQ(ParseBlobKey(blobs, BlobKey("kv", "ns", h)), h);
  EXPECT_FALSE(ParseBlobKey(blobs, BlobKey("kv", "ns", h) + "0"));
  EXPECT_FALSE(ParseBlobKey(blobs, blobs + std::string(40, 'g')));
  EXPECT_FALSE(ParseBlobKey(blobs, BlobKey("kv", "other", h)));
  const std::string sidecars = SidecarsPrefix("kv", "ns");
  auto sc = ParseSidecarKey(sidecars, SidecarKey("kv", "ns", fp, tip));
  ASSERT_TRUE(sc.has_value());
  EXPECT_EQ(sc->fp, fp);
  EXPECT_EQ(sc->tip, tip);
  EXPECT_FALSE(ParseSidecarKey(sidecars, sidecars + fp.ToHex() + "/" + tip.ToHex().substr(1)));
  EXPECT_FALSE(ParseSidecarKey(sidecars, ChainKey("kv", "ns", fp, tip)));
}

TEST(ObjectKeys, PrefixMustBeSafeSegments) {
  EXPECT_TRUE(ValidateL2Prefix("kv").ok());
  EXPECT_TRUE(ValidateL2Prefix("team-1/kv.v2").ok());
  for (const char* bad : {"", "/kv", "kv/", "a//b", "..", "kv/../x", "k v"}) {
    EXPECT_EQ(ValidateL2Prefix(bad).code(), Code::kInvalidArgument) << bad;
  }
}

TEST(ObjectKeys, NamespaceDirectoriesParse) {
  EXPECT_EQ(ParseNamespaceDir("kv", "kv/tenant/").value(), "tenant");
  EXPECT_FALSE(ParseNamespaceDir("kv", "kv/../").has_value());
  EXPECT_FALSE(ParseNamespaceDir("kv", "other/tenant/").has_value());
}

}  // namespace
}  // namespace wombatkv::layout
