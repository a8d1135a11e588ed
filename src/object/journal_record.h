// The record format of FsObjectStore's write-ahead journal (docs/layout.md, "The L2 journal").
//
// A journal file is a sequence of records, each framed by a CRC32C and carrying its log sequence
// number (LSN). LSNs are consecutive across records and files, so a reader that expects LSN n and
// finds anything else — zeros of a preallocated region, an older record, a torn write — stops
// there: the journal is read as a prefix, never past the first record that does not parse.
//
// Record layout, little-endian (kJournalRecordHeaderBytes = 20, then key, then value):
//   0  u32  crc32c of bytes [4, end of record)
//   4  u64  lsn
//   12 u8   op (JournalOp)
//   13 u8   reserved, 0
//   14 u16  key length (1..kObjectKeyBytesMax)
//   16 u32  value length (0 unless op is kPut; at most kJournalValueBytesMax)
//   20 ...  key bytes, then value bytes
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "wombatkv/buffer.h"
#include "wombatkv/status.h"

namespace wombatkv {

enum class JournalOp : uint8_t {
  kPut = 1,     // the object's bytes are the value
  kDelete = 2,  // the object was removed (a tombstone)
  // The object was written durably outside the journal (too large for it): replay leaves the
  // file alone, so an earlier kPut of the same key never replaces it.
  kExternal = 3,
};

inline constexpr size_t kJournalRecordHeaderBytes = 20;
// Hard bound for the decoder (a length field larger than this is not a record); FsObjectStore
// journals far smaller objects (fs_object_store.cc: kJournaledObjectBytesMax).
inline constexpr uint32_t kJournalValueBytesMax = 16u << 20;

// A decoded record; key and value point into the decoded bytes.
struct JournalRecordView {
  uint64_t lsn = 0;
  JournalOp op = JournalOp::kPut;
  std::string_view key;
  ByteView value;
  size_t encoded_bytes = 0;  // header + key + value
};

// Appends the encoding of one record to `out`. REQUIRES: 1 <= key.size() <= 1024; the value's
// total size <= kJournalValueBytesMax, and empty unless op is kPut.
void EncodeJournalRecord(uint64_t lsn, JournalOp op, std::string_view key,
                         const std::vector<ByteView>& value, std::string& out);

// Decodes the record at the start of `in`, which must carry LSN `expected_lsn`. Corruption
// (naming what was wrong) if the bytes are not such a record: the end of the valid journal.
Result<JournalRecordView> DecodeJournalRecord(ByteView in, uint64_t expected_lsn);

}  // namespace wombatkv
