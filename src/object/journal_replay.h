// Recovery of FsObjectStore's journal (journal.h) at open.
//
// The journal files in the root are read in LSN order as one sequence of records, up to the
// first record that does not parse (or does not carry the next LSN): that prefix is exactly what
// was durable when the process or machine stopped. For each key only the last record of the
// prefix matters (they were applied in LSN order): a kPut whose file is missing or holds other
// bytes is written again (a file that already holds the record's bytes is left alone, so its
// ETag survives a mere process crash); a kDelete removes the file; a kExternal leaves it alone.
// With `rewrite_same_bytes` a kPut is written again even over the same bytes: after a write-back
// error those bytes may be only in the page cache, never to be written back.
// Nothing is synced here: the caller makes the result durable (SyncFileSystem) before it deletes
// the journal files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wombatkv/env.h"

namespace wombatkv {

struct JournalReplayResult {
  uint64_t last_lsn = 0;                   // of the prefix; 0 when there was no record
  uint64_t records = 0;                    // in the prefix
  uint64_t files_written = 0;              // kPut applied (missing or different bytes)
  uint64_t files_deleted = 0;              // kDelete applied (the file was there)
  std::vector<std::string> journal_paths;  // every journal file found, in LSN order
};

Result<JournalReplayResult> ReplayJournal(FileSystem* fs, const std::string& root,
                                          bool rewrite_same_bytes = false);

}  // namespace wombatkv
