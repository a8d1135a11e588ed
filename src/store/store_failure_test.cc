// The store under L2 failures and hostile inputs: failed uploads retried by publishers, damaged
// blobs replaced, parent cycles refused.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/limits.h"
#include "layout/object_keys.h"
#include "store/meta_records.h"
#include "store/store_test_util.h"

namespace wombatkv::testing {
namespace {

const Fingerprint kFp = Fp(5);

// Forwards to an in-memory store; fails every Put with Unavailable while `fail_puts` is set, and
// the next `fail_overwrites` overwriting Puts.
// With a gate on a key, Head of that key waits (briefly) until `gate_callers` callers are inside
// at once: it lets a test line up racing retries without knowing the store's internals.
class FlakyObjectStore final : public ObjectStoreWrapper {
 public:
  FlakyObjectStore() { set_target(inner_.get()); }
  std::atomic<bool> fail_puts{false};
  std::atomic<int> fail_overwrites{0};
  void Gate(std::string key, int callers) {
    std::lock_guard<std::mutex> g(gate_mu_);
    gate_key_ = std::move(key);
    gate_callers_ = callers;
  }
  Result<std::string> Put(std::string_view key, const std::vector<ByteView>& parts,
                          const PutOptions& options) override {
    if (fail_puts) return Status::Unavailable("injected: L2 is down");
    if (options.mode == PutMode::kOverwrite && fail_overwrites.fetch_sub(1) > 0) {
      return Status::Unavailable("injected: an overwrite failed");
    }
    return ObjectStoreWrapper::Put(key, parts, options);
  }
  Result<ObjectInfo> Head(std::string_view key) override {
    {
      std::unique_lock<std::mutex> l(gate_mu_);
      if (key == gate_key_) {
        ++gate_arrived_;
        gate_cv_.notify_all();
        // Bounded: if the store serialises these calls, each one just waits out the bound.
        gate_cv_.wait_for(l, std::chrono::milliseconds(200),
                          [&] { return gate_arrived_ >= gate_callers_; });
      }
    }
    return ObjectStoreWrapper::Head(key);
  }
  ObjectStore* inner() { return inner_.get(); }

 private:
  std::unique_ptr<ObjectStore> inner_ = NewMemObjectStore();
  std::mutex gate_mu_;
  std::condition_variable gate_cv_;
  std::string gate_key_;
  int gate_callers_ = 0;
  int gate_arrived_ = 0;
};

// Sleeps take no time: retries with backoff run instantly. Frozen, they do not move the clock
// either (time then stands all but still).
class NoSleepClock final : public Clock {
 public:
  uint64_t NowMicros() override { return now_ += 1; }
  uint64_t WallMicros() override { return 1'700'000'000'000'000ull + now_; }
  void SleepMicros(uint64_t micros) override { now_ += frozen ? 0 : micros; }
  bool WaitFor(std::condition_variable&, std::unique_lock<std::mutex>&, uint64_t micros) override {
    now_ += frozen ? 0 : micros;
    return false;
  }
  std::atomic<bool> frozen{false};

 private:
  std::atomic<uint64_t> now_{0};
};

// A store over the given planes, quiet, with 4 upload threads.
std::unique_ptr<Store> OpenStoreOver(ObjectStore* l2, MetaStore* l1, Clock* clock = nullptr,
                                     Executor* executor = nullptr) {
  StoreOptions o;
  o.object_store = l2;
  o.meta_store = l1;
  o.clock = clock;
  o.executor = executor;
  o.upload_threads = 4;
  o.log = [](LogLevel, const std::string&) {};
  auto s = Store::Open(o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

struct FlakyStore {
  FlakyObjectStore l2;
  std::unique_ptr<MetaStore> l1 = NewMemMetaStore();
  NoSleepClock clock;
  std::unique_ptr<Store> store;
  explicit FlakyStore(Executor* executor = nullptr) { Open(executor); }
  // A fresh store (L1 and RAM cache empty) over the same L2.
  void Reopen() {
    store.reset();
    l1 = NewMemMetaStore();
    Open(nullptr);
  }

 private:
  void Open(Executor* executor) { store = OpenStoreOver(&l2, l1.get(), &clock, executor); }
};

TEST(StoreFailures, PublishersRetryAFailedUploadOnceAndReleaseItsPinOnce) {
  FlakyStore f;
  auto shared = MakeChain(1, 4096, 1);  // a block every chain below starts with
  f.l2.fail_puts = true;
  ASSERT_TRUE(f.store->PutBlocks("default", kFp, shared.Puts()).ok());
  std::vector<BlockKey> tips;
  for (int i = 0; i < 6; ++i) {
    tips.push_back(Key(100 + i));
    auto p = Payload(100 + i, 512);
    BlockPut put{tips.back(), shared.tip(), p};
    ASSERT_TRUE(f.store->PutBlocks("default", kFp, {&put, 1}).ok());
  }
  // While L2 is down the publish fails as retryable and leaves nothing half-published.
  EXPECT_EQ(f.store->PublishChain("default", kFp, tips[0], tips[0]).status().code(),
            Code::kUnavailable);
  EXPECT_EQ(f.store->ListChains("default").value().size(), 0u);
  f.l2.fail_puts = false;
  // Now six publishers meet the same failed upload of the shared block at once, and all of them
  // would retry it together if the store let them.
  f.l2.Gate(layout::BlobKey("kv", "default", HashPayload(shared.payloads[0])), 6);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      if (f.store->PublishChain("default", kFp, tips[i], tips[i]).ok()) ok++;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 6);
  EXPECT_EQ(f.store->Stats().cache_pinned_bytes, 0u);
  for (const auto& tip : tips) {
    auto got = f.store->GetBlocks("default", kFp, std::vector<BlockKey>{shared.tip(), tip});
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE(std::ranges::equal(got->payload(0), shared.payloads[0]));
  }
}

// An engine may take a failed publish for a miss and say nothing, so the store says it: each
// failed upload is a warning, at most 5 a minute (an L2 outage fails every one).
TEST(StoreFailures, FailedUploadsAreLoggedWithinABudget) {
  ManualExecutor exec;
  FlakyObjectStore l2;
  auto l1 = NewMemMetaStore();
  NoSleepClock clock;
  clock.frozen = true;
  std::mutex mu;
  std::vector<std::string> warnings;
  StoreOptions o;
  o.object_store = &l2;
  o.meta_store = l1.get();
  o.clock = &clock;
  o.executor = &exec;
  o.log = [&](LogLevel level, const std::string& m) {
    std::lock_guard<std::mutex> g(mu);
    if (level == LogLevel::kWarn && m.starts_with("uploading blob ")) warnings.push_back(m);
  };
  auto store = Store::Open(o);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  l2.fail_puts = true;
  for (int i = 0; i < 8; ++i) {
    auto payload = Payload(50 + i, 4096);
    BlockPut put{Key(50 + i), BlockKey{}, payload};
    ASSERT_TRUE((*store)->PutBlocks("default", kFp, {&put, 1}).ok());
  }
  exec.Drain();  // every upload runs, exhausts its retries and fails
  ASSERT_EQ(warnings.size(), 5u);
  EXPECT_NE(warnings[0].find("of namespace default to L2 failed: UNAVAILABLE"), std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[0].find("the publish that needs them tries again"), std::string::npos);
  store->reset();  // before the executor it uses
}

TEST(StoreFailures, AFailedUploadGivesWayWhenTheSameBytesArePutAgain) {
  // Without a publish nobody retries a failed upload; a later put of the same bytes must upload
  // them anew and release the old pin, or the RAM of every failed upload is held forever.
  ManualExecutor exec;
  FlakyStore f(&exec);
  auto payload = Payload(7, 8192);
  BlockPut first{Key(1), BlockKey{}, payload};
  BlockPut second{Key(2), BlockKey{}, payload};
  f.l2.fail_puts = true;
  ASSERT_TRUE(f.store->PutBlocks("default", kFp, {&first, 1}).ok());
  exec.Drain();  // the upload runs, exhausts its retries (sleeps take no time) and fails
  EXPECT_EQ(f.store->Stats().cache_pinned_bytes, 8192u);
  f.l2.fail_puts = false;
  ASSERT_TRUE(f.store->PutBlocks("default", kFp, {&second, 1}).ok());
  exec.Drain();  // the new upload of the same bytes succeeds
  EXPECT_EQ(f.store->Stats().cache_pinned_bytes, 0u);
  // Both keys, published later, find their bytes durable.
  ASSERT_TRUE(f.store->PublishChain("default", kFp, Key(1), Key(1)).ok());
  ASSERT_TRUE(f.store->PublishChain("default", kFp, Key(2), Key(2)).ok());
  EXPECT_EQ(*f.store->LookupPrefix("default", kFp, std::vector<BlockKey>{Key(2)}), 1u);
  f.store.reset();  // before the executor it uses
}

// Both ways of uploading a blob: a small one is put at once (and looked at when it was there), a
// large one looked for first (limits::kBlobBytesLookedForFirst).
class StoreFailuresBlobSize : public ::testing::TestWithParam<size_t> {};

TEST_P(StoreFailuresBlobSize, ABlobOfTheWrongSizeInL2IsReplacedWhenTheBytesArePutAgain) {
  for (int failed_overwrites : {0, 1}) {
    SCOPED_TRACE(failed_overwrites);
    FlakyStore f;
    f.l2.fail_overwrites = failed_overwrites;  // then the retry must still replace it
    const size_t bytes = GetParam();
    auto c = MakeChain(1, bytes, 2);
    const std::string key = layout::BlobKey("kv", "default", HashPayload(c.payloads[0]));
    const std::vector<uint8_t> junk(100, 0xee);
    ASSERT_TRUE(f.l2.inner()->Put(key, {ByteView(junk)}, {}).ok());  // a damaged leftover
    ASSERT_TRUE(f.store->PutBlocks("default", kFp, c.Puts()).ok());
    ASSERT_TRUE(f.store->PublishChain("default", kFp, c.tip(), c.tip()).ok());
    auto stored = f.l2.inner()->Head(key);
    ASSERT_TRUE(stored.ok());
    EXPECT_EQ(stored->size, 48u + bytes);
  }
}

TEST_P(StoreFailuresBlobSize, ABlobAlreadyInL2IsReusedNotWrittenAgain) {
  FlakyStore f;
  const size_t bytes = GetParam();
  auto c = MakeChain(1, bytes, 2);
  ASSERT_TRUE(f.store->PutBlocks("default", kFp, c.Puts()).ok());
  ASSERT_TRUE(f.store->PublishChain("default", kFp, c.tip(), c.tip()).ok());
  const std::string key = layout::BlobKey("kv", "default", HashPayload(c.payloads[0]));
  const std::string etag = f.l2.inner()->Head(key)->etag;
  f.Reopen();  // an empty RAM cache: the same bytes put again find their blob only in L2
  ASSERT_TRUE(f.store->PutBlocks("default", kFp, c.Puts()).ok());
  ASSERT_TRUE(f.store->PublishChain("default", kFp, c.tip(), c.tip()).ok());
  EXPECT_EQ(f.l2.inner()->Head(key)->etag, etag);
}

INSTANTIATE_TEST_SUITE_P(BelowAndAboveTheLookFirstSize, StoreFailuresBlobSize,
                         ::testing::Values(size_t{10000},
                                           size_t{limits::kBlobBytesLookedForFirst + 1000}));

TEST(StoreFailures, ADamagedHeadIsReplacedByTheNextLastWriterWinsPublish) {
  FlakyStore f;
  auto c = MakeChain(2, 256, 3);
  ASSERT_TRUE(f.store->PutBlocks("default", kFp, c.Puts()).ok());
  ASSERT_TRUE(f.store->PublishChain("default", kFp, Key(900), c.keys[0]).ok());
  const std::string key = layout::ChainKey("kv", "default", kFp, Key(900));
  const std::vector<uint8_t> junk(80, 0x11);
  ASSERT_TRUE(f.l2.inner()->Put(key, {ByteView(junk)}, {}).ok());
  // A compare-and-swap cannot trust a head it cannot read ...
  EXPECT_EQ(f.store->PublishChain("default", kFp, Key(900), c.tip(), 1).status().code(),
            Code::kCorruption);
  // ... but the next last-writer-wins publish replaces it instead of failing forever.
  auto v = f.store->PublishChain("default", kFp, Key(900), c.tip());
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*f.store->LookupPrefix("default", kFp, c.keys), 2u);
  EXPECT_TRUE(f.store->Refresh().ok());
  EXPECT_EQ(*f.store->LookupPrefix("default", kFp, c.keys), 2u);
}

// An in-memory L1 that refuses every batch writing a chain head record while `fail_heads` is set.
class HeadRecordsRefused final : public MemMetaStoreWrapper {
 public:
  std::atomic<bool> fail_heads{false};
  Status Write(const MetaWriteBatch& batch, bool sync) override {
    for (const auto& op : batch.ops()) {
      if (fail_heads && op.first.starts_with(meta_records::kHeadPrefix)) {
        return Status::Unavailable("injected: L1 refused a head record");
      }
    }
    return MemMetaStoreWrapper::Write(batch, sync);
  }
};

// Two stores over one L2: A publishes `c` (version 1), B learns it and publishes version 2, which
// A's L0 does not know.
void PublishOnAThenOnB(Store& a, Store& b, const TestChain& c) {
  ASSERT_TRUE(a.PutBlocks("default", kFp, c.Puts()).ok());
  ASSERT_EQ(*a.PublishChain("default", kFp, c.tip(), c.tip()), 1u);
  ASSERT_TRUE(b.Refresh().ok());
  ASSERT_EQ(*b.PublishChain("default", kFp, c.tip(), c.tip()), 2u);
}

// L1 is a cache of L2's heads: a publish whose head L2 took succeeds even if L1 cannot record it
// (logged; the next open or refresh repairs L1). So must one that first lost a race to another
// host and had to learn the newer head from L2 — with L1 refusing that head too.
TEST(StoreFailures, APublishThatLearnsANewerHeadFromL2GoesOnWhenL1CannotRecordIt) {
  FlakyObjectStore l2;  // one bucket, two hosts
  HeadRecordsRefused l1_a;
  std::unique_ptr<MetaStore> l1_b = NewMemMetaStore();
  auto a = OpenStoreOver(&l2, &l1_a);
  auto b = OpenStoreOver(&l2, l1_b.get());
  ASSERT_TRUE(a && b);
  auto c = MakeChain(2, 256, 8);
  ASSERT_NO_FATAL_FAILURE(PublishOnAThenOnB(*a, *b, c));
  l1_a.fail_heads = true;
  auto v = a->PublishChain("default", kFp, c.tip(), c.tip());  // reads 2 from L2, then writes
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, 3u);
  l1_a.fail_heads = false;
  ASSERT_TRUE(b->Refresh().ok());
  EXPECT_EQ(b->ListChains("default").value().at(0).version, 3u);
}

// The same for a refresh: every head L2 has changed reaches L0 though L1 refuses to record them
// (each refresh once stopped at the first, UNAVAILABLE: N changes took N refreshes).
TEST(StoreFailures, ARefreshLoadsEveryChangedHeadWhenL1CannotRecordThem) {
  FlakyObjectStore l2;
  HeadRecordsRefused l1_a;
  std::unique_ptr<MetaStore> l1_b = NewMemMetaStore();
  auto a = OpenStoreOver(&l2, &l1_a);
  auto b = OpenStoreOver(&l2, l1_b.get());
  ASSERT_TRUE(a && b);
  std::vector<TestChain> chains;
  for (uint64_t i = 0; i < 3; ++i) {
    chains.push_back(MakeChain(2, 256, 30 + i));
    ASSERT_TRUE(b->PutBlocks("default", kFp, chains.back().Puts()).ok());
    ASSERT_TRUE(b->PublishChain("default", kFp, chains.back().tip(), chains.back().tip()).ok());
  }
  l1_a.fail_heads = true;
  auto report = a->Refresh();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->chains_added, 3u);
  for (const TestChain& c : chains) EXPECT_EQ(*a->LookupPrefix("default", kFp, c.keys), 2u);
  EXPECT_EQ(a->Stats().refresh_failures, 0u);
}

// L0 keeps a digest of each head's ETag, not the ETag (radix_index.h): a publish over a chain L0
// has looks the head up in L2 for the base of its conditional write. When L2's head is not the
// one L0 has (another host replaced it), the publish reads it first and writes once, numbered
// after it; when it is, the head's bytes are not read.
TEST(StoreFailures, APublishOverAHeadAnotherHostReplacedLearnsItBeforeWriting) {
  FlakyObjectStore l2;  // one bucket, two hosts
  std::unique_ptr<MetaStore> l1_a = NewMemMetaStore(), l1_b = NewMemMetaStore();
  auto a = OpenStoreOver(&l2, l1_a.get());
  auto b = OpenStoreOver(&l2, l1_b.get());
  ASSERT_TRUE(a && b);
  auto c = MakeChain(2, 256, 9);
  ASSERT_NO_FATAL_FAILURE(PublishOnAThenOnB(*a, *b, c));
  for (const uint64_t want : {3u, 4u}) {
    SCOPED_TRACE(want == 3 ? "A's L0 lags L2" : "A's L0 is L2's");
    const StoreStats before = a->Stats();
    auto v = a->PublishChain("default", kFp, c.tip(), c.tip());
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ(*v, want);
    EXPECT_EQ(a->Stats().l2_puts - before.l2_puts, 1u);  // no conditional write failed
    EXPECT_EQ(a->Stats().l2_gets - before.l2_gets, want == 3 ? 1u : 0u);  // B's head, once
  }
  ASSERT_TRUE(b->Refresh().ok());
  EXPECT_EQ(b->ListChains("default").value().at(0).version, 4u);
}

// An L2 whose requests all fail (Reachability): the store says so, and while it does it sends L2
// one listing at most every 5 s, in the background, so that the answer clears once L2 is back
// even when nothing else asks it (a daemon's /readyz).
class ComesBackWhenListed final : public ObjectStoreWrapper {
 public:
  using ObjectStoreWrapper::ObjectStoreWrapper;
  Status Reachability() const override {
    return down ? Status::Unavailable("every request has failed") : Status::Ok();
  }
  Result<ListPage> List(std::string_view prefix, std::string_view delimiter, std::string_view token,
                        size_t max_keys) override {
    ++lists;
    if (back) down = false;
    return ObjectStoreWrapper::List(prefix, delimiter, token, max_keys);
  }
  std::atomic<bool> down{false}, back{false};
  std::atomic<int> lists{0};
};

TEST(StoreFailures, AnUnreachableL2IsReportedAndProbedUntilItAnswers) {
  ManualClock clock;
  auto mem = NewMemObjectStore(&clock);
  ComesBackWhenListed l2(mem.get());
  auto l1 = NewMemMetaStore();
  auto executor = NewInlineExecutor();
  auto store = OpenStoreOver(&l2, l1.get(), &clock, executor.get());
  ASSERT_TRUE(store);
  executor->Drain();
  EXPECT_TRUE(store->L2Reachability().ok());
  const int before = l2.lists.load();
  l2.down = true;
  EXPECT_EQ(store->L2Reachability().code(), Code::kUnavailable);
  EXPECT_EQ(store->L2Reachability().code(), Code::kUnavailable);
  executor->Drain();
  EXPECT_EQ(l2.lists.load(), before + 1) << "one probe for two calls within 5 s";
  clock.Advance(5'000'000);
  l2.back = true;
  EXPECT_EQ(store->L2Reachability().code(), Code::kUnavailable);  // as last seen
  executor->Drain();
  EXPECT_EQ(l2.lists.load(), before + 2);
  EXPECT_TRUE(store->L2Reachability().ok());
}

TEST(StoreFailures, ParentLinksThatFormACycleAreRefused) {
  FlakyStore f;
  auto a = Payload(1, 64), b = Payload(2, 64);
  BlockPut pa{Key(1), Key(2), a};  // A's parent is B ...
  BlockPut pb{Key(2), Key(1), b};  // ... and B's parent is A
  ASSERT_TRUE(f.store->PutBlocks("default", kFp, {&pa, 1}).ok());
  ASSERT_TRUE(f.store->PutBlocks("default", kFp, {&pb, 1}).ok());
  auto r = f.store->PublishChain("default", kFp, Key(1), Key(1));
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("cycle"), std::string::npos);
}

}  // namespace
}  // namespace wombatkv::testing
