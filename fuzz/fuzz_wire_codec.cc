// Fuzzes the daemon's request path: wire::ParseBody (a TCP frame body) and every op decoder of
// wire/codec.h, requests and responses.
//
// The first input byte picks how the rest is read:
//   even  the rest is a frame body: ParseBody, then every decoder on the parsed message;
//   odd   the rest is [op lo, op hi, flags, payload count (mod 4), payload lengths (1 byte each),
//         payload bytes..., fields...] — a message built directly, so decoders see arbitrary
//         fields without the body framing in the way.
// Properties, besides no crash, leak or UB:
//   1. ParseBody either fails with InvalidArgument or gives payload slices inside the body whose
//      lengths, with the fixed part and the fields, add up to exactly the body.
//   2. A decoder that accepts a message re-encodes it to exactly the same fields and payloads
//      (the encoding is canonical), with the same op and flags.
//   3. A decoder that refuses returns a non-OK code; a request decoder always InvalidArgument.
//   4. A message accepted by a request decoder is refused by its response decoder and vice
//      versa (the response flag), and no decoder accepts another op's message.
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "wire/codec.h"
#include "wire/frame.h"

using namespace wombatkv;
using namespace wombatkv::wire;

namespace {

struct Decoder {
  uint16_t op;
  bool response;
  std::function<Result<Message>(const Message&)> decode_and_reencode;
};

template <typename T>
Decoder D(Op op, bool response) {
  return {static_cast<uint16_t>(op), response, [](const Message& m) -> Result<Message> {
            auto d = T::Decode(m);
            if (!d.ok()) return d.status();
            return d->Encode();
          }};
}

const std::vector<Decoder>& Decoders() {
  static const std::vector<Decoder> kAll = {
      D<HelloRequest>(Op::kHello, false),
      D<HelloResponse>(Op::kHello, true),
      D<PingRequest>(Op::kPing, false),
      D<PingResponse>(Op::kPing, true),
      D<PutBlocksRequest>(Op::kPutBlocks, false),
      D<PutBlocksResponse>(Op::kPutBlocks, true),
      D<PublishChainRequest>(Op::kPublishChain, false),
      {static_cast<uint16_t>(Op::kPublishChain), true,
       [](const Message& m) -> Result<Message> {
         ChainState cur;
         cur.version = UINT64_MAX;
         auto d = PublishChainResponse::Decode(m, &cur);
         if (d.ok()) return d->Encode();
         if (d.status().IsConflict() && cur.version != UINT64_MAX) {
           return PublishChainResponse::EncodeConflict(d.status(), cur);
         }
         return d.status();
       }},
      D<LookupPrefixRequest>(Op::kLookupPrefix, false),
      D<LookupPrefixResponse>(Op::kLookupPrefix, true),
      D<GetBlocksRequest>(Op::kGetBlocks, false),
      D<GetBlocksResponse>(Op::kGetBlocks, true),
      D<GetByContentHashRequest>(Op::kGetByContentHash, false),
      D<GetByContentHashResponse>(Op::kGetByContentHash, true),
      D<PutSidecarRequest>(Op::kPutSidecar, false),
      D<PutSidecarResponse>(Op::kPutSidecar, true),
      D<GetSidecarRequest>(Op::kGetSidecar, false),
      D<GetSidecarResponse>(Op::kGetSidecar, true),
      D<RefreshRequest>(Op::kRefresh, false),
      D<RefreshResponse>(Op::kRefresh, true),
      D<ListChainsRequest>(Op::kListChains, false),
      D<ListChainsResponse>(Op::kListChains, true),
      D<GetChainRequest>(Op::kGetChain, false),
      D<GetChainResponse>(Op::kGetChain, true),
      D<StatsRequest>(Op::kStats, false),
      D<StatsResponse>(Op::kStats, true),
      D<UsageRequest>(Op::kUsage, false),
      D<UsageResponse>(Op::kUsage, true),
      D<EvictRequest>(Op::kEvict, false),
      D<EvictResponse>(Op::kEvict, true),
      D<SaveChainRequest>(Op::kSaveChain, false),
      D<SaveChainResponse>(Op::kSaveChain, true),
  };
  return kAll;
}

void CheckDecoders(const Message& m) {
  (void)ResponseStatus(m);  // any bytes: a status or InvalidArgument
  for (const Decoder& d : Decoders()) {
    auto r = d.decode_and_reencode(m);
    if (!r.ok()) {
      FUZZ_CHECK(r.status().code() != Code::kOk);
      if (!d.response) FUZZ_CHECK(r.status().code() == Code::kInvalidArgument);
      continue;
    }
    FUZZ_CHECK(m.op == d.op);
    FUZZ_CHECK(((m.flags & kFlagResponse) != 0) == d.response);
    FUZZ_CHECK(r->op == m.op);
    FUZZ_CHECK(r->flags == m.flags);
    FUZZ_CHECK(r->fields == m.fields);
    FUZZ_CHECK(r->payloads.size() == m.payloads.size());
    for (size_t i = 0; i < m.payloads.size(); ++i) {
      FUZZ_CHECK(r->payloads[i].size == m.payloads[i].size);
      FUZZ_CHECK(r->payloads[i].size == 0 ||
                 std::memcmp(r->payloads[i].data, m.payloads[i].data, m.payloads[i].size) == 0);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const uint8_t* p = data + 1;
  size_t n = size - 1;
  if (mode % 2 == 0) {
    auto body = Buffer::CopyOf({p, n});
    auto m = ParseBody(body);
    if (!m.ok()) {
      FUZZ_CHECK(m.status().code() == Code::kInvalidArgument);
      return 0;
    }
    uint64_t total = kBodyFixedBytes + 8 * m->payloads.size() + m->fields.size();
    for (const auto& s : m->payloads) {
      FUZZ_CHECK(s.data >= body->data() && s.data + s.size <= body->data() + body->size());
      total += s.size;
    }
    FUZZ_CHECK(total == n);
    CheckDecoders(*m);
    return 0;
  }
  if (n < 4) return 0;
  Message m;
  m.op = static_cast<uint16_t>(p[0] | (p[1] << 8));
  m.flags = p[2];
  const size_t count = p[3] % 4;
  p += 4;
  n -= 4;
  if (n < count) return 0;
  std::vector<size_t> lens(p, p + count);
  p += count;
  n -= count;
  auto bytes = Buffer::CopyOf({p, n});
  size_t at = 0;
  for (size_t len : lens) {
    len = std::min(len, n - at);
    m.payloads.push_back(BufferSlice{bytes, bytes->data() + at, len});
    at += len;
  }
  m.fields.assign(bytes->data() + at, bytes->data() + n);
  CheckDecoders(m);
  return 0;
}
