// Identifiers of the WombatKV data model (see docs/glossary.md).
//
//   BlockKey     32 bytes chosen by the engine, normally a hash chain over token ids: a key names a
//                whole prefix. Opaque to the store. The all-zero key means "no parent" (a root).
//   ContentHash  BLAKE3 of a payload truncated to 20 bytes ("BLAKE3-20"). Names a stored blob.
//   Fingerprint  12-byte digest of a canonical model-identity envelope (FingerprintSpec). Blocks of
//                two fingerprints never mix.
//   ChainId      32 bytes naming a chain; the C ABI uses the chain's tip key.
//
// All are plain values; parsing from hex rejects anything that is not exactly the right number of
// hex digits (either case). Thread-safety: values.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <cstring>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "wombatkv/status.h"

namespace wombatkv {

template <size_t N, typename Tag>
struct FixedBytes {
  static constexpr size_t kSize = N;
  static constexpr size_t kHexSize = 2 * N;
  std::array<uint8_t, N> bytes{};

  static FixedBytes FromBytes(std::span<const uint8_t> in) {  // REQUIRES: in.size() == N
    FixedBytes out;
    std::memcpy(out.bytes.data(), in.data(), N);
    return out;
  }
  // Exactly 2*N hex digits, either case; anything else is InvalidArgument naming `what`.
  static Result<FixedBytes> FromHex(std::string_view hex, std::string_view what = Tag::kName);
  std::string ToHex() const;
  bool IsZero() const {
    for (uint8_t b : bytes) if (b != 0) return false;
    return true;
  }
  const uint8_t* data() const { return bytes.data(); }
  uint8_t* data() { return bytes.data(); }
  // The first 8 bytes as an integer: these ids are hashes, so this is a good table hash.
  uint64_t Prefix64() const {
    uint64_t v;
    std::memcpy(&v, bytes.data(), sizeof v);
    return v;
  }
  auto operator<=>(const FixedBytes&) const = default;
  bool operator==(const FixedBytes&) const = default;
};

struct BlockKeyTag { static constexpr std::string_view kName = "block key"; };
struct ContentHashTag { static constexpr std::string_view kName = "content hash"; };
struct FingerprintTag { static constexpr std::string_view kName = "fingerprint"; };

using BlockKey = FixedBytes<32, BlockKeyTag>;
using ChainId = BlockKey;
using ContentHash = FixedBytes<20, ContentHashTag>;
using Fingerprint = FixedBytes<12, FingerprintTag>;

struct FixedBytesHash {
  template <size_t N, typename Tag>
  size_t operator()(const FixedBytes<N, Tag>& v) const {
    return static_cast<size_t>(v.Prefix64());
  }
};

// Content hash of a payload: BLAKE3 truncated to 20 bytes.
ContentHash HashPayload(std::span<const uint8_t> payload);

// Copies `src` to `dst` (src.size() bytes) and returns the content hash of the copy. Works in
// cache-sized steps, hashing each step right after copying it, so the bytes are read from memory
// once; the hash is of the bytes that were written, whatever happens to `src` meanwhile.
ContentHash CopyAndHashPayload(std::span<const uint8_t> src, uint8_t* dst);

// Namespace names: [A-Za-z0-9._-]{1,64}, and not "." or "..". Returns InvalidArgument naming the
// offending name otherwise.
Status ValidateNamespace(std::string_view ns);

// The model-identity envelope. Canonical serialisation: the fields in this order as
// "name=value\n" lines (extras sorted by key), values escaped so no line can be forged; the
// digest is the first 12 bytes of BLAKE3 over that text with the domain prefix
// "wombatkv.fingerprint.v1\n". See docs/glossary.md.
struct FingerprintSpec {
  std::string model_id;
  std::string tokenizer_id;
  std::string kv_dtype;
  uint32_t tensor_parallel = 1;
  uint32_t pipeline_parallel = 1;
  std::string lora;  // LoRA topology; empty for none
  std::map<std::string, std::string> extras;

  std::string Canonical() const;
  Fingerprint Digest() const;
};

}  // namespace wombatkv
