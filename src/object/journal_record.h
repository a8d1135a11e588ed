// The record format of FsObjectStore's write-ahead journal (docs/layout.md, "The L2 journal").
//
// A journal file is a sequence of records, each framed by a CRC32C and carrying its log sequence
// number (LSN). LSNs are consecutive across records and files, so a reader that expects LSN n and
// finds anything else — zeros of a preallocated region, an older record, a torn write — stops
// there: the journal is read as a prefix, never past the first record that does not parse.
//
// Record layout, little-endian (kJournalRecordHeaderBytes = 24, then key, then value):
//   0  u32  crc32c of bytes [4, 24 + key length): the header and the key
//   4  u64  lsn
//   12 u8   op (JournalOp)
//   13 u8   format, 1 (0: the first format, still read — see below)
//   14 u16  key length (1..kObjectKeyBytesMax)
//   16 u32  value length (0 unless op is kPut or kPutPacked; at most kJournalValueBytesMax)
//   20 u32  crc32c of the value
//   24 ...  key bytes, then value bytes
//
// The value has a checksum of its own because packed records (kPutPacked) live on in the journal
// as the objects' only copy: a flipped bit in one object's bytes damages that object, which a
// read reports, and not the record's framing, so the records after it are still found. Format 0
// (written before packed records existed, found only in a journal a crash left behind): a 20-byte
// header without the value checksum, and the first checksum covering the whole record.
#pragma once

#include <array>
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
  // The object lives in the journal (docs/layout.md, "Packed objects"): the value is
  // kPackedValuePrefixBytes of {u64 etag id, u64 modified µs} followed by the object's bytes. A
  // copy made by compaction carries the original's etag id and time unchanged.
  kPutPacked = 4,
  // Written by the journal at the start of each batch it writes: the value (u64) is the LSN up
  // to which every record was durable before this batch. It carries the LSN of the record after
  // it and takes none (readers skip it without advancing), and no key of its own (kSyncMarkKey).
  // It tells a record that was synced and later damaged from one of a batch a crash tore (pages
  // of an unsynced write reach the disk in any order): journal_scan.h.
  kSyncMark = 5,
};

inline constexpr std::string_view kSyncMarkKey = "~";

inline constexpr size_t kJournalRecordHeaderBytes = 24;
inline constexpr size_t kPackedValuePrefixBytes = 16;
// Hard bound for the decoder (a length field larger than this is not a record); FsObjectStore
// journals far smaller objects (FsJournalOptions::journaled_object_bytes_max, object_store.h).
inline constexpr uint32_t kJournalValueBytesMax = 16u << 20;

// A decoded record; key and value point into the decoded bytes.
struct JournalRecordView {
  uint64_t lsn = 0;
  JournalOp op = JournalOp::kPut;
  std::string_view key;
  ByteView value;
  size_t value_offset = 0;   // of the value from the record's start
  size_t encoded_bytes = 0;  // header + key + value
  // False: the header and key are sound, and the value is all there but does not match its
  // checksum (a torn batch, or damage; journal_scan.h tells them apart).
  bool value_ok = true;
  // With value_ok false: the value matches the inverted checksum a copy of a damaged record is
  // written with (`value_damaged`), so the record was damaged when written, not torn since.
  bool written_damaged = false;
};

// The prefix of a kPutPacked value, and its parts back (false if `value` is too short).
std::array<uint8_t, kPackedValuePrefixBytes> EncodePackedPrefix(uint64_t etag_id,
                                                               uint64_t modified_us);
bool DecodePackedPrefix(ByteView value, uint64_t* etag_id, uint64_t* modified_us);

// Appends a kSyncMark to `out`: the next record will have LSN `next_lsn`; every record up to
// `synced_lsn` is durable.
void EncodeSyncMark(uint64_t next_lsn, uint64_t synced_lsn, std::string& out);
// The synced LSN of a decoded kSyncMark (0 if `r` is not a sound one).
uint64_t SyncMarkValue(const JournalRecordView& r);

// Appends the encoding of one record to `out`. REQUIRES: 1 <= key.size() <= 1024; the value's
// total size <= kJournalValueBytesMax, and empty unless op is kPut or kPutPacked. With
// `value_damaged` the value's checksum is written wrong on purpose: a copy of a damaged packed
// object stays damaged (the copy must not vouch for bytes nobody can check).
void EncodeJournalRecord(uint64_t lsn, JournalOp op, std::string_view key,
                         const std::vector<ByteView>& value, std::string& out,
                         bool value_damaged = false);
// The part of a record before its value — header and key — for a value of `value_bytes` whose
// checksum (ValueChecksum) is `value_crc`, appended to `out`; the value's bytes follow it.
// REQUIRES: as EncodeJournalRecord.
void EncodeJournalRecordHead(uint64_t lsn, JournalOp op, std::string_view key, size_t value_bytes,
                             uint32_t value_crc, std::string& out);
// The checksum EncodeJournalRecord writes for `value` (wrong on purpose with `value_damaged`).
uint32_t ValueChecksum(const std::vector<ByteView>& value, bool value_damaged);

// Decodes the record at the start of `in`, which must carry LSN `expected_lsn`. Corruption
// (naming what was wrong) if the bytes are not such a record: the end of the valid journal. A
// record whose value alone fails its checksum is returned with value_ok = false.
Result<JournalRecordView> DecodeJournalRecord(ByteView in, uint64_t expected_lsn);

}  // namespace wombatkv
