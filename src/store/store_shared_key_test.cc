// A key that two chains publish with different bytes (a nondeterministic kernel computed the same
// block twice): L0 serves the bytes of the newest publish through it, after a restart, a refresh
// that learns an older head late, and a chain leaving (RadixIndex I8; bug 17, docs/testing.md).
#include <cstring>
#include <memory>
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

// Two hosts on one bucket, A and B (store_test_util.h's TwoHosts), with the chains above.
class SharedKeyTwoHosts : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened_a = Store::Open(oa_);
    auto opened_b = Store::Open(hosts_.Options('b'));
    ASSERT_TRUE(opened_a.ok() && opened_b.ok());
    a_ = std::move(opened_a).value();
    b_ = std::move(opened_b).value();
  }
  // What another host's eviction (a head) and orphan GC (a blob) do to L2.
  void DeleteHead(const ChainId& id) {
    ASSERT_TRUE(hosts_.l2_a->Delete(layout::ChainKey(oa_.l2_prefix, kNs, kFp, id)).ok());
  }
  void DeleteBlob(const ContentHash& hash) {
    ASSERT_TRUE(hosts_.l2_a->Delete(layout::BlobKey(oa_.l2_prefix, kNs, hash)).ok());
  }
  // The content hash store `s` has for block `i` of chain `id`.
  ContentHash HashOf(Store& s, const ChainId& id, size_t i) {
    auto blocks = s.GetChain(kNs, kFp, id);
    EXPECT_TRUE(blocks.ok() && blocks->size() > i);
    return blocks.ok() && blocks->size() > i ? (*blocks)[i].hash : ContentHash{};
  }

  TwoHosts hosts_;
  StoreOptions oa_ = hosts_.Options('a');
  std::unique_ptr<Store> a_, b_;
  SharedKey c_{5};
  const BlockKey u_ = Key(4, 77);
  const std::vector<uint8_t> u_bytes_ = Payload(5, 300);
};

// A saves X, then B saves Y; B's refresh learns X, the older publish, after Y.
TEST_F(SharedKeyTwoHosts, ARefreshLearningAnOlderHeadKeepsTheNewerBytes) {
  ASSERT_TRUE(a_->SaveChain(kNs, kFp, c_.X()).ok());
  ASSERT_TRUE(b_->SaveChain(kNs, kFp, c_.Y()).ok());
  ASSERT_TRUE(b_->Refresh().ok());
  ASSERT_TRUE(a_->Refresh().ok());
  ExpectBlock(*b_, c_.YKeys(), 1, c_.k2);
  ExpectBlock(*a_, c_.YKeys(), 1, c_.k2);  // both hosts agree
}

// B saves Y, then A saves X: B's refresh gives K X's bytes (the newest). Then A's eviction
// deletes X and A's orphan GC deletes K's bytes in X (no head names them). B's next refresh
// drops X: K must name Y's bytes again, or every get of Y misses and an append to Y fails until
// B restarts (what a two-host chaos run saw).
TEST_F(SharedKeyTwoHosts, AChainLeavingGivesItsBytesBackToTheNewestRemainingChain) {
  ASSERT_TRUE(b_->SaveChain(kNs, kFp, c_.Y()).ok());
  ASSERT_TRUE(a_->SaveChain(kNs, kFp, c_.X()).ok());
  ASSERT_TRUE(b_->Refresh().ok());
  ExpectBlock(*b_, c_.YKeys(), 1, c_.k1);

  const ContentHash k1 = HashOf(*a_, c_.k, 1);
  DeleteHead(c_.k);
  DeleteBlob(k1);
  auto report = b_->Refresh();
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->chains_removed, 1u);
  ExpectBlock(*b_, c_.YKeys(), 1, c_.k2);
  EXPECT_EQ(b_->Stats().l0_blocks_reassigned, 1u);

  // An append to Y through B continues from what L0 has for T's path.
  const std::vector<BlockPut> append = {{u_, c_.t, u_bytes_}};
  ASSERT_TRUE(b_->PutBlocks(kNs, kFp, append).ok());
  auto published = b_->PublishChain(kNs, kFp, u_, u_);
  ASSERT_TRUE(published.ok()) << published.status().ToString();
  ExpectBlock(*b_, {c_.r, c_.k, c_.t, u_}, 1, c_.k2);
}

// X = [R, K(b1)], then Y = [R, K(b2), T], then Z = [R, K(b1), U], all by A: K has Z's bytes, b1.
// Z leaves (its head deleted): K must take Y's bytes, the newest left, although X still names
// b1 — what a restart would give it (I8: a node with the departed chain's order). X is named by
// another id than its tip, so Z's publish does not compact it away.
TEST_F(SharedKeyTwoHosts, WhenTheNewestChainLeavesANodeTakesTheNewestRemainingChainsBytes) {
  std::vector<BlockPut> z = c_.X();
  z.push_back({u_, c_.k, u_bytes_});
  ASSERT_TRUE(a_->PutBlocks(kNs, kFp, c_.X()).ok());
  ASSERT_TRUE(a_->PublishChain(kNs, kFp, Key(9, 77), c_.k).ok());
  ASSERT_TRUE(a_->SaveChain(kNs, kFp, c_.Y()).ok());
  ASSERT_TRUE(a_->SaveChain(kNs, kFp, z).ok());
  ExpectBlock(*a_, c_.YKeys(), 1, c_.k1);

  DeleteHead(u_);
  auto report = a_->Refresh();
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->chains_removed, 1u);
  ExpectBlock(*a_, c_.YKeys(), 1, c_.k2);
  EXPECT_EQ(a_->Stats().l0_blocks_reassigned, 1u);
  a_.reset();
  auto again = Store::Open(oa_);
  ASSERT_TRUE(again.ok());
  ExpectBlock(**again, c_.YKeys(), 1, c_.k2);
}

// Y's bytes for K are also Z's under another key Q. Y leaves: K must take X's bytes although Z
// still names Y's (found by review: a first fix reassigned only bytes no head named, so K kept
// them, and when Z left and orphan GC deleted them only Z's path was looked at).
TEST_F(SharedKeyTwoHosts, BytesAnotherKeyStillNamesDoNotStayOnANodeItsChainLeft) {
  const BlockKey q = Key(9, 77);
  ASSERT_TRUE(b_->SaveChain(kNs, kFp, c_.X()).ok());  // X = [R, K(k1)], the oldest
  ASSERT_TRUE(a_->SaveChain(kNs, kFp, c_.Y()).ok());  // Y = [R, K(k2), T]
  const std::vector<BlockPut> z = {{q, {}, c_.k2}};   // Z = [Q(k2)]: the same bytes
  ASSERT_TRUE(a_->SaveChain(kNs, kFp, z).ok());
  ASSERT_TRUE(b_->Refresh().ok());
  ExpectBlock(*b_, {c_.r, c_.k}, 1, c_.k2);
  const ContentHash k2 = HashOf(*b_, c_.k, 1);
  // A evicts Y; later Z, and A's orphan GC deletes k2 (no head names it then).
  DeleteHead(c_.t);
  ASSERT_TRUE(b_->Refresh().ok());
  ExpectBlock(*b_, {c_.r, c_.k}, 1, c_.k1);
  DeleteHead(q);
  DeleteBlob(k2);
  ASSERT_TRUE(b_->Refresh().ok());
  ExpectBlock(*b_, {c_.r, c_.k}, 1, c_.k1);
}

}  // namespace
}  // namespace wombatkv::testing
