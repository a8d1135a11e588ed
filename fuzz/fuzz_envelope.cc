// Fuzzes layout::DecodeEnvelope / DecodeVerified (blob and sidecar objects read from L2).
//
// Properties, for every input and both kinds (blob "WKB1", sidecar "WKS1"):
//   1. Decoding the raw input as an object never crashes, leaks or hits UB, and never allocates
//      more than the header's payload length (within its limit). On success the header re-encodes
//      byte for byte, the same bytes never decode as the other kind, and DecodeVerified against
//      the recorded hash succeeds iff the payload really hashes to it. Raw (codec 0): the payload
//      is exactly the bytes after the 48-byte header (a view into the object, no copy). Zstd
//      (codec 1): the payload has the header's payload length, in a buffer of its own.
//   2. For an envelope built from the input, raw and (when it saves) zstd: it decodes to the
//      payload; DecodeVerified succeeds with the payload's hash and fails with any other; any
//      single-byte change of the header fails DecodeEnvelope; any single-byte change of the stored
//      bytes makes DecodeVerified fail with Corruption or, for zstd only, return the very same
//      payload (some frame bytes do not change what it decodes to): never other bytes (G9). For a
//      raw payload DecodeEnvelope, which checks the header only, still passes. Any truncation or
//      extension fails.
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_util.h"
#include "layout/block_codec.h"
#include "layout/envelope.h"

using namespace wombatkv;
using layout::EnvelopeKind;

namespace {

std::shared_ptr<const Buffer> Object(std::string_view bytes) {
  return Buffer::CopyOf(AsBytes(bytes));
}

EnvelopeKind Other(EnvelopeKind k) {
  return k == EnvelopeKind::kBlob ? EnvelopeKind::kSidecar : EnvelopeKind::kBlob;
}

void CheckRaw(EnvelopeKind kind, std::string_view raw) {
  auto obj = Object(raw);
  auto env = layout::DecodeEnvelope(kind, obj, "fuzz");
  if (!env.ok()) {
    FUZZ_CHECK(env.status().code() == Code::kCorruption);
    FUZZ_CHECK(!layout::DecodeVerified(kind, obj, ContentHash{}, "fuzz").ok());
    return;
  }
  FUZZ_CHECK(raw.size() >= layout::kEnvelopeHeaderBytes);
  auto fields = layout::ParseEnvelopeHeader(kind, obj->view(), "fuzz");
  FUZZ_CHECK(fields.ok());
  FUZZ_CHECK(fields->stored_len == raw.size() - layout::kEnvelopeHeaderBytes);
  FUZZ_CHECK(env->payload.size == fields->payload_len);
  FUZZ_CHECK(env->hash == fields->hash);
  if (fields->codec == layout::Codec::kRaw) {
    FUZZ_CHECK(env->payload.data == obj->data() + layout::kEnvelopeHeaderBytes);
    FUZZ_CHECK(env->payload.owner.get() == obj.get());
  } else {
    FUZZ_CHECK(fields->stored_len < fields->payload_len);
    FUZZ_CHECK(env->payload.owner.get() != obj.get());
  }
  auto header = layout::EncodeEnvelopeHeader(kind, *fields);
  FUZZ_CHECK(std::memcmp(header.bytes, raw.data(), layout::kEnvelopeHeaderBytes) == 0);
  FUZZ_CHECK(!layout::DecodeEnvelope(Other(kind), obj, "fuzz").ok());
  const bool hashes = HashPayload(env->payload.view()) == env->hash;
  FUZZ_CHECK(layout::DecodeVerified(kind, obj, env->hash, "fuzz").ok() == hashes);
}

// Property 2 for one object holding `payload` (raw or zstd).
void CheckBuilt(FuzzedDataProvider& in, EnvelopeKind kind, const std::string& object,
                const std::string& payload, bool raw) {
  const ContentHash hash = HashPayload(AsBytes(payload));
  auto env = layout::DecodeEnvelope(kind, Object(object), "fuzz");
  FUZZ_CHECK(env.ok());
  FUZZ_CHECK(env->hash == hash);
  FUZZ_CHECK(std::string_view(AsChars(env->payload.view())) == payload);
  auto verified = layout::DecodeVerified(kind, Object(object), hash, "fuzz");
  FUZZ_CHECK(verified.ok() && AsChars(verified->view()) == payload);
  ContentHash wrong = hash;
  wrong.bytes[in.ConsumeIntegralInRange<size_t>(0, ContentHash::kSize - 1)] ^=
      in.ConsumeIntegralInRange<uint8_t>(1, 255);
  FUZZ_CHECK(!layout::DecodeVerified(kind, Object(object), wrong, "fuzz").ok());
  FUZZ_CHECK(!layout::DecodeEnvelope(Other(kind), Object(object), "fuzz").ok());

  for (int i = 0; i < 4; ++i) {
    std::string m = object;
    const size_t pos = in.ConsumeIntegralInRange<size_t>(0, m.size() - 1);
    m[pos] = static_cast<char>(static_cast<uint8_t>(m[pos]) ^
                               in.ConsumeIntegralInRange<uint8_t>(1, 255));
    auto obj = Object(m);
    if (pos < layout::kEnvelopeHeaderBytes) {
      FUZZ_CHECK(!layout::DecodeEnvelope(kind, obj, "fuzz").ok());
    } else {
      auto v = layout::DecodeVerified(kind, obj, hash, "fuzz");
      if (raw) {
        FUZZ_CHECK(layout::DecodeEnvelope(kind, obj, "fuzz").ok());
        FUZZ_CHECK(!v.ok() && v.status().code() == Code::kCorruption);
      } else if (v.ok()) {
        // A zstd frame has bytes that do not change what it decodes to (e.g. its window size):
        // never wrong bytes, then, but the same payload.
        FUZZ_CHECK(AsChars(v->view()) == payload);
      } else {
        FUZZ_CHECK(v.status().code() == Code::kCorruption);
      }
    }
  }
  const size_t cut = in.ConsumeIntegralInRange<size_t>(0, object.size() - 1);
  FUZZ_CHECK(!layout::DecodeEnvelope(kind, Object(object.substr(0, cut)), "fuzz").ok());
  std::string longer = object + in.ConsumeRandomLengthString(64);
  if (longer.size() == object.size()) longer += 'x';
  FUZZ_CHECK(!layout::DecodeEnvelope(kind, Object(longer), "fuzz").ok());
}

std::string HeaderBytes(const layout::EnvelopeHeader& h) {
  return std::string(reinterpret_cast<const char*>(h.bytes), layout::kEnvelopeHeaderBytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string raw(reinterpret_cast<const char*>(data), size);
  CheckRaw(EnvelopeKind::kBlob, raw);
  CheckRaw(EnvelopeKind::kSidecar, raw);

  // 2. Envelopes built from the input: raw, then zstd when it saves (written as the store does).
  FuzzedDataProvider in(data, size);
  const EnvelopeKind kind = in.ConsumeBool() ? EnvelopeKind::kBlob : EnvelopeKind::kSidecar;
  const std::string payload = in.ConsumeRandomLengthString(2048);
  const ContentHash hash = HashPayload(AsBytes(payload));
  CheckBuilt(in, kind,
             HeaderBytes(layout::EncodeEnvelopeHeader(kind, payload.size(), hash)) + payload,
             payload, /*raw=*/true);
  BufferSlice packed = layout::CompressIfWorthIt(AsBytes(payload), in.ConsumeIntegralInRange(1, 3));
  if (packed.owner && kind == EnvelopeKind::kBlob) {  // only blobs are compressed
    const auto header = layout::EncodeEnvelopeHeader(
        kind, {layout::Codec::kZstd, payload.size(), packed.size, hash});
    CheckBuilt(in, kind, HeaderBytes(header) + std::string(AsChars(packed.view())), payload,
               /*raw=*/false);
  }
  return 0;
}
