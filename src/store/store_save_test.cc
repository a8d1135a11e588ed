// Store::SaveChain (put + publish in one call, what the C ABI's wmbt_kv_put_kv_blocks does): the
// same outcome as PutBlocks + PublishChain, with less work — no L1 pending record, and the last
// upload run by the caller instead of a background thread. SaveChainAsync and PublishChainAsync
// (the daemon's, their head write completed by the journal's syncing thread): racing saves and
// publishes of one chain on a journaled local L2 all land, with versions in order and L0
// agreeing with L2.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "base/futex.h"

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

// SaveChainAsync, waited for.
Result<uint64_t> SaveAndWait(Store& s, const Fingerprint& fp, std::span<const BlockPut> puts) {
  Result<uint64_t> out = Status::Internal("the save never completed");
  Baton done;
  s.SaveChainAsync("default", fp, puts, [&](Result<uint64_t> v) {
    out = std::move(v);
    done.Post();
  });
  done.Wait();
  return out;
}

// PublishChainAsync (last writer wins), waited for.
Result<uint64_t> PublishAndWait(Store& s, const Fingerprint& fp, const BlockKey& tip) {
  Result<uint64_t> out = Status::Internal("the publish never completed");
  Baton done;
  s.PublishChainAsync("default", fp, tip, tip, std::nullopt,
                      [&](Result<uint64_t> v, const ChainState&) {
                        out = std::move(v);
                        done.Post();
                      });
  done.Wait();
  return out;
}

// The chain's version as L0 has it, and as L2 has it (a reopen rebuilds L0 from L2, which wins).
uint64_t IndexedVersion(Store& s, const ChainId& id) {
  const auto chains = s.ListChains("default").value();
  for (const ChainState& c : chains) {
    if (c.chain_id == id) return c.version;
  }
  return 0;
}

// An L1 that keeps the versions of one chain's head in the order they were written, and the
// newest version written of every head.
class HeadRecordsSeen final : public MemMetaStoreWrapper {
 public:
  explicit HeadRecordsSeen(std::string head_key = "") : head_key_(std::move(head_key)) {}
  Status Write(const MetaWriteBatch& batch, bool sync) override {
    std::lock_guard<std::mutex> g(mu_);  // recorded in the order applied
    for (const auto& [key, value] : batch.ops()) {
      if (!value) continue;
      auto record = meta_records::DecodeHeadRecord(key, *value);
      if (!record.ok()) continue;  // not a head record
      newest_[key] = std::max(newest_[key], record->head.version);
      if (key == head_key_) versions_.push_back(record->head.version);
    }
    return MemMetaStoreWrapper::Write(batch, sync);
  }
  std::vector<uint64_t> versions() {
    std::lock_guard<std::mutex> g(mu_);
    return versions_;
  }
  uint64_t newest(const std::string& head_key) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = newest_.find(head_key);
    return it == newest_.end() ? 0 : it->second;
  }

 private:
  const std::string head_key_;
  std::mutex mu_;
  std::vector<uint64_t> versions_;
  std::map<std::string, uint64_t> newest_;
};

class StoreSaveAsync : public ::testing::Test {
 protected:
  void SetUp() override { s_ = &h_.Open(Options()); }
  void TearDown() override { h_.Close(); }

  StoreOptions Options() {
    StoreOptions o = h_.Options();  // a journaled local L2, the store's own threads
    // Completions that run late widen the window in which a publisher could see a stale head.
    o.buggify = [](const char* site) { return std::string_view(site) == "save.completion_late"; };
    return o;
  }

  std::optional<HeadRecordsSeen> l1_;  // outlives the store (closed in TearDown)
  StoreHarness h_{Planes::kDisk};
  Store* s_ = nullptr;
};

TEST_F(StoreSaveAsync, ASaveLandsLikeSaveChainAndSurvivesARestart) {
  TestChain c = MakeChain(3, 1024, /*salt=*/21);
  auto puts = c.Puts();
  auto v = SaveAndWait(*s_, kFp, puts);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, 1u);
  EXPECT_EQ(*s_->LookupPrefix("default", kFp, c.keys), 3u);
  EXPECT_EQ(s_->Stats().pending_blocks, 0u);
  s_ = &h_.Reopen();
  EXPECT_EQ(*s_->LookupPrefix("default", kFp, c.keys), 3u);
  auto got = s_->GetBlocks("default", kFp, c.keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(std::ranges::equal(got->payload(2), c.payloads[2]));
}

TEST_F(StoreSaveAsync, ASaveIsAcknowledgedOnlyOnceItsL1RecordIsWritten) {
  // Saves of many chains at once share journal rounds, whose L1 records go in one write at the
  // end of the round (base/defer_scope.h): none may be answered before that write.
  l1_.emplace();
  StoreOptions o = Options();
  o.meta_store = &*l1_;
  s_ = &h_.Open(o);
  constexpr int kThreads = 6, kRounds = 30;
  std::atomic<int> failures{0}, unrecorded{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        const BlockKey key = Key(t * 1000 + r, 6);
        const auto bytes = Payload(t * 1000 + r, 512);
        BlockPut put{key, BlockKey{}, bytes};
        auto v = SaveAndWait(*s_, kFp, {&put, 1});
        if (!v.ok()) {
          ADD_FAILURE() << v.status().ToString();
          failures++;
        } else if (l1_->newest(meta_records::HeadKey("default", kFp, key)) < *v) {
          unrecorded++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(unrecorded.load(), 0) << "a save was acknowledged before L1 recorded it";
}

TEST_F(StoreSaveAsync, RacingSavesAndPublishesOfOneChainLandInVersionOrder) {
  // Every thread saves the same one-block chain (same key, its own bytes) or publishes it again;
  // each must succeed with its own version (last writer wins, none lost), and L0 must end at the
  // version L2 holds — a head installed out of order would leave L0 behind.
  const BlockKey key = Key(77, 5);
  l1_.emplace(meta_records::HeadKey("default", kFp, key));
  StoreOptions o = Options();
  o.meta_store = &*l1_;
  s_ = &h_.Open(o);
  constexpr int kThreads = 6, kRounds = 60;
  std::vector<std::thread> threads;
  std::vector<std::vector<uint64_t>> versions(kThreads);
  std::atomic<int> failures{0}, stale{0}, unrecorded{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        const auto bytes = Payload(t * 1000 + r, 512);
        BlockPut put{key, BlockKey{}, bytes};
        // Saves; saves and completion-based publishes; blocking publishes.
        Result<uint64_t> v = (t % 3 == 2 && r > 0)   ? s_->PublishChain("default", kFp, key, key)
                             : (t % 3 == 1 && r % 2) ? PublishAndWait(*s_, kFp, key)
                                                     : SaveAndWait(*s_, kFp, {&put, 1});
        if (!v.ok()) {
          ADD_FAILURE() << v.status().ToString();
          failures++;
          continue;
        }
        versions[t].push_back(*v);
        // L0 never goes back behind an acknowledged version (heads installed in order).
        if (IndexedVersion(*s_, key) < *v) stale++;
        // Nor is a publish acknowledged before its L1 record is written.
        if (l1_->newest(meta_records::HeadKey("default", kFp, key)) < *v) unrecorded++;
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(failures.load(), 0);
  EXPECT_EQ(stale.load(), 0) << "L0 went back behind an acknowledged version";
  EXPECT_EQ(unrecorded.load(), 0) << "a publish was acknowledged before L1 recorded it";
  std::vector<uint64_t> all;
  for (const auto& v : versions) {
    EXPECT_TRUE(std::ranges::is_sorted(v)) << "one thread's versions went backwards";
    all.insert(all.end(), v.begin(), v.end());
  }
  std::ranges::sort(all);
  EXPECT_EQ(std::ranges::adjacent_find(all), all.end()) << "two publishes got one version";
  EXPECT_EQ(all.back(), uint64_t(kThreads) * kRounds);
  EXPECT_EQ(IndexedVersion(*s_, key), all.back()) << "L0 behind the last publish";
  h_.Close();
  // L1 too, all along: no publish of the chain may write its head record before an older
  // head's record lands (a completion records its head before it unmarks the chain).
  const std::vector<uint64_t> recorded = l1_->versions();
  EXPECT_TRUE(std::ranges::is_sorted(recorded)) << "an older head was recorded after a newer one";
  EXPECT_EQ(recorded.size(), all.size());
  s_ = &h_.Open();
  EXPECT_EQ(IndexedVersion(*s_, key), all.back()) << "L2 disagrees with what was acknowledged";
}

}  // namespace
}  // namespace wombatkv::testing
