#include "object/journal_scan.h"

#include <algorithm>

#include "object/journal.h"
#include "wombatkv/object_store.h"

namespace wombatkv {
namespace {

// Reading starts small (a rescan of the newest file mostly finds nothing new: its zeros) and
// grows while records keep coming.
constexpr uint64_t kFirstReadBytes = 4u << 10;
constexpr uint64_t kReadChunkBytesMax = 1u << 20;
constexpr int kScanAttemptsMax = 8;

// The length of the record starting at `rest` as its header says, if the header is all there
// and its lengths are in range (0 otherwise: the decoder will say what is wrong).
size_t ClaimedLength(ByteView rest) {
  if (rest.size() < kJournalRecordHeaderBytes) return 0;
  const uint8_t* p = rest.data();
  const size_t key = p[14] | (size_t{p[15]} << 8);
  const size_t value = p[16] | (size_t{p[17]} << 8) | (size_t{p[18]} << 16) | (size_t{p[19]} << 24);
  if (value > kJournalValueBytesMax) return 0;
  return (p[13] == 0 ? 20 : kJournalRecordHeaderBytes) + key + value;
}

}  // namespace

Result<JournalFileList> ListJournalFiles(FileSystem* fs, const std::string& root) {
  JournalFileList files;
  auto names = fs->ListDir(root);
  if (!names.ok()) {
    if (names.status().IsNotFound()) return files;
    return names.status();
  }
  for (const std::string& n : *names) {
    uint64_t first = 0;
    if (ParseJournalFileName(n, &first)) files.emplace_back(first, root + "/" + n);
  }
  std::sort(files.begin(), files.end());
  return files;
}

Status JournalScanner::Scan(const RecordFn& fn, const std::function<void()>& on_restart) {
  // A file deleted between the listing and its reading (the owner collects the oldest while a
  // reader scans): look again, starting over if it was the one being read.
  for (int attempt = 0;; ++attempt) {
    Status s = ScanOnce(fn, on_restart);
    if (!s.IsNotFound() || attempt == kScanAttemptsMax) return s;
  }
}

Status JournalScanner::ScanOnce(const RecordFn& fn, const std::function<void()>& on_restart) {
  WMBT_ASSIGN_OR_RETURN(files_, ListJournalFiles(fs_, root_));
  auto at = std::find_if(files_.begin(), files_.end(),
                         [&](const auto& f) { return f.first == segment_; });
  if (started_ && at == files_.end()) {
    // The file this scanner was in is gone: start over from the oldest.
    started_ = false;
    records_ = 0;
    if (on_restart) on_restart();
  }
  if (!started_) {
    if (files_.empty()) return Status::Ok();
    started_ = true;
    at = files_.begin();
    segment_ = at->first;
    expected_ = segment_;
    offset_ = 0;
  }
  for (; at != files_.end(); ++at) {
    const bool newest = at + 1 == files_.end();
    if (at->first != segment_) {
      // Files start only after their predecessor was synced whole (journal.h), and are deleted
      // oldest first: a file that does not continue the sequence means an earlier one lost
      // records it had synced. Replaying past the gap could apply old versions over newer ones;
      // stopping silently would drop acknowledged writes.
      if (at->first != expected_) {
        return Status::Corruption(
            "journal of the local L2 in " + root_ + " is damaged: records end at LSN " +
            std::to_string(expected_ - 1) + " but the next file starts at LSN " +
            std::to_string(at->first) + " (" + at->second + "). Writes acknowledged after LSN " +
            std::to_string(expected_ - 1) + " may be lost: move the .~journal-* files out of " +
            root_ + " to open the store with what the directory holds, then run `wombatkv audit`");
      }
      segment_ = at->first;
      offset_ = 0;
    }
    // The newest file is read again each time (from where its records stopped): neither its
    // size (zero-filled ahead) nor its mtime (coarse clock ticks) tells whether records came.
    WMBT_RETURN_IF_ERROR(ScanFile(at->first, at->second, newest ? 0 : (at + 1)->first, fn));
  }
  return Status::Ok();
}

Status JournalScanner::Emit(const JournalRecordView& r, uint64_t segment, uint64_t offset,
                            const RecordFn& fn) {
  WMBT_RETURN_IF_ERROR(fn(ScannedRecord{r, segment, offset}));
  offset_ = offset + r.encoded_bytes;
  expected_ = r.lsn + 1;
  ++records_;
  return Status::Ok();
}

// Whether a sound sync mark at or after `from` in `path` says LSN `lsn` was durable before its
// batch: then a bad value at `lsn` is damage to synced bytes, not a torn write.
static bool LaterMarkCovers(FileSystem* fs, const std::string& path, uint64_t from, uint64_t lsn) {
  auto bytes = fs->ReadFile(path, from, kToEnd);
  if (!bytes.ok()) return false;
  ByteView rest = (*bytes)->view();
  uint64_t expected = lsn + 1;
  while (true) {
    auto rec = DecodeJournalRecord(rest, expected);
    if (!rec.ok() || rec->encoded_bytes > rest.size()) return false;
    if (rec->op == JournalOp::kSyncMark) {
      if (SyncMarkValue(*rec) >= lsn) return true;
    } else {
      ++expected;
    }
    rest = rest.subspan(rec->encoded_bytes);
  }
}

Status JournalScanner::ScanFile(uint64_t segment, const std::string& path, uint64_t next_first,
                                const RecordFn& fn) {
  uint64_t want = kFirstReadBytes;
  while (true) {
    FileInfo info;
    auto chunk = fs_->ReadFile(path, offset_, want, &info);
    if (!chunk.ok()) return chunk.status();  // NotFound: deleted meanwhile (Scan starts over)
    const bool to_eof = offset_ + (*chunk)->size() >= info.size;
    ByteView rest = (*chunk)->view();
    uint64_t at = offset_;
    bool more = false;  // a record continues past the chunk: read again from it
    while (true) {
      // Records from the next file's first LSN on were cut off by a recovery (it began the next
      // file there): stale.
      if (next_first != 0 && expected_ >= next_first) return Status::Ok();
      const size_t claimed = ClaimedLength(rest);
      if (!to_eof && (rest.size() < kJournalRecordHeaderBytes || rest.size() < claimed)) {
        want = std::max<uint64_t>(std::min(want * 4, kReadChunkBytesMax), claimed);
        more = true;
        break;
      }
      auto rec = DecodeJournalRecord(rest, expected_);
      if (!rec.ok()) return Status::Ok();  // the end of this file's records (zeros, torn, stale)
      const size_t n = rec->encoded_bytes;
      if (rec->op == JournalOp::kSyncMark) {
        if (n > rest.size()) return Status::Ok();
        offset_ = at + n;  // takes no LSN
      } else {
        if (cut_ && rec->lsn > last_lsn_max_) return Status::Ok();
        // A bad value is damage when the record is known durable: in a file the journal went on
        // from (every record of it was synced), up to the checkpoint, or when a later batch's
        // sync mark says so; or when it was written damaged (a compaction's copy of a damaged
        // record, which may be the last record synced before its original's file was deleted).
        // Else it is the torn end of an unsynced batch, and the journal ends before it.
        if (!rec->value_ok && !rec->written_damaged && next_first == 0 &&
            rec->lsn > known_synced_ && !LaterMarkCovers(fs_, path, at + n, rec->lsn)) {
          return Status::Ok();
        }
        WMBT_RETURN_IF_ERROR(Emit(*rec, segment, at, fn));
      }
      at += n;
      if (n >= rest.size()) {
        if (to_eof) return Status::Ok();
        more = true;
        break;
      }
      rest = rest.subspan(n);
    }
    if (!more) return Status::Ok();
  }
}

}  // namespace wombatkv
