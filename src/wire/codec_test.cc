#include "wire/codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <set>

#include "base/crc32c.h"
#include "base/limits.h"
#include "wire/field_io.h"
#include "wire/frame.h"

namespace wombatkv::wire {
namespace {

BufferSlice SliceOf(std::string_view s) {
  auto b = Buffer::CopyOf(AsBytes(s));
  return {b, b->data(), b->size()};
}

template <typename T>
T Filled(uint8_t v) {
  T out;
  out.bytes.fill(v);
  return out;
}

ChainState SomeChain(uint8_t v) {
  return ChainState{"tenant-" + std::to_string(v),
                    Filled<Fingerprint>(v),
                    Filled<ChainId>(v + 1),
                    Filled<BlockKey>(v + 2),
                    40ull + v,
                    7u + v};
}

// One encoded message and a decoder that re-encodes what it decoded (or returns the error).
struct Case {
  std::string name;
  Message message;
  std::function<Result<Message>(const Message&)> decode_and_reencode;
};

template <typename T>
Case Make(std::string name, const T& value) {
  return {std::move(name), value.Encode(), [](const Message& m) -> Result<Message> {
            auto d = T::Decode(m);
            if (!d.ok()) return d.status();
            return d->Encode();
          }};
}

// A non-OK response: decoding it gives back the status.
template <typename T>
Case MakeError(std::string name, Op op, const Status& s) {
  return {std::move(name), EncodeStatusResponse(op, s), [](const Message& m) -> Result<Message> {
            auto d = T::Decode(m);
            if (!d.ok()) return d.status();
            return d->Encode();
          }};
}

std::vector<Case> AllCases() {
  const Fingerprint fp = Filled<Fingerprint>(0x11);
  const BlockKey k1 = Filled<BlockKey>(0xaa), k2 = Filled<BlockKey>(0xbb);
  StoreStats stats;
  uint64_t* counters = reinterpret_cast<uint64_t*>(&stats);
  for (size_t i = 0; i < sizeof stats / 8; ++i) counters[i] = 1000 + i;
  std::vector<Case> c;
  c.push_back(Make("HelloRequest", HelloRequest{kProtocolVersion, "vllm-worker", "s3cret"}));
  c.push_back(Make("HelloResponse", HelloResponse{"wombatkvd 1.1.0", 1u << 30}));
  c.push_back(Make("PingRequest", PingRequest{}));
  c.push_back(Make("PingResponse", PingResponse{}));
  c.push_back(Make(
      "PutBlocksRequest",
      PutBlocksRequest{
          "default", fp, {{k1, BlockKey{}, SliceOf("first")}, {k2, k1, SliceOf("second block")}}}));
  c.push_back(Make("PutBlocksResponse",
                   PutBlocksResponse{{Filled<ContentHash>(1), Filled<ContentHash>(2)}}));
  c.push_back(Make("SaveChainRequest",
                   SaveChainRequest{PutBlocksRequest{"default", fp, {{k1, BlockKey{}, SliceOf("one")}}}}));
  c.push_back(Make("SaveChainResponse", SaveChainResponse{7}));
  c.push_back(
      Make("PublishChainRequest", PublishChainRequest{"default", fp, k2, k2, std::nullopt}));
  c.push_back(Make("PublishChainRequestCas", PublishChainRequest{"default", fp, k2, k2, 0}));
  c.push_back(Make("PublishChainResponse", PublishChainResponse{3}));
  c.push_back({"PublishChainConflict",
               PublishChainResponse::EncodeConflict(Status::Conflict("lost"), SomeChain(5)),
               [](const Message& m) -> Result<Message> {
                 ChainState cur;
                 cur.version = UINT64_MAX;  // tells whether Decode filled it
                 auto d = PublishChainResponse::Decode(m, &cur);
                 if (d.ok()) return Status::Internal("a conflict decoded as OK");
                 if (!d.status().IsConflict() || cur.version == UINT64_MAX) return d.status();
                 return PublishChainResponse::EncodeConflict(d.status(), cur);
               }});
  c.push_back(Make("LookupPrefixRequest", LookupPrefixRequest{"ns", fp, {k1, k2}}));
  c.push_back(Make("LookupPrefixResponse", LookupPrefixResponse{2}));
  c.push_back(Make("GetBlocksRequest", GetBlocksRequest{"ns", fp, {k1, k2}}));
  c.push_back(Make("GetBlocksResponse", GetBlocksResponse{{SliceOf("abc"), SliceOf("de")}}));
  c.push_back(Make("GetBlocksResponseEmpty", GetBlocksResponse{}));
  c.push_back(
      Make("GetByContentHashRequest", GetByContentHashRequest{"ns", Filled<ContentHash>(9)}));
  c.push_back(Make("GetByContentHashResponse", GetByContentHashResponse{SliceOf("payload")}));
  c.push_back(Make("PutSidecarRequest", PutSidecarRequest{"ns", fp, k2, SliceOf("sidecar")}));
  c.push_back(Make("PutSidecarResponse", PutSidecarResponse{}));
  c.push_back(Make("GetSidecarRequest", GetSidecarRequest{"ns", fp, k2}));
  c.push_back(Make("GetSidecarResponse", GetSidecarResponse{SliceOf("tail bytes")}));
  c.push_back(Make("RefreshRequest", RefreshRequest{}));
  c.push_back(Make("RefreshResponse", RefreshResponse{{1, 2, 3, 4}}));
  c.push_back(Make("ListChainsRequest", ListChainsRequest{"tenant-a"}));
  c.push_back(Make("ListChainsRequestAll", ListChainsRequest{""}));
  c.push_back(Make("ListChainsResponse", ListChainsResponse{{SomeChain(1), SomeChain(2)}}));
  c.push_back(Make("GetChainRequest", GetChainRequest{"ns", fp, k2}));
  c.push_back(Make("GetChainResponse", GetChainResponse{{{k1, Filled<ContentHash>(3), 4096},
                                                         {k2, Filled<ContentHash>(4), 17}}}));
  c.push_back(Make("StatsRequest", StatsRequest{}));
  c.push_back(Make("StatsResponse", StatsResponse{stats, "file:///data/l2"}));
  NamespaceUsage u;
  u.ns = "tenant-a";
  u.chains = 3;
  u.blob_bytes = 1 << 20;
  u.ttl_seconds = 3600;
  u.fingerprints.push_back(FingerprintUsage{fp, 3, 100, 7, 1 << 20, 1, 50, 0, 0});
  NamespaceUsage u2;
  u2.ns = "tenant-b";
  c.push_back(Make("UsageRequest", UsageRequest{"tenant-a", true}));
  c.push_back(Make("UsageResponse", UsageResponse{{u, u2}}));
  EvictionReport ev{5, 1, 40, 1 << 22, 1 << 21, 2, 1, 3, true};
  c.push_back(Make("EvictRequest", EvictRequest{}));
  c.push_back(Make("EvictResponse", EvictResponse{ev}));
  c.push_back(
      MakeError<GetBlocksResponse>("GetBlocksNotFound", Op::kGetBlocks,
                                   Status::NotFound("block 1 is not in a published chain")));
  c.push_back(MakeError<HelloResponse>("HelloDenied", Op::kHello,
                                       Status::PermissionDenied("the auth token was refused")));
  return c;
}

std::string Bytes(const Message& m) {
  std::string out(reinterpret_cast<const char*>(m.fields.data()), m.fields.size());
  for (const auto& p : m.payloads) out += "|" + std::string(AsChars(p.view()));
  return out;
}

TEST(Codec, EveryOpRoundTripsToTheSameBytes) {
  std::set<uint16_t> ops;
  for (const Case& c : AllCases()) {
    SCOPED_TRACE(c.name);
    auto again = c.decode_and_reencode(c.message);
    if (c.name == "GetBlocksNotFound" || c.name == "HelloDenied") {
      ASSERT_FALSE(again.ok());
      auto want = ResponseStatus(c.message);
      EXPECT_EQ(again.status().code(), want.code());
      EXPECT_EQ(again.status().message(), want.message());
      continue;
    }
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(again->op, c.message.op);
    EXPECT_EQ(again->flags, c.message.flags);
    EXPECT_EQ(Bytes(*again), Bytes(c.message));
    ops.insert(c.message.op);
  }
  EXPECT_EQ(ops.size(), size_t{kOpMax}) << "every op has a round-trip case";
  EXPECT_LT(kOpMax, 32) << "ServiceMetrics::kOps indexes by op";
}

TEST(Codec, DecodedValuesAreTheEncodedOnes) {
  const Fingerprint fp = Filled<Fingerprint>(0x11);
  auto put = PutBlocksRequest::Decode(
      PutBlocksRequest{"default", fp, {{Filled<BlockKey>(1), BlockKey{}, SliceOf("xy")}}}.Encode());
  ASSERT_TRUE(put.ok());
  EXPECT_EQ(put->ns, "default");
  EXPECT_EQ(put->fp, fp);
  ASSERT_EQ(put->blocks.size(), 1u);
  EXPECT_EQ(put->blocks[0].key, Filled<BlockKey>(1));
  EXPECT_TRUE(put->blocks[0].parent.IsZero());
  EXPECT_EQ(AsChars(put->blocks[0].payload.view()), "xy");

  auto cas = PublishChainRequest::Decode(
      PublishChainRequest{"n", fp, Filled<ChainId>(2), Filled<BlockKey>(3), 0}.Encode());
  ASSERT_TRUE(cas.ok());
  ASSERT_TRUE(cas->expected_version.has_value()) << "0 (must not exist) is not 'no CAS'";
  EXPECT_EQ(*cas->expected_version, 0u);
  auto lww = PublishChainRequest::Decode(
      PublishChainRequest{"n", fp, Filled<ChainId>(2), Filled<BlockKey>(3), {}}.Encode());
  ASSERT_TRUE(lww.ok());
  EXPECT_FALSE(lww->expected_version.has_value());

  ChainState cur;
  auto conflict = PublishChainResponse::Decode(
      PublishChainResponse::EncodeConflict(Status::Conflict("at v45"), SomeChain(5)), &cur);
  EXPECT_TRUE(conflict.status().IsConflict());
  EXPECT_EQ(conflict.status().message(), "at v45");
  EXPECT_EQ(cur.ns, "tenant-5");
  EXPECT_EQ(cur.version, 45u);
  EXPECT_EQ(cur.length, 12u);
  EXPECT_EQ(cur.tip, Filled<BlockKey>(7));

  StoreStats st;
  st.corruptions_detected = 77;
  st.l0_blocks = 5;
  auto stats = StatsResponse::Decode(StatsResponse{st, "s3://b/kv"}.Encode());
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->stats.corruptions_detected, 77u);
  EXPECT_EQ(stats->stats.l0_blocks, 5u);
  EXPECT_EQ(stats->l2, "s3://b/kv");
}

TEST(Codec, ResponsePayloadsAreTheSameSlicesNotCopies) {
  auto b = Buffer::CopyOf(AsBytes("0123456789"));
  GetBlocksResponse r{{BufferSlice{b, b->data() + 2, 3}}};
  auto d = GetBlocksResponse::Decode(r.Encode());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->payloads[0].data, b->data() + 2);
  EXPECT_EQ(d->payloads[0].owner.get(), b.get()) << "the slice keeps the buffer (pin) alive";
}

// Every decoder rejects every strict prefix of its fields, and one extra byte, with
// InvalidArgument — never a crash or a wrong value.
TEST(Codec, EveryDecoderRejectsEveryTruncationAndTrailingBytes) {
  size_t checked = 0;
  for (const Case& c : AllCases()) {
    SCOPED_TRACE(c.name);
    for (size_t len = 0; len < c.message.fields.size(); ++len) {
      Message cut = c.message;
      cut.fields.resize(len);
      auto r = c.decode_and_reencode(cut);
      ASSERT_FALSE(r.ok()) << "a " << len << "-byte prefix decoded";
      if (c.name == "PublishChainConflict" && len == 5 + 4) {
        // Exactly the status: a Conflict without the current state is itself a valid response.
        EXPECT_TRUE(r.status().IsConflict());
        continue;
      }
      EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << len << ": " << r.status().ToString();
      ++checked;
    }
    Message longer = c.message;
    longer.fields.push_back(0);
    auto r = c.decode_and_reencode(longer);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find("trailing"), std::string::npos) << r.status().ToString();
  }
  EXPECT_GT(checked, 1000u);
}

TEST(Codec, TruncationErrorsNameTheMessageAndField) {
  Message m = HelloRequest{kProtocolVersion, "vllm", "s3cret"}.Encode();
  m.fields.resize(m.fields.size() - 1);
  auto r = HelloRequest::Decode(m);
  EXPECT_EQ(r.status().message(), "HelloRequest: truncated field token (needs 6 bytes, 5 left)");
  EXPECT_EQ(r.status().message().find("s3cret"), std::string::npos);
}

TEST(Codec, AHelloHasOneEncoding) {
  const std::string long_name(limits::kClientNameBytesMax + 1, 'n');
  auto cut = HelloRequest::Decode(HelloRequest{kProtocolVersion, long_name, ""}.Encode());
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  EXPECT_EQ(cut->client_name, long_name.substr(0, limits::kClientNameBytesMax));

  // Written by hand, as a foreign client might: refused, not cut (a cut would re-encode to
  // other bytes than arrived).
  FieldWriter w;
  w.U32(kProtocolVersion);
  w.Str16(long_name);
  w.Str16("");
  Message m = HelloRequest{}.Encode();
  m.fields = w.Take();
  EXPECT_EQ(HelloRequest::Decode(m).status().message(),
            "HelloRequest: client_name of 257 bytes is over the limit 256");

  FieldWriter t;
  t.U32(kProtocolVersion);
  t.Str16("vllm");
  t.Str16(std::string(limits::kAuthTokenBytesMax + 1, 't'));
  m.fields = t.Take();
  EXPECT_EQ(HelloRequest::Decode(m).status().message(),
            "HelloRequest: token of 4097 bytes is over the limit 4096");
}

TEST(Codec, PayloadCountMustMatch) {
  Message put = PutBlocksRequest{"ns",
                                 {},
                                 {{Filled<BlockKey>(1), {}, SliceOf("a")},
                                  {Filled<BlockKey>(2), {}, SliceOf("b")}}}
                    .Encode();
  put.payloads.pop_back();
  auto r = PutBlocksRequest::Decode(put);
  EXPECT_EQ(r.status().message(), "PutBlocksRequest: 1 payloads for 2 blocks");

  Message get = GetBlocksResponse{{SliceOf("a")}}.Encode();
  get.payloads.push_back(SliceOf("extra"));
  EXPECT_EQ(GetBlocksResponse::Decode(get).status().message(),
            "GetBlocksResponse: 2 payloads where 1 belong");

  Message lookup = LookupPrefixRequest{"ns", {}, {}}.Encode();
  lookup.payloads.push_back(SliceOf("x"));
  EXPECT_EQ(LookupPrefixRequest::Decode(lookup).status().code(), Code::kInvalidArgument);

  Message sidecar = PutSidecarRequest{"ns", {}, {}, SliceOf("s")}.Encode();
  sidecar.payloads.clear();
  EXPECT_EQ(PutSidecarRequest::Decode(sidecar).status().code(), Code::kInvalidArgument);

  Message err = EncodeStatusResponse(Op::kGetSidecar, Status::NotFound("no sidecar"));
  err.payloads.push_back(SliceOf("smuggled"));
  EXPECT_EQ(GetSidecarResponse::Decode(err).status().code(), Code::kInvalidArgument)
      << "a non-OK response carries nothing else";
}

TEST(Codec, CountsOverTheirLimitAreRefusedBeforeAllocating) {
  Message m = LookupPrefixRequest{"ns", {}, {}}.Encode();
  const size_t count_at = 2 + 2 + Fingerprint::kSize;
  const uint32_t over = static_cast<uint32_t>(limits::kLookupKeysMax + 1);
  std::memcpy(m.fields.data() + count_at, &over, 4);  // little-endian host (x86/arm64)
  auto r = LookupPrefixRequest::Decode(m);
  EXPECT_EQ(r.status().message(),
            "LookupPrefixRequest: keys count 1048577 is over the limit 1048576");

  // Within the limit but more than the bytes can hold: refused without reserving 1M keys.
  const uint32_t many = 1000000;
  std::memcpy(m.fields.data() + count_at, &many, 4);
  r = LookupPrefixRequest::Decode(m);
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("truncated field keys"), std::string::npos);

  Message list = ListChainsResponse{}.Encode();
  const uint32_t huge = UINT32_MAX;
  std::memcpy(list.fields.data() + 5, &huge, 4);
  EXPECT_EQ(ListChainsResponse::Decode(list).status().code(), Code::kInvalidArgument);
}

TEST(Codec, MalformedHeadersAndValuesAreRefused) {
  Message hello = HelloRequest{}.Encode();
  Message wrong_op = hello;
  wrong_op.op = static_cast<uint16_t>(Op::kPing);
  EXPECT_EQ(HelloRequest::Decode(wrong_op).status().message(), "HelloRequest: message has op Ping");
  Message as_response = hello;
  as_response.flags = kFlagResponse;
  EXPECT_EQ(HelloRequest::Decode(as_response).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(HelloResponse::Decode(hello).status().message(),
            "HelloResponse: the message is a request");
  Message odd_flags = hello;
  odd_flags.flags = 2;
  EXPECT_EQ(HelloRequest::Decode(odd_flags).status().message(),
            "HelloRequest: flags 2 set unknown bits (only bit 0, response, is defined)");

  Message bad_code = PingResponse{}.Encode();
  bad_code.fields[0] = 200;
  EXPECT_EQ(PingResponse::Decode(bad_code).status().message(),
            "PingResponse: unknown status code 200");
  EXPECT_EQ(ResponseStatus(bad_code).code(), Code::kInvalidArgument);

  Message ok_with_message = EncodeStatusResponse(Op::kPing, Status::NotFound("x"));
  ok_with_message.fields[0] = 0;
  EXPECT_EQ(PingResponse::Decode(ok_with_message).status().code(), Code::kInvalidArgument);

  Message presence = PublishChainRequest{"ns", {}, {}, {}, {}}.Encode();
  presence.fields.back() = 2;
  EXPECT_EQ(PublishChainRequest::Decode(presence).status().message(),
            "PublishChainRequest: presence byte of expected_version is 2 (must be 0 or 1)");

  Message long_ns = ListChainsRequest{std::string(65, 'a')}.Encode();
  EXPECT_EQ(ListChainsRequest::Decode(long_ns).status().message(),
            "ListChainsRequest: ns of 65 bytes is over the limit 64");
}

TEST(Codec, RemoteStatusesArriveAsThemselves) {
  for (Code code : {Code::kNotFound, Code::kUnavailable, Code::kConflict, Code::kInvalidArgument,
                    Code::kCorruption, Code::kResourceExhausted, Code::kFailedPrecondition,
                    Code::kInternal, Code::kPermissionDenied}) {
    Status s(code, "daemon says " + std::string(CodeName(code)));
    auto r = GetChainResponse::Decode(EncodeStatusResponse(Op::kGetChain, s));
    EXPECT_EQ(r.status().code(), code);
    EXPECT_EQ(r.status().message(), s.message());
    EXPECT_EQ(ResponseStatus(EncodeStatusResponse(Op::kGetChain, s)).code(), code);
  }
}

TEST(Codec, ResponseStatusReadsOkOnlyFromAnOkStatus) {
  EXPECT_TRUE(ResponseStatus(EncodeStatusResponse(Op::kPing, Status::Ok())).ok());
  EXPECT_TRUE(ResponseStatus(PingResponse{}.Encode()).ok());
  Message ok_with_text = EncodeStatusResponse(Op::kPing, Status::NotFound("x"));
  ok_with_text.fields[0] = 0;  // code OK, but a one-byte message follows
  EXPECT_EQ(ResponseStatus(ok_with_text).code(), Code::kInvalidArgument);
  Message cut = EncodeStatusResponse(Op::kPing, Status::Ok());
  cut.fields.resize(4);
  EXPECT_EQ(ResponseStatus(cut).code(), Code::kInvalidArgument);
  EXPECT_NE(ResponseStatus(cut).message().find("Ping"), std::string::npos)
      << "the error names the message: " << ResponseStatus(cut).ToString();
}

TEST(Codec, OnlyDurableWritesAwaitADiskSync) {
  for (Op op : {Op::kSaveChain, Op::kPublishChain, Op::kPutSidecar, Op::kRefresh, Op::kEvict})
    EXPECT_TRUE(AwaitsDiskSync(static_cast<uint16_t>(op))) << OpName(static_cast<uint16_t>(op));
  for (Op op : {Op::kHello, Op::kPing, Op::kPutBlocks, Op::kLookupPrefix, Op::kGetBlocks,
                Op::kGetSidecar, Op::kStats})
    EXPECT_FALSE(AwaitsDiskSync(static_cast<uint16_t>(op))) << OpName(static_cast<uint16_t>(op));
  EXPECT_FALSE(AwaitsDiskSync(0));
  EXPECT_FALSE(AwaitsDiskSync(77));
}

TEST(Codec, OpNamesAreStable) {
  EXPECT_EQ(OpName(1), "Hello");
  EXPECT_EQ(OpName(static_cast<uint16_t>(Op::kLookupPrefix)), "LookupPrefix");
  EXPECT_EQ(OpName(13), "Stats");
  EXPECT_EQ(OpName(14), "Usage");
  EXPECT_EQ(OpName(15), "Evict");
  EXPECT_EQ(OpName(0), "op 0");
  EXPECT_EQ(OpName(77), "op 77");
}

// ---- Golden bytes: the same bytes are in docs/wire.md. Changing them changes the protocol.

std::vector<uint8_t> Concat(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}
std::vector<uint8_t> Rep(uint8_t b, size_t n) { return std::vector<uint8_t>(n, b); }

TEST(CodecGolden, Hello) {
  Message req = HelloRequest{1, "vllm", "s3cret"}.Encode();
  EXPECT_EQ(req.op, 1);
  EXPECT_EQ(req.flags, 0);
  EXPECT_EQ(req.fields, (std::vector<uint8_t>{
                            0x01, 0x00, 0x00, 0x00,                    // protocol_version 1
                            0x04, 0x00, 'v', 'l', 'l', 'm',            // client_name
                            0x06, 0x00, 's', '3', 'c', 'r', 'e', 't',  // token
                        }));
  Message resp = HelloResponse{"wkvd", 1u << 20}.Encode();
  EXPECT_EQ(resp.flags, kFlagResponse);
  EXPECT_EQ(resp.fields, (std::vector<uint8_t>{
                             0x00, 0x00, 0x00, 0x00, 0x00,    // status OK, empty message
                             0x04, 0x00, 'w', 'k', 'v', 'd',  // server_version
                             0x00, 0x00, 0x10, 0x00,          // max_frame_bytes 1 MiB
                         }));
  Message denied = EncodeStatusResponse(Op::kHello, Status::PermissionDenied("no"));
  EXPECT_EQ(denied.fields, (std::vector<uint8_t>{0x09, 0x02, 0x00, 0x00, 0x00, 'n', 'o'}));
}

TEST(CodecGolden, LookupPrefix) {
  Message req =
      LookupPrefixRequest{
          "ns", Filled<Fingerprint>(0x11), {Filled<BlockKey>(0xaa), Filled<BlockKey>(0xbb)}}
          .Encode();
  EXPECT_EQ(req.op, 5);
  EXPECT_EQ(req.fields, Concat({{0x02, 0x00, 'n', 's'},    // ns
                                Rep(0x11, 12),             // fingerprint
                                {0x02, 0x00, 0x00, 0x00},  // key count
                                Rep(0xaa, 32),
                                Rep(0xbb, 32)}));
  Message resp = LookupPrefixResponse{2}.Encode();
  EXPECT_EQ(resp.fields, (std::vector<uint8_t>{0x00, 0x00, 0x00, 0x00, 0x00,  // status OK
                                               0x02, 0, 0, 0, 0, 0, 0, 0}));  // matched 2
}

TEST(CodecGolden, GetBlocksResponseFramed) {
  Message resp = GetBlocksResponse{{SliceOf("abc"), SliceOf("de")}}.Encode();
  resp.id = 7;
  EXPECT_EQ(resp.fields, (std::vector<uint8_t>{0x00, 0x00, 0x00, 0x00, 0x00,  // status OK
                                               0x02, 0x00, 0x00, 0x00}));     // 2 blocks
  auto framed = Frame(resp);
  ASSERT_TRUE(framed.ok());
  std::vector<uint8_t> all;
  for (const auto& v : framed->iov()) {
    auto* p = static_cast<const uint8_t*>(v.iov_base);
    all.insert(all.end(), p, p + v.iov_len);
  }
  const std::vector<uint8_t> body = {
      0x07, 0,    0,    0,    0,    0,    0,    0,           // id 7
      0x06, 0x00, 0x01, 0x00,                                // op GetBlocks, flags response
      0x02, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00,        // 2 payloads, 9 bytes of fields
      0x03, 0,    0,    0,    0,    0,    0,    0,           // payload 0: 3 bytes
      0x02, 0,    0,    0,    0,    0,    0,    0,           // payload 1: 2 bytes
      0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,  // fields
      'a',  'b',  'c',  'd',  'e'};
  const uint32_t crc = Crc32c(body.data(), body.size());
  EXPECT_EQ(crc, 0x25b2266cu) << "the golden CRC recorded in docs/wire.md";
  std::vector<uint8_t> expected = {'W', 'M', 'B', 'T', 1, 0, 0, 0};
  for (int i = 0; i < 4; ++i) expected.push_back(uint8_t(crc >> (8 * i)));
  expected.insert(expected.end(), {uint8_t(body.size()), 0, 0, 0});
  expected.insert(expected.end(), body.begin(), body.end());
  EXPECT_EQ(all, expected);
}

}  // namespace
}  // namespace wombatkv::wire
