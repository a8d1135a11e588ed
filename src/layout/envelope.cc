#include "layout/envelope.h"

#include <cstring>

#include "base/check.h"
#include "base/crc32c.h"
#include "base/endian.h"
#include "base/limits.h"

namespace wombatkv::layout {
namespace {

constexpr uint8_t kFormatVersion = 1;
constexpr uint8_t kCodecRaw = 0;
constexpr size_t kCrcOffset = 44;

const char* Magic(EnvelopeKind kind) { return kind == EnvelopeKind::kBlob ? "WKB1" : "WKS1"; }

uint64_t MaxPayload(EnvelopeKind kind) {
  return kind == EnvelopeKind::kBlob ? limits::kBlockBytesMax : limits::kSidecarBytesMax;
}

}  // namespace

EnvelopeHeader EncodeEnvelopeHeader(EnvelopeKind kind, uint64_t payload_len,
                                    const ContentHash& hash) {
  WMBT_CHECK(payload_len <= MaxPayload(kind));
  EnvelopeHeader h{};
  std::memcpy(h.bytes, Magic(kind), 4);
  h.bytes[4] = kFormatVersion;
  h.bytes[5] = kCodecRaw;
  StoreLe16(h.bytes + 6, kEnvelopeHeaderBytes);
  StoreLe64(h.bytes + 8, payload_len);
  StoreLe64(h.bytes + 16, payload_len);
  std::memcpy(h.bytes + 24, hash.data(), ContentHash::kSize);
  StoreLe32(h.bytes + kCrcOffset, Crc32c(h.bytes, kCrcOffset));
  return h;
}

Result<DecodedEnvelope> DecodeEnvelope(EnvelopeKind kind, std::shared_ptr<const Buffer> object,
                                       std::string_view what) {
  auto bad = [&](const std::string& why) {
    return Status::Corruption(std::string(what) + ": " + why);
  };
  const uint8_t* p = object->data();
  const size_t n = object->size();
  if (n < kEnvelopeHeaderBytes) return bad("object shorter than its envelope header");
  if (std::memcmp(p, Magic(kind), 4) != 0) return bad("bad magic (not a WombatKV envelope)");
  if (LoadLe32(p + kCrcOffset) != Crc32c(p, kCrcOffset)) return bad("envelope header CRC32C mismatch");
  if (p[4] != kFormatVersion) return bad("unsupported envelope version " + std::to_string(p[4]));
  if (p[5] != kCodecRaw) return bad("unsupported codec " + std::to_string(p[5]));
  if (LoadLe16(p + 6) != kEnvelopeHeaderBytes) return bad("unexpected header length");
  const uint64_t payload_len = LoadLe64(p + 8);
  const uint64_t stored_len = LoadLe64(p + 16);
  if (payload_len > MaxPayload(kind)) return bad("payload length over the limit");
  if (stored_len != payload_len) return bad("stored length differs from payload length");
  if (stored_len != n - kEnvelopeHeaderBytes) {
    return bad("object holds " + std::to_string(n - kEnvelopeHeaderBytes) +
               " bytes after the header, header says " + std::to_string(stored_len));
  }
  DecodedEnvelope out;
  out.hash = ContentHash::FromBytes({p + 24, ContentHash::kSize});
  out.payload.data = p + kEnvelopeHeaderBytes;
  out.payload.size = stored_len;
  out.payload.owner = std::move(object);
  return out;
}

Result<BufferSlice> DecodeVerified(EnvelopeKind kind, std::shared_ptr<const Buffer> object,
                                   const ContentHash& expected, std::string_view what) {
  WMBT_ASSIGN_OR_RETURN(DecodedEnvelope env, DecodeEnvelope(kind, std::move(object), what));
  if (env.hash != expected) {
    return Status::Corruption(std::string(what) + ": envelope names content hash " +
                              env.hash.ToHex() + ", expected " + expected.ToHex());
  }
  if (HashPayload(env.payload.view()) != expected) {
    return Status::Corruption(std::string(what) + ": payload bytes do not hash to " +
                              expected.ToHex());
  }
  return std::move(env.payload);
}

}  // namespace wombatkv::layout
