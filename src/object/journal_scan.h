// Reading the journal files of a root (journal.h) as one sequence of records, for recovery at
// open (journal_replay.h) and for the read-only view of packed objects that other processes of
// the root keep (packed_view.h).
//
// The files are read in LSN order, each up to its first record that does not parse or does not
// carry the next LSN (or, in a file followed by another, up to the next file's first LSN: a
// recovery that found the journal cut there began the next file at it): that prefix is what was
// durable. A record whose header is sound but whose value fails its checksum is passed on
// (value_ok false) when it is known to have been synced — in a file the journal went on from,
// before a later batch whose sync mark covers it (journal_record.h, kSyncMark), or up to the
// checkpoint (set_known_synced) — since then only
// damage explains it, or when it was written damaged (written_damaged: a compaction's copy of a
// damaged record); otherwise it belongs to a batch a crash tore (its pages reached the disk in
// any order), and the journal ends before it.
//
// Resumable: each Scan continues where the previous one stopped (the newest file grows), so a
// reader that scans before every use reads each record once. If the file it stopped in is gone
// (the owner deleted it, having copied its live records forward), the next Scan starts over and
// says so (`on_restart`): what the caller built from earlier records must be dropped.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "object/journal_record.h"
#include "wombatkv/env.h"

namespace wombatkv {

struct ScannedRecord {
  JournalRecordView record;  // points into a buffer that lives until the callback returns
  uint64_t segment = 0;      // the first LSN of the file holding it (its name)
  uint64_t offset = 0;       // of the record in that file
};

// Journal files as (first LSN, path), by first LSN.
using JournalFileList = std::vector<std::pair<uint64_t, std::string>>;

// The journal files in `root`.
Result<JournalFileList> ListJournalFiles(FileSystem* fs, const std::string& root);

class JournalScanner {
 public:
  using RecordFn = std::function<Status(const ScannedRecord&)>;

  JournalScanner(FileSystem* fs, std::string root) : fs_(fs), root_(std::move(root)) {}

  // Reads every record not read yet, calling `fn` for each in LSN order (an error from `fn`
  // stops the scan and is returned; the record is read again by the next Scan). Corruption if
  // a file does not continue the sequence (a gap: see Scan). `on_restart` (optional) runs
  // before the records when this scan starts over from the oldest file.
  Status Scan(const RecordFn& fn, const std::function<void()>& on_restart = {});

  // The first Scan starts at the file whose first LSN is `first_lsn` (which must exist, else
  // that Scan starts over from the oldest file), as if every record before it had been read.
  void StartAt(uint64_t first_lsn) {
    started_ = true;
    segment_ = expected_ = first_lsn;
    offset_ = 0;
  }

  // The next Scan starts over from the oldest file (the known-synced LSN stays).
  void Reset() {
    started_ = false;
    records_ = 0;
  }

  // Records up to `lsn` are known synced (the checkpoint): a bad value among them is damage.
  void set_known_synced(uint64_t lsn) { known_synced_ = lsn; }
  // The journal ends after record `lsn` whatever follows it (a sync failed after it: what
  // follows may be only in the page cache; FsObjectStore, kJournalFailedMarker); 0: before any.
  void set_last_lsn_max(uint64_t lsn) {
    cut_ = true;
    last_lsn_max_ = lsn;
  }

  uint64_t last_lsn() const { return started_ ? expected_ - 1 : 0; }  // 0: no record read
  uint64_t records() const { return records_; }
  // Every journal file seen by the last Scan, in LSN order.
  const JournalFileList& files() const { return files_; }

 private:
  // Reads file `path` (first LSN `segment`) from offset_ on, while its records continue the
  // sequence. `next_first`: the first LSN of the next file (0 if this one is the newest), which
  // tells a damaged last record from a torn one.
  Status ScanFile(uint64_t segment, const std::string& path, uint64_t next_first,
                  const RecordFn& fn);
  Status ScanOnce(const RecordFn& fn, const std::function<void()>& on_restart);
  Status Emit(const JournalRecordView& r, uint64_t segment, uint64_t offset, const RecordFn& fn);

  FileSystem* const fs_;
  const std::string root_;
  JournalFileList files_;
  bool started_ = false;
  uint64_t segment_ = 0;   // the file being read
  uint64_t offset_ = 0;    // where reading continues in it
  uint64_t expected_ = 1;  // the next LSN
  uint64_t records_ = 0;
  uint64_t known_synced_ = 0;
  bool cut_ = false;
  uint64_t last_lsn_max_ = 0;
};

}  // namespace wombatkv
