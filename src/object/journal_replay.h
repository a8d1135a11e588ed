// Recovery of FsObjectStore's journal (journal.h) at open.
//
// The journal files in the root are read in LSN order as one sequence of records (journal_scan.h):
// the prefix that was durable when the process or machine stopped. Every packed object
// (kPutPacked, packed_index.h) goes into the index. For the records after `applied_through` —
// the checkpoint: every record up to it was applied and synced — the last record of each key is
// applied to the directory: a kPut whose file is missing or holds other bytes is written again (a
// file that already holds the record's bytes is left alone, so its ETag survives a mere process
// crash); a kDelete removes the file; a kPutPacked removes a file left by an earlier version; a
// kExternal leaves it alone. With `rewrite_same_bytes` a kPut is written again even over the same
// bytes: after a write-back error those bytes may be only in the page cache, never to be written
// back. Nothing is synced here: the caller makes the result durable (SyncFileSystem).
//
// With a packed-index snapshot (packed_snapshot.h) through C <= `applied_through`, the index
// starts from it and only the files from C + 1 on are read. It is set aside (and every file
// read) when it is damaged or does not agree with the journal: C past `applied_through`, a file
// up to C it does not know, no file starting at C + 1 while later ones exist, or, after the
// read, the journal ending before the synced LSN it records, or an entry whose file is gone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "object/packed_index.h"
#include "wombatkv/env.h"

namespace wombatkv {

struct ReplayOptions {
  uint64_t applied_through = 0;
  // With `cut`, the journal ends after record `cut_after` (JournalScanner::set_last_lsn_max).
  bool cut = false;
  uint64_t cut_after = 0;
  bool rewrite_same_bytes = false;
  bool use_snapshot = true;
};

struct JournalSegment {
  uint64_t first_lsn = 0;
  std::string path;
  uint64_t bytes = 0;  // up to the end of its last record
};

struct JournalReplayResult {
  uint64_t last_lsn = 0;                 // of the prefix; 0 when there was no record
  uint64_t records = 0;                  // in the prefix
  uint64_t files_written = 0;            // kPut applied (missing or different bytes)
  uint64_t files_deleted = 0;            // kDelete or kPutPacked applied (the file was there)
  uint64_t damaged_records = 0;          // values failing their checksum (kept, reported)
  std::vector<JournalSegment> segments;  // every journal file, in LSN order
  uint64_t snapshot_through = 0;         // the snapshot used (0: none)
  uint64_t snapshot_bytes = 0;           // its size
  std::string snapshot_set_aside;        // why a snapshot present was not used ("": it was)
};

// `packed` receives the packed objects (it should be empty).
Result<JournalReplayResult> ReplayJournal(FileSystem* fs, const std::string& root,
                                          const ReplayOptions& options, PackedIndex* packed);

}  // namespace wombatkv
