#include "transport/shm/shm_channel.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "base/check.h"
#include "base/redialer.h"
#include "base/spin_poll.h"
#include "base/thread_name.h"
#include "transport/shm/futex.h"
#include "transport/shm/os.h"
#include "transport/shm/region_allocator.h"
#include "transport/shm/ring.h"
#include "wire/codec.h"

namespace wombatkv {
namespace {

using shm::Fd;
using shm::Ring;

// Rounds of CpuRelax() a caller waits for a worker to take its request before it rings the
// doorbell (a scanning worker takes it within a microsecond or two; only a sleeping daemon needs
// the doorbell, and its workers arm it before they sleep). Not for an op that awaits a disk
// sync: while such requests run the workers do not spin (docs/shm.md), so an armed doorbell
// means nobody will come, and the spin only delayed the ring.
constexpr uint32_t kDoorbellSpins = 512;
// YieldForResponse: a yield longer than this (µs, as the clock reads) ran another task; and
// only answers caught within this many yields teach the spin to wait longer.
constexpr uint64_t kBareYieldMicrosMax = 2;
constexpr uint32_t kLearningYieldsMax = 2;
// A wait for an answer served from RAM (not one awaiting a disk sync) spins at least this long
// before it yields: a missed spin costs a context switch, which on a VM costs more than this
// (docs/shm.md, "Spin floor"). kSpinFloorRounds when the clock cannot time CpuRelax().
constexpr uint32_t kSpinFloorMicros = 5;
constexpr uint32_t kSpinFloorRounds = 256;

// The mapped segment, shared by the attachment and every Buffer adopted over a response region,
// so borrows stay valid after the attachment (or the daemon) is gone.
class ClientSegment {
 public:
  ClientSegment(std::unique_ptr<shm::Mapping> map, const shm::Layout& l)
      : map_(std::move(map)),
        layout_(l),
        req_(Control(l.request_ring_control), map_->base() + l.request_slots, l.params.slot_count,
             l.params.slot_bytes),
        resp_(Control(l.response_ring_control), map_->base() + l.response_slots,
              l.params.slot_count, l.params.slot_bytes),
        rel_(Control(l.release_ring_control), map_->base() + l.release_slots,
             l.params.release_count, sizeof(uint64_t)) {}

  const shm::Layout& layout() const { return layout_; }
  const Ring& req() const { return req_; }
  const Ring& resp() const { return resp_; }
  uint8_t* req_area() const { return map_->base() + layout_.request_area; }
  uint8_t* resp_area() const { return map_->base() + layout_.response_area; }

  // Hands a response's region and shared payloads back to the daemon (A3). Never blocks: the
  // release ring has room for every response the daemon can hold at once, so it is full only if
  // the daemon is gone.
  void Release(uint64_t token) {
    std::lock_guard<std::mutex> lk(rel_mu_);
    const int64_t used = rel_.Used(rel_tail_, rel_.head().load(std::memory_order_acquire));
    if (used < 0 || used >= rel_.capacity()) return;
    std::memcpy(rel_.slot(rel_tail_), &token, sizeof token);
    rel_tail_++;
    rel_.tail().store(rel_tail_, std::memory_order_release);
  }

  // Rings the doorbell (a byte on control socket `sock`) if it is armed (every worker sleeps): no
  // pre-spin.
  void RingIfArmed(int sock) const {
    if (req_.wake().load(std::memory_order_relaxed) == 0) return;  // a worker is awake, scanning
    if (req_.wake().exchange(0, std::memory_order_seq_cst) == 1) {
      const char bell = 1;
      // A full socket buffer (EAGAIN) means earlier doorbells are still unread: the daemon will
      // wake anyway. A dead daemon is noticed by the monitor.
      (void)::send(sock, &bell, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
  }

  // After a release of shared payloads: wakes a worker if all sleep, since they drain releases
  // before they sleep, so what the client let go is not kept pinned until its next call.
  void NudgeAfterRelease(int sock) const {
    shm::FullFence();  // R3: the release ring's tail store, then the doorbell word
    RingIfArmed(sock);
  }

 private:
  shm::RingControl* Control(uint64_t offset) const {
    return reinterpret_cast<shm::RingControl*>(map_->base() + offset);
  }
  const std::unique_ptr<shm::Mapping> map_;
  const shm::Layout layout_;
  const Ring req_, resp_, rel_;
  std::mutex rel_mu_;
  uint32_t rel_tail_ = 0;  // GUARDED_BY(rel_mu_)
};

// One call waiting for its response. `state` is its private futex word.
struct Waiter {
  static constexpr uint32_t kSpinning = 0, kSleeping = 1, kDone = 2, kPoked = 3;
  std::atomic<uint32_t> state{kSpinning};
  std::optional<Result<wire::Message>> result;  // set before state becomes kDone
  uint64_t region_offset = 0;                   // its request region, freed on delivery
  uint64_t region_bytes = 0;
};

// One attachment to one daemon incarnation. Dead once the daemon hangs up; never revived (the
// channel makes a new one).
class Attachment {
 public:
  static Result<std::shared_ptr<Attachment>> Connect(const ShmClientOptions& options,
                                                     const std::string& path);
  ~Attachment();

  // `*not_taken` (if non-null) turns true when the call failed without the daemon ever taking
  // it: it cannot have taken effect, and may be sent again on a new attachment.
  // The request is left as it was but for its id and flags.
  Result<wire::Message> Call(wire::Message& request, bool* not_taken = nullptr);
  bool dead() const { return dead_.load(std::memory_order_acquire); }
  // How long calls may wait from now on (0 = for ever): the attach timeout for Hello, then the
  // request timeout.
  void SetTimeout(uint32_t ms) { timeout_ms_.store(ms, std::memory_order_relaxed); }
  // The Hello was answered: from now on the request timeout applies.
  void Greeted(uint32_t request_timeout_ms) {
    greeted_.store(true, std::memory_order_release);
    SetTimeout(request_timeout_ms);
  }

  Attachment(std::shared_ptr<ClientSegment> seg, Fd sock, Fd stop, std::string path, Clock* clock,
             bool poll, uint32_t timeout_ms)
      : clock_(clock ? clock : RealClock()),
        poll_(poll),
        seg_(std::move(seg)),
        sock_(std::make_shared<const Fd>(std::move(sock))),
        stop_(std::move(stop)),
        path_(std::move(path)),
        alloc_(seg_->layout().params.request_area_bytes) {
    SetTimeout(timeout_ms);
    const uint32_t floor = shm::RelaxRoundsFor(*clock_, kSpinFloorMicros, kSpinFloorRounds);
    for (uint16_t op = 0; op <= wire::kOpMax; ++op) {
      budgets_[op].sync = wire::AwaitsDiskSync(op);
      budgets_[op].spin_floor = budgets_[op].sync ? 0 : floor;
    }
  }

 private:
  // How a wait for a response spins before it sleeps (at least spin_floor), learnt per op: a get
  // is answered within a few µs, a put that waits for a disk sync after a millisecond.
  struct WaitBudget {
    shm::AdaptiveSpin spin{32};
    // The answer waits for a disk sync (wire::AwaitsDiskSync). Then the receiver does not yield
    // a fixed kYieldRounds times between the spin and the sleep (on a busy host each yield was a
    // context switch, a third of a durable put's CPU in the client), but polls, yielding, for as
    // long as such waits took lately while no other task wants its core (sync_spin).
    bool sync = false;
    shm::AdaptiveSpin sync_spin{kSyncWaitSpin};
    // Rounds a spin takes at least (kSpinFloorMicros; 0 for a sync wait, which polls instead).
    uint32_t spin_floor = 0;
    uint32_t yield_rounds() const { return sync ? 0 : shm::kYieldRounds; }
    uint32_t spin_limit() const { return std::max(spin.limit(), spin_floor); }
  };
  Status AcquirePermit();
  void ReleasePermits(uint32_t n);
  Result<uint64_t> AllocateRequest(uint64_t bytes);
  void FreeRequest(uint64_t offset, uint64_t bytes);
  // `spin`: wait kDoorbellSpins rounds for a worker to take it before ringing.
  void RingDoorbellIfNeeded(uint32_t index, bool spin);
  Result<wire::Message> Wait(Waiter& w, uint64_t id, WaitBudget& budget);
  // The receiver's yields after a missed spin (REQUIRES: recv_mu_ held). True when a response
  // came in meanwhile.
  bool YieldForResponse(WaitBudget& budget);
  // The receiver's poll for a response that waits for a disk sync (REQUIRES: recv_mu_ held,
  // budget.sync). False when it stopped because another task wanted the core.
  bool PollForSyncedResponse(WaitBudget& budget);
  Result<wire::Message> Finish(Waiter& w);
  void Drain();  // REQUIRES: recv_mu_ held
  Result<wire::Message> ToMessage(shm::SlotMessage m);
  // Resolves a payload reference of a response: the bytes it names, and the arena mapping that
  // must stay mapped while they are used (null for the response area).
  Result<const uint8_t*> Resolve(const shm::PayloadRef& p, const shm::SlotHeader& h,
                                 std::vector<std::shared_ptr<shm::Mapping>>* maps);
  std::shared_ptr<shm::Mapping> Arena(uint32_t arena);
  // Maps the arena descriptors queued on the control socket (ArenaGrant). False when the daemon
  // hung up or sent something else.
  bool TakeGrants();
  void PokeOne();
  void Monitor();
  // Whether a call still in flight was issued before a tick at least timeout_ms_ ago (`ticks`:
  // the monitor's wake-ups, each with the next call id then). Only the monitor calls it.
  bool CallOverdue(std::deque<std::pair<uint64_t, uint64_t>>& ticks, uint64_t timeout_ms);
  void MarkDead();
  // Whether the request published at ring index `index` was never taken and never will be: the
  // daemon hung up (it takes nothing from a client after that: ShmServer's TryTake checks under
  // the client's lock, which the hang-up holds) and its ring head has not passed the slot.
  bool NeverTaken(uint32_t index) const {
    if (!hung_up_.load(std::memory_order_acquire)) return false;
    return static_cast<int32_t>(seg_->req().head().load(std::memory_order_acquire) - index) <= 0;
  }
  Status DeadStatus() const {
    const uint32_t ms = timed_out_ms_.load(std::memory_order_acquire);
    if (ms != 0 && !greeted_.load(std::memory_order_acquire)) {
      return Status::Unavailable(
          "wombatkvd at " + path_ + " did not answer this client's Hello within " +
          std::to_string(ms) + " ms of attaching (it may be stopped or wedged)");
    }
    if (ms != 0) {
      return Status::Unavailable("no response from wombatkvd at " + path_ + " within " +
                                 std::to_string(ms) +
                                 " ms (it may be stopped or wedged); the call may or may not have "
                                 "taken effect. The next call re-attaches; "
                                 "WMBT_KV_REQUEST_TIMEOUT_MS sets how long a call waits");
    }
    return Status::Unavailable("wombatkvd at " + path_ +
                               " went away; the call may or may not have taken effect. The next "
                               "call re-attaches");
  }

  Clock* const clock_;
  const bool poll_;  // ShmClientOptions::poll: spin, yield and poll before sleeping
  const std::shared_ptr<ClientSegment> seg_;
  // The control socket. Shared with the borrows of shared payloads, which keep it open: the
  // daemon holds those payloads for this client (and never reuses their arena ranges) until it
  // sees the hang-up, so a borrow that outlives the attachment stays valid.
  const std::shared_ptr<const Fd> sock_;
  Fd stop_;
  const std::string path_;
  std::thread monitor_;
  std::atomic<bool> dead_{false};
  std::atomic<bool> hung_up_{false};       // set before dead_ when the daemon closed the socket
  std::atomic<uint32_t> timeout_ms_{0};    // SetTimeout
  std::atomic<uint32_t> timed_out_ms_{0};  // set before dead_ when a call waited too long
  std::atomic<bool> greeted_{false};       // Greeted
  std::atomic<uint64_t> next_id_{1};

  std::mutex permit_mu_;
  std::condition_variable permit_cv_;
  uint32_t inflight_ = 0;  // GUARDED_BY(permit_mu_): requests whose response is not drained

  std::mutex alloc_mu_;
  std::condition_variable alloc_cv_;
  shm::RegionAllocator alloc_;   // GUARDED_BY(alloc_mu_): the request area (A1)
  uint32_t alloc_holders_ = 0;   // GUARDED_BY(alloc_mu_): requests holding a region

  std::mutex submit_mu_;
  uint32_t req_tail_ = 0;  // GUARDED_BY(submit_mu_)

  std::mutex recv_mu_;      // held by the one receiving thread
  uint32_t resp_head_ = 0;  // GUARDED_BY(recv_mu_)

  std::mutex pending_mu_;
  std::unordered_map<uint64_t, Waiter*> pending_;  // GUARDED_BY(pending_mu_)

  std::mutex arenas_mu_;
  // GUARDED_BY(arenas_mu_): the daemon's payload arenas handed to us, by number (read-only).
  std::array<std::shared_ptr<shm::Mapping>, shm::kPayloadArenasMax + 1> arenas_;

  std::array<WaitBudget, wire::kOpMax + 1> budgets_;  // by op (0: an unknown one)
  WaitBudget& BudgetFor(uint16_t op) { return budgets_[op <= wire::kOpMax ? op : 0]; }
};

Result<std::shared_ptr<Attachment>> Attachment::Connect(const ShmClientOptions& options,
                                                        const std::string& path) {
  WMBT_ASSIGN_OR_RETURN(shm::ShmGroup group, shm::ResolveShmGroup(options.group));
  const uint32_t attach_ms = AttachTimeoutMs(options);
  WMBT_ASSIGN_OR_RETURN(Fd sock, shm::ConnectControlSocket(path, attach_ms));
  WMBT_ASSIGN_OR_RETURN(shm::PeerCred peer, shm::GetPeerCred(sock.get()));
  if (!shm::PeerAllowed(peer, group)) {
    const std::string whom =
        group ? "neither this user, root, nor a member of group " + std::to_string(*group)
              : "neither this user nor root";
    const std::string hint =
        group ? "check WMBT_KV_RUN_DIR (--run-dir)"
              : "check WMBT_KV_RUN_DIR (--run-dir), or set WMBT_KV_SHM_GROUP to a "
                "group of the daemon's user";
    return Status::PermissionDenied("the control socket " + path + " is served by uid " +
                                    std::to_string(peer.uid) + ", " + whom +
                                    ": refusing to attach (" + hint + ")");
  }
  timeval tv{static_cast<time_t>(attach_ms / 1000),
             static_cast<suseconds_t>(attach_ms % 1000) * 1000};
  (void)::setsockopt(sock.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);

  shm::AttachReply reply{};
  Fd seg_fd;
  WMBT_ASSIGN_OR_RETURN(size_t n, shm::ReceiveWithFd(sock.get(), &reply, sizeof reply, &seg_fd));
  if (n == 0) return Status::Unavailable("wombatkvd at " + path + " hung up during attach");
  if (n != sizeof reply || reply.magic != shm::kSegmentMagic)
    return Status::FailedPrecondition("the peer at " + path + " is not a wombatkvd");
  if (reply.code != 0) {
    const uint32_t len = std::min<uint32_t>(reply.message_bytes, sizeof reply.message);
    const Code code = reply.code <= static_cast<uint32_t>(Code::kPermissionDenied)
                          ? static_cast<Code>(reply.code)
                          : Code::kInternal;
    return Status(code, "wombatkvd refused to attach: " + std::string(reply.message, len));
  }
  if (!seg_fd.valid())
    return Status::FailedPrecondition("wombatkvd at " + path + " sent no shared segment");
  struct stat st {};
  if (::fstat(seg_fd.get(), &st) != 0 || static_cast<uint64_t>(st.st_size) != reply.segment_bytes)
    return Status::FailedPrecondition("the shared segment from " + path +
                                      " does not have the announced size");
  WMBT_ASSIGN_OR_RETURN(auto map, shm::Mapping::Map(seg_fd.get(), reply.segment_bytes));
  WMBT_ASSIGN_OR_RETURN(shm::Layout layout, shm::ReadLayout(map->base(), map->bytes()));
  seg_fd.Reset();  // the mapping keeps the memory; nobody can reopen the memfd by name

  Fd stop(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop.valid()) return Status::ResourceExhausted("eventfd: " + shm::ErrnoText(errno));
  auto seg = std::make_shared<ClientSegment>(std::move(map), layout);
  auto a = std::make_shared<Attachment>(std::move(seg), std::move(sock), std::move(stop), path,
                                        options.clock, options.poll, attach_ms);
  a->monitor_ = StartNamedThread("wmbt-shm-watch", [p = a.get()] { p->Monitor(); });

  // The session's first message: checks that both sides speak the same op layouts.
  wire::HelloRequest hello;
  hello.client_name =
      options.client_name.empty() ? "pid " + std::to_string(::getpid()) : options.client_name;
  wire::Message greeting = hello.Encode();
  WMBT_ASSIGN_OR_RETURN(wire::Message response, a->Call(greeting));
  auto welcome = wire::HelloResponse::Decode(response);
  if (!welcome.ok()) return welcome.status().WithContext("wombatkvd at " + path + " refused Hello");
  a->Greeted(options.request_timeout_ms);
  return a;
}

Attachment::~Attachment() {
  uint64_t one = 1;
  (void)!::write(stop_.get(), &one, sizeof one);
  monitor_.join();
}

void Attachment::Monitor() {
  pollfd fds[2] = {{sock_->get(), POLLIN | POLLRDHUP, 0}, {stop_.get(), POLLIN, 0}};
  std::deque<std::pair<uint64_t, uint64_t>> ticks;
  for (;;) {
    const uint32_t timeout_ms = timeout_ms_.load(std::memory_order_relaxed);
    // Wakes a few times per deadline to look for overdue calls; idle at once without one.
    const int wait_ms =
        timeout_ms == 0 ? -1 : static_cast<int>(std::clamp(timeout_ms / 4, 10u, 60'000u));
    const int n = ::poll(fds, 2, wait_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return MarkDead();
    if (fds[1].revents) return;  // the attachment is being destroyed
    if (fds[0].revents & (POLLHUP | POLLRDHUP | POLLERR)) {
      hung_up_.store(true, std::memory_order_release);
      return MarkDead();
    }
    if ((fds[0].revents & POLLIN) && !TakeGrants()) return MarkDead();
    if (timeout_ms == 0) {
      ticks.clear();
    } else if (CallOverdue(ticks, timeout_ms)) {
      timed_out_ms_.store(timeout_ms, std::memory_order_release);
      return MarkDead();
    }
  }
}

bool Attachment::CallOverdue(std::deque<std::pair<uint64_t, uint64_t>>& ticks,
                             uint64_t timeout_ms) {
  const uint64_t now = clock_->NowMicros();
  const uint64_t timeout_us = timeout_ms * 1000;
  ticks.emplace_back(now, next_id_.load(std::memory_order_acquire));
  // Keep the newest tick that is old enough, and those after it.
  while (ticks.size() >= 2 && now - ticks[1].first >= timeout_us) ticks.pop_front();
  if (now - ticks.front().first < timeout_us) return false;
  // Answers waiting in the ring: the daemon answers, this process was slow to read them (it
  // was stopped, or starved of CPU), or the daemon stopped between an answer and its wake-up.
  // Not overdue; wake the receiver (R3: the sequence first) so that it reads them.
  const Ring& resp = seg_->resp();
  if (resp.tail().load(std::memory_order_acquire) != resp.head().load(std::memory_order_acquire)) {
    resp.wake_seq().fetch_add(1, std::memory_order_seq_cst);
    shm::SharedFutexWake(resp.wake_seq_word(), INT_MAX);
    return false;
  }
  const uint64_t issued_before = ticks.front().second;  // ids below it were issued by then
  std::lock_guard<std::mutex> lk(pending_mu_);
  for (const auto& [id, w] : pending_) {
    if (id < issued_before) return true;
  }
  return false;
}

bool Attachment::TakeGrants() {
  std::lock_guard<std::mutex> lk(arenas_mu_);
  for (;;) {
    shm::ArenaGrant g{};
    Fd fd;
    auto got = shm::ReceiveWithFd(sock_->get(), &g, sizeof g, &fd, MSG_DONTWAIT);
    if (!got.ok()) return got.status().code() == Code::kNotFound;  // NotFound: nothing queued
    if (*got == 0) return false;
    if (*got != sizeof g || g.magic != shm::kArenaGrantMagic || g.arena == 0 ||
        g.arena > shm::kPayloadArenasMax || !fd.valid())
      return false;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || static_cast<uint64_t>(st.st_size) != g.bytes) return false;
    auto map = shm::Mapping::MapReadOnly(fd.get(), g.bytes);
    if (!map.ok()) return false;
    arenas_[g.arena] = std::shared_ptr<shm::Mapping>(std::move(*map));
  }
}

std::shared_ptr<shm::Mapping> Attachment::Arena(uint32_t arena) {
  std::lock_guard<std::mutex> lk(arenas_mu_);
  return arenas_[arena];
}

void Attachment::MarkDead() {
  dead_.store(true, std::memory_order_seq_cst);
  // The receiving thread may sleep on wake_seq: changing it first makes its wait return even if
  // it is just about to start (R3).
  const Ring& resp = seg_->resp();
  resp.wake_seq().fetch_add(1, std::memory_order_seq_cst);
  shm::SharedFutexWake(resp.wake_seq_word(), INT_MAX);
  {
    std::lock_guard<std::mutex> lk(pending_mu_);
    for (auto& [id, w] : pending_) {
      if (w->state.exchange(Waiter::kPoked) == Waiter::kSleeping)
        shm::PrivateFutexWake(&w->state, 1);
    }
  }
  {
    std::lock_guard<std::mutex> lk(permit_mu_);
    permit_cv_.notify_all();
  }
  {
    std::lock_guard<std::mutex> lk(alloc_mu_);
    alloc_cv_.notify_all();
  }
}

Status Attachment::AcquirePermit() {
  std::unique_lock<std::mutex> lk(permit_mu_);
  // Responses pending never exceed the response ring (R1), so the daemon never waits for room.
  permit_cv_.wait(lk, [&] { return inflight_ < seg_->resp().capacity() || dead(); });
  if (dead()) return DeadStatus();
  inflight_++;
  return Status::Ok();
}

void Attachment::ReleasePermits(uint32_t n) {
  std::lock_guard<std::mutex> lk(permit_mu_);
  const bool was_full = inflight_ >= seg_->resp().capacity();
  inflight_ -= n;
  if (was_full) permit_cv_.notify_all();
}

Result<uint64_t> Attachment::AllocateRequest(uint64_t bytes) {
  std::unique_lock<std::mutex> lk(alloc_mu_);
  for (;;) {
    if (dead()) return DeadStatus();
    if (auto off = alloc_.Allocate(bytes)) {
      alloc_holders_++;
      return *off;
    }
    // Calls in flight will give space back; with none, waiting cannot help.
    if (alloc_holders_ == 0 || bytes > alloc_.capacity()) {
      return Status::ResourceExhausted(
          "a request of " + std::to_string(bytes) + " bytes does not fit the shared request area (" +
          std::to_string(alloc_.capacity()) +
          " bytes): put fewer or smaller blocks per call, or raise WMBT_KV_SHM_DATA_BYTES "
          "(wombatkvd --shm-data-bytes)");
    }
    alloc_cv_.wait(lk);
  }
}

void Attachment::FreeRequest(uint64_t offset, uint64_t bytes) {
  std::lock_guard<std::mutex> lk(alloc_mu_);
  alloc_.Free(offset, bytes);
  alloc_holders_--;
  alloc_cv_.notify_all();
}

Result<wire::Message> Attachment::Call(wire::Message& request, bool* not_taken) {
  // Until the request is in the ring, a failure leaves nothing for the daemon to take.
  auto unsent = [&](Status st) {
    if (!dead()) return st;  // e.g. a request too large for the area: sending again cannot help
    if (not_taken) *not_taken = true;
    return Status::Unavailable("wombatkvd at " + path_ +
                               " went away before taking the call; it did not take effect");
  };
  if (dead()) return unsent(DeadStatus());
  if (Status st = AcquirePermit(); !st.ok()) return unsent(std::move(st));
  request.flags &= static_cast<uint16_t>(~wire::kFlagResponse);
  const Ring& req = seg_->req();
  const shm::MessagePlan plan = shm::PlanMessage(request, req.slot_bytes());

  Waiter w;
  if (plan.region_bytes) {
    auto off = AllocateRequest(plan.region_bytes);
    if (!off.ok()) {
      ReleasePermits(1);
      return unsent(off.status());
    }
    w.region_offset = *off;
    w.region_bytes = plan.region_bytes;
    // The one copy of a put: the caller's payload into shared memory.
    shm::WriteRegion(request, plan, seg_->req_area() + *off, *off);
  }
  // The id once the call waits for nothing but the daemon: the deadline (CallOverdue) counts
  // from it, not from a wait for room in the request area behind other calls.
  const uint64_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
  request.id = id;
  {
    std::lock_guard<std::mutex> lk(pending_mu_);
    pending_.emplace(id, &w);
  }
  uint32_t index;
  {
    std::lock_guard<std::mutex> lk(submit_mu_);
    index = req_tail_;
    // Slots in use <= calls in flight <= capacity (AcquirePermit), so the ring has room.
    WMBT_CHECK(req.Used(req_tail_, req.head().load(std::memory_order_acquire)) <
               int64_t{req.capacity()});
    shm::WriteSlot(req.slot(index), request, plan, w.region_offset);
    req_tail_++;
    req.tail().store(req_tail_, std::memory_order_release);  // R2
  }
  WaitBudget& budget = BudgetFor(request.op);
  RingDoorbellIfNeeded(index, /*spin=*/!budget.sync);
  auto response = Wait(w, id, budget);
  if (!response.ok() && dead() && NeverTaken(index)) return unsent(response.status());
  if (response.ok() && response->op != request.op) {
    return Status::Internal("wombatkvd answered request " + std::to_string(id) + " (op " +
                            std::to_string(request.op) + ") with op " +
                            std::to_string(response->op));
  }
  return response;
}

void Attachment::RingDoorbellIfNeeded(uint32_t index, bool spin) {
  const Ring& req = seg_->req();
  shm::FullFence();  // R3: our tail store, then their word
  if (req.wake().load(std::memory_order_relaxed) == 0) return;  // a worker is awake and scanning
  auto taken = [&] {
    return static_cast<int32_t>(req.head().load(std::memory_order_acquire) - index) > 0;
  };
  for (uint32_t i = 0; i < (spin ? kDoorbellSpins : 0); ++i) {
    if (taken()) return;
    shm::CpuRelax();
  }
  if (taken()) return;
  seg_->RingIfArmed(sock_->get());
}

Result<wire::Message> Attachment::Wait(Waiter& w, uint64_t id, WaitBudget& budget) {
  uint32_t spins = 0;
  const uint64_t start = budget.sync ? clock_->NowMicros() : 0;  // just after the publish
  for (;;) {
    if (w.state.load(std::memory_order_acquire) == Waiter::kDone) return Finish(w);
    if (dead()) {
      // A response the daemon published before it hung up (a stop answers what it took, then
      // detaches) is still in the ring: deliver it rather than fail a call that was answered.
      // Every receiver leaves its loop once dead, so the lock comes at once.
      {
        std::lock_guard<std::mutex> rl(recv_mu_);
        Drain();
      }
      if (w.state.load(std::memory_order_acquire) == Waiter::kDone) return Finish(w);
      std::lock_guard<std::mutex> lk(pending_mu_);
      if (pending_.erase(id)) return DeadStatus();
      // Otherwise a receiver took our response and is delivering it right now.
    } else {
      std::unique_lock<std::mutex> rl(recv_mu_, std::try_to_lock);
      if (rl.owns_lock()) {
        // We are the receiver: drain for everyone until our own response is in.
        const Ring& resp = seg_->resp();
        // A sync wait polls once, after its first missed spin; unless that poll was stopped by
        // contention, the whole wait teaches sync_spin how long such waits take.
        bool sync_polled = false, learn = false;
        while (w.state.load(std::memory_order_acquire) != Waiter::kDone && !dead()) {
          Drain();
          if (w.state.load(std::memory_order_acquire) == Waiter::kDone) break;
          uint32_t rspins = 0;
          // After its poll, a sync wait goes straight to sleep (the spin missed already).
          const uint32_t limit = sync_polled || !poll_ ? 0 : budget.spin_limit();
          while (resp.tail().load(std::memory_order_acquire) == resp_head_ && rspins < limit) {
            rspins++;
            shm::CpuRelax();
          }
          if (rspins < limit) {
            budget.spin.Succeeded(rspins);
            continue;
          }
          if (!sync_polled && poll_) budget.spin.Failed();
          if (budget.sync && !sync_polled && poll_) {
            sync_polled = true;
            learn = PollForSyncedResponse(budget);
            continue;
          }
          if (YieldForResponse(budget)) continue;
          // R3: read the sequence, announce, re-check, sleep.
          const uint32_t seq = resp.wake_seq().load(std::memory_order_seq_cst);
          resp.wake().fetch_add(1, std::memory_order_seq_cst);
          if (resp.tail().load(std::memory_order_seq_cst) == resp_head_ && !dead())
            shm::SharedFutexWait(resp.wake_seq_word(), seq);
          resp.wake().fetch_sub(1, std::memory_order_seq_cst);
        }
        if (learn && w.state.load(std::memory_order_acquire) == Waiter::kDone)
          budget.sync_spin.Waited(clock_->NowMicros() - start);
        rl.unlock();
        PokeOne();  // someone else must receive now
        continue;
      }
    }
    // Another thread receives for us; it sets kDone (or kPoked when we should take over).
    uint32_t st = w.state.load(std::memory_order_acquire);
    if (st == Waiter::kPoked) {
      w.state.compare_exchange_strong(st, Waiter::kSpinning);
      spins = 0;
      continue;
    }
    if (st == Waiter::kDone) continue;
    const uint32_t spin_limit = poll_ ? budget.spin_limit() : 0;
    if (spins < spin_limit) {
      spins++;
      shm::CpuRelax();
      continue;
    }
    if (spins < spin_limit + (poll_ ? budget.yield_rounds() : 0)) {
      spins++;
      shm::YieldCore();
      continue;
    }
    uint32_t expected = Waiter::kSpinning;
    if (w.state.compare_exchange_strong(expected, Waiter::kSleeping))
      shm::PrivateFutexWait(&w.state, Waiter::kSleeping);
    expected = Waiter::kSleeping;
    w.state.compare_exchange_strong(expected, Waiter::kSpinning);
    spins = 0;
  }
}

bool Attachment::YieldForResponse(WaitBudget& budget) {
  const Ring& resp = seg_->resp();
  auto in = [&] { return resp.tail().load(std::memory_order_acquire) != resp_head_; };
  const uint32_t rounds = poll_ ? budget.yield_rounds() : 0;
  if (rounds == 0) return in();
  // Caught within the first yields, each of which came straight back (a bare sched_yield takes
  // about a µs; one that ran another task — the daemon's worker, another client — takes longer):
  // a longer spin would have caught it as cheaply and no peer wanted this core, so the spin
  // learns to (AdaptiveSpin::CaughtAfterSpin). A yield that took long handed the core to
  // another task: then yielding was right, and nothing is learnt.
  bool cheap = true;
  uint64_t before = clock_->NowMicros();
  uint32_t i = 0;
  for (; i < rounds && !in() && !dead(); ++i) {
    shm::YieldCore();
    const uint64_t now = clock_->NowMicros();
    cheap = cheap && now - before <= kBareYieldMicrosMax;
    before = now;
  }
  if (!in()) return false;
  if (cheap && i <= kLearningYieldsMax) budget.spin.CaughtAfterSpin();
  return true;
}

bool Attachment::PollForSyncedResponse(WaitBudget& budget) {
  const Ring& resp = seg_->resp();
  // No contention gate (base/contention_gate.h), unlike the TCP client's: a client polling
  // here spares the daemon the futex wake-up of its answer, on the sync thread's path, and in
  // five alternating pairs of 1 KiB saves ×8 the gate raised the daemon's CPU per save in four
  // (BENCHMARKS.md, "Session 36").
  return SyncPoll(budget.sync_spin, /*gate=*/nullptr, *clock_, UINT64_MAX, [&] {
    return resp.tail().load(std::memory_order_acquire) != resp_head_ || dead();
  });
}

Result<wire::Message> Attachment::Finish(Waiter& w) {
  WMBT_CHECK(w.result.has_value());
  return std::move(*w.result);
}

void Attachment::PokeOne() {
  std::lock_guard<std::mutex> lk(pending_mu_);
  // Waiters in pending_ are never kDone (delivery erases them first), so the first one will do.
  for (auto& [id, w] : pending_) {
    uint32_t st = w->state.load(std::memory_order_acquire);
    while (st == Waiter::kSpinning || st == Waiter::kSleeping) {
      if (w->state.compare_exchange_weak(st, Waiter::kPoked)) {
        if (st == Waiter::kSleeping) shm::PrivateFutexWake(&w->state, 1);
        return;
      }
    }
    if (st == Waiter::kPoked) return;  // already asked to take over
  }
}

void Attachment::Drain() {
  const Ring& resp = seg_->resp();
  const uint32_t tail = resp.tail().load(std::memory_order_acquire);
  if (resp.Used(tail, resp_head_) < 0) return MarkDead();  // the ring's tail is out of range
  uint32_t drained = 0;
  while (resp_head_ != tail) {
    auto m = shm::ReadSlot(resp.slot(resp_head_), resp.slot_bytes(), seg_->resp_area(),
                           seg_->layout().params.response_area_bytes, shm::kPayloadArenasMax);
    resp_head_++;
    resp.head().store(resp_head_, std::memory_order_release);  // R2
    drained++;
    if (!m.ok()) {
      // Without a trustworthy id nobody can be answered: give up on this daemon.
      MarkDead();
      break;
    }
    const uint64_t id = m->header.id;
    Waiter* w = nullptr;
    {
      std::lock_guard<std::mutex> lk(pending_mu_);
      auto it = pending_.find(id);
      if (it != pending_.end()) {
        w = it->second;
        pending_.erase(it);
      }
    }
    if (w == nullptr) {  // nobody waits (cannot happen today): still hand the response back
      if (m->header.release_token) seg_->Release(m->header.release_token);
      continue;
    }
    if (w->region_bytes) FreeRequest(w->region_offset, w->region_bytes);
    w->result = ToMessage(std::move(*m));
    // After this exchange the waiter may return and its Waiter vanish: touch nothing but the
    // futex address (a wake of a stale address is harmless).
    if (w->state.exchange(Waiter::kDone, std::memory_order_acq_rel) == Waiter::kSleeping)
      shm::PrivateFutexWake(&w->state, 1);
  }
  if (drained) ReleasePermits(drained);
}

Result<wire::Message> Attachment::ToMessage(shm::SlotMessage m) {
  if (m.header.kind == static_cast<uint8_t>(shm::SlotKind::kError)) return std::move(m.error);
  wire::Message out;
  out.id = m.header.id;
  out.op = m.header.op;
  out.flags = m.header.flags;
  out.fields = std::move(m.fields);
  const uint64_t token = m.header.release_token;
  std::vector<std::shared_ptr<shm::Mapping>> maps;  // arenas the payloads lie in
  bool held = false;  // some payload has bytes the daemon holds for us
  out.payloads.resize(m.payloads.size());
  for (size_t i = 0; i < m.payloads.size(); ++i) {
    out.payloads[i].size = m.payloads[i].bytes;
    if (m.payloads[i].bytes == 0) continue;
    auto at = Resolve(m.payloads[i], m.header, &maps);
    if (!at.ok()) {
      if (token) seg_->Release(token);
      return at.status();
    }
    out.payloads[i].data = *at;
    held = true;
  }
  if (held && token == 0)
    return Status::Internal("wombatkvd sent payloads without a release token: a daemon bug");
  std::shared_ptr<Buffer> owner;
  if (held) {
    // One Buffer per response: every payload slice shares it, and the response goes back to
    // the daemon when the last slice does (zero copy for the engine). It keeps the arenas the
    // payloads lie in mapped, even after this attachment is gone.
    uint8_t* anchor = m.header.region_bytes ? seg_->resp_area() + m.header.region_offset
                                            : const_cast<uint8_t*>(out.payloads[0].data);
    // Shared payloads keep the socket open (see sock_), and pin the daemon's cache entries:
    // their release wakes a worker if need be.
    std::shared_ptr<const Fd> sock = maps.empty() ? nullptr : sock_;
    owner = Buffer::Adopt(anchor, m.header.region_bytes,
                          [seg = seg_, token, maps = std::move(maps), sock = std::move(sock)] {
                            seg->Release(token);
                            if (sock) seg->NudgeAfterRelease(sock->get());
                          });
  } else if (token) {
    seg_->Release(token);  // a spilled body only: already copied out
  }
  for (BufferSlice& p : out.payloads) {
    if (p.data) p.owner = owner;
  }
  return out;
}

Result<const uint8_t*> Attachment::Resolve(const shm::PayloadRef& p, const shm::SlotHeader& h,
                                           std::vector<std::shared_ptr<shm::Mapping>>* maps) {
  if (p.arena == 0) {
    // In the response area (checked by ReadSlot), and within this response's region.
    if (h.region_bytes == 0 || p.offset < h.region_offset ||
        p.offset - h.region_offset > h.region_bytes ||
        p.bytes > h.region_bytes - (p.offset - h.region_offset))
      return Status::Internal("wombatkvd sent a payload outside its response region");
    return seg_->resp_area() + p.offset;
  }
  auto map = Arena(p.arena);
  // Its grant was queued before the response was published; the monitor may not have taken it.
  if (!map) {
    if (!TakeGrants()) MarkDead();
    map = Arena(p.arena);
  }
  if (!map) {
    return Status::Internal("wombatkvd referred to payload arena " + std::to_string(p.arena) +
                            " without handing it over");
  }
  if (p.offset > map->bytes() || p.bytes > map->bytes() - p.offset)
    return Status::Internal("wombatkvd sent a payload outside its arena");
  if (std::find(maps->begin(), maps->end(), map) == maps->end()) maps->push_back(map);
  return map->base() + p.offset;
}

class ShmChannel : public Channel {
 public:
  ShmChannel(ShmClientOptions options, std::string path, std::shared_ptr<Attachment> first)
      : options_(std::move(options)), path_(std::move(path)), attachment_(std::move(first)) {}

  Result<wire::Message> Call(wire::Message request) override {
    Status untaken;  // the first attempt's failure, when the daemon never took the call
    for (;;) {
      auto a = attachment_.Get([](const Attachment& at) { return !at.dead(); },
                               [this]() -> Result<std::shared_ptr<Attachment>> {
                                 return Attachment::Connect(options_, path_);
                               });
      if (!a.ok() && !untaken.ok()) {  // the attach's own code: a refusal stays one
        return Status(a.status().code(),
                      untaken.message() + "; attaching again: " + a.status().message());
      }
      if (!a.ok()) return a.status();
      bool not_taken = false;
      auto r = (*a)->Call(request, &not_taken);
      // A call the daemon never took cannot have taken effect: it is safe to send again once, on
      // a new attachment (the daemon restarted as the call was made; as over TCP).
      if (!r.ok() && not_taken && untaken.ok()) {
        untaken = r.status();
        continue;
      }
      return r;
    }
  }

  std::string Describe() const override { return "shm://" + options_.prefix; }

 private:
  const ShmClientOptions options_;
  const std::string path_;
  Redialer<Attachment> attachment_;  // one attach at a time (base/redialer.h)
};

}  // namespace

uint32_t AttachTimeoutMs(const ShmClientOptions& options) {
  // A stopped or wedged daemon may still accept the connection (the kernel's backlog): the
  // attach waits no longer than a call would (WMBT_KV_REQUEST_TIMEOUT_MS), if that is shorter.
  return options.request_timeout_ms > 0
             ? std::min(options.attach_timeout_ms, options.request_timeout_ms)
             : options.attach_timeout_ms;
}

Result<std::unique_ptr<Channel>> ConnectShm(const ShmClientOptions& options) {
  const std::string run_dir = options.run_dir.empty() ? shm::DefaultRunDir() : options.run_dir;
  WMBT_ASSIGN_OR_RETURN(std::string path, shm::ControlSocketPath(run_dir, options.prefix));
  WMBT_ASSIGN_OR_RETURN(auto attachment, Attachment::Connect(options, path));
  return std::unique_ptr<Channel>(
      std::make_unique<ShmChannel>(options, std::move(path), std::move(attachment)));
}

}  // namespace wombatkv
