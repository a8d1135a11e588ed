// The shared-memory server's internals (docs/shm.md): an attached client (Conn), a request
// taken from its ring (Taken) and ShmServer::Impl, shared by shm_server.cc (the io thread,
// attach and detach, start and stop) and shm_server_workers.cc (the workers: scanning the
// rings, serving, answering, sleeping on the doorbells).
#pragma once

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
#include "transport/shm/idle_workers.h"
#include "transport/shm/os.h"
#include "transport/shm/region_allocator.h"
#include "transport/shm/ring.h"

namespace wombatkv {

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
struct ShmServerCounters {
  std::atomic<uint64_t> clients{0}, segments_live{0}, regions_live{0}, region_bytes_live{0},
      shared_live{0}, shared_bytes_live{0}, shared{0}, grants{0}, attaches{0}, detaches{0},
      refusals{0}, requests{0}, doorbells{0}, protocol_errors{0}, too_large{0}, idle_spins{0},
      wakes_handed{0};
  std::atomic<uint64_t> running{0};       // requests taken and not yet answered
  std::atomic<uint64_t> workers_idle{0};  // idle workers without a token (Impl::pool), for Stats
  std::mutex mu;
  std::condition_variable cv;  // notified when a client attaches, detaches or is destroyed, when
                               // the last running handler call returns during a shutdown, and
                               // when workers_idle changes

  void Notify() {
    std::lock_guard<std::mutex> lk(mu);
    cv.notify_all();
  }
};

// One attached client. Owned by shared_ptr: the io thread's table, worker snapshots and the
// requests in flight each hold one; the segment is unmapped when the last goes.
struct Conn {
  Conn(ShmServerCounters* counters, uint64_t id, shm::PeerCred peer, shm::Fd sock,
       std::unique_ptr<shm::Mapping> map, const shm::Layout& layout);
  ~Conn();

  ShmServerCounters* const counters;
  const uint64_t id;
  const shm::PeerCred peer;
  shm::Fd sock;  // GUARDED_BY(mu) once published: Break shuts it down, Detach closes it
  const std::unique_ptr<shm::Mapping> map;
  const shm::Layout layout;
  const shm::Ring req, resp, rel;
  uint8_t* const req_area;
  uint8_t* const resp_area;
  Session session;
  std::atomic<bool> dead{false};

  // What one response holds until the client releases its token (A3).
  struct Held {
    uint64_t region = 0;        // offset in the response area
    uint64_t region_bytes = 0;  // 0 = no region
    std::vector<std::shared_ptr<const Buffer>> pins;  // arena payloads passed by reference
    uint64_t pin_bytes = 0;                           // their bytes
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

// A client answered while it sleeps, still to be woken; the request that began at `begin` ends
// when it is (ShmServer::Impl::HandOverWakes).
struct Woken {
  std::shared_ptr<Conn> conn;
  uint64_t begin;
};

struct ShmServer::Impl {
  Impl(Handler h, ShmServerOptions o, ImmediateHandler i)
      : handler(std::move(h)), immediate(std::move(i)), options(std::move(o)),
        pool(PoolHooks()) {
    clock = options.clock ? options.clock : RealClock();
  }

  Handler handler;
  ImmediateHandler immediate;  // may be null
  ShmServerOptions options;
  shm::ShmGroup group;  // options.group, resolved by Start
  Clock* clock;
  shm::Layout layout;
  shm::Listener listener;
  shm::Fd epoll, stop_event;
  // Idle workers sleep in epoll_wait on `bells`: every client's control socket (a doorbell byte
  // wakes one of them directly, edge-triggered), `wake_event` (WakeOne's tokens: a semaphore
  // eventfd) and `workers_stop` (written once, at shutdown: wakes them all).
  shm::Fd bells, wake_event, workers_stop;
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
  ShmServerCounters n;

  // The idle workers, WakeOne's tokens to them (written to wake_event) and the client wake-ups
  // handed to them by a thread that answered a batch of requests (docs/shm.md, "Wake-ups": a
  // sync round's answers).
  using Pool = shm::IdleWorkers<std::shared_ptr<Conn>>;
  Pool pool;
  Pool::Hooks PoolHooks();

  void Log(LogLevel level, const std::string& line) {
    if (options.log) {
      options.log(level, line);
    } else if (level >= LogLevel::kWarn) {
      std::fprintf(stderr, "wombatkvd shm: %s\n", line.c_str());
    }
  }

  // --- io thread -------------------------------------------------------------------------------
  void IoLoop();
  // Accepts every waiting client. On an error other than "none left" (EMFILE, ENFILE, ENOMEM)
  // the listener is taken out of the loop for kAcceptPauseMs — level-triggered, it would wake the
  // io thread again at once, for ever — and put back by IoLoop.
  void Accept();
  void SetListening(bool on);
  static constexpr int kAcceptPauseMs = 100;
  bool accept_paused = false;     // io thread only
  uint64_t accept_resume_us = 0;  // io thread only: when a paused listener is put back
  uint64_t accept_failures = 0;   // io thread only
  void AttachClient(shm::Fd sock);
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
  // Writes the response (or `error`) into c's ring. True when the client announced it sleeps
  // (R3): the caller wakes it (WakeClient) or has a worker do it (HandOverWakes).
  bool Publish(Conn& c, const wire::Message& m, const Status& error);
  void WakeClient(Conn& c);
  // The wake-ups of clients answered off the pool, at the end of the answering thread's batch
  // (a sync round's completions): one idle worker is woken to do them all (pool.HandOver), so
  // that the thread goes on to its next round instead of waking clients who then take its core.
  // Without an idle worker (or while stopping) they are done here. Then each request ends
  // (Served), last.
  void HandOverWakes(std::vector<Woken> woken);
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
  // Serves `t` as a worker that stops scanning meanwhile (see scanners).
  void RunHandler(std::vector<std::shared_ptr<Conn>>& snap, uint64_t* version, Taken& t);
  void Resnap(std::vector<std::shared_ptr<Conn>>& snap, uint64_t* version);
  void ArmDoorbells(const std::vector<std::shared_ptr<Conn>>& snap);
  // R3 allows it only to a worker that scans until it goes idle (GoIdle arms them again).
  void DisarmDoorbells(const std::vector<std::shared_ptr<Conn>>& snap);
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

}  // namespace wombatkv
