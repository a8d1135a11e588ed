// Group commit of directory entries (DirSyncGroup) and the durability order of FsObjectStore
// writes, observed through a FileSystem that records every sync and name (SyncOrderRecorder).
#include "object/dir_sync_group.h"

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "object/sync_order_recorder.h"
#include "wombatkv/object_store.h"

namespace wombatkv {
namespace {

class DirSyncGroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> seq{0};
    root_ = ::testing::TempDir() + "wombatkv_dir_sync_" + std::to_string(::getpid()) + "_" +
            std::to_string(seq++);
    ASSERT_TRUE(PosixFileSystem()->DeleteTree(root_).ok());
    ASSERT_TRUE(PosixFileSystem()->CreateDirs(root_ + "/d").ok());
    dir_ = root_ + "/d";
  }
  void TearDown() override { EXPECT_TRUE(PosixFileSystem()->DeleteTree(root_).ok()); }

  std::unique_ptr<PendingFile> Temp(const std::string& name) {
    auto f = rec_.WriteTemp(dir_ + "/" + name, {AsBytes(name)}, /*sync=*/true, false);
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    return f.ok() ? std::move(*f) : nullptr;
  }
  DirSyncGroup::Ticket Name(DirSyncGroup& g, PendingFile& f, const std::string& name) {
    auto t = g.Name(f, dir_, dir_ + "/" + name, /*replace=*/false);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? *t : DirSyncGroup::Ticket{};
  }

  std::string root_;
  std::string dir_;
  SyncOrderRecorder rec_{PosixFileSystem()};
};

TEST_F(DirSyncGroupTest, AWriterAloneSyncsItsDirectoryOnceAfterNamingTheFile) {
  DirSyncGroup g(&rec_);
  auto f = Temp("a");
  auto t = Name(g, *f, "a");
  EXPECT_EQ(rec_.Count(SyncEvent::kSyncDirBegin), 0u);  // named, not yet durable
  ASSERT_TRUE(g.Await(t).ok());
  rec_.Mark("ack");
  auto ev = rec_.events();
  EXPECT_EQ(SyncOrderRecorder::DurableBefore(ev, dir_ + "/a", dir_,
                                             SyncOrderRecorder::MarkIndex(ev, "ack")),
            "");
  EXPECT_EQ(rec_.Count(SyncEvent::kSyncDirBegin), 1u);
}

TEST_F(DirSyncGroupTest, NamesCommittedWhileASyncRunsShareTheNextSync) {
  // The first sync is held until three more names have been committed behind it: those three
  // must then be made durable by exactly one more sync.
  std::mutex mu;
  std::condition_variable cv;
  int entered = 0;
  bool release = false;
  rec_.before_sync_dir = [&](const std::string&) {
    std::unique_lock<std::mutex> l(mu);
    if (++entered == 1) {
      cv.notify_all();
      cv.wait(l, [&] { return release; });
    }
    return Status::Ok();
  };
  DirSyncGroup g(&rec_);
  auto first = Temp("first");
  auto t0 = Name(g, *first, "first");
  std::thread leader([&] { EXPECT_TRUE(g.Await(t0).ok()); });
  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return entered == 1; });
  }
  std::vector<std::unique_ptr<PendingFile>> files;
  std::vector<std::thread> waiters;
  for (const char* name : {"x", "y", "z"}) {
    files.push_back(Temp(name));
    DirSyncGroup::Ticket t = Name(g, *files.back(), name);
    waiters.emplace_back([&g, t, this, name] {
      EXPECT_TRUE(g.Await(t).ok());
      rec_.Mark(std::string("ack ") + name);
    });
  }
  {
    std::lock_guard<std::mutex> l(mu);
    release = true;
  }
  cv.notify_all();
  leader.join();
  for (auto& w : waiters) w.join();
  EXPECT_EQ(rec_.Count(SyncEvent::kSyncDirBegin), 2u);
  auto ev = rec_.events();
  for (const char* name : {"x", "y", "z"}) {
    EXPECT_EQ(SyncOrderRecorder::DurableBefore(
                  ev, dir_ + "/" + name, dir_,
                  SyncOrderRecorder::MarkIndex(ev, std::string("ack ") + name)),
              "");
  }
}

TEST_F(DirSyncGroupTest, AReaderOfANameNotYetDurableWaitsForItsSync) {
  DirSyncGroup g(&rec_);
  auto f = Temp("a");
  auto t = Name(g, *f, "a");
  EXPECT_TRUE(g.AwaitDurable(dir_, dir_ + "/other").ok());  // nothing pending there
  EXPECT_EQ(rec_.Count(SyncEvent::kSyncDirBegin), 0u);
  // No writer is syncing yet: the reader runs the sync itself rather than return early.
  ASSERT_TRUE(g.AwaitDurable(dir_, dir_ + "/a").ok());
  rec_.Mark("read");
  auto ev = rec_.events();
  EXPECT_EQ(SyncOrderRecorder::DurableBefore(ev, dir_ + "/a", dir_,
                                             SyncOrderRecorder::MarkIndex(ev, "read")),
            "");
  EXPECT_TRUE(g.Await(t).ok());  // the writer finds its round done: no second sync
  EXPECT_TRUE(g.AwaitDurable(dir_, dir_ + "/a").ok());
  EXPECT_EQ(rec_.Count(SyncEvent::kSyncDirBegin), 1u);
}

TEST_F(DirSyncGroupTest, AFailedSyncFailsEveryMemberOfItsRoundAndTheNextRoundStartsAfresh) {
  int calls = 0;
  rec_.before_sync_dir = [&](const std::string&) {
    return ++calls == 1 ? Status::Unavailable("injected: device went away") : Status::Ok();
  };
  DirSyncGroup g(&rec_);
  auto a = Temp("a");
  auto b = Temp("b");
  auto ta = Name(g, *a, "a");
  auto tb = Name(g, *b, "b");
  Status sa = g.Await(ta);
  EXPECT_EQ(sa.code(), Code::kUnavailable) << sa.ToString();
  EXPECT_NE(sa.message().find(dir_), std::string::npos) << sa.ToString();  // names the directory
  EXPECT_EQ(g.Await(tb).code(), Code::kUnavailable);  // same round, same answer, no new sync
  EXPECT_EQ(calls, 1);
  // A reader arriving later does not take the failed names for durable.
  EXPECT_EQ(g.AwaitDurable(dir_, dir_ + "/a").code(), Code::kUnavailable);
  EXPECT_EQ(calls, 1);
  auto c = Temp("c");
  EXPECT_TRUE(g.Await(Name(g, *c, "c")).ok());
  EXPECT_EQ(calls, 2);
  // Named again, a path's durability is its new round's.
  auto a2 = Temp("a2");
  auto t2 = g.Name(*a2, dir_, dir_ + "/a", /*replace=*/true);
  ASSERT_TRUE(t2.ok()) << t2.status().ToString();
  EXPECT_TRUE(g.Await(*t2).ok());
  EXPECT_TRUE(g.AwaitDurable(dir_, dir_ + "/a").ok());
}

TEST_F(DirSyncGroupTest, ACommitThatFailsLeavesNothingPending) {
  DirSyncGroup g(&rec_);
  auto a = Temp("a");
  ASSERT_TRUE(g.Await(Name(g, *a, "a")).ok());
  auto again = Temp("a");
  auto t = g.Name(*again, dir_, dir_ + "/a", /*replace=*/false);
  EXPECT_TRUE(t.status().IsConflict()) << t.status().ToString();
  EXPECT_TRUE(g.AwaitDurable(dir_, dir_ + "/a").ok());
  EXPECT_EQ(rec_.Count(SyncEvent::kSyncDirBegin), 1u);
}

// FsObjectStore through the recorder, many writers and readers at once: every acknowledged
// write, every Conflict that says "it exists" and every successful read comes after the object's
// content was synced, then its name committed, then a sync of its directory that began after the
// commit. Breaking any step (a skipped sync, a sync before the commit, a read that does not wait)
// fails here.
TEST_F(DirSyncGroupTest, FsObjectStoreAcknowledgesAndServesOnlyDurableNames) {
  auto store = NewFsObjectStore(root_ + "/store", &rec_);
  const std::string base = root_ + "/store/";
  constexpr int kThreads = 8;
  constexpr int kRounds = 12;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::string etag;
      for (int i = 0; i < kRounds; ++i) {
        // Two threads race to create each shared key: one creates, the other gets Conflict.
        const std::string shared = "blob/s" + std::to_string(i) + "-" + std::to_string(t / 2);
        auto r = store->Put(shared, {AsBytes("same bytes")}, PutOptions{PutMode::kIfAbsent, {}});
        if (!r.ok() && !r.status().IsConflict()) failures++;
        rec_.Mark("settled " + shared + " by " + std::to_string(t));
        // Each thread replaces its own key, by overwrite and by if-match.
        const std::string own = "chain/own" + std::to_string(t);
        PutOptions o = etag.empty() ? PutOptions{} : PutOptions{PutMode::kIfMatch, etag};
        auto w = store->Put(own, {AsBytes("v" + std::to_string(i))}, o);
        if (!w.ok()) failures++;
        etag = w.ok() ? *w : "";
        rec_.Mark("acked " + own + " " + std::to_string(i));
        // Read a key another thread may be creating right now.
        const std::string other = "blob/s" + std::to_string(i) + "-" + std::to_string(t / 2 ^ 1);
        if (store->Head(other).ok()) rec_.Mark("seen " + other + " by " + std::to_string(t));
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  auto ev = rec_.events();
  size_t checked = 0;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev[i].kind != SyncEvent::kMark) continue;
    // "<verb> <key> ..." with the key second.
    const std::string& m = ev[i].path;
    const size_t a = m.find(' ') + 1;
    const std::string key = m.substr(a, m.find(' ', a) - a);
    const std::string path = base + key;
    const std::string dir = path.substr(0, path.find_last_of('/'));
    EXPECT_EQ(SyncOrderRecorder::DurableBefore(ev, path, dir, i), "") << m;
    checked++;
  }
  EXPECT_GE(checked, size_t{kThreads * kRounds * 2});
}

}  // namespace
}  // namespace wombatkv
