// ReplayJournal on hand-made journal files (src/object/journal.h, journal_record.h): the cases a
// crash test does not reach — a gap between journal files, and keys later used as directories.
#include "object/journal_replay.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "object/journal.h"
#include "object/journal_record.h"
#include "wombatkv/env.h"
#include "wombatkv/object_store.h"

namespace wombatkv {
namespace {

class JournalReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = ::testing::TempDir() + "wombatkv_replay_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_TRUE(fs_->DeleteTree(root_).ok());
    ASSERT_TRUE(fs_->CreateDirs(root_).ok());
  }
  void TearDown() override { EXPECT_TRUE(fs_->DeleteTree(root_).ok()); }

  struct Rec {
    JournalOp op;
    std::string key, value;
  };
  // One journal file holding `recs` with LSNs first, first+1, ...
  void WriteJournal(uint64_t first, const std::vector<Rec>& recs) {
    std::string bytes;
    uint64_t lsn = first;
    for (const Rec& r : recs) {
      std::vector<ByteView> value;
      if (!r.value.empty()) value.push_back(AsBytes(r.value));
      EncodeJournalRecord(lsn++, r.op, r.key, value, bytes);
    }
    ASSERT_TRUE(fs_->WriteFileAtomic(root_ + "/" + JournalFileName(first), {AsBytes(bytes)},
                                     /*sync=*/false)
                    .ok());
  }
  std::string Read(const std::string& rel) {
    auto r = fs_->ReadFile(root_ + "/" + rel, 0, kToEnd);
    return r.ok() ? std::string(AsChars((*r)->view())) : "<" + r.status().ToString() + ">";
  }

  FileSystem* fs_ = PosixFileSystem();
  std::string root_;
};

TEST_F(JournalReplayTest, ContiguousFilesAreReplayedInOrderLastRecordWins) {
  WriteJournal(1, {{JournalOp::kPut, "h/a", "v1"}, {JournalOp::kPut, "b/x", "blob"}});
  WriteJournal(3, {{JournalOp::kPut, "h/a", "v2"}, {JournalOp::kDelete, "b/x", ""}});
  auto r = ReplayJournal(fs_, root_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->last_lsn, 4u);
  EXPECT_EQ(Read("h/a"), "v2");
  EXPECT_FALSE(fs_->Stat(root_ + "/b/x").ok());
}

TEST_F(JournalReplayTest, AGapBetweenJournalFilesIsCorruptionNotASilentRollback) {
  // LSN 3 is missing: the first file lost synced records (or a newer file was retired before an
  // older one). Replaying 1..2 and stopping would drop "v3"; replaying past it could apply old
  // versions over newer ones. Both are refused, with what to do.
  WriteJournal(1, {{JournalOp::kPut, "h/a", "v1"}, {JournalOp::kPut, "h/a", "v2"}});
  WriteJournal(4, {{JournalOp::kPut, "h/b", "v4"}});
  auto r = ReplayJournal(fs_, root_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kCorruption);
  EXPECT_NE(r.status().message().find("LSN 2"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("move the .~journal-* files"), std::string::npos);
  EXPECT_EQ(Read("h/a").substr(0, 1), "<") << "nothing is applied from a damaged journal";
}

TEST_F(JournalReplayTest, AKeyLaterUsedAsADirectoryIsLeftToThatDirectory) {
  // put a, delete a, put a/b, then a crash: the last record of "a" (a delete) meets a directory.
  WriteJournal(1, {{JournalOp::kPut, "a", "old"},
                   {JournalOp::kDelete, "a", ""},
                   {JournalOp::kPut, "a/b", "child"}});
  ASSERT_TRUE(fs_->CreateDirs(root_ + "/a").ok());
  ASSERT_TRUE(fs_->WriteFileAtomic(root_ + "/a/b", {AsBytes("child")}, false).ok());
  auto r = ReplayJournal(fs_, root_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Read("a/b"), "child");
}

}  // namespace
}  // namespace wombatkv
