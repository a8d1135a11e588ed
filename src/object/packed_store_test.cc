// Packed objects of the journaled FsObjectStore (fs_object_store_impl.h, invariant 6;
// packed_index.h) beyond the conformance suite: no file, what survives a reopen, other processes'
// view of them, keys moving between the packed and the file form, compaction of the journal
// files, and damage.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "object/crash_model_fs.h"
#include "object/journal.h"
#include "object/packed_snapshot.h"
#include "object/packed_view.h"
#include "object/pause_once.h"
#include "wombatkv/env.h"
#include "wombatkv/object_store.h"

namespace wombatkv {
namespace {

class PackedStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> seq{0};
    root_ = ::testing::TempDir() + "wombatkv_packed_" + std::to_string(::getpid()) + "_" +
            std::to_string(seq++);
    ASSERT_TRUE(fs_->DeleteTree(root_).ok());
  }
  void TearDown() override { EXPECT_TRUE(fs_->DeleteTree(root_).ok()); }

  std::unique_ptr<ObjectStore> Open(uint64_t journal_file_bytes = 64u << 20,
                                    uint64_t packed_max = 1024, size_t compact_scan_chunk = 4096) {
    FsJournalOptions o;
    o.journal_file_bytes = journal_file_bytes;
    o.packed_object_bytes_max = packed_max;
    o.compact_scan_chunk = compact_scan_chunk;
    o.warn = [this](const std::string& m) { warnings_.push_back(m); };
    auto s = OpenJournaledFsObjectStore(root_, fs_, o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  // Over `fs`: objects up to 1 KiB packed, up to 4 KiB journaled files, larger ones direct.
  std::unique_ptr<ObjectStore> OpenThreeForms(FileSystem* fs) {
    FsJournalOptions o;
    o.packed_object_bytes_max = 1024;
    o.journaled_object_bytes_max = 4096;
    auto s = OpenJournaledFsObjectStore(root_, fs, o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  static std::string Put(ObjectStore& s, std::string_view key, std::string_view v,
                         PutOptions o = {}) {
    auto r = s.Put(key, {AsBytes(v)}, o);
    EXPECT_TRUE(r.ok()) << key << ": " << r.status().ToString();
    return r.ok() ? *r : "";
  }
  static PutOptions Deferred() {
    PutOptions o;
    o.durable_on_return = false;
    return o;
  }
  static std::string Get(ObjectStore& s, std::string_view key) {
    auto r = s.Get(key);
    return r.ok() ? std::string(AsChars(r->bytes->view())) : "<" + r.status().ToString() + ">";
  }
  bool HasFile(const std::string& rel) { return fs_->Stat(root_ + "/" + rel).ok(); }
  size_t JournalFiles() {
    auto names = fs_->ListDir(root_);
    size_t n = 0;
    uint64_t lsn;
    for (const std::string& name : names.ok() ? *names : std::vector<std::string>()) {
      n += ParseJournalFileName(name, &lsn) ? 1 : 0;
    }
    return n;
  }
  static std::vector<std::string> Keys(ObjectStore& s, std::string_view prefix = "",
                                       std::string_view delimiter = "", size_t page = 1000) {
    std::vector<std::string> out;
    std::string token;
    do {
      auto r = s.List(prefix, delimiter, token, page);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (!r.ok()) break;
      std::vector<std::string> entries;
      for (const auto& o : r->objects) entries.push_back(o.key);
      for (const auto& c : r->common_prefixes) entries.push_back(c);
      std::sort(entries.begin(), entries.end());
      out.insert(out.end(), entries.begin(), entries.end());
      token = r->next_token;
    } while (!token.empty());
    return out;
  }

  FileSystem* fs_ = PosixFileSystem();
  std::string root_;
  std::vector<std::string> warnings_;  // of every store Open made
};

// A delete (a gc, an eviction) that empties the journal files a snapshot knows lets them be
// collected; the snapshot then names only dead entries and goes with the file after it, so the
// next open has nothing to warn about (it warned "set aside ... which is gone"). Lost journal
// files are still warned of: that snapshot was the witness.
// A packed record holds the object after a 16-byte prefix: a packing bound of a whole record's
// value let a put of its last 15 bytes reach a check that aborts the process (from a review,
// session 57). The bound is refused at open; the largest accepted one packs and reads back.
TEST_F(PackedStoreTest, APackingBoundLeavesRoomForTheRecordsPrefix) {
  FsJournalOptions o;
  o.journal_file_bytes = 64u << 20;
  o.packed_object_bytes_max = kJournalValueBytesMax;
  auto refused = OpenJournaledFsObjectStore(root_, fs_, o);
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument) << refused.status().ToString();
  auto s = Open(64u << 20, kJournalValueBytesMax - kPackedValuePrefixBytes);
  ASSERT_NE(s, nullptr);
  const std::string largest(kJournalValueBytesMax - kPackedValuePrefixBytes, 'x');
  Put(*s, "k", largest);
  EXPECT_EQ(Get(*s, "k"), largest);
}

TEST_F(PackedStoreTest, CollectingTheFilesASnapshotKnowsTakesItAlongWithoutAWarning) {
  const std::string snapshot = std::string(kPackedSnapshotName);
  auto s = Open();
  Put(*s, "b/x", "doomed");
  s.reset();
  s = Open();  // opened on a snapshot through the first file
  ASSERT_TRUE(HasFile(snapshot));
  ASSERT_TRUE(s->Delete("b/x").ok());
  s.reset();  // the close collects both files: nothing live is left in them
  EXPECT_FALSE(HasFile(snapshot));
  s = Open();
  EXPECT_EQ(Get(*s, "b/x").substr(0, 11), "<NOT_FOUND:");
  EXPECT_TRUE(warnings_.empty()) << warnings_.front();
  // Files lost by hand under a snapshot that names their objects are damage, still said so.
  Put(*s, "b/y", "kept");
  s.reset();
  ASSERT_TRUE(fs_->DeleteFile(root_ + "/" + snapshot).ok());
  s = Open();  // none usable: it writes one, naming b/y
  s.reset();
  auto names = fs_->ListDir(root_);
  ASSERT_TRUE(names.ok());
  uint64_t lsn = 0;
  for (const std::string& name : *names) {
    if (ParseJournalFileName(name, &lsn)) {
      ASSERT_TRUE(fs_->DeleteFile(root_ + "/" + name).ok());
    }
  }
  ASSERT_TRUE(HasFile(snapshot));
  s = Open();
  ASSERT_FALSE(warnings_.empty());
  EXPECT_NE(warnings_.back().find("which is gone"), std::string::npos) << warnings_.back();
}

TEST_F(PackedStoreTest, ASmallObjectHasNoFileAndKeepsItsBytesAndEtagAcrossAReopen) {
  auto s = Open();
  const std::string etag = Put(*s, "h/a", "small");
  const std::string large(4096, 'L');
  Put(*s, "b/large", large);
  EXPECT_FALSE(HasFile("h/a")) << "packed: its journal record is its only copy";
  EXPECT_TRUE(HasFile("b/large"));
  EXPECT_EQ(etag.substr(0, 1), "p");
  s.reset();
  s = Open();
  EXPECT_EQ(Get(*s, "h/a"), "small");
  EXPECT_EQ(Get(*s, "b/large"), large);
  auto head = s->Head("h/a");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->etag, etag) << "the version is unchanged by a reopen";
  EXPECT_EQ(head->size, 5u);
  EXPECT_GT(head->modified_us, 0u);
  // A CAS holding the ETag from before the reopen still wins, once.
  EXPECT_TRUE(s->Put("h/a", {AsBytes("next")}, PutOptions{PutMode::kIfMatch, etag}).ok());
  EXPECT_TRUE(s->Put("h/a", {AsBytes("again")}, PutOptions{PutMode::kIfMatch, etag})
                  .status()
                  .IsConflict());
  EXPECT_EQ(Keys(*s), (std::vector<std::string>{"b/large", "h/a"}));
}

// The next journal file made ahead (Journal::SetNextFileExecutor) on a real store: garbage left
// under its name is harmless, the store crosses many files with every object intact and no
// zero-fill on a round's path, a close leaves no such file, and a store that wrote little makes
// none.
TEST_F(PackedStoreTest, TheNextJournalFileIsMadeAheadAndLeftNoWhere) {
  const std::string next = std::string(kJournalNextFileName);
  ASSERT_TRUE(fs_->CreateDirs(root_).ok());
  ASSERT_TRUE(
      fs_->WriteFileAtomic(root_ + "/" + next, {AsBytes(std::string(999, 'g'))}, true).ok());
  auto s = Open(/*journal_file_bytes=*/64 << 10);
  EXPECT_FALSE(HasFile(next)) << "a crash's leftover goes at open";
  const std::string value(900, 'v');  // packed
  const uint64_t zero_fills_at_open = s->Counters().journal.preallocations;
  for (int i = 0; i < 400; ++i) Put(*s, "k/" + std::to_string(i), value);  // ~6 files
  const uint64_t zero_fills = s->Counters().journal.preallocations - zero_fills_at_open;
  // 400 records of over 900 bytes began at least 5 files; the checkpoint thread may lag behind
  // for some, not for all (each is asked for half a file, ~35 synced puts, ahead).
  EXPECT_LT(zero_fills, 5u) << "files begun with a zero-fill on the round's path";
  s.reset();
  EXPECT_FALSE(HasFile(next)) << "a closed store leaves no file made ahead";
  s = Open(/*journal_file_bytes=*/64 << 10);
  for (int i = 0; i < 400; ++i) ASSERT_EQ(Get(*s, "k/" + std::to_string(i)), value) << i;
  s.reset();
  EXPECT_FALSE(HasFile(next)) << "nor does one that wrote too little to ask for one";
}

TEST_F(PackedStoreTest, ItsCountersShowTheJournalsCommits) {
  auto s = Open();
  const ObjectStoreCounters before = s->Counters();
  EXPECT_EQ(before.journal.preallocations, 1u) << "the journal file's first zeros";
  EXPECT_EQ(before.attempts, 0u) << "no HTTP requests: a local directory";
  Put(*s, "h/a", "one");
  Put(*s, "h/b", "two");
  const ObjectStoreCounters after = s->Counters();
  EXPECT_GE(after.journal.syncs, before.journal.syncs + 1);
  EXPECT_GE(after.journal.records_synced, before.journal.records_synced + 2)
      << "each durable put is a record some sync made durable";
  EXPECT_EQ(NewFsObjectStore(root_, fs_)->Counters().journal.syncs, 0u)
      << "a store without the journal has no commits to count";
}

TEST_F(PackedStoreTest, ReadsOfEveryFormLandInTheBuffersItWasGiven) {
  FsJournalOptions o;
  o.packed_object_bytes_max = 1024;
  o.journaled_object_bytes_max = 4096;
  size_t asked = 0;
  o.read_buffers = [&](size_t n) {
    ++asked;
    return Buffer::CopyOf(AsBytes(std::string(n, '#')));  // stale bytes, all written over
  };
  auto opened = OpenJournaledFsObjectStore(root_, fs_, o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  ObjectStore& s = **opened;
  const std::string journaled(2048, 'j'), direct(8192, 'd');
  Put(s, "a/packed", "small");
  Put(s, "a/journaled", journaled);
  Put(s, "a/direct", direct);
  EXPECT_EQ(Get(s, "a/packed"), "small");
  EXPECT_EQ(Get(s, "a/journaled"), journaled);
  EXPECT_EQ(Get(s, "a/direct"), direct);
  EXPECT_EQ(asked, 3u) << "a read that bypassed the buffers faults in fresh memory";
}

TEST_F(PackedStoreTest, AKeyMovesBetweenThePackedAndTheFileFormLeavingNoStaleCopy) {
  auto s = Open();
  const std::string big(2000, 'B');
  Put(*s, "k/x", "packed 1");
  Put(*s, "k/x", big);  // journaled file
  EXPECT_TRUE(HasFile("k/x"));
  EXPECT_EQ(Get(*s, "k/x"), big);
  Put(*s, "k/x", "packed 2");
  EXPECT_FALSE(HasFile("k/x")) << "the file of the version before is removed";
  EXPECT_EQ(Get(*s, "k/x"), "packed 2");
  const std::string huge(2u << 20, 'H');  // past the journal: a direct file
  Put(*s, "k/x", huge);
  EXPECT_EQ(Get(*s, "k/x"), huge);
  Put(*s, "k/x", "packed 3");
  ASSERT_TRUE(s->Delete("k/y").ok());
  s.reset();
  s = Open();
  EXPECT_EQ(Get(*s, "k/x"), "packed 3");
  EXPECT_FALSE(HasFile("k/x"));
  ASSERT_TRUE(s->Delete("k/x").ok());
  EXPECT_TRUE(s->Get("k/x").status().IsNotFound());
  s.reset();
  s = Open();
  EXPECT_TRUE(s->Get("k/x").status().IsNotFound()) << "a delete of a packed object is durable";
}

TEST_F(PackedStoreTest, AnotherProcessReadsPackedObjectsButWritesNone) {
  auto owner = Open();
  Put(*owner, "kv/h/a", "head");
  Put(*owner, "kv/b/1", std::string(3000, 'f'));  // a file
  // The view sees what the owner acknowledged, also after it changes.
  auto plain = NewFsObjectStore(root_, fs_);
  EXPECT_EQ(Get(*plain, "kv/h/a"), "head");
  Put(*owner, "kv/h/a", "head 2");
  Put(*owner, "kv/h/b", "b");
  EXPECT_EQ(Get(*plain, "kv/h/a"), "head 2");
  auto head = plain->Head("kv/h/b");
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(head->etag, owner->Head("kv/h/b")->etag);
  EXPECT_EQ(Keys(*plain, "kv/"), (std::vector<std::string>{"kv/b/1", "kv/h/a", "kv/h/b"}));
  EXPECT_EQ(Keys(*plain, "kv/", "/"), (std::vector<std::string>{"kv/b/", "kv/h/"}));
  // Deleting a packed object from outside would leave the owner's index naming it: refused.
  Status del = plain->Delete("kv/h/a");
  EXPECT_EQ(del.code(), Code::kFailedPrecondition) << del.ToString();
  EXPECT_EQ(Get(*owner, "kv/h/a"), "head 2");
  // A file object may still go (orphan GC beside the owner).
  EXPECT_TRUE(plain->Delete("kv/b/1").ok());
  EXPECT_EQ(plain->Put("kv/h/c", {AsBytes("c")}, {}).status().code(), Code::kFailedPrecondition);
  // Closed, the journal (with the packed objects) stays: a plain store still reads them, and
  // still writes nothing the journal would override.
  owner.reset();
  auto after = NewFsObjectStore(root_, fs_);
  EXPECT_EQ(Get(*after, "kv/h/b"), "b");
  EXPECT_EQ(after->Put("kv/h/a", {AsBytes("x")}, {}).status().code(),
            Code::kFailedPrecondition);
}

TEST_F(PackedStoreTest, AnotherProcessSeesEachPutAsSoonAsItIsAcknowledged) {
  // Puts in quick succession land in one clock tick of the file's mtime: the view must read the
  // newest journal file again whatever its mtime says.
  auto owner = Open(/*journal_file_bytes=*/16 << 10);
  auto plain = NewFsObjectStore(root_, fs_);
  for (int i = 0; i < 500; ++i) {
    const std::string key = "h/" + std::to_string(i);
    Put(*owner, key, "v" + std::to_string(i));
    ASSERT_EQ(Get(*plain, key), "v" + std::to_string(i)) << "put " << i;
  }
}

TEST_F(PackedStoreTest, CompactionKeepsEveryLiveObjectAndBoundsTheJournalFiles) {
  // 4 KiB journal files: ~50 records each. 4000 writes over 100 keys, some deleted, and every
  // 100th write a key written once and never again: its record pins its journal file until
  // compaction copies it forward. A compaction gathers a file's live records a few index entries
  // per hold of the name lock (7 here, 4096 by default): the walk must miss none.
  auto s = Open(/*journal_file_bytes=*/4096, /*packed_max=*/1024, /*compact_scan_chunk=*/7);
  std::map<std::string, std::string> want;
  for (int i = 0; i < 4000; ++i) {
    const std::string key =
        i % 100 == 50 ? "once/" + std::to_string(i) : "k/" + std::to_string(i % 100);
    if (i % 7 == 3) {
      ASSERT_TRUE(s->Delete(key).ok());
      want.erase(key);
    } else {
      const std::string v = "v" + std::to_string(i) + std::string(i % 50, '.');
      Put(*s, key, v, PutOptions{PutMode::kOverwrite, {}, /*durable_on_return=*/i % 3 == 0});
      want[key] = v;
    }
  }
  Put(*s, "k/last", "x");
  want["k/last"] = "x";
  for (const auto& [key, v] : want) EXPECT_EQ(Get(*s, key), v) << key;
  // ~140 live records of <= 100 bytes: kept files hold at most 2 x that + 2 files of slack,
  // plus the current file and those not checkpointed yet. Without compaction: 40 pinned files.
  EXPECT_LE(JournalFiles(), 16u);
  s.reset();
  EXPECT_LE(JournalFiles(), 16u);
  s = Open(4096);
  for (const auto& [key, v] : want) EXPECT_EQ(Get(*s, key), v) << key;
  EXPECT_EQ(Keys(*s).size(), want.size());
}

// Deletes journal files as they retire (through the store's compaction) while a read is about to
// open one: the read must look again, not answer NotFound.
class CompactingFs final : public FileSystemWrapper {
 public:
  explicit CompactingFs(FileSystem* target) : FileSystemWrapper(target) {}
  Result<std::shared_ptr<Buffer>> ReadFile(const std::string& path, uint64_t offset,
                                           uint64_t length, FileInfo* info) override {
    if (path.find(kJournalFilePrefix) != std::string::npos && armed_.exchange(false)) {
      before_read_(path);
    }
    return FileSystemWrapper::ReadFile(path, offset, length, info);
  }
  void ArmOnce(std::function<void(const std::string&)> fn) {
    before_read_ = std::move(fn);
    armed_ = true;
  }

 private:
  std::atomic<bool> armed_{false};
  std::function<void(const std::string&)> before_read_;
};

TEST_F(PackedStoreTest, AReadWhoseJournalFileIsCompactedAwayMeanwhileLooksAgain) {
  CompactingFs fs(fs_);
  FsJournalOptions o;
  o.journal_file_bytes = 1024;
  auto opened = OpenJournaledFsObjectStore(root_, &fs, o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  ObjectStore& s = **opened;
  Put(s, "stable/a", "A");
  bool gone = false;
  // The read has looked up where "stable/a" is; before it opens that file, churn until
  // compaction has copied the record forward and deleted the file.
  fs.ArmOnce([&](const std::string& path) {
    for (int i = 0; i < 20000 && !gone; ++i) {
      Put(s, "churn/" + std::to_string(i % 10), std::string(200, 'c'));
      gone = !fs_->Stat(path).ok();
    }
  });
  EXPECT_EQ(Get(s, "stable/a"), "A");
  EXPECT_TRUE(gone) << "the journal file was never compacted away: the test proved nothing";
}

// Runs a hook after a listing (once), and can report every mtime as 0 (one coarse tick).
class HookFs : public FileSystemWrapper {
 public:
  using FileSystemWrapper::FileSystemWrapper;
  std::function<void()> after_list;
  bool zero_mtime = false;
  Result<std::vector<std::string>> ListDir(const std::string& p) override {
    auto r = FileSystemWrapper::ListDir(p);
    if (after_list) {
      auto f = std::move(after_list);
      after_list = nullptr;
      f();
    }
    return r;
  }
  Result<FileInfo> Stat(const std::string& p) override {
    auto r = FileSystemWrapper::Stat(p);
    if (r.ok() && zero_mtime) r->mtime_ns = 0;  // a coarse-timestamp file system, one tick
    return r;
  }
};


// Holds the first directory sync after `armed` is set (PauseOnce): a direct put waits there
// with its file in place and its journal record not yet appended.
class DirSyncGateFs final : public FileSystemWrapper {
 public:
  using FileSystemWrapper::FileSystemWrapper;
  std::atomic<bool> armed{false};
  PauseOnce pause;
  Status SyncDir(const std::string& dir) override {
    if (armed.exchange(false)) pause.Hold();
    return FileSystemWrapper::SyncDir(dir);
  }
};

// A blob deleted (durably, not yet checkpointed) and put again directly: until the put's record
// is appended, replay would still delete the file, so no reader may answer from it — a Head that
// let a publish reuse it would name a blob a crash takes away. (The reader waits first for the
// reservation (AwaitJournaled), then for the name's directory sync; the gate here holds the
// latter, so this checks that the two together cover the put. The short window between the
// sync and the record, which only the former covers, has no hook to hold it open.)
TEST_F(PackedStoreTest, AHeadDuringADirectPutOfADeletedBlobWaitsForThePut) {
  DirSyncGateFs fs(fs_);
  auto s = OpenThreeForms(&fs);
  const std::string big(8192, 'B');  // over the journaled bound: a direct put
  Put(*s, "blob", big);
  ASSERT_TRUE(s->Delete("blob").ok());
  fs.armed = true;
  std::thread put([&] { Put(*s, "blob", big, Deferred()); });
  fs.pause.AwaitHeld();
  std::atomic<bool> head_done{false};
  std::thread head([&] {
    auto h = s->Head("blob");
    EXPECT_TRUE(h.ok()) << h.status().ToString();
    head_done = true;
  });
  RealClock()->SleepMicros(100'000);  // time for a Head that does not wait to answer
  EXPECT_FALSE(head_done.load()) << "Head answered while the put was not yet recorded";
  fs.pause.Release();
  put.join();
  head.join();
  EXPECT_TRUE(head_done.load());
}

TEST_F(PackedStoreTest, BoundsBeyondWhatAJournalRecordCarriesAreRefusedAtOpen) {
  FsJournalOptions o;
  o.journaled_object_bytes_max = 32u << 20;  // a put of 20 MiB would not fit one record
  auto s = OpenJournaledFsObjectStore(root_, fs_, o);
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument) << s.status().ToString();
  EXPECT_NE(s.status().message().find("journaled_object_bytes_max"), std::string::npos);
  o.journaled_object_bytes_max = 16u << 20;
  EXPECT_TRUE(OpenJournaledFsObjectStore(root_, fs_, o).ok());
}

TEST_F(PackedStoreTest, ALargeIfAbsentPutOverAPackedObjectConflicts) {
  auto s = Open();
  Put(*s, "k", "small");
  PutOptions o;
  o.mode = PutMode::kIfAbsent;
  const std::string huge(2u << 20, 'H');  // past the journal: a direct put
  auto r = s->Put("k", {AsBytes(huge)}, o);
  EXPECT_TRUE(r.status().IsConflict()) << (r.ok() ? "succeeded, etag " + *r : r.status().ToString());
  EXPECT_EQ(Get(*s, "k").size(), 5u) << "the packed version was replaced by the if-absent put";
}

TEST_F(PackedStoreTest, ALargeIfMatchPutWithThePackedEtagWins) {
  auto s = Open();
  const std::string etag = Put(*s, "k", "small");
  const std::string huge(2u << 20, 'H');
  auto r = s->Put("k", {AsBytes(huge)}, PutOptions{PutMode::kIfMatch, etag});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
}

TEST_F(PackedStoreTest, AFileVersionWhereADirectoryStandsIsRefusedNotFatal) {
  auto s = Open();
  Put(*s, "other", "still here");
  Put(*s, "a", "small");  // packed: no file at "a"
  // S3 semantics: a packed "a" and keys under "a/" may coexist.
  ASSERT_TRUE(s->Put("a/b", {AsBytes(std::string(2000, 'F'))}, {}).ok());  // directory "a"
  // A file version of "a" has no room: refused before anything is decided.
  auto r2 = s->Put("a", {AsBytes(std::string(2000, 'M'))}, {});
  EXPECT_EQ(r2.status().code(), Code::kFailedPrecondition) << r2.status().ToString();
  EXPECT_EQ(Get(*s, "other"), "still here") << "one put must not break the whole store";
  EXPECT_EQ(Get(*s, "a"), "small");
  s.reset();
  s = Open();
  EXPECT_EQ(Get(*s, "a"), "small") << "the acknowledged version survives a reopen";
}

// Counts the stats of each path.
class StatCounter final : public FileSystemWrapper {
 public:
  using FileSystemWrapper::FileSystemWrapper;
  Result<FileInfo> Stat(const std::string& path) override {
    {
      std::lock_guard<std::mutex> g(mu_);
      ++stats_[path];
    }
    return FileSystemWrapper::Stat(path);
  }
  int stats(const std::string& path) {
    std::lock_guard<std::mutex> g(mu_);
    return stats_[path];
  }

 private:
  std::mutex mu_;
  std::map<std::string, int> stats_;
};

// J6 (fs_object_store_impl.h): a path found empty is not statted again — a new blob's Head, its
// if-absent put, a head's later puts — until a put that may create a file or a directory there;
// and what a put does with the remembered path is what it did with a stat.
TEST_F(PackedStoreTest, APathFoundEmptyIsNotStattedAgainUntilAFileFormPutMayFillIt) {
  StatCounter fs(fs_);
  auto opened = OpenThreeForms(&fs);
  ASSERT_NE(opened, nullptr);
  ObjectStore& s = *opened;
  const std::string blob = root_ + "/ns/blob";
  EXPECT_EQ(s.Head("ns/blob").status().code(), Code::kNotFound);
  EXPECT_EQ(fs.stats(blob), 1);
  PutOptions if_absent{PutMode::kIfAbsent, {}};
  Put(s, "ns/blob", "bytes", if_absent);
  ASSERT_TRUE(s.Head("ns/blob").ok());
  Put(s, "ns/blob", "newer");
  EXPECT_EQ(Get(s, "ns/blob"), "newer");
  EXPECT_EQ(fs.stats(blob), 1) << "the path was known empty: no file beside the packed one";

  // A journaled file version below a remembered path makes it a directory: a packed put there
  // is refused as it was before (S3 semantics aside: docs/layout.md), not let through.
  EXPECT_EQ(s.Head("d").status().code(), Code::kNotFound);
  Put(s, "d/e", std::string(2000, 'J'));
  auto into_dir = s.Put("d", {AsBytes(std::string("small"))}, {});
  EXPECT_EQ(into_dir.status().code(), Code::kFailedPrecondition) << into_dir.status().ToString();

  // Remembered empty, then given a file version (journaled, then direct): found.
  for (size_t bytes : {2000u, 10000u}) {
    const std::string key = "f" + std::to_string(bytes);
    EXPECT_EQ(s.Head(key).status().code(), Code::kNotFound);
    Put(s, key, std::string(bytes, 'F'));
    auto head = s.Head(key);
    ASSERT_TRUE(head.ok()) << key << ": " << head.status().ToString();
    EXPECT_EQ(head->size, bytes);
    auto again = s.Put(key, {AsBytes(std::string("x"))}, if_absent);
    EXPECT_EQ(again.status().code(), Code::kConflict) << key << ": " << again.status().ToString();
  }
}

// J6 for a directory: a put that finds a new key's path empty looks once at its parent, and
// when no directory is there (every object under it packed), later new keys beside it need no
// stat — until a file-form put under it, which makes the directory.
TEST_F(PackedStoreTest, ADirectoryFoundEmptySparesTheStatsOfNewKeysBesideIt) {
  StatCounter fs(fs_);
  auto opened = OpenThreeForms(&fs);
  ASSERT_NE(opened, nullptr);
  ObjectStore& s = *opened;
  PutOptions if_absent{PutMode::kIfAbsent, {}};
  Put(s, "ns/b0", "bytes", if_absent);
  EXPECT_EQ(fs.stats(root_ + "/ns/b0"), 1);
  EXPECT_EQ(fs.stats(root_ + "/ns"), 1) << "its directory, looked at once";
  for (int i = 1; i <= 3; ++i) Put(s, "ns/b" + std::to_string(i), "bytes", if_absent);
  EXPECT_EQ(fs.stats(root_ + "/ns/b1") + fs.stats(root_ + "/ns/b3"), 0)
      << "beside a directory known not to be there, a new key is known empty";
  EXPECT_EQ(fs.stats(root_ + "/ns"), 1);

  // A file version under it makes the directory: what is beside it is looked at again, and a
  // file put there is found.
  Put(s, "ns/big", std::string(2000, 'B'));
  ASSERT_TRUE(fs_->Stat(root_ + "/ns").ok()) << "a journaled put of 2000 bytes has a file";
  auto again = s.Put("ns/big", {AsBytes(std::string("x"))}, if_absent);
  EXPECT_EQ(again.status().code(), Code::kConflict) << again.status().ToString();
  Put(s, "ns/b4", "bytes", if_absent);
  EXPECT_EQ(fs.stats(root_ + "/ns/b4"), 1) << "the directory is there now: a stat per path";
  for (int i = 0; i <= 4; ++i) {
    EXPECT_EQ(Get(s, "ns/b" + std::to_string(i)), "bytes");
  }

  // Where the directory is there from the start, each new key is looked at, its directory once.
  Put(s, "d2/big", std::string(2000, 'B'));
  Put(s, "d2/s1", "small", if_absent);
  Put(s, "d2/s2", "small", if_absent);
  EXPECT_EQ(fs.stats(root_ + "/d2/s1") + fs.stats(root_ + "/d2/s2"), 2);
  EXPECT_LE(fs.stats(root_ + "/d2"), 1);
}

// Runs a hook (once) around the stat of one path: before it, or after it with its result.
class StatHookFs final : public FileSystemWrapper {
 public:
  using FileSystemWrapper::FileSystemWrapper;
  void Arm(std::string path, std::function<void()> before, std::function<void()> after) {
    path_ = std::move(path);
    before_ = std::move(before);
    after_ = std::move(after);
    armed_ = true;
  }
  Result<FileInfo> Stat(const std::string& path) override {
    const bool hooked = path == path_ && armed_.exchange(false);  // the hooks' own stats pass
    if (hooked && before_) before_();
    auto r = FileSystemWrapper::Stat(path);
    if (hooked && after_) after_();
    return r;
  }

 private:
  std::atomic<bool> armed_{false};
  std::string path_;
  std::function<void()> before_, after_;
};

// J6 under races. A Head's stat that found the path empty while a put gave it a file (journaled,
// then direct) must not leave it known empty; and a Head whose stat finds the file gone because
// the key moved into the packed form meanwhile looks again and finds the packed version.
TEST_F(PackedStoreTest, AHeadRacingAPutThatFillsOrEmptiesThePathSeesTheNewVersionAfter) {
  StatHookFs fs(fs_);
  auto opened = OpenThreeForms(&fs);
  ASSERT_NE(opened, nullptr);
  ObjectStore& s = *opened;
  PutOptions if_absent{PutMode::kIfAbsent, {}};
  for (size_t bytes : {2000u, 10000u}) {
    const std::string key = "f" + std::to_string(bytes);
    fs.Arm(root_ + "/" + key, nullptr, [&] { Put(s, key, std::string(bytes, 'F')); });
    EXPECT_EQ(s.Head(key).status().code(), Code::kNotFound) << "it looked before the put";
    auto head = s.Head(key);
    ASSERT_TRUE(head.ok()) << key << ": known empty after a racing put: "
                           << head.status().ToString();
    EXPECT_EQ(head->size, bytes);
    auto again = s.Put(key, {AsBytes(std::string("x"))}, if_absent);
    EXPECT_EQ(again.status().code(), Code::kConflict) << key << ": " << again.status().ToString();
  }

  // File form → packed form between the Head's look at the packed index and its stat.
  const std::string moving = root_ + "/m";
  Put(s, "m", std::string(2000, 'M'));
  ASSERT_TRUE(fs_->Stat(moving).ok()) << "a journaled put of 2000 bytes has a file";
  bool file_gone = false;
  fs.Arm(moving, [&] {
    Put(s, "m", "packed");  // returns once its record is applied (SyncThrough): file removed
    file_gone = fs_->Stat(moving).status().IsNotFound();
  }, nullptr);
  auto head = s.Head("m");
  ASSERT_TRUE(file_gone) << "the packed put left its predecessor's file: the test proved nothing";
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(head->size, 6u);
  EXPECT_EQ(Get(s, "m"), "packed");
}

TEST_F(PackedStoreTest, APlainViewSeesEveryAcknowledgedPackedPut) {
  auto owner = Open();
  auto plain = NewFsObjectStore(root_, fs_);
  int missing = 0;
  for (int i = 0; i < 50; ++i) {
    const std::string k = "k" + std::to_string(i);
    Put(*owner, k, "v");
    if (Get(*plain, k) != "v") ++missing;
  }
  EXPECT_EQ(missing, 0) << "acknowledged packed puts invisible to a refreshed plain view";
}

TEST_F(PackedStoreTest, APlainViewOnCoarseTimestampsSeesAnAcknowledgedPut) {
  HookFs hfs(fs_);
  hfs.zero_mtime = true;
  auto owner = Open();
  auto plain = NewFsObjectStore(root_, &hfs);
  Put(*owner, "a", "1");
  EXPECT_EQ(Get(*plain, "a"), "1");
  Put(*owner, "b", "2");
  EXPECT_EQ(Get(*plain, "b"), "2");
}

TEST_F(PackedStoreTest, AViewWhoseOldestFileIsCollectedMidScanIsNotCorrupt) {
  {
    auto s = Open(/*journal_file_bytes=*/4096);
    for (int i = 0; i < 40; ++i) Put(*s, "k" + std::to_string(i % 4), std::string(500, 'a' + i % 26));
    Put(*s, "keep", "x");
  }
  ASSERT_GE(JournalFiles(), 2u);
  HookFs hfs(fs_);
  // The owner's CollectSegments deletes the oldest file between the view's listing and its read.
  hfs.after_list = [&] {
    auto names = fs_->ListDir(root_);
    uint64_t lsn, oldest = ~0ull;
    for (auto& n : *names) if (ParseJournalFileName(n, &lsn)) oldest = std::min(oldest, lsn);
    ASSERT_TRUE(fs_->DeleteFile(root_ + "/" + JournalFileName(oldest)).ok());
  };
  auto plain = NewFsObjectStore(root_, &hfs);
  EXPECT_EQ(Get(*plain, "keep"), "x") << "the view starts over, neither corrupt nor missing";
}


// Crash choices that keep nothing unsynced.
struct ZeroRandom final : Random {
  uint64_t Next64() override { return 0; }
};

// A large (direct) put over a packed object, cut by a crash after its file was durable but before
// its kExternal record was: the reopened store keeps the packed version AND the file; a delete
// then drops only the packed entry and the file's version comes back.
TEST_F(PackedStoreTest, ADeletedKeyDoesNotComeBackAfterACrashDuringALargePut) {
  CrashModelFs cfs(PosixFileSystem(), root_);
  FsJournalOptions o;
  o.packed_object_bytes_max = 1024;
  o.journaled_object_bytes_max = 2048;
  {
    auto s = OpenJournaledFsObjectStore(root_, &cfs, o);
    ASSERT_TRUE(s.ok());
    Put(**s, "k", "small");
  }  // a clean close: the packed record is checkpointed
  {
    auto s = OpenJournaledFsObjectStore(root_, &cfs, o);
    ASSERT_TRUE(s.ok());
    cfs.FailNext(CrashModelFs::Op::kAppendSync);  // the kExternal record's sync
    auto r = (*s)->Put("k", {AsBytes(std::string(4096, 'L'))}, {});
    EXPECT_FALSE(r.ok()) << "not acknowledged";
    cfs.Crash();
  }
  ZeroRandom zero;  // the crash keeps the synced journal prefix only, durable files as they are
  cfs.ApplyCrash(zero);
  cfs.Revive();
  auto s = OpenJournaledFsObjectStore(root_, &cfs, o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(Get(**s, "k"), "small") << "the put was not acknowledged: the packed version stands";
  ASSERT_TRUE((*s)->Delete("k").ok());
  auto g = (*s)->Get("k");
  EXPECT_TRUE(g.status().IsNotFound()) << "deleted, yet Get returns "
                                       << (g.ok() ? std::to_string(g->bytes->size()) + " bytes"
                                                  : g.status().ToString());
  s->reset();
  s = OpenJournaledFsObjectStore(root_, &cfs, o);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE((*s)->Get("k").status().IsNotFound()) << "and after a reopen";
}

// Pauses the first journal sync whose batch carries `needle` (compaction's copy of a record)
// until released.
class PauseSyncOfBytesFs final : public FileSystemWrapper {
 public:
  PauseSyncOfBytesFs(FileSystem* target, std::string needle)
      : FileSystemWrapper(target), needle_(std::move(needle)) {}
  Result<std::unique_ptr<AppendFile>> NewAppendFile(const std::string& path) override {
    WMBT_ASSIGN_OR_RETURN(std::unique_ptr<AppendFile> made, FileSystemWrapper::NewAppendFile(path));
    return std::unique_ptr<AppendFile>(std::make_unique<File>(this, std::move(made)));
  }
  PauseOnce pause;
  std::atomic<bool> reached{false};

 private:
  class File final : public AppendFile {
   public:
    File(PauseSyncOfBytesFs* fs, std::unique_ptr<AppendFile> target)
        : fs_(fs), target_(std::move(target)) {}
    Status Append(const std::vector<ByteView>& parts) override {
      for (ByteView p : parts) {
        carries_ |= AsChars(p).find(fs_->needle_) != std::string_view::npos;
      }
      return target_->Append(parts);
    }
    Status Sync() override {
      if (std::exchange(carries_, false)) {
        fs_->reached = true;
        fs_->pause.Hold();
      }
      return target_->Sync();
    }
    Status Preallocate(uint64_t bytes) override { return target_->Preallocate(bytes); }
    Status StartWriteback() override { return target_->StartWriteback(); }
    Status Trim() override { return target_->Trim(); }
    Status Rename(const std::string& to) override { return target_->Rename(to); }

   private:
    PauseSyncOfBytesFs* const fs_;
    std::unique_ptr<AppendFile> target_;
    bool carries_ = false;
  };
  const std::string needle_;
};

// As above, but the delete is decided while compaction's copy of the packed record is in flight:
// the copy is a version without a file, so the delete left the file beside it, and the key read
// back the 4 KiB of the put that was never acknowledged (a review, session 60).
TEST_F(PackedStoreTest, ADeleteDuringACompactionCopyDoesNotBringBackAnUnacknowledgedPut) {
  CrashModelFs cfs(PosixFileSystem(), root_);
  FsJournalOptions o;
  o.packed_object_bytes_max = 1024;
  o.journaled_object_bytes_max = 2048;
  o.journal_file_bytes = 4096;
  const std::string small = "small, packed version of k";
  {
    auto s = OpenJournaledFsObjectStore(root_, &cfs, o);
    ASSERT_TRUE(s.ok());
    Put(**s, "k", small);
  }
  {
    auto s = OpenJournaledFsObjectStore(root_, &cfs, o);
    ASSERT_TRUE(s.ok());
    cfs.FailNext(CrashModelFs::Op::kAppendSync);  // the kExternal record's sync
    EXPECT_FALSE((*s)->Put("k", {AsBytes(std::string(4096, 'L'))}, {}).ok());
    cfs.Crash();
  }
  ZeroRandom zero;
  cfs.ApplyCrash(zero);
  cfs.Revive();
  ASSERT_TRUE(PosixFileSystem()->Stat(root_ + "/k").ok()) << "no file beside k: no test";
  PauseSyncOfBytesFs fs(PosixFileSystem(), small);
  auto s = OpenJournaledFsObjectStore(root_, &fs, o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(Get(**s, "k"), small);
  // Churn fills and retires journal files until the oldest, holding k, is compacted.
  std::atomic<bool> stop{false}, gave_up{false};
  std::thread churn([&] {
    for (int i = 0; i < 2000 && !stop.load(); ++i) {
      const std::string key = "c/" + std::to_string(i);
      (void)(*s)->Put(key, {AsBytes(std::string(500, 'c'))}, {});
      (void)(*s)->Delete(key);
    }
    if (!fs.reached.load()) {
      gave_up = true;
      fs.pause.Hold();  // lets the test go on, to fail
    }
  });
  fs.pause.AwaitHeld();  // k's copy is written, its sync held
  if (gave_up.load()) {
    fs.pause.Release();
    churn.join();
    FAIL() << "k's record was never compacted: the test proved nothing";
  }
  auto deleted = std::async(std::launch::async, [&] { return (*s)->Delete("k"); });
  RealClock()->SleepMicros(20'000);  // the delete is decided against the copy in flight
  fs.pause.Release();
  stop = true;
  churn.join();
  ASSERT_TRUE(deleted.get().ok());
  auto g = (*s)->Get("k");
  EXPECT_TRUE(g.status().IsNotFound())
      << "deleted, yet Get returns "
      << (g.ok() ? std::to_string(g->bytes->size()) + " bytes" : g.status().ToString());
  s->reset();
  s = OpenJournaledFsObjectStore(root_, PosixFileSystem(), o);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE((*s)->Get("k").status().IsNotFound()) << "and after a reopen";
}

// The packed version's entry goes only once the kExternal record saying the file supersedes it
// is durable (every change of the index is from a synced record: the packed-index snapshot relies
// on it), so a large put over a packed object waits for that sync even when deferred. Without
// it, a crash right after the put could lose the record, and the packed version would be put
// back over the file: the version the store had served since rolled back.
TEST_F(PackedStoreTest, ALargePutOverAPackedObjectIsDurableWhenItReturns) {
  CrashModelFs cfs(PosixFileSystem(), root_);
  FsJournalOptions o;
  o.packed_object_bytes_max = 1024;
  o.journaled_object_bytes_max = 2048;
  const std::string large(4096, 'L');
  {
    auto s = OpenJournaledFsObjectStore(root_, &cfs, o);
    ASSERT_TRUE(s.ok());
    Put(**s, "k", "small");
    Put(**s, "k", large, Deferred());
    EXPECT_EQ(Get(**s, "k"), large);
    cfs.Crash();
  }
  ZeroRandom zero;  // the crash keeps the synced journal prefix only
  cfs.ApplyCrash(zero);
  cfs.Revive();
  auto s = OpenJournaledFsObjectStore(root_, &cfs, o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(Get(**s, "k"), large);
}

// Pages of an unsynced batch reach the disk in any order. A hole inside one record's value, with
// a later record of the batch intact, is read back as "damage": the key's acknowledged version
// before is shadowed by an unreadable one it never acknowledged.
TEST_F(PackedStoreTest, AHoleInAnUnsyncedBatchDoesNotShadowTheAcknowledgedVersion) {
  CrashModelFs cfs(PosixFileSystem(), root_);
  FsJournalOptions o;
  o.packed_object_bytes_max = 64 << 10;
  const std::string v2(12000, '2');
  {
    auto s = OpenJournaledFsObjectStore(root_, &cfs, o);
    ASSERT_TRUE(s.ok());
    Put(**s, "k", "v1 acknowledged");
    Put(**s, "k", v2, Deferred());
    Put(**s, "j", "other", Deferred());
    cfs.FailNext(CrashModelFs::Op::kAppendSync);
    EXPECT_FALSE((*s)->Put("z", {AsBytes("z")}, {}).ok()) << "the batch's sync fails: nothing acked";
    auto at = LocateStoredByte(fs_, root_, "k", 6000);  // the batch was written, not synced
    ASSERT_TRUE(at.ok()) << at.status().ToString();
    const uint64_t page = at->second / 4096 * 4096;
    std::fstream f(at->first, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(page));
    const std::string zeros(4096, '\0');
    f.write(zeros.data(), zeros.size());  // that page never reached the disk
    f.close();
    cfs.Crash();
  }
  cfs.Revive();
  auto s = OpenJournaledFsObjectStore(root_, &cfs, o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const std::string got = Get(**s, "k");
  EXPECT_TRUE(got == "v1 acknowledged" || got == v2) << got.substr(0, 300);
}


TEST_F(PackedStoreTest, APlainViewRacingTheOwnersWritesEndsUpCurrent) {
  auto owner = Open();
  auto plain = NewFsObjectStore(root_, fs_);
  int stale = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::atomic<bool> done{false};
    std::thread reader([&] {
      while (!done) (void)plain->Head("nothing");
    });
    for (int i = 0; i < 20; ++i) Put(*owner, "t" + std::to_string(trial) + "/" + std::to_string(i), "v");
    done = true;
    reader.join();
    if (Get(*plain, "t" + std::to_string(trial) + "/19") != "v") ++stale;
  }
  EXPECT_EQ(stale, 0) << "trials whose last acknowledged put stayed invisible to the plain view";
}

TEST_F(PackedStoreTest, DamagedBytesAreReportedOnReadAndSurviveAReopenAsDamage) {
  auto s = Open();
  Put(*s, "h/a", "aaaaaaaaaaaa");
  Put(*s, "h/b", "bbbbbbbbbbbb");
  s.reset();
  auto at = LocateStoredByte(fs_, root_, "h/a", 3);
  ASSERT_TRUE(at.ok()) << at.status().ToString();
  {
    std::fstream f(at->first, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.is_open());
    f.seekp(static_cast<std::streamoff>(at->second));
    f.put('Z');
  }
  s = Open();
  auto got = s->Get("h/a");
  EXPECT_EQ(got.status().code(), Code::kCorruption) << got.status().ToString();
  EXPECT_EQ(Get(*s, "h/b"), "bbbbbbbbbbbb") << "the records after the damage are intact";
  // Compaction copies the damage as damage (here: a reopen and more writes keep it reported);
  // writing the object again heals it.
  s.reset();
  s = Open();
  EXPECT_EQ(s->Get("h/a").status().code(), Code::kCorruption);
  Put(*s, "h/a", "healed");
  EXPECT_EQ(Get(*s, "h/a"), "healed");
}

// A record header damaged inside the newest journal file, below the checkpoint (the records
// there were synced): the records from it on cannot be read. The open says so and stops, as for
// damage in an older file (a gap), instead of opening without those objects and beginning the
// next journal file past the damage — which made the open after it fail with a gap anyway.
TEST_F(PackedStoreTest, ADamagedRecordHeaderBelowTheCheckpointIsReportedAtTheOpenThatFindsIt) {
  auto s = Open();
  Put(*s, "h/a", "aaaaaaaaaaaa");
  Put(*s, "h/b", "bbbbbbbbbbbb");
  s.reset();  // a clean close: the checkpoint covers both records
  auto at = LocateStoredByte(fs_, root_, "h/a", 0);
  ASSERT_TRUE(at.ok()) << at.status().ToString();
  {
    // The key's last byte (before the etag id and time that lead a packed value): the header's
    // checksum covers it.
    std::fstream f(at->first, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.is_open());
    f.seekp(static_cast<std::streamoff>(at->second - kPackedValuePrefixBytes - 1));
    f.put('Z');
  }
  FsJournalOptions o;
  o.packed_object_bytes_max = 1024;
  auto reopened = OpenJournaledFsObjectStore(root_, fs_, o);
  ASSERT_FALSE(reopened.ok()) << "opened without the damaged records";
  EXPECT_EQ(reopened.status().code(), Code::kCorruption);
  EXPECT_NE(reopened.status().message().find("synced through LSN 2"), std::string::npos)
      << reopened.status().ToString();
}

}  // namespace
}  // namespace wombatkv
