#include "object/journal_record.h"

#include <cstring>

#include "base/check.h"
#include "base/crc32c.h"
#include "object/object_key.h"

namespace wombatkv {
namespace {

constexpr uint8_t kFormat = 1;
constexpr size_t kHeaderBytesV0 = 20;  // format 0: no value checksum

template <typename T>
void PutLe(std::string& out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

template <typename T>
T GetLe(const uint8_t* p) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<T>(p[i]) << (8 * i));
  return v;
}

bool HasValue(JournalOp op) {
  return op == JournalOp::kPut || op == JournalOp::kPutPacked || op == JournalOp::kSyncMark;
}

}  // namespace

std::array<uint8_t, kPackedValuePrefixBytes> EncodePackedPrefix(uint64_t etag_id,
                                                               uint64_t modified_us) {
  std::array<uint8_t, kPackedValuePrefixBytes> out;
  for (size_t i = 0; i < 8; ++i) {
    out[i] = static_cast<uint8_t>(etag_id >> (8 * i));
    out[8 + i] = static_cast<uint8_t>(modified_us >> (8 * i));
  }
  return out;
}

bool DecodePackedPrefix(ByteView value, uint64_t* etag_id, uint64_t* modified_us) {
  if (value.size() < kPackedValuePrefixBytes) return false;
  *etag_id = GetLe<uint64_t>(value.data());
  *modified_us = GetLe<uint64_t>(value.data() + 8);
  return true;
}

void EncodeSyncMark(uint64_t next_lsn, uint64_t synced_lsn, std::string& out) {
  uint8_t value[8];
  for (size_t i = 0; i < 8; ++i) value[i] = static_cast<uint8_t>(synced_lsn >> (8 * i));
  EncodeJournalRecord(next_lsn, JournalOp::kSyncMark, kSyncMarkKey, {ByteView(value, 8)}, out);
}

uint64_t SyncMarkValue(const JournalRecordView& r) {
  if (r.op != JournalOp::kSyncMark || !r.value_ok || r.value.size() != 8) return 0;
  return GetLe<uint64_t>(r.value.data());
}

uint32_t ValueChecksum(const std::vector<ByteView>& value, bool value_damaged) {
  uint32_t crc = 0;
  for (ByteView p : value) crc = Crc32cAppend(crc, p.data(), p.size());
  return value_damaged ? ~crc : crc;
}

void EncodeJournalRecordHead(uint64_t lsn, JournalOp op, std::string_view key, size_t value_bytes,
                             uint32_t value_crc, std::string& out) {
  WMBT_CHECK(!key.empty() && key.size() <= kObjectKeyBytesMax);
  WMBT_CHECK(value_bytes <= kJournalValueBytesMax);
  WMBT_CHECK(HasValue(op) || value_bytes == 0);
  const size_t start = out.size();
  PutLe<uint32_t>(out, 0);  // header crc, filled in below
  PutLe<uint64_t>(out, lsn);
  out.push_back(static_cast<char>(op));
  out.push_back(static_cast<char>(kFormat));
  PutLe<uint16_t>(out, static_cast<uint16_t>(key.size()));
  PutLe<uint32_t>(out, static_cast<uint32_t>(value_bytes));
  PutLe<uint32_t>(out, value_crc);
  out.append(key);
  const auto* header = reinterpret_cast<const uint8_t*>(out.data() + start + 4);
  const uint32_t crc = Crc32c(header, kJournalRecordHeaderBytes - 4 + key.size());
  for (size_t i = 0; i < 4; ++i) out[start + i] = static_cast<char>(crc >> (8 * i));
}

void EncodeJournalRecord(uint64_t lsn, JournalOp op, std::string_view key,
                         const std::vector<ByteView>& value, std::string& out,
                         bool value_damaged) {
  size_t value_bytes = 0;
  for (ByteView p : value) value_bytes += p.size();
  out.reserve(out.size() + kJournalRecordHeaderBytes + key.size() + value_bytes);
  EncodeJournalRecordHead(lsn, op, key, value_bytes, ValueChecksum(value, value_damaged), out);
  for (ByteView p : value) out.append(reinterpret_cast<const char*>(p.data()), p.size());
}

Result<JournalRecordView> DecodeJournalRecord(ByteView in, uint64_t expected_lsn) {
  if (in.size() < kHeaderBytesV0) {
    return Status::Corruption("journal record: " + std::to_string(in.size()) +
                              " bytes left, fewer than a header");
  }
  const uint8_t* p = in.data();
  JournalRecordView r;
  r.lsn = GetLe<uint64_t>(p + 4);
  const uint8_t op = p[12];
  const uint8_t format = p[13];
  const uint16_t key_bytes = GetLe<uint16_t>(p + 14);
  const uint32_t value_bytes = GetLe<uint32_t>(p + 16);
  if (r.lsn != expected_lsn) {
    return Status::Corruption("journal record: lsn " + std::to_string(r.lsn) + ", expected " +
                              std::to_string(expected_lsn));
  }
  const size_t header_bytes = format == 0 ? kHeaderBytesV0 : kJournalRecordHeaderBytes;
  if (op < static_cast<uint8_t>(JournalOp::kPut) ||
      op > static_cast<uint8_t>(JournalOp::kSyncMark) || format > kFormat ||
      (format == 0 && op >= static_cast<uint8_t>(JournalOp::kPutPacked))) {
    return Status::Corruption("journal record " + std::to_string(r.lsn) + ": unknown op " +
                              std::to_string(op) + " or format " + std::to_string(format));
  }
  r.op = static_cast<JournalOp>(op);
  if (key_bytes == 0 || key_bytes > kObjectKeyBytesMax || value_bytes > kJournalValueBytesMax ||
      (!HasValue(r.op) && value_bytes != 0) ||
      (r.op == JournalOp::kPutPacked && value_bytes < kPackedValuePrefixBytes)) {
    return Status::Corruption("journal record " + std::to_string(r.lsn) + ": key length " +
                              std::to_string(key_bytes) + " or value length " +
                              std::to_string(value_bytes) + " out of range");
  }
  r.value_offset = header_bytes + key_bytes;
  const size_t total = r.value_offset + size_t{value_bytes};
  if (in.size() < total) {
    return Status::Corruption("journal record " + std::to_string(r.lsn) + ": torn (" +
                              std::to_string(in.size()) + " of " + std::to_string(total) +
                              " bytes)");
  }
  const size_t first_checked = format == 0 ? total : r.value_offset;
  if (Crc32c(p + 4, first_checked - 4) != GetLe<uint32_t>(p)) {
    return Status::Corruption("journal record " + std::to_string(r.lsn) + ": crc mismatch");
  }
  r.key = std::string_view(reinterpret_cast<const char*>(p + header_bytes), key_bytes);
  r.encoded_bytes = total;
  r.value = ByteView(p + r.value_offset, value_bytes);
  if (format != 0) {
    const uint32_t crc = Crc32c(r.value.data(), r.value.size()), stored = GetLe<uint32_t>(p + 20);
    r.value_ok = crc == stored;
    r.written_damaged = ~crc == stored;
  }
  return r;
}

}  // namespace wombatkv
