// The self-checking envelope around every payload stored in L2 (blobs and sidecars).
//
//   offset size  field
//   0      4     magic: "WKB1" (blob) or "WKS1" (sidecar)
//   4      1     format version: 1, or 2 for a sidecar sealed to its key (below)
//   5      1     codec: 0 = raw, 1 = zstd (block_codec.h; blobs only, WMBT_KV_BLOCK_COMPRESS)
//   6      2     header length (48), little-endian like every integer here
//   8      8     payload length (bytes the reader gets back)
//   16     8     stored length (bytes after the header)
//   24     20    BLAKE3-20 content hash of the payload
//   44     4     CRC32C of bytes [0, 44)
//   48     ...   stored bytes
//
// The CRC protects the header; the content hash protects the payload (after decoding). A sidecar
// of version 2 records, in place of its payload's hash, SidecarSeal of that hash and the
// sidecar's key (namespace, fingerprint, tip), so that one read under another key is Corruption.
// Raw: the stored length equals the payload length. Zstd: it is smaller (only a saving is written),
// and the reader gets a decoded copy. DecodeEnvelope checks the header only; the caller checks the
// content hash against the name it asked for (G9), because that check is the one that must never be
// skipped and it belongs next to the read.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "wombatkv/buffer.h"
#include "wombatkv/status.h"
#include "wombatkv/types.h"

namespace wombatkv::layout {

enum class EnvelopeKind : uint8_t { kBlob, kSidecar };

inline constexpr size_t kEnvelopeHeaderBytes = 48;

// The largest L2 object the local directory packs into its journal when blocks of up to
// `block_bytes` should be packed (WMBT_KV_L2_PACKED_BYTES counts a block's bytes: its blob is the
// envelope header, then the block, so at the default 1M a 1 MiB block is packed). 0 = none.
inline constexpr uint64_t PackedObjectBytesFor(uint64_t block_bytes) {
  return block_bytes == 0 ? 0 : block_bytes + kEnvelopeHeaderBytes;
}

enum class Codec : uint8_t { kRaw = 0, kZstd = 1 };

struct EnvelopeHeader {
  uint8_t bytes[kEnvelopeHeaderBytes];
};

// What a header says.
struct EnvelopeFields {
  Codec codec = Codec::kRaw;
  uint64_t payload_len = 0;  // bytes the reader gets back
  uint64_t stored_len = 0;   // bytes after the header
  ContentHash hash;
  uint8_t version = 1;  // 2: a sealed sidecar
};

// A raw envelope. REQUIRES: payload_len <= limits for the kind.
EnvelopeHeader EncodeEnvelopeHeader(EnvelopeKind kind, uint64_t payload_len,
                                    const ContentHash& hash);
// REQUIRES: fields a ParseEnvelopeHeader would accept.
EnvelopeHeader EncodeEnvelopeHeader(EnvelopeKind kind, const EnvelopeFields& fields);

// The first kEnvelopeHeaderBytes of an object (or fewer: Corruption), checked on their own:
// magic, CRC, version, a known codec, lengths within the kind's limit and consistent with it.
Result<EnvelopeFields> ParseEnvelopeHeader(EnvelopeKind kind, ByteView header,
                                           std::string_view what);

struct DecodedEnvelope {
  uint8_t version = 1;
  ContentHash hash;      // as recorded in the header
  BufferSlice payload;   // raw: points into the object's buffer (no copy); zstd: a decoded copy
};

// Parses an object read whole from L2. Corruption (naming `what`) on a bad magic, version, codec,
// header CRC or length, or stored bytes that do not decode to the payload length; never returns
// bytes it could not frame.
Result<DecodedEnvelope> DecodeEnvelope(EnvelopeKind kind, std::shared_ptr<const Buffer> object,
                                       std::string_view what);

// DecodeEnvelope + the payload hashes to `expected` (and the header names it). Corruption
// otherwise.
Result<BufferSlice> DecodeVerified(EnvelopeKind kind, std::shared_ptr<const Buffer> object,
                                   const ContentHash& expected, std::string_view what);

// A sidecar's seal: BLAKE3-20 of its key (namespace, fingerprint, tip) and its payload's hash.
ContentHash SidecarSeal(std::string_view ns, const Fingerprint& fp, const BlockKey& tip,
                        const ContentHash& payload_hash);
// The header of a sidecar sealed to its key (version 2). REQUIRES: payload_len within the limit.
EnvelopeHeader EncodeSidecarHeader(std::string_view ns, const Fingerprint& fp, const BlockKey& tip,
                                   uint64_t payload_len, const ContentHash& payload_hash);
// DecodeEnvelope of a sidecar read under the key (ns, fp, tip), then the check of its payload:
// version 2, the seal of its payload's hash and that key; version 1 (written before sidecars
// were sealed), its payload's hash. Corruption otherwise (naming `what`).
Result<BufferSlice> DecodeSidecar(std::shared_ptr<const Buffer> object, std::string_view ns,
                                  const Fingerprint& fp, const BlockKey& tip,
                                  std::string_view what);

}  // namespace wombatkv::layout
