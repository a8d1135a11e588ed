// A test fixture for hand-made journal files (journal.h, journal_record.h) in a fresh directory,
// replayed with ReplayJournal: journal_replay_test.cc, packed_snapshot_test.cc.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "object/journal.h"
#include "object/journal_record.h"
#include "object/journal_replay.h"
#include "wombatkv/env.h"
#include "wombatkv/object_store.h"

namespace wombatkv {

class JournalFilesTest : public ::testing::Test {
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
    bool damaged = false;  // written as compaction copies a damaged record (EncodeJournalRecord)
  };
  // One journal file holding `recs` with LSNs first, first+1, ...; with `marks`, each record a
  // batch of its own, after a sync mark (as the journal writes them).
  void WriteJournal(uint64_t first, const std::vector<Rec>& recs, bool marks = true) {
    std::string bytes;
    uint64_t lsn = first;
    for (const Rec& r : recs) {
      if (marks) EncodeSyncMark(lsn, lsn - 1, bytes);
      std::vector<ByteView> value;
      if (!r.value.empty()) value.push_back(AsBytes(r.value));
      EncodeJournalRecord(lsn++, r.op, r.key, value, bytes, r.damaged);
    }
    ASSERT_TRUE(fs_->WriteFileAtomic(root_ + "/" + JournalFileName(first), {AsBytes(bytes)},
                                     /*sync=*/false)
                    .ok());
  }
  Result<JournalReplayResult> Replay(ReplayOptions options = {}) {
    packed_.Clear();
    return ReplayJournal(fs_, root_, options, &packed_);
  }
  // A kPutPacked value: the prefix, then the object's bytes.
  static std::string Packed(uint64_t etag_id, std::string_view bytes) {
    auto prefix = EncodePackedPrefix(etag_id, 1000 + etag_id);
    return std::string(prefix.begin(), prefix.end()) + std::string(bytes);
  }
  // Flips one byte of journal file `first` at `offset`.
  void Flip(uint64_t first, uint64_t offset) {
    const std::string path = root_ + "/" + JournalFileName(first);
    auto bytes = fs_->ReadFile(path, 0, kToEnd);
    ASSERT_TRUE(bytes.ok());
    std::string b(AsChars((*bytes)->view()));
    ASSERT_LT(offset, b.size());
    b[offset] = static_cast<char>(b[offset] ^ 0x5a);
    ASSERT_TRUE(fs_->WriteFileAtomic(path, {AsBytes(b)}, false).ok());
  }
  std::string ReadPackedObject(std::string_view key) {
    const PackedEntry* e = packed_.Find(key);
    if (!e) return "<absent>";
    auto got = ReadPacked(fs_, root_ + "/" + JournalFileName(e->segment), key, *e, 0, kToEnd);
    return got.ok() ? std::string(AsChars(got->bytes->view())) : "<" + got.status().ToString() + ">";
  }

  std::string Read(const std::string& rel) {
    auto r = fs_->ReadFile(root_ + "/" + rel, 0, kToEnd);
    return r.ok() ? std::string(AsChars((*r)->view())) : "<" + r.status().ToString() + ">";
  }

  static constexpr uint64_t kMarkBytes = kJournalRecordHeaderBytes + kSyncMarkKey.size() + 8;
  // A packed record of a 3-byte key and a 4-byte object.
  static constexpr uint64_t kRecBytes = kJournalRecordHeaderBytes + 3 + kPackedValuePrefixBytes + 4;

  FileSystem* fs_ = PosixFileSystem();
  std::string root_;
  PackedIndex packed_;
};

}  // namespace wombatkv
