#include "store/upload_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "layout/object_keys.h"
#include "store/put_copy.h"
#include "store/store_test_util.h"

namespace wombatkv {
namespace {

using testing::ManualExecutor;

struct Counted {
  std::atomic<int> ran{0};
  std::function<void()> Upload() {
    return [this] { ran++; };
  }
};

// A gate on a manual executor with room for 1 MiB parked and 4 pumps.
class UploadGateTest : public ::testing::Test {
 protected:
  // A put begins and submits three 100-byte uploads.
  void PutWithThreeUploads() {
    gate.PutBegins();
    for (int i = 0; i < 3; ++i) gate.Submit(0, 100, c.Upload());
  }
  ManualExecutor ex;
  UploadGate gate{&ex, 1 << 20, 4};
  Counted c;
};

TEST_F(UploadGateTest, RunsAnUploadAtOnceWhenNoPutCopies) {
  gate.Submit(0, 100, c.Upload());
  ex.Drain();
  EXPECT_EQ(c.ran, 1);
  EXPECT_EQ(gate.stats().parked, 0u);
}

TEST_F(UploadGateTest, ParksUploadsWhileAPutCopiesAndStartsThemWhenItEnds) {
  PutWithThreeUploads();
  ex.Drain();
  EXPECT_EQ(c.ran, 0) << "an upload ran while the put copied";
  EXPECT_EQ(gate.stats().parked_now, 3u);
  EXPECT_EQ(gate.stats().parked_bytes, 300u);
  gate.PutEnds();
  EXPECT_EQ(ex.queued(), 1u) << "one pump, not a task per upload";
  ex.Drain();
  EXPECT_EQ(c.ran, 3);
  EXPECT_EQ(gate.stats().parked_now, 0u);
  EXPECT_EQ(gate.stats().parked_bytes, 0u);
}

TEST_F(UploadGateTest, AQueuedPumpStepsAsideForTheNextPutAndItsEndRestartsIt) {
  // Back-to-back puts: the pump queued at the end of one finds the next copying.
  PutWithThreeUploads();
  gate.PutEnds();
  gate.PutBegins();
  gate.Submit(0, 100, c.Upload());
  ex.Drain();
  EXPECT_EQ(c.ran, 0);
  EXPECT_EQ(gate.stats().parked_now, 4u);
  gate.PutEnds();
  ex.Drain();
  EXPECT_EQ(c.ran, 4);
}

TEST(UploadGate, PastTheBoundTheOldestParkedUploadStarts) {
  ManualExecutor ex;
  UploadGate gate(&ex, 250, 4);
  std::vector<int> order;
  gate.PutBegins();
  for (int i = 0; i < 3; ++i) gate.Submit(0, 100, [&order, i] { order.push_back(i); });
  ex.Drain();
  EXPECT_EQ(order, std::vector<int>{0}) << "the first upload should have left the 250-byte window";
  EXPECT_EQ(gate.stats().parked_now, 2u);
  EXPECT_EQ(gate.stats().parked_bytes, 200u);
  gate.PutEnds();
  ex.Drain();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

TEST(UploadGate, ReleaseStartsTheNamedParkedUploadsEvenWhileAPutCopies) {
  ManualExecutor ex;
  UploadGate gate(&ex, 1 << 20, 4);
  std::vector<int> ran;
  gate.PutBegins();
  for (int i = 0; i < 4; ++i) gate.Submit(i % 2, 100, [&ran, i] { ran.push_back(i); });
  const uint64_t ids[] = {1};
  gate.Release(ids);
  ex.Drain();
  EXPECT_EQ(ran, (std::vector<int>{1, 3}));
  EXPECT_EQ(gate.stats().parked_bytes, 200u);
  gate.ReleaseAll();
  ex.Drain();
  EXPECT_EQ(ran, (std::vector<int>{1, 3, 0, 2}));
  EXPECT_EQ(gate.stats().parked_bytes, 0u);
  gate.PutEnds();
  EXPECT_EQ(ex.queued(), 0u) << "a pump for nothing";
}

// The gate finds parked uploads by id: one started past the bound or by a pump is gone from the
// index too, so a later Release starts each of the others once and nothing twice.
TEST(UploadGate, AReleaseAfterTheBoundStartsEachParkedUploadOnce) {
  ManualExecutor ex;
  UploadGate gate(&ex, 250, 4);
  std::vector<int> ran;
  gate.PutBegins();
  for (int i = 0; i < 5; ++i) gate.Submit(i % 2, 100, [&ran, i] { ran.push_back(i); });
  ex.Drain();
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2})) << "only two fit the 250-byte window";
  const uint64_t ids[] = {0, 7, 0};  // an id never parked, and one named twice
  gate.Release(ids);
  ex.Drain();
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 4}));
  EXPECT_EQ(gate.stats().parked_now, 1u);
  gate.PutEnds();
  ex.Drain();
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 4, 3}));
  EXPECT_EQ(gate.stats().parked_now, 0u);
  EXPECT_EQ(gate.stats().parked_bytes, 0u);
}

TEST(UploadGate, PumpsShareABacklogUpToTheirLimit) {
  ManualExecutor ex;
  UploadGate gate(&ex, 1 << 20, 3);
  int ran = 0;
  size_t most_queued = 0;
  gate.PutBegins();
  for (int i = 0; i < 10; ++i) {
    gate.Submit(0, 1, [&] {
      ++ran;
      most_queued = std::max(most_queued, ex.queued());
    });
  }
  gate.PutEnds();
  ASSERT_EQ(ex.queued(), 1u) << "one pump per put end";
  ex.Drain();
  EXPECT_EQ(ran, 10);
  // A running pump queues at most pumps_max - 1 others while it works.
  EXPECT_EQ(most_queued, 2u);
}

TEST(UploadGate, ConcurrentPutsStrandNoUpload) {
  // Every upload runs exactly once, whatever the interleaving of puts, uploads and pumps.
  auto ex = NewThreadPoolExecutor(4, "test-gate");
  UploadGate gate(ex.get(), 64 * 100, 4);
  Counted c;
  constexpr int kThreads = 4, kPuts = 500, kPerPut = 3;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&] {
      for (int p = 0; p < kPuts; ++p) {
        gate.PutBegins();
        for (int u = 0; u < kPerPut; ++u) gate.Submit(0, 100, c.Upload());
        gate.PutEnds();
      }
    });
  }
  for (auto& t : ts) t.join();
  ex->Drain();
  EXPECT_EQ(c.ran, kThreads * kPuts * kPerPut);
  EXPECT_EQ(gate.stats().parked_now, 0u);
  EXPECT_GT(gate.stats().parked, 0u);
}

// --- In the store ----------------------------------------------------------------------------

struct LargePutStore {
  ManualExecutor ex;
  testing::StoreHarness h{testing::Planes::kMemory};
  testing::TestChain chain = testing::MakeChain(4, kLargePutBytes / 2);
  Store& Open() {
    StoreOptions o = h.Options();
    o.executor = &ex;
    return h.Open(o);
  }
  size_t BlobsInL2() {
    auto list = h.mem_l2()->List(layout::BlobsPrefix(StoreOptions{}.l2_prefix, "ns"), "", "",
                                 1000);
    EXPECT_TRUE(list.ok()) << list.status().ToString();
    return list.ok() ? list->objects.size() : 0;
  }
};

TEST(UploadGateInStore, ALargePutLeavesOnePumpAndItsPublishUploadsEveryBlob) {
  LargePutStore s;
  Store& store = s.Open();
  ASSERT_TRUE(store.PutBlocks("ns", testing::Fp(1), s.chain.Puts()).ok());
  EXPECT_EQ(s.ex.queued(), 1u) << "uploads were queued while the put copied";
  auto v = store.PublishChain("ns", testing::Fp(1), s.chain.tip(), s.chain.tip(), std::nullopt);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(s.BlobsInL2(), 4u);
  s.ex.Drain();
  EXPECT_EQ(s.BlobsInL2(), 4u);
}

TEST(UploadGateInStore, AStoreClosedAfterALargePutUploadsItsBlobs) {
  LargePutStore s;
  Store& store = s.Open();
  ASSERT_TRUE(store.PutBlocks("ns", testing::Fp(1), s.chain.Puts()).ok());
  EXPECT_EQ(s.BlobsInL2(), 0u);
  s.h.Close();
  EXPECT_EQ(s.BlobsInL2(), 4u) << "a large put's blobs were not uploaded by close";
}

TEST(UploadGateInStore, PublishesSucceedWhileAnotherThreadKeepsPuttingLargeBatches) {
  // Real threads: one thread's large puts keep closing the gate while another saves chains and
  // publishes them; every publish must find its blobs uploaded, and a reopen must see them all.
  testing::StoreHarness h{testing::Planes::kMemory};
  StoreOptions o = h.Options();
  Store* store = &h.Open(o);
  std::atomic<bool> stop{false};
  std::thread putter([&] {
    for (uint64_t salt = 100; !stop.load(); ++salt) {
      auto c = testing::MakeChain(4, kLargePutBytes / 4, salt);
      ASSERT_TRUE(store->PutBlocks("ns", testing::Fp(2), c.Puts()).ok());
    }
  });
  std::vector<testing::TestChain> published;
  for (uint64_t salt = 1; salt <= 20; ++salt) {
    published.push_back(testing::MakeChain(3, kLargePutBytes / 2, salt));
    const auto& c = published.back();
    ASSERT_TRUE(store->PutBlocks("ns", testing::Fp(1), c.Puts()).ok());
    auto v = store->PublishChain("ns", testing::Fp(1), c.tip(), c.tip());
    ASSERT_TRUE(v.ok()) << v.status().ToString();
  }
  stop = true;
  putter.join();
  store = &h.Reopen();
  for (const auto& c : published) {
    auto hit = store->LookupPrefix("ns", testing::Fp(1), c.keys);
    ASSERT_TRUE(hit.ok()) << hit.status().ToString();
    EXPECT_EQ(*hit, c.keys.size());
  }
}

}  // namespace
}  // namespace wombatkv
