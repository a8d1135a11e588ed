// ReplayJournal on hand-made journal files (src/object/journal.h, journal_record.h): the cases a
// crash test does not reach — a gap between journal files, and keys later used as directories.
#include "object/journal_replay.h"

#include <gtest/gtest.h>

#include "base/crc32c.h"
#include "object/journal_files_for_test.h"

namespace wombatkv {
namespace {

using JournalReplayTest = JournalFilesTest;

TEST_F(JournalReplayTest, ContiguousFilesAreReplayedInOrderLastRecordWins) {
  WriteJournal(1, {{JournalOp::kPut, "h/a", "v1"}, {JournalOp::kPut, "b/x", "blob"}});
  WriteJournal(3, {{JournalOp::kPut, "h/a", "v2"}, {JournalOp::kDelete, "b/x", ""}});
  auto r = Replay();
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
  auto r = Replay();
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
  auto r = Replay();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Read("a/b"), "child");
}

TEST_F(JournalReplayTest, PackedObjectsAreIndexedAndTheirStaleFilesRemoved) {
  // "h/a" had a file (a larger earlier version); its packed version, after the checkpoint,
  // removes it. "b/x" was packed, then deleted.
  ASSERT_TRUE(fs_->CreateDirs(root_ + "/h").ok());
  ASSERT_TRUE(fs_->WriteFileAtomic(root_ + "/h/a", {AsBytes("file version")}, false).ok());
  WriteJournal(1, {{JournalOp::kPutPacked, "b/x", Packed(1, "blob")},
                   {JournalOp::kPutPacked, "h/a", Packed(2, "packed version")},
                   {JournalOp::kDelete, "b/x", ""},
                   {JournalOp::kPutPacked, "h/c", Packed(4, "c")}});
  auto r = Replay();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->last_lsn, 4u);
  EXPECT_EQ(r->files_deleted, 1u);
  EXPECT_FALSE(fs_->Stat(root_ + "/h/a").ok()) << "the file of the version before stays";
  EXPECT_EQ(ReadPackedObject("h/a"), "packed version");
  EXPECT_EQ(ReadPackedObject("h/c"), "c");
  EXPECT_EQ(ReadPackedObject("b/x"), "<absent>");
  ASSERT_NE(packed_.Find("h/a"), nullptr);
  EXPECT_EQ(packed_.Find("h/a")->etag_id, 2u);
  EXPECT_EQ(packed_.Find("h/a")->modified_us, 1002u);
  EXPECT_EQ(packed_.LiveRecords(1), 2u);
}

TEST_F(JournalReplayTest, RecordsUpToTheCheckpointChangeNoFile) {
  // Applied and synced before the crash: a file changed since (here: deleted by hand) is not
  // brought back, nor re-checked; the packed objects are indexed all the same.
  WriteJournal(1, {{JournalOp::kPut, "h/a", "v1"}, {JournalOp::kPutPacked, "h/p", Packed(2, "p")}});
  ReplayOptions options;
  options.applied_through = 2;
  auto r = Replay(options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->files_written, 0u);
  EXPECT_EQ(Read("h/a").substr(0, 1), "<");
  EXPECT_EQ(ReadPackedObject("h/p"), "p");
}

TEST_F(JournalReplayTest, ADamagedValueInsideTheJournalKeepsTheRecordsAfterItAndIsReported) {
  WriteJournal(1, {{JournalOp::kPutPacked, "h/a", Packed(1, "aaaa")},
                   {JournalOp::kPutPacked, "h/b", Packed(2, "bbbb")},
                   {JournalOp::kPutPacked, "h/c", Packed(3, "cccc")}});
  // The last byte of h/a's value: the framing is intact, the value fails its checksum. The sync
  // mark of the next batch says h/a was durable: damage.
  Flip(1, kMarkBytes + kRecBytes - 1);
  auto r = Replay();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->last_lsn, 3u) << "the records after the damage are found";
  EXPECT_EQ(r->damaged_records, 1u);
  EXPECT_EQ(ReadPackedObject("h/b"), "bbbb");
  EXPECT_NE(ReadPackedObject("h/a").find("do not match their checksum"), std::string::npos)
      << ReadPackedObject("h/a");
}

TEST_F(JournalReplayTest, ABadValueThatNoLaterSyncMarkCoversIsATornBatch) {
  // One batch, never synced (no later mark): its pages reached the disk in any order, so a bad
  // value is a hole, not damage, however sound the records after it look. The journal ends
  // before it; the versions before it stand.
  WriteJournal(1, {{JournalOp::kPutPacked, "h/a", Packed(1, "aaaa")}});
  WriteJournal(2, {{JournalOp::kPutPacked, "h/a", Packed(2, "AAAA")},
                   {JournalOp::kPutPacked, "h/b", Packed(3, "bbbb")}},
               /*marks=*/false);
  Flip(2, kRecBytes - 1);
  auto r = Replay();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->last_lsn, 1u);
  EXPECT_EQ(r->damaged_records, 0u);
  EXPECT_EQ(ReadPackedObject("h/a"), "aaaa");
  EXPECT_EQ(ReadPackedObject("h/b"), "<absent>");
}

TEST_F(JournalReplayTest, ACopyOfADamagedRecordIsDamageEvenWithNoLaterSyncMark) {
  // Compaction copied a damaged packed record forward (its value checksum written inverted, so
  // the copy vouches for nothing), synced it and deleted the file it came from; then the process
  // died before any later batch. Read as the torn end of a batch, the copy would end the journal
  // and take the records after it, acknowledged and now held nowhere else, with it.
  WriteJournal(1,
               {{JournalOp::kPutPacked, "h/a", Packed(1, "aaaa"), /*damaged=*/true},
                {JournalOp::kPutPacked, "h/b", Packed(2, "bbbb")}},
               /*marks=*/false);
  auto r = Replay();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->last_lsn, 2u);
  EXPECT_EQ(r->damaged_records, 1u);
  EXPECT_NE(ReadPackedObject("h/a").find("do not match their checksum"), std::string::npos)
      << ReadPackedObject("h/a");
  EXPECT_EQ(ReadPackedObject("h/b"), "bbbb");
}

TEST_F(JournalReplayTest, ATornLastRecordEndsTheJournalAndADamagedLastRecordDoesNot) {
  // File 1's last record has a bad value. File 2 starts at its LSN + 1: it was whole when the
  // file was retired, so it is damage, kept (and reported on read).
  WriteJournal(1, {{JournalOp::kPutPacked, "h/a", Packed(1, "aaaa")},
                   {JournalOp::kPutPacked, "h/b", Packed(2, "bbbb")}});
  WriteJournal(3, {{JournalOp::kPutPacked, "h/c", Packed(3, "cccc")}});
  Flip(1, 2 * (kMarkBytes + kRecBytes) - 1);
  auto r = Replay();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->last_lsn, 3u);
  EXPECT_EQ(r->damaged_records, 1u);
  EXPECT_NE(ReadPackedObject("h/b").find("do not match their checksum"), std::string::npos);

  // The same bad value as the newest record (nothing after it): a write a crash cut short,
  // never acknowledged. The journal ends before it.
  ASSERT_TRUE(fs_->DeleteFile(root_ + "/" + JournalFileName(3)).ok());
  r = Replay();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->last_lsn, 1u);
  EXPECT_EQ(ReadPackedObject("h/b"), "<absent>");
  EXPECT_EQ(ReadPackedObject("h/a"), "aaaa");
}

TEST_F(JournalReplayTest, RecordsOfTheFirstFormatAreStillReplayed) {
  // Format 0 (before packed objects): a 20-byte header, one checksum over the whole record,
  // byte 13 zero. A journal a crash left behind in that format must not be lost.
  std::string rec(20, '\0');
  const std::string key = "h/old", value = "v0";
  rec[4] = 1;  // lsn 1
  rec[12] = static_cast<char>(JournalOp::kPut);
  rec[14] = static_cast<char>(key.size());
  rec[16] = static_cast<char>(value.size());
  rec += key + value;
  const uint32_t crc = Crc32c(reinterpret_cast<const uint8_t*>(rec.data() + 4), rec.size() - 4);
  for (int i = 0; i < 4; ++i) rec[i] = static_cast<char>(crc >> (8 * i));
  ASSERT_TRUE(
      fs_->WriteFileAtomic(root_ + "/" + JournalFileName(1), {AsBytes(rec)}, false).ok());
  auto r = Replay();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->last_lsn, 1u);
  EXPECT_EQ(Read("h/old"), "v0");
}

}  // namespace
}  // namespace wombatkv
