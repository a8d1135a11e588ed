// Orphan GC as part of the store's background work: eviction stops referencing blobs, the
// store's own collector deletes them once older than the grace period, so the blob bytes L2
// actually holds stay within the budget plus what the grace period lets wait. Failed deletes are
// retried and never counted as freed (R5); blobs of puts awaiting their publish are kept.
#include <atomic>
#include <functional>
#include <map>
#include <optional>

#include "gc/gc_test_util.h"
#include "gc/orphan_gc.h"
#include "layout/chain_head.h"
#include "layout/object_keys.h"
#include "object/pause_once.h"
#include "store/store_test_util.h"

namespace wombatkv::testing {
namespace {

const Fingerprint kFp = Fp(5);
constexpr uint64_t kBlockBytes = 4096;
constexpr uint64_t kBudget = 64 * 1024;

// Fails every delete of a blob while failing() is set; counts HEADs of each key.
class FailingBlobDeletes final : public ObjectStoreWrapper {
 public:
  using ObjectStoreWrapper::ObjectStoreWrapper;
  Result<ObjectInfo> Head(std::string_view key) override {
    {
      std::lock_guard<std::mutex> g(heads_mu_);
      ++heads_[std::string(key)];
    }
    return ObjectStoreWrapper::Head(key);
  }
  // HEADs of these keys since the last call.
  size_t HeadsOf(const std::vector<std::string>& keys) {
    std::lock_guard<std::mutex> g(heads_mu_);
    size_t n = 0;
    for (const std::string& k : keys) n += heads_[k];
    heads_.clear();
    return n;
  }
  Status Delete(std::string_view key) override {
    if (fail_ && key.find("/blob/") != std::string_view::npos) {
      ++failed_;
      return Status::Unavailable("injected delete failure");
    }
    return ObjectStoreWrapper::Delete(key);
  }
  // The next conditional chain-head write (eviction's rewrite) is applied, but its answer lost.
  Result<std::string> Put(std::string_view key, const std::vector<ByteView>& parts,
                          const PutOptions& options) override {
    auto r = ObjectStoreWrapper::Put(key, parts, options);
    if (lose_head_answer_ && r.ok() && options.mode == PutMode::kIfMatch &&
        key.find("/chain/") != std::string_view::npos) {
      lose_head_answer_ = false;
      return Status::Unavailable("injected: response lost after the write was applied");
    }
    return r;
  }
  std::atomic<bool> fail_{false};
  std::atomic<uint64_t> failed_{0};
  std::atomic<bool> lose_head_answer_{false};

 private:
  std::mutex heads_mu_;
  std::map<std::string, size_t> heads_;
};

class StoreGc : public ::testing::Test {
 protected:
  StoreGc() : faulty_(mem_l2_.get()) {}

  StoreOptions Options() {
    StoreOptions o;
    o.object_store = &faulty_;
    o.meta_store = l1_.get();
    o.clock = &clock_;
    o.executor = executor_.get();
    o.cache_bytes_max = 64 << 20;
    o.namespace_bytes_max = {{"default", kBudget}};
    o.eviction_interval_ms = 1000;
    o.gc_grace_us = 10 * kMinuteUs;
    o.gc_interval_ms = 1000;
    o.log = [](LogLevel, const std::string&) {};
    return o;
  }
  Store& Open(const StoreOptions& o) {
    store_.reset();
    auto s = Store::Open(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
    return *store_;
  }
  void PutAndPublish(Store& s, const TestChain& c, std::string_view ns = "default") {
    ASSERT_TRUE(s.PutBlocks(ns, kFp, c.Puts()).ok());
    auto v = s.PublishChain(ns, kFp, c.tip(), c.tip());
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    // The publish ran its uploads itself: the background passes queued meanwhile run here, as a
    // thread pool would have run them by now.
    executor_->Drain();
  }
  // Blob bytes L2 really holds for the namespace (a listing, not the store's accounting).
  uint64_t StoredBlobBytes() {
    const std::string prefix = layout::NamespaceRoot("kv", "default") + "blob/";
    uint64_t bytes = 0;
    std::string token;
    do {
      auto page = mem_l2_->List(prefix, "", token, 1000);
      EXPECT_TRUE(page.ok());
      if (!page.ok()) return 0;
      for (const ObjectInfo& o : page->objects) bytes += o.size;
      token = page->next_token;
    } while (!token.empty());
    return bytes;
  }
  // A hold file with the blob of `payload` in `hold_dir`, as a collector that died after writing
  // it leaves (GcOptions::hold_dir). Returns the blob's key.
  std::string LeaveHoldFile(const std::string& hold_dir, const std::vector<uint8_t>& payload) {
    auto blob = HeldBlobOf(mem_l2_.get(), "default", payload);
    EXPECT_TRUE(blob.has_value());
    if (!blob) return std::string();
    EXPECT_FALSE(testing::LeaveHoldFile(hold_dir, {*blob}).empty());
    return blob->orphan.key;
  }
  NamespaceUsage UsageOf(Store& s) {
    auto u = s.Usage("default", false);
    EXPECT_EQ(u.size(), 1u);
    return u.empty() ? NamespaceUsage{} : u[0];
  }

  ManualClock clock_;
  std::unique_ptr<ObjectStore> mem_l2_ = NewMemObjectStore(&clock_);  // modification times: clock_
  std::unique_ptr<MetaStore> l1_ = NewMemMetaStore();
  FailingBlobDeletes faulty_;
  std::unique_ptr<Executor> executor_ = NewInlineExecutor();
  std::unique_ptr<Store> store_;
};

// The issue this closes: a store under a budget evicted, but nothing deleted the blobs, so L2
// grew without bound. Now, at every step of a write load 50× the budget, the blob bytes in L2 are
// at most the budget plus what was unreferenced within the grace period and one GC interval
// (one chain per 30 s here) — and once the load stops and the grace passes, within the budget.
TEST_F(StoreGc, BackgroundGcHoldsStoredBlobBytesNearTheBudget) {
  StoreOptions o = Options();
  o.gc_grace_us = 2 * kMinuteUs;
  Store& s = Open(o);
  constexpr size_t kChains = 100, kBlocks = 8;
  constexpr uint64_t kStep = 30ull * 1000000;
  const uint64_t chain_bytes = kBlocks * (kBlockBytes + 48);
  // Chains unreferenced within grace + interval + one step may still be in L2, plus the chain
  // being written.
  const uint64_t waiting = (o.gc_grace_us + o.gc_interval_ms * 1000 + kStep) / kStep + 1;
  const uint64_t bound = kBudget + waiting * chain_bytes + chain_bytes;
  uint64_t peak = 0;
  for (size_t i = 0; i < kChains; ++i) {
    PutAndPublish(s, MakeChain(kBlocks, kBlockBytes, /*salt=*/i + 1));
    clock_.Advance(kStep);
    peak = std::max(peak, StoredBlobBytes());
    ASSERT_LE(StoredBlobBytes(), bound) << "after chain " << i;
  }
  ASSERT_GT(kChains * chain_bytes, 10 * bound);  // the load really was far over the bound

  // Load stops; the grace passes; operations start the background passes.
  clock_.Advance(o.gc_grace_us + 2 * o.gc_interval_ms * 1000);
  for (int i = 0; i < 3; ++i) {
    // A publish elsewhere schedules the background passes; they run (inline executor) here.
    PutAndPublish(s, MakeChain(1, 16, 1000 + i), "other");
    clock_.Advance(o.gc_interval_ms * 1000);
  }
  const uint64_t stored = StoredBlobBytes();
  EXPECT_LE(stored, kBudget);
  const NamespaceUsage u = UsageOf(s);
  EXPECT_EQ(u.unreferenced_bytes, 0u) << "deleted blobs must leave the unreferenced count";
  EXPECT_EQ(u.blob_bytes, stored) << "L2 holds exactly the referenced blobs";
  const StoreStats st = s.Stats();
  EXPECT_GT(st.gc_passes, 0u);
  EXPECT_GT(st.gc_blobs_deleted, 0u);
  EXPECT_EQ(st.gc_bytes_freed, kChains * chain_bytes - stored);
  EXPECT_EQ(st.gc_delete_failures, 0u);
  EXPECT_GT(st.gc_heads_read, 0u);
  EXPECT_GT(st.gc_heads_unchanged, 0u) << "every pass read every head again";
  EXPECT_EQ(st.l2_unreferenced_bytes, 0u);
  std::printf("budget %llu B, bound %llu B, peak stored %llu B, written %llu B\n",
              static_cast<unsigned long long>(kBudget), static_cast<unsigned long long>(bound),
              static_cast<unsigned long long>(peak),
              static_cast<unsigned long long>(kChains * chain_bytes));
}

// Holds the collector's listing of the namespaces (the first call of every orphan-GC pass) once
// armed, until released: a GC pass that takes long, as one against S3 does (it waits out the
// listing lag before its re-check).
class HeldGcListing final : public ObjectStoreWrapper {
 public:
  using ObjectStoreWrapper::ObjectStoreWrapper;
  Result<ListPage> List(std::string_view prefix, std::string_view delimiter, std::string_view token,
                        size_t limit) override {
    if (armed_ && delimiter == "/" && prefix == layout::NamespacesPrefix("kv")) pause_.Hold();
    return ObjectStoreWrapper::List(prefix, delimiter, token, limit);
  }
  std::atomic<bool> armed_{false};
  PauseOnce pause_;
};

// Found by tests/chaos/chaos.py (3 daemons on radosgw, a 3 MiB budget): the orphan-GC pass ran
// inside the eviction task, so for the 46 s a pass took against S3 no eviction pass could start,
// and the namespaces grew to 41 MiB. A GC pass is now a task of its own: with one held in its
// listing, publishes far over the budget are still evicted down to it.
TEST_F(StoreGc, EvictionGoesOnWhileAnOrphanGcPassIsUnderWay) {
  HeldGcListing held(mem_l2_.get());
  auto pool = NewThreadPoolExecutor(2, "test-bg");
  StoreOptions o = Options();
  o.object_store = &held;
  o.executor = pool.get();
  Store& s = Open(o);
  held.armed_ = true;
  clock_.Advance(o.gc_interval_ms * 1000 + 1);  // the first GC pass is due
  const uint64_t chain_bytes = 8 * (kBlockBytes + 48);
  size_t salt = 1;
  auto publish = [&] {
    const TestChain c = MakeChain(8, kBlockBytes, salt++);
    ASSERT_TRUE(s.PutBlocks("default", kFp, c.Puts()).ok());
    ASSERT_TRUE(s.PublishChain("default", kFp, c.tip(), c.tip()).ok());
  };
  // Over the budget: an eviction pass, then a GC pass, which the listing holds.
  while (UsageOf(s).referenced_bytes() <= kBudget) publish();
  held.pause_.AwaitHeld();  // an orphan-GC pass started, and waits
  // Four budgets' worth more while the GC pass is held.
  for (uint64_t b = 0; b < 4 * kBudget; b += chain_bytes) publish();
  // Eviction brings the namespace back within its budget (a generous wait, not a timing: the
  // old code never got there while the GC pass was held). A pass that found every chain over
  // the budget in flight leaves the next one to the eviction interval, whose timer an injected
  // clock replaces with operations: so the fake clock moves an interval on, and an unpublished
  // put (which changes no referenced byte) lets a pass start, as the timer would.
  Clock* real = RealClock();
  const uint64_t give_up = real->NowMicros() + 60ull * 1000000;
  uint64_t referenced = UsageOf(s).referenced_bytes();
  while (referenced > kBudget && real->NowMicros() < give_up) {
    real->SleepMicros(10'000);
    clock_.Advance(o.eviction_interval_ms * 1000);
    ASSERT_TRUE(s.PutBlocks("default", kFp, MakeChain(1, kBlockBytes, salt++).Puts()).ok());
    referenced = UsageOf(s).referenced_bytes();
  }
  EXPECT_LE(referenced, kBudget) << "eviction waited for the orphan-GC pass";
  EXPECT_EQ(s.Stats().gc_passes, 1u);  // the held one; none overlaps it
  held.pause_.Release();
  store_.reset();  // before the executor it uses; ends the GC pass
}

// On a shared L2 the store's collector keeps the bytes of its deletes under the data directory
// until their re-check (GcOptions::hold_dir, docs/layout.md §7). What an earlier process deleted
// and did not re-check (it was killed mid-pass: OrphanGcCrash) is re-checked by the first pass
// after the next open — with the first operation, not a GC interval later — and a blob a chain
// names is put back.
TEST_F(StoreGc, AnOpenFinishesTheRecheckAnEarlierProcessLeftInTheDataDirectory) {
  TempDir dir;
  StoreOptions o = Options();
  o.data_dir = dir.path();
  o.gc_interval_ms = 3600 * 1000;
  const std::string hold_dir = dir.path() + "/gc-held";
  const TestChain c = MakeChain(2, kBlockBytes, 77);
  PutAndPublish(Open(o), c);
  store_.reset();
  // What a collector killed before its re-check leaves: the blob deleted, its bytes held.
  const std::string key = LeaveHoldFile(hold_dir, c.payloads[1]);
  ASSERT_TRUE(mem_l2_->Delete(key).ok());
  Store& s = Open(o);
  ASSERT_TRUE(s.PutBlocks("default", kFp, MakeChain(1, kBlockBytes, 78).Puts()).ok());
  executor_->Drain();
  EXPECT_TRUE(mem_l2_->Head(key).ok()) << "the blob a chain names was not put back";
  EXPECT_EQ(s.Stats().gc_blobs_recovered, 1u);
  EXPECT_EQ(gc::HoldFiles::Count(PosixFileSystem(), hold_dir), 0u);
  auto got = s.GetBlocks("default", kFp, c.keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->total_bytes(), 2 * kBlockBytes);
}

// A store that runs no orphan GC (no budget or TTL) says that leftovers wait, and what to do.
TEST_F(StoreGc, AnOpenThatRunsNoGcWarnsOfLeftovers) {
  TempDir dir;
  const std::string hold_dir = dir.path() + "/gc-held";
  const TestChain c = MakeChain(1, kBlockBytes, 79);
  PutAndPublish(Open(Options()), c);
  store_.reset();
  LeaveHoldFile(hold_dir, c.payloads[0]);
  std::vector<std::string> warnings;
  StoreOptions o = Options();
  o.data_dir = dir.path();
  o.namespace_bytes_max.clear();
  o.log = [&](LogLevel level, const std::string& m) {
    if (level == LogLevel::kWarn) warnings.push_back(m);
  };
  Open(o);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(hold_dir + " holds blobs an earlier pass deleted"), std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[0].find("WMBT_KV_NAMESPACE_MAX_BYTES"), std::string::npos) << warnings[0];
  EXPECT_EQ(gc::HoldFiles::Count(PosixFileSystem(), hold_dir), 1u);  // kept for a later pass
}

// With background GC off, eviction still runs but no blob is deleted (the old behaviour, kept for
// deployments that run `wombatkv gc` themselves).
TEST_F(StoreGc, BackgroundGcOffDeletesNothing) {
  StoreOptions o = Options();
  o.background_gc = false;
  Store& s = Open(o);
  for (size_t i = 0; i < 20; ++i) {
    PutAndPublish(s, MakeChain(8, kBlockBytes, i + 1));
    clock_.Advance(o.gc_grace_us);
  }
  EXPECT_EQ(s.Stats().gc_passes, 0u);
  EXPECT_EQ(StoredBlobBytes(), 20 * 8 * (kBlockBytes + 48));
  EXPECT_GT(UsageOf(s).unreferenced_bytes, 0u);
}

// R5: a failed delete leaves the blob, is not counted as freed, and is retried at the next pass.
TEST_F(StoreGc, FailedDeleteIsRetriedAndNotCounted) {
  StoreOptions o = Options();
  o.background_gc = false;  // passes only when the test asks
  Store& s = Open(o);
  for (size_t i = 0; i < 6; ++i) PutAndPublish(s, MakeChain(8, kBlockBytes, i + 1));
  ASSERT_TRUE(s.Evict().ok());
  const uint64_t unref = UsageOf(s).unreferenced_bytes;
  ASSERT_GT(unref, 0u);
  const uint64_t before = StoredBlobBytes();
  clock_.Advance(o.gc_grace_us + 1);

  faulty_.fail_ = true;
  auto r = s.CollectOrphans();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r->delete_failures, 0u);
  EXPECT_EQ(r->deleted, 0u);
  EXPECT_EQ(r->freed_bytes, 0u);
  EXPECT_EQ(r->retry_backlog, r->delete_failures);
  EXPECT_EQ(StoredBlobBytes(), before);
  EXPECT_EQ(UsageOf(s).unreferenced_bytes, unref) << "nothing was deleted, nothing is freed";
  EXPECT_EQ(s.Stats().gc_bytes_freed, 0u);
  EXPECT_EQ(s.Stats().gc_delete_failures, r->delete_failures);

  faulty_.fail_ = false;
  auto again = s.CollectOrphans();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->deleted, r->delete_failures);
  EXPECT_EQ(again->freed_bytes, unref);
  EXPECT_EQ(again->retry_backlog, 0u);
  EXPECT_EQ(StoredBlobBytes(), before - unref);
  EXPECT_EQ(UsageOf(s).unreferenced_bytes, 0u);
  EXPECT_EQ(s.Stats().gc_bytes_freed, unref);
}

// A put awaiting its publish longer than the grace period: its blob is unreferenced in L2, yet the
// store's collector keeps it, so the publish never names a deleted blob.
TEST_F(StoreGc, KeepsBlobsOfPutsAwaitingPublish) {
  StoreOptions o = Options();
  o.background_gc = false;
  auto uploads = NewThreadPoolExecutor(1, "test-upload");  // the blobs reach L2 before publish
  o.executor = uploads.get();
  Store& s = Open(o);
  const TestChain c = MakeChain(2, kBlockBytes, 77);
  ASSERT_TRUE(s.PutBlocks("default", kFp, c.Puts()).ok());
  uploads->Drain();
  ASSERT_TRUE(mem_l2_->Head(layout::BlobKey("kv", "default", HashPayload(c.payloads[0]))).ok());
  clock_.Advance(o.gc_grace_us * 3);
  auto r = s.CollectOrphans();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->expired, 2u);
  EXPECT_EQ(r->kept_in_flight, 2u);
  EXPECT_EQ(r->deleted, 0u);
  ASSERT_TRUE(s.PublishChain("default", kFp, c.tip(), c.tip()).ok());
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(mem_l2_->Head(layout::BlobKey("kv", "default", HashPayload(c.payloads[i]))).ok());
  }  store_.reset();  // before the executor it uses
}

// Regression (found by wombatkv-sim, evict-gc scenario, seed 6 with --capacity): a put of bytes
// whose earlier upload had finished reused that upload, though GC had deleted the blob since (no
// put awaited it any more): the put was not readable and its publish named a missing blob.
TEST_F(StoreGc, PutAfterItsBlobWasCollectedUploadsAgain) {
  StoreOptions o = Options();
  o.background_gc = false;
  o.cache_bytes_max = 0;  // nothing stays in RAM once durable
  auto uploads = NewThreadPoolExecutor(1, "test-upload");
  o.executor = uploads.get();
  Store& s = Open(o);
  const std::vector<uint8_t> x = Payload(42, kBlockBytes), y = Payload(43, kBlockBytes);
  const BlockKey k1 = Key(1, 9), k2 = Key(2, 9);
  // x put under k1, then k1 re-put with y: no put awaits x any more; its upload stays finished.
  ASSERT_TRUE(s.PutBlocks("default", kFp, std::vector<BlockPut>{{k1, {}, x}}).ok());
  uploads->Drain();
  ASSERT_TRUE(s.PutBlocks("default", kFp, std::vector<BlockPut>{{k1, {}, y}}).ok());
  uploads->Drain();
  clock_.Advance(o.gc_grace_us + 1);
  auto r = s.CollectOrphans();
  ASSERT_TRUE(r.ok());
  const std::string x_key = layout::BlobKey("kv", "default", HashPayload(x));
  ASSERT_TRUE(mem_l2_->Head(x_key).status().IsNotFound()) << "x was not collected";
  // x put again, under k2, and published.
  ASSERT_TRUE(s.PutBlocks("default", kFp, std::vector<BlockPut>{{k2, {}, x}}).ok());
  EXPECT_TRUE(s.GetByContentHash("default", HashPayload(x)).ok());
  ASSERT_TRUE(s.PublishChain("default", kFp, k2, k2).ok());
  EXPECT_TRUE(mem_l2_->Head(x_key).ok()) << "the published head names a blob L2 does not have";
  store_.reset();  // before the executor it uses
}

// Regression (found by wombatkv-sim --capacity, seed 6, after the fix above): a put whose blob
// was already in L2 (an old orphan, so old by its modification time) had it deleted by another
// host's GC before the publish; the publisher's re-check (R4) found it gone but the RAM cache had
// dropped the bytes, so the publish failed after writing a head naming a missing blob. The
// upload now keeps the bytes of a reused blob until the publish.
TEST_F(StoreGc, ReusedBlobDeletedByAnotherHostIsPutBack) {
  StoreOptions o = Options();
  o.background_gc = false;
  o.cache_bytes_max = 0;
  auto uploads = NewThreadPoolExecutor(1, "test-upload");
  o.executor = uploads.get();
  Store& s = Open(o);
  const std::vector<uint8_t> x = Payload(44, kBlockBytes), y = Payload(45, kBlockBytes);
  const BlockKey k1 = Key(1, 10), k2 = Key(2, 10);
  // x reaches L2 and is abandoned (k1 re-put with y); it ages past the grace.
  ASSERT_TRUE(s.PutBlocks("default", kFp, std::vector<BlockPut>{{k1, {}, x}}).ok());
  uploads->Drain();
  ASSERT_TRUE(s.PutBlocks("default", kFp, std::vector<BlockPut>{{k1, {}, y}}).ok());
  uploads->Drain();
  clock_.Advance(o.gc_grace_us + 1);
  // x put again: the upload finds it in L2 (reused).
  ASSERT_TRUE(s.PutBlocks("default", kFp, std::vector<BlockPut>{{k2, {}, x}}).ok());
  uploads->Drain();
  // Another host's collector (it knows nothing of this store's puts) deletes it.
  gc::GcOptions other;
  other.grace_us = o.gc_grace_us;
  gc::OrphanCollector collector(mem_l2_.get(), &clock_, other);
  auto r = collector.RunPass();
  ASSERT_TRUE(r.ok());
  const std::string x_key = layout::BlobKey("kv", "default", HashPayload(x));
  ASSERT_TRUE(mem_l2_->Head(x_key).status().IsNotFound());
  auto v = s.PublishChain("default", kFp, k2, k2);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(mem_l2_->Head(x_key).ok()) << "the published head names a blob L2 does not have";
  store_.reset();
}

// Regression (found by wombatkv-sim, evict-gc scenario, seed 17): eviction's head rewrite was
// applied in L2 but its answer lost; L0 kept the old, longer head until the next refresh, serving
// blocks whose blobs were no longer referenced (and so collectable). Now the store re-reads the
// head at once.
TEST_F(StoreGc, EvictionRewriteWithLostAnswerLeavesL0AsL2Has) {
  StoreOptions o = Options();
  o.background_gc = false;
  o.eviction_interval_ms = 0;
  o.namespace_bytes_max = {{"default", 6 * (kBlockBytes + 48)}};
  Store& s = Open(o);
  const TestChain c = MakeChain(8, kBlockBytes, 5);
  PutAndPublish(s, c);
  faulty_.lose_head_answer_ = true;
  ASSERT_TRUE(s.Evict().ok());
  ASSERT_FALSE(faulty_.lose_head_answer_) << "the rewrite was not attempted";
  auto l2 = mem_l2_->Get(layout::ChainKey("kv", "default", kFp, c.tip()), 0, kToEnd);
  ASSERT_TRUE(l2.ok());
  auto head = layout::DecodeChainHead(l2->bytes->view(), "head");
  ASSERT_TRUE(head.ok());
  ASSERT_LT(head->entries.size(), 8u);
  const auto chains = s.ListChains("default").value();
  ASSERT_EQ(chains.size(), 1u);
  EXPECT_EQ(chains[0].version, head->version);
  EXPECT_EQ(chains[0].length, head->entries.size());
  auto n = s.LookupPrefix("default", kFp, c.keys);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, head->entries.size());
}

// A put published long after its upload (the store quiet meanwhile, so nothing forgot it as
// abandoned): another host's collector may have taken its blob as an orphan (no head names it,
// older than the grace). The publish once skipped its after-write check (R4) for any blob it had
// uploaded itself, "younger than any grace", and acknowledged a chain whose blob was gone. Now
// only a blob made durable well inside the grace is vouched for: this one is checked, found
// missing, and, its bytes gone from memory, the publish fails — never acknowledged broken.
TEST_F(StoreGc, APutPublishedLongAfterItsUploadHasItsBlobCheckedAfterTheHeadWrite) {
  StoreOptions o = Options();
  o.cache_bytes_max = 0;  // the bytes are not kept: the check cannot put the blob back
  o.background_gc = false;
  Store& s = Open(o);
  const std::vector<uint8_t> x = Payload(91, kBlockBytes);
  const BlockKey k = Key(1, 91);
  ASSERT_TRUE(s.PutBlocks("default", kFp, std::vector<BlockPut>{{k, {}, x}}).ok());
  executor_->Drain();
  clock_.Advance(3 * o.gc_grace_us);
  gc::GcOptions other;  // another host's collector, same grace
  other.grace_us = o.gc_grace_us;
  gc::OrphanCollector collector(mem_l2_.get(), &clock_, other);
  ASSERT_TRUE(collector.RunPass().ok());
  const std::string key = layout::BlobKey("kv", "default", HashPayload(x));
  ASSERT_TRUE(mem_l2_->Head(key).status().IsNotFound()) << "not collected";
  auto v = s.PublishChain("default", kFp, k, k);
  EXPECT_FALSE(v.ok()) << "acknowledged a chain whose blob L2 no longer has";
  EXPECT_EQ(v.status().code(), Code::kFailedPrecondition) << v.status().ToString();
}

// A publish continuing a published prefix (L0's) relies on a head in L2 naming that prefix's
// blobs. Here the chain it came from is replaced (last writer wins) after the publish collected
// it, so those old blobs lose their last reference, and this store's orphan GC passes before the
// head is written (the buggify point "publish.collect_inside" is that moment): the publish keeps
// them from it (PublishClaim::KeepBlobs), and the acknowledged chain is whole in L2 (G3).
TEST_F(StoreGc, APublishKeepsThePrefixItContinuesWhenItsChainIsReplacedMeanwhile) {
  StoreOptions o = Options();
  o.namespace_bytes_max.clear();
  o.background_gc = false;
  o.gc_grace_us = kMinuteUs;
  std::atomic<bool> armed{false};
  Store* sp = nullptr;
  const TestChain a = MakeChain(2, kBlockBytes, /*salt=*/1);  // a0 <- a1, chain id a1
  const TestChain c = MakeChain(1, kBlockBytes, /*salt=*/2);  // another root for chain a1
  const BlockKey b = Key(7, 3);
  o.buggify = [&](const char* site) {
    if (std::string_view(site) != "publish.collect_inside" || !armed.exchange(false)) return false;
    // As another thread would: chain a1 is published again with other content.
    EXPECT_TRUE(sp->PutBlocks("default", kFp, c.Puts()).ok());
    auto v = sp->PublishChain("default", kFp, a.tip(), c.tip());
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return true;  // and the store's orphan GC passes here
  };
  Store& s = Open(o);
  sp = &s;
  PutAndPublish(s, a);
  clock_.Advance(2 * kMinuteUs);  // a's blobs are older than the grace
  ASSERT_TRUE(
      s.PutBlocks("default", kFp, std::vector<BlockPut>{{b, a.tip(), Payload(77, kBlockBytes)}})
          .ok());
  armed = true;
  auto v = s.PublishChain("default", kFp, b, b);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_FALSE(armed.load()) << "the interleaving did not happen";
  executor_->Drain();
  EXPECT_EQ(s.Stats().gc_blobs_deleted, 0u);

  // The chain a0 <- a1 <- b read through a new store (an empty RAM cache), as after a restart.
  o.buggify = nullptr;
  Store& again = Open(o);
  const std::vector<BlockKey> keys = {a.keys[0], a.keys[1], b};
  ASSERT_EQ(*again.LookupPrefix("default", kFp, keys), 3u);
  auto got = again.GetBlocks("default", kFp, keys);
  EXPECT_TRUE(got.ok()) << got.status().ToString();
}

// A fork from the middle of a chain (conversations sharing a system prompt) has no chain of its
// own to witness the prefix it continues: the first one checks each prefix blob, before and after
// its head write. The next fork from the same block reads the first fork's head instead — once it
// has checked in L2 that the head still starts with that prefix.
TEST_F(StoreGc, AForkFromTheBlockOfAnEarlierForkTakesItsHeadAsWitness) {
  StoreOptions o = Options();
  o.namespace_bytes_max.clear();
  Store& s = Open(o);
  const TestChain sys = MakeChain(4, kBlockBytes, /*salt=*/1);
  PutAndPublish(s, sys);  // chain id sys[3]: a publish extending it has a witness of its own
  auto sys_chain = s.GetChain("default", kFp, sys.tip());
  ASSERT_TRUE(sys_chain.ok());
  std::vector<std::string> prefix_blobs;  // of the forks from sys[2], below
  for (size_t i = 0; i < 3; ++i) {
    prefix_blobs.push_back(layout::BlobKey("kv", "default", (*sys_chain)[i].hash));
  }
  auto fork = [&](uint64_t i, const BlockKey& from) {
    const std::vector<uint8_t> payload = Payload(i, kBlockBytes);  // outlives b's view of it
    const BlockPut b{Key(i, 9), from, payload};
    ASSERT_TRUE(s.PutBlocks("default", kFp, {&b, 1}).ok());
    auto v = s.PublishChain("default", kFp, b.key, b.key);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
  };
  faulty_.HeadsOf({});
  fork(1, sys.tip());  // sys[3]'s own chain witnesses
  EXPECT_EQ(faulty_.HeadsOf(prefix_blobs), 0u);

  // No chain ends at sys[2]: the first fork from it checks each blob, the next takes its head.
  fork(2, sys.keys[2]);
  EXPECT_EQ(faulty_.HeadsOf(prefix_blobs), 2 * prefix_blobs.size())
      << "each blob, before and after";
  fork(3, sys.keys[2]);
  EXPECT_EQ(faulty_.HeadsOf(prefix_blobs), 0u) << "fork 2's head witnesses";

  // Fork 2's chain (the hint) is replaced by one that does not start with the prefix: the next
  // fork finds that in L2 and checks each blob again.
  const TestChain other = MakeChain(1, kBlockBytes, /*salt=*/7);
  ASSERT_TRUE(s.PutBlocks("default", kFp, other.Puts()).ok());
  ASSERT_TRUE(s.PublishChain("default", kFp, Key(2, 9), other.tip()).ok());
  faulty_.HeadsOf({});
  fork(4, sys.keys[2]);
  EXPECT_EQ(faulty_.HeadsOf(prefix_blobs), 2 * prefix_blobs.size());
}

// The same across hosts, with no race: host B replaces chain a1 and its orphan GC deletes a0's
// and a1's blobs; host A, whose L0 still has the old chain (no refresh since), extends a1 with
// block b. After its head write the publish finds the chain it continued changed and the two
// blobs gone (VerifyIndexedPrefix): it puts them back from its RAM cache, or, with their bytes
// no longer in memory, fails naming a blob — never an acknowledged head naming deleted blobs (G3).
class StoreGcAcrossHosts : public StoreGc {
 protected:
  static constexpr uint64_t kB = 7;
  // Host A (store_) extends chain a1 with block b, by `publish`, once host B has replaced a1 and
  // collected its blobs.
  Result<uint64_t> ExtendAPrefixHostBCollected(
      uint64_t cache_bytes_max,
      const std::function<Result<uint64_t>(Store&, const BlockPut&)>& publish = PublishB) {
    StoreOptions o = Options();
    o.namespace_bytes_max.clear();
    o.background_gc = false;
    o.gc_grace_us = kMinuteUs;
    o.cache_bytes_max = cache_bytes_max;
    Store& host_a = Open(o);
    const TestChain a = MakeChain(2, kBlockBytes, /*salt=*/1);  // a0 <- a1, chain id a1
    const TestChain c = MakeChain(1, kBlockBytes, /*salt=*/2);
    PutAndPublish(host_a, a);

    StoreOptions ob = o;
    ob.meta_store = l1_b_.get();
    auto opened_b = Store::Open(ob);
    EXPECT_TRUE(opened_b.ok());
    host_b_ = std::move(opened_b).value();
    EXPECT_TRUE(host_b_->PutBlocks("default", kFp, c.Puts()).ok());
    EXPECT_TRUE(host_b_->PublishChain("default", kFp, a.tip(), c.tip()).ok());  // replaces a1
    clock_.Advance(2 * kMinuteUs);
    auto gc = host_b_->CollectOrphans();
    EXPECT_TRUE(gc.ok()) << gc.status().ToString();
    EXPECT_EQ(gc->deleted, 2u);  // a0's and a1's blobs

    const std::vector<uint8_t> b_bytes = Payload(77, kBlockBytes);
    return publish(host_a, BlockPut{Key(kB, 3), a.tip(), b_bytes});
  }
  // The 3-block chain whose tip is `tip`, as `s` has it, names only blobs L2 has (G3).
  void ExpectWholeInL2(Store& s, const BlockKey& tip) {
    auto chain = s.GetChain("default", kFp, tip);
    ASSERT_TRUE(chain.ok()) << chain.status().ToString();
    ASSERT_EQ(chain->size(), 3u);
    for (const ChainBlock& blk : *chain) {
      EXPECT_TRUE(mem_l2_->Head(layout::BlobKey("kv", "default", blk.hash)).ok())
          << "the acknowledged head names a missing blob";
    }
  }
  static Result<uint64_t> PublishB(Store& s, const BlockPut& b) {
    if (auto put = s.PutBlocks("default", kFp, {&b, 1}); !put.ok()) return put.status();
    return s.PublishChain("default", kFp, b.key, b.key);
  }
  std::unique_ptr<MetaStore> l1_b_ = NewMemMetaStore();
  std::unique_ptr<Store> host_b_;
};

TEST_F(StoreGcAcrossHosts, APublishPutsThePrefixBlobsAnotherHostCollectedBack) {
  auto v = ExtendAPrefixHostBCollected(64 << 20);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ExpectWholeInL2(*store_, Key(kB, 3));
}

TEST_F(StoreGcAcrossHosts, ASaveAnsweredFromL2sCompletionChecksThePrefixToo) {
  // SaveChainAsync writes the head through PutAsync; the check reads L2, so it runs on the
  // executor, and the save is answered after it.
  auto v = ExtendAPrefixHostBCollected(64 << 20, [this](Store& s, const BlockPut& b) {
    std::optional<Result<uint64_t>> out;
    s.SaveChainAsync("default", kFp, {&b, 1}, [&](Result<uint64_t> r) { out = std::move(r); });
    EXPECT_FALSE(out) << "answered before the prefix was checked";
    executor_->Drain();
    return out ? *out : Status::Internal("the save was never answered");
  });
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ExpectWholeInL2(*store_, Key(kB, 3));
}

TEST_F(StoreGcAcrossHosts, APrefixCollectedBetweenTheCheckAndTheHeadWriteIsPutBack) {
  // Host A's L0 is current when its publish checks the prefix; host B replaces chain a1 and
  // collects its blobs right after that check, before A's head write ("publish.collect_inside").
  // A learns it after the write (the witness's ETag changed) and puts the blobs back.
  StoreOptions o = Options();
  o.namespace_bytes_max.clear();
  o.background_gc = false;
  o.gc_grace_us = kMinuteUs;
  const TestChain a = MakeChain(2, kBlockBytes, /*salt=*/1);  // a0 <- a1, chain id a1
  const TestChain c = MakeChain(1, kBlockBytes, /*salt=*/2);
  std::atomic<bool> armed{false};
  o.buggify = [&](const char* site) {
    if (std::string_view(site) != "publish.collect_inside" || !armed.exchange(false)) return false;
    EXPECT_TRUE(host_b_->PutBlocks("default", kFp, c.Puts()).ok());
    EXPECT_TRUE(host_b_->PublishChain("default", kFp, a.tip(), c.tip()).ok());
    auto gc = host_b_->CollectOrphans();
    EXPECT_TRUE(gc.ok() && gc->deleted == 2u);  // a0's and a1's blobs
    return false;                               // A's own collector does not run here
  };
  Store& host_a = Open(o);
  PutAndPublish(host_a, a);
  StoreOptions ob = o;
  ob.meta_store = l1_b_.get();
  ob.buggify = nullptr;
  host_b_ = std::move(Store::Open(ob)).value();
  clock_.Advance(2 * kMinuteUs);
  const BlockKey b = Key(kB, 3);
  ASSERT_TRUE(
      host_a
          .PutBlocks("default", kFp, std::vector<BlockPut>{{b, a.tip(), Payload(77, kBlockBytes)}})
          .ok());
  armed = true;
  auto v = host_a.PublishChain("default", kFp, b, b);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_FALSE(armed.load()) << "the interleaving did not happen";
  ExpectWholeInL2(host_a, b);
}

TEST_F(StoreGcAcrossHosts, APublishWhosePrefixBlobsAreGoneEverywhereFailsNamingOne) {
  auto v = ExtendAPrefixHostBCollected(kBlockBytes);  // the cache holds b's bytes alone
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), Code::kFailedPrecondition) << v.status().ToString();
  EXPECT_NE(v.status().message().find("put the block again"), std::string::npos)
      << v.status().ToString();
  // Found before the head write: L2 has no head naming the deleted blobs.
  EXPECT_TRUE(
      mem_l2_->Head(layout::ChainKey("kv", "default", kFp, Key(kB, 3))).status().IsNotFound());
}

}  // namespace
}  // namespace wombatkv::testing
