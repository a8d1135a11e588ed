// Fuzzes DecodeJournalRecord (FsObjectStore's write-ahead journal, read back at every open after
// a crash: torn writes, garbage after the cut, stale bytes of earlier files).
//
// Properties, for every input:
//   1. Decoding the raw input (as replay does: records one after another, each expected to carry
//      the next LSN; a sync mark carries the next one and takes none) never crashes, leaks or hits
//      UB; each record decoded is well formed (known op, key of 1..1024 bytes, a value only for the
//      ops that have one, within the input) and, in the current format, re-encodes to exactly the
//      bytes it was decoded from (the encoding is canonical) — with its value's checksum marked
//      bad when it decoded so.
//   2. Any single-byte change of a valid encoding fails to decode or decodes with a bad value
//      (never as another sound record); any truncation fails; a valid encoding never decodes under
//      another expected LSN (stale bytes never pass as new records).
//   3. A record built from the input round-trips.
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "object/journal_record.h"

using namespace wombatkv;

namespace {

void CheckMutationsFail(const std::string& enc, uint64_t lsn, FuzzedDataProvider& in) {
  for (int i = 0; i < 4; ++i) {
    std::string m = enc;
    const size_t pos = in.ConsumeIntegralInRange<size_t>(0, m.size() - 1);
    const uint8_t x = in.ConsumeIntegralInRange<uint8_t>(1, 255);
    m[pos] = static_cast<char>(static_cast<uint8_t>(m[pos]) ^ x);
    auto r = DecodeJournalRecord(AsBytes(m), lsn);
    FUZZ_CHECK(!r.ok() || !r->value_ok);
  }
  std::string shorter = enc.substr(0, in.ConsumeIntegralInRange<size_t>(0, enc.size() - 1));
  FUZZ_CHECK(!DecodeJournalRecord(AsBytes(shorter), lsn).ok());
  FUZZ_CHECK(!DecodeJournalRecord(AsBytes(enc), lsn + 1 + in.ConsumeIntegral<uint8_t>()).ok());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // 1. The raw input as a journal file, starting at the LSN its first header names.
  ByteView rest(data, size);
  uint64_t lsn = 0;
  for (size_t i = 0; i < 8 && 4 + i < size; ++i) lsn |= uint64_t{data[4 + i]} << (8 * i);
  while (true) {
    auto r = DecodeJournalRecord(rest, lsn);
    if (!r.ok()) {
      FUZZ_CHECK(r.status().code() == Code::kCorruption);
      break;
    }
    FUZZ_CHECK(r->lsn == lsn && r->encoded_bytes <= rest.size());
    FUZZ_CHECK(!r->key.empty() && r->key.size() <= 1024);
    FUZZ_CHECK(r->op == JournalOp::kPut || r->op == JournalOp::kPutPacked ||
               r->op == JournalOp::kSyncMark || r->value.empty());
    FUZZ_CHECK(r->value_offset + r->value.size() == r->encoded_bytes);
    if (r->value_offset == kJournalRecordHeaderBytes + r->key.size()) {  // the current format
      std::string again;
      EncodeJournalRecord(r->lsn, r->op, r->key, {r->value}, again, /*value_damaged=*/!r->value_ok);
      const std::string was(reinterpret_cast<const char*>(rest.data()), r->encoded_bytes);
      if (r->value_ok) {
        FUZZ_CHECK(again == was);
      } else {  // the same record but for its value's checksum, which is anything but the right one
        FUZZ_CHECK(again.size() == was.size() && again.substr(24) == was.substr(24) &&
                   again.substr(4, 16) == was.substr(4, 16));
      }
    }
    rest = rest.subspan(r->encoded_bytes);
    if (r->op != JournalOp::kSyncMark) ++lsn;
  }

  // 3. A record built from the input, then 2. on its encoding.
  FuzzedDataProvider in(data, size);
  const uint64_t built_lsn = in.ConsumeIntegral<uint64_t>();
  const auto op = static_cast<JournalOp>(in.ConsumeIntegralInRange<uint8_t>(1, 4));
  std::string key = wombatkv::fuzz::KeyishString(in, 64);
  if (key.empty()) key = "k";
  std::string value =
      op == JournalOp::kPut || op == JournalOp::kPutPacked
          ? in.ConsumeBytesAsString(in.ConsumeIntegralInRange<size_t>(0, 512))
          : std::string();
  if (op == JournalOp::kPutPacked) value = std::string(kPackedValuePrefixBytes, 'p') + value;
  std::string enc;
  EncodeJournalRecord(built_lsn, op, key, {AsBytes(value)}, enc);
  FUZZ_CHECK(enc.size() == kJournalRecordHeaderBytes + key.size() + value.size());
  auto back = DecodeJournalRecord(AsBytes(enc), built_lsn);
  FUZZ_CHECK(back.ok() && back->value_ok);
  FUZZ_CHECK(back->op == op && back->key == key &&
             std::string(reinterpret_cast<const char*>(back->value.data()), back->value.size()) ==
                 value);
  CheckMutationsFail(enc, built_lsn, in);
  return 0;
}
