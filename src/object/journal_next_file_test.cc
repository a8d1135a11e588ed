// The journal's next file made ahead (Journal::SetNextFileExecutor): the round that retires a
// file renames the one made ahead instead of creating and zero-filling one on its callers' path;
// without one ready (or when the rename fails) it makes the file itself; a file left under the
// next file's name goes at open, and one put there later is replaced; a journal destroyed leaves
// none behind; and the records read back in order across the files either way.
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "env/manual_executor.h"
#include "object/journal.h"
#include "object/journal_scan.h"
#include "wombatkv/env.h"

namespace wombatkv {
namespace {

constexpr uint64_t kFileBytes = 64 << 10;  // a new file every 64 KiB

// Append files that cannot be renamed (AppendFile's default Rename).
class NoRenameFs final : public FileSystemWrapper {
 public:
  using FileSystemWrapper::FileSystemWrapper;
  Result<std::unique_ptr<AppendFile>> NewAppendFile(const std::string& path) override {
    WMBT_ASSIGN_OR_RETURN(auto inner, target()->NewAppendFile(path));
    return std::unique_ptr<AppendFile>(new Plain(std::move(inner)));
  }

 private:
  class Plain final : public AppendFile {
   public:
    explicit Plain(std::unique_ptr<AppendFile> inner) : inner_(std::move(inner)) {}
    Status Append(const std::vector<ByteView>& parts) override { return inner_->Append(parts); }
    Status Sync() override { return inner_->Sync(); }
    Status Preallocate(uint64_t bytes) override { return inner_->Preallocate(bytes); }

   private:
    std::unique_ptr<AppendFile> inner_;
  };
};

class JournalNextFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "wombatkv_next_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_TRUE(fs()->DeleteTree(dir_).ok());
    ASSERT_TRUE(fs()->CreateDirs(dir_).ok());
  }
  void TearDown() override {
    executor_.Drain();  // the journal's contract: every task runs before it goes
    journal_.reset();
    EXPECT_TRUE(fs()->DeleteTree(dir_).ok());
  }

  static FileSystem* fs() { return PosixFileSystem(); }
  std::string next_path() const { return dir_ + "/" + std::string(kJournalNextFileName); }

  void Open(FileSystem* through) {
    auto j = Journal::Create(through, dir_, /*next_lsn=*/1, kFileBytes, nullptr);
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    journal_ = std::move(j).value();
    journal_->SetNextFileExecutor(&executor_);
  }

  // Appends and syncs one 16 KiB record; with `run_tasks`, then runs what the journal queued.
  void AppendSynced(bool run_tasks) {
    const std::string value(16 << 10, 'v');
    const std::string key = "k" + std::to_string(++appended_);
    ASSERT_TRUE(
        journal_->AwaitSynced(journal_->Append(JournalOp::kPut, key, {AsBytes(value)})).ok());
    if (run_tasks) executor_.Drain();
  }

  // Appends records until the journal has begun a new file.
  void FillOneFile(bool run_tasks) {
    const uint64_t first = journal_->file_first_lsn();
    while (journal_->file_first_lsn() == first) {
      ASSERT_NO_FATAL_FAILURE(AppendSynced(run_tasks));
      ASSERT_LT(appended_, 100) << "no new journal file after 1.6 MB";
    }
  }

  uint64_t zero_fills() const { return journal_->stats().preallocations; }

  // Every record appended, in order, read back across the journal files.
  void ExpectEveryRecordReadsBack() {
    JournalScanner scanner(fs(), dir_);
    int seen = 0;
    ASSERT_TRUE(scanner
                    .Scan([&](const ScannedRecord& r) {
                      EXPECT_EQ(r.record.lsn, uint64_t(seen) + 1);
                      EXPECT_EQ(r.record.key, "k" + std::to_string(seen + 1));
                      EXPECT_TRUE(r.record.value_ok);
                      ++seen;
                      return Status::Ok();
                    })
                    .ok());
    EXPECT_EQ(seen, appended_);
  }

  std::string dir_;
  NoRenameFs no_rename_{PosixFileSystem()};
  testing::ManualExecutor executor_;
  std::unique_ptr<Journal> journal_;
  int appended_ = 0;
};

TEST_F(JournalNextFileTest, ARetiringRoundRenamesTheFileMadeAheadAndMakesItOnlyWhenNoneIsReady) {
  Open(fs());
  EXPECT_EQ(zero_fills(), 1u) << "the first file's zeros, on Create";
  AppendSynced(false);  // 16 KiB of 64
  EXPECT_EQ(executor_.queued(), 0u) << "nothing is made ahead before the file is half full";
  AppendSynced(false);  // past half
  ASSERT_EQ(executor_.queued(), 1u) << "the next file is asked for once the file is half full";
  executor_.Drain();
  auto made = fs()->Stat(next_path());
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ(made->size, 4u << 20) << "made ahead with its first step of zeros";

  FillOneFile(false);
  EXPECT_EQ(zero_fills(), 1u)
      << "the retiring round zero-filled no file: it renamed the one made ahead";
  EXPECT_TRUE(fs()->Stat(next_path()).status().IsNotFound());
  EXPECT_TRUE(fs()->Stat(journal_->file_path()).ok());

  FillOneFile(false);  // the task asked for at half never ran: the round makes the file itself
  EXPECT_EQ(zero_fills(), 2u);
  FillOneFile(false);
  EXPECT_EQ(zero_fills(), 3u);
  EXPECT_EQ(executor_.queued(), 1u) << "one asked for, not one per file";
  executor_.Drain();
  FillOneFile(true);
  EXPECT_EQ(zero_fills(), 3u);
  ExpectEveryRecordReadsBack();

  AppendSynced(true);
  AppendSynced(true);
  ASSERT_TRUE(fs()->Stat(next_path()).ok());
  journal_.reset();
  EXPECT_TRUE(fs()->Stat(next_path()).status().IsNotFound()) << "a closed journal leaves no zeros";
}

// Each open begins a journal file, zero-filled ahead of its records; a closed journal gives those
// zeros back (they stayed: 20 short sessions of a store left 81 MB of files — a review, session
// 60) and its records still read back.
TEST_F(JournalNextFileTest, AClosedJournalLeavesNoZerosPastItsRecords) {
  Open(fs());
  AppendSynced(true);
  AppendSynced(true);
  const std::string path = dir_ + "/" + JournalFileName(1);
  auto open_size = fs()->Stat(path);
  ASSERT_TRUE(open_size.ok()) << open_size.status().ToString();
  EXPECT_GE(open_size->size, 4u << 20) << "zero-filled ahead while open";
  journal_.reset();
  auto closed = fs()->Stat(path);
  ASSERT_TRUE(closed.ok()) << closed.status().ToString();
  EXPECT_GT(closed->size, 2u * (16 << 10));
  EXPECT_LT(closed->size, 2u * (16 << 10) + 4096) << "the zeros stayed";
  ExpectEveryRecordReadsBack();
}

TEST_F(JournalNextFileTest, AFileLeftUnderTheNextNameGoesAtOpenAndIsNeverRead) {
  ASSERT_TRUE(fs()->WriteFileAtomic(next_path(), {AsBytes(std::string(1000, 'x'))}, true).ok());
  Open(fs());
  EXPECT_TRUE(fs()->Stat(next_path()).status().IsNotFound());
  ASSERT_TRUE(fs()->WriteFileAtomic(next_path(), {AsBytes(std::string(1000, 'y'))}, true).ok());
  AppendSynced(true);
  AppendSynced(true);
  auto bytes = fs()->ReadFile(next_path(), 0, 8 << 20);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  ASSERT_EQ((*bytes)->size(), 4u << 20);
  EXPECT_EQ(std::string(AsChars((*bytes)->view())), std::string(4u << 20, '\0'));
  FillOneFile(true);
  EXPECT_EQ(zero_fills(), 1u) << "the file made ahead was used";
  FillOneFile(true);
  ExpectEveryRecordReadsBack();
}

TEST_F(JournalNextFileTest, AFileThatCannotBeRenamedIsMadeByTheRetiringRoundAndNoneAheadAnyMore) {
  Open(&no_rename_);
  FillOneFile(true);
  EXPECT_EQ(zero_fills(), 2u) << "the rename failed: the round made the file";
  EXPECT_TRUE(fs()->Stat(journal_->file_path()).ok());
  EXPECT_TRUE(fs()->Stat(next_path()).status().IsNotFound());
  FillOneFile(true);
  EXPECT_EQ(zero_fills(), 3u);
  EXPECT_EQ(executor_.queued(), 0u);
  EXPECT_TRUE(fs()->Stat(next_path()).status().IsNotFound()) << "none made ahead any more";
  ExpectEveryRecordReadsBack();
}

}  // namespace
}  // namespace wombatkv
