// Journal rounds (src/object/journal.h). AwaitSynced's group commit: callers that arrive while a
// round is being synced share the next round, the lead passes to one of them, and a failed sync
// reaches every caller waiting for it. WriteBehind: a batch written unsynced is synced by the next
// AwaitSynced, hands the lead to a caller that arrived meanwhile, and its failure sticks. The
// synced hook runs once a round, before the round's callers return. AwaitSyncedThen: a caller
// that finds a leader staying for callbacks returns at once and its callback runs on that
// leader's thread, after the hook; failures reach every callback; behind a leader that leaves,
// it waits as a blocking caller.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "base/futex.h"
#include "base/must_not_block.h"
#include "object/journal.h"
#include "object/journal_scan.h"
#include "wombatkv/env.h"

namespace wombatkv {
namespace {

// Counts journal syncs, appends and write-back starts; the first sync blocks until Open() so that
// callers pile up behind it; the syncs after `fail_after` fail. HoldAppends() blocks appends until
// Open(); HoldSync(n) blocks the n-th sync until ReleaseSync(); FailWriteback() fails write-back
// starts.
class GatedFs final : public FileSystemWrapper {
 public:
  explicit GatedFs(FileSystem* target) : FileSystemWrapper(target) {}

  Result<std::unique_ptr<AppendFile>> NewAppendFile(const std::string& path) override {
    WMBT_ASSIGN_OR_RETURN(auto inner, target()->NewAppendFile(path));
    return std::unique_ptr<AppendFile>(new Gated(this, std::move(inner)));
  }

  void Open() {
    std::lock_guard<std::mutex> g(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Blocks until the first sync has started (and is held at the gate).
  void AwaitFirstSync() {
    std::unique_lock<std::mutex> g(mu_);
    cv_.wait(g, [&] { return syncs_ > 0; });
  }
  int syncs() { return Read(syncs_); }
  bool open_now() {
    std::lock_guard<std::mutex> g(mu_);
    return open_;
  }
  std::thread::id first_sync_thread() {
    std::lock_guard<std::mutex> g(mu_);
    return first_sync_thread_;
  }
  int appends() { return Read(appends_); }
  int writebacks() { return Read(writebacks_); }
  int preallocations() { return Read(preallocations_); }
  void HoldAppends() {
    std::lock_guard<std::mutex> g(mu_);
    hold_appends_ = true;
  }
  // Blocks until an append is held (HoldAppends).
  void AwaitHeldAppend() {
    std::unique_lock<std::mutex> g(mu_);
    cv_.wait(g, [&] { return held_ > 0; });
  }
  void ReleaseAppends() {
    std::lock_guard<std::mutex> g(mu_);
    hold_appends_ = false;
    cv_.notify_all();
  }
  void HoldSync(int n) {
    std::lock_guard<std::mutex> g(mu_);
    hold_sync_ = n;
  }
  // Blocks until the sync HoldSync named is held.
  void AwaitHeldSync() {
    std::unique_lock<std::mutex> g(mu_);
    cv_.wait(g, [&] { return sync_held_; });
  }
  void ReleaseSync() {
    std::lock_guard<std::mutex> g(mu_);
    hold_sync_ = 0;
    cv_.notify_all();
  }
  void FailWriteback() {
    std::lock_guard<std::mutex> g(mu_);
    fail_writeback_ = true;
  }
  void FailSyncsAfter(int n) {
    std::lock_guard<std::mutex> g(mu_);
    fail_after_ = n;
  }

 private:
  class Gated final : public AppendFile {
   public:
    Gated(GatedFs* fs, std::unique_ptr<AppendFile> inner) : fs_(fs), inner_(std::move(inner)) {}
    Status Append(const std::vector<ByteView>& parts) override {
      {
        std::unique_lock<std::mutex> g(fs_->mu_);
        ++fs_->appends_;
        if (fs_->hold_appends_) {
          ++fs_->held_;
          fs_->cv_.notify_all();
          fs_->cv_.wait(g, [&] { return !fs_->hold_appends_; });
        }
      }
      return inner_->Append(parts);
    }
    Status Preallocate(uint64_t bytes) override {
      {
        std::lock_guard<std::mutex> g(fs_->mu_);
        ++fs_->preallocations_;
      }
      return inner_->Preallocate(bytes);
    }
    Status StartWriteback() override {
      {
        std::lock_guard<std::mutex> g(fs_->mu_);
        ++fs_->writebacks_;
        if (fs_->fail_writeback_) return Status::Unavailable("injected sync_file_range failure");
      }
      return inner_->StartWriteback();
    }
    Status Sync() override {
      {
        std::unique_lock<std::mutex> g(fs_->mu_);
        const int n = ++fs_->syncs_;
        if (n == 1) fs_->first_sync_thread_ = std::this_thread::get_id();
        fs_->cv_.notify_all();
        fs_->cv_.wait(g, [&] { return fs_->open_; });
        if (n == fs_->hold_sync_) {
          fs_->sync_held_ = true;
          fs_->cv_.notify_all();
          fs_->cv_.wait(g, [&] { return fs_->hold_sync_ != n; });
        }
        if (n > fs_->fail_after_) return Status::Unavailable("injected fdatasync failure");
      }
      return inner_->Sync();
    }

   private:
    GatedFs* fs_;
    std::unique_ptr<AppendFile> inner_;
  };

  int Read(const int& counter) {
    std::lock_guard<std::mutex> g(mu_);
    return counter;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int syncs_ = 0;
  int fail_after_ = 1 << 30;
  int appends_ = 0, writebacks_ = 0, held_ = 0, preallocations_ = 0;
  bool hold_appends_ = false, fail_writeback_ = false;
  int hold_sync_ = 0;
  bool sync_held_ = false;
  std::thread::id first_sync_thread_;
};

class JournalGroupCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "wombatkv_group_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_TRUE(PosixFileSystem()->DeleteTree(dir_).ok());
    ASSERT_TRUE(PosixFileSystem()->CreateDirs(dir_).ok());
    auto j = Journal::Create(&fs_, dir_, /*next_lsn=*/1, /*file_bytes_target=*/1 << 20, nullptr);
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    journal_ = std::move(j).value();
  }
  void TearDown() override {
    journal_.reset();
    EXPECT_TRUE(PosixFileSystem()->DeleteTree(dir_).ok());
  }

  uint64_t Append(int i) {
    const std::string v = "value " + std::to_string(i);
    return journal_->Append(JournalOp::kPut, "k" + std::to_string(i), {AsBytes(v)});
  }

  // A first caller syncs record 1 and is held at the gate; `n` more callers append and wait
  // behind it. Then the gate opens. Returns each waiter's status (index 0 = the first caller).
  std::vector<Status> PileUpBehindFirstSync(int n) {
    std::vector<Status> out(n + 1);
    std::vector<std::thread> threads;
    const uint64_t first = Append(0);
    threads.emplace_back([&, first] { out[0] = journal_->AwaitSynced(first); });
    fs_.AwaitFirstSync();
    std::vector<uint64_t> lsns;
    for (int i = 1; i <= n; ++i) lsns.push_back(Append(i));
    for (int i = 1; i <= n; ++i) {
      threads.emplace_back([&, i] { out[i] = journal_->AwaitSynced(lsns[i - 1]); });
    }
    // Waiters that have not queued by the time the gate opens find their record synced by the
    // lead handed over (or lead the round themselves): two syncs either way.
    while (journal_->appended_lsn() != uint64_t(n) + 1) std::this_thread::yield();
    fs_.Open();
    for (auto& t : threads) t.join();
    return out;
  }

  // A first AwaitSyncedThen caller leads and is held in its sync while `n` more callbacks
  // queue; then the gate opens. Returns the thread each callback ran on (index 0 = the first
  // caller's), once the first caller has returned and every callback has run.
  std::vector<std::thread::id> CallbackThreadsBehindAFirstCaller(int n, std::thread::id* first) {
    std::vector<std::thread::id> ran_on(n + 1);
    std::vector<Baton> done(n + 1);
    auto callback = [&](int i) {
      return [&, i](Status s) {
        EXPECT_TRUE(s.ok()) << s.ToString();
        ran_on[i] = std::this_thread::get_id();
        done[i].Post();
      };
    };
    const uint64_t first_lsn = Append(0);
    std::thread leader([&] {
      *first = std::this_thread::get_id();
      journal_->AwaitSyncedThen(first_lsn, callback(0));
    });
    fs_.AwaitFirstSync();
    for (int i = 1; i <= n; ++i) journal_->AwaitSyncedThen(Append(i), callback(i));
    fs_.Open();
    leader.join();
    for (auto& d : done) d.Wait();
    return ran_on;
  }

  // Calls AwaitSyncedThen(lsn) under MustNotBlock while the first sync is held at the gate,
  // which opens once the call returned — or, if it does not, after 20 s, and then the test
  // fails instead of hanging. True when it returned with the gate still closed.
  bool ReturnsWithTheSyncHeld(uint64_t lsn, std::function<void(Status)> done) {
    std::atomic<bool> returned{false};
    std::thread gate([&] {
      fs_.AwaitFirstSync();
      for (int i = 0; i < 20'000 && !returned.load(); ++i) RealClock()->SleepMicros(1000);
      fs_.Open();
    });
    {
      MustNotBlock here;
      journal_->AwaitSyncedThen(lsn, std::move(done));
    }
    const bool in_time = !fs_.open_now();
    returned.store(true);
    gate.join();
    return in_time;
  }

  GatedFs fs_{PosixFileSystem()};
  std::string dir_;
  std::unique_ptr<Journal> journal_;
};

TEST_F(JournalGroupCommitTest, CallersArrivingDuringASyncShareTheNextOne) {
  const int kWaiters = 7;
  std::vector<Status> results = PileUpBehindFirstSync(kWaiters);
  for (const Status& s : results) EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(journal_->synced_lsn(), uint64_t(kWaiters) + 1);
  // One sync for the first record, one for all the others (the lead passed to one of them).
  EXPECT_EQ(fs_.syncs(), 2);
}

TEST_F(JournalGroupCommitTest, AFailedSyncReachesEveryWaiterAndSticks) {
  fs_.FailSyncsAfter(1);
  std::vector<Status> results = PileUpBehindFirstSync(5);
  EXPECT_TRUE(results[0].ok()) << results[0].ToString();
  for (size_t i = 1; i < results.size(); ++i) {
    EXPECT_EQ(results[i].code(), Code::kUnavailable) << i << ": " << results[i].ToString();
  }
  EXPECT_EQ(journal_->synced_lsn(), 1u);
  // Sticky: a later record is not acknowledged either.
  EXPECT_EQ(journal_->AwaitSynced(Append(99)).code(), Code::kUnavailable);
}

TEST_F(JournalGroupCommitTest, TheSyncedHookRunsOnceARoundBeforeTheRoundsCallersReturn) {
  std::atomic<uint64_t> applied{0};
  std::atomic<int> calls{0};
  journal_->SetOnSynced([&] {
    // Slow, so that a caller released before the hook ran would see `applied` behind its record.
    for (int i = 0; i < 2000; ++i) std::this_thread::yield();
    applied = journal_->synced_lsn();
    ++calls;
  });
  const int kWaiters = 5;
  std::vector<uint64_t> lsns(kWaiters + 1), seen(kWaiters + 1);
  std::vector<Status> results(kWaiters + 1);
  auto wait = [&](int i) {
    results[i] = journal_->AwaitSynced(lsns[i]);
    seen[i] = applied.load();
  };
  std::vector<std::thread> threads;
  lsns[0] = Append(0);
  threads.emplace_back(wait, 0);
  fs_.AwaitFirstSync();
  for (int i = 1; i <= kWaiters; ++i) lsns[i] = Append(i);
  for (int i = 1; i <= kWaiters; ++i) threads.emplace_back(wait, i);
  while (journal_->appended_lsn() != uint64_t(kWaiters) + 1) std::this_thread::yield();
  fs_.Open();
  for (auto& t : threads) t.join();
  for (int i = 0; i <= kWaiters; ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].ToString();
    EXPECT_GE(seen[i], lsns[i]) << "caller " << i << " returned before the hook saw its record";
  }
  EXPECT_EQ(calls.load(), fs_.syncs()) << "once per round";
  // Not after a failed round: nothing new is durable.
  fs_.FailSyncsAfter(fs_.syncs());
  EXPECT_EQ(journal_->AwaitSynced(Append(99)).code(), Code::kUnavailable);
  EXPECT_EQ(calls.load(), fs_.syncs() - 1);
}

TEST_F(JournalGroupCommitTest, ManyThreadsAllReturnWithTheirRecordSynced) {
  fs_.Open();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const uint64_t lsn = Append(t * 1000 + i);
        if (!journal_->AwaitSynced(lsn).ok() || journal_->synced_lsn() < lsn) failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(journal_->synced_lsn(), 1600u);
  EXPECT_LE(fs_.syncs(), 1600);
}

TEST_F(JournalGroupCommitTest, WriteBehindWritesTheBatchUnsyncedAndTheNextAwaitSyncsIt) {
  fs_.Open();
  const int appends = fs_.appends();  // the file's creation may write too
  Append(1);
  const uint64_t last = Append(2);
  ASSERT_TRUE(journal_->WriteBehind(1).ok());
  EXPECT_EQ(fs_.appends(), appends + 1) << "one write of the batch";
  EXPECT_EQ(fs_.writebacks(), 1);
  EXPECT_EQ(fs_.syncs(), 0);
  EXPECT_GT(journal_->unsynced_bytes(), 0u) << "written is not durable";
  EXPECT_EQ(journal_->synced_lsn(), 0u) << "written is not durable";
  // Nothing is left to write, but the records are not durable until a sync: it must still run.
  ASSERT_TRUE(journal_->AwaitSynced(last).ok());
  EXPECT_EQ(fs_.syncs(), 1);
  EXPECT_EQ(fs_.appends(), appends + 1) << "the batch is not written twice";
  EXPECT_EQ(journal_->synced_lsn(), last);
  EXPECT_EQ(journal_->unsynced_bytes(), 0u);
}

TEST_F(JournalGroupCommitTest, WriteBehindBelowItsThresholdWritesNothing) {
  fs_.Open();
  const int appends = fs_.appends();
  const uint64_t lsn = Append(1);
  ASSERT_TRUE(journal_->WriteBehind(1 << 20).ok());
  EXPECT_EQ(fs_.appends(), appends);
  EXPECT_GT(journal_->unsynced_bytes(), 0u);
  ASSERT_TRUE(journal_->AwaitSynced(lsn).ok());
  EXPECT_EQ(fs_.appends(), appends + 1);
}

TEST_F(JournalGroupCommitTest, ACallerArrivingDuringAWriteBehindIsHandedTheLead) {
  fs_.Open();  // syncs pass; the write-behind's write is held
  fs_.HoldAppends();
  const uint64_t lsn = Append(1);
  Status behind, awaited;
  std::atomic<bool> returned{false};
  std::thread writer([&] { behind = journal_->WriteBehind(1); });
  fs_.AwaitHeldAppend();
  // Waits for a record of the batch being written: the write alone must not release it.
  std::thread waiter([&] {
    awaited = journal_->AwaitSynced(lsn);
    returned = true;
  });
  // Give the waiter time to queue behind the write (if it is late it leads by itself: the test
  // passes either way; a lead never handed over hangs it).
  RealClock()->SleepMicros(20000);
  EXPECT_FALSE(returned.load()) << "released while its record was being written, unsynced";
  fs_.ReleaseAppends();
  writer.join();
  waiter.join();
  EXPECT_TRUE(behind.ok()) << behind.ToString();
  EXPECT_TRUE(awaited.ok()) << awaited.ToString();
  EXPECT_EQ(journal_->synced_lsn(), lsn);
  EXPECT_EQ(fs_.syncs(), 1) << "the waiter synced the written batch, with nothing to write";
}

TEST_F(JournalGroupCommitTest, AFailedWriteBehindSticks) {
  fs_.Open();
  fs_.FailWriteback();
  Append(1);
  EXPECT_EQ(journal_->WriteBehind(1).code(), Code::kUnavailable);
  EXPECT_EQ(journal_->synced_lsn(), 0u);
  EXPECT_EQ(journal_->AwaitSynced(Append(2)).code(), Code::kUnavailable);
  EXPECT_EQ(fs_.syncs(), 0) << "nothing after a failure is acknowledged";
}

TEST_F(JournalGroupCommitTest, AFailedJournalLetsGoOfHeldValues) {
  // A failed journal writes no more rounds, so nothing it holds would ever be let go.
  fs_.Open();
  fs_.FailWriteback();
  auto big = std::make_shared<std::vector<uint8_t>>(Journal::kValueBytesHeldMin);
  const std::vector<ByteView> value{ByteView(*big)};
  journal_->Append(JournalOp::kPut, "a", value, nullptr, /*value_damaged=*/false, big);
  EXPECT_EQ(journal_->WriteBehind(1).code(), Code::kUnavailable);
  EXPECT_EQ(big.use_count(), 1) << "the failed round's value";
  journal_->Append(JournalOp::kPut, "b", value, nullptr, /*value_damaged=*/false, big);
  EXPECT_EQ(big.use_count(), 1) << "a value appended after the failure";
}

TEST_F(JournalGroupCommitTest, BulkBatchesAreWrittenPastTheZerosAndEveryRecordReadsBack) {
  fs_.Open();
  // One journal file throughout (the fixture's starts a new one every 1 MiB).
  const std::string dir = dir_ + "/one-file";
  ASSERT_TRUE(PosixFileSystem()->CreateDirs(dir).ok());
  auto created = Journal::Create(&fs_, dir, /*next_lsn=*/1, /*file_bytes_target=*/64 << 20, nullptr);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  journal_ = std::move(created).value();
  const int at_open = fs_.preallocations();  // the new file's first 4 MiB of zeros
  const std::string bulk(300 << 10, 'b');       // a batch of one record: bulk
  const std::string small(100, 's');
  auto put = [&](const std::string& v, int i) {
    return journal_->AwaitSynced(
        journal_->Append(JournalOp::kPut, "k" + std::to_string(i), {AsBytes(v)}));
  };
  int i = 0;
  for (; i < 16; ++i) ASSERT_TRUE(put(bulk, i).ok());  // 4.8 MB: past the first 4 MiB
  EXPECT_EQ(fs_.preallocations(), at_open) << "bulk batches are not zero-filled ahead";
  ASSERT_TRUE(put(small, i++).ok());
  EXPECT_EQ(fs_.preallocations(), at_open) << "nor a small one right after a bulk one";
  ASSERT_TRUE(put(small, i++).ok());
  EXPECT_EQ(fs_.preallocations(), at_open + 1) << "small ones after a small one are";
  ASSERT_TRUE(put(small, i++).ok());
  EXPECT_EQ(fs_.preallocations(), at_open + 1) << "once per 4 MiB step";
  ASSERT_TRUE(put(bulk, i++).ok());  // over the zeros, then past them
  ASSERT_TRUE(put(small, i++).ok());
  // The file reads back as exactly the records appended, in order, with nothing after them.
  JournalScanner scanner(PosixFileSystem(), dir);
  int seen = 0;
  ASSERT_TRUE(scanner
                  .Scan([&](const ScannedRecord& r) {
                    EXPECT_EQ(r.record.lsn, uint64_t(seen) + 1);
                    EXPECT_TRUE(r.record.value_ok);
                    ++seen;
                    return Status::Ok();
                  })
                  .ok());
  EXPECT_EQ(seen, i);
}

// Every reading moves the clock on by kTick µs: a span timed once reads exactly kTick.
class TickingClock final : public Clock {
 public:
  static constexpr uint64_t kTick = 7;
  uint64_t NowMicros() override { return now_ += kTick; }
  uint64_t WallMicros() override { return NowMicros(); }
  void SleepMicros(uint64_t) override {}
  bool WaitFor(std::condition_variable&, std::unique_lock<std::mutex>&, uint64_t) override {
    return false;
  }

 private:
  std::atomic<uint64_t> now_{0};
};

TEST_F(JournalGroupCommitTest, StatsCountEachSyncTheRecordsItMadeDurableAndTimeSyncsAndZeroFills) {
  fs_.Open();
  const std::string dir = dir_ + "/stats";
  ASSERT_TRUE(PosixFileSystem()->CreateDirs(dir).ok());
  TickingClock clock;
  auto created =
      Journal::Create(&fs_, dir, /*next_lsn=*/1, /*file_bytes_target=*/64 << 20, nullptr, &clock);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  journal_ = std::move(created).value();
  const int fs_syncs = fs_.syncs(), fs_preallocations = fs_.preallocations();
  JournalCounters s = journal_->stats();
  EXPECT_EQ(s.syncs, 0u);
  EXPECT_EQ(s.preallocations, 1u) << "the new file's first zeros";
  EXPECT_EQ(s.preallocate_micros, TickingClock::kTick);
  for (int i = 0; i < 3; ++i) Append(i);
  ASSERT_TRUE(journal_->AwaitSynced(Append(3)).ok());
  s = journal_->stats();
  EXPECT_EQ(s.syncs, 1u);
  EXPECT_EQ(s.records_synced, 4u) << "one commit carried all four";
  EXPECT_EQ(s.sync_micros, TickingClock::kTick);
  // Records a write-behind wrote count when the sync that follows makes them durable.
  const std::string big(64 << 10, 'w');
  for (int i = 0; i < 2; ++i) {
    journal_->Append(JournalOp::kPut, "w" + std::to_string(i), {AsBytes(big)});
  }
  ASSERT_TRUE(journal_->WriteBehind(1).ok());
  EXPECT_EQ(journal_->stats().records_synced, 4u);
  ASSERT_TRUE(journal_->AwaitSynced(Append(4)).ok());
  s = journal_->stats();
  EXPECT_EQ(s.syncs, 2u);
  EXPECT_EQ(s.records_synced, 7u);
  EXPECT_EQ(s.sync_micros, 2 * TickingClock::kTick);
  // A small round that passes the first 4 MiB of zeros zero-fills the next step: counted too.
  const std::string small(48 << 10, 's');  // under a bulk batch
  for (int i = 5; fs_.preallocations() == fs_preallocations; ++i) {
    ASSERT_LT(i, 200) << "no zero-fill after 9 MB of small rounds";
    const uint64_t lsn = journal_->Append(JournalOp::kPut, "s" + std::to_string(i), {AsBytes(small)});
    ASSERT_TRUE(journal_->AwaitSynced(lsn).ok());
  }
  s = journal_->stats();
  EXPECT_EQ(s.preallocations, 2u);
  EXPECT_EQ(s.preallocate_micros, 2 * TickingClock::kTick);
  EXPECT_EQ(s.syncs, uint64_t(fs_.syncs() - fs_syncs));
  EXPECT_EQ(s.sync_micros, s.syncs * TickingClock::kTick);
}

TEST_F(JournalGroupCommitTest, CallbacksQueueBehindALeaderThatStaysAndRunOnItsThread) {
  std::atomic<uint64_t> applied{0};
  journal_->SetOnSynced([&] { applied = journal_->synced_lsn(); });
  const int kCallbacks = 6;
  std::vector<uint64_t> lsns(kCallbacks + 1), seen(kCallbacks + 1);
  std::vector<Status> results(kCallbacks + 1, Status::Internal("callback never ran"));
  std::vector<std::thread::id> ran_on(kCallbacks + 1);
  std::vector<Baton> done(kCallbacks + 1);
  auto callback = [&](int i) {
    return [&, i](Status s) {
      results[i] = s;
      seen[i] = applied.load();
      ran_on[i] = std::this_thread::get_id();
      done[i].Post();
    };
  };
  lsns[0] = Append(0);
  std::thread::id leader;
  std::thread first([&] {
    leader = std::this_thread::get_id();
    journal_->AwaitSyncedThen(lsns[0], callback(0));  // leads: its first sync is held
  });
  fs_.AwaitFirstSync();
  for (int i = 1; i <= kCallbacks; ++i) {
    lsns[i] = Append(i);
    journal_->AwaitSyncedThen(lsns[i], callback(i));  // returns at once: a leader is running
    EXPECT_FALSE(done[i].posted()) << "callback " << i << " ran before its record was synced";
  }
  // A blocking caller behind that leader is covered by its next round, not handed the lead.
  const uint64_t blocked_lsn = Append(100);
  Status blocked;
  std::thread waiter([&] { blocked = journal_->AwaitSynced(blocked_lsn); });
  fs_.Open();
  for (auto& d : done) d.Wait();
  first.join();
  waiter.join();
  EXPECT_TRUE(blocked.ok()) << blocked.ToString();
  for (int i = 0; i <= kCallbacks; ++i) {
    EXPECT_TRUE(results[i].ok()) << i << ": " << results[i].ToString();
    EXPECT_GE(seen[i], lsns[i]) << "callback " << i << " ran before the hook saw its record";
    EXPECT_EQ(ran_on[i], leader) << "callback " << i << " ran off the leader's thread";
  }
  EXPECT_EQ(fs_.syncs(), 2) << "one round for the first record, one for everything after it";
}

// Callbacks 0..n, each recording the thread it ran on and its place in the order they ran.
struct CallbackLog {
  explicit CallbackLog(int n) : ran_on(n + 1), place(n + 1), ran(n + 1) {}
  std::function<void(Status)> Callback(int i) {
    return [this, i](Status s) {
      EXPECT_TRUE(s.ok()) << s.ToString();
      ran_on[i] = std::this_thread::get_id();
      place[i] = next_place.fetch_add(1);
      ran[i].Post();
    };
  }
  void AwaitAll() {
    for (auto& r : ran) r.Wait();
  }
  std::vector<std::thread::id> ran_on;
  std::vector<int> place;
  std::vector<Baton> ran;
  std::atomic<int> next_place{0};
};

std::thread::id ThreadOf(Executor& executor) {
  std::thread::id id;
  executor.Submit([&] { id = std::this_thread::get_id(); });
  executor.Drain();
  return id;
}

// A caller leads round 1 (record 0; held in its sync while callbacks 1..n queue), round 2
// covers those n and is held in its sync while callback n+1 queues, round 3 covers that one.
// Returns the caller's thread once it returned.
std::thread::id ThreeRounds(Journal& journal, GatedFs& fs, CallbackLog& log, int n) {
  auto append = [&](int i) {
    const std::string v = "value " + std::to_string(i);
    return journal.Append(JournalOp::kPut, "k" + std::to_string(i), {AsBytes(v)});
  };
  std::thread::id caller_id;
  const uint64_t first = append(0);
  std::thread caller([&] {
    caller_id = std::this_thread::get_id();
    journal.AwaitSyncedThen(first, log.Callback(0));
  });
  fs.AwaitFirstSync();
  for (int i = 1; i <= n; ++i) journal.AwaitSyncedThen(append(i), log.Callback(i));
  fs.HoldSync(2);
  fs.Open();
  fs.AwaitHeldSync();
  journal.AwaitSyncedThen(append(n + 1), log.Callback(n + 1));
  fs.ReleaseSync();
  caller.join();
  return caller_id;
}

TEST_F(JournalGroupCommitTest, ACompletionExecutorRunsABigRoundsCallbacksWhileTheLeaderGoesOn) {
  auto executor = NewThreadPoolExecutor(1, "test-done");
  journal_->SetCompletionExecutor(executor.get());
  const std::thread::id done_thread = ThreadOf(*executor);
  const int n = Journal::kInlineCallbacksMax + 1;
  CallbackLog log(n + 1);
  const std::thread::id leader = ThreeRounds(*journal_, fs_, log, n);
  log.AwaitAll();
  EXPECT_EQ(log.ran_on[0], leader) << "a round of one callback took a thread hop";
  for (int i = 1; i <= n; ++i) {
    EXPECT_EQ(log.ran_on[i], done_thread) << "callback " << i << " of a big round";
    EXPECT_LT(log.place[i], log.place[n + 1]) << "round 3's callback overtook round 2's " << i;
  }
  executor.reset();
}

TEST_F(JournalGroupCommitTest, ALeaderNeverOvertakesCallbacksQueuedOnTheExecutor) {
  auto executor = NewThreadPoolExecutor(1, "test-done");
  journal_->SetCompletionExecutor(executor.get());
  Baton unblock;
  executor->Submit([&] { unblock.Wait(); });  // holds the executor's thread
  const int n = Journal::kInlineCallbacksMax + 1;
  CallbackLog log(n + 1);
  ThreeRounds(*journal_, fs_, log, n);
  // Round 3's one callback, which its leaving leader would run itself, waits behind round 2's.
  EXPECT_FALSE(log.ran[n + 1].posted()) << "round 3's callback ran while round 2's were queued";
  unblock.Post();
  log.AwaitAll();
  for (int i = 1; i <= n; ++i) EXPECT_LT(log.place[i], log.place[n + 1]) << i;
  executor.reset();
}

TEST_F(JournalGroupCommitTest, ALeaderRunsASmallRoundsCallbacksItselfBeforeItsNextSync) {
  auto executor = NewThreadPoolExecutor(1, "test-done");
  auto syncer = NewThreadPoolExecutor(1, "test-sync");
  journal_->SetCompletionExecutor(executor.get());
  journal_->SetSyncExecutor(syncer.get());
  const std::thread::id sync_thread = ThreadOf(*syncer);
  CallbackLog log(2);
  // The caller leads round 1 and hands the lead over; the sync thread leads round 2 and, since
  // callback 2 waits, round 3.
  const std::thread::id caller = ThreeRounds(*journal_, fs_, log, 1);
  log.AwaitAll();
  EXPECT_EQ(log.ran_on[0], caller) << "the caller's round took a thread hop";
  EXPECT_EQ(log.ran_on[1], sync_thread) << "the sync thread's small round took a thread hop";
  EXPECT_EQ(log.ran_on[2], sync_thread) << "a leaving leader ran its last round's elsewhere";
  EXPECT_LT(log.place[0], log.place[1]);
  journal_->AwaitIdle();
  syncer.reset();
  executor.reset();
}

TEST_F(JournalGroupCommitTest, WithASyncExecutorACallersThreadLeadsOneRoundAndHandsTheRestOver) {
  auto syncer = NewThreadPoolExecutor(1, "test-sync");
  journal_->SetSyncExecutor(syncer.get());
  std::thread::id caller;
  // The caller returns after its own round, though callbacks still waited behind it: had it
  // stayed, it would have run theirs too.
  std::vector<std::thread::id> ran_on = CallbackThreadsBehindAFirstCaller(3, &caller);
  EXPECT_EQ(ran_on[0], caller);
  for (size_t i = 1; i < ran_on.size(); ++i) EXPECT_NE(ran_on[i], caller) << i;
  journal_->AwaitIdle();
  syncer.reset();
}

// A server's event loop running a save (MustNotBlock) never waits out a sync: with nobody
// leading, the sync executor's thread leads the round from the start.
TEST_F(JournalGroupCommitTest, AThreadThatMustNotBlockLeadsNoRound) {
  auto syncer = NewThreadPoolExecutor(1, "test-sync");
  journal_->SetSyncExecutor(syncer.get());
  const std::thread::id sync_thread = ThreadOf(*syncer);
  Baton ran;
  std::thread::id ran_on;
  EXPECT_TRUE(ReturnsWithTheSyncHeld(Append(1), [&](Status s) {
    EXPECT_TRUE(s.ok()) << s.ToString();
    ran_on = std::this_thread::get_id();
    ran.Post();
  })) << "the call waited for the sync";
  ran.Wait();
  EXPECT_EQ(fs_.first_sync_thread(), sync_thread) << "the round was not the executor's";
  EXPECT_EQ(ran_on, sync_thread);
  journal_->AwaitIdle();
  syncer.reset();
}

// Nor does it wait behind a leader that leaves (a blocking caller): the executor's thread
// waits for it, and the callback runs once a round covers its record.
TEST_F(JournalGroupCommitTest, AThreadThatMustNotBlockDoesNotWaitBehindABlockingLeader) {
  auto syncer = NewThreadPoolExecutor(1, "test-sync");
  journal_->SetSyncExecutor(syncer.get());
  const uint64_t first = Append(0);
  Status leader_status = Status::Internal("not synced");
  std::thread leader([&] { leader_status = journal_->AwaitSynced(first); });
  fs_.AwaitFirstSync();  // the blocking caller leads, held at the gate
  Baton ran;
  EXPECT_TRUE(ReturnsWithTheSyncHeld(Append(1), [&](Status s) {
    EXPECT_TRUE(s.ok()) << s.ToString();
    ran.Post();
  })) << "the call waited behind the blocking leader";
  leader.join();
  EXPECT_TRUE(leader_status.ok()) << leader_status.ToString();
  ran.Wait();
  journal_->AwaitIdle();
  syncer.reset();
}

TEST_F(JournalGroupCommitTest, AFailedSyncReachesEveryCallbackAndSticks) {
  fs_.FailSyncsAfter(1);
  const int kCallbacks = 4;
  std::vector<Status> results(kCallbacks + 1, Status::Internal("callback never ran"));
  std::vector<Baton> done(kCallbacks + 1);
  auto callback = [&](int i) {
    return [&, i](Status s) {
      results[i] = s;
      done[i].Post();
    };
  };
  const uint64_t first_lsn = Append(0);
  std::thread first([&] { journal_->AwaitSyncedThen(first_lsn, callback(0)); });
  fs_.AwaitFirstSync();
  for (int i = 1; i <= kCallbacks; ++i) journal_->AwaitSyncedThen(Append(i), callback(i));
  fs_.Open();
  for (auto& d : done) d.Wait();
  first.join();
  EXPECT_TRUE(results[0].ok()) << results[0].ToString();
  for (int i = 1; i <= kCallbacks; ++i) {
    EXPECT_EQ(results[i].code(), Code::kUnavailable) << i << ": " << results[i].ToString();
  }
  // Sticky: the next callback gets the error at once, on the caller's thread.
  Status later = Status::Internal("callback never ran");
  journal_->AwaitSyncedThen(Append(99), [&](Status s) { later = s; });
  EXPECT_EQ(later.code(), Code::kUnavailable) << later.ToString();
}

TEST_F(JournalGroupCommitTest, BehindABlockingLeaderACallbackWaitsLikeABlockingCaller) {
  const uint64_t first_lsn = Append(0);
  std::thread first([&] { EXPECT_TRUE(journal_->AwaitSynced(first_lsn).ok()); });
  fs_.AwaitFirstSync();
  const uint64_t lsn = Append(1);
  std::atomic<bool> returned{false};
  std::thread::id ran_on;
  Status result = Status::Internal("callback never ran");
  std::thread caller([&] {
    journal_->AwaitSyncedThen(lsn, [&](Status s) {
      result = s;
      ran_on = std::this_thread::get_id();
    });
    returned = true;
  });
  // Give the caller time to queue (if it is late the blocking leader has left, and it leads
  // itself: the assertions below hold either way).
  RealClock()->SleepMicros(20000);
  EXPECT_FALSE(returned.load()) << "returned while a leader that leaves held the lead";
  const std::thread::id caller_id = caller.get_id();
  fs_.Open();
  first.join();
  caller.join();
  EXPECT_TRUE(result.ok()) << result.ToString();
  EXPECT_EQ(ran_on, caller_id) << "the callback runs on its caller's thread here";
}

TEST_F(JournalGroupCommitTest, ManyThreadsMixingCallbacksAndWaitsAllSeeTheirRecordSynced) {
  fs_.Open();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const uint64_t lsn = Append(t * 1000 + i);
        if (t % 2 == 0) {
          if (!journal_->AwaitSynced(lsn).ok() || journal_->synced_lsn() < lsn) failures++;
          continue;
        }
        Baton done;
        journal_->AwaitSyncedThen(lsn, [&](Status s) {
          if (!s.ok() || journal_->synced_lsn() < lsn) failures++;
          done.Post();
        });
        done.Wait();  // a callback never run hangs the test
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(journal_->synced_lsn(), 1600u);
}

TEST_F(JournalGroupCommitTest, ACallbackThatWaitsForItsJournalIsCaught) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  fs_.Open();
  EXPECT_DEATH(
      {
        const uint64_t lsn = Append(0);
        journal_->AwaitSyncedThen(lsn, [&](Status) {
          // This child (a re-run of the test binary) dies before its TearDown: it removes its
          // own directory first (the open journal does not need the names).
          (void)PosixFileSystem()->DeleteTree(dir_);
          (void)journal_->AwaitSynced(lsn);
        });
      },
      "waits for the same journal");
}

TEST_F(JournalGroupCommitTest, AHeldValueIsWrittenAsACopyWouldBeAndReleasedAfterItsRound) {
  // A large part with an owner is held by reference until its round is written (Append); the
  // file gets the same bytes as from a copy, and the owner is let go once the round is through.
  fs_.Open();
  auto big = std::make_shared<std::vector<uint8_t>>(Journal::kValueBytesHeldMin + 100);
  for (size_t i = 0; i < big->size(); ++i) (*big)[i] = static_cast<uint8_t>(i * 7);
  const std::string prefix = "prefix";
  const std::vector<ByteView> value{AsBytes(prefix), ByteView(*big)};
  journal_->Append(JournalOp::kPut, "copied", value);
  const uint64_t held = journal_->Append(JournalOp::kPut, "held", value, nullptr,
                                         /*value_damaged=*/false, big);
  journal_->Append(JournalOp::kPut, "after", {AsBytes(prefix)});
  EXPECT_GT(big.use_count(), 1) << "the batch holds the value, not a copy";
  ASSERT_TRUE(journal_->AwaitSynced(held + 1).ok());
  EXPECT_EQ(big.use_count(), 1) << "the written round still holds the value";
  std::map<std::string, std::string> values;
  JournalScanner scanner(PosixFileSystem(), dir_);
  ASSERT_TRUE(scanner
                  .Scan([&](const ScannedRecord& r) {
                    EXPECT_TRUE(r.record.value_ok) << r.record.key;
                    values[std::string(r.record.key)] =
                        std::string(reinterpret_cast<const char*>(r.record.value.data()),
                                    r.record.value.size());
                    return Status::Ok();
                  })
                  .ok());
  ASSERT_EQ(values.count("held"), 1u);
  EXPECT_EQ(values["held"], values["copied"]);
  EXPECT_EQ(values["held"].size(), prefix.size() + big->size());
  EXPECT_EQ(values["after"], prefix) << "the record after a held value starts where it ends";
}

}  // namespace
}  // namespace wombatkv
