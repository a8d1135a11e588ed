// The packed-index snapshot of a journaled local L2 (docs/layout.md §5.1, "packed-index
// snapshot"): the owner's PackedIndex written to `<root>/.~journal.index` at a checkpoint, so
// that an open reads only the journal files after it instead of every packed byte.
//
// A snapshot "through C" holds every entry of the index at a moment when every record up to LSN
// C was applied (C ends a journal file: the next begins at C + 1), plus the first LSN and length
// of every journal file up to C, and S: the journal's synced LSN then. Records after C may be
// reflected too (applied meanwhile), but only records up to S: the index only ever changes for
// a synced record. So when the journal still holds every record up to S, loading the snapshot
// and replaying the files from C + 1 on gives the index a full replay gives: a key with a record
// after C ends with its last record (PackedIndex::Apply), and any other key's entry is the one
// it had at C.
//
// Layout, little-endian:
//   0   8 bytes  magic "WMBTPIX1"
//   8   u64      C (through LSN)
//   16  u64      S (synced LSN)
//   24  u64      file count F;  u64 entry count E
//   40  F × {u64 first LSN, u64 bytes}
//   ..  E × {u16 key length, key, u64 segment, u64 offset, u64 lsn, u32 record bytes, u32 size,
//            u64 etag id, u64 modified µs}
//   end u32      crc32c of every byte before it
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "object/journal_scan.h"
#include "object/packed_index.h"
#include "wombatkv/buffer.h"
#include "wombatkv/status.h"

namespace wombatkv {

inline constexpr std::string_view kPackedSnapshotName = ".~journal.index";

// What a snapshot says besides its entries.
struct PackedSnapshotHeader {
  uint64_t through_lsn = 0;
  uint64_t synced_lsn = 0;  // >= through_lsn
  uint64_t encoded_bytes = 0;  // set by DecodePackedSnapshot
  std::map<uint64_t, uint64_t> file_bytes;  // journal file (first LSN) -> bytes of its records
};

// Encodes a snapshot entry by entry (in increasing key order), so that its writer may take the
// index's entries in pieces; the synced LSN is given last.
class PackedSnapshotWriter {
 public:
  // `header`'s through LSN and files; its synced LSN is Finish's.
  explicit PackedSnapshotWriter(const PackedSnapshotHeader& header);
  void Add(std::string_view key, const PackedEntry& e);
  std::string Finish(uint64_t synced_lsn);

 private:
  std::string out_;
  uint64_t entries_ = 0;
};

// Encodes a snapshot of `index` through `header.through_lsn` (synced: `header.synced_lsn`).
std::string EncodePackedSnapshot(const PackedSnapshotHeader& header, const PackedIndex& index);

// Decodes a snapshot into `index` (which should be empty). Corruption naming what is wrong if the
// bytes are not a sound snapshot; `index` is then left cleared.
Result<PackedSnapshotHeader> DecodePackedSnapshot(ByteView bytes, PackedIndex* index);

// Loads the snapshot of the journaled root `root` into `index` (which should be empty) if there
// is one that can be used with the journal files `files` and the checkpoint `applied_through`:
// sound, C <= applied_through, every file up to C listed in it, and a file starting at C + 1 if
// any starts later. Else nullopt, `index` cleared, and the reason in *set_aside ("" when there
// is no snapshot). The files from C + 1 on are then to be read over it.
std::optional<PackedSnapshotHeader> LoadPackedSnapshot(FileSystem* fs, const std::string& root,
                                                       uint64_t applied_through,
                                                       const JournalFileList& files,
                                                       PackedIndex* index,
                                                       std::string* set_aside);

// After the files from C + 1 on were read over a loaded snapshot, up to `last_lsn`: why the
// result does not agree with the journal ("" if it does) — the journal ends before the synced
// LSN the snapshot records, or an entry's file is not among `files`.
std::string PackedSnapshotDisagreement(const PackedSnapshotHeader& header,
                                       const PackedIndex& index, const JournalFileList& files,
                                       uint64_t last_lsn);

}  // namespace wombatkv
