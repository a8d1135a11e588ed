// Orphan GC on real store output: only expired orphans go, referenced blobs never do, failed
// deletes are retried and never counted as freed, and the two halves of the race protection
// (R3: the collector restores; R4: the publisher re-uploads) each save a concurrent publish.
#include "gc/orphan_gc.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <utility>

#include "gc/gc_test_util.h"
#include "layout/chain_head.h"
#include "layout/envelope.h"
#include "layout/object_keys.h"
#include "store/store_test_util.h"

namespace wombatkv::testing {
namespace {

const Fingerprint kFp = Fp(7);
constexpr size_t kBlockBytes = 1000;
constexpr uint64_t kBlobBytes = layout::kEnvelopeHeaderBytes + kBlockBytes;

// One L2 shared by every store of a test (each store gets its own L1, as separate processes).
struct Planes {
  ManualClock clock;
  std::unique_ptr<ObjectStore> l2 = NewMemObjectStore(&clock);
  std::vector<std::unique_ptr<MetaStore>> l1s;
  std::unique_ptr<Executor> inline_executor = NewInlineExecutor();

  // A store on `l2` (default: the shared one). Uploads run inline, when a publish awaits them.
  std::unique_ptr<Store> Open(ObjectStore* over = nullptr) {
    l1s.push_back(NewMemMetaStore());
    StoreOptions o;
    o.object_store = over ? over : l2.get();
    o.meta_store = l1s.back().get();
    o.clock = &clock;
    o.executor = inline_executor.get();
    o.log = [](LogLevel, const std::string&) {};
    auto s = Store::Open(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  // Puts `chain` in `ns` and publishes it (tip = chain id).
  void Publish(const TestChain& chain, std::string_view ns = "default") {
    auto store = Open();
    ASSERT_TRUE(store->PutBlocks(ns, kFp, chain.Puts()).ok());
    auto v = store->PublishChain(ns, kFp, chain.tip(), chain.tip(), std::nullopt, nullptr);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
  }

  // Puts blocks and stops before publishing: their blobs reach L2 (the close drains the uploads)
  // and become orphans.
  void PutOrphans(const TestChain& chain, std::string_view ns = "default") {
    auto store = Open();
    ASSERT_TRUE(store->PutBlocks(ns, kFp, chain.Puts()).ok());
    store.reset();
  }

  std::string BlobKey(const std::vector<uint8_t>& payload, std::string_view ns = "default") {
    return layout::BlobKey("kv", ns, HashPayload(payload));
  }
  bool Exists(const std::string& key) { return l2->Head(key).ok(); }

  gc::GcReport Pass(gc::OrphanCollector& collector) {
    auto r = collector.RunPass();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : gc::GcReport{};
  }
};

gc::GcOptions Grace(uint64_t grace_us) {
  gc::GcOptions o;
  o.grace_us = grace_us;
  return o;
}

TEST(OrphanGc, DeletesOnlyExpiredOrphansAndNeverAReferencedBlob) {
  Planes p;
  TestChain published = MakeChain(3, kBlockBytes, 1);
  TestChain old_orphans = MakeChain(2, kBlockBytes, 2);
  TestChain young_orphan = MakeChain(1, kBlockBytes, 3);
  p.Publish(published);
  p.PutOrphans(old_orphans);
  p.clock.Advance(50 * kMinuteUs);
  p.PutOrphans(young_orphan);
  p.clock.Advance(20 * kMinuteUs);  // old: 70 min, young: 20 min

  gc::OrphanCollector collector(p.l2.get(), &p.clock, Grace(kHourUs));
  gc::GcReport r = p.Pass(collector);
  EXPECT_EQ(r.heads, 1u);
  EXPECT_EQ(r.blobs, 6u);
  EXPECT_EQ(r.orphans, 3u);
  EXPECT_EQ(r.orphan_bytes, 3 * kBlobBytes);
  EXPECT_EQ(r.expired, 2u);
  EXPECT_EQ(r.deleted, 2u);
  EXPECT_EQ(r.freed_bytes, 2 * kBlobBytes);
  EXPECT_EQ(r.delete_failures, 0u);
  ASSERT_EQ(r.removed.size(), 2u);
  EXPECT_EQ(r.removed[0].age_us, 70 * kMinuteUs);
  for (const auto& payload : old_orphans.payloads) EXPECT_FALSE(p.Exists(p.BlobKey(payload)));
  EXPECT_TRUE(p.Exists(p.BlobKey(young_orphan.payloads[0])));
  for (const auto& payload : published.payloads) EXPECT_TRUE(p.Exists(p.BlobKey(payload)));

  // Much later: the young orphan goes too; the published chain's blobs never do.
  p.clock.Advance(10 * kHourUs);
  r = p.Pass(collector);
  EXPECT_EQ(r.deleted, 1u);
  EXPECT_EQ(r.freed_bytes, kBlobBytes);
  for (const auto& payload : published.payloads) EXPECT_TRUE(p.Exists(p.BlobKey(payload)));
  auto store = p.Open();
  auto got = store->GetBlocks("default", kFp, published.keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->total_bytes(), 3 * kBlockBytes);
}

TEST(OrphanGc, DryRunReportsWhatWouldGoAndDeletesNothing) {
  Planes p;
  TestChain orphans = MakeChain(2, kBlockBytes, 2);
  p.PutOrphans(orphans);
  p.clock.Advance(2 * kHourUs);
  gc::GcOptions o = Grace(kHourUs);
  o.dry_run = true;
  gc::OrphanCollector collector(p.l2.get(), &p.clock, o);
  gc::GcReport r = p.Pass(collector);
  EXPECT_EQ(r.expired, 2u);
  EXPECT_EQ(r.removed.size(), 2u);
  EXPECT_EQ(r.deleted, 0u);
  EXPECT_EQ(r.freed_bytes, 0u);
  for (const auto& payload : orphans.payloads) EXPECT_TRUE(p.Exists(p.BlobKey(payload)));
}

// Fails the first `failures` deletes of one key with Unavailable.
class FailingDeletes final : public ObjectStoreWrapper {
 public:
  explicit FailingDeletes(ObjectStore* target) : ObjectStoreWrapper(target) {}
  std::string key;
  int failures = 0;
  int attempts = 0;
  Status Delete(std::string_view k) override {
    if (k == key) {
      ++attempts;
      if (failures > 0) {
        --failures;
        return Status::Unavailable("injected: delete failed");
      }
    }
    return ObjectStoreWrapper::Delete(k);
  }
};

TEST(OrphanGc, AFailedDeleteIsReportedRetriedAtTheNextPassAndNeverCountedAsFreed) {
  Planes p;
  TestChain orphans = MakeChain(2, kBlockBytes, 2);
  p.PutOrphans(orphans);
  p.clock.Advance(2 * kHourUs);
  FailingDeletes l2(p.l2.get());
  l2.key = p.BlobKey(orphans.payloads[0]);
  l2.failures = 1;
  gc::OrphanCollector collector(&l2, &p.clock, Grace(kHourUs));

  gc::GcReport first = p.Pass(collector);
  EXPECT_EQ(first.expired, 2u);
  EXPECT_EQ(first.delete_failures, 1u);
  EXPECT_EQ(first.deleted, 1u);
  EXPECT_EQ(first.freed_bytes, kBlobBytes);  // only the one that went
  ASSERT_EQ(first.problems.size(), 1u);
  EXPECT_NE(first.problems[0].find("retried at the next pass"), std::string::npos);
  EXPECT_EQ(collector.retry_backlog(), 1u);
  EXPECT_TRUE(p.Exists(l2.key));

  gc::GcReport second = p.Pass(collector);
  EXPECT_EQ(second.retried, 1u);
  EXPECT_EQ(second.deleted, 1u);
  EXPECT_EQ(second.freed_bytes, kBlobBytes);
  EXPECT_EQ(second.delete_failures, 0u);
  EXPECT_EQ(collector.retry_backlog(), 0u);
  EXPECT_FALSE(p.Exists(l2.key));
  EXPECT_EQ(l2.attempts, 2);
}

TEST(OrphanGc, AnUnreadableHeadStopsDeletionInItsNamespaceOnly) {
  Planes p;
  TestChain a = MakeChain(2, kBlockBytes, 1), b = MakeChain(2, kBlockBytes, 2);
  p.Publish(a, "ns-a");
  p.PutOrphans(MakeChain(1, kBlockBytes, 3), "ns-a");
  p.PutOrphans(MakeChain(1, kBlockBytes, 4), "ns-b");
  // Damage ns-a's head: what it references is now unknown (R2).
  const std::string head = layout::ChainKey("kv", "ns-a", kFp, a.tip());
  ASSERT_TRUE(p.l2->Put(head, {AsBytes(std::string("garbage"))}, PutOptions{}).ok());
  p.clock.Advance(2 * kHourUs);
  gc::OrphanCollector collector(p.l2.get(), &p.clock, Grace(kHourUs));
  gc::GcReport r = p.Pass(collector);
  EXPECT_EQ(r.namespaces, 2u);
  EXPECT_EQ(r.namespaces_skipped, 1u);
  EXPECT_EQ(r.deleted, 1u);  // ns-b's orphan only
  ASSERT_EQ(r.removed.size(), 1u);
  EXPECT_EQ(r.removed[0].ns, "ns-b");
  for (const auto& payload : a.payloads) EXPECT_TRUE(p.Exists(p.BlobKey(payload, "ns-a")));
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems[0].find(head), std::string::npos) << r.problems[0];
}

// Reports no modification times, like a backend that does not know them.
class NoTimes final : public ObjectStoreWrapper {
 public:
  explicit NoTimes(ObjectStore* target) : ObjectStoreWrapper(target) {}
  Result<ListPage> List(std::string_view prefix, std::string_view delimiter,
                        std::string_view token, size_t max_keys) override {
    auto page = ObjectStoreWrapper::List(prefix, delimiter, token, max_keys);
    if (page.ok()) {
      for (ObjectInfo& o : page->objects) o.modified_us = 0;
    }
    return page;
  }
};

TEST(OrphanGc, AnOrphanOfUnknownAgeIsWatchedForAGracePeriodBeforeItGoes) {
  Planes p;
  TestChain orphans = MakeChain(1, kBlockBytes, 2);
  p.PutOrphans(orphans);
  p.clock.Advance(5 * kHourUs);  // old, but nothing says so
  NoTimes l2(p.l2.get());
  gc::OrphanCollector collector(&l2, &p.clock, Grace(kHourUs));
  gc::GcReport r = p.Pass(collector);
  EXPECT_EQ(r.orphans, 1u);
  EXPECT_EQ(r.expired, 0u);
  p.clock.Advance(30 * kMinuteUs);
  EXPECT_EQ(p.Pass(collector).expired, 0u);
  // A new collector has seen nothing: it starts its own watch.
  gc::OrphanCollector fresh(&l2, &p.clock, Grace(kHourUs));
  p.clock.Advance(31 * kMinuteUs);
  EXPECT_EQ(p.Pass(fresh).expired, 0u);
  r = p.Pass(collector);
  EXPECT_EQ(r.deleted, 1u);
  EXPECT_FALSE(p.Exists(p.BlobKey(orphans.payloads[0])));
}

TEST(OrphanGc, DeletesPerPassAreBounded) {
  Planes p;
  p.PutOrphans(MakeChain(5, kBlockBytes, 2));
  p.clock.Advance(2 * kHourUs);
  gc::GcOptions o = Grace(kHourUs);
  o.deletes_per_pass_max = 2;
  o.batch_bytes_max = 1;  // one blob per batch: the re-check runs after each
  gc::OrphanCollector collector(p.l2.get(), &p.clock, o);
  EXPECT_EQ(p.Pass(collector).deleted, 2u);
  EXPECT_EQ(p.Pass(collector).deleted, 2u);
  EXPECT_EQ(p.Pass(collector).deleted, 1u);
  EXPECT_EQ(p.Pass(collector).orphans, 0u);
}

// The first delete waits (at most 30 s) until a second one has started: deletes made one at a
// time never meet.
class MeetingDeletes final : public ObjectStoreWrapper {
 public:
  using ObjectStoreWrapper::ObjectStoreWrapper;
  Status Delete(std::string_view key) override {
    {
      std::unique_lock<std::mutex> g(mu_);
      ++in_;
      most_ = std::max(most_, in_);
      cv_.notify_all();
      if (!first_done_) {
        first_done_ = true;
        cv_.wait_for(g, std::chrono::seconds(30), [&] { return most_ >= 2; });
      }
    }
    Status s = ObjectStoreWrapper::Delete(key);
    std::lock_guard<std::mutex> g(mu_);
    --in_;
    return s;
  }
  int most() {
    std::lock_guard<std::mutex> g(mu_);
    return most_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int in_ = 0, most_ = 0;
  bool first_done_ = false;
};

// With an executor, a pass reads and deletes its candidates several at a time (two round trips
// each: one at a time, a pass of a few thousand orphans took minutes against S3), with the same
// outcome, and a batch still ends at batch_bytes_max for its re-check (R3).
TEST(OrphanGc, WithAnExecutorCandidatesAreReadAndDeletedSeveralAtATime) {
  Planes p;
  MeetingDeletes meeting(p.l2.get());
  TestChain published = MakeChain(3, kBlockBytes, 8);
  p.Publish(published);
  p.PutOrphans(MakeChain(40, kBlockBytes, 9));
  p.clock.Advance(2 * kHourUs);
  auto pool = NewThreadPoolExecutor(4, "test-gc");
  gc::GcOptions o = Grace(kHourUs);
  o.executor = pool.get();
  o.list_lag_us =
      1;  // counts the waits (list_lag_waited_us): one before the deletes, one each re-check
  gc::OrphanCollector collector(&meeting, &p.clock, o);
  gc::GcReport r = p.Pass(collector);
  EXPECT_GE(meeting.most(), 2) << "the deletes ran one at a time";
  EXPECT_EQ(r.orphans, 40u);
  EXPECT_EQ(r.deleted, 40u);
  EXPECT_EQ(r.freed_bytes, 40 * kBlobBytes);
  EXPECT_EQ(r.delete_failures, 0u);
  EXPECT_EQ(r.list_lag_waited_us, 2u) << "40 small blobs are one batch";
  for (const auto& payload : published.payloads) EXPECT_TRUE(p.Exists(p.BlobKey(payload)));

  // Batches of three blobs: ten orphans are four batches, each re-checked.
  p.PutOrphans(MakeChain(10, kBlockBytes, 10));
  p.clock.Advance(2 * kHourUs);
  o.batch_bytes_max = 3 * kBlobBytes;
  gc::OrphanCollector small(&meeting, &p.clock, o);
  r = p.Pass(small);
  EXPECT_EQ(r.deleted, 10u);
  EXPECT_EQ(r.list_lag_waited_us, 1u + 4u);
  auto store = p.Open();
  auto got = store->GetBlocks("default", kFp, published.keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
}

// Counts GETs of chain heads.
class CountingHeadReads final : public ObjectStoreWrapper {
 public:
  using ObjectStoreWrapper::ObjectStoreWrapper;
  Result<ObjectData> Get(std::string_view key, uint64_t offset, uint64_t length) override {
    if (key.find("/chain/") != std::string_view::npos) ++reads_;
    return ObjectStoreWrapper::Get(key, offset, length);
  }
  size_t Take() { return std::exchange(reads_, 0); }

 private:
  size_t reads_ = 0;
};

// cache_heads: a pass reads only heads listed with another ETag than the one an earlier pass read
// (a GET per head per pass, every interval, was the collector's main S3 cost) — and a head that
// changed to name an orphan is read again, so the orphan stays.
TEST(OrphanGc, WithCachedHeadsAPassReadsOnlyTheHeadsThatChanged) {
  Planes p;
  CountingHeadReads counting(p.l2.get());
  std::vector<TestChain> chains;
  for (size_t i = 0; i < 5; ++i) {
    chains.push_back(MakeChain(2, kBlockBytes, 40 + i));
    p.Publish(chains.back());
  }
  const TestChain extension = MakeChain(3, kBlockBytes, 40);  // chains[0] and one block more
  ASSERT_EQ(extension.keys[1], chains[0].keys[1]);
  p.PutOrphans(extension);
  p.clock.Advance(2 * kHourUs);
  gc::GcOptions o = Grace(kHourUs);
  o.cache_heads = true;
  o.dry_run = true;  // first: nothing goes, the heads are learned
  {
    gc::OrphanCollector learn(&counting, &p.clock, o);
    gc::GcReport r = p.Pass(learn);
    EXPECT_EQ(r.heads, 5u);
    EXPECT_EQ(counting.Take(), 5u);
    r = p.Pass(learn);
    EXPECT_EQ(r.heads, 0u);
    EXPECT_EQ(r.heads_unchanged, 5u);
    EXPECT_EQ(counting.Take(), 0u) << "unchanged heads were read again";
    EXPECT_EQ(r.expired, 1u) << "the extension's third block, from the cached heads' names";
  }
  o.dry_run = false;
  gc::OrphanCollector collector(&counting, &p.clock, o);
  EXPECT_EQ(p.Pass(collector).heads, 5u);
  counting.Take();
  // chains[0]'s head is replaced by the extension, which names the orphan: read again, kept.
  p.PutOrphans(extension);
  auto publisher = p.Open();
  ASSERT_TRUE(publisher->PutBlocks("default", kFp, extension.Puts()).ok());
  ASSERT_TRUE(
      publisher
          ->PublishChain("default", kFp, chains[0].tip(), extension.tip(), std::nullopt, nullptr)
          .ok());
  p.clock.Advance(2 * kHourUs);
  gc::GcReport r = p.Pass(collector);
  EXPECT_EQ(r.heads, 1u);
  EXPECT_EQ(r.heads_unchanged, 4u);
  EXPECT_EQ(r.orphans, 0u);
  EXPECT_EQ(r.deleted, 0u);
  EXPECT_TRUE(p.Exists(p.BlobKey(extension.payloads[2])));
}

// A store closing stops a pass under way (GcOptions::stop): no delete after the stop is asked.
TEST(OrphanGc, AStoppedPassDeletesNothingMore) {
  Planes p;
  p.PutOrphans(MakeChain(5, kBlockBytes, 3));
  p.clock.Advance(2 * kHourUs);
  gc::GcOptions o = Grace(kHourUs);
  int asked = 0;
  o.stop = [&] { return ++asked > 3; };  // one namespace, then two deletes
  gc::OrphanCollector collector(p.l2.get(), &p.clock, o);
  EXPECT_EQ(p.Pass(collector).deleted, 2u);
  o.stop = nullptr;
  gc::OrphanCollector again(p.l2.get(), &p.clock, o);
  EXPECT_EQ(p.Pass(again).deleted, 3u) << "the rest were left for a later pass";
}

// ---- the race with a publisher that reuses an orphan (docs/layout.md §7) -------------------

// Runs `hook` once, just before the first call that matches.
class Interposer final : public ObjectStoreWrapper {
 public:
  explicit Interposer(ObjectStore* target) : ObjectStoreWrapper(target) {}
  std::function<bool(std::string_view key)> before_put, before_delete;
  std::function<void()> hook;
  Result<std::string> Put(std::string_view key, const std::vector<ByteView>& parts,
                          const PutOptions& options) override {
    if (before_put && before_put(key)) Fire();
    return ObjectStoreWrapper::Put(key, parts, options);
  }
  Status Delete(std::string_view key) override {
    if (before_delete && before_delete(key)) Fire();
    return ObjectStoreWrapper::Delete(key);
  }

 private:
  void Fire() {
    if (!hook) return;
    auto h = std::move(hook);
    hook = nullptr;
    h();
  }
};

bool IsHead(std::string_view key) { return key.find("/chain/") != std::string_view::npos; }

// R4: the collector runs entirely between the publisher's finding the blob in L2 and its head
// write (so its re-check cannot see the head). Only the publisher's check after the head write
// can notice, and it must put the blob back.
TEST(OrphanGcRace, APublisherThatReusedABlobDeletedBeforeItsHeadUploadsItAgain) {
  Planes p;
  TestChain chain = MakeChain(1, kBlockBytes, 9);
  p.PutOrphans(chain);  // an earlier writer's orphan: same bytes, same blob
  p.clock.Advance(2 * kHourUs);
  const std::string blob = p.BlobKey(chain.payloads[0]);

  Interposer publisher_l2(p.l2.get());
  auto publisher = p.Open(&publisher_l2);
  ASSERT_TRUE(publisher->PutBlocks("default", kFp, chain.Puts()).ok());
  gc::OrphanCollector collector(p.l2.get(), &p.clock, Grace(kHourUs));
  gc::GcReport during;
  publisher_l2.before_put = IsHead;
  publisher_l2.hook = [&] { during = p.Pass(collector); };

  auto v = publisher->PublishChain("default", kFp, chain.tip(), chain.tip(), std::nullopt, nullptr);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(during.deleted, 1u);  // the collector did delete it...
  EXPECT_TRUE(p.Exists(blob));    // ...and the publisher put it back before returning OK (G3)
  auto reader = p.Open();
  auto got = reader->GetBlocks("default", kFp, chain.keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->total_bytes(), kBlockBytes);
}

// R3: the publisher's whole publish — finding the blob, writing its head, checking the blob —
// runs after the collector listed the heads and before its delete. Only the collector's re-check
// after the delete can notice, and it must restore the blob.
TEST(OrphanGcRace, AHeadPublishedWhileTheCollectorDeletesGetsItsBlobBack) {
  Planes p;
  TestChain chain = MakeChain(1, kBlockBytes, 9);
  p.PutOrphans(chain);
  p.clock.Advance(2 * kHourUs);
  const std::string blob = p.BlobKey(chain.payloads[0]);

  auto publisher = p.Open();
  ASSERT_TRUE(publisher->PutBlocks("default", kFp, chain.Puts()).ok());
  Interposer collector_l2(p.l2.get());
  collector_l2.before_delete = [&](std::string_view key) { return key == blob; };
  collector_l2.hook = [&] {
    auto v =
        publisher->PublishChain("default", kFp, chain.tip(), chain.tip(), std::nullopt, nullptr);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
  };
  gc::OrphanCollector collector(&collector_l2, &p.clock, Grace(kHourUs));
  gc::GcReport r = p.Pass(collector);
  EXPECT_EQ(r.expired, 1u);
  EXPECT_EQ(r.restored, 1u);
  EXPECT_EQ(r.deleted, 0u);
  EXPECT_EQ(r.freed_bytes, 0u);
  EXPECT_TRUE(r.removed.empty());
  EXPECT_TRUE(p.Exists(blob));
  auto reader = p.Open();
  auto got = reader->GetBlocks("default", kFp, chain.keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
}

// The R3 race: an orphan older than the grace, a publisher that has put the same bytes, and an
// interposer (for the collector's L2) that publishes the chain just before the blob's delete.
struct DeleteRace {
  Planes p;
  TestChain chain = MakeChain(1, kBlockBytes, 9);
  std::string blob;
  std::unique_ptr<Store> publisher;
  Interposer interposer{p.l2.get()};
  DeleteRace() {
    p.PutOrphans(chain);
    p.clock.Advance(2 * kHourUs);
    blob = p.BlobKey(chain.payloads[0]);
    publisher = p.Open();
    EXPECT_TRUE(publisher->PutBlocks("default", kFp, chain.Puts()).ok());
    interposer.before_delete = [this](std::string_view key) { return key == blob; };
    interposer.hook = [this] {
      auto v = publisher->PublishChain("default", kFp, chain.tip(), chain.tip(), std::nullopt,
                                       nullptr);
      EXPECT_TRUE(v.ok()) << v.status().ToString();
    };
  }
  void ExpectReadable() {
    EXPECT_TRUE(p.Exists(blob));
    auto reader = p.Open();
    auto got = reader->GetBlocks("default", kFp, chain.keys);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
  }
};

// A pass stopped right after a delete still re-checks it (R3): a head published meanwhile gets
// its blob back, and the other orphan is left for a later pass.
TEST(OrphanGcRace, AStoppedPassStillRechecksWhatItDeleted) {
  Planes p;
  const TestChain a = MakeChain(1, kBlockBytes, 21), b = MakeChain(1, kBlockBytes, 22);
  p.PutOrphans(a);
  p.PutOrphans(b);
  p.clock.Advance(2 * kHourUs);
  auto publisher = p.Open();
  ASSERT_TRUE(publisher->PutBlocks("default", kFp, a.Puts()).ok());
  ASSERT_TRUE(publisher->PutBlocks("default", kFp, b.Puts()).ok());
  Interposer l2(p.l2.get());
  std::string first;  // the first blob the pass deletes: published just before, then the stop
  l2.before_delete = [&](std::string_view key) {
    if (!first.empty()) return false;
    first = std::string(key);
    return true;
  };
  bool stop = false;
  l2.hook = [&] {
    const TestChain& c = first == p.BlobKey(a.payloads[0]) ? a : b;
    auto v = publisher->PublishChain("default", kFp, c.tip(), c.tip(), std::nullopt, nullptr);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    stop = true;
  };
  gc::GcOptions o = Grace(kHourUs);
  o.stop = [&] { return stop; };
  gc::OrphanCollector collector(&l2, &p.clock, o);
  gc::GcReport r = p.Pass(collector);
  EXPECT_EQ(r.restored, 1u);
  EXPECT_EQ(r.deleted, 0u) << "a delete after the stop";
  EXPECT_TRUE(p.Exists(first));
}

// Fails every listing under one prefix.
class FailingListing final : public ObjectStoreWrapper {
 public:
  FailingListing(ObjectStore* target, std::string prefix)
      : ObjectStoreWrapper(target), prefix_(std::move(prefix)) {}
  Result<ListPage> List(std::string_view prefix, std::string_view delimiter, std::string_view token,
                        size_t limit) override {
    if (prefix.starts_with(prefix_)) return Status::Unavailable("test: listing failed");
    return ObjectStoreWrapper::List(prefix, delimiter, token, limit);
  }

 private:
  std::string prefix_;
};

// The re-checks of a pass's namespaces come together, after one wait for the listing lag (a wait
// per namespace made a pass over N namespaces take N lags), as do their listings before the
// deletes — and a namespace that fails later in
// the pass never skips the re-check of one whose blobs were already deleted (R3): a head
// published in "a" while its orphan was deleted gets the blob back though "b" cannot be listed.
TEST(OrphanGcRace, ThePassesReChecksShareOneWaitAndNoneIsSkippedByALaterFailure) {
  Planes p;
  const TestChain a = MakeChain(1, kBlockBytes, 31), b = MakeChain(2, kBlockBytes, 32);
  p.PutOrphans(a, "a");
  p.PutOrphans(b, "b");
  p.clock.Advance(2 * kHourUs);
  gc::GcOptions o = Grace(kHourUs);
  o.list_lag_us = 1;  // counts the waits (list_lag_waited_us)
  {
    gc::OrphanCollector collector(p.l2.get(), &p.clock, o);
    gc::GcReport r = p.Pass(collector);
    EXPECT_EQ(r.namespaces, 2u);
    EXPECT_EQ(r.deleted, 3u);
    EXPECT_EQ(r.list_lag_waited_us, 2u) << "a wait per namespace";
  }
  p.PutOrphans(a, "a");
  p.PutOrphans(b, "b");
  p.clock.Advance(2 * kHourUs);
  auto publisher = p.Open();
  ASSERT_TRUE(publisher->PutBlocks("a", kFp, a.Puts()).ok());
  Interposer interposer(p.l2.get());
  const std::string blob = p.BlobKey(a.payloads[0], "a");
  interposer.before_delete = [&](std::string_view key) { return key == blob; };
  interposer.hook = [&] {
    auto v = publisher->PublishChain("a", kFp, a.tip(), a.tip(), std::nullopt, nullptr);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
  };
  FailingListing failing(&interposer, layout::NamespacesPrefix("kv") + "b/");
  gc::OrphanCollector collector(&failing, &p.clock, o);
  auto r = collector.RunPass();
  ASSERT_FALSE(r.ok()) << "b could not be listed";
  EXPECT_TRUE(p.Exists(blob)) << "a's deleted blob was never re-checked";
  auto got = p.Open()->GetBlocks("a", kFp, a.keys);
  EXPECT_TRUE(got.ok()) << got.status().ToString();
}

// Every delete is applied but answered with an error (the connection reset after the server
// committed).
class LosesDeleteAnswers final : public ObjectStoreWrapper {
 public:
  explicit LosesDeleteAnswers(ObjectStore* target) : ObjectStoreWrapper(target) {}
  Status Delete(std::string_view key) override {
    WMBT_RETURN_IF_ERROR(ObjectStoreWrapper::Delete(key));
    return Status::Unavailable("test: response lost after the delete was applied");
  }
};

// Found by wombatkv-sim (evict-gc, seed 32, once the final audit stopped excusing every old
// blob): as in R3 above, a head naming the orphan is published between the collector's listing
// and its delete — but the delete's answer is lost. The collector counted it as a failed delete
// and left it out of the re-check, so nothing put back a blob that was in fact gone.
TEST(OrphanGcRace, ADeleteWithItsAnswerLostIsStillRestoredForANewHead) {
  DeleteRace race;
  Planes& p = race.p;
  LosesDeleteAnswers collector_l2(&race.interposer);
  gc::OrphanCollector collector(&collector_l2, &p.clock, Grace(kHourUs));
  gc::GcReport r = p.Pass(collector);
  EXPECT_EQ(r.delete_failures, 1u);
  EXPECT_EQ(r.deleted, 0u);
  EXPECT_EQ(r.freed_bytes, 0u);
  race.ExpectReadable();
}

// After its first delete, every read and write fails until `broken` is cleared (an L2 outage
// that starts mid-pass).
class BreaksAfterDelete final : public ObjectStoreWrapper {
 public:
  explicit BreaksAfterDelete(ObjectStore* target) : ObjectStoreWrapper(target) {}
  bool broken = false;
  Result<std::string> Put(std::string_view key, const std::vector<ByteView>& parts,
                          const PutOptions& options) override {
    if (broken) return Status::Unavailable("test: outage");
    return ObjectStoreWrapper::Put(key, parts, options);
  }
  Result<ObjectData> Get(std::string_view key, uint64_t offset, uint64_t length) override {
    if (broken) return Status::Unavailable("test: outage");
    return ObjectStoreWrapper::Get(key, offset, length);
  }
  Status Delete(std::string_view key) override {
    WMBT_RETURN_IF_ERROR(ObjectStoreWrapper::Delete(key));
    broken = true;
    return Status::Ok();
  }
};

// Found by wombatkv-sim (evict-gc, seed 194): a head naming the orphan appears between the
// collector's listing and its delete, then L2 fails the re-check and the restore. The collector
// reported the problem and dropped the bytes, so the head stayed damaged for good. It now keeps
// them and puts them back at its next pass.
TEST(OrphanGcRace, ARestoreThatFailsIsRetriedAtTheNextPass) {
  DeleteRace race;
  Planes& p = race.p;
  BreaksAfterDelete collector_l2(&race.interposer);
  gc::OrphanCollector collector(&collector_l2, &p.clock, Grace(kHourUs));
  EXPECT_FALSE(collector.RunPass().ok());  // the re-check failed
  EXPECT_FALSE(p.Exists(race.blob));       // and so did the restore
  collector_l2.broken = false;
  gc::GcReport r = p.Pass(collector);
  EXPECT_EQ(r.restored, 1u);
  EXPECT_EQ(r.deleted, 0u);
  race.ExpectReadable();
}

// With a hold directory the kept bytes of a failed restore outlive their collector: the next
// one (a restarted process) puts them back.
TEST(OrphanGcRace, ARestoreThatFailsOutlivesItsCollectorWithAHoldDirectory) {
  DeleteRace race;
  Planes& p = race.p;
  TempDir dir;
  BreaksAfterDelete collector_l2(&race.interposer);
  gc::GcOptions o = Grace(kHourUs);
  o.hold_fs = PosixFileSystem();
  o.hold_dir = dir.path() + "/held";
  {
    gc::OrphanCollector collector(&collector_l2, &p.clock, o);
    EXPECT_FALSE(collector.RunPass().ok());  // the re-check and the restore failed
    EXPECT_FALSE(p.Exists(race.blob));
  }
  collector_l2.broken = false;
  gc::OrphanCollector next(p.l2.get(), &p.clock, o);
  gc::GcReport r = p.Pass(next);
  EXPECT_EQ(r.recovered, 1u);
  EXPECT_EQ(r.restored, 1u);
  EXPECT_EQ(r.deleted, 0u);
  race.ExpectReadable();
  auto left = PosixFileSystem()->ListDir(o.hold_dir);
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());
}

// Eventual listing (wombatkv-sim's list-lag fault): a head written — and its publisher's R4 check
// passed — before the collector's first listing, but missing from it. R3's argument ("a head the
// re-check does not see was written after it") assumed listings are current; with a listing lag
// of L it holds only for a listing at least L after the head. The collector lists the heads again
// after waiting out the lag before it deletes (it used to delete and leave the blob to the
// re-check, which a collector killed first never made: wombatkv-sim seed 51142), so the blob is
// never deleted.
TEST(OrphanGcRace, AHeadALaggingListingHidesStillKeepsItsBlob) {
  Planes p;
  TestChain chain = MakeChain(1, kBlockBytes, 9);
  p.PutOrphans(chain);
  p.clock.Advance(2 * kHourUs);
  const std::string blob = p.BlobKey(chain.payloads[0]);
  p.Publish(chain);  // reuses the old blob: its age says nothing about the new head
  constexpr uint64_t kLagUs = 5 * kMinuteUs;
  LaggingListing lagging(p.l2.get(), &p.clock);
  lagging.hidden = layout::ChainKey("kv", "default", kFp, chain.tip());
  lagging.until_us = p.clock.NowMicros() + kLagUs;
  gc::GcOptions o = Grace(kHourUs);
  o.list_lag_us = kLagUs;
  gc::OrphanCollector collector(&lagging, &p.clock, o);
  gc::GcReport r = p.Pass(collector);
  EXPECT_EQ(r.expired, 1u);
  EXPECT_EQ(r.named_late, 1u);
  EXPECT_EQ(r.deleted, 0u);
  EXPECT_EQ(r.restored, 0u) << "deleted, then put back";
  EXPECT_EQ(r.list_lag_waited_us, kLagUs);  // nothing deleted: no re-check
  EXPECT_TRUE(p.Exists(blob));
  auto reader = p.Open();
  auto got = reader->GetBlocks("default", kFp, chain.keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
}

// Found by wombatkv-sim (evict-gc scenario, seed 4135): the collector kept the bytes of a blob
// that had rotted in L2, and when a new head named it, put those corrupt bytes back — undoing a
// delete that had removed the damage. Corrupt kept bytes are now never restored (the publisher's
// R4 check re-uploads good bytes when it still holds them); a reader gets a miss, never bytes.
TEST(OrphanGcRace, ACorruptOrphanIsNeverPutBack) {
  Planes p;
  TestChain chain = MakeChain(1, kBlockBytes, 11);
  p.PutOrphans(chain);
  const std::string blob = p.BlobKey(chain.payloads[0]);
  {  // rot: same size, one payload byte flipped (then the orphan ages past the grace)
    auto obj = p.l2->Get(blob, 0, kToEnd);
    ASSERT_TRUE(obj.ok());
    std::vector<uint8_t> bytes(obj->bytes->data(), obj->bytes->data() + obj->bytes->size());
    bytes.back() ^= 0x5a;
    ASSERT_TRUE(p.l2->Put(blob, {ByteView(bytes.data(), bytes.size())},
                          PutOptions{PutMode::kOverwrite, {}}).ok());
  }
  p.clock.Advance(2 * kHourUs);
  auto publisher = p.Open();
  ASSERT_TRUE(publisher->PutBlocks("default", kFp, chain.Puts()).ok());
  Interposer collector_l2(p.l2.get());
  collector_l2.before_delete = [&](std::string_view key) { return key == blob; };
  collector_l2.hook = [&] {
    (void)publisher->PublishChain("default", kFp, chain.tip(), chain.tip(), std::nullopt, nullptr);
  };
  gc::OrphanCollector collector(&collector_l2, &p.clock, Grace(kHourUs));
  gc::GcReport r = p.Pass(collector);
  EXPECT_EQ(r.expired, 1u);
  EXPECT_EQ(r.restored, 0u);
  EXPECT_FALSE(p.Exists(blob)) << "corrupt bytes were put back";
  ASSERT_FALSE(r.problems.empty());
  EXPECT_NE(r.problems.back().find("corrupt"), std::string::npos) << r.problems.back();
  auto reader = p.Open();
  EXPECT_FALSE(reader->GetBlocks("default", kFp, chain.keys).ok());
}

}  // namespace
}  // namespace wombatkv::testing
