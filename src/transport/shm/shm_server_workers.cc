// ShmServer's workers (shm_server_impl.h; docs/shm.md, "Wake-ups"): they scan the clients'
// request rings, serve and answer, and sleep on the doorbells when nothing comes.
#include "base/defer_scope.h"
#include "transport/shm/shm_server_impl.h"
#include "wire/frame.h"

namespace wombatkv {

using shm::Fd;
using shm::Ring;

namespace {

// Whether this thread is one of a server's workers (they wake the clients they answer at once).
thread_local bool on_worker = false;
// Answers a worker gave, counted so that Serve knows whether its handler answered before it
// returned (a save that led its own sync round).
thread_local uint64_t answered_here = 0;

// The sleeping clients a thread answered in its current batch (HandOverWakes), gathered until
// the batch's scope closes (base/defer_scope.h, D3). One server gathers at a time on a thread.
struct WakeBatch {
  const void* server = nullptr;
  std::vector<Woken> woken;
};
thread_local WakeBatch* gathering = nullptr;

}  // namespace

ShmServer::Impl::Pool::Hooks ShmServer::Impl::PoolHooks() {
  Pool::Hooks h;
  h.post_token = [this] {
    const uint64_t one = 1;
    (void)!::write(wake_event.get(), &one, sizeof one);
  };
  h.wake_client = [this](std::shared_ptr<Conn>& c) { WakeClient(*c); };
  h.idle_changed = [this](size_t asleep_without_token) {
    n.workers_idle = asleep_without_token;
    n.Notify();  // for WaitFor (tests); a worker pays it only when it starts or ends a sleep
  };
  return h;
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
  // Again under the lock, which a hang-up (Break, Detach) holds: nothing is taken from a client
  // once it has been hung up on, so a request it finds untaken then was never run (the client
  // sends it again elsewhere: shm_channel.cc, Attachment::NeverTaken).
  if (c.dead.load(std::memory_order_relaxed)) return false;
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
  // Counted as running before the slot is taken, and `stopping` read after: a stop sets
  // `stopping` and then reads the count (Shutdown), so either it sees this request counted and
  // waits for its answer, or this worker sees the stop and takes nothing.
  n.running.fetch_add(1);
  if (stopping.load()) {
    lk.unlock();
    if (--n.running == 0) n.Notify();  // as Served on a worker (joined before the server goes)
    return false;
  }

  const uint8_t* slot = c.req.slot(c.req_head);
  auto m = shm::ReadSlot(slot, c.req.slot_bytes(), c.req_area, c.layout.params.request_area_bytes,
                         /*arenas_max=*/0, shm::kRequestFieldsMax);
  shm::SlotHeader raw;
  std::memcpy(&raw, slot, sizeof raw);
  c.req_head++;
  c.req.head().store(c.req_head, std::memory_order_release);  // R2: the slot is the client's again
  c.outstanding++;
  lk.unlock();
  if (options.on_taken) options.on_taken();

  out->conn = cp;
  out->error = Status::Ok();
  out->msg = wire::Message{};
  // A2: what was checked is what is served. The second copy (`raw`) only names a request
  // ReadSlot refused, for its error answer.
  out->msg.id = m.ok() ? m->header.id : raw.id;
  out->msg.op = m.ok() ? m->header.op : raw.op;
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
  n.requests++;  // counted as running when it was taken (TryTake)
  const uint64_t begin = clock->NowMicros();
  if (!t.error.ok()) {
    if (Publish(*t.conn, t.msg, t.error)) WakeClient(*t.conn);
    Served(begin, /*maybe_off_pool=*/false);
  } else {
    // The handlers report errors as statuses; a stray exception (bad_alloc) is answered as one
    // here, as on TCP, instead of ending the daemon with every client. At most one answer.
    auto failed = [&](const std::exception& e) {
      if (Publish(*t.conn, t.msg, Status::Internal(std::string("request failed: ") + e.what())))
        WakeClient(*t.conn);
      Served(begin, /*maybe_off_pool=*/false);
    };
    std::optional<wire::Message> answered;
    try {
      if (immediate) answered = immediate(t.conn->session, t.msg);
    } catch (const std::exception& e) {
      failed(e);
      t = Taken{};
      return;
    }
    if (answered) {
      Answer(t.conn, t.msg.id, t.msg.op, std::move(*answered), begin, /*maybe_off_pool=*/false);
    } else {
      if (last) KeepWatch(snap, version);
      const uint64_t answered_before = answered_here;
      // The response may come later, from another thread (a save: from the thread syncing it);
      // `conn` keeps the client's segment mapped until then.
      auto responded = std::make_shared<std::atomic<bool>>(false);
      auto respond = [this, conn = t.conn, id = t.msg.id, op = t.msg.op, begin,
                      responded](wire::Message resp) mutable {
        if (responded->exchange(true)) return;
        // The last reference to `conn` may be this one: it goes before the request ends, while
        // the server still stands (~Conn counts in it).
        std::shared_ptr<Conn> c = std::move(conn);
        Answer(std::move(c), id, op, std::move(resp), begin, /*maybe_off_pool=*/true);
      };
      try {
        handler(t.conn->session, t.msg, respond);
      } catch (const std::exception& e) {
        if (!responded->exchange(true)) failed(e);
      }
      // Back to scanning after answering: the doorbells KeepWatch armed for the handler's sake
      // would make the clients it answered, calling again at once, ring for another worker
      // while this one looks (docs/shm.md, "Who keeps watch").
      if (last && answered_here != answered_before) DisarmDoorbells(snap);
    }
  }
  t = Taken{};
}

void ShmServer::Impl::Answer(std::shared_ptr<Conn> c, uint64_t id, uint16_t op,
                             wire::Message resp, uint64_t begin, bool maybe_off_pool) {
  resp.id = id;
  resp.op = op;
  resp.flags |= wire::kFlagResponse;
  const bool sleeping = Publish(*c, resp, Status::Ok());
  if (on_worker) ++answered_here;
  // Dropping the response here releases what its payloads pinned (cache entries).
  resp = wire::Message{};
  if (sleeping && maybe_off_pool && !on_worker) {
    if (gathering == nullptr) {
      auto batch = std::make_shared<WakeBatch>();
      batch->server = this;
      if (DeferScope::DeferToOpen([this, batch] {
            gathering = nullptr;
            HandOverWakes(std::move(batch->woken));
          })) {
        gathering = batch.get();
      }
    }
    if (gathering != nullptr && gathering->server == this) {
      gathering->woken.push_back(Woken{std::move(c), begin});  // ends in HandOverWakes
      return;
    }
  }
  if (sleeping) WakeClient(*c);
  c.reset();
  Served(begin, maybe_off_pool);
}

void ShmServer::Impl::HandOverWakes(std::vector<Woken> woken) {
  std::vector<std::shared_ptr<Conn>> clients;
  clients.reserve(woken.size());
  for (const Woken& w : woken) clients.push_back(w.conn);
  if (pool.HandOver(std::move(clients), stopping.load())) n.wakes_handed += woken.size();
  // Last: the server may go once no request runs (Served).
  for (Woken& w : woken) {
    w.conn.reset();
    Served(w.begin, /*maybe_off_pool=*/true);
  }
}

void ShmServer::Impl::WakeClient(Conn& c) {
  c.resp.wake_seq().fetch_add(1, std::memory_order_seq_cst);
  shm::SharedFutexWake(c.resp.wake_seq_word(), INT_MAX);
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

bool ShmServer::Impl::Publish(Conn& c, const wire::Message& m, const Status& error) {
  Status failure = error;
  shm::MessagePlan plan;
  uint64_t region = 0, token = 0;
  Conn::Unpinned unpinned;  // dropped after the locks below are released
  if (failure.ok() && m.payloads.size() > wire::kMaxPayloadsPerMessage) {
    // The client refuses such a slot as a broken daemon and drops the attachment (every call in
    // flight with it fails): answer as the TCP server does instead.
    failure = Status::ResourceExhausted(
        "the response carries " + std::to_string(m.payloads.size()) +
        " blocks; one response holds at most " + std::to_string(wire::kMaxPayloadsPerMessage) +
        ": ask for fewer blocks per call");
  }
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
    if (c.dead.load()) return false;  // the segment goes with the connection
    DrainReleases(c, &unpinned);
    const int64_t used = c.resp.Used(c.resp_tail, c.resp.head().load(std::memory_order_acquire));
    if (used < 0 || used >= c.resp.capacity()) {
      // TryTake reserved a slot; only a client rewinding its head can get here.
      Break(c, "response ring head out of range");
      return false;
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
  // R3: the client's receiving thread is woken if it announced it is going to sleep.
  shm::FullFence();
  return c.resp.wake().load(std::memory_order_relaxed) != 0;
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
  if (!off && c.held.size() >= c.rel.capacity()) {
    n.too_large++;
    return Status::ResourceExhausted(
        "this client holds " + std::to_string(c.held.size()) +
        " borrowed responses, the most one client may (each get's borrow holds its response "
        "until released, whatever its size): release borrows sooner, or get more blocks per "
        "call (one borrow lends them all)");
  }
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
    if (!plan.shared[i].arena) continue;
    h.pins.push_back(m.payloads[i].owner);
    h.pin_bytes += plan.shared[i].bytes;
  }
  if (h.region_bytes) {
    n.regions_live++;
    n.region_bytes_live += shm::RegionAllocator::Rounded(h.region_bytes);
  }
  n.shared_live += h.pins.size();
  n.shared_bytes_live += h.pin_bytes;
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
    n.shared_bytes_live -= h.pin_bytes;
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
  on_worker = true;
  while (!stopping.load(std::memory_order_acquire)) {
    pool.WakeHanded();  // handed over while this worker was busy: sooner than the idle one
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

void ShmServer::Impl::DisarmDoorbells(const std::vector<std::shared_ptr<Conn>>& snap) {
  for (auto& c : snap) {
    if (c->req.wake().load(std::memory_order_relaxed) != 0)
      c->req.wake().store(0, std::memory_order_relaxed);
  }
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
      pool.WakeOne();
      return;
    }
  }
}

void ShmServer::Impl::GoIdle(std::vector<std::shared_ptr<Conn>>& snap, uint64_t* version,
                             size_t* rr) {
  pool.EnterIdle();  // before arming: WakeOne may count on this worker from now on
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
    pool.LeaveIdle();
    scanners++;
    RunHandler(snap, version, t);
    return;
  }
  DrainIdleReleases(snap);
  snap.clear();  // hold no client while asleep: a detached client's segment can go now
  // Counted idle above: a hand-over may have counted on this worker since it last looked
  // (WorkerLoop). Its token would wake this worker at once; wake the clients now instead.
  pool.WakeHanded();
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
      // A hand-over from inside the daemon, not a client that had to ring. An uncounted unit
      // (shm/idle_workers.h): sleep on.
      if (pool.TakeToken(read)) return false;
      continue;
    }
    const Rang why = DrainDoorbell(ev.data.u64);
    if (why == Rang::kRequest) {
      n.doorbells++;
      rung = true;
      break;
    }
  }
  pool.LeaveIdle();
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
    // At most a burst's worth of datagrams (one per doorbell: a client rings once per arming).
    // Reading until none is left let a client that sends without pause from enough threads —
    // faster than one thread reads — keep this worker here for as long as it liked, holding the
    // client's mutex that every worker about to sleep waits for (DrainIdleReleases), while each
    // datagram woke another sleeping worker into the same wait: no client was served
    // (HostileShmClient.FloodingItsDoorbellDoesNotStarveOtherClients). Bytes left unread do no
    // harm: the next datagram is a new edge, and only a client that rang without cause has them.
    constexpr int kDoorbellDatagramsMax = 64;
    bool rang = false;
    char buf[64];
    for (int i = 0; i < kDoorbellDatagramsMax && c->sock.valid() &&
                    ::recv(c->sock.get(), buf, sizeof buf, MSG_DONTWAIT) > 0;
         ++i)
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

}  // namespace wombatkv
