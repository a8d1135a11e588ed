// A key that two chains publish with different bytes (a nondeterministic kernel computed the same
// block twice): L0 serves the bytes of the newest publish through it, after a restart, a refresh
// that learns an older head late, and a chain leaving (RadixIndex I8; bug 17, docs/testing.md).
#include <cstring>
#include <string>
#include <vector>

#include "layout/object_keys.h"
#include "store/store_test_util.h"

namespace wombatkv::testing {
namespace {

const Fingerprint kFp = Fp(3);
constexpr char kNs[] = "default";

// X = [R, K] and Y = [R, K, T]: R has the same bytes in both, K other bytes in each.
struct SharedKey {
  explicit SharedKey(uint64_t tip_salt) : t(Key(3, tip_salt)) {}
  BlockKey r = Key(1, 77), k = Key(2, 77), t;
  std::vector<uint8_t> r_bytes = Payload(1, 300), k1 = Payload(2, 300), k2 = Payload(3, 300),
                       t_bytes = Payload(4, 300);
  std::vector<BlockPut> X() const { return {{r, {}, r_bytes}, {k, r, k1}}; }
  std::vector<BlockPut> Y() const { return {{r, {}, r_bytes}, {k, r, k2}, {t, k, t_bytes}}; }
  std::vector<BlockKey> YKeys() const { return {r, k, t}; }
};

// A salt whose tip key sorts before (or after) K: heads are loaded from L1 in chain-id order, so
// both orders of X's and Y's heads are tried.
uint64_t TipSalt(const BlockKey& k, bool before) {
  for (uint64_t salt = 1;; ++salt) {
    if ((std::memcmp(Key(3, salt).data(), k.data(), k.bytes.size()) < 0) == before) return salt;
  }
}

// A get of `keys` hits, and block `i` has `want`.
void ExpectBlock(Store& s, const std::vector<BlockKey>& keys, size_t i,
                 const std::vector<uint8_t>& want) {
  auto got = s.GetBlocks(kNs, kFp, keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(std::ranges::equal(got->payload(i), want)) << "block " << i << " has other bytes";
}

TEST(SharedKey, ARestartServesTheBytesOfTheNewestPublish) {
  for (const bool tip_first : {true, false}) {
    SCOPED_TRACE(tip_first ? "Y's head loads first" : "X's head loads first");
    SharedKey c(TipSalt(Key(2, 77), tip_first));
    StoreHarness h(Planes::kDisk);
    Store& s = h.Open();
    ASSERT_TRUE(s.SaveChain(kNs, kFp, c.X()).ok());
    ASSERT_TRUE(s.SaveChain(kNs, kFp, c.Y()).ok());
    ExpectBlock(s, c.YKeys(), 1, c.k2);
    ExpectBlock(s, {c.r, c.k}, 1, c.k2);  // X's blocks too: one node per (parent, key)
    // X names other bytes than Y's prefix: not redundant, so compaction leaves it, quietly.
    EXPECT_TRUE(s.GetChain(kNs, kFp, c.k).ok());
    for (const std::string& line : h.log()) {
      EXPECT_EQ(line.find("compacting"), std::string::npos) << line;
    }
    ExpectBlock(h.Reopen(), c.YKeys(), 1, c.k2);
    h.Close();
    std::filesystem::remove_all(h.dir() + "/data/l1");  // L1 lost: rebuilt from L2
    ExpectBlock(h.Open(), c.YKeys(), 1, c.k2);
  }
}

// Host A saves X, then B saves Y; B's refresh learns X, the older publish, after Y.
TEST(SharedKey, ARefreshLearningAnOlderHeadKeepsTheNewerBytes) {
  TwoHosts hosts;
  auto a = Store::Open(hosts.Options('a'));
  auto b = Store::Open(hosts.Options('b'));
  ASSERT_TRUE(a.ok() && b.ok());
  SharedKey c(5);
  ASSERT_TRUE((*a)->SaveChain(kNs, kFp, c.X()).ok());
  ASSERT_TRUE((*b)->SaveChain(kNs, kFp, c.Y()).ok());
  ASSERT_TRUE((*b)->Refresh().ok());
  ASSERT_TRUE((*a)->Refresh().ok());
  ExpectBlock(**b, c.YKeys(), 1, c.k2);
  ExpectBlock(**a, c.YKeys(), 1, c.k2);  // both hosts agree
}

// B saves Y, then A saves X: B's refresh gives K X's bytes (the newest). Then A's eviction
// deletes X and A's orphan GC deletes K's bytes in X (no head names them), here done to L2
// directly. B's next refresh drops X: K must name Y's bytes again, or every get of Y misses and
// an append to Y fails until B restarts (what a two-host chaos run saw).
TEST(SharedKey, AChainLeavingGivesItsBytesBackToTheNewestRemainingChain) {
  TwoHosts hosts;
  StoreOptions oa = hosts.Options('a');
  auto a = Store::Open(oa);
  auto b = Store::Open(hosts.Options('b'));
  ASSERT_TRUE(a.ok() && b.ok());
  SharedKey c(5);
  ASSERT_TRUE((*b)->SaveChain(kNs, kFp, c.Y()).ok());
  auto x = (*a)->SaveChain(kNs, kFp, c.X());
  ASSERT_TRUE(x.ok());
  ASSERT_TRUE((*b)->Refresh().ok());
  ExpectBlock(**b, c.YKeys(), 1, c.k1);

  auto chain = (*a)->GetChain(kNs, kFp, c.k);
  ASSERT_TRUE(chain.ok() && chain->size() == 2);
  ASSERT_TRUE(hosts.l2_a->Delete(layout::ChainKey(oa.l2_prefix, kNs, kFp, c.k)).ok());
  ASSERT_TRUE(hosts.l2_a->Delete(layout::BlobKey(oa.l2_prefix, kNs, (*chain)[1].hash)).ok());
  auto report = (*b)->Refresh();
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->chains_removed, 1u);
  ExpectBlock(**b, c.YKeys(), 1, c.k2);
  EXPECT_EQ((*b)->Stats().l0_blocks_reassigned, 1u);

  // An append to Y through B continues from what L0 has for T's path.
  const BlockKey u = Key(4, 77);
  const std::vector<uint8_t> u_bytes = Payload(5, 300);
  const std::vector<BlockPut> append = {{u, c.t, u_bytes}};
  ASSERT_TRUE((*b)->PutBlocks(kNs, kFp, append).ok());
  auto published = (*b)->PublishChain(kNs, kFp, u, u);
  ASSERT_TRUE(published.ok()) << published.status().ToString();
  ExpectBlock(**b, {c.r, c.k, c.t, u}, 1, c.k2);
}

// X = [R, K(b1)], then Y = [R, K(b2), T], then Z = [R, K(b1), U]: K has Z's bytes, b1. Z leaves
// (another host deleted its head): K must take Y's bytes, the newest left, although X still
// names b1 — what a restart would give it (I8: a node with the departed chain's order). X is
// named by another id than its tip, so Z's publish does not compact it away.
TEST(SharedKey, WhenTheNewestChainLeavesANodeTakesTheNewestRemainingChainsBytes) {
  TwoHosts hosts;
  StoreOptions oa = hosts.Options('a');
  auto a = Store::Open(oa);
  ASSERT_TRUE(a.ok());
  SharedKey c(5);
  const BlockKey u = Key(4, 77);
  const std::vector<uint8_t> u_bytes = Payload(5, 300);
  std::vector<BlockPut> z = c.X();
  z.push_back({u, c.k, u_bytes});
  ASSERT_TRUE((*a)->PutBlocks(kNs, kFp, c.X()).ok());
  ASSERT_TRUE((*a)->PublishChain(kNs, kFp, Key(9, 77), c.k).ok());
  ASSERT_TRUE((*a)->SaveChain(kNs, kFp, c.Y()).ok());
  ASSERT_TRUE((*a)->SaveChain(kNs, kFp, z).ok());
  ExpectBlock(**a, c.YKeys(), 1, c.k1);

  ASSERT_TRUE(hosts.l2_b->Delete(layout::ChainKey(oa.l2_prefix, kNs, kFp, u)).ok());
  auto report = (*a)->Refresh();
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->chains_removed, 1u);
  ExpectBlock(**a, c.YKeys(), 1, c.k2);
  EXPECT_EQ((*a)->Stats().l0_blocks_reassigned, 1u);
  a->reset();
  auto again = Store::Open(oa);
  ASSERT_TRUE(again.ok());
  ExpectBlock(**again, c.YKeys(), 1, c.k2);
}

// Y's bytes for K are also Z's under another key Q. Y leaves: K must take X's bytes although Z
// still names Y's (found by review: a first fix reassigned only bytes no head named, so K kept
// them, and when Z left and orphan GC deleted them only Z's path was looked at).
TEST(SharedKey, BytesAnotherKeyStillNamesDoNotStayOnANodeItsChainLeft) {
  TwoHosts hosts;
  StoreOptions oa = hosts.Options('a');
  auto a = Store::Open(oa);
  auto b = Store::Open(hosts.Options('b'));
  ASSERT_TRUE(a.ok() && b.ok());
  SharedKey c(5);
  const BlockKey q = Key(9, 77);
  ASSERT_TRUE((*b)->SaveChain(kNs, kFp, c.X()).ok());  // X = [R, K(k1)], the oldest
  ASSERT_TRUE((*a)->SaveChain(kNs, kFp, c.Y()).ok());  // Y = [R, K(k2), T]
  const std::vector<BlockPut> z = {{q, {}, c.k2}};     // Z = [Q(k2)]: the same bytes
  ASSERT_TRUE((*a)->SaveChain(kNs, kFp, z).ok());
  ASSERT_TRUE((*b)->Refresh().ok());
  ExpectBlock(**b, {c.r, c.k}, 1, c.k2);
  auto x = (*b)->GetChain(kNs, kFp, c.k);
  ASSERT_TRUE(x.ok());
  const ContentHash k2 = (*x)[1].hash;
  // A evicts Y; later Z, and A's orphan GC deletes k2 (no head names it then).
  ASSERT_TRUE(hosts.l2_a->Delete(layout::ChainKey(oa.l2_prefix, kNs, kFp, c.t)).ok());
  ASSERT_TRUE((*b)->Refresh().ok());
  ExpectBlock(**b, {c.r, c.k}, 1, c.k1);
  ASSERT_TRUE(hosts.l2_a->Delete(layout::ChainKey(oa.l2_prefix, kNs, kFp, q)).ok());
  ASSERT_TRUE(hosts.l2_a->Delete(layout::BlobKey(oa.l2_prefix, kNs, k2)).ok());
  ASSERT_TRUE((*b)->Refresh().ok());
  ExpectBlock(**b, {c.r, c.k}, 1, c.k1);
}

}  // namespace
}  // namespace wombatkv::testing
