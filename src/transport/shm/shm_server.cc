#include "transport/shm/shm_server_impl.h"

namespace wombatkv {

using shm::Fd;
using shm::Ring;

Conn::Conn(ShmServerCounters* s, uint64_t i, shm::PeerCred p, Fd so,
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
  session.transport = Transport::kShm;
  session.token_required = false;  // same-user peers only (SO_PEERCRED), SPEC §10
  counters->segments_live++;
}

Conn::~Conn() {
  uint64_t bytes = 0, regions = 0, pins = 0, pin_bytes = 0;
  for (const auto& [token, h] : held) {
    regions += h.region_bytes != 0;
    bytes += shm::RegionAllocator::Rounded(h.region_bytes);
    pins += h.pins.size();
    pin_bytes += h.pin_bytes;
  }
  counters->regions_live -= regions;
  counters->region_bytes_live -= bytes;
  counters->shared_live -= pins;
  counters->shared_bytes_live -= pin_bytes;
  counters->segments_live--;
  counters->Notify();
}

// ---------------------------------------------------------------------------------------------
// io thread

void ShmServer::Impl::IoLoop() {
  epoll_event events[64];
  for (;;) {
    int wait_ms = -1;
    if (accept_paused) {
      const uint64_t now = clock->NowMicros();
      wait_ms = now >= accept_resume_us ? 0 : static_cast<int>((accept_resume_us - now) / 1000 + 1);
    }
    const int count = ::epoll_wait(epoll.get(), events, 64, wait_ms);
    if (count < 0) {
      if (errno == EINTR) continue;
      Log(LogLevel::kError, "epoll_wait: " + shm::ErrnoText(errno));
      return;
    }
    if (accept_paused && clock->NowMicros() >= accept_resume_us) SetListening(true);
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
      const int err = errno;
      if (err == EINTR) continue;
      if (err == EAGAIN || err == EWOULDBLOCK) return;
      if (accept_failures++ % 100 == 0) {  // about once per 10 s while it lasts
        Log(LogLevel::kWarn, "accept on " + listener.path + ": " + shm::ErrnoText(err) +
                                 " (new clients wait; raise the open-files limit if EMFILE)");
      }
      SetListening(false);
      return;
    }
    AttachClient(std::move(sock));
  }
}

void ShmServer::Impl::SetListening(bool on) {
  epoll_event ev{};
  ev.events = on ? static_cast<uint32_t>(EPOLLIN) : 0u;
  ev.data.u64 = kListenEventId;
  (void)::epoll_ctl(epoll.get(), EPOLL_CTL_MOD, listener.sock.get(), &ev);
  accept_paused = !on;
  if (!on) accept_resume_us = clock->NowMicros() + kAcceptPauseMs * 1000;
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
  if (!shm::PeerAllowed(*peer, group)) {
    const std::string whom = group ? "its own user and the members of group " +
                                         std::to_string(*group) + " (WMBT_KV_SHM_GROUP)"
                                   : "its own user only (or the members of a WMBT_KV_SHM_GROUP)";
    return Refuse(sock.get(),
                  Status::PermissionDenied(
                      "uid " + std::to_string(peer->uid) +
                      " may not attach: this wombatkvd runs as uid " + std::to_string(::geteuid()) +
                      " and shares memory with " + whom + "; or use TCP with a token"));
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

ShmServer::ShmServer(Handler handler, ShmServerOptions options, ImmediateHandler immediate)
    : impl_(std::make_unique<Impl>(std::move(handler), std::move(options),
                                   std::move(immediate))) {}

ShmServer::~ShmServer() {
  if (impl_) Stop();
}

Result<std::shared_ptr<shm::Listener>> ShmServer::Bind(const ShmServerOptions& options) {
  const std::string run_dir = options.run_dir.empty() ? shm::DefaultRunDir() : options.run_dir;
  WMBT_ASSIGN_OR_RETURN(std::string path, shm::ControlSocketPath(run_dir, options.prefix));
  WMBT_ASSIGN_OR_RETURN(shm::ShmGroup group, shm::ResolveShmGroup(options.group));
  WMBT_ASSIGN_OR_RETURN(shm::Listener listener, shm::ListenControlSocket(path, group));
  // Removed with it unless a server took it (moved-from: no socket).
  return std::shared_ptr<shm::Listener>(new shm::Listener(std::move(listener)),
                                        [](shm::Listener* l) {
                                          if (l->sock.valid()) (void)::unlink(l->path.c_str());
                                          shm::RemoveLock(*l);
                                          delete l;
                                        });
}

Status ShmServer::Start() {
  if (!impl_) return Status::FailedPrecondition("shared-memory server was shut down");
  Impl& s = *impl_;
  if (s.started) return Status::FailedPrecondition("shared-memory server already started");
  if (s.options.workers == 0) return Status::InvalidArgument("shared-memory server needs a worker");
  WMBT_ASSIGN_OR_RETURN(s.layout, shm::ComputeLayout(s.options.layout));
  WMBT_ASSIGN_OR_RETURN(s.group, shm::ResolveShmGroup(s.options.group));
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
  s.pool.Reset();
  s.spinner = false;  // a worker stopped mid-spin may have left it set
  epoll_event ev{}, listen{};
  ev.events = listen.events = EPOLLIN;
  ev.data.u64 = kStopEventId;
  listen.data.u64 = kListenEventId;
  if (::epoll_ctl(s.epoll.get(), EPOLL_CTL_ADD, s.stop_event.get(), &ev) != 0)
    return Status::ResourceExhausted("epoll_ctl: " + shm::ErrnoText(errno));
  // The control socket last: from here on nothing fails but its registration, which removes it.
  if (s.options.bound) {
    s.listener = std::move(*s.options.bound);
    s.options.bound.reset();
  } else {
    auto bound = Bind(s.options);
    if (!bound.ok()) return bound.status();
    s.listener = std::move(**bound);
  }
  const std::string path = s.listener.path;
  if (::epoll_ctl(s.epoll.get(), EPOLL_CTL_ADD, s.listener.sock.get(), &listen) != 0) {
    const int err = errno;
    (void)::unlink(path.c_str());
    shm::RemoveLock(s.listener);
    s.listener = shm::Listener();
    return Status::ResourceExhausted("epoll_ctl: " + shm::ErrnoText(err));
  }

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
    s.pool.WakeHanded();  // handed over after the workers stopped looking
  } else {
    for (auto& w : s.workers) w.detach();
  }
  s.workers.clear();
  // 3. Hang up on everyone: clients see Unavailable and re-attach by themselves later.
  std::vector<uint64_t> ids;
  for (auto& [id, c] : s.table) ids.push_back(id);
  for (uint64_t id : ids) s.Detach(id);
  shm::RemoveLock(s.listener);  // now a next daemon may serve the prefix
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
  st.shared_bytes_live = s.n.shared_bytes_live.load();
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
  st.wakes_handed = s.n.wakes_handed.load();
  st.workers_idle = s.n.workers_idle.load();
  st.requests_running = s.n.running.load();
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
