// TcpServer: the daemon's TCP transport (SPEC §8, docs/daemon.md). It moves framed Messages
// between sockets and a request handler (normally Service::Handle); it never interprets fields.
//
// Threads: `io_threads` epoll event loops own the sockets (every loop accepts on every listener,
// EPOLLEXCLUSIVE, and keeps the connections it accepted); requests run on a worker Executor,
// because a handler may block for as long as a publish takes. No thread per connection.
// Requests the `immediate` handler can answer without blocking (lookups, gets from RAM) are
// answered on the loop itself and written at once — no hand-off to a worker and back — within a
// budget per connection and wake-up (invariant 7). With `inline_when_alone`, a lone sequential
// client's blocking requests run on the loop too (invariant 8).
//
// Per connection (invariants):
//   1. One Session, created at accept; `token_required` is true unless the listener's address is
//      loopback. The handler enforces it (Service: only Hello and Ping before authentication).
//   2. Pipelining: every complete frame is dispatched at once; responses are written as they
//      finish, in any order, gathered into as few sendmsg calls as possible. At most
//      `inflight_per_connection_max` requests run at once (reading pauses beyond it, so a client
//      cannot queue unbounded work); one read may overshoot it by the frames it carried.
//   3. A frame with a bad envelope (magic, version, length over `max_frame_bytes`: rejected
//      before any allocation), a bad CRC or a malformed body gets one error response (a status,
//      id 0 when the envelope was bad) and the connection is closed once it is written. Nothing
//      else is affected: other connections never wait for a slow, silent or hostile one.
//   4. Until its session is authenticated, a token-required connection's frames are limited to
//      kUnauthenticatedFrameBytesMax (a Hello is tiny), so an anonymous peer on the network can
//      never make the daemon allocate a large body.
//   5. A connection with nothing in flight that sends nothing for `idle_timeout_ms` (also one
//      stuck half-way through a frame) is closed.
//   6. When a connection closes, its queued responses (and the payload pins they hold) are
//      released; a request still running finishes and its response is dropped.
//   7. Fairness of immediate answers: per wake-up, a connection gets at most
//      kImmediatePerWakeup requests answered on the loop, or kImmediateBytesPerWakeup response
//      bytes; then its remaining complete frames go to the workers and the loop serves the other
//      ready sockets before reading that one again.
//   8. A blocking request runs on a loop only if `inline_when_alone` accepts it, and only while
//      its connection is alone on that loop (the only one that sent requests in the last window
//      of spin_when_alone, no other since, no connection accepted since), has nothing else in
//      flight, and has never sent a request before its previous answer came (pipelining). Once
//      seen doing so — an earlier frame read in the same wake-up, bytes after this frame, or bytes
//      arriving while this one ran — it never runs inline again. After an inline run the loop
//      serves the other ready sockets before reading that connection again, so a request of
//      another connection waits for at most one inline request. An inline run slower than
//      kInlineSlowMicros sends the connection's next kInlinePauseRequests blocking requests to
//      the workers.
//   9. Backpressure on answers: while more than `queued_response_bytes_max` of a connection's
//      responses wait to be written (its client sends but does not read), the loop stops reading
//      that connection, until they are down to half of it. So a peer that never reads makes the
//      daemon hold at most that bound, one wake-up's answers (invariant 7) and the answers of its
//      requests in flight (invariant 2) — not a response for every request it can send — and
//      with nothing received or sent it is closed by invariant 5.
//  10. A token-required connection whose session is not authenticated `hello_timeout_ms` after
//      it was accepted is closed, however busy: an anonymous peer cannot hold one of the
//      `connections_max` slots (nor its staging and frame buffers) for longer than that.
//  11. Until then, its requests run on the loop, one at a time, each answered before the next
//      frame is decoded: the frames a client sends right behind its Hello (without waiting for
//      its answer) are authenticated, and limited, as the Hello left the session. So the
//      handler must answer an unauthenticated session without blocking (Service answers Hello
//      and Ping and refuses the rest: invariant 1), and immediate budgets do not apply.
//  12. A request `async_on_loop` accepts runs on the loop, within invariant 7's budget, under
//      MustNotBlock (base/must_not_block.h): its handler call only starts it (the journal's
//      sync thread syncs it and answers), so the loop serves the other sockets meanwhile.
//      Invariant 8 comes first: a lone sequential client's save runs inline, leading its own
//      sync, which answers it soonest.
//  13. Answers given outside any handler call, inside a batch (base/defer_scope.h: the journal
//      runs a sync round's completions in one), are queued at once and written by their
//      connections' loops when the batch ends — one eventfd write per loop, instead of a
//      sendmsg (and the client's wake-up) per answer on the thread whose next sync every save
//      waits for. The requests end when their loops have been handed the writes.
//  14. A Hello that leaves its token-required session unauthenticated (a wrong token, another
//      protocol) is answered and the connection closed once that is written: a peer guessing
//      tokens pays a connection per guess (it answered tens of thousands a second on one).
//  15. At most `unauthenticated_max` token-required connections wait for their Hello at once
//      (shared out among the loops); a newcomer beyond that, or one that finds `connections_max`
//      reached while some wait, closes the oldest of them if it has waited for at least
//      `unauthenticated_grace_ms` (else nobody: a burst of connections accepted in one go, Hellos
//      still unread — a fleet reconnecting, or queued while the daemon opened its store — must
//      not close one another), so that
//      anonymous peers holding connections open cannot keep an authenticating client out of
//      `connections_max` (nor, under a low descriptor limit, every listener): a real client says
//      Hello within a round trip of connecting. Counted as connections_unauthenticated_closed.
//  16. Fairness of workers: requests that go to the worker threads wait in a queue per
//      connection, and a free worker takes the next request of the next connection in turn, so
//      a connection with 128 slow requests pipelined (a tenant's refreshes or listings) delays
//      another's next request by one request per worker, not by all of its own (a review,
//      session 60: another client's 0.1 ms call took 5.3 s behind 128 refreshes). A lone
//      connection still gets every worker.
//
// Thread-safety: Start, Shutdown and the destructor from one thread; stats() from any.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/service.h"
#include "wire/frame.h"
#include "wire/message.h"
#include "wombatkv/env.h"
#include "wombatkv/status.h"
#include "wombatkv/store.h"

namespace wombatkv::tcp {

inline constexpr uint32_t kUnauthenticatedFrameBytesMax = 64 << 10;
inline constexpr size_t kImmediatePerWakeup = 64;
inline constexpr uint64_t kImmediateBytesPerWakeup = 8 << 20;
inline constexpr uint64_t kInlineSlowMicros = 20000;  // invariant 8
inline constexpr uint32_t kInlinePauseRequests = 256;

// Runs one request and gives its response to the Respond it is passed (the server sets id and
// kFlagResponse if the handler did not): exactly once, before returning or later from any thread
// (Service::HandleAsync: a save completes on the thread that syncs it). Called on worker threads,
// concurrently, also for one session (and on an event loop for the requests
// TcpServerOptions::inline_when_alone accepts). The request is only read during the call.
using RequestHandler = std::function<void(Session&, const wire::Message&, Service::Respond)>;
// A handler that returns its response, as a RequestHandler (tests).
inline RequestHandler Returning(std::function<wire::Message(Session&, const wire::Message&)> fn) {
  return [fn = std::move(fn)](Session& s, const wire::Message& m, Service::Respond respond) {
    respond(fn(s, m));
  };
}
// Answers a request on the event loop when that needs no blocking (Service::HandleIfImmediate),
// else returns nullopt and the request goes to RequestHandler on a worker. Must never block.
using ImmediateHandler =
    std::function<std::optional<wire::Message>(Session&, const wire::Message&)>;
// Whether a blocking request may run on the event loop when its connection is alone (invariant 8).
using InlinePredicate = std::function<bool(const wire::Message&)>;

struct ListenerInfo {
  std::string address;  // as bound: "127.0.0.1:41234", "[::]:7070"
  bool loopback = false;
};

// Listening sockets bound ahead of a server (TcpServer::Start takes them over): a daemon finds a
// port in use before it spends minutes opening its store. Until a server takes them, the kernel
// queues connections (up to the backlog) without greeting them. Closed on destruction.
class BoundListeners {
 public:
  // Binds and listens on every address (as TcpServerOptions::listen); errors as TcpServer::Start.
  // Nothing is left listening on failure.
  static Result<std::shared_ptr<BoundListeners>> Bind(const std::vector<std::string>& listen);
  ~BoundListeners();
  BoundListeners(const BoundListeners&) = delete;
  BoundListeners& operator=(const BoundListeners&) = delete;

  // Empty once taken.
  const std::vector<ListenerInfo>& listeners() const { return listeners_; }
  // The descriptors, in listeners() order, now the caller's to close.
  std::vector<int> TakeFds();

 private:
  BoundListeners() = default;
  Status Listen(const std::string& text);
  std::vector<int> fds_;
  std::vector<ListenerInfo> listeners_;
};

struct TcpServerOptions {
  // Listen addresses, "HOST:PORT": IPv4, bracketed IPv6 ("[::]:7070") or a name (its first
  // address). Port 0 = any free port; listeners() tells which.
  std::vector<std::string> listen;
  // Or sockets bound already (BoundListeners::Bind), which the server takes over; `listen` is
  // then ignored. Taken by one server only.
  std::shared_ptr<BoundListeners> bound;
  // Largest request body accepted; larger envelopes are refused before allocation.
  uint32_t max_frame_bytes = wire::kDefaultMaxBodyBytes;
  // Invariant 5; 0 = never.
  uint64_t idle_timeout_ms = 300'000;
  // Invariant 10; 0 = never.
  uint64_t hello_timeout_ms = 10'000;
  size_t io_threads = 1;
  // Worker threads running the handler, when no `executor` is given.
  size_t worker_threads = 16;
  Executor* executor = nullptr;  // not owned; must outlive the server
  // Invariant 7; null = every request goes to a worker.
  ImmediateHandler immediate;
  size_t inflight_per_connection_max = 128;
  uint64_t queued_response_bytes_max = 16 << 20;  // invariant 9
  // After a wake-up with work, a loop polls for more (epoll_wait with no timeout) for a while
  // before it sleeps, yielding its core between polls; how long adapts to whether it paid
  // (base/spin_poll.h). It spares the senders the wake-up of a sleeping loop. Whether that pays
  // depends on the host (docs/daemon.md, "Spinning": eight clients' gets lost 10–30% on one
  // 2-core VM and gained 15–40% on another), so it is off here; the daemon turns it on
  // (WMBT_KV_TCP_POLL). It never spins while idle.
  bool spin = false;
  // The same spin, but only while one connection alone is sending requests to this loop (one
  // in the last millisecond window and no other since): the ping-pong of a lone client, whose
  // round trip then pays no daemon wake-up, while many clients never make the loop spin.
  bool spin_when_alone = true;
  // Invariant 8; null = never. A lone client's blocking request (a save) then costs no hand-off to
  // a worker, and the loop, which wrote the answer, catches the client's next request without a
  // wake-up: a one-client 1 KiB TCP save's p50 fell from 1.50-1.88x to 1.10-1.38x an embedded
  // save's (docs/daemon.md, "Inline requests"). Accept only requests that wait for local
  // resources and finish in about a millisecond (the daemon: saves and publishes on a local L2):
  // the loop serves nobody else while one runs.
  InlinePredicate inline_when_alone;
  // Invariant 12; null = none. Requests whose handler call returns without waiting when the
  // thread must not block (base/must_not_block.h) and answers later from another thread: the
  // daemon's small saves on a journaled local L2 (Service::HandleAsync, Store::SaveChainAsync).
  // They cost no hand-off to a worker: with invariant 13, eight clients' 1 KiB TCP saves rose
  // 15-50% (docs/daemon.md, "Saves on the loop").
  InlinePredicate async_on_loop;
  size_t connections_max = 4096;  // accepted beyond this: closed at once (logged)
  size_t unauthenticated_max = 256;          // invariant 15
  uint64_t unauthenticated_grace_ms = 1000;  // invariant 15
  Clock* clock = nullptr;         // null = RealClock()
  LogSink log;                    // null = warnings and errors to stderr
};

// Monotonic counters (relaxed atomics), except connections_open.
struct TcpServerStats {
  std::atomic<uint64_t> connections_accepted{0};
  std::atomic<uint64_t> connections_open{0};
  std::atomic<uint64_t> connections_refused{0};  // over connections_max
  std::atomic<uint64_t> connections_idle_closed{0};
  std::atomic<uint64_t> connections_unauthenticated_closed{0};  // invariants 10 and 15
  std::atomic<uint64_t> frames_in{0};
  std::atomic<uint64_t> frames_out{0};
  std::atomic<uint64_t> frames_rejected{0};  // invariant 3
  std::atomic<uint64_t> bytes_in{0};
  std::atomic<uint64_t> bytes_out{0};
  std::atomic<uint64_t> loop_spins{0};  // spin waits begun (spin, spin_when_alone)
  std::atomic<uint64_t> requests_inline{0};  // blocking requests run on a loop (invariant 8)
  std::atomic<uint64_t> backlog_pauses{0};   // reading stopped for unread answers (invariant 9)
  std::atomic<uint64_t> requests_async_on_loop{0};   // invariant 12
  std::atomic<uint64_t> answers_handed_to_loops{0};  // invariant 13
};

class TcpServer {
 public:
  // Binds and listens on every address (or takes `bound`), then starts the loops. Errors name
  // the address:
  // InvalidArgument (bad HOST:PORT), Unavailable (cannot resolve or bind, e.g. "address already
  // in use"). Nothing is left listening on failure.
  static Result<std::unique_ptr<TcpServer>> Start(RequestHandler handler,
                                                  TcpServerOptions options);
  // Shutdown(0) if Shutdown was not called. REQUIRES: no handler call is still running (a
  // Shutdown that returned 0 guarantees it), else this blocks until they return.
  ~TcpServer();

  TcpServer(const TcpServer&) = delete;
  TcpServer& operator=(const TcpServer&) = delete;

  const std::vector<ListenerInfo>& listeners() const;
  const TcpServerStats& stats() const;

  // Graceful stop: closes the listeners, stops reading requests, lets the running ones finish
  // and their responses be written, for at most `timeout_ms`; then closes every connection and
  // stops the loops. Returns how many requests were still running (0 = a clean drain). Their
  // handlers keep running on the worker threads (or on a loop, for an inline run: that loop is
  // joined by the destructor); their responses are dropped.
  size_t Shutdown(uint64_t timeout_ms);

  struct Impl;

 private:
  explicit TcpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace wombatkv::tcp
