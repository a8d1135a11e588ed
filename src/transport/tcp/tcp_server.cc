#include "transport/tcp/tcp_server.h"

#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include "base/adaptive_spin.h"
#include "base/check.h"
#include "base/defer_scope.h"
#include "base/limits.h"
#include "base/log_budget.h"
#include "base/must_not_block.h"
#include "base/spin_poll.h"
#include "base/thread_name.h"
#include "transport/tcp/frame_reader.h"
#include "transport/tcp/payload_crc_memo.h"
#include "transport/tcp/send_queue.h"
#include "transport/tcp/sockets.h"
#include "wire/codec.h"

namespace wombatkv::tcp {

// Invariant 4: a Hello of the longest name and token a client sends (and some room for the
// version and string lengths) fits the frame limit before authentication.
static_assert(limits::kClientNameBytesMax + limits::kAuthTokenBytesMax + 64 <=
              kUnauthenticatedFrameBytesMax);
namespace {

constexpr uint64_t kWakeTag = 0;
constexpr uint64_t kListenerTag = 1ull << 63;  // | listener index
constexpr int kReadsPerWakeup = 16;            // then other sockets get their turn
constexpr int kEventsPerWait = 256;
constexpr uint64_t kScanIntervalMaxMicros = 1'000'000;
constexpr uint64_t kScanIntervalMinMicros = 10'000;
constexpr int kListenBacklog = 1024;
constexpr uint32_t kPeerWarningsPerSecond = 10;
// The loop's spin after activity, in µs (base/spin_poll.h): up to 50 µs, probing once per 128
// wake-ups at most when spinning has stopped paying.
constexpr AdaptiveSpin::Options kLoopSpin{0, 50, 16, 128};
// TcpServerOptions::spin_when_alone counts the connections that sent requests per window this
// long: at eight busy clients every window sees all eight.
constexpr uint64_t kAloneWindowMicros = 1000;

// One client connection. The loop that accepted it owns its socket events; workers only queue
// responses. The fd is closed when the last reference goes, so a worker finishing late can never
// write to a reused descriptor.
struct Connection {
  Connection(uint64_t id_, int fd_, int epfd_, uint32_t max_body)
      : id(id_), fd(fd_), epfd(epfd_), reader(max_body) {}
  ~Connection() {
    DiscardUnread(fd);
    ::close(fd);
  }

  const uint64_t id;
  const int fd;
  const int epfd;
  Session session;
  FrameReader reader;  // loop thread only
  std::atomic<uint64_t> last_active_us{0};
  uint64_t accepted_us = 0;  // loop thread only

  std::mutex mu;  // guards everything below
  SendQueue out;
  size_t inflight = 0;
  uint32_t events = 0;          // the epoll mask registered now
  bool closed = false;          // removed from the loop; responses are dropped
  bool read_paused = false;     // invariant 2: too many requests in flight
  bool backlogged = false;      // invariant 9: too many response bytes unread by the client
  bool read_done = false;       // never read again (peer EOF, rejected frame, draining)
  bool close_when_idle = false; // close once nothing is in flight or queued
  uint64_t window = 0;          // loop thread only: the last Loop::window it sent requests in
  // Invariant 16, guarded by Impl::fair_mu: its requests waiting for a worker, and whether it is
  // in Impl::fair_ring.
  std::deque<wire::Message> fair_queue;
  bool in_fair_ring = false;
  // Invariant 8 (loop thread only): seen pipelining, so never inline again; blocking requests
  // still to hand to workers after a slow inline run.
  bool pipelines = false;
  uint32_t inline_pause = 0;
};

// Handler calls this thread is in (TcpServer::Impl::Handle): answers given there are written at
// once. Other threads' answers inside a batch (a sync round's saves) are gathered for the
// connections' loops (GatherForLoop): one server gathers at a time on a thread.
thread_local int in_handler = 0;
struct FlushBatch {
  const void* server = nullptr;
  std::vector<std::shared_ptr<Connection>> conns;
};
thread_local FlushBatch* flush_batch = nullptr;

struct Loop {
  int epfd = -1;
  int wakefd = -1;
  std::thread thread;
  std::unordered_map<uint64_t, std::shared_ptr<Connection>> conns;  // loop thread only
  std::mutex tasks_mu;
  std::vector<std::function<void()>> tasks;
  std::atomic<bool> stop{false};
  std::atomic<bool> drained{false};  // Shutdown's Drain ran on it
  bool accept_paused = false;  // out of descriptors: listeners re-armed at the next scan
  uint64_t next_scan_us = 0;
  AdaptiveSpin spin{kLoopSpin};  // loop thread only
  PayloadCrcMemo crc_memo;        // loop thread only: for the answers given on the loop
  // TcpServerOptions::spin_when_alone: how many connections sent requests in the current
  // window of kAloneWindowMicros and in the one before (loop thread only).
  uint64_t window = 1;
  uint64_t window_start_us = 0;
  uint32_t window_conns = 0;
  uint32_t prev_window_conns = 0;
  uint64_t window_last_conn = 0;  // the connection counted last in the current window
  uint64_t prev_alone_conn = 0;   // the one connection of the last window, if it had one
  ~Loop() {
    if (epfd >= 0) ::close(epfd);
    if (wakefd >= 0) ::close(wakefd);
  }
};

}  // namespace

struct TcpServer::Impl {
  RequestHandler handler;
  TcpServerOptions options;
  Clock* clock = nullptr;
  std::unique_ptr<Executor> own_executor;
  Executor* executor = nullptr;
  std::vector<int> listen_fds;
  std::vector<ListenerInfo> listeners;
  std::vector<std::unique_ptr<Loop>> loops;
  TcpServerStats stats;
  LogBudget peer_warnings{kPeerWarningsPerSecond, 1'000'000};
  std::atomic<uint64_t> next_conn_id{1};
  // Invariant 16: connections with requests waiting for a worker, served round-robin.
  std::mutex fair_mu;
  std::deque<std::shared_ptr<Connection>> fair_ring;  // GUARDED_BY(fair_mu)
  std::atomic<size_t> inflight_total{0};
  std::atomic<bool> draining{false};
  bool shut_down = false;
  std::mutex drain_mu;
  std::condition_variable drain_cv;

  ~Impl() {
    // A loop still inside an inline request when Shutdown gave up on it (invariant 8) stops
    // once that request returns. Worker tasks reference this object too: they finish before any
    // member goes.
    for (auto& loop : loops) {
      if (loop->thread.joinable()) loop->thread.join();
    }
    if (own_executor) {
      own_executor.reset();
    } else if (executor != nullptr) {
      executor->Drain();
    }
    // A response completed on another thread (a save, by the thread syncing it) ends in Answer.
    {
      std::unique_lock<std::mutex> l(drain_mu);
      drain_cv.wait(l, [&] { return inflight_total.load() == 0; });
    }
    for (int fd : listen_fds) ::close(fd);
  }

  void Log(LogLevel level, const std::string& line) const {
    if (options.log) {
      options.log(level, line);
    } else if (level >= LogLevel::kWarn) {
      std::fprintf(stderr, "wombatkvd [%s] tcp: %s\n", LogLevelTag(level), line.c_str());
    }
  }
  // A warning peers can cause at will (a rejected frame, a refused connection): at most
  // kPeerWarningsPerSecond a second, the rest counted (stats still count each).
  void LogPeerWarning(const std::string& line) {
    std::string note;
    if (peer_warnings.Take(clock->NowMicros(), &note)) Log(LogLevel::kWarn, line + note);
  }

  Status StartLoops();
  void Run(Loop& loop);
  // Polls the loop's sockets without sleeping for at most its spin budget: the number of ready
  // events, 0 when none came (the caller then sleeps in epoll_wait).
  int SpinWait(Loop& loop, epoll_event* events);
  // TcpServerOptions::spin_when_alone: exactly one connection sent requests in the last full
  // window, and no other one since.
  bool Alone(const Loop& loop) const;
  void NextWindowIfDue(Loop& loop);
  void Accept(Loop& loop, size_t listener);
  void OnReadable(Loop& loop, const std::shared_ptr<Connection>& c);
  // Flushes the queued responses (on EPOLLOUT, and after answering on the loop); closes a
  // connection whose peer asked to close once nothing is left to answer.
  void OnWritable(Loop& loop, const std::shared_ptr<Connection>& c);
  void OnPeerClosed(Loop& loop, const std::shared_ptr<Connection>& c);
  void Reject(Loop& loop, const std::shared_ptr<Connection>& c, const Status& why);
  // Reads no more from `c` and closes it once its answers are written.
  void CloseOnceAnswered(Loop& loop, const std::shared_ptr<Connection>& c, const std::string& why);
  // Invariant 15: before a connection joins `loop`, closes the oldest of its unauthenticated
  // ones if they are at the loop's share of unauthenticated_max, or if `full` (connections_max).
  void MakeRoomForAnonymous(Loop& loop, bool full);
  void Dispatch(const std::shared_ptr<Connection>& c, wire::Message request);
  // A worker's task: the next request of the next connection in fair_ring (invariant 16).
  void RunNextFair();
  // Invariant 8: whether the blocking request just read from `c` may run on the loop.
  // `after_others`: frames came before it in the same read (sent before their answers).
  bool RunsInline(const Loop& loop, Connection& c, const wire::Message& request,
                  bool after_others);
  void RunInline(const std::shared_ptr<Connection>& c, const wire::Message& request);
  // Invariant 12: runs `request` on the loop under MustNotBlock; its answer comes later.
  void RunAsyncOnLoop(const std::shared_ptr<Connection>& c, const wire::Message& request);
  // Invariants 1 and 4: a token-required connection whose session no Hello has authenticated.
  static bool Unauthenticated(const Connection& c);
  // Invariant 11: runs `request` on the loop and answers it before the next frame is read.
  void RunBeforeAuthentication(const std::shared_ptr<Connection>& c,
                               const wire::Message& request);
  // A worker's task: Handle, then Answer.
  void Work(const std::shared_ptr<Connection>& c, const wire::Message& request);
  // Runs the handler and gives `then` its framed response, once, when it comes (maybe from
  // another thread, after this returned). A stray exception becomes an error response.
  using Framed = std::function<void(Result<wire::FramedMessage>)>;
  void Handle(const std::shared_ptr<Connection>& c, const wire::Message& request, Framed then);
  // Queues and writes the response of a request that counted in `inflight`, and ends it.
  // Answers a completion thread gives in a batch (a sync round's saves) are written by the
  // connections' loops when the batch ends (GatherForLoop), not by that thread.
  void Answer(const std::shared_ptr<Connection>& c, Result<wire::FramedMessage> framed);
  // True when this thread answers outside any handler call, inside a batch (DeferScope): `c`
  // joins the batch, whose end hands its connections to their loops (FlushGathered).
  bool GatherForLoop(const std::shared_ptr<Connection>& c);
  // Each loop writes the queued responses of its connections in `conns`; then the requests
  // they answer end.
  void FlushGathered(std::vector<std::shared_ptr<Connection>> conns);
  // A request of `c` begins (invariants 2 and 8: inflight, reading paused beyond the bound;
  // inflight_total); Answer ends it.
  void BeginRequest(Connection& c);
  void EndRequest();  // inflight_total, and the shutdown waiting for it
  // Invariant 7: answers `request` on the loop if the immediate handler can; false if not.
  bool AnswerNow(Loop& loop, const std::shared_ptr<Connection>& c, const wire::Message& request,
                 uint64_t* response_bytes);
  // `crcs`: the loop's memo of payload CRCs (null on workers).
  Result<wire::FramedMessage> FrameResponse(const wire::Message& request, wire::Message response,
                                            wire::PayloadCrcSource* crcs = nullptr);
  void Close(Loop& loop, const std::shared_ptr<Connection>& c, const std::string& why);
  void Drain(Loop& loop);
  void ScanIdle(Loop& loop);
  int WaitTimeoutMs(Loop& loop);
  void RunInLoop(Loop& loop, std::function<void()> task);
  void UpdateEventsLocked(Connection& c);
  void NotifyDrainers();
  void SetListenersArmed(Loop& loop, bool armed);
};

// ---- Setup ----

Result<std::shared_ptr<BoundListeners>> BoundListeners::Bind(
    const std::vector<std::string>& listen) {
  if (listen.empty()) {
    return Status::InvalidArgument("no TCP listen address: pass at least one HOST:PORT");
  }
  std::shared_ptr<BoundListeners> bound(new BoundListeners());
  for (const std::string& addr : listen) WMBT_RETURN_IF_ERROR(bound->Listen(addr));
  return bound;
}

BoundListeners::~BoundListeners() {
  for (int fd : fds_) ::close(fd);
}

std::vector<int> BoundListeners::TakeFds() {
  listeners_.clear();
  return std::exchange(fds_, {});
}

Status BoundListeners::Listen(const std::string& text) {
  WMBT_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(text, /*allow_port_zero=*/true));
  auto resolved = Resolve(hp, /*passive=*/true);
  if (!resolved.ok()) return resolved.status().WithContext("cannot listen on " + text);
  const SocketAddress& a = resolved->front();
  if (hp.port != 0) {
    const std::string where = FormatAddress(a);
    for (const ListenerInfo& l : listeners_) {
      if (l.address == where) {
        return Status::InvalidArgument("cannot listen on " + text + ": " + where +
                                       " is listed twice (list each address once)");
      }
    }
  }
  int fd = ::socket(a.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
  if (fd < 0) return SocketError("cannot listen on " + text + ": socket", errno);
  fds_.push_back(fd);  // closed by the destructor on any failure below
  int one = 1;
  // A restarted daemon must not wait for the old connections' TIME_WAIT to rebind.
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  // "[::]" and "0.0.0.0" are separate listeners; each listens only where it says.
  if (a.family() == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (::bind(fd, a.get(), a.length) != 0) {
    int err = errno;
    Status st = SocketError("cannot listen on " + text + ": bind", err);
    if (err == EADDRINUSE)
      return Status::Unavailable(st.message() +
                                 " (another wombatkvd, or another program, has that port: stop "
                                 "it or choose another --tcp port)");
    if (err == EADDRNOTAVAIL)
      return Status::Unavailable(st.message() +
                                 " (no interface of this host has that address: give one of its "
                                 "own, or 0.0.0.0 for all of them)");
    return st;
  }
  if (::listen(fd, kListenBacklog) != 0) {
    return SocketError("cannot listen on " + text + ": listen", errno);
  }
  ListenerInfo info;
  info.address = LocalAddressOf(fd);
  info.loopback = IsLoopback(a);
  listeners_.push_back(std::move(info));
  return Status::Ok();
}

Status TcpServer::Impl::StartLoops() {
  const size_t n = options.io_threads == 0 ? 1 : options.io_threads;
  for (size_t i = 0; i < n; ++i) {
    auto loop = std::make_unique<Loop>();
    loop->epfd = ::epoll_create1(EPOLL_CLOEXEC);
    if (loop->epfd < 0) return SocketError("epoll_create1", errno);
    loop->wakefd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (loop->wakefd < 0) return SocketError("eventfd", errno);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kWakeTag;
    if (::epoll_ctl(loop->epfd, EPOLL_CTL_ADD, loop->wakefd, &ev) != 0)
      return SocketError("epoll_ctl(eventfd)", errno);
    SetListenersArmed(*loop, true);
    loops.push_back(std::move(loop));
  }
  for (auto& loop : loops) {
    Loop* l = loop.get();
    l->thread = StartNamedThread("wmbt-tcp-loop", [this, l] { Run(*l); });
  }
  return Status::Ok();
}

void TcpServer::Impl::SetListenersArmed(Loop& loop, bool armed) {
  for (size_t i = 0; i < listen_fds.size(); ++i) {
    if (armed) {
      epoll_event ev{};
      // Every loop waits on every listener; EPOLLEXCLUSIVE wakes one of them per connection.
      ev.events = EPOLLIN | EPOLLEXCLUSIVE;
      ev.data.u64 = kListenerTag | i;
      ::epoll_ctl(loop.epfd, EPOLL_CTL_ADD, listen_fds[i], &ev);
    } else {
      ::epoll_ctl(loop.epfd, EPOLL_CTL_DEL, listen_fds[i], nullptr);
    }
  }
}

// ---- The event loop ----

void TcpServer::Impl::RunInLoop(Loop& loop, std::function<void()> task) {
  {
    std::lock_guard<std::mutex> g(loop.tasks_mu);
    loop.tasks.push_back(std::move(task));
  }
  uint64_t one = 1;
  (void)!::write(loop.wakefd, &one, sizeof one);
}

int TcpServer::Impl::WaitTimeoutMs(Loop& loop) {
  if (options.idle_timeout_ms == 0 && options.hello_timeout_ms == 0 && !loop.accept_paused)
    return -1;
  const uint64_t now = clock->NowMicros();
  if (loop.next_scan_us <= now) return 0;
  return static_cast<int>((loop.next_scan_us - now + 999) / 1000);
}

bool TcpServer::Impl::Alone(const Loop& loop) const {
  return loop.prev_window_conns == 1 && loop.window_conns <= 1;
}

void TcpServer::Impl::NextWindowIfDue(Loop& loop) {
  const uint64_t now = clock->NowMicros();
  if (now - loop.window_start_us < kAloneWindowMicros) return;
  loop.prev_window_conns = loop.window_conns;
  loop.prev_alone_conn = loop.window_conns == 1 ? loop.window_last_conn : 0;
  loop.window_conns = 0;
  ++loop.window;
  loop.window_start_us = now;
}

int TcpServer::Impl::SpinWait(Loop& loop, epoll_event* events) {
  stats.loop_spins.fetch_add(1, std::memory_order_relaxed);
  int n = 0;
  SpinPoll(loop.spin, *clock, Contended::kStop, [&] {
    n = ::epoll_wait(loop.epfd, events, kEventsPerWait, 0);
    return n != 0;
  });
  return n;
}

void TcpServer::Impl::Run(Loop& loop) {
  epoll_event events[kEventsPerWait];
  bool active = false;
  while (!loop.stop.load(std::memory_order_acquire)) {
    // After activity, the next request usually follows within microseconds: polling for it
    // spares the sender's wake-up of this thread (docs/daemon.md, "Spinning"). Idle: no spin.
    const bool spin = options.spin || (options.spin_when_alone && Alone(loop));
    int n = active && spin ? SpinWait(loop, events) : 0;
    if (n == 0) n = ::epoll_wait(loop.epfd, events, kEventsPerWait, WaitTimeoutMs(loop));
    active = n > 0;
    if (n < 0) {
      // EBADF/EFAULT/EINVAL can only be a bug here; a loop that silently stopped would wedge
      // every connection it owns and the shutdown that waits for it.
      WMBT_CHECK_MSG(errno == EINTR, "epoll_wait failed");
      continue;
    }
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      const uint32_t ev = events[i].events;
      if (tag == kWakeTag) {
        uint64_t count;
        (void)!::read(loop.wakefd, &count, sizeof count);
        std::vector<std::function<void()>> tasks;
        {
          std::lock_guard<std::mutex> g(loop.tasks_mu);
          tasks.swap(loop.tasks);
        }
        for (auto& t : tasks) t();
        continue;
      }
      if (tag & kListenerTag) {
        if (!draining.load()) Accept(loop, static_cast<size_t>(tag & ~kListenerTag));
        continue;
      }
      auto it = loop.conns.find(tag);
      if (it == loop.conns.end()) continue;  // closed earlier in this batch
      std::shared_ptr<Connection> c = it->second;
      if (ev & EPOLLERR) {
        Close(loop, c, "socket error");
        continue;
      }
      if (ev & EPOLLIN) {
        OnReadable(loop, c);
        if (c->window != loop.window) {  // the first time in this window
          c->window = loop.window;
          ++loop.window_conns;
          loop.window_last_conn = c->id;
        }
      }
      if (ev & EPOLLOUT) OnWritable(loop, c);
      // Both directions shut: the peer reset, or a worker asked for the close (shutdown(2)).
      if (ev & EPOLLHUP) Close(loop, c, "connection closed");
    }
    if (n > 0) NextWindowIfDue(loop);
    ScanIdle(loop);
  }
}

void TcpServer::Impl::Accept(Loop& loop, size_t li) {
  for (;;) {
    int fd = ::accept4(listen_fds[li], nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      Log(LogLevel::kWarn, SocketError("accept on " + listeners[li].address, errno).message() +
                               "; accepting again within a second");
      // Out of descriptors: a level-triggered listener would wake us in a loop. Re-armed by
      // ScanIdle.
      SetListenersArmed(loop, false);
      loop.accept_paused = true;
      loop.next_scan_us = clock->NowMicros() + kScanIntervalMaxMicros;
      return;
    }
    // Invariant 15: anonymous peers make room for a newcomer before it is refused.
    const bool full = stats.connections_open.load() >= options.connections_max;
    if (full || !listeners[li].loopback) MakeRoomForAnonymous(loop, full);
    if (stats.connections_open.load() >= options.connections_max) {
      stats.connections_refused.fetch_add(1, std::memory_order_relaxed);
      LogPeerWarning("refusing a connection from " + PeerAddressOf(fd) + ": " +
                     std::to_string(options.connections_max) +
                     " connections are open (the limit)");
      ::close(fd);
      continue;
    }
    (void)SetNoDelay(fd);  // best effort: only latency suffers without it
    auto c = std::make_shared<Connection>(next_conn_id.fetch_add(1), fd, loop.epfd,
                                          options.max_frame_bytes);
    c->session.id = c->id;
    c->session.peer = PeerAddressOf(fd);
    c->session.token_required = !listeners[li].loopback;  // invariant 1
    c->accepted_us = clock->NowMicros();
    c->last_active_us.store(c->accepted_us, std::memory_order_relaxed);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = c->id;
    if (::epoll_ctl(loop.epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
      Log(LogLevel::kWarn, SocketError("epoll_ctl(add connection)", errno).message());
      continue;  // ~Connection closes fd
    }
    c->events = EPOLLIN;
    loop.conns.emplace(c->id, c);
    loop.prev_alone_conn = 0;  // invariant 8: nobody is alone beside a newcomer
    stats.connections_accepted.fetch_add(1, std::memory_order_relaxed);
    stats.connections_open.fetch_add(1);
    Log(LogLevel::kDebug, "connection " + std::to_string(c->id) + " from " + c->session.peer +
                              " on " + listeners[li].address +
                              (c->session.token_required ? " (token required)" : ""));
  }
}

void TcpServer::Impl::MakeRoomForAnonymous(Loop& loop, bool full) {
  const size_t share = std::max<size_t>(1, options.unauthenticated_max / loops.size());
  size_t waiting = 0;
  std::shared_ptr<Connection> oldest;
  for (const auto& [id, c] : loop.conns) {
    if (!Unauthenticated(*c)) continue;
    ++waiting;
    if (!oldest || c->id < oldest->id) oldest = c;
  }
  if (waiting == 0 || (waiting < share && !full)) return;
  if (clock->NowMicros() - oldest->accepted_us < options.unauthenticated_grace_ms * 1000) return;
  stats.connections_unauthenticated_closed.fetch_add(1, std::memory_order_relaxed);
  LogPeerWarning("closing connection " + std::to_string(oldest->id) + " from " +
                 oldest->session.peer + ", which has not said Hello, for a newer one: " +
                 (full
                      ? "the connections are at their limit"
                      : std::to_string(waiting) + " connections wait for their Hello (the limit)"));
  Close(loop, oldest, "no Hello before newer connections came");
}

void TcpServer::Impl::UpdateEventsLocked(Connection& c) {
  if (c.closed) return;
  // Invariant 9, with hysteresis so that a client reading slowly does not flip it per write.
  const uint64_t queued = c.out.bytes();
  if (!c.backlogged && queued > options.queued_response_bytes_max) {
    c.backlogged = true;
    stats.backlog_pauses.fetch_add(1, std::memory_order_relaxed);
  } else if (c.backlogged && queued <= options.queued_response_bytes_max / 2) {
    c.backlogged = false;
  }
  const bool reads = !c.read_done && !c.read_paused && !c.backlogged;
  const uint32_t want = (reads ? uint32_t{EPOLLIN} : 0u) | (c.out.empty() ? 0u : EPOLLOUT);
  if (want == c.events) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = c.id;
  // epoll_ctl is thread-safe: workers change the mask of a connection its loop waits on.
  ::epoll_ctl(c.epfd, EPOLL_CTL_MOD, c.fd, &ev);
  c.events = want;
}

void TcpServer::Impl::OnReadable(Loop& loop, const std::shared_ptr<Connection>& c) {
  const bool budgeted = options.immediate || options.async_on_loop;  // invariant 7
  size_t immediate_left = budgeted ? kImmediatePerWakeup : 0;
  uint64_t immediate_bytes = 0;
  for (int i = 0; i < kReadsPerWakeup; ++i) {
    {
      std::lock_guard<std::mutex> g(c->mu);
      if (c->closed || c->read_done || c->read_paused || c->backlogged) return;
    }
    const uint64_t before = c->reader.bytes_read();
    auto r = c->reader.ReadFrom(c->fd);
    if (!r.ok()) {
      Close(loop, c, r.status().message());
      return;
    }
    if (*r == FrameReader::ReadResult::kWouldBlock) return;
    if (*r == FrameReader::ReadResult::kEof) {
      OnPeerClosed(loop, c);
      return;
    }
    stats.bytes_in.fetch_add(c->reader.bytes_read() - before, std::memory_order_relaxed);
    c->last_active_us.store(clock->NowMicros(), std::memory_order_relaxed);
    bool answered = false;
    size_t frames = 0;  // of this read
    for (;;) {
      // Invariant 4, re-checked per frame: a Hello answered in between lifts the limit.
      c->reader.set_max_body_bytes(
          Unauthenticated(*c) ? std::min(options.max_frame_bytes, kUnauthenticatedFrameBytesMax)
                              : options.max_frame_bytes);
      auto m = c->reader.Next();
      if (!m.ok()) {
        Reject(loop, c, m.status());
        return;
      }
      if (!m->has_value()) break;
      ++frames;
      stats.frames_in.fetch_add(1, std::memory_order_relaxed);
      if (Unauthenticated(*c)) {
        RunBeforeAuthentication(c, **m);  // invariant 11
        if ((*m)->op == static_cast<uint16_t>(wire::Op::kHello) && Unauthenticated(*c)) {
          CloseOnceAnswered(loop, c, "Hello refused");  // invariant 14
          return;
        }
        continue;
      }
      if (immediate_left > 0 && immediate_bytes < kImmediateBytesPerWakeup &&
          AnswerNow(loop, c, **m, &immediate_bytes)) {
        --immediate_left;
        answered = true;
        continue;
      }
      if (RunsInline(loop, *c, **m, frames > 1)) {
        RunInline(c, **m);
        // Invariant 8: the other ready sockets come first (nothing more is staged: RunsInline
        // saw no bytes behind this frame; level-triggered epoll reports what came since).
        return;
      }
      if (immediate_left > 0 && immediate_bytes < kImmediateBytesPerWakeup &&
          options.async_on_loop && options.async_on_loop(**m)) {
        --immediate_left;  // invariant 7's budget
        RunAsyncOnLoop(c, **m);
        continue;
      }
      Dispatch(c, std::move(**m));
    }
    // The answers of everything this read carried leave in one sendmsg.
    if (answered) OnWritable(loop, c);
    // Invariant 7: over its budget, the connection waits for the next wake-up (epoll is
    // level-triggered, so unread bytes bring it back after the other ready sockets).
    if (budgeted && (immediate_left == 0 || immediate_bytes >= kImmediateBytesPerWakeup))
      return;
    // The socket had nothing more: reading again would only return EAGAIN. Level-triggered epoll
    // reports whatever arrives from now on.
    if (c->reader.drained()) return;
  }
}

bool TcpServer::Impl::AnswerNow(Loop& loop, const std::shared_ptr<Connection>& c,
                                const wire::Message& request, uint64_t* response_bytes) {
  std::optional<wire::Message> response;
  try {
    response = options.immediate(c->session, request);
  } catch (const std::exception&) {
    return false;  // the worker runs it again and reports what went wrong
  }
  if (!response) return false;
  auto framed = FrameResponse(request, std::move(*response), &loop.crc_memo);
  std::lock_guard<std::mutex> g(c->mu);
  if (c->closed || !framed.ok()) return true;
  *response_bytes += framed->total_bytes();
  c->out.Push(std::move(framed).value());
  stats.frames_out.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void TcpServer::Impl::OnWritable(Loop& loop, const std::shared_ptr<Connection>& c) {
  bool close_now = false;
  std::string why;
  {
    std::lock_guard<std::mutex> g(c->mu);
    if (c->closed) return;
    size_t written = 0;
    auto r = c->out.Flush(c->fd, &written);
    stats.bytes_out.fetch_add(written, std::memory_order_relaxed);
    if (written > 0) c->last_active_us.store(clock->NowMicros(), std::memory_order_relaxed);
    if (!r.ok()) {
      close_now = true;
      why = r.status().message();
    } else {
      UpdateEventsLocked(*c);
      close_now = c->close_when_idle && c->inflight == 0 && c->out.empty();
      why = "closed after its last response";
    }
  }
  if (close_now) Close(loop, c, why);
}

void TcpServer::Impl::OnPeerClosed(Loop& loop, const std::shared_ptr<Connection>& c) {
  // The peer may have only shut its sending side: it still gets the responses in flight.
  if (c->reader.mid_frame()) {
    Log(LogLevel::kInfo, "connection " + std::to_string(c->id) + " from " + c->session.peer +
                             " ended half-way through a frame");
  }
  CloseOnceAnswered(loop, c, "peer closed the connection");
}

void TcpServer::Impl::Reject(Loop& loop, const std::shared_ptr<Connection>& c,
                             const Status& why) {
  stats.frames_rejected.fetch_add(1, std::memory_order_relaxed);
  LogPeerWarning("connection " + std::to_string(c->id) + " from " + c->session.peer +
                 ": rejected a frame (" + why.ToString() +
                 "); answering with the error and closing the connection");
  // Invariant 3: one error response, then close. Its id is the request's when the body could be
  // read, else 0 (the client then knows it concerns the connection, not a call).
  wire::Message response =
      wire::EncodeStatusResponse(static_cast<wire::Op>(c->reader.rejected_op()), why);
  response.id = c->reader.rejected_id();
  response.flags |= wire::kFlagResponse;
  auto framed = wire::Frame(std::move(response));
  {
    std::lock_guard<std::mutex> g(c->mu);
    if (c->closed) return;
    if (framed.ok()) {
      c->out.Push(std::move(framed).value());
      size_t written = 0;
      (void)c->out.Flush(c->fd, &written);
      stats.bytes_out.fetch_add(written, std::memory_order_relaxed);
    }
  }
  CloseOnceAnswered(loop, c, "rejected frame");
}

void TcpServer::Impl::CloseOnceAnswered(Loop& loop, const std::shared_ptr<Connection>& c,
                                        const std::string& why) {
  bool idle;
  {
    std::lock_guard<std::mutex> g(c->mu);
    if (c->closed) return;
    c->read_done = true;
    c->close_when_idle = true;
    idle = c->inflight == 0 && c->out.empty();
    UpdateEventsLocked(*c);
  }
  if (idle) Close(loop, c, why);
}

void TcpServer::Impl::Dispatch(const std::shared_ptr<Connection>& c, wire::Message request) {
  BeginRequest(*c);
  {
    std::lock_guard<std::mutex> g(fair_mu);
    c->fair_queue.push_back(std::move(request));
    if (!c->in_fair_ring) {
      c->in_fair_ring = true;
      fair_ring.push_back(c);
    }
  }
  // One task per request: which request it runs is decided when a worker is free.
  executor->Submit([this] { RunNextFair(); });
}

void TcpServer::Impl::RunNextFair() {
  std::shared_ptr<Connection> c;
  wire::Message request;
  {
    std::lock_guard<std::mutex> g(fair_mu);
    WMBT_CHECK(!fair_ring.empty());  // as many tasks as queued requests
    c = std::move(fair_ring.front());
    fair_ring.pop_front();
    request = std::move(c->fair_queue.front());
    c->fair_queue.pop_front();
    if (c->fair_queue.empty()) {
      c->in_fair_ring = false;
    } else {
      fair_ring.push_back(c);  // its next request after the other connections' next
    }
  }
  Work(c, request);
}

bool TcpServer::Impl::RunsInline(const Loop& loop, Connection& c, const wire::Message& request,
                                 bool after_others) {
  if (!options.inline_when_alone || c.pipelines || draining.load()) return false;
  // Frames before it or bytes behind it in what was read: the client sends without waiting for
  // answers, and must not wait behind a blocking request.
  if (after_others || c.reader.mid_frame()) {
    c.pipelines = true;
    return false;
  }
  if (!options.inline_when_alone(request)) return false;
  // Alone: this connection was the only one in the last window, and no other has sent since
  // (this one is counted after its frames are read, so another is counted already if any).
  if (loop.prev_alone_conn != c.id || loop.window_conns > (c.window == loop.window ? 1u : 0u))
    return false;
  {
    std::lock_guard<std::mutex> g(c.mu);
    if (c.inflight != 0 || c.closed) return false;
  }
  if (c.inline_pause > 0) {
    --c.inline_pause;
    return false;
  }
  return true;
}

void TcpServer::Impl::RunInline(const std::shared_ptr<Connection>& c,
                                const wire::Message& request) {
  BeginRequest(*c);
  stats.requests_inline.fetch_add(1, std::memory_order_relaxed);
  const uint64_t start = clock->NowMicros();
  // The answer is usually there when Handle returns (the loop thread synced the save itself);
  // one completed later on another thread is answered there, and the loop-owned bookkeeping
  // below is skipped for it.
  struct Pending {
    std::mutex mu;
    bool returned = false;
    std::optional<Result<wire::FramedMessage>> framed;
  };
  auto pending = std::make_shared<Pending>();
  Handle(c, request, [this, c, pending](Result<wire::FramedMessage> framed) {
    {
      std::lock_guard<std::mutex> g(pending->mu);
      if (!pending->returned) {
        pending->framed = std::move(framed);
        return;
      }
    }
    Answer(c, std::move(framed));
  });
  std::optional<Result<wire::FramedMessage>> framed;
  {
    std::lock_guard<std::mutex> g(pending->mu);
    pending->returned = true;
    framed = std::move(pending->framed);
  }
  if (!framed) return;
  if (clock->NowMicros() - start > kInlineSlowMicros) c->inline_pause = kInlinePauseRequests;
  // Bytes that came while it ran, before its answer: the client sends without waiting for
  // answers, and must not wait behind a blocking request again.
  char byte;
  if (::recv(c->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0) c->pipelines = true;
  Answer(c, std::move(*framed));
}

void TcpServer::Impl::BeginRequest(Connection& c) {
  {
    std::lock_guard<std::mutex> g(c.mu);
    if (++c.inflight > 1) c.pipelines = true;  // invariant 8
    if (c.inflight >= options.inflight_per_connection_max && !c.read_paused) {
      c.read_paused = true;  // invariant 2
      UpdateEventsLocked(c);
    }
  }
  inflight_total.fetch_add(1);
}

void TcpServer::Impl::RunAsyncOnLoop(const std::shared_ptr<Connection>& c,
                                     const wire::Message& request) {
  BeginRequest(*c);
  stats.requests_async_on_loop.fetch_add(1, std::memory_order_relaxed);
  MustNotBlock here;
  Work(c, request);
}

bool TcpServer::Impl::Unauthenticated(const Connection& c) {
  return c.session.token_required && !c.session.authenticated.load(std::memory_order_acquire);
}

void TcpServer::Impl::RunBeforeAuthentication(const std::shared_ptr<Connection>& c,
                                              const wire::Message& request) {
  BeginRequest(*c);
  Work(c, request);
}

void TcpServer::Impl::Work(const std::shared_ptr<Connection>& c, const wire::Message& request) {
  Handle(c, request, [this, c](Result<wire::FramedMessage> framed) {
    Answer(c, std::move(framed));
  });
}

void TcpServer::Impl::Handle(const std::shared_ptr<Connection>& c, const wire::Message& request,
                             Framed then) {
  wire::Message header;  // what FrameResponse needs of the request, kept past the call
  header.id = request.id;
  header.op = request.op;
  auto responded = std::make_shared<std::atomic<bool>>(false);
  auto respond = [this, header, responded, then](wire::Message response) {
    if (responded->exchange(true)) return;
    then(FrameResponse(header, std::move(response)));
  };
  struct InHandler {
    InHandler() { ++in_handler; }
    ~InHandler() { --in_handler; }
  } in_call;
  try {
    handler(c->session, request, respond);
  } catch (const std::exception& e) {
    // The handler reports errors as statuses; this is the edge where a stray exception (e.g.
    // bad_alloc) becomes one instead of ending the process.
    respond(wire::EncodeStatusResponse(static_cast<wire::Op>(request.op),
                                       Status::Internal(std::string("request failed: ") +
                                                        e.what())));
  }
}

void TcpServer::Impl::Answer(const std::shared_ptr<Connection>& c,
                             Result<wire::FramedMessage> framed) {
  const bool gathered = framed.ok() && GatherForLoop(c);
  {
    std::lock_guard<std::mutex> g(c->mu);
    --c->inflight;
    if (!c->closed && framed.ok()) {
      c->out.Push(std::move(framed).value());
      stats.frames_out.fetch_add(1, std::memory_order_relaxed);
      const bool resume =
          c->read_paused && c->inflight <= options.inflight_per_connection_max / 2;
      if (resume) c->read_paused = false;
      if (gathered) {
        // Invariant 13: its loop writes it when the batch ends; no EPOLLOUT (a wake-up) now.
        if (resume) UpdateEventsLocked(*c);
        return;  // the request ends when the loop has been handed the write (FlushGathered)
      }
      // Written from this thread at once when the socket has room: no loop wake-up on the
      // common path.
      size_t written = 0;
      auto r = c->out.Flush(c->fd, &written);
      stats.bytes_out.fetch_add(written, std::memory_order_relaxed);
      if (written > 0) c->last_active_us.store(clock->NowMicros(), std::memory_order_relaxed);
      if (!r.ok() || (c->close_when_idle && c->inflight == 0 && c->out.empty())) {
        // The loop owns the connection: shutting the socket down makes it report EPOLLHUP,
        // and the loop closes it.
        c->read_done = true;
        DiscardUnread(c->fd);
        ::shutdown(c->fd, SHUT_RDWR);
      }
      UpdateEventsLocked(*c);
    }
  }
  if (!gathered) EndRequest();  // else when its loop has been handed the write
}

void TcpServer::Impl::EndRequest() {
  // Under the mutex: the destructor may free this server as soon as it sees 0 (an answer from
  // a thread it does not join: a save's completion).
  std::lock_guard<std::mutex> g(drain_mu);
  if (inflight_total.fetch_sub(1) == 1 && draining.load()) drain_cv.notify_all();
}

bool TcpServer::Impl::GatherForLoop(const std::shared_ptr<Connection>& c) {
  if (in_handler > 0) return false;
  if (flush_batch == nullptr) {
    auto batch = std::make_shared<FlushBatch>();
    batch->server = this;
    if (!DeferScope::DeferToOpen([this, batch] {
          flush_batch = nullptr;
          FlushGathered(std::move(batch->conns));
        })) {
      return false;
    }
    flush_batch = batch.get();
  }
  if (flush_batch->server != this) return false;
  flush_batch->conns.push_back(c);
  return true;
}

void TcpServer::Impl::FlushGathered(std::vector<std::shared_ptr<Connection>> conns) {
  for (auto& loop : loops) {
    std::vector<std::shared_ptr<Connection>> mine;
    for (const auto& c : conns) {
      if (c->epfd == loop->epfd) mine.push_back(c);
    }
    if (mine.empty()) continue;
    RunInLoop(*loop, [this, l = loop.get(), mine = std::move(mine)] {
      for (const auto& c : mine) OnWritable(*l, c);
    });
  }
  stats.answers_handed_to_loops.fetch_add(conns.size(), std::memory_order_relaxed);
  const size_t n = conns.size();
  conns.clear();
  for (size_t i = 0; i < n; ++i) EndRequest();
}

Result<wire::FramedMessage> TcpServer::Impl::FrameResponse(const wire::Message& request,
                                                          wire::Message response,
                                                          wire::PayloadCrcSource* crcs) {
  response.id = request.id;
  response.flags |= wire::kFlagResponse;
  auto framed = wire::Frame(std::move(response), wire::kDefaultMaxBodyBytes, crcs);
  if (!framed.ok()) {
    wire::Message error = wire::EncodeStatusResponse(
        static_cast<wire::Op>(request.op),
        Status::ResourceExhausted("the response does not fit one frame (" +
                                  framed.status().message() + "); " +
                                  (request.op == static_cast<uint16_t>(wire::Op::kGetBlocks)
                                       ? "ask for fewer or smaller blocks per call"
                                       : "ask for one namespace at a time")));
    error.id = request.id;
    error.flags |= wire::kFlagResponse;
    framed = wire::Frame(std::move(error));
  }
  return framed;
}

void TcpServer::Impl::NotifyDrainers() {
  // Taking the mutex orders this with a drainer that has checked but not yet waited.
  std::lock_guard<std::mutex> g(drain_mu);
  drain_cv.notify_all();
}

void TcpServer::Impl::Close(Loop& loop, const std::shared_ptr<Connection>& c,
                            const std::string& why) {
  {
    std::lock_guard<std::mutex> g(c->mu);
    if (c->closed) return;
    c->closed = true;
    ::epoll_ctl(c->epfd, EPOLL_CTL_DEL, c->fd, nullptr);
    DiscardUnread(c->fd);
    ::shutdown(c->fd, SHUT_RDWR);
    c->out = SendQueue();  // invariant 6: queued responses and their pins go now
  }
  loop.conns.erase(c->id);
  stats.connections_open.fetch_sub(1);
  Log(LogLevel::kDebug,
      "connection " + std::to_string(c->id) + " from " + c->session.peer + " closed: " + why);
  if (draining.load()) NotifyDrainers();
}

void TcpServer::Impl::ScanIdle(Loop& loop) {
  const uint64_t now = clock->NowMicros();
  if (now < loop.next_scan_us) return;
  uint64_t interval = kScanIntervalMaxMicros;
  for (uint64_t ms : {options.idle_timeout_ms, options.hello_timeout_ms}) {
    if (ms > 0) interval = std::min<uint64_t>(interval, ms * 1000 / 4);
  }
  interval = std::max<uint64_t>(interval, kScanIntervalMinMicros);
  loop.next_scan_us = now + interval;
  if (loop.accept_paused && !draining.load()) {
    loop.accept_paused = false;
    SetListenersArmed(loop, true);
  }
  const uint64_t idle_us = options.idle_timeout_ms * 1000;
  const uint64_t hello_us = options.hello_timeout_ms * 1000;
  std::vector<std::pair<std::shared_ptr<Connection>, std::string>> closing;
  for (auto& [id, c] : loop.conns) {
    // Invariant 10: busy or not, an anonymous peer holds its slot only so long.
    if (hello_us > 0 && c->session.token_required &&
        !c->session.authenticated.load(std::memory_order_acquire) && now > c->accepted_us &&
        now - c->accepted_us >= hello_us) {
      stats.connections_unauthenticated_closed.fetch_add(1, std::memory_order_relaxed);
      closing.emplace_back(c, "no successful Hello within " +
                                  std::to_string(options.hello_timeout_ms) + " ms of connecting");
      continue;
    }
    if (idle_us == 0) continue;
    uint64_t last = c->last_active_us.load(std::memory_order_relaxed);
    if (now <= last || now - last < idle_us) continue;
    std::lock_guard<std::mutex> g(c->mu);
    // Invariant 5. A connection whose responses are queued but not read counts as idle too:
    // a client that stops reading must not hold its payload pins forever.
    if (c->inflight == 0) {
      stats.connections_idle_closed.fetch_add(1, std::memory_order_relaxed);
      closing.emplace_back(c, "nothing received or sent for " +
                                  std::to_string(options.idle_timeout_ms) + " ms" +
                                  (c->reader.mid_frame()
                                       ? " (it stopped half-way through a frame)"
                                       : ""));
    }
  }
  for (auto& [c, why] : closing) {
    Log(LogLevel::kInfo,
        "closing connection " + std::to_string(c->id) + " from " + c->session.peer + ": " + why);
    Close(loop, c, why);
  }
}

void TcpServer::Impl::Drain(Loop& loop) {
  SetListenersArmed(loop, false);
  std::vector<std::shared_ptr<Connection>> idle;
  for (auto& [id, c] : loop.conns) {
    std::lock_guard<std::mutex> g(c->mu);
    c->read_done = true;
    c->close_when_idle = true;
    if (c->inflight == 0 && c->out.empty()) idle.push_back(c);
    UpdateEventsLocked(*c);
  }
  for (auto& c : idle) Close(loop, c, "daemon shutting down");
}

// ---- TcpServer ----

TcpServer::TcpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<TcpServer>> TcpServer::Start(RequestHandler handler,
                                                    TcpServerOptions options) {
  std::shared_ptr<BoundListeners> bound = std::move(options.bound);
  if (!bound) {
    WMBT_ASSIGN_OR_RETURN(bound, BoundListeners::Bind(options.listen));
  }
  if (options.inflight_per_connection_max == 0) options.inflight_per_connection_max = 1;
  auto impl = std::make_unique<Impl>();
  impl->handler = std::move(handler);
  impl->options = std::move(options);
  impl->clock = impl->options.clock ? impl->options.clock : RealClock();
  if (bound->listeners().empty()) {
    return Status::FailedPrecondition("these bound listeners were taken by another server");
  }
  impl->listeners = bound->listeners();
  impl->listen_fds = bound->TakeFds();  // closed by ~Impl from here on
  if (impl->options.executor != nullptr) {
    impl->executor = impl->options.executor;
  } else {
    impl->own_executor = NewThreadPoolExecutor(
        impl->options.worker_threads == 0 ? 1 : impl->options.worker_threads, "wmbt-tcp-work");
    impl->executor = impl->own_executor.get();
  }
  Status st = impl->StartLoops();
  auto server = std::unique_ptr<TcpServer>(new TcpServer(std::move(impl)));
  if (!st.ok()) {
    server->Shutdown(0);
    return st;
  }
  return server;
}

TcpServer::~TcpServer() {
  if (impl_ && !impl_->shut_down) Shutdown(0);
}

const std::vector<ListenerInfo>& TcpServer::listeners() const { return impl_->listeners; }
const TcpServerStats& TcpServer::stats() const { return impl_->stats; }

size_t TcpServer::Shutdown(uint64_t timeout_ms) {
  Impl& s = *impl_;
  if (s.shut_down) return 0;
  s.shut_down = true;
  s.draining.store(true);
  const uint64_t deadline = s.clock->NowMicros() + timeout_ms * 1000;
  // Waits, within the bound, until `done` holds; false if the bound passed first.
  auto wait_until = [&](const std::function<bool()>& done) {
    std::unique_lock<std::mutex> l(s.drain_mu);
    for (;;) {
      if (done()) return true;
      const uint64_t now = s.clock->NowMicros();
      if (now >= deadline) return false;
      s.clock->WaitFor(s.drain_cv, l, deadline - now);
    }
  };
  // 1. Every loop stops accepting and reading; idle connections close at once. A loop inside an
  //    inline request (invariant 8) does so when it returns, if within the bound.
  for (auto& loop : s.loops) {
    Loop* l = loop.get();
    if (!l->thread.joinable()) continue;  // never started
    s.RunInLoop(*l, [&s, l] {
      s.Drain(*l);
      l->drained.store(true);
      s.NotifyDrainers();
    });
  }
  auto all_drained = [&s] {
    for (auto& loop : s.loops) {
      if (loop->thread.joinable() && !loop->drained.load()) return false;
    }
    return true;
  };
  const bool loops_drained = wait_until(all_drained);
  if (loops_drained) {  // else a late Drain still unregisters them: ~Impl closes them
    for (int fd : s.listen_fds) ::close(fd);
    s.listen_fds.clear();
  }
  // 2. Running requests finish and their responses are written, within the bound.
  wait_until([&s] {
    return s.inflight_total.load() == 0 && s.stats.connections_open.load() == 0;
  });
  const size_t abandoned = s.inflight_total.load();
  // 3. Stop the loops, then close what is left.
  for (auto& loop : s.loops) {
    loop->stop.store(true, std::memory_order_release);
    uint64_t one = 1;
    (void)!::write(loop->wakefd, &one, sizeof one);
  }
  for (auto& loop : s.loops) {
    if (!loop->drained.load()) continue;  // still in an inline request: ~Impl joins it
    if (loop->thread.joinable()) loop->thread.join();
    std::vector<std::shared_ptr<Connection>> left;
    for (auto& [id, c] : loop->conns) left.push_back(c);
    for (auto& c : left) s.Close(*loop, c, "daemon shut down");
  }
  if (abandoned > 0) {
    s.Log(LogLevel::kWarn, std::to_string(abandoned) + " request(s) still running after " +
                               std::to_string(timeout_ms) + " ms; their responses are dropped");
  }
  return abandoned;
}

}  // namespace wombatkv::tcp
