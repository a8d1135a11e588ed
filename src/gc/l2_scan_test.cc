// The L2 scan sorts every key by the layout, pages through large listings, and reads heads into
// the states GC and the audit act on.
#include "gc/l2_scan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "layout/chain_head.h"
#include "layout/envelope.h"
#include "layout/object_keys.h"
#include "store/store_test_util.h"

namespace wombatkv::testing {
namespace {

const Fingerprint kFp = Fp(3);

ContentHash H(uint64_t i) {
  auto p = Payload(i, 16);
  return HashPayload(p);
}

void PutRaw(ObjectStore* l2, const std::string& key, std::string_view bytes = "x") {
  auto r = l2->Put(key, {AsBytes(bytes)}, PutOptions{});
  ASSERT_TRUE(r.ok()) << key << ": " << r.status().ToString();
}

std::string EncodedHead(std::string_view ns, const ChainId& id) {
  layout::ChainHead h;
  h.ns = std::string(ns);
  h.fp = kFp;
  h.chain_id = id;
  h.version = 1;
  h.entries = {ChainEntry{Key(1), H(1), 16}, ChainEntry{id, H(2), 16}};
  return layout::EncodeChainHead(h);
}

TEST(L2Scan, SortsEveryKeyByTheLayout) {
  auto l2 = NewMemObjectStore();
  const std::string blob = layout::BlobKey("kv", "default", H(1));
  const std::string head = layout::ChainKey("kv", "default", kFp, Key(2));
  const std::string sidecar = layout::SidecarKey("kv", "default", kFp, Key(2));
  const std::string lease = layout::EvictLeaseKey("kv", "default");  // no one's data: not a stray
  for (const std::string& k : {blob, head, sidecar, lease}) PutRaw(l2.get(), k);
  std::string upper = layout::BlobKey("kv", "default", H(2));
  for (size_t i = upper.size() - 40; i < upper.size(); ++i) {
    upper[i] = static_cast<char>(std::toupper(static_cast<unsigned char>(upper[i])));
  }
  const std::vector<std::string> strays_in_ns = {
      "kv/default/wombatkv/v1/junk",
      "kv/default/wombatkv/v2/blob/x",
      "kv/default/other",
      "kv/default/wombatkv/v1/lease/other",
      upper,
      "kv/default/wombatkv/v1/chain/" + kFp.ToHex() + "/short"};
  for (const std::string& k : strays_in_ns) PutRaw(l2.get(), k);
  const std::string top = "kv/loose-object";
  const std::string bad_ns = "kv/" + std::string(65, 'n') + "/wombatkv/v1/blob/" + H(1).ToHex();
  PutRaw(l2.get(), top);
  PutRaw(l2.get(), bad_ns);
  PutRaw(l2.get(), "elsewhere/not-under-the-prefix");

  std::vector<gc::NamespaceListing> listings;
  std::vector<std::string> loose;
  Status s = gc::ScanL2(
      l2.get(), "kv",
      [&](gc::NamespaceListing&& l) {
        listings.push_back(std::move(l));
        return Status::Ok();
      },
      [&](const ObjectInfo& o) { loose.push_back(o.key); });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(loose, std::vector<std::string>{top});
  ASSERT_EQ(listings.size(), 2u);
  const gc::NamespaceListing& ns = listings[0];  // "default" < "nnn…"
  const gc::NamespaceListing& bad = listings[1];
  EXPECT_FALSE(bad.ns_valid);
  ASSERT_EQ(bad.strays.size(), 1u);
  EXPECT_EQ(bad.strays[0].key, bad_ns);
  EXPECT_TRUE(ns.ns_valid);
  EXPECT_EQ(ns.ns, "default");
  ASSERT_EQ(ns.blobs.size(), 1u);
  EXPECT_EQ(ns.blobs[0].hash, H(1));
  ASSERT_EQ(ns.heads.size(), 1u);
  EXPECT_EQ(ns.heads[0].chain_id, Key(2));
  EXPECT_EQ(ns.heads[0].fp, kFp);
  ASSERT_EQ(ns.sidecars.size(), 1u);
  EXPECT_EQ(ns.sidecars[0].tip, Key(2));
  std::set<std::string> strays;
  for (const ObjectInfo& o : ns.strays) strays.insert(o.key);
  EXPECT_EQ(strays, std::set<std::string>(strays_in_ns.begin(), strays_in_ns.end()));
}

TEST(L2Scan, PagesThroughALargeNamespaceAndReportsProgress) {
  auto l2 = NewMemObjectStore();
  constexpr size_t kBlobs = 2500;
  for (size_t i = 0; i < kBlobs; ++i) PutRaw(l2.get(), layout::BlobKey("kv", "big", H(i)));
  std::vector<uint64_t> seen;
  size_t blobs = 0;
  Status s = gc::ScanL2(
      l2.get(), "kv",
      [&](gc::NamespaceListing&& l) {
        blobs += l.blobs.size();
        return Status::Ok();
      },
      nullptr, [&](const gc::ScanProgress& p) { seen.push_back(p.keys_listed); });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(blobs, kBlobs);
  ASSERT_GE(seen.size(), 3u);  // one report per page of at most 1000
  EXPECT_EQ(seen.back(), kBlobs);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
}

TEST(L2Scan, ReadHeadsTellsReadableUnreadableMisnamedAndGoneHeadsApart) {
  auto l2 = NewMemObjectStore();
  const ChainId good = Key(10), garbled = Key(11), misnamed = Key(12), gone = Key(13);
  PutRaw(l2.get(), layout::ChainKey("kv", "default", kFp, good), EncodedHead("default", good));
  std::string damaged = EncodedHead("default", garbled);
  damaged[damaged.size() / 2] ^= 0x40;
  PutRaw(l2.get(), layout::ChainKey("kv", "default", kFp, garbled), damaged);
  PutRaw(l2.get(), layout::ChainKey("kv", "default", kFp, misnamed), EncodedHead("default", good));
  PutRaw(l2.get(), layout::ChainKey("kv", "default", kFp, gone), EncodedHead("default", gone));
  auto heads = gc::ListHeads(l2.get(), "kv", "default");
  ASSERT_TRUE(heads.ok());
  ASSERT_EQ(heads->size(), 4u);
  ASSERT_TRUE(l2->Delete(layout::ChainKey("kv", "default", kFp, gone)).ok());
  auto executor = NewInlineExecutor();
  for (Executor* e : {static_cast<Executor*>(nullptr), executor.get()}) {
    auto reads = gc::ReadHeads(l2.get(), "default", *heads, e);
    ASSERT_TRUE(reads.ok()) << reads.status().ToString();
    using S = gc::HeadRead::State;
    auto of = [&](const ChainId& id) -> const gc::HeadRead& {  // listed in key order
      for (size_t i = 0; i < heads->size(); ++i) {
        if ((*heads)[i].chain_id == id) return (*reads)[i];
      }
      ADD_FAILURE() << "not listed";
      return (*reads)[0];
    };
    EXPECT_EQ(of(good).state, S::kOk);
    EXPECT_EQ(of(good).head->entries.size(), 2u);
    EXPECT_EQ(of(garbled).state, S::kUnreadable);
    EXPECT_EQ(of(garbled).error.code(), Code::kCorruption);
    EXPECT_EQ(of(misnamed).state, S::kOtherChain);
    EXPECT_NE(of(misnamed).error.message().find("describes another chain"), std::string::npos);
    EXPECT_EQ(of(gone).state, S::kGone);
  }
}

}  // namespace
}  // namespace wombatkv::testing
