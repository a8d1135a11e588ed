#include "layout/envelope.h"

#include <cstring>
#include <string>

#include "base/check.h"
#include "base/crc32c.h"
#include "base/endian.h"
#include "base/limits.h"
#include "layout/block_codec.h"

namespace wombatkv::layout {
namespace {

constexpr uint8_t kFormatVersion = 1;
constexpr uint8_t kSealedSidecarVersion = 2;
constexpr size_t kCrcOffset = 44;

const char* Magic(EnvelopeKind kind) { return kind == EnvelopeKind::kBlob ? "WKB1" : "WKS1"; }

uint64_t MaxPayload(EnvelopeKind kind) {
  return kind == EnvelopeKind::kBlob ? limits::kBlockBytesMax : limits::kSidecarBytesMax;
}

}  // namespace

EnvelopeHeader EncodeEnvelopeHeader(EnvelopeKind kind, uint64_t payload_len,
                                    const ContentHash& hash) {
  return EncodeEnvelopeHeader(kind, {Codec::kRaw, payload_len, payload_len, hash});
}

EnvelopeHeader EncodeEnvelopeHeader(EnvelopeKind kind, const EnvelopeFields& f) {
  WMBT_CHECK(f.payload_len <= MaxPayload(kind));
  WMBT_CHECK(f.codec == Codec::kRaw ? f.stored_len == f.payload_len
                                    : f.stored_len > 0 && f.stored_len < f.payload_len &&
                                          kind == EnvelopeKind::kBlob);
  EnvelopeHeader h{};
  std::memcpy(h.bytes, Magic(kind), 4);
  WMBT_CHECK(f.version == kFormatVersion ||
             (f.version == kSealedSidecarVersion && kind == EnvelopeKind::kSidecar));
  h.bytes[4] = f.version;
  h.bytes[5] = static_cast<uint8_t>(f.codec);
  StoreLe16(h.bytes + 6, kEnvelopeHeaderBytes);
  StoreLe64(h.bytes + 8, f.payload_len);
  StoreLe64(h.bytes + 16, f.stored_len);
  std::memcpy(h.bytes + 24, f.hash.data(), ContentHash::kSize);
  StoreLe32(h.bytes + kCrcOffset, Crc32c(h.bytes, kCrcOffset));
  return h;
}

Result<EnvelopeFields> ParseEnvelopeHeader(EnvelopeKind kind, ByteView header,
                                           std::string_view what) {
  auto bad = [&](const std::string& why) {
    return Status::Corruption(std::string(what) + ": " + why);
  };
  const uint8_t* p = header.data();
  if (header.size() < kEnvelopeHeaderBytes) return bad("object shorter than its envelope header");
  if (std::memcmp(p, Magic(kind), 4) != 0) return bad("bad magic (not a WombatKV envelope)");
  if (LoadLe32(p + kCrcOffset) != Crc32c(p, kCrcOffset)) {
    return bad("envelope header CRC32C mismatch");
  }
  if (p[4] != kFormatVersion &&
      !(p[4] == kSealedSidecarVersion && kind == EnvelopeKind::kSidecar)) {
    return bad("unsupported envelope version " + std::to_string(p[4]));
  }
  if (p[5] > static_cast<uint8_t>(Codec::kZstd)) {
    return bad("unknown codec " + std::to_string(p[5]) + " (a newer WombatKV wrote it?)");
  }
  if (LoadLe16(p + 6) != kEnvelopeHeaderBytes) return bad("unexpected header length");
  EnvelopeFields f;
  f.version = p[4];
  f.codec = static_cast<Codec>(p[5]);
  f.payload_len = LoadLe64(p + 8);
  f.stored_len = LoadLe64(p + 16);
  f.hash = ContentHash::FromBytes({p + 24, ContentHash::kSize});
  if (f.payload_len > MaxPayload(kind)) return bad("payload length over the limit");
  if (f.codec == Codec::kRaw && f.stored_len != f.payload_len) {
    return bad("stored length differs from payload length");
  }
  if (f.codec == Codec::kZstd && kind == EnvelopeKind::kSidecar) {
    return bad("a sidecar envelope with codec 1 (only blobs are compressed)");
  }
  if (f.codec == Codec::kZstd && (f.stored_len == 0 || f.stored_len >= f.payload_len)) {
    return bad("zstd stored length is not below the payload length");
  }
  return f;
}

namespace {

// DecodeEnvelope after its header was parsed into `f` (DecodeVerified parses it once, to check
// the name before decoding).
Result<DecodedEnvelope> DecodeBody(const EnvelopeFields& f, std::shared_ptr<const Buffer> object,
                                   std::string_view what) {
  const size_t stored = object->size() - kEnvelopeHeaderBytes;
  if (f.stored_len != stored) {
    return Status::Corruption(std::string(what) + ": object holds " + std::to_string(stored) +
                              " bytes after the header, header says " +
                              std::to_string(f.stored_len));
  }
  DecodedEnvelope out;
  out.version = f.version;
  out.hash = f.hash;
  const ByteView body = object->view().subspan(kEnvelopeHeaderBytes);
  if (f.codec == Codec::kZstd) {
    WMBT_ASSIGN_OR_RETURN(std::shared_ptr<Buffer> plain, Decompress(body, f.payload_len, what));
    out.payload.data = plain->data();
    out.payload.size = plain->size();
    out.payload.owner = std::move(plain);
    return out;
  }
  out.payload.data = body.data();
  out.payload.size = body.size();
  out.payload.owner = std::move(object);
  return out;
}

}  // namespace

Result<DecodedEnvelope> DecodeEnvelope(EnvelopeKind kind, std::shared_ptr<const Buffer> object,
                                       std::string_view what) {
  WMBT_ASSIGN_OR_RETURN(EnvelopeFields f, ParseEnvelopeHeader(kind, object->view(), what));
  return DecodeBody(f, std::move(object), what);
}

Result<BufferSlice> DecodeVerified(EnvelopeKind kind, std::shared_ptr<const Buffer> object,
                                   const ContentHash& expected, std::string_view what) {
  // The name is checked before anything is decoded: a zstd header may ask for a large buffer.
  WMBT_ASSIGN_OR_RETURN(EnvelopeFields f, ParseEnvelopeHeader(kind, object->view(), what));
  if (f.hash != expected) {
    return Status::Corruption(std::string(what) + ": envelope names content hash " +
                              f.hash.ToHex() + ", expected " + expected.ToHex());
  }
  WMBT_ASSIGN_OR_RETURN(DecodedEnvelope env, DecodeBody(f, std::move(object), what));
  if (HashPayload(env.payload.view()) != expected) {
    return Status::Corruption(std::string(what) + ": payload bytes do not hash to " +
                              expected.ToHex());
  }
  return std::move(env.payload);
}

ContentHash SidecarSeal(std::string_view ns, const Fingerprint& fp, const BlockKey& tip,
                        const ContentHash& payload_hash) {
  std::string sealed = "wombatkv sidecar seal\n";
  sealed.append(ns);
  sealed.push_back('\0');
  sealed.append(reinterpret_cast<const char*>(fp.data()), Fingerprint::kSize);
  sealed.append(reinterpret_cast<const char*>(tip.data()), BlockKey::kSize);
  sealed.append(reinterpret_cast<const char*>(payload_hash.data()), ContentHash::kSize);
  return HashPayload(AsBytes(sealed));
}

EnvelopeHeader EncodeSidecarHeader(std::string_view ns, const Fingerprint& fp, const BlockKey& tip,
                                   uint64_t payload_len, const ContentHash& payload_hash) {
  EnvelopeFields f;
  f.version = kSealedSidecarVersion;
  f.payload_len = f.stored_len = payload_len;
  f.hash = SidecarSeal(ns, fp, tip, payload_hash);
  return EncodeEnvelopeHeader(EnvelopeKind::kSidecar, f);
}

Result<BufferSlice> DecodeSidecar(std::shared_ptr<const Buffer> object, std::string_view ns,
                                  const Fingerprint& fp, const BlockKey& tip,
                                  std::string_view what) {
  WMBT_ASSIGN_OR_RETURN(DecodedEnvelope env,
                        DecodeEnvelope(EnvelopeKind::kSidecar, std::move(object), what));
  const ContentHash payload_hash = HashPayload(env.payload.view());
  if (env.version == kSealedSidecarVersion) {
    if (SidecarSeal(ns, fp, tip, payload_hash) != env.hash) {
      return Status::Corruption(std::string(what) +
                                ": sidecar is not sealed to this key (its bytes changed, or it "
                                "was written for another namespace, fingerprint or tip)");
    }
  } else if (payload_hash != env.hash) {
    return Status::Corruption(std::string(what) +
                              ": sidecar bytes do not hash to the hash in their envelope");
  }
  return std::move(env.payload);
}

}  // namespace wombatkv::layout
