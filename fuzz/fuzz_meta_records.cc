// Fuzzes the L1 record decoders meta_records::DecodeHeadRecord and DecodePending (records read
// back from the MetaStore; L1 is a local file anyone with disk access can damage).
//
// Input: a key (libFuzzer's random-length string: bytes up to an unescaped "\\"), then the value.
// Properties:
//   1. Neither decoder crashes, leaks or hits UB on any key/value; failures are Corruption.
//   2. A decoded head record re-encodes to the same value (EncodeHeadValue(etag,
//      EncodeChainHead(head))) and its key is exactly HeadKey(ns, fp, chain_id) of its head.
//   3. A decoded pending record re-encodes to the same key (PendingKey) and value (EncodePending),
//      and its namespace is valid.
//   4. Records built from the input round-trip; a head stored under another head's key, or a
//      value with any byte changed inside the head, is rejected.
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_util.h"
#include "store/meta_records.h"

using namespace wombatkv;
using namespace wombatkv::meta_records;

namespace {

template <typename T>
T ConsumeFixed(FuzzedDataProvider& in) {
  T out;
  std::vector<uint8_t> b = in.ConsumeBytes<uint8_t>(T::kSize);
  b.resize(T::kSize);
  std::memcpy(out.data(), b.data(), T::kSize);
  return out;
}

std::string ValidNs(FuzzedDataProvider& in) {
  std::string ns = wombatkv::fuzz::KeyishString(in, 64);
  for (char& c : ns)
    if (!wombatkv::fuzz::IsKeyChar(c)) c = '_';
  if (ns.empty() || ns == "." || ns == "..") ns += 'n';
  return ns;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    FuzzedDataProvider in(data, size);
    const std::string key = in.ConsumeRandomLengthString(256);
    const std::string value = in.ConsumeRemainingBytesAsString();

    auto head = DecodeHeadRecord(key, value);
    if (head.ok()) {
      FUZZ_CHECK(key == HeadKey(head->head.ns, head->head.fp, head->head.chain_id));
      FUZZ_CHECK(EncodeHeadValue(head->etag, layout::EncodeChainHead(head->head)) == value);
      FUZZ_CHECK(wombatkv::fuzz::OracleNamespace(head->head.ns));
    } else {
      FUZZ_CHECK(head.status().code() == Code::kCorruption);
    }

    auto pending = DecodePending(key, value);
    if (pending.ok()) {
      FUZZ_CHECK(wombatkv::fuzz::OracleNamespace(pending->ns));
      FUZZ_CHECK(PendingKey(pending->ns, pending->fp, pending->key) == key);
      FUZZ_CHECK(EncodePending(pending->record) == value);
    } else {
      FUZZ_CHECK(pending.status().code() == Code::kCorruption);
    }
  }

  // 4. Records built from the input.
  FuzzedDataProvider in(data, size);
  PendingRecord r;
  r.parent = ConsumeFixed<BlockKey>(in);
  r.hash = ConsumeFixed<ContentHash>(in);
  r.length = in.ConsumeIntegral<uint32_t>();
  r.put_us = in.ConsumeIntegral<uint64_t>();
  const std::string ns = ValidNs(in);
  const Fingerprint fp = ConsumeFixed<Fingerprint>(in);
  const BlockKey bk = ConsumeFixed<BlockKey>(in);
  auto p = DecodePending(PendingKey(ns, fp, bk), EncodePending(r));
  FUZZ_CHECK(p.ok());
  FUZZ_CHECK(p->ns == ns && p->fp == fp && p->key == bk);
  FUZZ_CHECK(p->record.parent == r.parent && p->record.hash == r.hash &&
             p->record.length == r.length && p->record.put_us == r.put_us);
  // A pending value under a head key (and vice versa) is not a record of the other kind.
  FUZZ_CHECK(!DecodePending(HeadKey(ns, fp, bk), EncodePending(r)).ok());

  layout::ChainHead h;
  h.ns = ns;
  h.fp = fp;
  h.chain_id = bk;
  h.version = in.ConsumeIntegral<uint64_t>();
  h.published_us = in.ConsumeIntegral<uint64_t>();
  const size_t count = in.ConsumeIntegralInRange<size_t>(1, 4);
  for (size_t i = 0; i < count; ++i) {
    ChainEntry e;
    e.key = ConsumeFixed<BlockKey>(in);
    if (e.key.IsZero()) e.key.bytes[0] = 1;
    e.hash = ConsumeFixed<ContentHash>(in);
    e.length = in.ConsumeIntegralInRange<uint32_t>(0, 1 << 20);
    h.entries.push_back(e);
  }
  const std::string etag = in.ConsumeRandomLengthString(300);
  const std::string head_bytes = layout::EncodeChainHead(h);
  const std::string value = EncodeHeadValue(etag, head_bytes);
  const std::string key = HeadKey(ns, fp, bk);
  auto hr = DecodeHeadRecord(key, value);
  FUZZ_CHECK(hr.ok());
  FUZZ_CHECK(hr->etag == etag);
  FUZZ_CHECK(layout::EncodeChainHead(hr->head) == head_bytes);

  ChainId other = bk;
  other.bytes[in.ConsumeIntegralInRange<size_t>(0, 31)] ^= in.ConsumeIntegralInRange<uint8_t>(1, 255);
  FUZZ_CHECK(!DecodeHeadRecord(HeadKey(ns, fp, other), value).ok());
  FUZZ_CHECK(!DecodeHeadRecord(PendingKey(ns, fp, bk), value).ok());

  std::string damaged = value;
  const size_t pos = 2 + etag.size() + in.ConsumeIntegralInRange<size_t>(0, head_bytes.size() - 1);
  damaged[pos] = static_cast<char>(static_cast<uint8_t>(damaged[pos]) ^
                                   in.ConsumeIntegralInRange<uint8_t>(1, 255));
  FUZZ_CHECK(!DecodeHeadRecord(key, damaged).ok());
  return 0;
}
