#include "cache/disk_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

namespace wombatkv {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string t = (fs::temp_directory_path() / "wombatkv-dcache-XXXXXX").string();
    path_ = mkdtemp(t.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Distinct bytes per (seed, size): a payload is named by its hash.
std::vector<uint8_t> Bytes(uint64_t seed, size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t x = ((seed + 1) * 0x9e3779b97f4a7c15ull) ^ (i * 0xbf58476d1ce4e5b9ull);
    v[i] = static_cast<uint8_t>((x >> 32) ^ (x >> 47));
  }
  return v;
}

struct Item {
  std::vector<uint8_t> bytes;
  ContentHash hash;
};
Item MakeItem(uint64_t seed, size_t n) {
  Item it{Bytes(seed, n), {}};
  it.hash = HashPayload(it.bytes);
  return it;
}

class DiskCacheTest : public ::testing::Test {
 protected:
  // A cache in this test's directory; warnings collected in warnings_.
  DiskCacheOptions Options(uint64_t budget, FileSystem* fs = PosixFileSystem()) {
    DiskCacheOptions o;
    o.dir = dir_.path() + "/cache";
    o.bytes_max = budget;
    o.fs = fs;
    o.warn = [this](const std::string& m) { warnings_.push_back(m); };
    return o;
  }
  std::unique_ptr<DiskCache> Open(uint64_t budget) {
    auto c = DiskCache::Open(Options(budget));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }
  std::string Path(std::string_view ns, const ContentHash& h) {
    return DiskCache::PathOf(dir_.path() + "/cache", ns, h);
  }
  // What the directory really holds: cache files and their sizes (temporaries included).
  std::pair<uint64_t, uint64_t> OnDisk() {
    uint64_t files = 0, bytes = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir_.path() + "/cache")) {
      if (!e.is_regular_file()) continue;
      files++;
      bytes += e.file_size();
    }
    return {files, bytes};
  }

  TempDir dir_;
  std::vector<std::string> warnings_;
};

TEST_F(DiskCacheTest, AFilledPayloadComesBackVerifiedFromItsShardFile) {
  auto c = Open(1 << 20);
  const Item a = MakeItem(1, 5000);
  EXPECT_FALSE(c->Lookup("default", a.hash));
  c->Fill("default", a.hash, a.bytes);
  auto got = c->Lookup("default", a.hash);
  ASSERT_TRUE(got);
  EXPECT_EQ(std::vector<uint8_t>(got->view().begin(), got->view().end()), a.bytes);
  EXPECT_TRUE(fs::exists(Path("default", a.hash)));
  EXPECT_EQ(fs::file_size(Path("default", a.hash)), DiskCache::FileBytes(5000));
  // Namespaces are separate keys (G8): the same bytes under another namespace are a miss.
  EXPECT_FALSE(c->Lookup("other", a.hash));
  const DiskCacheStats s = c->Stats();
  EXPECT_EQ(s.files, 1u);
  EXPECT_EQ(s.bytes, DiskCache::FileBytes(5000));
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.fills, 1u);
  EXPECT_EQ(c->NamespaceUsage("default").bytes, DiskCache::FileBytes(5000));
  EXPECT_EQ(c->NamespaceUsage("other").files, 0u);
}

TEST_F(DiskCacheTest, ReadsLandInTheBuffersItWasGiven) {
  DiskCacheOptions o = Options(1 << 20);
  size_t asked = 0;
  o.read_buffers = [&](size_t n) {
    ++asked;
    return Buffer::CopyOf(std::vector<uint8_t>(n, 0xee));  // stale bytes, all written over
  };
  auto c = DiskCache::Open(std::move(o));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const Item a = MakeItem(3, 70000);
  (*c)->Fill("ns", a.hash, a.bytes);
  auto got = (*c)->Lookup("ns", a.hash);
  ASSERT_TRUE(got);
  EXPECT_EQ(std::vector<uint8_t>(got->view().begin(), got->view().end()), a.bytes);
  EXPECT_EQ(asked, 1u) << "a read that bypassed the buffers faults in fresh memory";
}

TEST_F(DiskCacheTest, BudgetHoldsOnDiskAfterALoadTenTimesLarger) {
  const uint64_t budget = 64 << 10;
  auto c = Open(budget);
  uint64_t max_seen = 0;
  for (uint64_t i = 0; i < 200; ++i) {
    const Item it = MakeItem(i, 1000 + (i * 37) % 6000);
    c->Fill("ns", it.hash, it.bytes);
    if (i % 3 == 0) (void)c->Lookup("ns", MakeItem(i / 2, 1000 + (i / 2 * 37) % 6000).hash);
    const auto [files, bytes] = OnDisk();
    max_seen = std::max(max_seen, bytes);
    ASSERT_LE(bytes, budget) << "after fill " << i;
    ASSERT_EQ(c->Stats().bytes, bytes) << "accounting equals the files on disk";
    ASSERT_EQ(c->Stats().files, files);
  }
  EXPECT_GT(c->Stats().evictions, 0u);
  EXPECT_GT(max_seen, budget - 7000) << "the cache uses its budget";
}

TEST_F(DiskCacheTest, LeastRecentlyUsedGoesFirstAndAReadIsAUse) {
  const uint64_t file = DiskCache::FileBytes(1000);
  auto c = Open(3 * file);
  const Item a = MakeItem(1, 1000), b = MakeItem(2, 1000), d = MakeItem(3, 1000),
             e = MakeItem(4, 1000);
  c->Fill("ns", a.hash, a.bytes);
  c->Fill("ns", b.hash, b.bytes);
  c->Fill("ns", d.hash, d.bytes);
  ASSERT_TRUE(c->Lookup("ns", a.hash));  // a is now the most recently used; b the least
  c->Fill("ns", e.hash, e.bytes);
  EXPECT_TRUE(c->Contains("ns", a.hash));
  EXPECT_FALSE(c->Contains("ns", b.hash));
  EXPECT_FALSE(fs::exists(Path("ns", b.hash)));
  EXPECT_TRUE(c->Contains("ns", d.hash));
  EXPECT_TRUE(c->Contains("ns", e.hash));
  EXPECT_EQ(c->Stats().evictions, 1u);
}

TEST_F(DiskCacheTest, TornFlippedOrRenamedFilesAreDroppedNeverServed) {
  auto c = Open(1 << 20);
  const Item a = MakeItem(1, 4096), b = MakeItem(2, 4096), d = MakeItem(3, 4096),
             e = MakeItem(4, 4096);
  for (const Item* it : {&a, &b, &d, &e}) c->Fill("ns", it->hash, it->bytes);
  // Torn: the crash kept a prefix of the file.
  fs::resize_file(Path("ns", a.hash), 40 + 1000);
  // One flipped payload byte (the header is intact).
  {
    std::fstream f(Path("ns", b.hash), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40 + 2000);
    char ch;
    f.read(&ch, 1);
    ch = static_cast<char>(ch ^ 0x10);
    f.seekp(40 + 2000);
    f.write(&ch, 1);
  }
  // Another blob's valid file under this name.
  fs::copy_file(Path("ns", e.hash), Path("ns", d.hash), fs::copy_options::overwrite_existing);
  for (const Item* it : {&a, &b, &d}) {
    EXPECT_FALSE(c->Lookup("ns", it->hash));
    EXPECT_FALSE(fs::exists(Path("ns", it->hash))) << "a bad file is deleted";
    EXPECT_FALSE(c->Contains("ns", it->hash));
  }
  EXPECT_EQ(c->Stats().dropped, 3u);
  EXPECT_EQ(c->Stats().files, 1u);
  EXPECT_EQ(c->Stats().bytes, OnDisk().second);
  EXPECT_EQ(warnings_.size(), 3u);
  // Refilled from the caller's (L2's) bytes, it is served again.
  c->Fill("ns", b.hash, b.bytes);
  auto got = c->Lookup("ns", b.hash);
  ASSERT_TRUE(got);
  EXPECT_EQ(std::vector<uint8_t>(got->view().begin(), got->view().end()), b.bytes);
}

TEST_F(DiskCacheTest, DecodeRejectsEveryFlippedByte) {
  const Item a = MakeItem(9, 300);
  const auto header = EncodeDiskCacheHeader(a.hash, a.bytes);
  std::vector<uint8_t> file(header.begin(), header.end());
  file.insert(file.end(), a.bytes.begin(), a.bytes.end());
  ASSERT_TRUE(DecodeDiskCacheFile(Buffer::CopyOf(file), a.hash).ok());
  for (size_t i = 0; i < file.size(); ++i) {
    std::vector<uint8_t> bad = file;
    bad[i] ^= 0x01;
    EXPECT_FALSE(DecodeDiskCacheFile(Buffer::CopyOf(bad), a.hash).ok()) << "byte " << i;
  }
  file.pop_back();
  EXPECT_FALSE(DecodeDiskCacheFile(Buffer::CopyOf(file), a.hash).ok()) << "one byte short";
}

TEST_F(DiskCacheTest, ReopenIndexesExactlyWhatIsOnDiskAndCleansLeftovers) {
  std::vector<Item> items;
  {
    auto c = Open(1 << 20);
    for (uint64_t i = 0; i < 30; ++i) {
      items.push_back(MakeItem(i, 100 + i * 50));
      c->Fill(i % 2 ? "a" : "b", items.back().hash, items.back().bytes);
    }
  }
  // A crash left a temporary file and a file shorter than a header; and a stranger's file.
  const std::string shard = fs::path(Path("a", items[1].hash)).parent_path();
  std::ofstream(shard + "/.x.tmp.123.4~") << "partial";
  fs::create_directories(fs::path(Path("a", MakeItem(99, 10).hash)).parent_path());
  std::ofstream(Path("a", MakeItem(99, 10).hash)) << "short";
  ASSERT_TRUE(fs::exists(Path("a", MakeItem(99, 10).hash)));
  std::ofstream(dir_.path() + "/cache/README") << "not a namespace directory";
  auto c = Open(1 << 20);
  uint64_t bytes = 0;
  for (uint64_t i = 0; i < 30; ++i) bytes += DiskCache::FileBytes(100 + i * 50);
  const DiskCacheStats s = c->Stats();
  EXPECT_EQ(s.files, 30u);
  EXPECT_EQ(s.bytes, bytes);
  EXPECT_EQ(c->NamespaceUsage("a").files + c->NamespaceUsage("b").files, 30u);
  EXPECT_FALSE(fs::exists(shard + "/.x.tmp.123.4~"));
  EXPECT_FALSE(fs::exists(Path("a", MakeItem(99, 10).hash)));
  EXPECT_TRUE(fs::exists(dir_.path() + "/cache/README"));
  for (uint64_t i = 0; i < 30; ++i) EXPECT_TRUE(c->Lookup(i % 2 ? "a" : "b", items[i].hash));
  auto scan = DiskCache::Scan(PosixFileSystem(), dir_.path() + "/cache");
  ASSERT_TRUE(scan.ok());
  EXPECT_EQ((*scan)["a"].bytes + (*scan)["b"].bytes, bytes);
}

TEST_F(DiskCacheTest, ALoweredBudgetTrimsTheOldestFilesAtOpen) {
  std::vector<Item> items;
  {
    auto c = Open(1 << 20);
    for (uint64_t i = 0; i < 10; ++i) {
      items.push_back(MakeItem(i, 1000));
      c->Fill("ns", items.back().hash, items.back().bytes);
      // Distinct modification times, so the open knows the order of the fills.
      fs::last_write_time(Path("ns", items.back().hash),
                          fs::file_time_type::clock::now() - std::chrono::hours(10 - i));
    }
  }
  auto c = Open(4 * DiskCache::FileBytes(1000));
  EXPECT_EQ(c->Stats().files, 4u);
  EXPECT_EQ(OnDisk().second, 4 * DiskCache::FileBytes(1000));
  for (uint64_t i = 0; i < 10; ++i) EXPECT_EQ(c->Contains("ns", items[i].hash), i >= 6) << i;
}

// Lists each directory in reverse order: the order readdir gives is the file system's.
class ReversedListFs final : public FileSystemWrapper {
 public:
  ReversedListFs() : FileSystemWrapper(PosixFileSystem()) {}
  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    auto names = FileSystemWrapper::ListDir(path);
    if (names.ok()) std::reverse(names->begin(), names->end());
    return names;
  }
};

TEST_F(DiskCacheTest, FilesOfOneMtimeAreTrimmedInTheSameOrderWhateverTheDirectoryOrder) {
  // Files stamped alike (writes in a row) must reopen in one order, or a run that repeats the
  // same calls keeps different files (the simulator's digests drifted from run to run).
  std::vector<Item> items;
  for (uint64_t i = 0; i < 12; ++i) items.push_back(MakeItem(i, 1000));
  auto ns = [](uint64_t i) { return i % 2 ? "a" : "b"; };
  const auto stamp = fs::file_time_type::clock::now() - std::chrono::hours(1);
  // Fills a cache in `dir` with the twelve files, all of one mtime, then reopens it with a budget
  // of five files through `fs`: which files it keeps, as a string of 0/1.
  auto kept = [&](const std::string& dir, FileSystem* fs) {
    DiskCacheOptions o = Options(1 << 20);
    o.dir = dir;
    {
      auto c = std::move(DiskCache::Open(o)).value();
      for (uint64_t i = 0; i < 12; ++i) {
        c->Fill(ns(i), items[i].hash, items[i].bytes);
        fs::last_write_time(DiskCache::PathOf(dir, ns(i), items[i].hash), stamp);
      }
    }
    o.fs = fs;
    o.bytes_max = 5 * DiskCache::FileBytes(1000);
    auto c = std::move(DiskCache::Open(o)).value();
    std::string out;
    for (uint64_t i = 0; i < 12; ++i) out += c->Contains(ns(i), items[i].hash) ? '1' : '0';
    return out;
  };
  ReversedListFs reversed;
  const std::string forward = kept(dir_.path() + "/one", PosixFileSystem());
  EXPECT_EQ(std::count(forward.begin(), forward.end(), '1'), 5) << forward;
  EXPECT_EQ(kept(dir_.path() + "/two", &reversed), forward);
}

TEST_F(DiskCacheTest, ACacheDirectoryRemovedByHandIsMadeAgainAndItsFilesForgotten) {
  auto c = Open(1 << 20);
  const Item a = MakeItem(1, 100), b = MakeItem(2, 100);
  c->Fill("ns", a.hash, a.bytes);
  fs::remove_all(dir_.path() + "/cache/ns");
  EXPECT_FALSE(c->Lookup("ns", a.hash));
  EXPECT_EQ(c->Stats().files, 0u) << "a file gone from disk leaves the accounting at the read";
  c->Fill("ns", a.hash, a.bytes);
  c->Fill("ns", b.hash, b.bytes);
  EXPECT_TRUE(c->Lookup("ns", a.hash));
  EXPECT_TRUE(c->Lookup("ns", b.hash));
  EXPECT_EQ(c->Stats().fill_failures, 0u);
  EXPECT_EQ(c->Stats().bytes, OnDisk().second);
}

// Holds the unlink of one path until released, so a test can act while an eviction is midway.
class PausingDeleteFs final : public FileSystemWrapper {
 public:
  PausingDeleteFs() : FileSystemWrapper(PosixFileSystem()) {}
  Status DeleteFile(const std::string& path) override {
    if (path == paused_path) {
      std::unique_lock<std::mutex> l(mu);
      in_delete = true;
      cv.notify_all();
      cv.wait(l, [&] { return released; });
    }
    return FileSystemWrapper::DeleteFile(path);
  }
  std::string paused_path;
  std::mutex mu;
  std::condition_variable cv;
  bool in_delete = false, released = false;
};

TEST_F(DiskCacheTest, AKeyWhoseFileIsBeingEvictedIsNotFilledUntilTheUnlinkReturned) {
  PausingDeleteFs pausing;
  auto c = std::move(DiskCache::Open(Options(2 * DiskCache::FileBytes(1000), &pausing))).value();
  const Item a = MakeItem(1, 1000), b = MakeItem(2, 1000), d = MakeItem(3, 1000);
  c->Fill("ns", a.hash, a.bytes);
  c->Fill("ns", d.hash, d.bytes);
  pausing.paused_path = Path("ns", a.hash);
  std::thread evictor([&] { c->Fill("ns", b.hash, b.bytes); });  // evicts a, the LRU
  {
    std::unique_lock<std::mutex> l(pausing.mu);
    pausing.cv.wait(l, [&] { return pausing.in_delete; });
  }
  c->Fill("ns", a.hash, a.bytes);  // while a's unlink is under way: must not write a new a
  {
    std::lock_guard<std::mutex> l(pausing.mu);
    pausing.released = true;
    pausing.cv.notify_all();
  }
  evictor.join();
  for (const Item* it : {&a, &b, &d}) {
    EXPECT_EQ(c->Contains("ns", it->hash), fs::exists(Path("ns", it->hash)))
        << "the index and the disk disagree about " << it->hash.ToHex();
  }
  EXPECT_EQ(c->Stats().bytes, OnDisk().second);
}

// Fails every unlink, or every read, while told to; counts the warnings' thread context.
class FailingFs final : public FileSystemWrapper {
 public:
  FailingFs() : FileSystemWrapper(PosixFileSystem()) {}
  std::atomic<bool> fail_deletes{false}, fail_reads{false};
  Status DeleteFile(const std::string& path) override {
    if (fail_deletes) return Status::PermissionDenied("unlink " + path + ": Operation not permitted");
    return FileSystemWrapper::DeleteFile(path);
  }
  Result<std::shared_ptr<Buffer>> ReadFile(const std::string& path, uint64_t offset,
                                           uint64_t length, FileInfo* info) override {
    if (fail_reads) return Status::ResourceExhausted("open " + path + ": Too many open files");
    return FileSystemWrapper::ReadFile(path, offset, length, info);
  }
};

TEST_F(DiskCacheTest, AFailedUnlinkKeepsTheFileCountedAndATransientReadErrorKeepsTheFile) {
  FailingFs ffs;
  DiskCacheOptions o = Options(3 * DiskCache::FileBytes(1000), &ffs);
  DiskCache* self = nullptr;
  // The sink calls back into the cache: it must never run under the cache's lock.
  o.warn = [&](const std::string& m) {
    warnings_.push_back(m);
    if (self) (void)self->Stats();
  };
  auto c = std::move(DiskCache::Open(o)).value();
  self = c.get();
  const Item a = MakeItem(1, 1000), b = MakeItem(2, 1000), d = MakeItem(3, 1000),
             e = MakeItem(4, 1000);
  for (const Item* it : {&a, &b, &d}) c->Fill("ns", it->hash, it->bytes);

  ffs.fail_deletes = true;
  c->Fill("ns", e.hash, e.bytes);  // must evict a, whose unlink fails
  auto [files, bytes] = OnDisk();
  EXPECT_EQ(c->Stats().bytes, bytes) << "a file that could not be deleted is still counted";
  EXPECT_EQ(c->Stats().files, files);
  EXPECT_LE(bytes, o.bytes_max);
  EXPECT_GE(c->Stats().delete_failures, 1u);
  EXPECT_TRUE(c->Contains("ns", a.hash));

  ffs.fail_deletes = false;
  c->Fill("ns", e.hash, e.bytes);  // now the eviction succeeds
  std::tie(files, bytes) = OnDisk();
  EXPECT_EQ(c->Stats().bytes, bytes);
  EXPECT_TRUE(c->Contains("ns", e.hash));

  ffs.fail_reads = true;
  EXPECT_FALSE(c->Lookup("ns", e.hash)) << "an unreadable file is a miss";
  ffs.fail_reads = false;
  EXPECT_TRUE(fs::exists(Path("ns", e.hash))) << "a transient read error deleted a good file";
  auto back = c->Lookup("ns", e.hash);
  ASSERT_TRUE(back);
  EXPECT_EQ(0, std::memcmp(back->data, e.bytes.data(), e.bytes.size()));
  EXPECT_EQ(c->Stats().dropped, 0u);
}

TEST_F(DiskCacheTest, APayloadLargerThanTheBudgetIsNotCached) {
  auto c = Open(1000);
  const Item a = MakeItem(1, 2000);
  c->Fill("ns", a.hash, a.bytes);
  EXPECT_FALSE(c->Contains("ns", a.hash));
  EXPECT_EQ(c->Stats().fills_skipped, 1u);
  EXPECT_EQ(OnDisk().first, 0u);
}

// Few keys and room for about four files: the same key is evicted and filled again by different
// threads all the time, which is where an unlink could remove a newer file of its name (D3).
TEST_F(DiskCacheTest, ParallelFillsLookupsAndEvictionsKeepTheBudgetAndServeOnlyGoodBytes) {
  const uint64_t budget = 16 << 10;
  auto c = Open(budget);
  std::vector<Item> items;
  for (uint64_t i = 0; i < 12; ++i) items.push_back(MakeItem(i, 1024 + (i * 131) % 3072));
  std::atomic<uint64_t> wrong{0}, hits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      uint64_t x = t + 1;
      for (int n = 0; n < 3000; ++n) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const Item& it = items[(x >> 33) % items.size()];
        if ((x >> 20) % 3 == 0) {
          c->Fill("ns", it.hash, it.bytes);
        } else if (auto got = c->Lookup("ns", it.hash)) {
          hits++;
          if (got->size != it.bytes.size() ||
              std::memcmp(got->data, it.bytes.data(), got->size) != 0) {
            wrong++;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_GT(hits.load(), 0u);
  for (const Item& it : items) {
    if (c->Contains("ns", it.hash)) {
      EXPECT_TRUE(fs::exists(Path("ns", it.hash)));
    }
  }
  const DiskCacheStats s = c->Stats();
  EXPECT_LE(s.bytes, budget);
  EXPECT_EQ(s.deleting_bytes, 0u);
  EXPECT_EQ(s.bytes, OnDisk().second);
  EXPECT_EQ(s.files, OnDisk().first);
  EXPECT_GT(s.evictions, 0u);
  EXPECT_EQ(s.dropped, 0u);
}

}  // namespace
}  // namespace wombatkv
