// The packed-index snapshot (packed_snapshot.h): its encoding; a replay that starts from it
// (journal_replay.h) builds the index a replay of every file builds while reading only the files
// after it, and sets it aside whenever it disagrees with the journal; and the journaled store
// keeps one that its next open can use.
#include "object/packed_snapshot.h"

#include <map>
#include <mutex>
#include <random>
#include <tuple>

#include "base/crc32c.h"
#include "object/journal_files_for_test.h"
#include "object/packed_view.h"

namespace wombatkv {
namespace {

// The bytes read from each file, by name.
class ReadCountingFs final : public FileSystemWrapper {
 public:
  using FileSystemWrapper::FileSystemWrapper;
  Result<std::shared_ptr<Buffer>> ReadFile(const std::string& path, uint64_t offset,
                                           uint64_t length, FileInfo* info) override {
    auto r = FileSystemWrapper::ReadFile(path, offset, length, info);
    std::lock_guard<std::mutex> g(mu_);
    read_[path.substr(path.find_last_of('/') + 1)] += r.ok() ? (*r)->size() : 0;
    return r;
  }
  std::map<std::string, uint64_t> TakeReads() {
    std::lock_guard<std::mutex> g(mu_);
    return std::exchange(read_, {});
  }

 private:
  std::mutex mu_;
  std::map<std::string, uint64_t> read_;
};

using Entries = std::vector<std::tuple<std::string, uint64_t, uint64_t, uint64_t, uint32_t,
                                       uint32_t, uint64_t, uint64_t>>;

Entries EntriesOf(const PackedIndex& index) {
  Entries out;
  index.ForEach([&](std::string_view key, const PackedEntry& e) {
    out.emplace_back(key, e.segment, e.offset, e.lsn, e.record_bytes, e.size, e.etag_id,
                     e.modified_us);
  });
  return out;
}

// Every entry of a view, by the keys it lists.
Entries EntriesOf(const PackedView& view) {
  std::vector<ListEntry> listed;
  bool more = false;
  view.ListInto("", /*group=*/false, "", 1u << 20, &listed, &more);
  PackedIndex index;
  for (const ListEntry& l : listed) {
    PackedEntry e;
    if (view.Find(l.name, &e)) index.Set(l.name, e);
  }
  return EntriesOf(index);
}

class PackedSnapshotTest : public JournalFilesTest {
 protected:
  PackedSnapshotTest() { fs_ = &counting_; }

  // Writes a snapshot through `through` of the index a full replay builds from the files there
  // now (which may hold records after `through`: applied after that checkpoint).
  void TakeSnapshot(uint64_t through) {
    ReplayOptions options;
    options.use_snapshot = false;
    auto r = Replay(options);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    PackedSnapshotHeader header;
    header.through_lsn = through;
    header.synced_lsn = r->last_lsn;
    for (const JournalSegment& s : r->segments) {
      if (s.first_lsn <= through) header.file_bytes[s.first_lsn] = s.bytes;
    }
    const std::string bytes = EncodePackedSnapshot(header, packed_);
    ASSERT_TRUE(fs_->WriteFileAtomic(SnapshotPath(), {AsBytes(bytes)}, false).ok());
  }
  std::string SnapshotPath() const { return root_ + "/" + std::string(kPackedSnapshotName); }

  // Replays with the snapshot and without; expects the same index and LSN, and returns the
  // first result (and in *reads the bytes it read per file).
  JournalReplayResult ReplayBothWays(uint64_t applied_through,
                                     std::map<std::string, uint64_t>* reads = nullptr) {
    ReplayOptions options;
    options.applied_through = applied_through;
    counting_.TakeReads();
    auto with = Replay(options);
    EXPECT_TRUE(with.ok()) << with.status().ToString();
    if (reads) *reads = counting_.TakeReads();
    const Entries from_snapshot = EntriesOf(packed_);
    // Another process's view, told the same checkpoint, lists the same objects.
    const std::string marker = std::to_string(applied_through) + "\n";
    EXPECT_TRUE(fs_->WriteFileAtomic(root_ + "/" + std::string(kJournalCheckpointMarker),
                                     {AsBytes(marker)}, false)
                    .ok());
    PackedView view(fs_, root_);
    EXPECT_TRUE(view.Refresh().ok());
    options.use_snapshot = false;
    auto without = Replay(options);
    EXPECT_TRUE(without.ok()) << without.status().ToString();
    EXPECT_EQ(from_snapshot, EntriesOf(packed_));
    EXPECT_EQ(EntriesOf(view), EntriesOf(packed_));
    if (!with.ok() || !without.ok()) return {};
    EXPECT_EQ(with->last_lsn, without->last_lsn);
    return *with;
  }

  ReadCountingFs counting_{PosixFileSystem()};
};

TEST_F(PackedSnapshotTest, EveryFieldRoundTripsAndAnyDamagedOrCutByteIsCorruption) {
  PackedIndex index;
  index.Set("blobs/a", PackedEntry{1, 40, 2, 100, 60, 7, 1000});
  index.Set("heads/b", PackedEntry{5, 0, 5, 90, 50, 3, 1001});
  PackedSnapshotHeader header;
  header.through_lsn = 9;
  header.synced_lsn = 12;
  header.file_bytes = {{1, 400}, {5, 300}};
  const std::string bytes = EncodePackedSnapshot(header, index);

  PackedIndex back;
  auto decoded = DecodePackedSnapshot(AsBytes(bytes), &back);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->through_lsn, 9u);
  EXPECT_EQ(decoded->synced_lsn, 12u);
  EXPECT_EQ(decoded->file_bytes, header.file_bytes);
  EXPECT_EQ(EntriesOf(back), EntriesOf(index));
  EXPECT_EQ(back.LiveRecords(1), 1u);
  EXPECT_EQ(back.live_bytes(), 190u);

  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string flipped = bytes;
    flipped[i] = static_cast<char>(flipped[i] ^ 0x10);
    auto r = DecodePackedSnapshot(AsBytes(flipped), &back);
    ASSERT_FALSE(r.ok()) << "byte " << i;
    EXPECT_EQ(r.status().code(), Code::kCorruption);
    EXPECT_EQ(back.size(), 0u);
  }
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(DecodePackedSnapshot(AsBytes(std::string_view(bytes).substr(0, n)), &back).ok())
        << n << " bytes";
  }
}

TEST_F(PackedSnapshotTest, CountsBeyondItsLengthAreRefusedBeforeAnythingIsRead) {
  // A sound checksum over a header claiming 2^60 entries: refused by the lengths alone.
  std::string bytes = EncodePackedSnapshot({}, PackedIndex());
  bytes.resize(bytes.size() - 4);
  bytes[32 + 7] = 0x10;
  const uint32_t crc = Crc32c(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>(crc >> (8 * i)));
  PackedIndex back;
  auto r = DecodePackedSnapshot(AsBytes(bytes), &back);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("counts exceed"), std::string::npos) << r.status().ToString();
}

TEST_F(PackedSnapshotTest, AReplayFromTheSnapshotReadsOnlyTheFilesAfterIt) {
  WriteJournal(1, {{JournalOp::kPutPacked, "b/a", Packed(1, "aaaa")},
                   {JournalOp::kPutPacked, "b/b", Packed(2, "bbbb")},
                   {JournalOp::kPutPacked, "b/c", Packed(3, "cccc")}});
  WriteJournal(4, {{JournalOp::kDelete, "b/b", ""}, {JournalOp::kPutPacked, "b/a", Packed(5, "A")}});
  TakeSnapshot(5);
  WriteJournal(6, {{JournalOp::kPutPacked, "b/c", Packed(6, "C")},
                   {JournalOp::kPutPacked, "b/d", Packed(7, "dddd")}});
  std::map<std::string, uint64_t> reads;
  const JournalReplayResult r = ReplayBothWays(/*applied_through=*/7, &reads);
  EXPECT_EQ(r.snapshot_through, 5u);
  EXPECT_EQ(r.snapshot_set_aside, "");
  EXPECT_EQ(r.last_lsn, 7u);
  EXPECT_EQ(r.records, 2u) << "only the file after the snapshot is read";
  EXPECT_EQ(reads[JournalFileName(1)], 0u);
  EXPECT_EQ(reads[JournalFileName(4)], 0u);
  EXPECT_GT(reads[JournalFileName(6)], 0u);
  ASSERT_EQ(r.segments.size(), 3u);
  EXPECT_GT(r.segments[0].bytes, 0u) << "the lengths of the files it covers come from it";
  EXPECT_EQ(ReadPackedObject("b/a"), "A");
  EXPECT_EQ(ReadPackedObject("b/b"), "<absent>");
  EXPECT_EQ(ReadPackedObject("b/c"), "C");
  EXPECT_EQ(ReadPackedObject("b/d"), "dddd");
  EXPECT_EQ(packed_.LiveRecords(1), 0u);
  EXPECT_EQ(packed_.LiveRecords(4), 1u);
  EXPECT_EQ(packed_.LiveRecords(6), 2u);

  // Nothing after it: no journal file is read at all.
  ASSERT_TRUE(fs_->DeleteFile(root_ + "/" + JournalFileName(6)).ok());
  TakeSnapshot(5);
  const JournalReplayResult again = ReplayBothWays(5, &reads);
  EXPECT_EQ(again.snapshot_through, 5u);
  EXPECT_EQ(again.last_lsn, 5u);
  EXPECT_EQ(reads[JournalFileName(1)] + reads[JournalFileName(4)], 0u);
}

TEST_F(PackedSnapshotTest, RandomHistoriesGiveTheIndexOfAFullReplay) {
  std::mt19937_64 rng(::testing::UnitTest::GetInstance()->random_seed());
  for (int round = 0; round < 40; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    ASSERT_TRUE(fs_->DeleteTree(root_).ok());
    ASSERT_TRUE(fs_->CreateDirs(root_).ok());
    const int files = 2 + static_cast<int>(rng() % 5);
    const int snapshot_after = static_cast<int>(rng() % (files - 1));  // a file's index
    // The snapshot holds the state after a later file (entries applied after its checkpoint).
    const int state_after = snapshot_after + static_cast<int>(rng() % (files - snapshot_after));
    uint64_t lsn = 1;
    uint64_t through = 0;
    uint64_t first = 0;
    for (int f = 0; f < files; ++f) {
      std::vector<Rec> recs;
      first = lsn;
      for (int n = 1 + static_cast<int>(rng() % 4); n > 0; --n, ++lsn) {
        const std::string key = "k/" + std::to_string(rng() % 6);
        switch (rng() % 4) {
          case 0: recs.push_back({JournalOp::kDelete, key, ""}); break;
          case 1: recs.push_back({JournalOp::kExternal, key, ""}); break;
          default: recs.push_back({JournalOp::kPutPacked, key, Packed(lsn, key)});
        }
      }
      WriteJournal(first, recs);
      if (f == snapshot_after) through = lsn - 1;
      if (f == state_after) TakeSnapshot(through);
    }
    // Sometimes the newest file loses its records (damage of synced bytes): a snapshot that
    // reflects some of them is then set aside.
    const bool cut = rng() % 3 == 0;
    if (cut) WriteJournal(first, {});
    const JournalReplayResult r = ReplayBothWays(/*applied_through=*/lsn - 1);
    if (!cut) {
      EXPECT_EQ(r.snapshot_through, through) << r.snapshot_set_aside;
    }
  }
}

TEST_F(PackedSnapshotTest, ASnapshotThatDisagreesWithTheJournalIsSetAside) {
  auto write_history = [&] {
    ASSERT_TRUE(fs_->DeleteTree(root_).ok());
    ASSERT_TRUE(fs_->CreateDirs(root_).ok());
    WriteJournal(1, {{JournalOp::kPutPacked, "b/a", Packed(1, "aaaa")},
                     {JournalOp::kPutPacked, "b/b", Packed(2, "bbbb")}});
    WriteJournal(3, {{JournalOp::kPutPacked, "b/c", Packed(3, "cccc")}});
    TakeSnapshot(2);
  };
  auto expect_set_aside = [&](uint64_t applied_through, std::string_view why) {
    const JournalReplayResult r = ReplayBothWays(applied_through);
    EXPECT_EQ(r.snapshot_through, 0u);
    EXPECT_NE(r.snapshot_set_aside.find(why), std::string::npos) << r.snapshot_set_aside;
  };
  {
    SCOPED_TRACE("past the checkpoint: files after it may need their files applied");
    write_history();
    expect_set_aside(1, "past the checkpoint");
  }
  {
    SCOPED_TRACE("a journal file it covers that it does not know");
    write_history();
    auto bytes = fs_->ReadFile(SnapshotPath(), 0, kToEnd);
    ASSERT_TRUE(bytes.ok());
    PackedIndex index;
    auto header = DecodePackedSnapshot((*bytes)->view(), &index);
    ASSERT_TRUE(header.ok());
    header->file_bytes.erase(1);
    const std::string rewritten = EncodePackedSnapshot(*header, index);
    ASSERT_TRUE(fs_->WriteFileAtomic(SnapshotPath(), {AsBytes(rewritten)}, false).ok());
    expect_set_aside(3, "does not know journal file");
  }
  {
    SCOPED_TRACE("the file after it is gone, a later one is not");
    write_history();
    ASSERT_TRUE(fs_->DeleteFile(root_ + "/" + JournalFileName(1)).ok());
    ASSERT_TRUE(fs_->DeleteFile(root_ + "/" + JournalFileName(3)).ok());
    WriteJournal(4, {{JournalOp::kPutPacked, "b/d", Packed(4, "dddd")}});
    expect_set_aside(4, "no journal file starting after it");
  }
  {
    SCOPED_TRACE("an entry whose file is gone (journal files moved out by hand)");
    write_history();
    ASSERT_TRUE(fs_->DeleteFile(root_ + "/" + JournalFileName(1)).ok());
    expect_set_aside(3, "which is gone");
    EXPECT_EQ(ReadPackedObject("b/a"), "<absent>");
  }
  {
    SCOPED_TRACE("an entry past the journal's durable end");
    write_history();  // its snapshot has b/c (LSN 3)
    WriteJournal(3, {});
    expect_set_aside(3, "past the journal's end");
    EXPECT_EQ(ReadPackedObject("b/c"), "<absent>");
  }
  {
    SCOPED_TRACE("damaged bytes");
    write_history();
    auto bytes = fs_->ReadFile(SnapshotPath(), 0, kToEnd);
    ASSERT_TRUE(bytes.ok());
    std::string b(AsChars((*bytes)->view()));
    b[b.size() / 2] ^= 1;
    ASSERT_TRUE(fs_->WriteFileAtomic(SnapshotPath(), {AsBytes(b)}, false).ok());
    expect_set_aside(3, "crc mismatch");
  }
}

TEST_F(PackedSnapshotTest, TheStoreReopensFromItsSnapshotReadingOnlyTheJournalAfterIt) {
  // Small journal files: many checkpoints, snapshots written every few (rate-limited by their
  // size), compaction. Each reopen must read none of the files the snapshot on disk covers.
  FsJournalOptions o;
  o.journal_file_bytes = 4096;
  o.packed_object_bytes_max = 1024;
  std::map<std::string, std::string> model;
  std::mt19937_64 rng(::testing::UnitTest::GetInstance()->random_seed());
  for (int session = 0; session < 4; ++session) {
    SCOPED_TRACE("session " + std::to_string(session));
    uint64_t through = 0;  // of the snapshot on disk before the open
    if (session > 0) {
      auto bytes = fs_->ReadFile(SnapshotPath(), 0, kToEnd);
      ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
      PackedIndex index;
      auto header = DecodePackedSnapshot((*bytes)->view(), &index);
      ASSERT_TRUE(header.ok()) << header.status().ToString();
      through = header->through_lsn;
      EXPECT_GT(through, 0u);
    }
    counting_.TakeReads();
    auto store = OpenJournaledFsObjectStore(root_, fs_, o);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    for (const auto& [name, n] : counting_.TakeReads()) {
      uint64_t first = 0;
      if (n > 0 && ParseJournalFileName(name, &first)) {
        EXPECT_GT(first, through) << name << ": " << n << " bytes read";
      }
    }
    for (const auto& [key, value] : model) {
      auto got = (*store)->Get(key);
      ASSERT_TRUE(got.ok()) << key << ": " << got.status().ToString();
      EXPECT_EQ(AsChars(got->bytes->view()), value) << key;
    }
    // Enough keys that the checkpoint thread takes the index in several pieces while the puts
    // go on (fs_object_store_impl.h, kSnapshotChunkEntries).
    for (int i = 0; i < 1200; ++i) {
      const std::string key = "b/" + std::to_string(rng() % 700);
      if (rng() % 5 == 0) {
        ASSERT_TRUE((*store)->Delete(key).ok());
        model.erase(key);
        continue;
      }
      const std::string value(1 + rng() % 200, static_cast<char>('a' + i % 26));
      ASSERT_TRUE((*store)->Put(key, {AsBytes(value)}, {}).ok());
      model[key] = value;
    }
  }
}

TEST_F(PackedSnapshotTest, AnOpenRewritesTheSnapshotOnlyOnceEnoughJournalCameAfterIt) {
  // The rule of checkpoints (journal read after it >= 4 x its size), so that opening a store
  // with a large index does not write all of it again each time.
  FsJournalOptions o;
  o.packed_object_bytes_max = 1024;
  auto session = [&](int puts, char fill) {
    auto store = OpenJournaledFsObjectStore(root_, fs_, o);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    for (int i = 0; i < puts; ++i) {
      const std::string value(100, fill);
      ASSERT_TRUE((*store)->Put("b/" + std::to_string(i % 500), {AsBytes(value)}, {}).ok());
    }
  };
  auto snapshot = [&] {
    auto bytes = fs_->ReadFile(SnapshotPath(), 0, kToEnd);
    return bytes.ok() ? std::string(AsChars((*bytes)->view())) : bytes.status().ToString();
  };
  session(500, 'a');
  session(0, 'a');  // none was usable: written
  const std::string first = snapshot();
  ASSERT_GT(first.size(), 500u * 50);
  session(10, 'b');  // ~2 KB of journal after a ~30 KB snapshot
  session(0, 'b');
  EXPECT_EQ(snapshot(), first) << "not rewritten for a little journal";
  session(1000, 'c');  // ~150 KB
  session(0, 'c');
  EXPECT_NE(snapshot(), first);
}

TEST_F(PackedSnapshotTest, AnotherProcesssViewStartsFromTheOwnersSnapshot) {
  FsJournalOptions o;
  o.journal_file_bytes = 4096;
  o.packed_object_bytes_max = 1024;
  auto owner = OpenJournaledFsObjectStore(root_, fs_, o);
  ASSERT_TRUE(owner.ok()) << owner.status().ToString();
  std::map<std::string, std::string> model;
  auto write = [&](int n, char fill) {
    for (int i = 0; i < n; ++i) {
      const std::string key = "b/" + std::to_string(i % 40);
      model[key] = std::string(100 + i % 50, fill);
      ASSERT_TRUE((*owner)->Put(key, {AsBytes(model[key])}, {}).ok());
    }
  };
  auto expect_view_has_model = [&](PackedView& view) {
    for (const auto& [key, value] : model) {
      PackedEntry e;
      ASSERT_TRUE(view.Find(key, &e)) << key;
      auto got = ReadPacked(fs_, root_ + "/" + JournalFileName(e.segment), key, e, 0, kToEnd);
      ASSERT_TRUE(got.ok()) << key << ": " << got.status().ToString();
      EXPECT_EQ(AsChars(got->bytes->view()), value) << key;
    }
  };
  write(200, 'a');
  // The checkpoint thread writes snapshots in the background: reopen to have one for sure.
  owner->reset();
  owner = OpenJournaledFsObjectStore(root_, fs_, o);
  ASSERT_TRUE(owner.ok());
  auto bytes = fs_->ReadFile(SnapshotPath(), 0, kToEnd);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  PackedIndex ignored;
  auto header = DecodePackedSnapshot((*bytes)->view(), &ignored);
  ASSERT_TRUE(header.ok());

  counting_.TakeReads();
  PackedView view(fs_, root_);
  ASSERT_TRUE(view.Refresh().ok());
  for (const auto& [name, n] : counting_.TakeReads()) {
    uint64_t first = 0;
    if (n > 0 && ParseJournalFileName(name, &first)) {
      EXPECT_GT(first, header->through_lsn) << name << ": " << n << " bytes read";
    }
  }
  expect_view_has_model(view);
  write(100, 'b');  // the view keeps up with what the owner writes next
  owner->reset();   // (its checkpoint thread done: no journal file goes while reading)
  ASSERT_TRUE(view.Refresh().ok());
  expect_view_has_model(view);

  // A damaged snapshot: a new view reads every file, and is right all the same.
  std::string damaged(AsChars((*bytes)->view()));
  damaged[damaged.size() / 2] ^= 1;
  ASSERT_TRUE(fs_->WriteFileAtomic(SnapshotPath(), {AsBytes(damaged)}, false).ok());
  PackedView fresh(fs_, root_);
  ASSERT_TRUE(fresh.Refresh().ok());
  expect_view_has_model(fresh);
}

}  // namespace
}  // namespace wombatkv
