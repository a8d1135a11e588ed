// Capacity (docs/capacity.md): exact L2 accounting, namespace budgets, TTL, least-recently-used
// order, and SPEC G10 — eviction never frees a borrowed payload, never removes the blocks of a
// chain whose publish is in flight, and trims chains from the tip so every chain left is a valid
// prefix. Deterministic cases drive a fake clock and an inline executor; the G10 race runs real
// threads against the background evictor.
#include <algorithm>
#include <atomic>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "layout/chain_head.h"
#include "layout/envelope.h"
#include "layout/object_keys.h"
#include "store/store_test_util.h"

namespace wombatkv::testing {
namespace {

constexpr uint64_t kHour = 3600ull * 1000000;

const Fingerprint kFp = Fp(3);

// A deterministic store: fake clock, inline executor (background work runs only when a call
// awaits it), eviction passes only when the test calls Evict.
class Capacity : public ::testing::TestWithParam<Planes> {
 protected:
  Capacity() : h_(GetParam()) {}
  StoreOptions Options() {
    StoreOptions o = h_.Options();
    o.clock = &clock_;
    o.executor = executor_.get();
    o.eviction_interval_ms = 0;
    return o;
  }
  Store& Open(const StoreOptions& o) { return h_.Open(o); }

  void PutAndPublish(Store& s, const TestChain& c, std::string_view ns = "default") {
    ASSERT_TRUE(s.PutBlocks(ns, kFp, c.Puts()).ok());
    auto v = s.PublishChain(ns, kFp, c.tip(), c.tip());
    ASSERT_TRUE(v.ok()) << v.status().ToString();
  }
  // Every key of `c` that still looks up must read back exactly: a valid prefix.
  size_t CheckPrefix(Store& s, const TestChain& c, std::string_view ns = "default") {
    auto m = s.LookupPrefix(ns, kFp, c.keys);
    EXPECT_TRUE(m.ok());
    if (!m.ok() || *m == 0) return 0;
    std::vector<BlockKey> keys(c.keys.begin(), c.keys.begin() + static_cast<ptrdiff_t>(*m));
    auto got = s.GetBlocks(ns, kFp, keys);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    if (!got.ok()) return 0;
    for (size_t i = 0; i < *m; ++i) EXPECT_TRUE(std::ranges::equal(got->payload(i), c.payloads[i]));
    return *m;
  }
  NamespaceUsage UsageOf(Store& s, std::string_view ns = "default") {
    auto u = s.Usage(ns, false);
    EXPECT_EQ(u.size(), 1u);
    return u.empty() ? NamespaceUsage{} : u[0];
  }
  void EvictUntilDone(Store& s) {
    for (int pass = 0; pass < 100; ++pass) {
      auto r = s.Evict();
      ASSERT_TRUE(r.ok());
      if (!r->work_left) return;
    }
    FAIL() << "eviction did not finish in 100 passes";
  }

  FakeClock clock_;
  std::unique_ptr<Executor> executor_ = NewInlineExecutor();
  StoreHarness h_;
};

// --------------------------------------------------------------------------------- accounting

// Sums the sizes of the objects under `kind/` ("blob", "chain", "sidecar") of a namespace in L2.
uint64_t L2Bytes(ObjectStore& l2, std::string_view ns, std::string_view kind) {
  const std::string prefix = layout::NamespaceRoot("kv", ns) + std::string(kind) + "/";
  uint64_t total = 0;
  std::string token;
  for (;;) {
    auto page = l2.List(prefix, "", token, 1000);
    EXPECT_TRUE(page.ok());
    if (!page.ok()) return 0;
    for (const auto& o : page->objects) total += o.size;
    if (page->next_token.empty()) return total;
    token = page->next_token;
  }
}

TEST_P(Capacity, UsageIsExactObjectBytesAndEqualAfterRestart) {
  StoreOptions o = Options();
  Store* s = &Open(o);
  auto a = MakeChain(6, 4000, 1);
  auto b = MakeChain(3, 4000, 2);
  b.payloads[2] = a.payloads[0];  // identical bytes under another key: one blob
  PutAndPublish(*s, a);
  clock_.Advance(kHour);
  PutAndPublish(*s, b);
  // A branch off a: shares a's first two blocks.
  TestChain branch = a;
  branch.keys.resize(3);
  branch.payloads.resize(3);
  branch.keys[2] = Key(77, 1);
  branch.payloads[2] = Payload(77, 1000);
  ASSERT_TRUE(s->PutBlocks("default", kFp, branch.Puts(2, 3)).ok());
  ASSERT_TRUE(s->PublishChain("default", kFp, branch.tip(), branch.tip()).ok());
  ASSERT_TRUE(s->PutSidecar("default", kFp, a.tip(), Payload(5, 300)).ok());
  ASSERT_TRUE(s->PutSidecar("default", kFp, Key(4242), Payload(6, 100)).ok());  // stray

  NamespaceUsage u = UsageOf(*s);
  const uint64_t blob = layout::kEnvelopeHeaderBytes;
  EXPECT_EQ(u.chains, 3u);
  EXPECT_EQ(u.blobs, 6u + 2u + 1u);  // a's six, b's two new ones, the branch's one
  EXPECT_EQ(u.blob_bytes, 8 * (blob + 4000) + (blob + 1000));
  EXPECT_EQ(u.head_bytes, 3 * (76 + 7) + 56 * (6 + 3 + 3));
  EXPECT_EQ(u.sidecars, 1u);
  EXPECT_EQ(u.sidecar_bytes, blob + 300);
  EXPECT_EQ(u.stray_sidecars, 1u);
  EXPECT_EQ(u.budget_bytes, 0u);

  // Evict to create unreferenced blobs (awaiting orphan GC), then compare with what L2 holds.
  o.namespace_bytes_max["default"] = 20'000;
  s = &Open(o);
  clock_.Advance(kHour);
  EvictUntilDone(*s);
  u = UsageOf(*s);
  EXPECT_LE(u.referenced_bytes(), 20'000u);
  EXPECT_GT(u.unreferenced_blobs, 0u);
  if (GetParam() == Planes::kMemory) {
    ObjectStore& l2 = *h_.mem_l2();
    EXPECT_EQ(L2Bytes(l2, "default", "chain"), u.head_bytes);
    EXPECT_EQ(L2Bytes(l2, "default", "sidecar"), u.sidecar_bytes + u.stray_sidecar_bytes);
    EXPECT_EQ(L2Bytes(l2, "default", "blob"), u.blob_bytes + u.unreferenced_bytes);
  }
  const auto before = s->Usage("", /*by_fingerprint=*/true);
  const StoreStats stats_before = s->Stats();

  s = &Open(o);  // restart
  const auto after = s->Usage("", /*by_fingerprint=*/true);
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) {
    SCOPED_TRACE(before[i].ns);
    EXPECT_EQ(after[i].chains, before[i].chains);
    EXPECT_EQ(after[i].head_bytes, before[i].head_bytes);
    EXPECT_EQ(after[i].blobs, before[i].blobs);
    EXPECT_EQ(after[i].blob_bytes, before[i].blob_bytes);
    EXPECT_EQ(after[i].sidecars, before[i].sidecars);
    EXPECT_EQ(after[i].sidecar_bytes, before[i].sidecar_bytes);
    EXPECT_EQ(after[i].stray_sidecars, before[i].stray_sidecars);
    EXPECT_EQ(after[i].stray_sidecar_bytes, before[i].stray_sidecar_bytes);
    EXPECT_EQ(after[i].unreferenced_blobs, before[i].unreferenced_blobs);
    EXPECT_EQ(after[i].unreferenced_bytes, before[i].unreferenced_bytes);
    ASSERT_EQ(after[i].fingerprints.size(), before[i].fingerprints.size());
    for (size_t f = 0; f < before[i].fingerprints.size(); ++f) {
      EXPECT_EQ(after[i].fingerprints[f].fp, before[i].fingerprints[f].fp);
      EXPECT_EQ(after[i].fingerprints[f].blob_bytes, before[i].fingerprints[f].blob_bytes);
      EXPECT_EQ(after[i].fingerprints[f].head_bytes, before[i].fingerprints[f].head_bytes);
      EXPECT_EQ(after[i].fingerprints[f].sidecar_bytes, before[i].fingerprints[f].sidecar_bytes);
    }
  }
  EXPECT_EQ(s->Stats().l2_referenced_bytes, stats_before.l2_referenced_bytes);
  EXPECT_EQ(s->Stats().l2_unreferenced_bytes, stats_before.l2_unreferenced_bytes);
}

// A trim keeps the blobs the chain's own head names. Here another chain published the trimmed
// chain's root key again with other bytes, so L0's block for that key (the newest publish's)
// differs from the head's: the trimmed head must still name the head's blob (bug 13).
TEST_P(Capacity, ATrimKeepsTheBlobsItsHeadNamesNotNewerBytesOfTheSameKeys) {
  constexpr size_t kBytes = 1000;
  const TestChain x = MakeChain(2, kBytes, /*salt=*/7);  // k0 <- k1, chain id k1
  const std::vector<uint8_t> other = Payload(99, kBytes);
  const uint64_t blob = layout::kEnvelopeHeaderBytes + kBytes;
  StoreOptions o = Options();
  // X's two blobs, Y's one, both heads, less one byte: one block must go, X's tail (the least
  // recently used chain's).
  o.namespace_bytes_max["default"] =
      3 * blob + layout::ChainHeadBytes(7, 2) + layout::ChainHeadBytes(7, 1) - 1;
  Store& s = Open(o);
  PutAndPublish(s, x);
  clock_.Advance(kHour);
  // Chain Y: X's root key as a root again, with other bytes, published as chain k0.
  ASSERT_TRUE(
      s.PutBlocks("default", kFp, std::vector<BlockPut>{{x.keys[0], BlockKey{}, other}}).ok());
  ASSERT_TRUE(s.PublishChain("default", kFp, x.keys[0], x.keys[0]).ok());
  auto r = s.Evict();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::string key = layout::ChainKey("kv", "default", kFp, x.tip());
  auto obj =
      (GetParam() == Planes::kMemory ? *h_.mem_l2()
                                     : *NewFsObjectStore(h_.dir() + "/data/l2", PosixFileSystem()))
          .Get(key, 0, kToEnd);
  ASSERT_TRUE(obj.ok()) << obj.status().ToString();
  auto head = layout::DecodeChainHead(obj->bytes->view(), key);
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  ASSERT_EQ(head->entries.size(), 1u) << "X's tail was not trimmed";
  EXPECT_EQ(head->entries[0].hash, HashPayload(x.payloads[0]))
      << "the trimmed head names the newer bytes of its root key";
}

// A trimmed head carries its chain's last use as its time, a stamp in whole seconds: never older
// than the head it replaces, or the bytes it keeps would count as older than they are (a key
// other chains share could change bytes on the next open, docs/layout.md §6), and the trim would
// leave its kept blocks to be reassigned, a walk of every chain of the scope.
TEST_P(Capacity, ATrimmedHeadIsNeverOlderThanTheHeadItReplaces) {
  constexpr size_t kBytes = 1000;
  const TestChain x = MakeChain(2, kBytes, /*salt=*/8);
  StoreOptions o = Options();
  o.namespace_bytes_max["default"] =
      2 * (layout::kEnvelopeHeaderBytes + kBytes) + layout::ChainHeadBytes(7, 2) - 1;
  Store& s = Open(o);
  clock_.Advance(500'000);  // published in the middle of a second, and never used since
  PutAndPublish(s, x);
  std::unique_ptr<ObjectStore> fs;
  if (GetParam() == Planes::kDisk) fs = NewFsObjectStore(h_.dir() + "/data/l2", PosixFileSystem());
  ObjectStore& l2 = fs ? *fs : *h_.mem_l2();
  const std::string key = layout::ChainKey("kv", "default", kFp, x.tip());
  auto published_us = [&]() -> uint64_t {
    auto obj = l2.Get(key, 0, kToEnd);
    EXPECT_TRUE(obj.ok()) << obj.status().ToString();
    if (!obj.ok()) return 0;
    auto head = layout::DecodeChainHead(obj->bytes->view(), key);
    EXPECT_TRUE(head.ok());
    return head.ok() ? head->published_us : 0;
  };
  const uint64_t before = published_us();
  ASSERT_TRUE(s.Evict().ok());
  ASSERT_EQ(*s.LookupPrefix("default", kFp, x.keys), 1u) << "X's tail was not trimmed";
  EXPECT_GE(published_us(), before);
}

// The wall clock, moved by Step (both ways) on top of FakeClock's.
class SteppedWallClock final : public ManualClock {
 public:
  SteppedWallClock() : ManualClock(1735689600ull * 1000000) {}
  uint64_t WallMicros() override { return ManualClock::WallMicros() + offset_.load(); }
  void Step(int64_t micros) { offset_ += micros; }

 private:
  std::atomic<int64_t> offset_{0};
};

// A wall clock that ran ahead (an RTC on local time before NTP) raised the use clock; stepped
// back, it must not make the chains published next look older than the uses seen before: with a
// TTL they were evicted by the next pass, a second after their publish.
TEST_P(Capacity, AChainPublishedAfterTheWallClockSteppedBackIsNotOlderThanTheUsesBefore) {
  SteppedWallClock clock;
  StoreOptions o = Options();
  o.clock = &clock;
  o.namespace_ttl_seconds[""] = 3600;
  Store& s = Open(o);
  auto a = MakeChain(2, 1000, 4);
  PutAndPublish(s, a);
  clock.Step(static_cast<int64_t>(2 * kHour));
  ASSERT_TRUE(s.Evict().ok());  // a pass under the clock running ahead: a is past its TTL
  EXPECT_EQ(*s.LookupPrefix("default", kFp, a.keys), 0u);
  clock.Step(-static_cast<int64_t>(2 * kHour));
  auto b = MakeChain(2, 1000, 5);
  PutAndPublish(s, b);
  clock.Advance(1000000);
  ASSERT_TRUE(s.Evict().ok());
  EXPECT_EQ(CheckPrefix(s, b), b.keys.size()) << "a chain published a second ago was evicted";
}

TEST_P(Capacity, AUnreferencedBlobIsFreedOnlyOnceOrphanGcHasDeletedIt) {
  StoreOptions o = Options();
  o.namespace_ttl_seconds[""] = 3600;
  // Orphan GC from another process (below) deletes files only: packed blobs are the owner's.
  o.l2_packed_object_bytes_max = 0;
  Store& s = Open(o);
  auto c = MakeChain(2, 1000, 4);
  PutAndPublish(s, c);
  clock_.Advance(2 * kHour);
  ASSERT_TRUE(s.Evict().ok());
  EXPECT_EQ(*s.LookupPrefix("default", kFp, c.keys), 0u);
  NamespaceUsage u = UsageOf(s);
  EXPECT_EQ(u.unreferenced_blobs, 2u);
  const uint64_t freed_before = s.Stats().evict_freed_bytes;
  // Eviction itself deletes no blob: it is still readable by content hash.
  const ContentHash h0 = HashPayload(c.payloads[0]);
  EXPECT_TRUE(s.GetByContentHash("default", h0).ok());
  // Orphan GC (simulated) deletes one; the next probe, due an interval later, sees it gone.
  ASSERT_TRUE(
      (GetParam() == Planes::kMemory ? *h_.mem_l2() : *NewFsObjectStore(h_.dir() + "/data/l2",
                                                                        PosixFileSystem()))
          .Delete(layout::BlobKey("kv", "default", h0))
          .ok());
  ASSERT_TRUE(s.Evict().ok());
  EXPECT_EQ(UsageOf(s).unreferenced_blobs, 2u);  // not probed yet: too young
  clock_.Advance(kHour);
  auto r = s.Evict();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->orphans_gone, 1u);
  EXPECT_EQ(UsageOf(s).unreferenced_blobs, 1u);
  EXPECT_EQ(s.Stats().evict_freed_bytes, freed_before + layout::kEnvelopeHeaderBytes + 1000);
}

// L1's RocksDB keeps writes in a vector memtable, which a read must copy and sort
// (src/meta/rocksdb_meta_store.cc): so once a store is open, nothing it does reads L1 — it is
// read by the open and by offline tools only (BENCHMARKS.md, "Session 40": a refresh that read
// one L1 record per chain took minutes).
class L1ReadsCounted final : public MemMetaStoreWrapper {
 public:
  std::atomic<int> reads{0};
  Result<std::string> Get(std::string_view key) override {
    ++reads;
    return MemMetaStoreWrapper::Get(key);
  }
  Status Scan(std::string_view prefix,
              const std::function<bool(std::string_view, std::string_view)>& fn) override {
    ++reads;
    return MemMetaStoreWrapper::Scan(prefix, fn);
  }
};

TEST_P(Capacity, NothingAnOpenStoreDoesReadsL1) {
  L1ReadsCounted l1;
  struct CloseFirst {  // the store goes before `l1`, however the test ends
    StoreHarness& h;
    ~CloseFirst() { h.Close(); }
  } close_first{h_};
  StoreOptions o = Options();
  o.meta_store = &l1;
  o.namespace_bytes_max["default"] = 64 << 10;
  Store& s = Open(o);
  EXPECT_GT(l1.reads.load(), 0);  // the open reads it
  l1.reads = 0;
  std::vector<TestChain> chains;
  for (int i = 0; i < 12; ++i) {
    chains.push_back(MakeChain(4, 4096, 300 + i));
    PutAndPublish(s, chains.back());
    clock_.Advance(1000000);
  }
  const ChainId id = chains[3].tip();
  ASSERT_TRUE(s.PublishChain("default", kFp, id, id).ok());      // a head written again
  ASSERT_TRUE(s.PublishChain("default", kFp, id, id, 2).ok());   // compare-and-swap
  ASSERT_FALSE(s.PublishChain("default", kFp, id, id, 2).ok());  // a stale one
  ASSERT_TRUE(s.GetBlocks("default", kFp, chains[3].keys).ok());
  ASSERT_TRUE(s.Refresh().ok());
  EvictUntilDone(s);
  EXPECT_GT(s.Stats().evict_chains, 0u);
  ASSERT_TRUE(s.Refresh().ok());
  EXPECT_EQ(l1.reads.load(), 0);
}

// ------------------------------------------------------------------------------------ budgets

TEST_P(Capacity, BudgetHoldsAfterAWriteLoadFiveTimesLargerAndRecentlyReadChainsStay) {
  constexpr uint64_t kBudget = 256 << 10;
  StoreOptions o = Options();
  o.namespace_bytes_max["default"] = kBudget;
  o.namespace_bytes_max["other"] = 0;  // unlimited
  o.eviction_heads_per_pass = 8;      // several passes needed: the work bound holds
  Store& s = Open(o);
  std::vector<TestChain> chains;
  for (int i = 0; i < 40; ++i) {
    chains.push_back(MakeChain(8, 4096, 100 + i));
    PutAndPublish(s, chains.back());
    clock_.Advance(1000000);
    // Chain 0 is read every time: the most recently used of all, whatever its age.
    ASSERT_TRUE(s.GetBlocks("default", kFp, chains[0].keys).ok());
    if (i % 4 == 3) {
      ASSERT_TRUE(s.Evict().ok());
    }
  }
  auto unlimited = MakeChain(40, 4096, 999);
  PutAndPublish(s, unlimited, "other");
  EvictUntilDone(s);

  const NamespaceUsage u = UsageOf(s);
  EXPECT_LE(u.referenced_bytes(), kBudget);
  // Not emptied either: trims stop once under the budget (one chain's worth of slack at most).
  EXPECT_GT(u.referenced_bytes(), kBudget - 8 * (4096 + 48 + 56) - 200);
  EXPECT_EQ(CheckPrefix(s, chains[0]), 8u);    // recently read: kept whole
  EXPECT_EQ(CheckPrefix(s, chains[1]), 0u);    // least recently used: gone
  EXPECT_EQ(CheckPrefix(s, chains[39]), 8u);   // just written
  for (const auto& c : chains) CheckPrefix(s, c);  // every chain left is a valid prefix
  EXPECT_EQ(CheckPrefix(s, unlimited, "other"), 40u);
  const StoreStats st = s.Stats();
  EXPECT_GT(st.evict_chains, 0u);
  EXPECT_GT(st.evict_blocks, 0u);
  EXPECT_GT(st.evict_bytes, 0u);
  EXPECT_GT(st.evict_passes, 1u);
  EXPECT_EQ(st.evict_skipped_in_flight, 0u);
  bool logged = false;
  for (const auto& line : h_.log()) {
    logged = logged || line.find("over its budget") != std::string::npos;
  }
  EXPECT_TRUE(logged) << "an eviction names its reason in the log";
}

// Passes keep the coldest candidates a scan found for the passes after them (store/cold_set.h).
// A chain can turn into a candidate later, when a chain extending it is trimmed back to its tip:
// that must retire the kept set (C2), or newer chains would be trimmed before it.
TEST_P(Capacity, AChainATrimLeavesTrimmableIsEvictedBeforeNewerOnes) {
  StoreOptions o = Options();
  o.eviction_heads_per_pass = 1;  // one head a pass: later passes take from the kept set
  Store* s = &Open(o);
  auto a = MakeChain(2, 1000, 1);  // the oldest; named, so b's publish does not compact it away
  ASSERT_TRUE(s->PutBlocks("default", kFp, a.Puts()).ok());
  ASSERT_TRUE(s->PublishChain("default", kFp, Key(500, 1), a.tip()).ok());
  clock_.Advance(kHour);
  TestChain b = a;  // extends a: a's tip has a child, so a is no candidate yet
  b.keys.push_back(Key(9, 1));
  b.payloads.push_back(Payload(9, 1000));
  ASSERT_TRUE(s->PutBlocks("default", kFp, b.Puts(2, 3)).ok());
  ASSERT_TRUE(s->PublishChain("default", kFp, b.tip(), b.tip()).ok());
  std::vector<TestChain> newer;
  for (uint64_t i = 0; i < 5; ++i) {
    clock_.Advance(kHour);
    newer.push_back(MakeChain(2, 1000, 10 + i));
    PutAndPublish(*s, newer.back());
  }
  // Room for all but about b's last block and a's two: the newer chains all fit.
  o.namespace_bytes_max["default"] = UsageOf(*s).referenced_bytes() - 2500;
  s = &Open(o);
  clock_.Advance(kHour);
  EvictUntilDone(*s);
  EXPECT_LE(UsageOf(*s).referenced_bytes(), o.namespace_bytes_max["default"]);
  EXPECT_EQ(CheckPrefix(*s, a), 0u);
  EXPECT_EQ(CheckPrefix(*s, b), 0u);
  for (const auto& c : newer) EXPECT_EQ(CheckPrefix(*s, c), 2u);
}

TEST_P(Capacity, TrimsFromTheTipSoAChainUsedPartlyKeepsItsUsedPrefix) {
  StoreOptions o = Options();
  o.namespace_ttl_seconds[""] = 3600;
  Store& s = Open(o);
  auto c = MakeChain(6, 1000, 7);
  PutAndPublish(s, c);
  ASSERT_TRUE(s.PutSidecar("default", kFp, c.tip(), Payload(1, 50)).ok());
  ASSERT_TRUE(s.PutSidecar("default", kFp, c.keys[1], Payload(2, 50)).ok());
  clock_.Advance(kHour / 2);
  // The engine matched only the first two blocks.
  const std::vector<BlockKey> prefix(c.keys.begin(), c.keys.begin() + 2);
  EXPECT_EQ(*s.LookupPrefix("default", kFp, prefix), 2u);
  clock_.Advance(kHour);  // the tail is 90 min unused, the prefix 60 min
  ASSERT_TRUE(s.Evict().ok());
  EXPECT_EQ(CheckPrefix(s, c), 2u);
  auto chain = s.GetChain("default", kFp, c.tip());
  ASSERT_TRUE(chain.ok());
  EXPECT_EQ(chain->size(), 2u);  // the head was rewritten shorter, same chain id
  // The sidecar went with its tip; the one on a kept block stays.
  EXPECT_TRUE(s.GetSidecar("default", kFp, c.tip()).status().IsNotFound());
  EXPECT_TRUE(s.GetSidecar("default", kFp, c.keys[1]).ok());
  EXPECT_EQ(UsageOf(s).sidecars, 1u);
  clock_.Advance(2 * kHour);  // CheckPrefix read the prefix: a use
  ASSERT_TRUE(s.Evict().ok());
  EXPECT_EQ(CheckPrefix(s, c), 0u);
  EXPECT_TRUE(s.GetChain("default", kFp, c.tip()).status().IsNotFound());
  EXPECT_EQ(UsageOf(s).sidecars, 0u);
}

TEST_P(Capacity, TtlEvictsChainsUnusedForLongerThanItPerNamespace) {
  StoreOptions o = Options();
  o.namespace_ttl_seconds["scratch"] = 2 * 3600;  // "default" has none
  Store& s = Open(o);
  auto a = MakeChain(3, 500, 11), b = MakeChain(3, 500, 12), d = MakeChain(3, 500, 13);
  PutAndPublish(s, a, "scratch");
  PutAndPublish(s, d, "default");
  clock_.Advance(kHour);
  PutAndPublish(s, b, "scratch");
  clock_.Advance(kHour + kHour / 2);  // a: 2.5 h unused, b: 1.5 h
  ASSERT_TRUE(s.Evict().ok());
  EXPECT_EQ(CheckPrefix(s, a, "scratch"), 0u);
  EXPECT_EQ(CheckPrefix(s, b, "scratch"), 3u);  // (a read: a use)
  clock_.Advance(kHour + kHour / 2);            // b: last read 1.5 h ago
  ASSERT_TRUE(s.Evict().ok());
  EXPECT_EQ(s.ListChains("scratch").value().size(), 1u);  // (a lookup would be a use)
  clock_.Advance(kHour);  // 2.5 h
  ASSERT_TRUE(s.Evict().ok());
  EXPECT_EQ(*s.LookupPrefix("scratch", kFp, b.keys), 0u);
  EXPECT_EQ(CheckPrefix(s, d, "default"), 3u);  // no TTL there
  EXPECT_TRUE(s.ListChains("scratch").value().empty());
}

TEST_P(Capacity, UseOrderSurvivesARestart) {
  StoreOptions o = Options();
  Store* s = &Open(o);
  auto older = MakeChain(4, 2000, 21), newer = MakeChain(4, 2000, 22);
  PutAndPublish(*s, older);
  clock_.Advance(kHour);
  PutAndPublish(*s, newer);
  clock_.Advance(kHour);
  ASSERT_TRUE(s->GetBlocks("default", kFp, older.keys).ok());  // older is now the more recent use
  o.namespace_bytes_max["default"] = UsageOf(*s).referenced_bytes() - 1;
  s = &Open(o);  // a clean restart, now with a budget one byte short
  EvictUntilDone(*s);
  EXPECT_EQ(*s->LookupPrefix("default", kFp, older.keys), 4u);
  EXPECT_LT(*s->LookupPrefix("default", kFp, newer.keys), 4u);
}

// ------------------------------------------------------------------------------- G10 (serial)

TEST_P(Capacity, G10APutAwaitingItsPublishKeepsTheChainItExtends) {
  StoreOptions o = Options();
  o.namespace_bytes_max["default"] = 1;  // evict everything that may go
  o.publish_grace_seconds = 600;
  Store& s = Open(o);
  auto base = MakeChain(4, 1000, 31);
  PutAndPublish(s, base);
  auto other = MakeChain(4, 1000, 32);
  PutAndPublish(s, other);
  // An extension of base, put but not published yet.
  TestChain ext = MakeChain(2, 1000, 33);
  std::vector<BlockPut> puts = ext.Puts();
  puts[0].parent = base.tip();
  ASSERT_TRUE(s.PutBlocks("default", kFp, puts).ok());
  clock_.Advance(60ull * 1000000);
  auto r = s.Evict();
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->skipped_in_flight, 0u);
  EXPECT_EQ(CheckPrefix(s, base), 4u) << "G10: the chain a pending put extends was trimmed";
  EXPECT_EQ(CheckPrefix(s, other), 0u);
  ASSERT_TRUE(s.PublishChain("default", kFp, ext.tip(), ext.tip()).ok());
  // Published, no longer in flight: it may go now.
  EvictUntilDone(s);
  EXPECT_EQ(CheckPrefix(s, base), 0u);
}

TEST_P(Capacity, G10AnAbandonedPutProtectsNothingAfterTheGrace) {
  StoreOptions o = Options();
  o.namespace_bytes_max["default"] = 1;
  o.publish_grace_seconds = 600;
  Store& s = Open(o);
  auto base = MakeChain(3, 1000, 41);
  PutAndPublish(s, base);
  const std::vector<uint8_t> ext_payload = Payload(4100, 100);  // outlives the put's view of it
  BlockPut ext{Key(4100), base.tip(), ext_payload};
  ASSERT_TRUE(s.PutBlocks("default", kFp, {&ext, 1}).ok());
  clock_.Advance(601ull * 1000000);
  EvictUntilDone(s);
  EXPECT_EQ(CheckPrefix(s, base), 0u);
}

// ------------------------------------------------------------------------------ abandoned puts

bool LogHas(const StoreHarness& h, std::string_view what) {
  for (const std::string& line : h.log()) {
    if (line.find(what) != std::string::npos) return true;
  }
  return false;
}

// docs/capacity.md, "Abandoned puts": a put never published is forgotten once it is older than
// both graces — its pending entry and L1 record go, and a publish naming it fails as for a block
// never put. A younger put stays publishable.
TEST_P(Capacity, APutNeverPublishedIsForgottenOnceOlderThanBothGraces) {
  StoreOptions o = Options();
  o.publish_grace_seconds = 600;
  o.gc_grace_us = 1200ull * 1000000;
  Store* s = &Open(o);
  auto old = MakeChain(3, 1000, 51), young = MakeChain(2, 1000, 52), late = MakeChain(1, 1000, 53);
  ASSERT_TRUE(s->PutBlocks("default", kFp, old.Puts()).ok());
  clock_.Advance(1200ull * 1000000);  // exactly the larger grace: not abandoned yet
  ASSERT_TRUE(s->PutBlocks("default", kFp, young.Puts()).ok());
  EXPECT_EQ(s->Stats().pending_blocks, 5u);
  clock_.Advance(61ull * 1000000);  // past it, and past the check's period (a minute at most)
  ASSERT_TRUE(s->PutBlocks("default", kFp, late.Puts()).ok());
  EXPECT_EQ(s->Stats().pending_blocks, 3u) << "the old put's 3 blocks stay pending";
  EXPECT_EQ(s->Stats().pending_blocks_forgotten, 3u);
  EXPECT_TRUE(LogHas(h_, "3 blocks put more than 1200 s ago and never published were forgotten"));
  EXPECT_TRUE(s->PublishChain("default", kFp, old.tip(), old.tip()).status().code() ==
              Code::kFailedPrecondition);
  ASSERT_TRUE(s->PublishChain("default", kFp, young.tip(), young.tip()).ok());
  EXPECT_EQ(CheckPrefix(*s, young), 2u);
  // Their L1 records went too: a restart reloads only the late put's.
  s = &Open(o);
  EXPECT_TRUE(LogHas(h_, "1 blocks were put but not published before the last stop"));
  EXPECT_EQ(s->Stats().pending_blocks, 1u);
  EXPECT_TRUE(s->PublishChain("default", kFp, late.tip(), late.tip()).ok());
}

// A put reloaded from L1 keeps its put time: one that was already abandoned is forgotten at open.
// Here the publish grace is the larger one: the age is that.
TEST_P(Capacity, APutAbandonedWhileTheStoreWasClosedIsForgottenAtOpen) {
  StoreOptions o = Options();
  o.publish_grace_seconds = 2 * 3600;
  Store* s = &Open(o);
  auto c = MakeChain(2, 1000, 54);
  ASSERT_TRUE(s->PutBlocks("default", kFp, c.Puts()).ok());
  h_.Close();
  clock_.Advance(o.gc_grace_us + 1);
  s = &Open(o);
  EXPECT_EQ(s->Stats().pending_blocks, 2u) << "older than the GC grace only";
  h_.Close();
  clock_.Advance(2 * kHour);
  s = &Open(o);
  EXPECT_EQ(s->Stats().pending_blocks, 0u);
  EXPECT_TRUE(LogHas(h_, "2 blocks put more than"));
  EXPECT_TRUE(s->PublishChain("default", kFp, c.tip(), c.tip()).status().code() ==
              Code::kFailedPrecondition);
}

// In-memory planes on a fake clock, an inline executor, graces of a second, and an L2 whose blob
// writes can be made to fail and which can run a callback just before the next head write.
class AbandonedPuts : public ::testing::Test {
 protected:
  class HookedL2 final : public ObjectStoreWrapper {
   public:
    explicit HookedL2(ObjectStore* target) : ObjectStoreWrapper(target) {}
    std::function<void()> before_head;
    std::function<void()> before_blob;
    bool fail_blobs = false;
    Result<std::string> Put(std::string_view key, const std::vector<ByteView>& parts,
                            const PutOptions& options) override {
      const bool head = key.find("/chain/") != std::string_view::npos;
      if (head && before_head) std::exchange(before_head, nullptr)();
      if (!head && before_blob) std::exchange(before_blob, nullptr)();
      if (!head && fail_blobs) return Status::Unavailable("injected: blob writes fail");
      return ObjectStoreWrapper::Put(key, parts, options);
    }
  };
  AbandonedPuts() {
    clock_.Advance(1'000'000);
    StoreOptions o;
    o.object_store = &l2_;
    o.meta_store = l1_.get();
    o.clock = &clock_;
    o.executor = executor_.get();
    o.eviction_interval_ms = 0;
    o.publish_grace_seconds = 1;
    o.gc_grace_us = 1'000'000;
    o.log = [](LogLevel, const std::string&) {};  // failed uploads are logged (from this thread)
    store_ = std::move(Store::Open(o)).value();
  }
  bool InL2(const ContentHash& hash) {
    return mem_->Head(layout::BlobKey("kv", "default", hash)).ok();
  }
  // Two puts (salts `salt` and salt + 1), the first long past both graces and the second two
  // minutes later: each runs the abandoned-put check once due.
  void PutsLongAfter(uint64_t salt) {
    clock_.Advance(10'000'000);
    ASSERT_TRUE(store_->PutBlocks("default", kFp, MakeChain(1, 4000, salt).Puts()).ok());
    executor_->Drain();
    clock_.Advance(120'000'000);
    ASSERT_TRUE(store_->PutBlocks("default", kFp, MakeChain(1, 4000, salt + 1).Puts()).ok());
    executor_->Drain();
  }

  // An in-memory L1 whose writes can be made to fail.
  class FailingL1 final : public MemMetaStoreWrapper {
   public:
    bool fail_writes = false;
    Status Write(const MetaWriteBatch& batch, bool sync) override {
      if (fail_writes) return Status::Unavailable("injected: L1 writes fail");
      return MemMetaStoreWrapper::Write(batch, sync);
    }
  };

  FakeClock clock_;
  std::unique_ptr<ObjectStore> mem_ = NewMemObjectStore(&clock_);
  HookedL2 l2_{mem_.get()};
  std::unique_ptr<FailingL1> l1_ = std::make_unique<FailingL1>();
  std::unique_ptr<Executor> executor_ = NewInlineExecutor();
  std::unique_ptr<Store> store_;
};

// A publish that collected its blocks before they were old enough to be forgotten keeps them —
// and their blobs, from this store's orphan GC — until it is done. Here a put's pass and an
// orphan GC pass land between the publish's durability barrier and its head write.
TEST_F(AbandonedPuts, APublishUnderWayKeepsItsBlocksFromBeingForgotten) {
  auto x = MakeChain(1, 4000, 81), y = MakeChain(1, 4000, 82);
  auto hashes = store_->PutBlocks("default", kFp, x.Puts());
  ASSERT_TRUE(hashes.ok());
  executor_->Drain();          // x's upload is done
  clock_.Advance(10'000'000);  // x is older than both graces; no pass has run since
  bool ran = false;
  l2_.before_head = [&] {
    ran = true;
    ASSERT_TRUE(store_->PutBlocks("default", kFp, y.Puts()).ok());  // a pass runs here
    auto gc = store_->CollectOrphans();
    ASSERT_TRUE(gc.ok()) << gc.status().ToString();
    EXPECT_EQ(gc->deleted, 0u);
  };
  auto v = store_->PublishChain("default", kFp, x.tip(), x.tip());
  ASSERT_TRUE(ran);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(InL2((*hashes)[0])) << "an acknowledged chain names a blob that is gone";
  EXPECT_EQ(store_->Stats().pending_blocks_forgotten, 0u);
}

// A put whose upload failed holds its payload pinned in RAM for a publish to retry; forgotten,
// it lets go of it.
TEST_F(AbandonedPuts, AForgottenPutsFailedUploadReleasesItsPayload) {
  auto x = MakeChain(2, 4000, 83), y = MakeChain(1, 4000, 84);
  l2_.fail_blobs = true;
  ASSERT_TRUE(store_->PutBlocks("default", kFp, x.Puts()).ok());
  executor_->Drain();
  EXPECT_EQ(store_->Stats().cache_pinned_bytes, 8000u) << "the failed uploads' payloads";
  l2_.fail_blobs = false;
  clock_.Advance(10'000'000);
  ASSERT_TRUE(store_->PutBlocks("default", kFp, y.Puts()).ok());
  executor_->Drain();
  EXPECT_EQ(store_->Stats().pending_blocks_forgotten, 2u);
  EXPECT_EQ(store_->Stats().cache_pinned_bytes, 0u);
}

// A put that L1 refused (the call fails) after its uploads had started — here failing too, so
// their payloads stay pinned for a retry — is forgotten as an abandoned put like any other, and
// lets go of them (it was in no pending list, so nothing ever released them).
TEST_F(AbandonedPuts, APutWhoseL1WriteFailedReleasesItsPayloads) {
  auto x = MakeChain(2, 4000, 91), y = MakeChain(1, 4000, 92);
  l2_.fail_blobs = true;
  l1_->fail_writes = true;
  EXPECT_FALSE(store_->PutBlocks("default", kFp, x.Puts()).ok());
  executor_->Drain();
  EXPECT_EQ(store_->Stats().cache_pinned_bytes, 8000u) << "the failed uploads' payloads";
  l2_.fail_blobs = false;
  l1_->fail_writes = false;
  clock_.Advance(10'000'000);
  ASSERT_TRUE(store_->PutBlocks("default", kFp, y.Puts()).ok());
  executor_->Drain();
  EXPECT_EQ(store_->Stats().cache_pinned_bytes, 0u);
}

// A put whose upload failed, replaced by a put of the same key with other bytes (a
// nondeterministic engine saving a block again) before any publish: the first put is no longer
// pending, so nothing ever retries, retires or forgets its upload. Its payload must not stay
// pinned in RAM for ever.
TEST_F(AbandonedPuts, AFailedUploadOfAPutReplacedByOtherBytesReleasesItsPayload) {
  auto x = MakeChain(1, 4000, 85);
  l2_.fail_blobs = true;
  ASSERT_TRUE(store_->PutBlocks("default", kFp, x.Puts()).ok());
  executor_->Drain();
  EXPECT_EQ(store_->Stats().cache_pinned_bytes, 4000u) << "the failed upload's payload";
  l2_.fail_blobs = false;
  TestChain again = x;
  again.payloads[0] = Payload(8500, 4000);  // the same key, other bytes
  ASSERT_TRUE(store_->PutBlocks("default", kFp, again.Puts()).ok());
  ASSERT_TRUE(store_->PublishChain("default", kFp, again.tip(), again.tip()).ok());
  PutsLongAfter(86);
  EXPECT_EQ(store_->Stats().pending_blocks, 1u);  // the last put's, young
  EXPECT_EQ(store_->Stats().cache_pinned_bytes, 0u)
      << "the replaced put's failed upload keeps its payload pinned for ever";
}

// The same, with the put replaced while a publish had collected it, and that publish failing (its
// retry of the failed upload fails again): the publish's claim kept the replaced put's upload
// from the check; when the claim goes, the upload is nobody's.
TEST_F(AbandonedPuts, AFailedUploadOfAPutReplacedDuringAFailingPublishReleasesItsPayload) {
  auto x = MakeChain(1, 4000, 88);
  l2_.fail_blobs = true;
  ASSERT_TRUE(store_->PutBlocks("default", kFp, x.Puts()).ok());
  executor_->Drain();
  TestChain again = x;
  again.payloads[0] = Payload(8800, 4000);  // the same key, other bytes
  l2_.before_blob = [&] {  // the publish retries x's upload: the key is put again meanwhile
    l2_.fail_blobs = false;
    EXPECT_TRUE(store_->PutBlocks("default", kFp, again.Puts()).ok());
    l2_.fail_blobs = true;
  };
  EXPECT_FALSE(store_->PublishChain("default", kFp, x.tip(), x.tip()).ok());
  ASSERT_FALSE(l2_.before_blob) << "the interleaving did not happen";
  l2_.fail_blobs = false;
  executor_->Drain();  // the new put's upload
  PutsLongAfter(89);
  EXPECT_EQ(store_->Stats().cache_pinned_bytes, 0u)
      << "the replaced put's failed upload keeps its payload pinned for ever";
}

// A put of bytes already in L2 keeps them (for the publisher's R4 re-check) until a publish
// consumes its upload; replaced by a put of the same key with other bytes, nobody ever does.
// The kept bytes make the RAM cache count the blob as borrowed, and G10 then keeps every chain
// whose tail names it from eviction — for ever, with nothing borrowed or in flight.
TEST_P(Capacity, AReplacedPutOfBytesAlreadyInL2DoesNotKeepTheirChainFromEvictionForEver) {
  StoreOptions o = Options();
  o.namespace_bytes_max["default"] = 1;  // passes run only when the test calls Evict
  o.publish_grace_seconds = 600;
  o.gc_grace_us = 1200ull * 1000000;
  Store& s = Open(o);
  auto p = MakeChain(2, 4000, 61);
  PutAndPublish(s, p);
  executor_->Drain();
  // Another key with p's tip's bytes (already in L2: its upload finds them there), then that key
  // put again with other bytes, and published.
  BlockPut reuse{Key(6100), BlockKey{}, p.payloads[1]};
  ASSERT_TRUE(s.PutBlocks("default", kFp, {&reuse, 1}).ok());
  executor_->Drain();
  const std::vector<uint8_t> other = Payload(6101, 4000);
  BlockPut replaced{Key(6100), BlockKey{}, other};
  ASSERT_TRUE(s.PutBlocks("default", kFp, {&replaced, 1}).ok());
  ASSERT_TRUE(s.PublishChain("default", kFp, Key(6100), Key(6100)).ok());
  executor_->Drain();
  // Long past both graces; a put runs the abandoned-put check.
  clock_.Advance(2 * kHour);
  ASSERT_TRUE(s.PutBlocks("default", kFp, MakeChain(1, 100, 62).Puts()).ok());
  executor_->Drain();
  clock_.Advance(2 * kHour);
  ASSERT_TRUE(s.PutBlocks("default", kFp, MakeChain(1, 100, 63).Puts()).ok());
  executor_->Drain();
  clock_.Advance(2 * kHour);  // these two are past the publish grace as well
  EvictUntilDone(s);
  EXPECT_EQ(CheckPrefix(s, p), 0u)
      << "p's tail is held as borrowed by the bytes a replaced put's upload keeps";
  EXPECT_LE(UsageOf(s).referenced_bytes(), 1u);
}

TEST_P(Capacity, G10ABorrowedBlockIsNeverEvictedAndItsBytesStayValid) {
  StoreOptions o = Options();
  o.namespace_bytes_max["default"] = 1;
  Store& s = Open(o);
  auto c = MakeChain(4, 1000, 51);
  PutAndPublish(s, c);
  {
    auto borrow = s.GetBlocks("default", kFp, std::vector<BlockKey>{c.keys[0], c.keys[1]});
    ASSERT_TRUE(borrow.ok());
    auto r = s.Evict();
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(CheckPrefix(s, c), 2u);  // trimmed down to the borrowed blocks, not into them
    EXPECT_GT(r->skipped_in_flight, 0u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_TRUE(std::ranges::equal(borrow->payload(i), c.payloads[i]));
    }
  }
  EvictUntilDone(s);
  EXPECT_EQ(CheckPrefix(s, c), 0u);
}

INSTANTIATE_TEST_SUITE_P(Planes, Capacity, ::testing::Values(Planes::kMemory, Planes::kDisk),
                         PlanesName);

// ---------------------------------------------------------------------- eviction under races

// Rewrites a chain head behind the evictor's back the first time it tries a conditional write:
// another host republishing the chain at that moment.
class RacingL2 final : public ObjectStoreWrapper {
 public:
  explicit RacingL2(ObjectStore* target) : ObjectStoreWrapper(target) {}
  Result<std::string> Put(std::string_view key, const std::vector<ByteView>& parts,
                          const PutOptions& options) override {
    if (race_armed_ && options.mode == PutMode::kIfMatch && key.find("/chain/") != key.npos) {
      race_armed_ = false;
      // Same content, new version: what a republish by another writer leaves.
      auto other = target()->Put(key, {AsBytes(republished_)}, PutOptions{});
      EXPECT_TRUE(other.ok());
    }
    return target()->Put(key, parts, options);
  }
  std::atomic<bool> race_armed_{false};
  std::string republished_;
};

TEST(CapacityRaces, AHeadChangedUnderTheEvictorIsReReadAndReplanned) {
  std::unique_ptr<ObjectStore> mem = NewMemObjectStore();
  RacingL2 l2(mem.get());
  std::unique_ptr<MetaStore> l1 = NewMemMetaStore();
  FakeClock clock;
  std::unique_ptr<Executor> ex = NewInlineExecutor();
  StoreOptions o;
  o.object_store = &l2;
  o.meta_store = l1.get();
  o.clock = &clock;
  o.executor = ex.get();
  o.eviction_interval_ms = 0;
  o.namespace_ttl_seconds[""] = 60;
  o.log = [](LogLevel, const std::string&) {};
  auto opened = Store::Open(o);
  ASSERT_TRUE(opened.ok());
  Store& s = **opened;
  auto c = MakeChain(3, 500, 61);
  ASSERT_TRUE(s.PutBlocks("default", kFp, c.Puts()).ok());
  ASSERT_TRUE(s.PublishChain("default", kFp, c.tip(), c.tip()).ok());
  const std::string key = layout::ChainKey("kv", "default", kFp, c.tip());
  auto head = mem->Get(key);
  ASSERT_TRUE(head.ok());
  l2.republished_.assign(reinterpret_cast<const char*>(head->bytes->data()), head->bytes->size());
  l2.race_armed_ = true;
  clock.Advance(2 * kHour);
  // The chain's head is only ever deleted whole here (TTL), so arm the race on a 2-step trim:
  // keep the chain's first block fresh.
  ASSERT_TRUE(s.GetBlocks("default", kFp, std::vector<BlockKey>{c.keys[0]}).ok());
  auto r = s.Evict();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->conflicts, 1u);
  EXPECT_EQ(r->chains, 1u);  // re-read, re-planned, trimmed
  EXPECT_EQ(*s.LookupPrefix("default", kFp, c.keys), 1u);
  auto now = mem->Get(key);
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->bytes->size(), layout::ChainHeadBytes(7, 1));
  EXPECT_EQ(s.Stats().evict_conflicts, 1u);
}

// Two hosts on one L2 with one budget for its namespace: eight one-block chains published (oldest
// first, on both hosts: a head's time is its use), and a budget of six and a half of them.
struct TwoHosts {
  static constexpr size_t kChains = 8;
  FakeClock clock;
  std::unique_ptr<ObjectStore> l2 = NewMemObjectStore(&clock);
  std::unique_ptr<MetaStore> l1_a = NewMemMetaStore(), l1_b = NewMemMetaStore();
  std::unique_ptr<Executor> ex = NewInlineExecutor();
  std::vector<TestChain> chains;
  uint64_t per_chain = 0;
  uint64_t lease_ms = 600'000;  // longer than the minutes Publish lets pass

  StoreOptions Options(MetaStore* l1, uint64_t budget) {
    StoreOptions o;
    o.object_store = l2.get();
    o.meta_store = l1;
    o.clock = &clock;
    o.executor = ex.get();
    o.eviction_interval_ms = 0;
    o.eviction_lease_ms = lease_ms;
    if (budget > 0) o.namespace_bytes_max = {{"default", budget}};
    o.log = [](LogLevel, const std::string&) {};
    return o;
  }
  void Publish(Store& s, uint64_t salt) {
    chains.push_back(MakeChain(1, 1000, salt));
    ASSERT_TRUE(s.PutBlocks("default", kFp, chains.back().Puts()).ok());
    ASSERT_TRUE(s.PublishChain("default", kFp, chains.back().tip(), chains.back().tip()).ok());
    clock.Advance(kHour / 60);
  }
  void PublishEight() {
    auto a = Store::Open(Options(l1_a.get(), 0));
    ASSERT_TRUE(a.ok());
    for (size_t i = 0; i < kChains; ++i) Publish(**a, 300 + i);
    per_chain = (*a)->Usage("default", false)[0].referenced_bytes() / kChains;
  }
  uint64_t Budget() const { return 6 * per_chain + per_chain / 2; }  // two of eight must go
  uint64_t Referenced(Store& s) {
    EXPECT_TRUE(s.Refresh().ok());
    return s.Usage("default", false)[0].referenced_bytes();
  }
};

// The second host not refreshed since the first evicted (and no lease, as while a lapsed lease
// changes hands): both see the same least recently used chains first, so the second's trims meet
// the first's and answer Conflict. It counts the namespace again after each and stops once within
// the budget (found by tests/chaos/chaos.py: three daemons restarted together each evicted the
// whole excess, leaving the namespace at a third of its budget).
TEST(CapacityRaces, AHostWhoseTrimsMeetAnotherHostsEvictsOnlyWhatIsStillOver) {
  TwoHosts h;
  h.lease_ms = 0;
  h.PublishEight();
  auto a = Store::Open(h.Options(h.l1_a.get(), h.Budget()));
  auto b = Store::Open(h.Options(h.l1_b.get(), h.Budget()));
  ASSERT_TRUE(a.ok() && b.ok());
  auto ra = (*a)->Evict();
  ASSERT_TRUE(ra.ok());
  EXPECT_EQ(ra->chains, 2u);
  auto rb = (*b)->Evict();  // b's view still has all eight
  ASSERT_TRUE(rb.ok());
  EXPECT_GE(rb->conflicts, 1u);
  EXPECT_EQ(rb->chains, 0u) << "b evicted a share a had evicted already";
  EXPECT_EQ(h.Referenced(**b), 6 * h.per_chain);
}

// Hosts whose uses differ order the chains differently: b has read the two oldest, so its coldest
// are the next two, and without the lease each would evict its own two (four in all, found by
// tests/chaos/chaos.py). With it, only the holder evicts; the other evicts once the lease has
// lapsed (its holder stopped: a lease is never released).
TEST(CapacityRaces, HostsThatOrderChainsDifferentlyEvictTheExcessOnceUnderTheLease) {
  TwoHosts h;
  h.PublishEight();
  auto a = Store::Open(h.Options(h.l1_a.get(), h.Budget()));
  auto b = Store::Open(h.Options(h.l1_b.get(), h.Budget()));
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE((*b)->GetBlocks("default", kFp, h.chains[i].keys).ok());
  }
  auto ra = (*a)->Evict();
  ASSERT_TRUE(ra.ok());
  EXPECT_EQ(ra->chains, 2u);
  auto rb = (*b)->Evict();  // b's view still has all eight, its two coldest not a's
  ASSERT_TRUE(rb.ok());
  EXPECT_EQ(rb->chains, 0u) << "b evicted while a held the lease";
  EXPECT_EQ((*b)->Stats().evict_lease_waits, 1u);
  EXPECT_EQ((*a)->Stats().evict_lease_waits, 0u);
  EXPECT_EQ(h.Referenced(**b), 6 * h.per_chain);

  // a stops; b goes over again and waits for a's lease to lapse.
  a->reset();
  h.Publish(**b, 400);
  h.Publish(**b, 401);
  EXPECT_EQ((*b)->Evict()->chains, 0u);
  h.clock.Advance(h.lease_ms * 1000);
  EXPECT_EQ((*b)->Evict()->chains, 2u);
  EXPECT_EQ(h.Referenced(**b), 6 * h.per_chain);
}

// With a TTL the holder renews its lease for as long as it runs, so it alone evicts there. With no
// refresh interval it saw other hosts' chains as of its open only, and those published since were
// evicted by no one (session 56's review): the holder now loads the namespaces whose lease it
// holds before a pass (at most every half lease).
TEST(CapacityRaces, TheLeaseHolderWithoutARefreshIntervalEvictsWhatOtherHostsPublishedSince) {
  TwoHosts h;
  auto options = [&](MetaStore* l1) {
    StoreOptions o = h.Options(l1, 0);
    o.namespace_ttl_seconds = {{"default", 300}};
    EXPECT_EQ(o.refresh_interval_ms, 0u);
    return o;
  };
  auto a = Store::Open(options(h.l1_a.get()));
  auto b = Store::Open(options(h.l1_b.get()));
  ASSERT_TRUE(a.ok() && b.ok());
  h.Publish(**a, 600);
  EXPECT_EQ((*a)->Evict()->chains, 0u);  // a takes the lease; its chain is a minute old
  h.Publish(**b, 601);                   // after a's open and a's pass
  h.clock.Advance(6 * kHour / 60);       // both past the TTL, a's lease still running
  EXPECT_EQ((*b)->Evict()->chains, 0u) << "b evicted while a held the lease";
  EXPECT_EQ((*a)->Evict()->chains, 2u) << "b's chain escaped the holder's eviction";
  EXPECT_EQ(h.Referenced(**b), 0u);
}

// A store that restarts on the same data directory is the same holder: it evicts at once.
TEST(CapacityRaces, AStoreReopenedOnItsDataDirectoryResumesItsLease) {
  TwoHosts h;
  h.PublishEight();
  TempDir dir;
  StoreOptions o = h.Options(h.l1_a.get(), h.Budget());
  o.data_dir = dir.path();
  {
    auto a = Store::Open(o);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ((*a)->Evict()->chains, 2u);
  }
  auto a = Store::Open(o);
  ASSERT_TRUE(a.ok());
  h.Publish(**a, 500);
  EXPECT_EQ((*a)->Evict()->chains, 1u);
  auto b = Store::Open(h.Options(h.l1_b.get(), h.Budget()));  // another host: a holds it
  ASSERT_TRUE(b.ok());
  h.Publish(**b, 501);
  EXPECT_EQ((*b)->Evict()->chains, 0u);
}

// Two containers sharing the host's name, each with its own volume mounted at one path: two
// directories of one path, two holders (the directory's seat mark), or both would renew one lease.
TEST(CapacityRaces, AnotherDirectoryAtTheSamePathIsAnotherHolder) {
  TwoHosts h;
  h.PublishEight();
  TempDir dir;
  const std::string path = dir.path() + "/data";
  StoreOptions oa = h.Options(h.l1_a.get(), h.Budget());
  oa.data_dir = path;
  {
    auto a = Store::Open(oa);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ((*a)->Evict()->chains, 2u);  // a holds the lease
  }
  std::filesystem::rename(path, dir.path() + "/data-of-a");  // the other container's volume,
  h.clock.Advance(1);                                        // made at another time
  StoreOptions ob = h.Options(h.l1_b.get(), h.Budget());
  ob.data_dir = path;
  auto b = Store::Open(ob);
  ASSERT_TRUE(b.ok());
  h.Publish(**b, 502);
  EXPECT_EQ((*b)->Evict()->chains, 0u) << "b took a's lease as its own";
  EXPECT_EQ((*b)->Stats().evict_lease_waits, 1u);
}

// Runs a callback inside the evictor's head write (a conditional put or a delete of a chain
// key), as if another thread's call landed exactly while the head was being written.
class HookedL2 final : public ObjectStoreWrapper {
 public:
  explicit HookedL2(ObjectStore* target) : ObjectStoreWrapper(target) {}
  Result<std::string> Put(std::string_view key, const std::vector<ByteView>& parts,
                          const PutOptions& options) override {
    if (key.find("/chain/") != key.npos && fail_head_puts > 0) {
      --fail_head_puts;
      return Status::Unavailable("injected: a head write fails");
    }
    if (options.mode == PutMode::kIfMatch && key.find("/chain/") != key.npos) Fire();
    return target()->Put(key, parts, options);
  }
  Status Delete(std::string_view key) override {
    if (key.find("/chain/") != key.npos) Fire();
    return target()->Delete(key);
  }
  std::function<void()> on_head_write;
  int fail_head_puts = 0;  // the next head puts that fail (with nothing written)

 private:
  void Fire() {
    if (auto f = std::exchange(on_head_write, nullptr)) f();
  }
};

// The put lands after the evictor's last check but before its change reaches L0: the trim is
// undone (L0 never loses the chain, L2 gets the head back) and the publish goes through.
TEST(CapacityRaces, G10APutLandingWhileTheTrimmedHeadIsWrittenUndoesTheTrim) {
  for (const auto& [whole, restore_fails] :
       {std::pair{true, false}, {false, false}, {true, true}, {false, true}}) {
    SCOPED_TRACE(std::string(whole ? "head deleted" : "head rewritten shorter") +
                 (restore_fails ? ", its first write back failing" : ""));
    std::unique_ptr<ObjectStore> mem = NewMemObjectStore();
    HookedL2 l2(mem.get());
    std::unique_ptr<MetaStore> l1 = NewMemMetaStore();
    FakeClock clock;
    std::unique_ptr<Executor> ex = NewInlineExecutor();
    StoreOptions o;
    o.object_store = &l2;
    o.meta_store = l1.get();
    o.clock = &clock;
    o.executor = ex.get();
    o.eviction_interval_ms = 0;
    o.namespace_ttl_seconds[""] = 60;
    o.log = [](LogLevel, const std::string&) {};
    auto opened = Store::Open(o);
    ASSERT_TRUE(opened.ok());
    Store& s = **opened;
    auto base = MakeChain(3, 500, 71);
    ASSERT_TRUE(s.PutBlocks("default", kFp, base.Puts()).ok());
    ASSERT_TRUE(s.PublishChain("default", kFp, base.tip(), base.tip()).ok());
    clock.Advance(2 * kHour);
    if (!whole) {
      ASSERT_TRUE(s.GetBlocks("default", kFp, std::vector<BlockKey>{base.keys[0]}).ok());
    }
    // The extension's parent is the base's second block: in both cases inside the cut.
    const std::vector<uint8_t> ext_payload = Payload(7100, 300);  // outlives the put's view of it
    BlockPut ext{Key(7100), base.keys[1], ext_payload};
    l2.on_head_write = [&] {
      ASSERT_TRUE(s.PutBlocks("default", kFp, {&ext, 1}).ok());
      l2.fail_head_puts = restore_fails ? 1 : 0;  // the write of the head back, once
    };
    auto r = s.Evict();
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->chains, 0u);
    EXPECT_GT(r->skipped_in_flight, 0u);
    EXPECT_EQ(*s.LookupPrefix("default", kFp, base.keys), 3u);
    auto head = mem->Head(layout::ChainKey("kv", "default", kFp, base.tip()));
    ASSERT_TRUE(head.ok()) << "the head is back in L2";
    EXPECT_EQ(head->size, layout::ChainHeadBytes(7, 3));
    auto v = s.PublishChain("default", kFp, ext.key, ext.key);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
  }
}

// A pass stops between head writes once the lease it started under has run out (a write may take
// its retries' time, and meanwhile another host may take the lapsed lease): the next pass renews
// the lease first.
TEST(CapacityRaces, APassStopsTrimmingWhenItsLeaseRunsOut) {
  TwoHosts h;
  h.PublishEight();
  HookedL2 slow(h.l2.get());
  StoreOptions o = h.Options(h.l1_a.get(), h.Budget());
  o.object_store = &slow;
  auto a = Store::Open(o);
  ASSERT_TRUE(a.ok());
  slow.on_head_write = [&] { h.clock.Advance(h.lease_ms * 1000); };
  auto first = (*a)->Evict();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->chains, 1u) << "trimmed on after its lease had run out";
  auto second = (*a)->Evict();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->chains, 1u);
  EXPECT_EQ(h.Referenced(**a), 6 * h.per_chain);
}

// G10 with real threads: writers hold puts that extend published chains while evictors (the
// background one and explicit passes) trim under a budget far too small, readers look up, get
// and hold borrows. Nothing in flight may be trimmed, borrowed bytes stay right, every lookup
// answers a valid prefix, and every chain left reads back.
TEST(CapacityRaces, G10EvictionRacingBorrowsInFlightPublishesAndReads) {
  std::unique_ptr<ObjectStore> l2 = NewMemObjectStore();
  std::unique_ptr<MetaStore> l1 = NewMemMetaStore();
  StoreOptions o;
  o.object_store = l2.get();
  o.meta_store = l1.get();
  o.upload_threads = 4;
  o.cache_bytes_max = 1 << 20;
  // Smaller than the chains the three writers hold in flight at once: the evictor must meet them.
  o.namespace_bytes_max["default"] = 16 << 10;
  o.eviction_interval_ms = 1;  // the store's own evictor thread runs all the time too
  o.eviction_heads_per_pass = 4;
  o.log = [](LogLevel, const std::string&) {};
  auto opened = Store::Open(o);
  ASSERT_TRUE(opened.ok());
  Store& s = **opened;

  std::atomic<bool> stop{false};
  std::atomic<int> violations{0}, in_flight_checked{0}, borrows_checked{0}, publishes{0};
  std::mutex published_mu;
  std::vector<TestChain> published;  // every chain ever published (read by the readers)

  auto writer = [&](int w) {
    for (int i = 0; i < 60 && !stop; ++i) {
      const uint64_t salt = 1000 * (w + 1) + i;
      auto base = MakeChain(4, 2048, salt);
      if (!s.PutBlocks("default", kFp, base.Puts()).ok() ||
          !s.PublishChain("default", kFp, base.tip(), base.tip()).ok()) {
        violations++;
        continue;
      }
      auto ext = MakeChain(3, 2048, salt + 500000);
      std::vector<BlockPut> puts = ext.Puts();
      puts[0].parent = base.tip();
      if (!s.PutBlocks("default", kFp, puts).ok()) {
        violations++;
        continue;
      }
      // Whatever eviction did before the put returned, from now on the path is in flight.
      const size_t at_put = *s.LookupPrefix("default", kFp, base.keys);
      for (int k = 0; k < 20; ++k) {
        std::this_thread::yield();
        if (at_put == 4 && *s.LookupPrefix("default", kFp, base.keys) != 4) violations++;
      }
      if (at_put == 4) {
        in_flight_checked++;
        auto v = s.PublishChain("default", kFp, ext.tip(), ext.tip());
        if (!v.ok()) {
          ADD_FAILURE() << "publish of an in-flight chain failed: " << v.status().ToString();
          violations++;
        }
        TestChain full = base;
        full.keys.insert(full.keys.end(), ext.keys.begin(), ext.keys.end());
        full.payloads.insert(full.payloads.end(), ext.payloads.begin(), ext.payloads.end());
        std::lock_guard<std::mutex> g(published_mu);
        published.push_back(full);
        publishes++;
      }
      std::lock_guard<std::mutex> g(published_mu);
      published.push_back(base);
    }
  };
  auto reader = [&](int r) {
    std::deque<std::pair<Borrow, TestChain>> held;
    uint64_t x = 12345 + r;
    while (!stop) {
      TestChain c;
      {
        std::lock_guard<std::mutex> g(published_mu);
        if (published.empty()) continue;
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        c = published[(x >> 33) % published.size()];
      }
      auto m = s.LookupPrefix("default", kFp, c.keys);
      if (!m.ok() || *m > c.keys.size()) {
        violations++;
        continue;
      }
      if (*m == 0) continue;
      std::vector<BlockKey> keys(c.keys.begin(), c.keys.begin() + static_cast<ptrdiff_t>(*m));
      auto got = s.GetBlocks("default", kFp, keys);
      if (!got.ok()) {
        if (!got.status().IsNotFound()) violations++;  // trimmed since the lookup: a miss
        continue;
      }
      for (size_t i = 0; i < *m; ++i) {
        if (!std::ranges::equal(got->payload(i), c.payloads[i])) violations++;
      }
      held.emplace_back(std::move(got).value(), c);
      if (held.size() > 8) {
        auto& [borrow, chain] = held.front();
        for (size_t i = 0; i < borrow.size(); ++i) {
          if (!std::ranges::equal(borrow.payload(i), chain.payloads[i])) violations++;
        }
        borrows_checked++;
        held.pop_front();
      }
    }
  };
  auto evictor = [&] {
    while (!stop) {
      if (!s.Evict().ok()) violations++;
    }
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < 3; ++w) threads.emplace_back(writer, w);
  for (int r = 0; r < 2; ++r) threads.emplace_back(reader, r);
  threads.emplace_back(evictor);
  for (int w = 0; w < 3; ++w) threads[w].join();
  stop = true;
  for (size_t t = 3; t < threads.size(); ++t) threads[t].join();

  EXPECT_EQ(violations.load(), 0);
  EXPECT_GT(in_flight_checked.load(), 0);
  EXPECT_GT(borrows_checked.load(), 0);
  const StoreStats st = s.Stats();
  EXPECT_GT(st.evict_chains, 0u);
  EXPECT_GT(st.evict_skipped_in_flight, 0u);
  // Quiet again (nothing in flight any more): the budget holds. Once a pass finds the namespace
  // under its budget, the background evictor has nothing left to do either.
  for (int pass = 0; pass < 200; ++pass) {
    auto r = s.Evict();
    ASSERT_TRUE(r.ok());
    if (!r->work_left) break;
  }
  auto u = s.Usage("default", false);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_LE(u[0].referenced_bytes(), 16u << 10);
  // Every chain left is a valid prefix that reads back whole.
  auto chains = s.ListChains("default");
  ASSERT_TRUE(chains.ok()) << chains.status().ToString();
  for (const ChainState& c : *chains) {
    auto blocks = s.GetChain("default", kFp, c.chain_id);
    ASSERT_TRUE(blocks.ok());
    std::vector<BlockKey> keys;
    for (const auto& b : *blocks) keys.push_back(b.key);
    EXPECT_EQ(*s.LookupPrefix("default", kFp, keys), keys.size());
    auto got = s.GetBlocks("default", kFp, keys);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    for (size_t i = 0; i < keys.size(); ++i) {
      EXPECT_EQ(HashPayload(got->payload(i)), (*blocks)[i].hash);
    }
  }
}

}  // namespace
}  // namespace wombatkv::testing
