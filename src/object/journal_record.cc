#include "object/journal_record.h"

#include <cstring>

#include "base/check.h"
#include "base/crc32c.h"
#include "object/object_key.h"

namespace wombatkv {
namespace {

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

}  // namespace

void EncodeJournalRecord(uint64_t lsn, JournalOp op, std::string_view key,
                         const std::vector<ByteView>& value, std::string& out) {
  size_t value_bytes = 0;
  for (ByteView p : value) value_bytes += p.size();
  WMBT_CHECK(!key.empty() && key.size() <= kObjectKeyBytesMax);
  WMBT_CHECK(value_bytes <= kJournalValueBytesMax);
  WMBT_CHECK(op == JournalOp::kPut || value_bytes == 0);
  const size_t start = out.size();
  out.reserve(start + kJournalRecordHeaderBytes + key.size() + value_bytes);
  PutLe<uint32_t>(out, 0);  // crc, filled in below
  PutLe<uint64_t>(out, lsn);
  out.push_back(static_cast<char>(op));
  out.push_back(0);
  PutLe<uint16_t>(out, static_cast<uint16_t>(key.size()));
  PutLe<uint32_t>(out, static_cast<uint32_t>(value_bytes));
  out.append(key);
  for (ByteView p : value) out.append(reinterpret_cast<const char*>(p.data()), p.size());
  const auto* body = reinterpret_cast<const uint8_t*>(out.data() + start + 4);
  const uint32_t crc = Crc32c(body, out.size() - start - 4);
  for (size_t i = 0; i < 4; ++i) out[start + i] = static_cast<char>(crc >> (8 * i));
}

Result<JournalRecordView> DecodeJournalRecord(ByteView in, uint64_t expected_lsn) {
  if (in.size() < kJournalRecordHeaderBytes) {
    return Status::Corruption("journal record: " + std::to_string(in.size()) +
                              " bytes left, fewer than a header");
  }
  const uint8_t* p = in.data();
  JournalRecordView r;
  r.lsn = GetLe<uint64_t>(p + 4);
  const uint8_t op = p[12];
  const uint16_t key_bytes = GetLe<uint16_t>(p + 14);
  const uint32_t value_bytes = GetLe<uint32_t>(p + 16);
  if (r.lsn != expected_lsn) {
    return Status::Corruption("journal record: lsn " + std::to_string(r.lsn) + ", expected " +
                              std::to_string(expected_lsn));
  }
  if (op < static_cast<uint8_t>(JournalOp::kPut) || op > static_cast<uint8_t>(JournalOp::kExternal) ||
      p[13] != 0) {
    return Status::Corruption("journal record " + std::to_string(r.lsn) + ": unknown op " +
                              std::to_string(op));
  }
  r.op = static_cast<JournalOp>(op);
  if (key_bytes == 0 || key_bytes > kObjectKeyBytesMax || value_bytes > kJournalValueBytesMax ||
      (r.op != JournalOp::kPut && value_bytes != 0)) {
    return Status::Corruption("journal record " + std::to_string(r.lsn) + ": key length " +
                              std::to_string(key_bytes) + " or value length " +
                              std::to_string(value_bytes) + " out of range");
  }
  const size_t total = kJournalRecordHeaderBytes + key_bytes + size_t{value_bytes};
  if (in.size() < total) {
    return Status::Corruption("journal record " + std::to_string(r.lsn) + ": torn (" +
                              std::to_string(in.size()) + " of " + std::to_string(total) +
                              " bytes)");
  }
  if (Crc32c(p + 4, total - 4) != GetLe<uint32_t>(p)) {
    return Status::Corruption("journal record " + std::to_string(r.lsn) + ": crc mismatch");
  }
  r.key = std::string_view(reinterpret_cast<const char*>(p + kJournalRecordHeaderBytes), key_bytes);
  r.value = ByteView(p + kJournalRecordHeaderBytes + key_bytes, value_bytes);
  r.encoded_bytes = total;
  return r;
}

}  // namespace wombatkv
