// The packed-index snapshot of a journaled local L2 (docs/layout.md, "The packed-index
// snapshot"): the owner's PackedIndex written to `<root>/.~journal.index` at a checkpoint, so
// that an open reads only the journal files after it instead of every packed byte.
//
// A snapshot "through C" holds every entry of the index at a moment when every record up to LSN
// C was applied (C ends a journal file: the next begins at C + 1), plus the first LSN and length
// of every journal file up to C. Entries of records after C may be in it too (applied meanwhile;
// an entry is only ever made from a synced record). Loading it and then replaying the files from
// C + 1 on gives the index a full replay gives: a key touched after C ends with its last record
// (PackedIndex::Apply), and any other key's entry has not changed since C.
//
// Layout, little-endian:
//   0   8 bytes  magic "WMBTPIX1"
//   8   u64      C (through LSN)
//   16  u64      file count F;  u64 entry count E
//   32  F × {u64 first LSN, u64 bytes}
//   ..  E × {u16 key length, key, u64 segment, u64 offset, u64 lsn, u32 record bytes, u32 size,
//            u64 etag id, u64 modified µs}
//   end u32      crc32c of every byte before it
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "object/packed_index.h"
#include "wombatkv/buffer.h"
#include "wombatkv/status.h"

namespace wombatkv {

inline constexpr std::string_view kPackedSnapshotName = ".~journal.index";

// What a snapshot says besides its entries.
struct PackedSnapshotHeader {
  uint64_t through_lsn = 0;
  std::map<uint64_t, uint64_t> file_bytes;  // journal file (first LSN) -> bytes of its records
};

// Encodes a snapshot of `index` through `header.through_lsn`.
std::string EncodePackedSnapshot(const PackedSnapshotHeader& header, const PackedIndex& index);

// Decodes a snapshot into `index` (which should be empty). Corruption naming what is wrong if the
// bytes are not a sound snapshot; `index` is then left cleared.
Result<PackedSnapshotHeader> DecodePackedSnapshot(ByteView bytes, PackedIndex* index);

}  // namespace wombatkv
