// Fuzzes layout::DecodeChainHead (chain head objects read from L2, and the head bytes in L1).
//
// Properties, for every input:
//   1. Decoding the raw input never crashes, leaks or hits UB; on success the head is well formed
//      (valid namespace, 1..kChainBlocksMax entries, no zero key, lengths within the block limit)
//      and re-encodes to exactly the input bytes (the encoding is canonical).
//   2. Any single-byte change, truncation or extension of a valid encoding fails to decode (CRC32C
//      catches every burst of <= 32 bits; the length is pinned by the header).
//   3. A head built from the input (structured) decodes back to an equal head iff it satisfies
//      the format's rules, and is rejected otherwise.
#include <cstdint>
#include <cstring>
#include <string>

#include "base/limits.h"
#include "fuzz_util.h"
#include "layout/chain_head.h"

using namespace wombatkv;
using wombatkv::fuzz::OracleNamespace;

namespace {

bool SameHead(const layout::ChainHead& a, const layout::ChainHead& b) {
  return a.ns == b.ns && a.fp == b.fp && a.chain_id == b.chain_id && a.version == b.version &&
         a.published_us == b.published_us && a.entries == b.entries;
}

bool WellFormed(const layout::ChainHead& h) {
  if (!OracleNamespace(h.ns)) return false;
  if (h.entries.empty() || h.entries.size() > limits::kChainBlocksMax) return false;
  for (const ChainEntry& e : h.entries)
    if (e.key.IsZero() || e.length > limits::kBlockBytesMax) return false;
  return true;
}

// Property 2 on a valid encoding `enc`, mutating at positions chosen by `in`.
void CheckMutationsFail(const std::string& enc, FuzzedDataProvider& in) {
  for (int i = 0; i < 4; ++i) {
    std::string m = enc;
    const size_t pos = in.ConsumeIntegralInRange<size_t>(0, m.size() - 1);
    const uint8_t x = in.ConsumeIntegralInRange<uint8_t>(1, 255);
    m[pos] = static_cast<char>(static_cast<uint8_t>(m[pos]) ^ x);
    FUZZ_CHECK(!layout::DecodeChainHead(AsBytes(m), "fuzz").ok());
  }
  std::string shorter = enc.substr(0, in.ConsumeIntegralInRange<size_t>(0, enc.size() - 1));
  FUZZ_CHECK(!layout::DecodeChainHead(AsBytes(shorter), "fuzz").ok());
  std::string longer = enc + in.ConsumeBytesAsString(in.ConsumeIntegralInRange<size_t>(1, 64));
  if (longer.size() == enc.size()) longer += '\0';
  FUZZ_CHECK(!layout::DecodeChainHead(AsBytes(longer), "fuzz").ok());
}

template <typename T>
T ConsumeFixed(FuzzedDataProvider& in) {
  T out;
  std::vector<uint8_t> b = in.ConsumeBytes<uint8_t>(T::kSize);
  b.resize(T::kSize);
  std::memcpy(out.data(), b.data(), T::kSize);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // 1. The raw input as a stored head.
  const std::string raw(reinterpret_cast<const char*>(data), size);
  auto decoded = layout::DecodeChainHead(AsBytes(raw), "fuzz");
  if (decoded.ok()) {
    FUZZ_CHECK(WellFormed(*decoded));
    FUZZ_CHECK(layout::EncodeChainHead(*decoded) == raw);
    FuzzedDataProvider in(data, size);
    CheckMutationsFail(raw, in);
  }

  // 3. A head built from the input.
  FuzzedDataProvider in(data, size);
  layout::ChainHead h;
  h.ns = wombatkv::fuzz::KeyishString(in, limits::kNamespaceBytesMax);
  h.fp = ConsumeFixed<Fingerprint>(in);
  h.chain_id = ConsumeFixed<ChainId>(in);
  h.version = in.ConsumeIntegral<uint64_t>();
  h.published_us = in.ConsumeIntegral<uint64_t>();
  const size_t count = in.ConsumeIntegralInRange<size_t>(1, 16);
  for (size_t i = 0; i < count; ++i) {
    ChainEntry e;
    if (in.ConsumeIntegralInRange<uint8_t>(0, 15) != 0) e.key = ConsumeFixed<BlockKey>(in);
    e.hash = ConsumeFixed<ContentHash>(in);
    e.length = in.ConsumeBool() ? in.ConsumeIntegral<uint32_t>()
                                : in.ConsumeIntegralInRange<uint32_t>(0, 1 << 20);
    h.entries.push_back(e);
  }
  const std::string enc = layout::EncodeChainHead(h);
  FUZZ_CHECK(enc.size() == 72 + h.ns.size() + 56 * h.entries.size() + 4);
  auto back = layout::DecodeChainHead(AsBytes(enc), "fuzz");
  FUZZ_CHECK(back.ok() == WellFormed(h));
  if (back.ok()) {
    FUZZ_CHECK(SameHead(*back, h));
    CheckMutationsFail(enc, in);
  } else {
    FUZZ_CHECK(back.status().code() == Code::kCorruption);
  }
  return 0;
}
