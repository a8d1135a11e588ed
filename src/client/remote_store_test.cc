// RemoteStore's own contract, beyond the store suites it also runs (remote_store_variants_test.cc):
// what it copies and what it does not, how channel and daemon failures arrive, DescribeL2.
#include "client/remote_store.h"

#include <gtest/gtest.h>

#include <functional>

#include "client/loopback_channel.h"
#include "store/store_test_util.h"
#include "wire/codec.h"

namespace wombatkv::testing {
namespace {

const Fingerprint kFp = Fp(3);

// Records what it was asked and answers with a canned response (or error).
class ScriptedChannel final : public Channel {
 public:
  Result<wire::Message> Call(wire::Message request) override {
    requests.push_back(request);
    for (const auto& p : request.payloads) seen_payload_data.push_back(p.data);
    if (!status.ok()) return status;
    wire::Message r = response;
    r.id = request.id;
    return r;
  }
  std::string Describe() const override { return "scripted://"; }

  std::vector<wire::Message> requests;
  std::vector<const uint8_t*> seen_payload_data;
  Status status;
  wire::Message response;
};

// Answers each request with what `answer` makes of it.
class FnChannel final : public Channel {
 public:
  explicit FnChannel(std::function<wire::Message(const wire::Message&)> answer)
      : answer_(std::move(answer)) {}
  Result<wire::Message> Call(wire::Message request) override {
    ops.push_back(request.op);
    wire::Message r = answer_(request);
    r.id = request.id;
    return r;
  }
  std::string Describe() const override { return "fn://"; }
  std::vector<uint16_t> ops;

 private:
  std::function<wire::Message(const wire::Message&)> answer_;
};

TEST(RemoteStore, SaveIsOneRoundTripAndFallsBackForAnOlderDaemon) {
  bool knows_save = true;
  auto ch = std::make_unique<FnChannel>([&](const wire::Message& req) {
    switch (static_cast<wire::Op>(req.op)) {
      case wire::Op::kSaveChain:
        if (!knows_save) {
          return wire::EncodeStatusResponse(
              wire::Op::kSaveChain,
              Status::InvalidArgument("unknown op 16: this daemon speaks protocol 1"));
        }
        return wire::SaveChainResponse{5}.Encode();
      case wire::Op::kPutBlocks:
        return wire::PutBlocksResponse{{ContentHash{}}}.Encode();
      case wire::Op::kPublishChain:
        return wire::PublishChainResponse{6}.Encode();
      default:
        return wire::EncodeStatusResponse(static_cast<wire::Op>(req.op),
                                          Status::Internal("unexpected op"));
    }
  });
  FnChannel* raw = ch.get();
  RemoteStore remote(std::move(ch));
  std::vector<uint8_t> a = Payload(1, 100);
  BlockPut put{Key(1), BlockKey{}, a, {}};
  EXPECT_EQ(*remote.SaveChain("default", kFp, {&put, 1}), 5u);
  EXPECT_EQ(raw->ops, (std::vector<uint16_t>{uint16_t(wire::Op::kSaveChain)}));

  knows_save = false;  // the daemon was replaced by an older one
  raw->ops.clear();
  EXPECT_EQ(*remote.SaveChain("default", kFp, {&put, 1}), 6u);
  EXPECT_EQ(*remote.SaveChain("default", kFp, {&put, 1}), 6u);  // no second try of op 16
  const auto put_op = uint16_t(wire::Op::kPutBlocks), pub_op = uint16_t(wire::Op::kPublishChain);
  EXPECT_EQ(raw->ops, (std::vector<uint16_t>{uint16_t(wire::Op::kSaveChain), put_op, pub_op,
                                             put_op, pub_op}));
}

TEST(RemoteStore, PutSendsTheCallersBytesWithoutCopyingThem) {
  auto ch = std::make_unique<ScriptedChannel>();
  ScriptedChannel* raw = ch.get();
  raw->response = wire::PutBlocksResponse{{ContentHash{}, ContentHash{}}}.Encode();
  RemoteStore remote(std::move(ch));
  std::vector<uint8_t> a = Payload(1, 100);
  auto owned = Buffer::CopyOf(Payload(2, 50));
  BlockPut puts[2] = {{Key(1), BlockKey{}, a, {}},
                      {Key(2), Key(1), {}, BufferSlice{owned, owned->data(), owned->size()}}};
  ASSERT_TRUE(remote.PutBlocks("default", kFp, puts).ok());
  ASSERT_EQ(raw->seen_payload_data.size(), 2u);
  EXPECT_EQ(raw->seen_payload_data[0], a.data()) << "a view of the caller's vector";
  EXPECT_EQ(raw->seen_payload_data[1], owned->data()) << "the caller's owned slice";
  EXPECT_EQ(raw->requests[0].payloads[0].owner, nullptr);
  EXPECT_EQ(raw->requests[0].payloads[1].owner, owned);
}

TEST(RemoteStore, GetReturnsABorrowOverTheResponsePayloads) {
  auto ch = std::make_unique<ScriptedChannel>();
  ScriptedChannel* raw = ch.get();
  auto body = Buffer::CopyOf(AsBytes("abcdef"));
  raw->response = wire::GetBlocksResponse{{BufferSlice{body, body->data(), 2},
                                           BufferSlice{body, body->data() + 2, 4}}}
                      .Encode();
  RemoteStore remote(std::move(ch));
  auto got = remote.GetBlocks("default", kFp, std::vector<BlockKey>{Key(1), Key(2)});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->payload(0).data(), body->data()) << "no copy out of the response";
  EXPECT_EQ(AsChars(got->payload(1)), "cdef");
}

// An answer carries at most 65,536 blocks: a larger get (the embedded store takes up to 1M keys)
// is several calls, one borrow, all or nothing — once the daemon computed every block of the
// whole get and then refused the answer as too large for a frame (a review, session 60).
TEST(RemoteStore, AGetOfMoreBlocksThanAnAnswerCarriesIsSeveralCallsAllOrNothing) {
  std::vector<size_t> asked;
  bool miss_in_second = false;
  auto ch = std::make_unique<FnChannel>([&](const wire::Message& req) {
    auto get = wire::GetBlocksRequest::Decode(req);
    EXPECT_TRUE(get.ok());
    asked.push_back(get->keys.size());
    if (miss_in_second && asked.size() == 2) {
      return wire::EncodeStatusResponse(wire::Op::kGetBlocks, Status::NotFound("a miss"));
    }
    std::vector<BufferSlice> payloads;
    for (const BlockKey& k : get->keys) {
      auto one = Buffer::CopyOf({k.bytes.data(), 1});
      payloads.push_back(BufferSlice{one, one->data(), 1});
    }
    return wire::GetBlocksResponse{std::move(payloads)}.Encode();
  });
  RemoteStore remote(std::move(ch));
  const size_t n = 2 * 65536 + 5;
  std::vector<BlockKey> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i].bytes[0] = static_cast<uint8_t>(i * 7);
  auto got = remote.GetBlocks("default", kFp, keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(asked, (std::vector<size_t>{65536, 65536, 5}));
  ASSERT_EQ(got->slices().size(), n);
  for (size_t i : {size_t{0}, size_t{65536}, n - 1}) {
    EXPECT_EQ(got->payload(i)[0], static_cast<uint8_t>(i * 7)) << i;
  }
  std::vector<uint8_t> room(n);
  std::vector<std::span<uint8_t>> dsts;
  for (size_t i = 0; i < n; ++i) dsts.emplace_back(&room[i], 1);
  std::vector<size_t> lens(n);
  ASSERT_TRUE(remote.GetBlocksInto("default", kFp, keys, dsts, lens).ok());
  EXPECT_EQ(room[n - 1], static_cast<uint8_t>((n - 1) * 7));
  asked.clear();
  miss_in_second = true;
  EXPECT_TRUE(remote.GetBlocks("default", kFp, keys).status().IsNotFound());
  EXPECT_EQ(asked.size(), 2u) << "went on after the miss";
}

TEST(RemoteStore, ChannelAndDaemonFailuresArriveWithTheirCodes) {
  auto ch = std::make_unique<ScriptedChannel>();
  ScriptedChannel* raw = ch.get();
  RemoteStore remote(std::move(ch));
  raw->status = Status::Unavailable("tcp://10.0.0.1:7070: connection refused");
  EXPECT_EQ(remote.LookupPrefix("default", kFp, std::vector<BlockKey>{Key(1)}).status().code(),
            Code::kUnavailable);
  EXPECT_EQ(remote.ListChains("").status().code(), Code::kUnavailable);
  EXPECT_EQ(remote.Stats().l0_blocks, 0u);
  EXPECT_NE(remote.DescribeL2().find("L2 unknown"), std::string::npos);

  raw->status = Status::Ok();
  raw->response = wire::EncodeStatusResponse(wire::Op::kGetSidecar, Status::NotFound("no sidecar"));
  auto miss = remote.GetSidecar("default", kFp, Key(1));
  EXPECT_TRUE(miss.status().IsNotFound());
  EXPECT_EQ(miss.status().message(), "no sidecar");

  // A daemon answering with the wrong shape is refused, not believed.
  raw->response = wire::LookupPrefixResponse{5}.Encode();
  auto lying = remote.LookupPrefix("default", kFp, std::vector<BlockKey>{Key(1)});
  // Not the caller's mistake: INTERNAL, not INVALID_ARGUMENT (which an engine takes for its own).
  EXPECT_EQ(lying.status().code(), Code::kInternal);
  raw->response = wire::PingResponse{}.Encode();
  const Status other_op = remote.GetChain("default", kFp, Key(1)).status();
  EXPECT_EQ(other_op.code(), Code::kInternal)
      << "a response to another op: " << other_op.ToString();
  EXPECT_NE(other_op.message().find("could not be read"), std::string::npos) << other_op.ToString();
  // A refusal the daemon sent stays what it is.
  raw->response =
      wire::EncodeStatusResponse(wire::Op::kLookupPrefix, Status::InvalidArgument("bad namespace"));
  auto refused = remote.LookupPrefix("default", kFp, std::vector<BlockKey>{Key(1)});
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(refused.status().message(), "bad namespace");
}

TEST(RemoteStore, ArgumentsTheDaemonWouldRefuseAreRefusedBeforeSending) {
  auto ch = std::make_unique<ScriptedChannel>();
  ScriptedChannel* raw = ch.get();
  RemoteStore remote(std::move(ch));
  EXPECT_EQ(remote.PutBlocks("a/b", kFp, {}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(remote.PutBlocks("default", kFp, {}).status().code(), Code::kInvalidArgument);
  uint8_t one = 0;
  BlockPut huge{Key(1), BlockKey{}, ByteView(&one, (256ull << 20) + 1)};
  EXPECT_EQ(remote.PutBlocks("default", kFp, {&huge, 1}).status().code(),
            Code::kInvalidArgument);  // never read: the size is checked first
  EXPECT_EQ(remote.GetBlocks(std::string(65, 'x'), kFp, {}).status().code(),
            Code::kInvalidArgument);
  EXPECT_TRUE(raw->requests.empty());
}

TEST(RemoteStore, DescribeL2NamesTheChannelAndTheDaemonsL2) {
  StoreHarness h(Planes::kMemory);
  Service service(h.Open(), *RealClock(), ServiceOptions{});
  RemoteStore remote(std::make_unique<LoopbackChannel>(service));
  const std::string d = remote.DescribeL2();
  EXPECT_EQ(d, "daemon loopback (L2 " + h.store().DescribeL2() + ")");
  EXPECT_TRUE(remote.Ping().ok());
}

TEST(RemoteStore, LoopbackChannelSendsItsTokenInAHelloFirst) {
  StoreHarness h(Planes::kMemory);
  auto grants = ParseTokenGrants("right-token=default");
  ASSERT_TRUE(grants.ok());
  Service service(h.Open(), *RealClock(), ServiceOptions{*grants});
  LoopbackOptions wrong;
  wrong.token_required = true;
  wrong.token = "wrong-token";
  RemoteStore refused(std::make_unique<LoopbackChannel>(service, wrong));
  auto r = refused.LookupPrefix("default", kFp, std::vector<BlockKey>{Key(1)});
  EXPECT_EQ(r.status().code(), Code::kPermissionDenied) << r.status().ToString();

  LoopbackOptions right = wrong;
  right.token = "right-token";
  RemoteStore allowed(std::make_unique<LoopbackChannel>(service, right));
  EXPECT_EQ(*allowed.LookupPrefix("default", kFp, std::vector<BlockKey>{Key(1)}), 0u);
  EXPECT_EQ(allowed.LookupPrefix("other", kFp, std::vector<BlockKey>{Key(1)}).status().code(),
            Code::kPermissionDenied);
  EXPECT_EQ(service.metrics(Transport::kTcp).auth_failures.load(), 2u);
}

TEST(RemoteStore, OwnedPutThroughTheDaemonIsCopiedThere) {
  // The daemon may not keep a client's request memory (a shm client reuses its area): the store
  // behind it holds its own copy.
  StoreHarness h(Planes::kMemory);
  Service service(h.Open(), *RealClock(), ServiceOptions{});
  RemoteStore remote(std::make_unique<LoopbackChannel>(service));
  std::vector<uint8_t> p = Payload(9, 4096);
  BlockPut put{Key(9), BlockKey{}, p};
  ASSERT_TRUE(remote.PutBlocks("default", kFp, {&put, 1}).ok());
  ASSERT_TRUE(remote.PublishChain("default", kFp, Key(9), Key(9)).ok());
  std::vector<uint8_t> expected = p;
  std::fill(p.begin(), p.end(), 0);  // the caller reuses its buffer
  auto got = remote.GetBlocks("default", kFp, std::vector<BlockKey>{Key(9)});
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(std::ranges::equal(got->payload(0), expected));
}

}  // namespace
}  // namespace wombatkv::testing
