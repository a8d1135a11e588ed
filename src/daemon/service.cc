#include "daemon/service.h"

#include <algorithm>
#include <bit>
#include <mutex>
#include <shared_mutex>

#include "base/log_budget.h"
#include "base/quoted.h"
#include "wire/codec.h"
#include "wire/frame.h"

namespace wombatkv {
namespace {

using wire::Message;
using wire::Op;

// Compares without an early exit, so the time taken does not tell how many leading bytes of a
// guess were right. (Only the lengths leak, which is not the secret.)
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  const size_t n = std::max(a.size(), b.size());
  volatile uint8_t diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t x = i < a.size() ? static_cast<uint8_t>(a[i]) : 0;
    const uint8_t y = i < b.size() ? static_cast<uint8_t>(b[i]) : 0;
    diff = diff | static_cast<uint8_t>(x ^ y);
  }
  return diff == 0;
}

uint64_t PayloadBytes(const Message& m) {
  uint64_t n = 0;
  for (const auto& p : m.payloads) n += p.size;
  return n;
}

std::string Joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

struct Service::Impl {
  Store& store;
  Clock& clock;
  ServiceOptions options;
  ServiceMetrics metrics[kTransports];
  ServiceMetrics& MetricsOf(const Session& session) {
    return metrics[static_cast<size_t>(session.transport)];
  }
  // Guards every Session::namespaces: a Hello writes it while pipelined requests of the same
  // session may read it.
  std::shared_mutex sessions_mu;
  // Refusals are caused by peers: at most 10 log lines a second (the rest counted).
  LogBudget refusals_logged{10, 1'000'000};
  LogBudget hidden_errors_logged{10, 1'000'000};
  // Requests the daemon failed (its L2 unreachable, corruption found, a bug), which clients may
  // take for misses without a word: at most 5 lines in 10 s.
  LogBudget failures_logged{5, 10'000'000};

  Impl(Store& s, Clock& c, ServiceOptions o) : store(s), clock(c), options(std::move(o)) {}

  // Handle, or with !may_block HandleIfImmediate.
  std::optional<Message> Serve(Session& session, const Message& request, bool may_block);
  // SaveChain and PublishChain through the store's completion-based calls: `respond` may run
  // later, on another thread.
  void WriteAsync(Session& session, const Message& request, Respond respond);
  // The answer to a request that may not run at all (unknown op, no authentication), or nullopt.
  std::optional<Message> Refusal(Session& session, const Message& request);
  // Counts the response in the metrics and makes it the answer to request `id`, `op`.
  void Finish(ServiceMetrics& m, uint64_t start, uint64_t bytes_in, uint64_t id, uint16_t op,
              Message* response);
  std::optional<Message> Dispatch(Session& session, Op op, const Message& request,
                                  bool may_block);
  Message Hello(Session& session, const Message& request);
  Status CheckNamespace(Session& session, std::string_view ns);
  Message ListChains(Session& session, const Message& request);
  Message Usage(Session& session, const Message& request);
  std::vector<std::string> Granted(Session& session) {
    std::shared_lock lock(sessions_mu);
    std::vector<std::string> g = session.namespaces;
    std::sort(g.begin(), g.end());
    g.erase(std::unique(g.begin(), g.end()), g.end());
    return g;
  }

  Message Refuse(const Session& session, Op op, const Status& s) {
    MetricsOf(session).auth_failures.fetch_add(1, std::memory_order_relaxed);
    // Who was refused what, for the operator (never the token: the message does not hold it).
    std::string note;
    if (options.log && refusals_logged.Take(clock.NowMicros(), &note)) {
      options.log(LogLevel::kWarn, "auth: refused " + wire::OpName(static_cast<uint16_t>(op)) +
                                       " from " + session.peer + ": " + s.message() + note);
    }
    return wire::EncodeStatusResponse(op, s);
  }
  Message BadRequest(const Session& session, Op op, const Status& s) {
    MetricsOf(session).bad_requests.fetch_add(1, std::memory_order_relaxed);
    return wire::EncodeStatusResponse(op, s);
  }
};

Status Service::Impl::CheckNamespace(Session& session, std::string_view ns) {
  std::shared_lock lock(sessions_mu);
  if (session.namespaces.empty()) return Status::Ok();
  for (const auto& granted : session.namespaces) {
    if (granted == ns) return Status::Ok();
  }
  return Status::PermissionDenied("namespace " + Quoted(ns) +
                                  " is not granted to this session's auth token (it grants: " +
                                  Joined(session.namespaces) + ")");
}

Message Service::Impl::Hello(Session& session, const Message& request) {
  auto req = wire::HelloRequest::Decode(request);
  if (!req.ok()) return BadRequest(session, Op::kHello, req.status());
  if (req->protocol_version != wire::kProtocolVersion) {
    return BadRequest(session, Op::kHello,
                      Status::FailedPrecondition(
                          "client speaks protocol " + std::to_string(req->protocol_version) +
                          ", this daemon speaks " + std::to_string(wire::kProtocolVersion) +
                          ": use a client and daemon of the same release"));
  }
  if (!req->token.empty() && !options.tokens.empty()) {
    const TokenGrant* match = nullptr;
    for (const auto& g : options.tokens) {  // every grant, no early exit
      if (ConstantTimeEquals(req->token, g.token)) match = &g;
    }
    if (!match) {
      return Refuse(
          session, Op::kHello,
          Status::PermissionDenied("the auth token was refused: it matches none of the daemon's "
                                   "tokens (check WMBT_KV_AUTH_TOKEN)"));
    }
    {
      std::unique_lock lock(sessions_mu);
      session.namespaces = match->namespaces;
    }
    session.authenticated.store(true, std::memory_order_release);
  } else if (session.token_required) {
    return Refuse(session, Op::kHello,
                  Status::PermissionDenied("this listener requires an auth token: set "
                                           "WMBT_KV_AUTH_TOKEN to one the daemon was given"));
  }
  wire::HelloResponse resp;
  resp.server_version = options.server_version;
  resp.max_frame_bytes = options.max_frame_bytes;
  return resp.Encode();
}

Message Service::Impl::ListChains(Session& session, const Message& request) {
  auto req = wire::ListChainsRequest::Decode(request);
  if (!req.ok()) return BadRequest(session, Op::kListChains, req.status());
  wire::ListChainsResponse resp;
  if (!req->ns.empty()) {
    Status allowed = CheckNamespace(session, req->ns);
    if (!allowed.ok()) return Refuse(session, Op::kListChains, allowed);
  }
  const std::vector<std::string> granted = Granted(session);
  // The namespace asked for, or every one ("") — of a limited session, each it is granted.
  const std::vector<std::string> asked{req->ns};
  for (const auto& ns : req->ns.empty() && !granted.empty() ? granted : asked) {
    auto part = store.ListChains(ns);
    if (!part.ok()) return wire::EncodeStatusResponse(Op::kListChains, part.status());
    resp.chains.insert(resp.chains.end(), part->begin(), part->end());
  }
  return resp.Encode();
}

Message Service::Impl::Usage(Session& session, const Message& request) {
  auto req = wire::UsageRequest::Decode(request);
  if (!req.ok()) return BadRequest(session, Op::kUsage, req.status());
  wire::UsageResponse resp;
  if (!req->ns.empty()) {
    Status allowed = CheckNamespace(session, req->ns);
    if (!allowed.ok()) return Refuse(session, Op::kUsage, allowed);
    resp.namespaces = store.Usage(req->ns, req->by_fingerprint);
    return resp.Encode();
  }
  const std::vector<std::string> granted = Granted(session);
  if (granted.empty()) {
    resp.namespaces = store.Usage("", req->by_fingerprint);
    return resp.Encode();
  }
  for (const auto& ns : granted) {
    auto part = store.Usage(ns, req->by_fingerprint);
    for (auto& u : part) resp.namespaces.push_back(std::move(u));
  }
  return resp.Encode();
}

// Ops that can be answered without I/O (given a cache hit, for gets).
// Request payloads are only valid during the call (a shm client reuses its area), so the store
// copies them: `payload`, never `owned`.
static std::vector<BlockPut> BlockPutsOf(const wire::PutBlocksRequest& req) {
  std::vector<BlockPut> puts(req.blocks.size());
  for (size_t i = 0; i < puts.size(); ++i) {
    puts[i].key = req.blocks[i].key;
    puts[i].parent = req.blocks[i].parent;
    puts[i].payload = req.blocks[i].payload.view();
  }
  return puts;
}

static Message SaveResponse(const Result<uint64_t>& v) {
  return v.ok() ? wire::SaveChainResponse{*v}.Encode()
                : wire::EncodeStatusResponse(Op::kSaveChain, v.status());
}

// A compare-and-swap's Conflict carries the chain's current state, for the client to rebase.
static Message PublishResponse(const Result<uint64_t>& v, bool cas, const ChainState& current) {
  if (v.ok()) return wire::PublishChainResponse{*v}.Encode();
  if (v.status().IsConflict() && cas) {
    return wire::PublishChainResponse::EncodeConflict(v.status(), current);
  }
  return wire::EncodeStatusResponse(Op::kPublishChain, v.status());
}

static bool MayBeImmediate(Op op) {
  return op == Op::kPing || op == Op::kLookupPrefix || op == Op::kGetBlocks ||
         op == Op::kGetByContentHash;
}

std::optional<Message> Service::Impl::Dispatch(Session& session, Op op, const Message& request,
                                               bool may_block) {
  if (!may_block && !MayBeImmediate(op)) return std::nullopt;
  // Decodes the request of type T or answers with a bad request.
#define WMBT_DECODE(T, var)                                            \
  auto var##_r = wire::T::Decode(request);                             \
  if (!var##_r.ok()) return BadRequest(session, op, var##_r.status()); \
  auto& var = *var##_r
#define WMBT_CHECK_NS(ns)                                     \
  do {                                                        \
    Status allowed_ = CheckNamespace(session, ns);            \
    if (!allowed_.ok()) return Refuse(session, op, allowed_); \
  } while (0)

  switch (op) {
    case Op::kHello:
      return Hello(session, request);
    case Op::kPing: {
      WMBT_DECODE(PingRequest, req);
      (void)req;
      return wire::PingResponse{}.Encode();
    }
    case Op::kPutBlocks: {
      WMBT_DECODE(PutBlocksRequest, req);
      WMBT_CHECK_NS(req.ns);
      auto hashes = store.PutBlocks(req.ns, req.fp, BlockPutsOf(req));
      if (!hashes.ok()) return wire::EncodeStatusResponse(op, hashes.status());
      return wire::PutBlocksResponse{std::move(hashes).value()}.Encode();
    }
    case Op::kSaveChain: {
      WMBT_DECODE(SaveChainRequest, req);
      WMBT_CHECK_NS(req.put.ns);
      return SaveResponse(store.SaveChain(req.put.ns, req.put.fp, BlockPutsOf(req.put)));
    }
    case Op::kPublishChain: {
      WMBT_DECODE(PublishChainRequest, req);
      WMBT_CHECK_NS(req.ns);
      ChainState current;
      auto v =
          store.PublishChain(req.ns, req.fp, req.chain_id, req.tip, req.expected_version, &current);
      return PublishResponse(v, req.expected_version.has_value(), current);
    }
    case Op::kLookupPrefix: {
      WMBT_DECODE(LookupPrefixRequest, req);
      WMBT_CHECK_NS(req.ns);
      auto n = store.LookupPrefix(req.ns, req.fp, req.keys);
      if (!n.ok()) return wire::EncodeStatusResponse(op, n.status());
      return wire::LookupPrefixResponse{*n}.Encode();
    }
    case Op::kGetBlocks: {
      WMBT_DECODE(GetBlocksRequest, req);
      WMBT_CHECK_NS(req.ns);
      if (req.keys.size() > wire::kMaxPayloadsPerMessage) {  // refused before any block is read
        return wire::EncodeStatusResponse(
            op, Status::ResourceExhausted(
                    "a GetBlocks answer carries at most " +
                    std::to_string(wire::kMaxPayloadsPerMessage) + " blocks; this one asks for " +
                    std::to_string(req.keys.size()) + ": split it (RemoteStore does)"));
      }
      auto got = may_block ? std::optional(store.GetBlocks(req.ns, req.fp, req.keys))
                           : store.GetBlocksIfCached(req.ns, req.fp, req.keys);
      if (!got) return std::nullopt;
      auto& borrow = *got;
      if (!borrow.ok()) return wire::EncodeStatusResponse(op, borrow.status());
      // The borrow's slices hold the cache pins: they live on in the response's payloads.
      return wire::GetBlocksResponse{borrow->slices()}.Encode();
    }
    case Op::kGetByContentHash: {
      WMBT_DECODE(GetByContentHashRequest, req);
      WMBT_CHECK_NS(req.ns);
      auto maybe = may_block ? std::optional(store.GetByContentHash(req.ns, req.hash))
                             : store.GetByContentHashIfCached(req.ns, req.hash);
      if (!maybe) return std::nullopt;
      auto& got = *maybe;
      if (!got.ok()) return wire::EncodeStatusResponse(op, got.status());
      return wire::GetByContentHashResponse{std::move(got).value()}.Encode();
    }
    case Op::kPutSidecar: {
      WMBT_DECODE(PutSidecarRequest, req);
      WMBT_CHECK_NS(req.ns);
      Status s = store.PutSidecar(req.ns, req.fp, req.tip, req.bytes.view());
      if (!s.ok()) return wire::EncodeStatusResponse(op, s);
      return wire::PutSidecarResponse{}.Encode();
    }
    case Op::kGetSidecar: {
      WMBT_DECODE(GetSidecarRequest, req);
      WMBT_CHECK_NS(req.ns);
      auto got = store.GetSidecar(req.ns, req.fp, req.tip);
      if (!got.ok()) return wire::EncodeStatusResponse(op, got.status());
      return wire::GetSidecarResponse{std::move(got).value()}.Encode();
    }
    case Op::kRefresh: {
      WMBT_DECODE(RefreshRequest, req);
      (void)req;
      auto report = store.Refresh();
      if (!report.ok()) {
        // Refresh reads every namespace, and its errors name the object that failed: not for a
        // session limited to some namespaces (docs/wire.md: Refresh returns only counts).
        if (!Granted(session).empty()) {
          std::string note;
          if (options.log && hidden_errors_logged.Take(clock.NowMicros(), &note)) {
            options.log(LogLevel::kWarn, "Refresh from " + session.peer +
                                             " (a namespace-limited token) failed: " +
                                             report.status().ToString() + note);
          }
          return wire::EncodeStatusResponse(
              op, Status(report.status().code(),
                         "refreshing from L2 failed (the daemon's log says why; the error may "
                         "name other namespaces, so this session is not told)"));
        }
        return wire::EncodeStatusResponse(op, report.status());
      }
      return wire::RefreshResponse{*report}.Encode();
    }
    case Op::kListChains:
      return ListChains(session, request);
    case Op::kGetChain: {
      WMBT_DECODE(GetChainRequest, req);
      WMBT_CHECK_NS(req.ns);
      auto blocks = store.GetChain(req.ns, req.fp, req.chain_id);
      if (!blocks.ok()) return wire::EncodeStatusResponse(op, blocks.status());
      return wire::GetChainResponse{std::move(blocks).value()}.Encode();
    }
    case Op::kStats: {
      WMBT_DECODE(StatsRequest, req);
      (void)req;
      return wire::StatsResponse{store.Stats(), store.DescribeL2()}.Encode();
    }
    case Op::kUsage:
      return Usage(session, request);
    case Op::kEvict: {
      WMBT_DECODE(EvictRequest, req);
      (void)req;
      {
        std::shared_lock lock(sessions_mu);
        if (!session.namespaces.empty()) {
          return Refuse(session, op,
                        Status::PermissionDenied(
                            "Evict runs over every namespace: it needs an auth token that "
                            "grants all of them"));
        }
      }
      auto report = store.Evict();
      if (!report.ok()) return wire::EncodeStatusResponse(op, report.status());
      return wire::EvictResponse{*report}.Encode();
    }
  }
#undef WMBT_DECODE
#undef WMBT_CHECK_NS
  return BadRequest(session, op,
                    Status::InvalidArgument("unknown op " + std::to_string(uint16_t(op))));
}

Service::Service(Store& store, Clock& clock, ServiceOptions options)
    : impl_(std::make_unique<Impl>(store, clock, std::move(options))) {}

Service::~Service() = default;

wire::Message Service::Handle(Session& session, const wire::Message& request) {
  return *impl_->Serve(session, request, /*may_block=*/true);
}

void Service::HandleAsync(Session& session, const wire::Message& request, Respond respond) {
  if (request.op == static_cast<uint16_t>(Op::kSaveChain) ||
      request.op == static_cast<uint16_t>(Op::kPublishChain)) {
    impl_->WriteAsync(session, request, std::move(respond));
    return;
  }
  respond(Handle(session, request));
}

std::optional<wire::Message> Service::HandleIfImmediate(Session& session,
                                                        const wire::Message& request) {
  return impl_->Serve(session, request, /*may_block=*/false);
}

static size_t SlotOf(uint16_t op) {
  return op < ServiceMetrics::kOps && op <= wire::kOpMax ? op : 0;
}

std::optional<Message> Service::Impl::Refusal(Session& session, const Message& request) {
  const Op op = static_cast<Op>(request.op);
  if (SlotOf(request.op) == 0) {
    return BadRequest(session, op,
                      Status::InvalidArgument("unknown op " + std::to_string(request.op) +
                                              ": this daemon speaks protocol " +
                                              std::to_string(wire::kProtocolVersion)));
  }
  if (session.token_required && op != Op::kHello && op != Op::kPing &&
      !session.authenticated.load(std::memory_order_acquire)) {
    return Refuse(
        session, op,
        Status::PermissionDenied(wire::OpName(request.op) +
                                 " refused: this listener requires an auth token; set "
                                 "WMBT_KV_AUTH_TOKEN so the client sends it in its Hello"));
  }
  return std::nullopt;
}

std::optional<Message> Service::Impl::Serve(Session& session, const Message& request,
                                            bool may_block) {
  const uint64_t start = clock.NowMicros();
  std::optional<Message> response = Refusal(session, request);
  if (!response) {
    response = Dispatch(session, static_cast<Op>(request.op), request, may_block);
    if (!response) return std::nullopt;  // nothing counted: Handle will be called
  }
  Finish(MetricsOf(session), start, PayloadBytes(request), request.id, request.op, &*response);
  return response;
}

void Service::Impl::WriteAsync(Session& session, const Message& request, Respond respond) {
  const uint64_t start = clock.NowMicros();
  const uint64_t bytes_in = PayloadBytes(request);
  auto answer = [this, &metrics = MetricsOf(session), start, bytes_in, id = request.id,
                 op = request.op, respond = std::move(respond)](Message m) {
    Finish(metrics, start, bytes_in, id, op, &m);
    respond(std::move(m));
  };
  if (std::optional<Message> refused = Refusal(session, request)) return answer(*refused);
  const Op op = static_cast<Op>(request.op);
  if (op == Op::kSaveChain) {
    auto req = wire::SaveChainRequest::Decode(request);
    if (!req.ok()) return answer(BadRequest(session, op, req.status()));
    Status allowed = CheckNamespace(session, req->put.ns);
    if (!allowed.ok()) return answer(Refuse(session, op, allowed));
    store.SaveChainAsync(
        req->put.ns, req->put.fp, BlockPutsOf(req->put),
        [answer = std::move(answer)](Result<uint64_t> v) { answer(SaveResponse(v)); });
    return;
  }
  auto req = wire::PublishChainRequest::Decode(request);
  if (!req.ok()) return answer(BadRequest(session, op, req.status()));
  Status allowed = CheckNamespace(session, req->ns);
  if (!allowed.ok()) return answer(Refuse(session, op, allowed));
  store.PublishChainAsync(req->ns, req->fp, req->chain_id, req->tip, req->expected_version,
                          [answer = std::move(answer), cas = req->expected_version.has_value()](
                              Result<uint64_t> v, const ChainState& current) {
                            answer(PublishResponse(v, cas, current));
                          });
}

void Service::Impl::Finish(ServiceMetrics& m, uint64_t start, uint64_t bytes_in, uint64_t id,
                           uint16_t op, Message* response) {
  const size_t slot = SlotOf(op);
  m.requests[slot].fetch_add(1, std::memory_order_relaxed);
  m.bytes_in.fetch_add(bytes_in, std::memory_order_relaxed);
  response->id = id;
  response->op = op;
  response->flags |= wire::kFlagResponse;

  if (const Status s = wire::ResponseStatus(*response); !s.ok()) {
    m.errors[slot].fetch_add(1, std::memory_order_relaxed);
    const bool ours = s.code() == Code::kUnavailable || s.code() == Code::kCorruption ||
                      s.code() == Code::kInternal;
    if (std::string note; ours && options.log && failures_logged.Take(clock.NowMicros(), &note)) {
      options.log(LogLevel::kWarn, wire::OpName(op) + " failed: " + s.ToString() + note);
    }
  }
  m.bytes_out.fetch_add(PayloadBytes(*response), std::memory_order_relaxed);
  const uint64_t now = clock.NowMicros();
  const uint64_t micros = now > start ? now - start : 0;
  const size_t bucket =
      std::min<size_t>(std::bit_width(micros), ServiceMetrics::kLatencyBuckets - 1);
  m.latency_us_buckets[slot][bucket].fetch_add(1, std::memory_order_relaxed);
  m.latency_us_sum[slot].fetch_add(micros, std::memory_order_relaxed);
}

const ServiceMetrics& Service::metrics(Transport t) const {
  return impl_->metrics[static_cast<size_t>(t)];
}

const char* TransportName(Transport t) { return t == Transport::kShm ? "shm" : "tcp"; }

Store& Service::store() { return impl_->store; }

}  // namespace wombatkv
