// Service: the daemon's transport-independent core. A transport decodes frames into request
// Messages, hands each to Handle() together with the Session of the client that sent it, and
// sends back the response Message it returns. Handle() decodes the op's fields (wire/codec.h),
// checks the session's authorisation, calls the Store, and encodes the result — errors included,
// as a status inside the response, so a bad request never costs the connection.
//
// Thread-safety: Handle() may run on many threads at once (for one session too: pipelining).
// It may block for as long as the Store call does (a publish waits for L2 durability), so
// transports call it from worker threads, never from an event loop. HandleIfImmediate() never
// blocks: an event loop calls it first and hands the request to a worker only when it declines.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "wire/frame.h"
#include "wire/message.h"
#include "wombatkv/status.h"
#include "wombatkv/store.h"

namespace wombatkv {

// One auth token and what it grants. An empty `namespaces` grants every namespace.
struct TokenGrant {
  std::string token;  // secret: never logged
  std::vector<std::string> namespaces;
};

// Parses WMBT_KV_AUTH_TOKENS / --auth-token values: entries separated by ';', each
// "TOKEN" or "TOKEN=NS1,NS2". InvalidArgument naming the bad entry (without echoing the token).
Result<std::vector<TokenGrant>> ParseTokenGrants(std::string_view text);

// Which transport a session came by: /metrics counts each apart.
enum class Transport : uint8_t { kTcp = 0, kShm = 1 };
inline constexpr size_t kTransports = 2;
// "tcp", "shm": the `transport` label of /metrics.
const char* TransportName(Transport t);

// Per-client state, created by the transport when a client attaches and destroyed when it goes.
struct Session {
  uint64_t id = 0;
  Transport transport = Transport::kTcp;  // set by the transport
  std::string peer;              // "127.0.0.1:51234", "shm pid 1234" — for logs
  bool token_required = false;   // set by the transport: true on a non-loopback listener
  // Set by a successful Hello. While token_required && !authenticated, every op but Hello and
  // Ping is refused (PermissionDenied, naming WMBT_KV_AUTH_TOKEN as the fix).
  std::atomic<bool> authenticated{false};
  std::vector<std::string> namespaces;  // granted by the token; empty = all
};

struct ServiceOptions {
  std::vector<TokenGrant> tokens;
  // Reported in the Hello response, so a client can name what it talks to and size its frames.
  std::string server_version = "wombatkvd";
  uint32_t max_frame_bytes = wire::kDefaultMaxBodyBytes;  // the transport's frame body limit
  // Told of each refusal (a token refused or missing, a namespace not granted) with the peer, at
  // warn, at most 10 lines a second; null = nobody.
  LogSink log;
};

// Counters for /metrics, one set per transport; all monotonic, updated with relaxed atomics.
struct ServiceMetrics {
  static constexpr size_t kOps = 32;           // indexed by wire::Op value; slot 0: unknown ops
  static constexpr size_t kLatencyBuckets = 24;  // bucket i counts latencies < 2^i microseconds
  std::atomic<uint64_t> requests[kOps] = {};
  std::atomic<uint64_t> errors[kOps] = {};
  std::atomic<uint64_t> latency_us_buckets[kOps][kLatencyBuckets] = {};
  std::atomic<uint64_t> latency_us_sum[kOps] = {};
  std::atomic<uint64_t> bytes_in = {};   // request payload bytes
  std::atomic<uint64_t> bytes_out = {};  // response payload bytes
  std::atomic<uint64_t> auth_failures = {};
  std::atomic<uint64_t> bad_requests = {};  // undecodable fields, unknown ops
};

class Service {
 public:
  // `store` and `clock` must outlive the Service.
  Service(Store& store, Clock& clock, ServiceOptions options);
  ~Service();

  // Runs one request and returns its response (same id and op, kFlagResponse set). Response
  // payload slices keep their bytes alive (e.g. they pin cache entries) until the Message dies.
  // Request payload slices are only read during the call.
  wire::Message Handle(Session& session, const wire::Message& request);

  // Handle with the response given to `respond`, exactly once, from any thread: before this
  // returns for every op but SaveChain and PublishChain, which the store may complete later on
  // the thread that syncs for everyone (Store::SaveChainAsync, PublishChainAsync; docs/daemon.md,
  // "Completions"). So a transport's thread need not wait out a save's sync. `session` and the
  // request are used only during the call. `respond` must be short and must not wait for the
  // store's durable writes.
  using Respond = std::function<void(wire::Message)>;
  void HandleAsync(Session& session, const wire::Message& request, Respond respond);

  // The same response as Handle, when it can be had without waiting for I/O or for a lock held
  // across I/O: Ping, LookupPrefix (L0 only), GetBlocks and GetByContentHash served from the RAM
  // cache (Store::*IfCached), and any request answered with an error before reaching the Store.
  // nullopt otherwise, with nothing counted: call Handle (on a worker) instead. Its cost is
  // bounded by the request (keys ≤ limits::kLookupKeysMax; payloads are never copied).
  std::optional<wire::Message> HandleIfImmediate(Session& session, const wire::Message& request);

  // The counters of the sessions that came by `t`.
  const ServiceMetrics& metrics(Transport t) const;
  Store& store();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace wombatkv
