// Fuzzes layout::DecodeEnvelope / DecodeVerified (blob and sidecar objects read from L2).
//
// Properties, for every input and both kinds (blob "WKB1", sidecar "WKS1"):
//   1. Decoding the raw input as an object never crashes, leaks or hits UB. On success the payload
//      is exactly the bytes after the 48-byte header (a view into the object, no copy), the header
//      re-encodes byte for byte, the same bytes never decode as the other kind, and DecodeVerified
//      against the recorded hash succeeds iff the payload really hashes to it.
//   2. For an envelope built from the input: it decodes to the payload; DecodeVerified succeeds with
//      the payload's hash and fails with any other; any single-byte change of the header fails
//      DecodeEnvelope; any single-byte change of the payload passes DecodeEnvelope (which checks the
//      header only) but fails DecodeVerified (G9: corrupt bytes are never served); any truncation
//      or extension fails.
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_util.h"
#include "layout/envelope.h"

using namespace wombatkv;
using layout::EnvelopeKind;

namespace {

std::shared_ptr<const Buffer> Object(std::string_view bytes) { return Buffer::CopyOf(AsBytes(bytes)); }

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
  FUZZ_CHECK(env->payload.data == obj->data() + layout::kEnvelopeHeaderBytes);
  FUZZ_CHECK(env->payload.size == raw.size() - layout::kEnvelopeHeaderBytes);
  FUZZ_CHECK(env->payload.owner.get() == obj.get());
  auto header = layout::EncodeEnvelopeHeader(kind, env->payload.size, env->hash);
  FUZZ_CHECK(std::memcmp(header.bytes, raw.data(), layout::kEnvelopeHeaderBytes) == 0);
  FUZZ_CHECK(!layout::DecodeEnvelope(Other(kind), obj, "fuzz").ok());
  const bool hashes = HashPayload(env->payload.view()) == env->hash;
  FUZZ_CHECK(layout::DecodeVerified(kind, obj, env->hash, "fuzz").ok() == hashes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string raw(reinterpret_cast<const char*>(data), size);
  CheckRaw(EnvelopeKind::kBlob, raw);
  CheckRaw(EnvelopeKind::kSidecar, raw);

  // 2. An envelope built from the input.
  FuzzedDataProvider in(data, size);
  const EnvelopeKind kind = in.ConsumeBool() ? EnvelopeKind::kBlob : EnvelopeKind::kSidecar;
  const std::string payload = in.ConsumeRandomLengthString(2048);
  const ContentHash hash = HashPayload(AsBytes(payload));
  auto header = layout::EncodeEnvelopeHeader(kind, payload.size(), hash);
  std::string object(reinterpret_cast<const char*>(header.bytes), layout::kEnvelopeHeaderBytes);
  object += payload;

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
    m[pos] = static_cast<char>(static_cast<uint8_t>(m[pos]) ^ in.ConsumeIntegralInRange<uint8_t>(1, 255));
    auto obj = Object(m);
    if (pos < layout::kEnvelopeHeaderBytes) {
      FUZZ_CHECK(!layout::DecodeEnvelope(kind, obj, "fuzz").ok());
    } else {
      FUZZ_CHECK(layout::DecodeEnvelope(kind, obj, "fuzz").ok());
      auto v = layout::DecodeVerified(kind, obj, hash, "fuzz");
      FUZZ_CHECK(!v.ok() && v.status().code() == Code::kCorruption);
    }
  }
  const size_t cut = in.ConsumeIntegralInRange<size_t>(0, object.size() - 1);
  FUZZ_CHECK(!layout::DecodeEnvelope(kind, Object(object.substr(0, cut)), "fuzz").ok());
  std::string longer = object + in.ConsumeRandomLengthString(64);
  if (longer.size() == object.size()) longer += 'x';
  FUZZ_CHECK(!layout::DecodeEnvelope(kind, Object(longer), "fuzz").ok());
  return 0;
}
