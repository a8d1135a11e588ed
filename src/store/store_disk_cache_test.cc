// The local disk cache as the store uses it (docs/capacity.md): in front of a "remote" L2 (a
// MemObjectStore behind a counting wrapper), with real files under the data directory.
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cache/disk_cache.h"
#include "meta/meta_store.h"
#include "store/store_test_util.h"

namespace wombatkv {
namespace {

namespace fs = std::filesystem;
using testing::MakeChain;
using testing::TestChain;

const Fingerprint kFp = testing::Fp(3);

// Counts blob reads, so a test can tell a disk-cache hit from an L2 fetch.
class CountingL2 final : public ObjectStoreWrapper {
 public:
  explicit CountingL2(ObjectStore* target) : ObjectStoreWrapper(target) {}
  Result<ObjectData> Get(std::string_view key, uint64_t offset, uint64_t length) override {
    if (key.find("/blob/") != std::string_view::npos) blob_gets++;
    return ObjectStoreWrapper::Get(key, offset, length);
  }
  std::atomic<uint64_t> blob_gets{0};
};

class StoreDiskCache : public ::testing::Test {
 protected:
  StoreOptions Options(uint64_t disk_budget) {
    StoreOptions o;
    o.data_dir = dir_.path() + "/data";
    o.object_store = &l2_;
    o.meta_store = l1_.get();
    o.executor = executor_.get();
    // A RAM cache of one byte keeps nothing that is not borrowed or pinned: every get below
    // goes past it.
    o.cache_bytes_max = 1;
    o.disk_cache_bytes_max = disk_budget;
    o.log = [this](LogLevel, const std::string& m) {
      std::lock_guard<std::mutex> g(log_mu_);
      log_.push_back(m);
    };
    return o;
  }
  std::unique_ptr<Store> Open(uint64_t disk_budget) { return Open(Options(disk_budget)); }
  std::unique_ptr<Store> Open(const StoreOptions& o) {
    auto s = Store::Open(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  void Publish(Store& s, const TestChain& c) {
    ASSERT_TRUE(s.PutBlocks("default", kFp, c.Puts()).ok());
    auto v = s.PublishChain("default", kFp, c.tip(), c.tip());
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    // The publish ran its uploads itself: the background work they queued (disk cache fills)
    // runs here, as a thread pool would have run it by now.
    executor_->Drain();
  }
  // Reads the whole chain and checks every byte.
  void ExpectChainReads(Store& s, const TestChain& c) {
    auto got = s.GetBlocks("default", kFp, c.keys);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    for (size_t i = 0; i < c.keys.size(); ++i) {
      ASSERT_EQ(got->payload(i).size(), c.payloads[i].size());
      ASSERT_EQ(std::memcmp(got->payload(i).data(), c.payloads[i].data(), c.payloads[i].size()),
                0)
          << "block " << i;
    }
  }
  std::string CacheDir() const { return dir_.path() + "/data/cache"; }
  std::string FileOf(const std::vector<uint8_t>& payload) const {
    return DiskCache::PathOf(CacheDir(), "default", HashPayload(payload));
  }
  // Cache files on disk and their bytes.
  std::pair<uint64_t, uint64_t> OnDisk() const {
    uint64_t files = 0, bytes = 0;
    if (!fs::exists(CacheDir())) return {0, 0};
    for (const auto& e : fs::recursive_directory_iterator(CacheDir())) {
      if (!e.is_regular_file()) continue;
      files++;
      bytes += e.file_size();
    }
    return {files, bytes};
  }

  testing::TempDir dir_;
  std::unique_ptr<ObjectStore> mem_ = NewMemObjectStore();
  CountingL2 l2_{mem_.get()};
  std::unique_ptr<MetaStore> l1_ = NewMemMetaStore();
  std::unique_ptr<Executor> executor_ = NewThreadPoolExecutor(4, "dcache-test");
  std::mutex log_mu_;
  std::vector<std::string> log_;
};

TEST_F(StoreDiskCache, UploadsWriteThroughSoAGetAfterRamEvictionNeverTouchesL2) {
  auto s = Open(64 << 20);
  const TestChain c = MakeChain(8, 10000, 1);
  Publish(*s, c);
  executor_->Drain();  // the write-through fills run after the uploads, off the publish's path
  for (const auto& p : c.payloads) EXPECT_TRUE(fs::exists(FileOf(p)));
  ExpectChainReads(*s, c);
  EXPECT_EQ(l2_.blob_gets.load(), 0u);
  const StoreStats st = s->Stats();
  EXPECT_EQ(st.disk_cache_hits, 8u);
  EXPECT_EQ(st.disk_cache_files, 8u);
  EXPECT_EQ(st.disk_cache_bytes, 8 * DiskCache::FileBytes(10000));
  EXPECT_EQ(st.disk_cache_budget_bytes, 64u << 20);
  EXPECT_EQ(st.disk_cache_fills, 8u);
  auto usage = s->Usage("default", false);
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0].disk_cache_files, 8u);
  EXPECT_EQ(usage[0].disk_cache_bytes, 8 * DiskCache::FileBytes(10000));
}

TEST_F(StoreDiskCache, AnL2FetchFillsTheCacheAndTheNextColdGetIsLocal) {
  const TestChain c = MakeChain(6, 7000, 2);
  {
    auto s = Open(0);  // written without a disk cache: only L2 has the blobs
    Publish(*s, c);
  }
  auto s = Open(64 << 20);
  EXPECT_EQ(s->Stats().disk_cache_files, 0u);
  ExpectChainReads(*s, c);
  EXPECT_EQ(l2_.blob_gets.load(), 6u);
  EXPECT_EQ(s->Stats().disk_cache_misses, 6u);
  executor_->Drain();
  EXPECT_EQ(s->Stats().disk_cache_files, 6u);
  ExpectChainReads(*s, c);
  EXPECT_EQ(l2_.blob_gets.load(), 6u) << "the second cold get is served from the disk cache";
  EXPECT_EQ(s->Stats().disk_cache_hits, 6u);
}

TEST_F(StoreDiskCache, ARestartKeepsExactAccountingAndServesHitsWithoutL2) {
  std::vector<TestChain> chains;
  StoreStats before;
  std::vector<NamespaceUsage> usage_before;
  {
    auto s = Open(64 << 20);
    for (uint64_t i = 0; i < 5; ++i) {
      chains.push_back(MakeChain(4 + i, 3000 + 1000 * i, 10 + i));
      Publish(*s, chains.back());
    }
    executor_->Drain();
    before = s->Stats();
    usage_before = s->Usage("", false);
  }
  uint64_t expected = 0, files = 0;
  for (const TestChain& c : chains) {
    for (const auto& p : c.payloads) {
      expected += DiskCache::FileBytes(p.size());
      files++;
    }
  }
  EXPECT_EQ(before.disk_cache_bytes, expected);
  EXPECT_EQ(OnDisk(), std::make_pair(files, expected));
  auto s = Open(64 << 20);
  const StoreStats after = s->Stats();
  EXPECT_EQ(after.disk_cache_files, before.disk_cache_files);
  EXPECT_EQ(after.disk_cache_bytes, before.disk_cache_bytes);
  auto usage_after = s->Usage("", false);
  ASSERT_EQ(usage_after.size(), usage_before.size());
  EXPECT_EQ(usage_after[0].disk_cache_bytes, usage_before[0].disk_cache_bytes);
  EXPECT_EQ(usage_after[0].disk_cache_files, usage_before[0].disk_cache_files);
  for (const TestChain& c : chains) ExpectChainReads(*s, c);
  EXPECT_EQ(l2_.blob_gets.load(), 0u) << "every block came from the disk cache";
  EXPECT_EQ(s->Stats().disk_cache_hits, files);
}

TEST_F(StoreDiskCache, ACorruptOrTruncatedCacheFileIsDroppedAndRefetchedNeverReturned) {
  const TestChain c = MakeChain(3, 20000, 3);
  {
    auto s = Open(64 << 20);
    Publish(*s, c);
    executor_->Drain();
  }
  // Block 0 torn (a crash kept a prefix), block 1 with one flipped payload byte.
  fs::resize_file(FileOf(c.payloads[0]), 40 + 5000);
  {
    std::fstream f(FileOf(c.payloads[1]), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40 + 12345);
    const char flipped = static_cast<char>(c.payloads[1][12345] ^ 0x04);
    f.write(&flipped, 1);
  }
  auto s = Open(64 << 20);
  ExpectChainReads(*s, c);  // the right bytes, from L2 for the two bad files
  EXPECT_EQ(l2_.blob_gets.load(), 2u);
  StoreStats st = s->Stats();
  EXPECT_EQ(st.disk_cache_dropped, 2u);
  EXPECT_EQ(st.disk_cache_hits, 1u);
  EXPECT_EQ(st.corruptions_detected, 0u) << "a bad cache file is not a corrupt L2";
  executor_->Drain();  // the L2 reads refilled the two files
  ExpectChainReads(*s, c);
  EXPECT_EQ(l2_.blob_gets.load(), 2u);
  EXPECT_EQ(s->Stats().disk_cache_bytes, OnDisk().second);
  EXPECT_EQ(s->Stats().disk_cache_files, 3u);
}

TEST_F(StoreDiskCache, ReadsAreUsesSoTheLeastRecentlyReadBlobGoesFirst) {
  const uint64_t file = DiskCache::FileBytes(10000);
  auto s = Open(3 * file);
  const TestChain a = MakeChain(1, 10000, 21), b = MakeChain(1, 10000, 22),
                  c = MakeChain(1, 10000, 23), d = MakeChain(1, 10000, 24);
  for (const TestChain* t : {&a, &b, &c}) {
    Publish(*s, *t);
    executor_->Drain();
  }
  ExpectChainReads(*s, a);  // a is now more recently used than b and c
  Publish(*s, d);
  executor_->Drain();
  EXPECT_TRUE(fs::exists(FileOf(a.payloads[0])));
  EXPECT_FALSE(fs::exists(FileOf(b.payloads[0]))) << "the least recently used file goes";
  EXPECT_TRUE(fs::exists(FileOf(c.payloads[0])));
  EXPECT_TRUE(fs::exists(FileOf(d.payloads[0])));
  EXPECT_EQ(s->Stats().disk_cache_evictions, 1u);
}

TEST_F(StoreDiskCache, BudgetHoldsAfterAWriteAndReadLoadTenTimesLarger) {
  const uint64_t budget = 128 << 10;
  auto s = Open(budget);
  std::vector<TestChain> chains;
  uint64_t written = 0;
  for (uint64_t i = 0; i < 40; ++i) {
    chains.push_back(MakeChain(4, 8000 + 997 * (i % 7), 100 + i));
    Publish(*s, chains.back());
    for (const auto& p : chains.back().payloads) written += DiskCache::FileBytes(p.size());
    if (i % 4 == 3) ExpectChainReads(*s, chains[i / 2]);
    executor_->Drain();
    const auto [files, bytes] = OnDisk();
    ASSERT_LE(bytes, budget) << "after chain " << i;
    ASSERT_EQ(s->Stats().disk_cache_bytes, bytes);
    ASSERT_EQ(s->Stats().disk_cache_files, files);
  }
  EXPECT_GT(written, 10 * budget);
  EXPECT_GT(s->Stats().disk_cache_evictions, 0u);
  for (const TestChain& c : chains) ExpectChainReads(*s, c);  // all still readable (from L2)
}

TEST_F(StoreDiskCache, FillsWaitingToBeWrittenAreBoundedInBytes) {
  // Each waiting fill holds its payload in RAM; a disk slower than L2 must not let them pile up.
  const TestChain c = MakeChain(20, 1 << 20, 7);
  {
    auto s = Open(0);
    Publish(*s, c);
  }
  testing::ManualExecutor later;  // fills wait here until drained
  StoreOptions o = Options(64 << 20);
  o.executor = &later;
  auto s = Open(o);
  ASSERT_NE(s, nullptr);
  ExpectChainReads(*s, c);
  EXPECT_EQ(l2_.blob_gets.load(), 20u);
  // A 1-byte RAM cache gives the smallest queue, 16 MiB: 16 of the 20 one-MiB payloads.
  EXPECT_EQ(later.queued(), 16u);
  EXPECT_EQ(s->Stats().disk_cache_fills_skipped, 4u);
  later.Drain();
  EXPECT_EQ(s->Stats().disk_cache_fills, 16u);
  EXPECT_EQ(OnDisk().first, 16u);
  // The queue is free again: the skipped payloads are written after their next L2 read.
  ExpectChainReads(*s, c);
  EXPECT_EQ(later.queued(), 4u);
  later.Drain();
  EXPECT_EQ(s->Stats().disk_cache_fills, 20u);
}

TEST_F(StoreDiskCache, ThereIsNoDiskCacheInFrontOfALocalDirectoryL2) {
  {
    StoreOptions o = Options(64 << 20);
    o.object_store = nullptr;  // the store's own local-directory L2
    o.meta_store = nullptr;
    auto s = Open(o);
    ASSERT_NE(s, nullptr);
    Publish(*s, MakeChain(3, 1000, 4));
    executor_->Drain();
    EXPECT_EQ(s->Stats().disk_cache_budget_bytes, 0u);
    EXPECT_EQ(s->Stats().disk_cache_files, 0u);
  }
  EXPECT_FALSE(fs::exists(CacheDir()));
  {
    auto fs_l2 = NewFsObjectStore(dir_.path() + "/other-l2", PosixFileSystem());
    StoreOptions o = Options(64 << 20);
    o.data_dir = dir_.path() + "/data2";
    o.object_store = fs_l2.get();  // injected, but a local directory all the same
    auto s = Open(o);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->Stats().disk_cache_budget_bytes, 0u);
  }
  EXPECT_FALSE(fs::exists(dir_.path() + "/data2/cache"));
}

TEST_F(StoreDiskCache, ParallelGetsPutsAndEvictionServeOnlyRightBytesAndKeepTheBudget) {
  const uint64_t budget = 256 << 10;
  auto s = Open(budget);
  std::vector<TestChain> chains;
  for (uint64_t i = 0; i < 24; ++i) chains.push_back(MakeChain(3, 4000 + 613 * i, 200 + i));
  for (size_t i = 0; i < 8; ++i) Publish(*s, chains[i]);
  std::atomic<size_t> published{8};
  std::atomic<uint64_t> wrong{0}, reads{0};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {  // a writer publishing the rest
    for (size_t i = 8; i < chains.size(); ++i) {
      Publish(*s, chains[i]);
      published = i + 1;
    }
  });
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      uint64_t x = t + 1;
      for (int n = 0; n < 200; ++n) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const TestChain& c = chains[(x >> 33) % published.load()];
        auto got = s->GetBlocks("default", kFp, c.keys);
        if (!got.ok()) {
          wrong++;
          continue;
        }
        reads++;
        for (size_t i = 0; i < c.keys.size(); ++i) {
          if (got->payload(i).size() != c.payloads[i].size() ||
              std::memcmp(got->payload(i).data(), c.payloads[i].data(), c.payloads[i].size())) {
            wrong++;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  executor_->Drain();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_EQ(reads.load(), 600u);
  const StoreStats st = s->Stats();
  EXPECT_LE(st.disk_cache_bytes, budget);
  EXPECT_EQ(st.disk_cache_bytes, OnDisk().second);
  EXPECT_EQ(st.disk_cache_files, OnDisk().first);
  EXPECT_GT(st.disk_cache_hits, 0u);
  EXPECT_GT(st.disk_cache_evictions, 0u);
  EXPECT_EQ(st.disk_cache_dropped, 0u);
}

}  // namespace
}  // namespace wombatkv
