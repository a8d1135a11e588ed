// The Service on a real Store: authentication and namespace grants, refusal of bad requests
// without losing the session, metrics, and the zero-copy GetBlocks response.
#include "daemon/service.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "layout/object_keys.h"
#include "store/store_test_util.h"
#include "wire/codec.h"

namespace wombatkv::testing {
namespace {

using wire::Message;
using wire::Op;

const Fingerprint kFp = Fp(4);

// Every reading is 3 µs after the previous one: a request measures 3 µs (bucket 2: < 4 µs).
class SteppingClock final : public Clock {
 public:
  uint64_t NowMicros() override { return now_ += 3; }
  uint64_t WallMicros() override { return now_; }
  void SleepMicros(uint64_t) override {}
  bool WaitFor(std::condition_variable&, std::unique_lock<std::mutex>&, uint64_t) override {
    return false;
  }

 private:
  uint64_t now_ = 0;
};

class ServiceTest : public ::testing::Test {
 protected:
  ServiceTest() {
    // "ops" may use every namespace; "alpha-only" only tenant-a.
    auto grants = ParseTokenGrants("ops-token-1234;alpha-token-5678=tenant-a");
    EXPECT_TRUE(grants.ok());
    ServiceOptions o{*grants, "wombatkvd test"};
    o.log = [this](LogLevel level, const std::string& line) {
      if (level == LogLevel::kWarn) logged_.push_back(line);
    };
    service_ = std::make_unique<Service>(store_, clock_, std::move(o));
    remote_.token_required = true;
    remote_.peer = "10.0.0.7:40000";
    auto c = MakeChain(2, 300);
    for (const char* ns : {"tenant-a", "tenant-b"}) {
      EXPECT_TRUE(store_.PutBlocks(ns, kFp, c.Puts()).ok());
      EXPECT_TRUE(store_.PublishChain(ns, kFp, c.tip(), c.tip()).ok());
    }
    chain_ = c;
  }

  Message Call(Session& s, Message request) {
    request.id = ++id_;
    Message r = service_->Handle(s, request);
    EXPECT_EQ(r.id, id_);
    EXPECT_EQ(r.op, request.op);
    EXPECT_TRUE(r.flags & wire::kFlagResponse);
    return r;
  }
  Status Hello(Session& s, std::string token) {
    return wire::HelloResponse::Decode(
               Call(s,
                    wire::HelloRequest{wire::kProtocolVersion, "test", std::move(token)}.Encode()))
        .status();
  }
  Result<size_t> Lookup(Session& s, std::string ns) {
    auto r = wire::LookupPrefixResponse::Decode(
        Call(s, wire::LookupPrefixRequest{std::move(ns), kFp, chain_.keys}.Encode()));
    if (!r.ok()) return r.status();
    return static_cast<size_t>(r->matched);
  }
  const ServiceMetrics& m() { return service_->metrics(Transport::kTcp); }  // sessions' default
  uint64_t Requests(Op op) { return m().requests[static_cast<size_t>(op)].load(); }
  uint64_t Errors(Op op) { return m().errors[static_cast<size_t>(op)].load(); }

  StoreHarness h_{Planes::kMemory};
  Store& store_ = h_.Open();
  SteppingClock clock_;
  std::vector<std::string> logged_;  // warn lines of the service (outlives it)
  std::unique_ptr<Service> service_;
  Session remote_;  // as on a non-loopback listener
  Session local_;   // as on a loopback listener: no token needed
  TestChain chain_;
  uint64_t id_ = 0;
};

TEST_F(ServiceTest, TokenRequiredSessionIsRefusedEverythingButHelloAndPingUntilAuthenticated) {
  auto r = Lookup(remote_, "tenant-a");
  EXPECT_EQ(r.status().code(), Code::kPermissionDenied);
  EXPECT_NE(r.status().message().find("WMBT_KV_AUTH_TOKEN"), std::string::npos);
  EXPECT_TRUE(wire::PingResponse::Decode(Call(remote_, wire::PingRequest{}.Encode())).ok());
  Status no_token = Hello(remote_, "");
  EXPECT_EQ(no_token.code(), Code::kPermissionDenied);
  EXPECT_FALSE(remote_.authenticated);
  EXPECT_EQ(m().auth_failures.load(), 2u);
}

TEST_F(ServiceTest, WrongTokenIsRefusedWithoutEchoingIt) {
  Status s = Hello(remote_, "ops-token-1235");
  EXPECT_EQ(s.code(), Code::kPermissionDenied);
  EXPECT_EQ(s.message().find("ops-token"), std::string::npos) << "no token in messages";
  EXPECT_FALSE(remote_.authenticated);
  EXPECT_EQ(Hello(remote_, "ops-token-123").code(), Code::kPermissionDenied) << "a prefix";
  EXPECT_EQ(Hello(remote_, "ops-token-12345").code(), Code::kPermissionDenied) << "an extension";
  EXPECT_EQ(Lookup(remote_, "tenant-a").status().code(), Code::kPermissionDenied);
  EXPECT_EQ(m().auth_failures.load(), 4u);
  // Each refusal is logged for the operator, with the peer, never with the token.
  ASSERT_EQ(logged_.size(), 4u);
  EXPECT_NE(logged_[0].find("auth: refused Hello from 10.0.0.7:40000: the auth token was refused"),
            std::string::npos)
      << logged_[0];
  EXPECT_NE(logged_[3].find("auth: refused LookupPrefix from 10.0.0.7:40000"), std::string::npos)
      << logged_[3];
  for (const std::string& line : logged_) EXPECT_EQ(line.find("ops-token"), std::string::npos);
}

TEST_F(ServiceTest, CorrectTokenOpensEveryNamespaceItGrants) {
  ASSERT_TRUE(Hello(remote_, "ops-token-1234").ok());
  EXPECT_TRUE(remote_.authenticated);
  EXPECT_EQ(*Lookup(remote_, "tenant-a"), 2u);
  EXPECT_EQ(*Lookup(remote_, "tenant-b"), 2u);
  auto all = wire::ListChainsResponse::Decode(Call(remote_, wire::ListChainsRequest{""}.Encode()));
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->chains.size(), 2u);
}

TEST_F(ServiceTest, NamespaceLimitedTokenCannotReachAnotherNamespace) {
  ASSERT_TRUE(Hello(remote_, "alpha-token-5678").ok());
  EXPECT_EQ(*Lookup(remote_, "tenant-a"), 2u);
  auto denied = Lookup(remote_, "tenant-b");
  EXPECT_EQ(denied.status().code(), Code::kPermissionDenied);
  EXPECT_NE(denied.status().message().find("\"tenant-b\""), std::string::npos)
      << denied.status().message();
  // Every op that names a namespace is checked, reads and writes alike.
  auto get = wire::GetBlocksResponse::Decode(
      Call(remote_, wire::GetBlocksRequest{"tenant-b", kFp, chain_.keys}.Encode()));
  EXPECT_EQ(get.status().code(), Code::kPermissionDenied);
  auto hash = wire::GetByContentHashResponse::Decode(
      Call(remote_,
           wire::GetByContentHashRequest{"tenant-b", HashPayload(chain_.payloads[0])}.Encode()));
  EXPECT_EQ(hash.status().code(), Code::kPermissionDenied);
  auto side = wire::PutSidecarResponse::Decode(
      Call(remote_, wire::PutSidecarRequest{"tenant-b", kFp, chain_.tip(), {}}.Encode()));
  EXPECT_EQ(side.status().code(), Code::kPermissionDenied);
  EXPECT_TRUE(store_.GetSidecar("tenant-b", kFp, chain_.tip()).status().IsNotFound())
      << "the refused write did not happen";
  auto one =
      wire::ListChainsResponse::Decode(Call(remote_, wire::ListChainsRequest{"tenant-b"}.Encode()));
  EXPECT_EQ(one.status().code(), Code::kPermissionDenied);
  // Listing everything lists only what the token grants.
  auto all = wire::ListChainsResponse::Decode(Call(remote_, wire::ListChainsRequest{""}.Encode()));
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->chains.size(), 1u);
  EXPECT_EQ(all->chains[0].ns, "tenant-a");
}

// A refusal names the namespace asked for, and it goes to the daemon's log: bytes that would
// start a line of their own there ("\n2026-… [error] …", a review of session 60) are escaped.
TEST_F(ServiceTest, ARefusedNamespaceCannotForgeALogLine) {
  ASSERT_TRUE(Hello(remote_, "alpha-token-5678").ok());
  logged_.clear();
  auto denied = Lookup(remote_, "x\"\nwombatkvd [error] FORGED");
  EXPECT_EQ(denied.status().code(), Code::kPermissionDenied);
  ASSERT_EQ(logged_.size(), 1u);
  EXPECT_EQ(logged_[0].find('\n'), std::string::npos) << logged_[0];
  EXPECT_NE(logged_[0].find("\"x\\x22\\x0awombatkvd [error] FORGED\""), std::string::npos)
      << logged_[0];
  EXPECT_EQ(denied.status().message().find('\n'), std::string::npos);
}

// A get whose answer could not be one frame is refused before any block is read (it once read
// them all, then failed to frame the answer).
TEST_F(ServiceTest, AGetOfMoreBlocksThanAnAnswerCarriesIsRefusedBeforeReadingAny) {
  const uint64_t gets = store_.Stats().gets;
  std::vector<BlockKey> keys(65537, chain_.keys[0]);
  auto got = wire::GetBlocksResponse::Decode(
      Call(local_, wire::GetBlocksRequest{"tenant-a", kFp, keys}.Encode()));
  EXPECT_EQ(got.status().code(), Code::kResourceExhausted);
  EXPECT_NE(got.status().message().find("split it"), std::string::npos) << got.status().message();
  EXPECT_EQ(store_.Stats().gets, gets);
}

TEST_F(ServiceTest, UsageIsNarrowedToTheGrantAndEvictNeedsAnAllNamespaceToken) {
  ASSERT_TRUE(Hello(remote_, "alpha-token-5678").ok());
  auto usage = wire::UsageResponse::Decode(Call(remote_, wire::UsageRequest{"", false}.Encode()));
  ASSERT_TRUE(usage.ok()) << usage.status().ToString();
  ASSERT_EQ(usage->namespaces.size(), 1u);
  EXPECT_EQ(usage->namespaces[0].ns, "tenant-a");
  EXPECT_EQ(usage->namespaces[0].chains, 1u);
  auto other =
      wire::UsageResponse::Decode(Call(remote_, wire::UsageRequest{"tenant-b", false}.Encode()));
  EXPECT_EQ(other.status().code(), Code::kPermissionDenied);
  auto evict = wire::EvictResponse::Decode(Call(remote_, wire::EvictRequest{}.Encode()));
  EXPECT_EQ(evict.status().code(), Code::kPermissionDenied);

  Session ops;
  ops.token_required = true;
  ASSERT_TRUE(Hello(ops, "ops-token-1234").ok());
  auto all = wire::UsageResponse::Decode(Call(ops, wire::UsageRequest{"", true}.Encode()));
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->namespaces.size(), 2u);
  EXPECT_TRUE(wire::EvictResponse::Decode(Call(ops, wire::EvictRequest{}.Encode())).ok());
}

TEST_F(ServiceTest, LoopbackSessionNeedsNoTokenButAGivenOneStillLimitsIt) {
  EXPECT_EQ(*Lookup(local_, "tenant-b"), 2u);
  ASSERT_TRUE(Hello(local_, "alpha-token-5678").ok());
  EXPECT_EQ(Lookup(local_, "tenant-b").status().code(), Code::kPermissionDenied);
  EXPECT_EQ(Hello(local_, "not-a-token").code(), Code::kPermissionDenied);
}

TEST_F(ServiceTest, HelloReportsTheServerAndRefusesAnotherProtocolVersion) {
  auto ok = wire::HelloResponse::Decode(Call(local_, wire::HelloRequest{}.Encode()));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->server_version, "wombatkvd test");
  EXPECT_EQ(ok->max_frame_bytes, wire::kDefaultMaxBodyBytes);
  auto old = wire::HelloResponse::Decode(
      Call(local_, wire::HelloRequest{wire::kProtocolVersion + 1, "future", ""}.Encode()));
  EXPECT_EQ(old.status().code(), Code::kFailedPrecondition);
}

TEST_F(ServiceTest, UnknownOpIsAnInvalidArgumentAnswerAndTheSessionGoesOn) {
  Message unknown;
  unknown.op = 77;
  Message r = Call(local_, unknown);
  Status s = wire::ResponseStatus(r);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("unknown op 77"), std::string::npos) << s.message();
  EXPECT_EQ(m().requests[0].load(), 1u) << "slot 0 counts unknown ops";
  EXPECT_EQ(m().bad_requests.load(), 1u);
  EXPECT_EQ(*Lookup(local_, "tenant-a"), 2u);
}

TEST_F(ServiceTest, UndecodableFieldsAreABadRequestNotACrash) {
  Message cut = wire::GetBlocksRequest{"tenant-a", kFp, chain_.keys}.Encode();
  cut.fields.resize(cut.fields.size() - 7);
  Status s = wire::ResponseStatus(Call(local_, cut));
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("GetBlocksRequest: truncated field keys"), std::string::npos)
      << s.message();
  Message flipped = wire::PingRequest{}.Encode();
  flipped.flags = wire::kFlagResponse;
  EXPECT_EQ(wire::ResponseStatus(Call(local_, flipped)).code(), Code::kInvalidArgument);
  Message put = wire::PutBlocksRequest{"tenant-a", kFp, {{Key(50), BlockKey{}, {}}}}.Encode();
  put.payloads.clear();
  EXPECT_EQ(wire::ResponseStatus(Call(local_, put)).code(), Code::kInvalidArgument);
  EXPECT_EQ(m().bad_requests.load(), 3u);
  EXPECT_EQ(Errors(Op::kGetBlocks), 1u);
  EXPECT_EQ(store_.Stats().gets, 0u) << "nothing reached the store";
}

TEST_F(ServiceTest, MetricsCountRequestsErrorsBytesAndLatencyPerOp) {
  ASSERT_EQ(*Lookup(local_, "tenant-a"), 2u);
  ASSERT_EQ(Lookup(local_, "bad/ns").status().code(), Code::kInvalidArgument);
  auto got = wire::GetBlocksResponse::Decode(
      Call(local_, wire::GetBlocksRequest{"tenant-a", kFp, chain_.keys}.Encode()));
  ASSERT_TRUE(got.ok());
  std::vector<uint8_t> p = Payload(60, 1000);
  Message put =
      wire::PutBlocksRequest{
          "tenant-a", kFp, {{Key(60), BlockKey{}, BufferSlice{nullptr, p.data(), p.size()}}}}
          .Encode();
  ASSERT_TRUE(wire::PutBlocksResponse::Decode(Call(local_, put)).ok());

  EXPECT_EQ(Requests(Op::kLookupPrefix), 2u);
  EXPECT_EQ(Errors(Op::kLookupPrefix), 1u);
  EXPECT_EQ(Requests(Op::kGetBlocks), 1u);
  EXPECT_EQ(Errors(Op::kGetBlocks), 0u);
  EXPECT_EQ(Requests(Op::kPutBlocks), 1u);
  EXPECT_EQ(m().bytes_in.load(), 1000u);
  EXPECT_EQ(m().bytes_out.load(), 600u);
  EXPECT_EQ(m().bad_requests.load(), 0u) << "a store error is not a bad request";
  const size_t op = static_cast<size_t>(Op::kLookupPrefix);
  EXPECT_EQ(m().latency_us_buckets[op][2].load(), 2u) << "3 µs per request on this clock";
  EXPECT_EQ(m().latency_us_sum[op].load(), 6u);
}

TEST_F(ServiceTest, GetBlocksResponseLendsTheCachesBytesWithoutACopy) {
  Message r = Call(local_, wire::GetBlocksRequest{"tenant-a", kFp, chain_.keys}.Encode());
  auto direct = store_.GetBlocks("tenant-a", kFp, chain_.keys);
  ASSERT_TRUE(direct.ok());
  ASSERT_EQ(r.payloads.size(), 2u);
  EXPECT_EQ(r.payloads[0].data, direct->payload(0).data()) << "the cached bytes themselves";
  EXPECT_TRUE(r.payloads[0].owner) << "the response holds the pin";
}

TEST_F(ServiceTest, ImmediateAnswersNeedNoIoAndAreCountedOnce) {
  auto now = [&](Session& s, Message request) {
    request.id = ++id_;
    return service_->HandleIfImmediate(s, request);
  };
  // Lookups and gets from RAM are answered at once, exactly as Handle answers them.
  auto lookup = now(local_, wire::LookupPrefixRequest{"tenant-a", kFp, chain_.keys}.Encode());
  ASSERT_TRUE(lookup.has_value());
  EXPECT_EQ(lookup->id, id_);
  EXPECT_EQ(wire::LookupPrefixResponse::Decode(*lookup)->matched, 2u);
  auto got = now(local_, wire::GetBlocksRequest{"tenant-a", kFp, chain_.keys}.Encode());
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->payloads.size(), 2u);
  EXPECT_EQ(Requests(Op::kLookupPrefix), 1u);
  EXPECT_EQ(Requests(Op::kGetBlocks), 1u);
  // A refusal needs no I/O either.
  auto refused = now(remote_, wire::GetBlocksRequest{"tenant-a", kFp, chain_.keys}.Encode());
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(wire::ResponseStatus(*refused).code(), Code::kPermissionDenied);
  // Anything that may do I/O goes to a worker, and nothing is counted for a declined request.
  EXPECT_FALSE(now(local_, wire::RefreshRequest{}.Encode()).has_value());
  EXPECT_FALSE(now(local_, wire::GetSidecarRequest{"tenant-a", kFp, chain_.tip()}.Encode())
                   .has_value());
  EXPECT_EQ(Requests(Op::kRefresh), 0u);
  EXPECT_EQ(Requests(Op::kGetSidecar), 0u);

  // After a restart nothing is in RAM: the get is declined (nothing counted, by the service or
  // the store), Handle reads L2, and then the same get is immediate.
  Store& fresh = h_.Reopen();
  Service service(fresh, clock_, ServiceOptions{});
  Message get = wire::GetBlocksRequest{"tenant-a", kFp, chain_.keys}.Encode();
  EXPECT_FALSE(service.HandleIfImmediate(local_, get).has_value());
  EXPECT_EQ(service.metrics(Transport::kTcp).requests[static_cast<size_t>(Op::kGetBlocks)].load(),
            0u);
  EXPECT_EQ(fresh.Stats().gets, 0u);
  EXPECT_EQ(fresh.Stats().cache_misses, 0u);
  Message cold = service.Handle(local_, get);
  EXPECT_TRUE(wire::ResponseStatus(cold).ok()) << wire::ResponseStatus(cold).ToString();
  const StoreStats after_cold = fresh.Stats();
  EXPECT_EQ(after_cold.gets, 1u);
  auto warm = service.HandleIfImmediate(local_, get);
  ASSERT_TRUE(warm.has_value());
  EXPECT_TRUE(wire::ResponseStatus(*warm).ok());
  EXPECT_EQ(warm->payloads[0].data, cold.payloads[0].data) << "the cached bytes";
  EXPECT_EQ(service.metrics(Transport::kTcp).requests[static_cast<size_t>(Op::kGetBlocks)].load(),
            2u);
  const StoreStats st = fresh.Stats();
  EXPECT_EQ(st.gets, 2u);
  EXPECT_EQ(st.get_hits, 2u);
  EXPECT_EQ(st.cache_misses, after_cold.cache_misses);
  EXPECT_EQ(st.cache_hits, after_cold.cache_hits + 2) << "the warm get's two hits, once each";
}

TEST_F(ServiceTest, CasConflictCarriesTheCurrentChainState) {
  auto c = MakeChain(1, 10, 77);
  ASSERT_TRUE(store_.PutBlocks("tenant-a", kFp, c.Puts()).ok());
  ChainState cur;
  auto r = wire::PublishChainResponse::Decode(
      Call(local_, wire::PublishChainRequest{"tenant-a", kFp, chain_.tip(), c.tip(), 0}.Encode()),
      &cur);
  EXPECT_TRUE(r.status().IsConflict());
  EXPECT_EQ(cur.version, 1u);
  EXPECT_EQ(cur.tip, chain_.tip());
}

// A request the daemon fails (here: damaged bytes found in L2) is logged for the operator, since
// a client may take it for a miss without a word; at most 5 lines in 10 s. A miss is an answer,
// not a failure: not logged.
TEST_F(ServiceTest, RequestsTheDaemonFailsAreLoggedWithinABudget) {
  StoreHarness h(Planes::kMemory);
  auto c = MakeChain(1, 300, 91);
  ASSERT_TRUE(h.Open().PutBlocks("tenant-a", kFp, c.Puts()).ok());
  ASSERT_TRUE(h.store().PublishChain("tenant-a", kFp, c.tip(), c.tip()).ok());
  Store& store = h.Reopen();  // nothing in RAM: a get reads L2
  const std::string blob = layout::BlobKey("kv", "tenant-a", HashPayload(c.payloads[0]));
  ASSERT_TRUE(h.mem_l2()->Put(blob, {AsBytes("not a blob")}, {}).ok());
  std::vector<std::string> lines;
  ServiceOptions o{{}, "wombatkvd test"};
  o.log = [&](LogLevel level, const std::string& line) {
    if (level == LogLevel::kWarn) lines.push_back(line);
  };
  Service service(store, clock_, std::move(o));
  auto get = [&](const BlockKey& key) {
    Message request = wire::GetBlocksRequest{"tenant-a", kFp, {key}}.Encode();
    return wire::ResponseStatus(service.Handle(local_, request));
  };
  EXPECT_EQ(get(Key(12345)).code(), Code::kNotFound);
  EXPECT_TRUE(lines.empty()) << lines.front();
  for (int i = 0; i < 7; ++i) EXPECT_EQ(get(c.tip()).code(), Code::kCorruption);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_NE(lines[0].find("failed: CORRUPTION"), std::string::npos) << lines[0];
}

// An L2 whose listings of tenant-b fail with an error naming the prefix listed (as the local
// directory's and S3's errors name the key).
class FailingListings final : public ObjectStoreWrapper {
 public:
  explicit FailingListings(ObjectStore* target) : ObjectStoreWrapper(target) {}
  bool failing = false;
  Result<ListPage> List(std::string_view prefix, std::string_view delimiter, std::string_view token,
                        size_t max_keys) override {
    if (failing && prefix.find("tenant-b") != std::string_view::npos)
      return Status::Unavailable("test: listing " + std::string(prefix) + " failed");
    return ObjectStoreWrapper::List(prefix, delimiter, token, max_keys);
  }
};

// Refresh reads every namespace: when it fails, a session limited to some namespaces is told
// only that it failed — the error names another tenant's keys — and the operator's log says why.
TEST_F(ServiceTest, AFailedRefreshDoesNotShowALimitedSessionOtherNamespaces) {
  auto mem = NewMemObjectStore();
  FailingListings l2(mem.get());
  auto l1 = NewMemMetaStore();
  StoreOptions o;
  o.object_store = &l2;
  o.meta_store = l1.get();
  auto store = Store::Open(o);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const TestChain c = MakeChain(1, 300, 7);
  ASSERT_TRUE((*store)->PutBlocks("tenant-b", kFp, c.Puts()).ok());
  ASSERT_TRUE((*store)->PublishChain("tenant-b", kFp, c.tip(), c.tip()).ok());
  std::vector<std::string> logged;
  ServiceOptions so;
  so.log = [&](LogLevel, const std::string& line) { logged.push_back(line); };
  Service service(**store, clock_, std::move(so));
  l2.failing = true;
  Session limited;
  limited.namespaces = {"tenant-a"};
  const Status failed =
      wire::ResponseStatus(service.Handle(limited, wire::RefreshRequest{}.Encode()));
  EXPECT_EQ(failed.code(), Code::kUnavailable);
  EXPECT_EQ(failed.message().find("tenant-b"), std::string::npos) << failed.ToString();
  EXPECT_TRUE(std::ranges::any_of(logged, [](const std::string& line) {
    return line.find("tenant-b") != std::string::npos;
  })) << "the operator is told why";
  // A session that may read everything gets the error itself.
  Session all;
  const Status full = wire::ResponseStatus(service.Handle(all, wire::RefreshRequest{}.Encode()));
  EXPECT_EQ(full.code(), Code::kUnavailable);
  EXPECT_NE(full.message().find("failed"), std::string::npos) << full.ToString();
}

}  // namespace
}  // namespace wombatkv::testing
