#include "transport/shm/shm_server.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/check.h"
#include "base/thread_name.h"
#include "transport/shm/futex.h"
#include "transport/shm/os.h"
#include "transport/shm/region_allocator.h"
#include "transport/shm/ring.h"

namespace wombatkv {

using shm::Fd;
using shm::Ring;

namespace {

// Ids of the io thread's epoll events; clients are registered under their session id.
constexpr uint64_t kStopEventId = 0;
constexpr uint64_t kListenEventId = 1;
// And of the idle workers' epoll (Impl::bells), where clients' sockets ring under their id too.
constexpr uint64_t kWorkerWakeId = 0;
constexpr uint64_t kWorkerStopId = 1;
constexpr uint64_t kFirstSessionId = 2;
// Requests that take this long (µs, on average) block in I/O — a durable save waits for its
// fsync — so while one runs, the next request is a while away (docs/shm.md, "Wake-ups").
// In-memory requests take a few µs; a save, an fsync of 100 µs or more.
constexpr int64_t kSlowServeMicros = 100;

// Counters shared by the server and its connections (a Conn outlives no server: Stop joins every
// thread that could hold one).
struct Counters {
  std::atomic<uint64_t> clients{0}, segments_live{0}, regions_live{0}, region_bytes_live{0},
      shared_live{0}, shared{0}, grants{0}, attaches{0}, detaches{0}, refusals{0}, requests{0},
      doorbells{0}, protocol_errors{0}, too_large{0}, idle_spins{0};
  std::atomic<uint64_t> running{0};       // requests taken and not yet answered
  std::atomic<uint64_t> workers_idle{0};  // Impl::idle - Impl::wake_tokens, for Stats
  std::mutex mu;
  std::condition_variable cv;  // notified when a client attaches, detaches or is destroyed, when
                               // the last running handler call returns during a shutdown, and
                               // when workers_idle changes

  void Notify() {
    std::lock_guard<std::mutex> lk(mu);
    cv.notify_all();
  }
};

}  // namespace

// One attached client. Owned by shared_ptr: the io thread's table, worker snapshots and the
// requests in flight each hold one; the segment is unmapped when the last goes.
struct Conn {
  Conn(Counters* counters, uint64_t id, shm::PeerCred peer, Fd sock,
       std::unique_ptr<shm::Mapping> map, const shm::Layout& layout);
  ~Conn();

  Counters* const counters;
  const uint64_t id;
  const shm::PeerCred peer;
  Fd sock;  // GUARDED_BY(mu) once published: Break shuts it down, Detach closes it
  const std::unique_ptr<shm::Mapping> map;
  const shm::Layout layout;
  const Ring req, resp, rel;
  uint8_t* const req_area;
  uint8_t* const resp_area;
  Session session;
  std::atomic<bool> dead{false};

  // What one response holds until the client releases its token (A3).
  struct Held {
    uint64_t region = 0;        // offset in the response area
    uint64_t region_bytes = 0;  // 0 = no region
    std::vector<std::shared_ptr<const Buffer>> pins;  // arena payloads passed by reference
    bool delivered = false;  // published: from now on the client may release it
  };
  using Unpinned = std::vector<std::shared_ptr<const Buffer>>;
  std::mutex mu;
  uint32_t req_head = 0;     // GUARDED_BY(mu)
  uint32_t resp_tail = 0;    // GUARDED_BY(mu)
  uint32_t rel_head = 0;     // GUARDED_BY(mu)
  uint32_t outstanding = 0;  // GUARDED_BY(mu): requests taken whose response is not published
  shm::RegionAllocator alloc;                 // GUARDED_BY(mu)
  std::unordered_map<uint64_t, Held> held;    // GUARDED_BY(mu): by release token
  uint64_t next_token = 1;                    // GUARDED_BY(mu)
  uint64_t granted = 0;  // GUARDED_BY(mu): bit k-1 = arena k's descriptor was handed over
};

// A request taken from a ring, or the reason it could not be decoded.
struct Taken {
  std::shared_ptr<Conn> conn;
  wire::Message msg;
  Status error;
};

struct ShmServer::Impl {
  Impl(Handler h, ShmServerOptions o, ImmediateHandler i)
      : handler(std::move(h)), immediate(std::move(i)), options(std::move(o)) {
    clock = options.clock ? options.clock : RealClock();
  }

  Handler handler;
  ImmediateHandler immediate;  // may be null
  ShmServerOptions options;
  Clock* clock;
  shm::Layout layout;
  shm::Listener listener;
  Fd epoll, stop_event;
  // Idle workers sleep in epoll_wait on `bells`: every client's control socket (a doorbell byte
  // wakes one of them directly, edge-triggered), `wake_event` (WakeOne's tokens: a semaphore
  // eventfd) and `workers_stop` (written once, at shutdown: wakes them all).
  Fd bells, wake_event, workers_stop;
  std::thread io;
  std::vector<std::thread> workers;
  bool started = false;

  // Connections, as the io thread sees them (io thread only) and as workers see them.
  std::unordered_map<uint64_t, std::shared_ptr<Conn>> table;
  uint64_t next_id = kFirstSessionId;
  std::mutex conns_mu;
  std::vector<std::shared_ptr<Conn>> conns;  // GUARDED_BY(conns_mu)
  std::atomic<uint64_t> conns_version{1};

  // Worker pool (docs/shm.md, "Wake-ups").
  std::atomic<bool> stopping{false};
  std::atomic<bool> spinner{false};  // one idle worker at most spins
  // Workers awake and not running a handler: they will scan the rings (R3's "not armed: a worker
  // will scan" holds while this is > 0; a worker that drops it to 0 calls KeepWatch before a
  // handler that may block).
  std::atomic<uint32_t> scanners{0};
  // How long that worker spins: long enough to catch the next request of a busy client when a
  // core is free for it, shrinking when the cores are oversubscribed (futex.h), but never below
  // ~30 µs — a client's turnaround between two calls — or a client calling in a loop would need
  // a doorbell (three context switches) for every call.
  shm::AdaptiveSpin scan_spin{1024};
  // The last spin ended early because a yield took long: other tasks wanted the cores (e.g. eight
  // clients waiting for durable saves on two cores), so a doorbell rung after it does not lengthen
  // the spin — spinning longer would only delay the clients more (docs/shm.md, "Wake-ups").
  std::atomic<bool> spin_contended{false};
  // How long handler calls take now: an exponential average (1/8 per call) of their wall time,
  // µs. With other calls running, an average of kSlowServeMicros or more stops idle workers from
  // spinning (SpinPays).
  std::atomic<uint32_t> serve_micros_avg{0};
  std::mutex pool_mu;
  size_t idle = 0;         // GUARDED_BY(pool_mu): workers asleep or about to sleep
  // GUARDED_BY(pool_mu): <= idle. WakeOne's tokens written to wake_event and not yet taken.
  size_t wake_tokens = 0;

  Counters n;

  void Log(LogLevel level, const std::string& line) {
    if (options.log) {
      options.log(level, line);
    } else if (level >= LogLevel::kWarn) {
      std::fprintf(stderr, "wombatkvd shm: %s\n", line.c_str());
    }
  }

  // --- io thread -------------------------------------------------------------------------------
  void IoLoop();
  void Accept();
  void AttachClient(Fd sock);
  void Refuse(int sock, const Status& why);
  void Detach(uint64_t id);
  void PublishConns();

  // --- workers ---------------------------------------------------------------------------------
  void WorkerLoop(size_t index);
  // `wait_for_lock`: wait for a client's mutex instead of looking elsewhere when another thread
  // holds it (GoIdle's last scan: a completion thread publishing a response, or a worker
  // draining a doorbell, will not scan for the request this one would skip).
  bool TakeAny(std::vector<std::shared_ptr<Conn>>& snap, size_t* rr, Taken* out,
               bool wait_for_lock = false);
  bool TryTake(const std::shared_ptr<Conn>& c, Taken* out, bool wait_for_lock);
  // Runs `t`'s handler and publishes the response. `last`: this worker was the last awake one
  // to stop scanning; unless `immediate` answers, it hands the watch on (KeepWatch) first.
  void Serve(Taken& t, bool last, std::vector<std::shared_ptr<Conn>>& snap, uint64_t* version);
  // Publishes the response to request `id`, `op` of `c` and ends the request (Served).
  void Answer(std::shared_ptr<Conn> c, uint64_t id, uint16_t op, wire::Message resp,
              uint64_t begin, bool maybe_off_pool);
  // A request that began at `begin` has been answered: the average serve time, n.running.
  // `maybe_off_pool`: perhaps on a thread Shutdown does not join (a handler's late response),
  // which must not touch the server once the count it waits for is 0.
  void Served(uint64_t begin, bool maybe_off_pool);
  void KeepWatch(std::vector<std::shared_ptr<Conn>>& snap, uint64_t* version);
  void Publish(Conn& c, const wire::Message& m, const Status& error);
  // Per payload of `m`: its arena reference when it lies in a payload arena (else arena 0);
  // empty when none does.
  std::vector<shm::PayloadRef> SharedRefs(const wire::Message& m) const;
  // Hands `c` the descriptors of the arenas `plan` refers to that it lacks. False when one could
  // not be sent (then the response copies instead). REQUIRES: c.mu held.
  bool GrantArenas(Conn& c, const shm::MessagePlan& plan);
  // Reserves what the response keeps until released: its region (`*region`) and its shared
  // payloads' Buffers, under a new token (`*token`). REQUIRES: c.mu held.
  Status Hold(Conn& c, const wire::Message& m, const shm::MessagePlan& plan, uint64_t* region,
              uint64_t* token);
  // Lets go of what the client released. The Buffers unpinned go to `*unpinned`, for the
  // caller to drop after unlocking (their release may run store code). REQUIRES: c.mu held.
  void DrainReleases(Conn& c, Conn::Unpinned* unpinned);
  // Before a worker sleeps: lets go of what clients released since their last response, so a
  // client that went quiet does not keep cache entries pinned until its next call.
  void DrainIdleReleases(const std::vector<std::shared_ptr<Conn>>& snap);
  void Break(Conn& c, const std::string& why);  // REQUIRES: c.mu held
  void WakeOne();
  void GoIdle(std::vector<std::shared_ptr<Conn>>& snap, uint64_t* version, size_t* rr);
  // Sleeps in epoll_wait on `bells` until a doorbell, a WakeOne token or the shutdown, then
  // leaves the idle count. True when a client rang (its doorbell bytes drained).
  bool SleepUntilRung();
  // Drains the doorbell bytes of client `id`. kNone if there were none (another worker drained
  // them, or the client is gone); kReleases when no request waits: the client rang after
  // releasing shared payloads (NudgeAfterRelease), which are let go here, and its doorbell is
  // armed again (R3) so the worker may sleep on.
  enum class Rang { kNone, kRequest, kReleases };
  Rang DrainDoorbell(uint64_t id);
  void SetIdle(size_t workers);  // REQUIRES: pool_mu held
  // Serves `t` as a worker that stops scanning meanwhile (see scanners).
  void RunHandler(std::vector<std::shared_ptr<Conn>>& snap, uint64_t* version, Taken& t);
  void Resnap(std::vector<std::shared_ptr<Conn>>& snap, uint64_t* version);
  void ArmDoorbells(const std::vector<std::shared_ptr<Conn>>& snap);
  // Whether an idle worker should spin for the next request now: not while other requests are
  // running and requests take kSlowServeMicros or more. Then the clients that will send the next
  // requests wait for answers or are preparing their next call, and the cores are theirs: a
  // spin would delay them (eight clients saving on two cores), and a request that comes rings
  // the doorbell. A worker with nothing else running still spins: a client that calls in a loop
  // is caught without a wake-up (one client saving).
  bool SpinPays() const {
    return n.running.load(std::memory_order_relaxed) == 0 ||
           serve_micros_avg.load(std::memory_order_relaxed) < kSlowServeMicros;
  }
};

Conn::Conn(Counters* s, uint64_t i, shm::PeerCred p, Fd so,
           std::unique_ptr<shm::Mapping> m, const shm::Layout& l)
    : counters(s),
      id(i),
      peer(p),
      sock(std::move(so)),
      map(std::move(m)),
      layout(l),
      req(reinterpret_cast<shm::RingControl*>(map->base() + l.request_ring_control),
          map->base() + l.request_slots, l.params.slot_count, l.params.slot_bytes),
      resp(reinterpret_cast<shm::RingControl*>(map->base() + l.response_ring_control),
           map->base() + l.response_slots, l.params.slot_count, l.params.slot_bytes),
      rel(reinterpret_cast<shm::RingControl*>(map->base() + l.release_ring_control),
          map->base() + l.release_slots, l.params.release_count, sizeof(uint64_t)),
      req_area(map->base() + l.request_area),
      resp_area(map->base() + l.response_area),
      alloc(l.params.response_area_bytes) {
  session.id = id;
  session.peer = "shm pid " + std::to_string(peer.pid) + " uid " + std::to_string(peer.uid);
  session.token_required = false;  // same-user peers only (SO_PEERCRED), SPEC §10
  counters->segments_live++;
}

Conn::~Conn() {
  uint64_t bytes = 0, regions = 0, pins = 0;
  for (const auto& [token, h] : held) {
    regions += h.region_bytes != 0;
    bytes += shm::RegionAllocator::Rounded(h.region_bytes);
    pins += h.pins.size();
  }
  counters->regions_live -= regions;
  counters->region_bytes_live -= bytes;
  counters->shared_live -= pins;
  counters->segments_live--;
  counters->Notify();
}

// ---------------------------------------------------------------------------------------------
// io thread

void ShmServer::Impl::IoLoop() {
  epoll_event events[64];
  for (;;) {
    const int count = ::epoll_wait(epoll.get(), events, 64, -1);
    if (count < 0) {
      if (errno == EINTR) continue;
      Log(LogLevel::kError, "epoll_wait: " + shm::ErrnoText(errno));
      return;
    }
    for (int i = 0; i < count; ++i) {
      const uint64_t id = events[i].data.u64;
      if (id == kStopEventId) return;
      if (id == kListenEventId) {
        Accept();
        continue;
      }
      // A hang-up (the only event a client's socket is registered for here: its doorbell
      // bytes wake a worker directly, SleepUntilRung).
      if (table.count(id) && (events[i].events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR)))
        Detach(id);
    }
  }
}

void ShmServer::Impl::Accept() {
  for (;;) {
    Fd sock(::accept4(listener.sock.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!sock.valid()) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        Log(LogLevel::kWarn, "accept on " + listener.path + ": " + shm::ErrnoText(errno));
      return;
    }
    AttachClient(std::move(sock));
  }
}

void ShmServer::Impl::Refuse(int sock, const Status& why) {
  n.refusals++;
  Log(LogLevel::kWarn, "refused a client: " + why.ToString());
  shm::AttachReply r{};
  r.magic = shm::kSegmentMagic;
  r.layout_version = shm::kLayoutVersion;
  r.code = static_cast<uint32_t>(why.code());
  r.message_bytes = static_cast<uint32_t>(std::min(why.message().size(), sizeof r.message));
  std::memcpy(r.message, why.message().data(), r.message_bytes);
  (void)shm::SendWithFd(sock, &r, sizeof r, -1);
}

void ShmServer::Impl::AttachClient(Fd sock) {
  auto peer = shm::GetPeerCred(sock.get());
  if (!peer.ok()) return Refuse(sock.get(), peer.status());
  if (!shm::PeerAllowed(*peer)) {
    return Refuse(sock.get(),
                  Status::PermissionDenied(
                      "uid " + std::to_string(peer->uid) + " may not attach: this wombatkvd runs "
                      "as uid " + std::to_string(::geteuid()) +
                      " and shares memory with its own user only (use TCP with a token)"));
  }
  if (table.size() >= options.clients_max) {
    return Refuse(sock.get(), Status::ResourceExhausted(
                                  "wombatkvd serves " + std::to_string(table.size()) +
                                  " shared-memory clients, its limit: retry later or use TCP"));
  }
  auto fd = shm::CreateSegmentFd(layout.segment_bytes);
  if (!fd.ok()) return Refuse(sock.get(), fd.status());
  auto map = shm::Mapping::Map(fd->get(), layout.segment_bytes);
  if (!map.ok()) return Refuse(sock.get(), map.status());
  const uint64_t id = next_id++;
  shm::InitSegment((*map)->base(), layout, id);
  // Advice only: with shmem huge pages enabled ("advise"), 2 MiB payloads fault in 1 page.
  (void)::madvise((*map)->base() + layout.request_area,
                  layout.segment_bytes - layout.request_area, MADV_HUGEPAGE);

  shm::AttachReply r{};
  r.magic = shm::kSegmentMagic;
  r.layout_version = shm::kLayoutVersion;
  r.segment_bytes = layout.segment_bytes;
  r.session_id = id;
  if (!shm::SendWithFd(sock.get(), &r, sizeof r, fd->get()).ok()) return;  // client already gone
  fd->Reset();  // the client has its own descriptor now; ours is not needed once mapped

  auto conn = std::make_shared<Conn>(&n, id, *peer, std::move(sock), std::move(*map), layout);
  epoll_event hangup{};
  hangup.events = EPOLLRDHUP;
  hangup.data.u64 = id;
  if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, conn->sock.get(), &hangup) != 0) {
    Log(LogLevel::kError, "epoll_ctl: " + shm::ErrnoText(errno));
    return;
  }
  table.emplace(id, conn);
  PublishConns();
  n.clients++;
  n.attaches++;
  // Only now, with the client in the list a woken worker looks it up in: its doorbell is armed
  // from the start, and a byte it sent already is reported by the ADD itself. (Its hang-up
  // also wakes a worker here, EPOLLHUP not being maskable: an empty drain, then sleep.)
  epoll_event bell{};
  bell.events = EPOLLIN | EPOLLET;  // one byte (or a burst) wakes one idle worker
  bell.data.u64 = id;
  if (::epoll_ctl(bells.get(), EPOLL_CTL_ADD, conn->sock.get(), &bell) != 0) {
    Log(LogLevel::kError, "epoll_ctl: " + shm::ErrnoText(errno));
    return Detach(id);
  }
  Log(LogLevel::kDebug, "attached " + conn->session.peer + " as session " + std::to_string(id));
  n.Notify();
}

void ShmServer::Impl::Detach(uint64_t id) {
  auto it = table.find(id);
  if (it == table.end()) return;
  std::shared_ptr<Conn> c = std::move(it->second);
  table.erase(it);
  {
    std::lock_guard<std::mutex> lk(c->mu);  // Break may be shutting the socket down right now
    c->dead.store(true);
    (void)::epoll_ctl(epoll.get(), EPOLL_CTL_DEL, c->sock.get(), nullptr);
    (void)::epoll_ctl(bells.get(), EPOLL_CTL_DEL, c->sock.get(), nullptr);
    c->sock.Reset();
  }
  PublishConns();
  n.clients--;
  n.detaches++;
  Log(LogLevel::kDebug, "detached " + c->session.peer);
  n.Notify();
  // `c` goes here; workers drop their references at their next scan or when their request ends.
}

void ShmServer::Impl::PublishConns() {
  std::vector<std::shared_ptr<Conn>> v;
  v.reserve(table.size());
  for (auto& [id, c] : table) v.push_back(c);
  std::lock_guard<std::mutex> lk(conns_mu);
  conns = std::move(v);
  conns_version++;
}

// ---------------------------------------------------------------------------------------------
// Workers

void ShmServer::Impl::WakeOne() {
  {
    std::lock_guard<std::mutex> lk(pool_mu);
    if (wake_tokens >= idle) return;
    wake_tokens++;
    SetIdle(idle);  // one fewer asleep for good
  }
  // After unlocking: a worker woken on another core would otherwise often find pool_mu still
  // held. The eventfd keeps the token until a worker takes it, so no wake is lost.
  const uint64_t one = 1;
  (void)!::write(wake_event.get(), &one, sizeof one);
}

bool ShmServer::Impl::TakeAny(std::vector<std::shared_ptr<Conn>>& snap, size_t* rr, Taken* out,
                              bool wait_for_lock) {
  const size_t n = snap.size();
  for (size_t i = 0; i < n; ++i) {
    const size_t k = (*rr + i) % n;
    if (TryTake(snap[k], out, wait_for_lock)) {
      *rr = k + 1;  // round robin: the next scan starts after this client
      return true;
    }
  }
  return false;
}

bool ShmServer::Impl::TryTake(const std::shared_ptr<Conn>& cp, Taken* out, bool wait_for_lock) {
  Conn& c = *cp;
  if (c.dead.load(std::memory_order_relaxed)) return false;
  // Cheap look without the lock: the ring's own head is ours, so equal counters mean empty.
  if (c.req.tail().load(std::memory_order_acquire) == c.req.head().load(std::memory_order_relaxed))
    return false;
  std::unique_lock<std::mutex> lk(c.mu, std::defer_lock);
  if (wait_for_lock) lk.lock();
  else if (!lk.try_lock()) return false;  // another worker is at this client; look elsewhere
  const uint32_t tail = c.req.tail().load(std::memory_order_acquire);
  const int64_t used = c.req.Used(tail, c.req_head);
  if (used < 0) {
    Break(c, "request ring tail out of range");
    return false;
  }
  if (used == 0) return false;
  // Take a request only if its response will find a free slot (the client, not the daemon,
  // waits when it does not consume its responses).
  const int64_t resp_used = c.resp.Used(c.resp_tail, c.resp.head().load(std::memory_order_acquire));
  if (resp_used < 0) {
    Break(c, "response ring head out of range");
    return false;
  }
  if (resp_used + c.outstanding >= c.resp.capacity()) return false;

  const uint8_t* slot = c.req.slot(c.req_head);
  auto m = shm::ReadSlot(slot, c.req.slot_bytes(), c.req_area, c.layout.params.request_area_bytes);
  shm::SlotHeader raw;
  std::memcpy(&raw, slot, sizeof raw);
  c.req_head++;
  c.req.head().store(c.req_head, std::memory_order_release);  // R2: the slot is the client's again
  c.outstanding++;
  lk.unlock();

  out->conn = cp;
  out->error = Status::Ok();
  out->msg = wire::Message{};
  out->msg.id = raw.id;
  out->msg.op = raw.op;
  if (m.ok() && m->header.kind != static_cast<uint8_t>(shm::SlotKind::kMessage))
    m = Status::InvalidArgument("malformed shared-memory message: a request cannot be an error");
  if (!m.ok()) {
    n.protocol_errors++;
    out->error = m.status();
    return true;
  }
  out->msg.flags = m->header.flags;
  out->msg.fields = std::move(m->fields);
  out->msg.payloads.reserve(m->payloads.size());
  for (const shm::PayloadRef& p : m->payloads) {
    // Non-owning views into the client's request area: valid while `conn` (and so the mapping)
    // lives, which covers the handler call. The handler reads them in place (docs/shm.md).
    out->msg.payloads.push_back(BufferSlice{nullptr, c.req_area + p.offset, p.bytes});
  }
  return true;
}

void ShmServer::Impl::Serve(Taken& t, bool last, std::vector<std::shared_ptr<Conn>>& snap,
                            uint64_t* version) {
  n.requests++;
  n.running++;
  const uint64_t begin = clock->NowMicros();
  if (!t.error.ok()) {
    Publish(*t.conn, t.msg, t.error);
    Served(begin, /*maybe_off_pool=*/false);
  } else {
    std::optional<wire::Message> answered;
    if (immediate) answered = immediate(t.conn->session, t.msg);
    if (answered) {
      Answer(t.conn, t.msg.id, t.msg.op, std::move(*answered), begin, /*maybe_off_pool=*/false);
    } else {
      if (last) KeepWatch(snap, version);
      // The response may come later, from another thread (a save: from the thread syncing it);
      // `conn` keeps the client's segment mapped until then.
      handler(t.conn->session, t.msg,
              [this, conn = t.conn, id = t.msg.id, op = t.msg.op,
               begin](wire::Message resp) mutable {
                // The last reference to `conn` may be this one: it goes before the request
                // ends, while the server still stands (~Conn counts in it).
                std::shared_ptr<Conn> c = std::move(conn);
                Answer(std::move(c), id, op, std::move(resp), begin, /*maybe_off_pool=*/true);
              });
    }
  }
  t = Taken{};
}

void ShmServer::Impl::Answer(std::shared_ptr<Conn> c, uint64_t id, uint16_t op,
                             wire::Message resp, uint64_t begin, bool maybe_off_pool) {
  resp.id = id;
  resp.op = op;
  resp.flags |= wire::kFlagResponse;
  Publish(*c, resp, Status::Ok());
  // Dropping the response here releases what its payloads pinned (cache entries).
  resp = wire::Message{};
  c.reset();
  Served(begin, maybe_off_pool);
}

void ShmServer::Impl::Served(uint64_t begin, bool maybe_off_pool) {
  // Capped: one call of seconds (an S3 request) must not stop the spins for a hundred calls.
  const uint64_t took_us = std::min<uint64_t>(clock->NowMicros() - begin, 4 * kSlowServeMicros);
  const int64_t took = static_cast<int64_t>(took_us);
  const int64_t avg = serve_micros_avg.load(std::memory_order_relaxed);
  serve_micros_avg.store(static_cast<uint32_t>(avg + (took - avg) / 8),
                         std::memory_order_relaxed);
  if (!maybe_off_pool) {  // a worker: Shutdown joins it before the server goes (no lock per get)
    if (--n.running == 0 && stopping.load()) n.Notify();
    return;
  }
  // Under the mutex: a stop waiting for the count may free this server as soon as it sees 0.
  std::lock_guard<std::mutex> lk(n.mu);
  if (--n.running == 0 && stopping.load()) n.cv.notify_all();
}

void ShmServer::Impl::Publish(Conn& c, const wire::Message& m, const Status& error) {
  Status failure = error;
  shm::MessagePlan plan;
  uint64_t region = 0, token = 0;
  Conn::Unpinned unpinned;  // dropped after the locks below are released
  if (failure.ok()) {
    plan = shm::PlanMessage(m, c.resp.slot_bytes(), SharedRefs(m));
    if (plan.region_bytes || plan.shared_count) {
      std::lock_guard<std::mutex> lk(c.mu);
      DrainReleases(c, &unpinned);
      if (plan.shared_count && !GrantArenas(c, plan))
        plan = shm::PlanMessage(m, c.resp.slot_bytes());  // copy them after all
      failure = Hold(c, m, plan, &region, &token);
    }
    // The bulk copy runs without the lock, so other workers can serve this client meanwhile.
    if (failure.ok() && plan.region_bytes) WriteRegion(m, plan, c.resp_area + region, region);
  }

  {
    std::lock_guard<std::mutex> lk(c.mu);
    c.outstanding--;
    if (c.dead.load()) return;  // the segment goes with the connection
    DrainReleases(c, &unpinned);
    const int64_t used = c.resp.Used(c.resp_tail, c.resp.head().load(std::memory_order_acquire));
    if (used < 0 || used >= c.resp.capacity()) {
      // TryTake reserved a slot; only a client rewinding its head can get here.
      Break(c, "response ring head out of range");
      return;
    }
    uint8_t* slot = c.resp.slot(c.resp_tail);
    if (failure.ok()) {
      shm::WriteSlot(slot, m, plan, region, token);
      if (token) c.held[token].delivered = true;
    } else {
      shm::WriteErrorSlot(slot, c.resp.slot_bytes(), m.id, m.op, failure);
    }
    c.resp_tail++;
    c.resp.tail().store(c.resp_tail, std::memory_order_release);
  }
  // R3: wake the client's receiving thread if it announced it is going to sleep.
  shm::FullFence();
  if (c.resp.wake().load(std::memory_order_relaxed) != 0) {
    c.resp.wake_seq().fetch_add(1, std::memory_order_seq_cst);
    shm::SharedFutexWake(c.resp.wake_seq_word(), INT_MAX);
  }
}

std::vector<shm::PayloadRef> ShmServer::Impl::SharedRefs(const wire::Message& m) const {
  std::vector<shm::PayloadRef> refs;  // allocated at the first shared payload only (hot path)
  if (!options.arenas) return refs;
  for (size_t i = 0; i < m.payloads.size(); ++i) {
    const BufferSlice& p = m.payloads[i];
    if (p.size == 0 || !p.owner) continue;  // a view nobody owns cannot be held for a client
    if (auto at = options.arenas->Locate(p.data, p.size)) {
      if (refs.empty()) refs.resize(m.payloads.size(), shm::PayloadRef{});
      refs[i] = shm::PayloadRef{at->offset, p.size, at->arena, 0};
    }
  }
  return refs;
}

bool ShmServer::Impl::GrantArenas(Conn& c, const shm::MessagePlan& plan) {
  for (const shm::PayloadRef& ref : plan.shared) {
    const uint64_t bit = ref.arena ? uint64_t{1} << (ref.arena - 1) : 0;
    if (bit == 0 || (c.granted & bit)) continue;
    if (!c.sock.valid()) return false;
    shm::ArenaGrant g{shm::kArenaGrantMagic, ref.arena, options.arenas->arena_bytes()};
    // Non-blocking; sent before the response that refers to it, so the client finds it queued.
    if (!shm::SendWithFd(c.sock.get(), &g, sizeof g, options.arenas->fd(ref.arena)).ok())
      return false;
    c.granted |= bit;
    n.grants++;
  }
  return true;
}

Status ShmServer::Impl::Hold(Conn& c, const wire::Message& m, const shm::MessagePlan& plan,
                             uint64_t* region, uint64_t* token) {
  // A3: at most release_count responses held, so the release ring can never overflow.
  std::optional<uint64_t> off;
  if (c.held.size() < c.rel.capacity())
    off = plan.region_bytes ? c.alloc.Allocate(plan.region_bytes) : std::optional<uint64_t>(0);
  if (!off) {
    n.too_large++;
    return Status::ResourceExhausted(
        "the response (" + std::to_string(plan.region_bytes) +
        " bytes of payload) does not fit this client's shared response area (" +
        std::to_string(c.alloc.free_bytes()) + " of " + std::to_string(c.alloc.capacity()) +
        " bytes free, " + std::to_string(c.held.size()) +
        " responses still borrowed): release borrows sooner, ask for fewer blocks per call, "
        "or raise WMBT_KV_SHM_DATA_BYTES (wombatkvd --shm-data-bytes)");
  }
  Conn::Held h;
  h.region = *off;
  h.region_bytes = plan.region_bytes;
  for (size_t i = 0; i < plan.shared.size(); ++i) {
    if (plan.shared[i].arena) h.pins.push_back(m.payloads[i].owner);
  }
  if (h.region_bytes) {
    n.regions_live++;
    n.region_bytes_live += shm::RegionAllocator::Rounded(h.region_bytes);
  }
  n.shared_live += h.pins.size();
  n.shared += h.pins.size();
  *region = h.region;
  *token = c.next_token++;
  c.held.emplace(*token, std::move(h));
  return Status::Ok();
}

void ShmServer::Impl::DrainReleases(Conn& c, Conn::Unpinned* unpinned) {
  const uint32_t tail = c.rel.tail().load(std::memory_order_acquire);
  if (tail == c.rel_head) return;
  if (c.rel.Used(tail, c.rel_head) < 0) {
    Break(c, "release ring tail out of range");
    return;
  }
  while (c.rel_head != tail) {
    uint64_t token;
    std::memcpy(&token, c.rel.slot(c.rel_head), sizeof token);
    c.rel_head++;
    auto it = c.held.find(token);
    if (it == c.held.end() || !it->second.delivered) {
      n.protocol_errors++;  // A3: not a response we gave this client; ignore it
      continue;
    }
    Conn::Held h = std::move(it->second);
    c.held.erase(it);
    n.shared_live -= h.pins.size();
    for (auto& pin : h.pins) unpinned->push_back(std::move(pin));
    if (h.region_bytes == 0) continue;
    c.alloc.Free(h.region, h.region_bytes);
    n.regions_live--;
    n.region_bytes_live -= shm::RegionAllocator::Rounded(h.region_bytes);
    const uint64_t end = h.region + h.region_bytes;
    if (end > options.warm_bytes) {
      const uint64_t from = std::max(h.region, options.warm_bytes);
      c.map->Discard(c.layout.response_area + from, end - from);
    }
  }
  c.rel.head().store(c.rel_head, std::memory_order_release);
}

void ShmServer::Impl::DrainIdleReleases(const std::vector<std::shared_ptr<Conn>>& snap) {
  bool drained = false;
  for (const auto& c : snap) {
    Conn::Unpinned unpinned;  // dropped after the lock
    // Waits for the lock: its holder may have drained already, before the client's release.
    std::lock_guard<std::mutex> lk(c->mu);
    if (c->held.empty()) continue;
    const size_t held = c->held.size();
    DrainReleases(*c, &unpinned);
    drained = drained || c->held.size() != held;
  }
  if (drained) n.Notify();  // for WaitFor
}

void ShmServer::Impl::Break(Conn& c, const std::string& why) {
  n.protocol_errors++;
  if (c.dead.exchange(true)) return;
  Log(LogLevel::kWarn, "disconnecting " + c.session.peer + ": " + why);
  // The io thread sees the hang-up and detaches the client; its fd stays valid until then.
  (void)::shutdown(c.sock.get(), SHUT_RDWR);
}

void ShmServer::Impl::WorkerLoop(size_t index) {
  std::vector<std::shared_ptr<Conn>> snap;
  uint64_t version = 0;
  size_t rr = index;
  uint32_t spins = 0;
  bool spinning = false;
  Taken t;
  scanners++;
  while (!stopping.load(std::memory_order_acquire)) {
    Resnap(snap, &version);
    if (TakeAny(snap, &rr, &t)) {
      if (spinning) {
        if (spins < scan_spin.limit()) scan_spin.Succeeded(spins);
        spinner.store(false);
      }
      spinning = false;
      RunHandler(snap, &version, t);
      continue;
    }
    if (!spinning && SpinPays() && !spinner.exchange(true)) {
      spinning = true;
      spins = 0;
      n.idle_spins++;
    }
    if (spinning && ++spins < scan_spin.limit()) {
      shm::CpuRelax();
      continue;
    }
    bool contended = false;
    if (spinning && spins < scan_spin.limit() + shm::kYieldRounds) {
      const uint64_t before = clock->NowMicros();
      shm::YieldCore();  // clients runnable on this core get to publish their next request
      contended = clock->NowMicros() - before > kContendedRoundMicros;
      if (!contended) continue;
    }
    if (spinning) {
      scan_spin.Failed();
      spin_contended.store(contended, std::memory_order_relaxed);
      spinner.store(false);
    }
    spinning = false;
    GoIdle(snap, &version, &rr);
    version = 0;  // GoIdle dropped the snapshot
  }
  scanners--;
}

void ShmServer::Impl::Resnap(std::vector<std::shared_ptr<Conn>>& snap, uint64_t* version) {
  if (conns_version.load(std::memory_order_acquire) == *version) return;
  std::lock_guard<std::mutex> lk(conns_mu);
  snap = conns;
  *version = conns_version.load();
}

void ShmServer::Impl::ArmDoorbells(const std::vector<std::shared_ptr<Conn>>& snap) {
  for (auto& c : snap) {
    if (c->req.wake().load(std::memory_order_relaxed) == 0)
      c->req.wake().store(1, std::memory_order_relaxed);
  }
}

void ShmServer::Impl::RunHandler(std::vector<std::shared_ptr<Conn>>& snap, uint64_t* version,
                                 Taken& t) {
  Serve(t, scanners.fetch_sub(1) == 1, snap, version);
  scanners++;
}

void ShmServer::Impl::KeepWatch(std::vector<std::shared_ptr<Conn>>& snap, uint64_t* version) {
  // Nobody else scans, and the handler may block (a save waits for its fsync, an S3 request may
  // take seconds). A client that found its doorbell disarmed since the last worker went idle
  // relies on a scan, so arm every doorbell (a client attached since the snapshot is in the new
  // one), fence, and wake a worker if a request is already waiting (R3, as in GoIdle).
  Resnap(snap, version);
  ArmDoorbells(snap);
  shm::FullFence();
  for (auto& c : snap) {
    if (!c->dead.load(std::memory_order_relaxed) &&
        c->req.tail().load(std::memory_order_acquire) !=
            c->req.head().load(std::memory_order_relaxed)) {
      WakeOne();
      return;
    }
  }
}

void ShmServer::Impl::SetIdle(size_t workers) {
  idle = workers;
  n.workers_idle = idle - wake_tokens;
  n.Notify();  // for WaitFor (tests); a worker pays it only when it starts or ends a sleep
}

void ShmServer::Impl::GoIdle(std::vector<std::shared_ptr<Conn>>& snap, uint64_t* version,
                             size_t* rr) {
  {
    std::lock_guard<std::mutex> lk(pool_mu);
    SetIdle(idle + 1);  // before arming: WakeOne may count on this worker from now on
  }
  // R3: arm every doorbell, then look once more; a request published before a client could
  // see the doorbell armed is found by this scan. (A client that rings after seeing it armed
  // wakes a worker in SleepUntilRung; its byte waits on the socket for one if none sleeps.) The
  // client list is read again first, so the doorbells of clients attached since are armed too.
  scanners--;
  Resnap(snap, version);
  ArmDoorbells(snap);
  shm::FullFence();
  Taken t;
  if (TakeAny(snap, rr, &t, /*wait_for_lock=*/true)) {
    {
      std::lock_guard<std::mutex> lk(pool_mu);
      // Tokens stay <= idle. One dropped here stays in wake_event: the worker that takes it
      // finds none counted and sleeps on.
      wake_tokens = std::min(wake_tokens, idle - 1);
      SetIdle(idle - 1);
    }
    scanners++;
    RunHandler(snap, version, t);
    return;
  }
  DrainIdleReleases(snap);
  snap.clear();  // hold no client while asleep: a detached client's segment can go now
  const bool rung = SleepUntilRung();
  scanners++;
  // A client had to ring: the spinner gave up too early for this client's pace (its next call
  // came later than the spin lasted, e.g. because it slept). Spin longer from now on, or the two
  // sides settle into sleeping and waking each other on every call — unless the cores were
  // contended: then the client was late because it waited for a core, which a longer spin takes.
  // Nor while slow requests run (SpinPays): no worker spins then, so none gave up early.
  if (rung && SpinPays() && !spin_contended.load(std::memory_order_relaxed))
    scan_spin.Succeeded(shm::AdaptiveSpin::kCeiling);
}

bool ShmServer::Impl::SleepUntilRung() {
  bool rung = false;
  for (;;) {
    epoll_event ev;
    const int got = ::epoll_wait(bells.get(), &ev, 1, -1);
    WMBT_CHECK_MSG(got >= 0 || errno == EINTR, "epoll_wait on the workers' bells failed");
    if (stopping.load(std::memory_order_acquire)) break;
    if (got <= 0 || ev.data.u64 == kWorkerStopId) continue;  // stopping is set before that
    if (ev.data.u64 == kWorkerWakeId) {
      // One-shot: no other worker sees this token. Re-armed after the read, so a further token
      // wakes the next worker.
      uint64_t token;
      const bool read = ::read(wake_event.get(), &token, sizeof token) == sizeof token;
      epoll_event rearm{};
      rearm.events = EPOLLIN | EPOLLONESHOT;
      rearm.data.u64 = kWorkerWakeId;
      WMBT_CHECK_MSG(::epoll_ctl(bells.get(), EPOLL_CTL_MOD, wake_event.get(), &rearm) == 0,
                     "re-arming the workers' wake event failed");
      std::lock_guard<std::mutex> lk(pool_mu);
      // None counted: a unit beyond the count (clamped when a worker left idle otherwise: an
      // early take in GoIdle, a doorbell, the shutdown). Sleep on.
      if (!read || wake_tokens == 0) continue;
      wake_tokens--;
      SetIdle(idle - 1);
      return false;  // a hand-over from inside the daemon, not a client that had to ring
    }
    const Rang why = DrainDoorbell(ev.data.u64);
    if (why == Rang::kRequest) {
      n.doorbells++;
      rung = true;
      break;
    }
  }
  std::lock_guard<std::mutex> lk(pool_mu);
  wake_tokens = std::min(wake_tokens, idle - 1);  // tokens stay <= idle
  SetIdle(idle - 1);
  return rung;
}

ShmServer::Impl::Rang ShmServer::Impl::DrainDoorbell(uint64_t id) {
  std::shared_ptr<Conn> c;
  {
    std::lock_guard<std::mutex> lk(conns_mu);
    for (auto& candidate : conns) {
      if (candidate->id == id) c = candidate;
    }
  }
  if (!c) return Rang::kNone;  // detached
  Conn::Unpinned unpinned;
  Rang why = Rang::kNone;
  {
    // Their number does not matter, only that the client found the workers asleep. Under the
    // connection's mutex: Detach closes the socket under it.
    std::lock_guard<std::mutex> lk(c->mu);
    bool rang = false;
    char buf[64];
    while (c->sock.valid() && ::recv(c->sock.get(), buf, sizeof buf, MSG_DONTWAIT) > 0)
      rang = true;
    if (!rang) return Rang::kNone;
    auto waiting = [&] { return c->req.tail().load(std::memory_order_acquire) != c->req_head; };
    if (waiting()) return Rang::kRequest;
    DrainReleases(*c, &unpinned);
    // R3, as in GoIdle: the client disarmed its doorbell to ring; arm it, fence, look again.
    c->req.wake().store(1, std::memory_order_relaxed);
    shm::FullFence();
    why = waiting() ? Rang::kRequest : Rang::kReleases;
  }
  if (!unpinned.empty()) {
    unpinned.clear();  // after the lock: a Buffer's release may run store code
    n.Notify();        // for WaitFor
  }
  return why;
}

// ---------------------------------------------------------------------------------------------

ShmServer::ShmServer(Handler handler, ShmServerOptions options, ImmediateHandler immediate)
    : impl_(std::make_unique<Impl>(std::move(handler), std::move(options),
                                   std::move(immediate))) {}

ShmServer::~ShmServer() {
  if (impl_) Stop();
}

Status ShmServer::Start() {
  if (!impl_) return Status::FailedPrecondition("shared-memory server was shut down");
  Impl& s = *impl_;
  if (s.started) return Status::FailedPrecondition("shared-memory server already started");
  if (s.options.workers == 0) return Status::InvalidArgument("shared-memory server needs a worker");
  WMBT_ASSIGN_OR_RETURN(s.layout, shm::ComputeLayout(s.options.layout));
  const std::string run_dir = s.options.run_dir.empty() ? shm::DefaultRunDir() : s.options.run_dir;
  WMBT_ASSIGN_OR_RETURN(std::string path, shm::ControlSocketPath(run_dir, s.options.prefix));
  WMBT_ASSIGN_OR_RETURN(s.listener, shm::ListenControlSocket(path));

  s.epoll = Fd(::epoll_create1(EPOLL_CLOEXEC));
  s.stop_event = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  s.bells = Fd(::epoll_create1(EPOLL_CLOEXEC));
  s.wake_event = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE));
  s.workers_stop = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!s.epoll.valid() || !s.stop_event.valid() || !s.bells.valid() || !s.wake_event.valid() ||
      !s.workers_stop.valid())
    return Status::ResourceExhausted("epoll/eventfd: " + shm::ErrnoText(errno));
  epoll_event wake{}, stop{};
  wake.events = EPOLLIN | EPOLLONESHOT;  // one worker per token (SleepUntilRung re-arms it)
  wake.data.u64 = kWorkerWakeId;
  stop.events = EPOLLIN;  // level-triggered, never read: every worker, now and later
  stop.data.u64 = kWorkerStopId;
  if (::epoll_ctl(s.bells.get(), EPOLL_CTL_ADD, s.wake_event.get(), &wake) != 0 ||
      ::epoll_ctl(s.bells.get(), EPOLL_CTL_ADD, s.workers_stop.get(), &stop) != 0)
    return Status::ResourceExhausted("epoll_ctl: " + shm::ErrnoText(errno));
  s.idle = 0;
  s.wake_tokens = 0;
  s.spinner = false;  // a worker stopped mid-spin may have left it set
  epoll_event ev{}, listen{};
  ev.events = listen.events = EPOLLIN;
  ev.data.u64 = kStopEventId;
  listen.data.u64 = kListenEventId;
  if (::epoll_ctl(s.epoll.get(), EPOLL_CTL_ADD, s.stop_event.get(), &ev) != 0 ||
      ::epoll_ctl(s.epoll.get(), EPOLL_CTL_ADD, s.listener.sock.get(), &listen) != 0)
    return Status::ResourceExhausted("epoll_ctl: " + shm::ErrnoText(errno));

  s.stopping = false;
  s.started = true;
  for (size_t i = 0; i < s.options.workers; ++i) {
    s.workers.push_back(StartNamedThread("wmbt-shm-work", [&s, i] { s.WorkerLoop(i); }));
  }
  s.io = StartNamedThread("wmbt-shm-io", [&s] { s.IoLoop(); });
  s.Log(LogLevel::kInfo, "listening for shared-memory clients on " + path);
  return Status::Ok();
}

void ShmServer::Stop() { (void)Shutdown(UINT64_MAX); }

size_t ShmServer::Shutdown(uint64_t timeout_micros) {
  if (!impl_ || !impl_->started) return 0;  // never started, stopped, or leaked by a shutdown
  Impl& s = *impl_;
  s.started = false;
  // 1. No new clients.
  (void)::unlink(s.listener.path.c_str());
  uint64_t one = 1;
  (void)!::write(s.stop_event.get(), &one, sizeof one);
  s.io.join();
  // 2. Workers take no new request; the running ones finish and publish their responses.
  s.stopping = true;
  // Never read: wakes every worker asleep now or later.
  (void)!::write(s.workers_stop.get(), &one, sizeof one);
  // Requests are running until answered — after their handler returned, for a response that
  // comes from another thread (a save completed by the thread syncing it).
  size_t abandoned = 0;
  {
    std::unique_lock<std::mutex> lk(s.n.mu);
    if (timeout_micros == UINT64_MAX) {
      s.n.cv.wait(lk, [&] { return s.n.running.load() == 0; });
    } else {
      const uint64_t deadline = s.clock->NowMicros() + timeout_micros;
      for (uint64_t now = s.clock->NowMicros(); s.n.running.load() > 0 && now < deadline;
           now = s.clock->NowMicros())
        s.clock->WaitFor(s.n.cv, lk, deadline - now);
    }
    abandoned = s.n.running.load();
  }
  if (abandoned == 0) {
    for (auto& w : s.workers) w.join();
  } else {
    for (auto& w : s.workers) w.detach();
  }
  s.workers.clear();
  // 3. Hang up on everyone: clients see Unavailable and re-attach by themselves later.
  std::vector<uint64_t> ids;
  for (auto& [id, c] : s.table) ids.push_back(id);
  for (uint64_t id : ids) s.Detach(id);
  s.listener = shm::Listener{};
  s.epoll.Reset();
  s.stop_event.Reset();
  if (!abandoned) {  // else the detached workers may still sleep on them
    s.bells.Reset();
    s.wake_event.Reset();
    s.workers_stop.Reset();
  }
  if (abandoned) {
    s.Log(LogLevel::kWarn, std::to_string(abandoned) + " shared-memory request(s) still running");
    (void)impl_.release();  // the detached workers still use it
  }
  return abandoned;
}

std::string ShmServer::socket_path() const { return impl_ ? impl_->listener.path : ""; }

ShmServerStats ShmServer::Stats() const {
  if (!impl_) return ShmServerStats{};
  const Impl& s = *impl_;
  ShmServerStats st;
  st.clients = s.n.clients.load();
  st.segments_live = s.n.segments_live.load();
  st.response_regions_live = s.n.regions_live.load();
  st.response_bytes_live = s.n.region_bytes_live.load();
  st.shared_payloads_live = s.n.shared_live.load();
  st.shared_payloads = s.n.shared.load();
  st.arena_grants = s.n.grants.load();
  st.attaches = s.n.attaches.load();
  st.detaches = s.n.detaches.load();
  st.refusals = s.n.refusals.load();
  st.requests = s.n.requests.load();
  st.doorbells = s.n.doorbells.load();
  st.protocol_errors = s.n.protocol_errors.load();
  st.responses_too_large = s.n.too_large.load();
  st.idle_spins = s.n.idle_spins.load();
  st.workers_idle = s.n.workers_idle.load();
  return st;
}

bool ShmServer::WaitFor(const std::function<bool(const ShmServerStats&)>& done,
                        uint64_t timeout_micros) {
  if (!impl_) return false;
  Impl& s = *impl_;
  const uint64_t deadline = s.clock->NowMicros() + timeout_micros;
  std::unique_lock<std::mutex> lk(s.n.mu);
  while (!done(Stats())) {
    const uint64_t now = s.clock->NowMicros();
    if (now >= deadline) return false;
    s.clock->WaitFor(s.n.cv, lk, deadline - now);
  }
  return true;
}

}  // namespace wombatkv
