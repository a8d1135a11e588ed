// One conformance suite for every MetaStore implementation, plus RocksDB-only tests for what only
// a disk-backed store has (reopen, directory ownership, bad paths).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/hex.h"
#include "meta/meta_store.h"
#include "meta/rocksdb_test_hooks.h"

namespace wombatkv {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::Pair;

using Entries = std::vector<std::pair<std::string, std::string>>;

std::string Hex(std::string_view s) {
  return HexEncode({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
}

// A fresh directory per test (tests may run in parallel processes under ctest).
std::string TestDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "_" + info->name();
  for (char& c : name) {
    if (c == '/') c = '_';
  }
  std::string dir = ::testing::TempDir() + "/wombatkv_meta_" + name + "_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  return dir;
}

enum class Kind { kMem, kRocksDb };
void PrintTo(Kind kind, std::ostream* os) { *os << (kind == Kind::kMem ? "Mem" : "RocksDb"); }

class MetaStoreConformance : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    dir_ = TestDir();
    ASSERT_TRUE(Open().ok());
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  Status Open() {
    if (GetParam() == Kind::kMem) {
      store_ = NewMemMetaStore();
      return Status::Ok();
    }
    auto r = OpenRocksDbMetaStore(dir_);
    if (!r.ok()) return r.status();
    store_ = std::move(r).value();
    return Status::Ok();
  }

  // Replaces the stored bytes (value and CRC) under `key`, bypassing the framing.
  void PlantRaw(std::string_view key, std::string_view stored) {
    if (GetParam() == Kind::kMem) {
      WriteRawMemValueForTest(store_.get(), key, stored);
      return;
    }
    store_.reset();
    ASSERT_TRUE(WriteRawRocksDbValueForTest(dir_, key, stored).ok());
    ASSERT_TRUE(Open().ok());
  }

  std::string ReadRaw(std::string_view key) {
    if (GetParam() == Kind::kMem) {
      auto r = ReadRawMemValueForTest(store_.get(), key);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      return r.ok() ? *r : "";
    }
    store_.reset();
    auto r = ReadRawRocksDbValueForTest(dir_, key);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(Open().ok());
    return r.ok() ? *r : "";
  }

  Status Put(std::string key, std::string value, bool sync = false) {
    MetaWriteBatch b;
    b.Put(std::move(key), std::move(value));
    return store_->Write(b, sync);
  }

  Status Delete(std::string key) {
    MetaWriteBatch b;
    b.Delete(std::move(key));
    return store_->Write(b, false);
  }

  Entries ScanAll(std::string_view prefix) {
    Entries out;
    Status s = store_->Scan(prefix, [&](std::string_view k, std::string_view v) {
      out.emplace_back(k, v);
      return true;
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  std::vector<std::string> ScanKeys(std::string_view prefix) {
    std::vector<std::string> keys;
    for (auto& [k, v] : ScanAll(prefix)) keys.push_back(k);
    return keys;
  }

  std::string dir_;
  std::unique_ptr<MetaStore> store_;
};

TEST_P(MetaStoreConformance, GetReturnsWhatWriteStored) {
  ASSERT_TRUE(Put("k", "v").ok());
  auto r = store_->Get("k");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "v");
}

TEST_P(MetaStoreConformance, GetOfAbsentKeyIsNotFound) {
  ASSERT_TRUE(Put("a", "1").ok());
  auto r = store_->Get("b");
  EXPECT_EQ(r.status().code(), Code::kNotFound);
}

TEST_P(MetaStoreConformance, PutOverwritesTheEarlierValue) {
  ASSERT_TRUE(Put("k", "old").ok());
  ASSERT_TRUE(Put("k", "new").ok());
  EXPECT_EQ(*store_->Get("k"), "new");
}

TEST_P(MetaStoreConformance, DeleteRemovesOnlyThatKey) {
  ASSERT_TRUE(Put("a", "1").ok());
  ASSERT_TRUE(Put("b", "2").ok());
  ASSERT_TRUE(Delete("a").ok());
  EXPECT_EQ(store_->Get("a").status().code(), Code::kNotFound);
  EXPECT_EQ(*store_->Get("b"), "2");
}

TEST_P(MetaStoreConformance, DeleteOfAbsentKeyIsOk) { EXPECT_TRUE(Delete("nothing").ok()); }

TEST_P(MetaStoreConformance, EmptyBatchIsOk) {
  EXPECT_TRUE(store_->Write(MetaWriteBatch(), false).ok());
  EXPECT_TRUE(store_->Write(MetaWriteBatch(), true).ok());
}

TEST_P(MetaStoreConformance, SyncWriteIsReadable) {
  ASSERT_TRUE(Put("k", "v", /*sync=*/true).ok());
  EXPECT_EQ(*store_->Get("k"), "v");
}

TEST_P(MetaStoreConformance, BatchAppliesEveryOpInOrder) {
  ASSERT_TRUE(Put("gone", "x").ok());
  MetaWriteBatch b;
  b.Put("a", "1");
  b.Put("b", "2");
  b.Delete("gone");
  b.Put("twice", "first");
  b.Put("twice", "second");
  b.Put("put-then-deleted", "x");
  b.Delete("put-then-deleted");
  ASSERT_TRUE(store_->Write(b, false).ok());
  EXPECT_THAT(ScanAll(""), ElementsAre(Pair("a", "1"), Pair("b", "2"), Pair("twice", "second")));
}

TEST_P(MetaStoreConformance, BatchIsVisibleToReadersAllAtOnce) {
  constexpr int kKeys = 16;
  constexpr int kRounds = 300;
  auto write_round = [&](int round) {
    MetaWriteBatch b;
    for (int k = 0; k < kKeys; ++k) b.Put("key" + std::to_string(100 + k), std::to_string(round));
    return store_->Write(b, false);
  };
  ASSERT_TRUE(write_round(0).ok());
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int round = 1; round <= kRounds; ++round) EXPECT_TRUE(write_round(round).ok());
    done = true;
  });
  int scans = 0;
  int torn = 0;
  while (!done || scans == 0) {
    Entries e = ScanAll("key");
    ASSERT_EQ(e.size(), size_t{kKeys});
    for (const auto& [k, v] : e) torn += (v != e.front().second);
    ++scans;
  }
  writer.join();
  EXPECT_EQ(torn, 0) << "over " << scans << " scans";
  EXPECT_EQ(*store_->Get("key100"), std::to_string(kRounds));
}

TEST_P(MetaStoreConformance, ConcurrentWritersAllLand) {
  constexpr int kThreads = 4;
  constexpr int kBatches = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kBatches; ++i) {
        MetaWriteBatch b;
        b.Put("t" + std::to_string(t) + "/" + std::to_string(1000 + i), "v");
        EXPECT_TRUE(store_->Write(b, false).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ScanAll("").size(), size_t{kThreads * kBatches});
}

TEST_P(MetaStoreConformance, ScanVisitsKeysInUnsignedByteOrder) {
  for (std::string k : {std::string("\xff", 1), std::string("\x80", 1), std::string("\x7f", 1),
                        std::string("\0", 1), std::string("a"), std::string("a\0", 2)}) {
    ASSERT_TRUE(Put(k, "v").ok());
  }
  EXPECT_THAT(ScanKeys(""), ElementsAre(std::string("\0", 1), "a", std::string("a\0", 2), "\x7f",
                                        "\x80", "\xff"));
}

TEST_P(MetaStoreConformance, ScanWithEmptyPrefixVisitsEveryKey) {
  ASSERT_TRUE(Put("b", "2").ok());
  ASSERT_TRUE(Put("a", "1").ok());
  ASSERT_TRUE(Put("\xff\xff", "3").ok());
  EXPECT_THAT(ScanAll(""), ElementsAre(Pair("a", "1"), Pair("b", "2"), Pair("\xff\xff", "3")));
}

TEST_P(MetaStoreConformance, ScanOfAnEmptyStoreVisitsNothing) {
  EXPECT_THAT(ScanAll(""), IsEmpty());
  EXPECT_THAT(ScanAll("x"), IsEmpty());
}

TEST_P(MetaStoreConformance, ScanWithPrefixVisitsOnlyKeysStartingWithIt) {
  for (std::string k : {"n", "ns0", "ns1", "ns1/a", "ns1/b", "ns10/a", "ns2/a", "nt"}) {
    ASSERT_TRUE(Put(k, "v").ok());
  }
  // A prefix that is itself a prefix of other prefixes includes their keys...
  EXPECT_THAT(ScanKeys("ns1"), ElementsAre("ns1", "ns1/a", "ns1/b", "ns10/a"));
  // ...and a separator excludes them.
  EXPECT_THAT(ScanKeys("ns1/"), ElementsAre("ns1/a", "ns1/b"));
  EXPECT_THAT(ScanKeys("ns3"), IsEmpty());
  EXPECT_THAT(ScanKeys("nt"), ElementsAre("nt"));
}

TEST_P(MetaStoreConformance, ScanWithPrefixEndingInFfStopsAtItsBound) {
  const std::string p("a\xff", 2);
  for (std::string k : {std::string("a\xfe\xff", 3), p, p + std::string("\0", 1), p + "\xff",
                        p + "\xff\xff", std::string("b"), std::string("b\0", 2)}) {
    ASSERT_TRUE(Put(k, "v").ok());
  }
  EXPECT_THAT(ScanKeys(p), ElementsAre(p, p + std::string("\0", 1), p + "\xff", p + "\xff\xff"));
}

TEST_P(MetaStoreConformance, ScanWithAllFfPrefixReachesTheEndOfTheKeySpace) {
  for (std::string k : {"\xfe", "\xfe\xff", "\xff", "\xff\xff", "\xff\xff\x01", "\xff\xff\xff"}) {
    ASSERT_TRUE(Put(k, "v").ok());
  }
  EXPECT_THAT(ScanKeys("\xff\xff"), ElementsAre("\xff\xff", "\xff\xff\x01", "\xff\xff\xff"));
}

TEST_P(MetaStoreConformance, ScanStopsWhenTheCallbackReturnsFalse) {
  for (std::string k : {"p/1", "p/2", "p/3", "p/4"}) ASSERT_TRUE(Put(k, "v").ok());
  std::vector<std::string> seen;
  Status s = store_->Scan("p/", [&](std::string_view k, std::string_view) {
    seen.emplace_back(k);
    return seen.size() < 2;
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_THAT(seen, ElementsAre("p/1", "p/2"));
}

TEST_P(MetaStoreConformance, ScanCallbackMayCallBackIntoTheStore) {
  for (std::string k : {"p/1", "p/2"}) ASSERT_TRUE(Put(k, "v" + k).ok());
  int gets = 0;
  Status s = store_->Scan("p/", [&](std::string_view k, std::string_view v) {
    auto r = store_->Get(k);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(*r, v);
    ++gets;
    return true;
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(gets, 2);
}

TEST_P(MetaStoreConformance, DeletePrefixRemovesOnlyThatPrefix) {
  for (std::string k : {"ns1", "ns1/a", "ns1/b", "ns10/a", "ns2/a", "ns0"}) {
    ASSERT_TRUE(Put(k, "v").ok());
  }
  ASSERT_TRUE(store_->DeletePrefix("ns1/").ok());
  EXPECT_THAT(ScanKeys(""), ElementsAre("ns0", "ns1", "ns10/a", "ns2/a"));
  ASSERT_TRUE(store_->DeletePrefix("ns1").ok());
  EXPECT_THAT(ScanKeys(""), ElementsAre("ns0", "ns2/a"));
  EXPECT_EQ(store_->Get("ns10/a").status().code(), Code::kNotFound);
}

TEST_P(MetaStoreConformance, DeletePrefixWithNoMatchesIsOk) {
  ASSERT_TRUE(Put("a", "v").ok());
  EXPECT_TRUE(store_->DeletePrefix("b").ok());
  EXPECT_TRUE(store_->DeletePrefix("\xff").ok());
  EXPECT_THAT(ScanKeys(""), ElementsAre("a"));
}

TEST_P(MetaStoreConformance, DeletePrefixWithAllFfPrefixRemovesToTheEndOfTheKeySpace) {
  for (const std::string& k : std::vector<std::string>{"\xfe\xff", "\xff", "\xff\xff",
                                                       std::string("\xff\xff\x00\x01", 4),
                                                       "\xff\xff\xff"}) {
    ASSERT_TRUE(Put(k, "v").ok());
  }
  ASSERT_TRUE(store_->DeletePrefix("\xff\xff").ok());
  EXPECT_THAT(ScanKeys(""), ElementsAre("\xfe\xff", "\xff"));
}

TEST_P(MetaStoreConformance, DeletePrefixWithEmptyPrefixRemovesEverything) {
  for (std::string k : {"\x01", "a", "z", "\xff\xff"}) ASSERT_TRUE(Put(k, "v").ok());
  ASSERT_TRUE(store_->DeletePrefix("").ok());
  EXPECT_THAT(ScanKeys(""), IsEmpty());
  ASSERT_TRUE(Put("after", "v").ok());
  EXPECT_THAT(ScanKeys(""), ElementsAre("after"));
}

TEST_P(MetaStoreConformance, BinaryKeysAndValuesWithNulBytesRoundTrip) {
  const std::string key("\0k\0\xff\0", 5);
  const std::string value("\0\0v\0\xff\x01\0", 7);
  ASSERT_TRUE(Put(key, value).ok());
  ASSERT_TRUE(Put(std::string("\0k", 2), "shorter").ok());
  EXPECT_EQ(*store_->Get(key), value);
  EXPECT_THAT(ScanAll(std::string("\0k\0", 3)), ElementsAre(Pair(key, value)));
}

TEST_P(MetaStoreConformance, EmptyKeyAndEmptyValueRoundTrip) {
  ASSERT_TRUE(Put("", "").ok());
  ASSERT_TRUE(Put("k", "").ok());
  EXPECT_EQ(*store_->Get(""), "");
  EXPECT_EQ(*store_->Get("k"), "");
  EXPECT_THAT(ScanAll(""), ElementsAre(Pair("", ""), Pair("k", "")));
}

TEST_P(MetaStoreConformance, LargeValueRoundTrips) {
  std::string big(1 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 131) ^ (i >> 9));
  ASSERT_TRUE(Put("big", big).ok());
  EXPECT_EQ(*store_->Get("big"), big);
  Entries e = ScanAll("b");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].second, big);
}

TEST_P(MetaStoreConformance, StoredValueIsTheValueFollowedByFourCrcBytes) {
  ASSERT_TRUE(Put("k", "value").ok());
  const std::string raw = ReadRaw("k");
  ASSERT_EQ(raw.size(), 5u + 4u);
  EXPECT_EQ(raw.substr(0, 5), "value");
}

TEST_P(MetaStoreConformance, FlippedBitInAStoredValueIsCorruptionNamingTheKey) {
  const std::string key("bad\0key", 7);
  ASSERT_TRUE(Put("a-good", "fine").ok());
  ASSERT_TRUE(Put(key, "secret-value").ok());
  ASSERT_TRUE(Put("z-good", "fine").ok());
  std::string raw = ReadRaw(key);
  raw[2] ^= 0x10;
  PlantRaw(key, raw);

  auto r = store_->Get(key);
  EXPECT_EQ(r.status().code(), Code::kCorruption);
  EXPECT_THAT(r.status().message(), HasSubstr(Hex(key)));
  EXPECT_THAT(r.status().message(), Not(HasSubstr("secret")));

  std::vector<std::string> seen;
  Status s = store_->Scan("", [&](std::string_view k, std::string_view) {
    seen.emplace_back(k);
    return true;
  });
  EXPECT_EQ(s.code(), Code::kCorruption);
  EXPECT_THAT(s.message(), HasSubstr(Hex(key)));
  EXPECT_THAT(seen, ElementsAre("a-good"));  // stops at the bad value, never delivers it
  EXPECT_EQ(*store_->Get("z-good"), "fine");
}

TEST_P(MetaStoreConformance, ValueMovedUnderAnotherKeyIsCorruption) {
  ASSERT_TRUE(Put("key-a", "value-a").ok());
  ASSERT_TRUE(Put("key-b", "value-b").ok());
  PlantRaw("key-b", ReadRaw("key-a"));  // a valid (value, CRC) pair, but for another key
  auto r = store_->Get("key-b");
  EXPECT_EQ(r.status().code(), Code::kCorruption);
  EXPECT_THAT(r.status().message(), HasSubstr(Hex("key-b")));
  EXPECT_EQ(store_->Scan("key-b", [](auto, auto) { return true; }).code(), Code::kCorruption);
  EXPECT_EQ(*store_->Get("key-a"), "value-a");
}

TEST_P(MetaStoreConformance, StoredValueShorterThanItsCrcIsCorruption) {
  PlantRaw("short", "abc");
  EXPECT_EQ(store_->Get("short").status().code(), Code::kCorruption);
  PlantRaw("empty", "");
  EXPECT_EQ(store_->Get("empty").status().code(), Code::kCorruption);
}

TEST_P(MetaStoreConformance, OverwritingACorruptValueHealsIt) {
  ASSERT_TRUE(Put("k", "v").ok());
  PlantRaw("k", "garbage!");
  ASSERT_EQ(store_->Get("k").status().code(), Code::kCorruption);
  ASSERT_TRUE(Put("k", "fresh").ok());
  EXPECT_EQ(*store_->Get("k"), "fresh");
}

INSTANTIATE_TEST_SUITE_P(AllStores, MetaStoreConformance,
                         ::testing::Values(Kind::kMem, Kind::kRocksDb),
                         [](const ::testing::TestParamInfo<Kind>& info) {
                           return info.param == Kind::kMem ? "Mem" : "RocksDb";
                         });

// ---- RocksDB only: what a disk-backed store adds. ----

class RocksDbMetaStore : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = TestDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<MetaStore> MustOpen() {
    auto r = OpenRocksDbMetaStore(dir_);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : nullptr;
  }

  std::string dir_;
};

TEST_F(RocksDbMetaStore, ReopenAfterCleanCloseKeepsSyncedAndUnsyncedWrites) {
  {
    auto store = MustOpen();
    ASSERT_NE(store, nullptr);
    MetaWriteBatch synced;
    synced.Put("synced", "1");
    ASSERT_TRUE(store->Write(synced, /*sync=*/true).ok());
    MetaWriteBatch unsynced;
    unsynced.Put("unsynced", "2");
    unsynced.Put(std::string("bin\0\xff", 5), std::string("\0v", 2));
    ASSERT_TRUE(store->Write(unsynced, /*sync=*/false).ok());
  }
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(*store->Get("synced"), "1");
  EXPECT_EQ(*store->Get("unsynced"), "2");
  EXPECT_EQ(*store->Get(std::string("bin\0\xff", 5)), std::string("\0v", 2));
}

TEST_F(RocksDbMetaStore, ReopenKeepsDeletesAndDeletedPrefixes) {
  {
    auto store = MustOpen();
    ASSERT_NE(store, nullptr);
    MetaWriteBatch b;
    for (std::string k : {"keep", "gone", "p/1", "p/2", "q/1", "\xff\xff\x01"}) b.Put(k, "v");
    ASSERT_TRUE(store->Write(b, false).ok());
    MetaWriteBatch d;
    d.Delete("gone");
    ASSERT_TRUE(store->Write(d, false).ok());
    ASSERT_TRUE(store->DeletePrefix("p/").ok());
    ASSERT_TRUE(store->DeletePrefix("\xff").ok());
  }
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  std::vector<std::string> keys;
  ASSERT_TRUE(store
                  ->Scan("",
                         [&](std::string_view k, std::string_view) {
                           keys.emplace_back(k);
                           return true;
                         })
                  .ok());
  EXPECT_THAT(keys, ElementsAre("keep", "q/1"));
}

TEST_F(RocksDbMetaStore, ManyRecordsSurviveReopenInOrder) {
  constexpr int kRecords = 20000;
  {
    auto store = MustOpen();
    ASSERT_NE(store, nullptr);
    for (int i = 0; i < kRecords; i += 1000) {
      MetaWriteBatch b;
      for (int j = i; j < i + 1000; ++j) {
        b.Put("rec/" + std::to_string(100000 + j), std::string(100, static_cast<char>(j)));
      }
      ASSERT_TRUE(store->Write(b, false).ok());
    }
  }
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  int n = 0;
  bool in_order = true;
  Status s = store->Scan("rec/", [&](std::string_view k, std::string_view v) {
    in_order &= (k == "rec/" + std::to_string(100000 + n)) && v.size() == 100;
    ++n;
    return true;
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(n, kRecords);
  EXPECT_TRUE(in_order);
}

TEST_F(RocksDbMetaStore, SecondOpenWhileTheFirstIsOpenFailsNamingTheDirectory) {
  auto first = MustOpen();
  ASSERT_NE(first, nullptr);
  auto second = OpenRocksDbMetaStore(dir_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr("L1 directory " + dir_ + " is in use"));
  EXPECT_THAT(second.status().message(), HasSubstr("pid " + std::to_string(getpid())));
  // The failed open did not disturb the owner.
  MetaWriteBatch b;
  b.Put("k", "v");
  EXPECT_TRUE(first->Write(b, false).ok());
}

TEST_F(RocksDbMetaStore, DirectoryCanBeOpenedAgainOnceTheOwnerCloses) {
  auto first = MustOpen();
  ASSERT_NE(first, nullptr);
  first.reset();
  EXPECT_NE(MustOpen(), nullptr);
}

TEST_F(RocksDbMetaStore, DirectoryLockedByAnotherProcessIsFailedPreconditionNamingTheOwner) {
  ASSERT_TRUE(std::filesystem::create_directories(dir_));
  // Everything the child needs is prepared before fork(): it makes only async-signal-safe calls.
  const std::string lock_path = dir_ + "/LOCK";
  const std::string owner_path = dir_ + "/WOMBATKV_OWNER";
  const std::string owner_note = "the-other-process";
  int ready[2];
  int release[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(release), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int fd = open(lock_path.c_str(), O_RDWR | O_CREAT, 0644);
    struct flock fl = {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    char ok = (fd >= 0 && fcntl(fd, F_SETLK, &fl) == 0) ? '1' : '0';
    int note = open(owner_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (note >= 0) {
      (void)!write(note, owner_note.data(), owner_note.size());
      close(note);
    }
    (void)!write(ready[1], &ok, 1);
    (void)!read(release[0], &ok, 1);
    _exit(0);
  }
  char ok = 0;
  ASSERT_EQ(read(ready[0], &ok, 1), 1);
  auto r = OpenRocksDbMetaStore(dir_);
  char go = 'x';
  ASSERT_EQ(write(release[1], &go, 1), 1);
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  for (int fd : {ready[0], ready[1], release[0], release[1]}) close(fd);

  ASSERT_EQ(ok, '1') << "the child could not lock " << lock_path;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("L1 directory " + dir_ + " is in use"));
  EXPECT_THAT(r.status().message(), HasSubstr(owner_note));
  // Once the other process is gone, the directory opens.
  EXPECT_NE(MustOpen(), nullptr);
}

TEST_F(RocksDbMetaStore, OpenOfARegularFileIsFailedPreconditionNamingThePath) {
  { std::ofstream(dir_) << "not a directory"; }
  auto r = OpenRocksDbMetaStore(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr(dir_));
  EXPECT_THAT(r.status().message(), HasSubstr("not a directory"));
  std::filesystem::remove(dir_);
}

TEST_F(RocksDbMetaStore, OpenOfAPathBelowARegularFileIsFailedPreconditionNamingThePath) {
  ASSERT_TRUE(std::filesystem::create_directories(dir_));
  { std::ofstream(dir_ + "/file") << "x"; }
  const std::string below = dir_ + "/file/l1";
  auto r = OpenRocksDbMetaStore(below);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr(below));
}

TEST_F(RocksDbMetaStore, OpenOfAnEmptyPathIsInvalidArgument) {
  EXPECT_EQ(OpenRocksDbMetaStore("").status().code(), Code::kInvalidArgument);
}

TEST_F(RocksDbMetaStore, OpenCreatesMissingParentDirectories) {
  auto r = OpenRocksDbMetaStore(dir_ + "/a/b/l1");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
}

TEST_F(RocksDbMetaStore, CorruptionMessageSaysTheL1IsRebuiltFromL2) {
  {
    auto store = MustOpen();
    ASSERT_NE(store, nullptr);
    MetaWriteBatch b;
    b.Put("k", "v");
    ASSERT_TRUE(store->Write(b, false).ok());
  }
  ASSERT_TRUE(WriteRawRocksDbValueForTest(dir_, "k", "v\1\2\3\4").ok());
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  auto r = store->Get("k");
  EXPECT_EQ(r.status().code(), Code::kCorruption);
  EXPECT_THAT(r.status().message(), HasSubstr(dir_));
  EXPECT_THAT(r.status().message(), HasSubstr("rebuilt from L2"));
}

TEST_F(RocksDbMetaStore, TestHookCannotOpenADirectoryAStoreHolds) {
  auto store = MustOpen();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(WriteRawRocksDbValueForTest(dir_, "k", "v").code(), Code::kFailedPrecondition);
}

}  // namespace
}  // namespace wombatkv
