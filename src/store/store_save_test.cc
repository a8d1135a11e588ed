// Store::SaveChain (put + publish in one call, what the C ABI's wmbt_kv_put_kv_blocks does): the
// same outcome as PutBlocks + PublishChain, with less work — no L1 pending record, and the last
// upload run by the caller instead of a background thread.
#include <gtest/gtest.h>

#include <algorithm>

#include "store/meta_records.h"
#include "store/store_test_util.h"

namespace wombatkv::testing {
namespace {

const Fingerprint kFp = Fp(7);

class StoreSave : public ::testing::Test {
 protected:
  void SetUp() override {
    StoreOptions o = h_.Options();
    o.executor = &exec_;
    s_ = &h_.Open(o);
  }
  void TearDown() override { h_.Close(); }  // before the executor it uses

  size_t PendingRecordsInL1() {
    size_t n = 0;
    EXPECT_TRUE(h_.mem_l1()
                    ->Scan(meta_records::kPendingPrefix,
                           [&](std::string_view, std::string_view) { return ++n, true; })
                    .ok());
    return n;
  }

  ManualExecutor exec_;
  StoreHarness h_{Planes::kMemory};
  Store* s_ = nullptr;
};

TEST_F(StoreSave, PublishesTheChainWithoutPendingRecordsOrABackgroundHop) {
  TestChain c = MakeChain(1, 4096);
  auto puts = c.Puts();
  auto v = s_->SaveChain("default", kFp, puts);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, 1u);
  EXPECT_EQ(exec_.queued(), 0u);  // the one upload ran in this thread
  EXPECT_EQ(PendingRecordsInL1(), 0u);
  EXPECT_EQ(s_->Stats().pending_blocks, 0u);
  EXPECT_EQ(*s_->LookupPrefix("default", kFp, c.keys), 1u);
  EXPECT_EQ(s_->Stats().cache_pinned_bytes, 0u);  // durable: the upload's pin is gone

  // Durable: a restart (L0 rebuilt from L1/L2) finds the chain and its bytes.
  h_.Close();
  StoreOptions o = h_.Options();
  o.executor = &exec_;
  s_ = &h_.Open(o);
  EXPECT_EQ(*s_->LookupPrefix("default", kFp, c.keys), 1u);
  auto got = s_->GetBlocks("default", kFp, c.keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(std::ranges::equal(got->payload(0), c.payloads[0]));
}

TEST_F(StoreSave, LongerChainsUploadInTheBackgroundAndAreWholeAfterwards) {
  TestChain c = MakeChain(5, 1024, /*salt=*/3);
  auto puts = c.Puts();
  ASSERT_TRUE(s_->SaveChain("default", kFp, puts).ok());
  EXPECT_EQ(*s_->LookupPrefix("default", kFp, c.keys), 5u);
  EXPECT_EQ(PendingRecordsInL1(), 0u);
}

TEST_F(StoreSave, ASaveDeletesThePendingRecordsOfAnEarlierPutOfItsBlocks) {
  TestChain c = MakeChain(3, 1024, /*salt=*/5);
  auto puts = c.Puts();
  ASSERT_TRUE(s_->PutBlocks("default", kFp, puts).ok());
  exec_.Drain();
  EXPECT_EQ(PendingRecordsInL1(), 3u);
  ASSERT_TRUE(s_->SaveChain("default", kFp, puts).ok());
  EXPECT_EQ(PendingRecordsInL1(), 0u);  // else a restart would reload them as unpublished puts
}

TEST_F(StoreSave, AFailedPublishStillStartsTheDeferredUpload) {
  // Keys A, B, A: the parent links form a cycle, which the publish rejects before its durability
  // barrier. The last block's upload (deferred for the publish to run) must not be forgotten: an
  // upload never started would pin its bytes forever and hang every later publish of them.
  TestChain c = MakeChain(2, 2048, /*salt=*/9);
  std::vector<BlockPut> puts = c.Puts();
  const auto last_bytes = Payload(99, 2048);
  puts.push_back(BlockPut{c.keys[0], c.keys[1], last_bytes});
  auto v = s_->SaveChain("default", kFp, puts);
  EXPECT_EQ(v.status().code(), Code::kFailedPrecondition) << v.status().ToString();
  EXPECT_EQ(exec_.queued(), 3u);  // both background uploads and the deferred one
  exec_.Drain();
  EXPECT_EQ(s_->Stats().cache_pinned_bytes, 0u);

  // The same bytes saved properly afterwards publish (nothing waits on a dead upload).
  BlockPut again{Key(1234), BlockKey{}, last_bytes};
  auto v2 = s_->SaveChain("default", kFp, {&again, 1});
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_EQ(*s_->LookupPrefix("default", kFp, std::vector<BlockKey>{Key(1234)}), 1u);
}

}  // namespace
}  // namespace wombatkv::testing
