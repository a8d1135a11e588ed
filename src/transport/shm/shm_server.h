// ShmServer: the daemon side of the same-host shared-memory transport (design: docs/shm.md).
//
// It listens on the control socket `<run_dir>/wombatkv-<prefix>.sock` (mode 0600, one daemon per
// prefix). A process that connects — only the daemon's own user or root (SO_PEERCRED) — gets a
// segment of its own: a sealed memfd holding a request ring, a response ring, a release ring and
// two data areas (segment_layout.h), passed over the socket. Its requests are handed to the
// handler (normally Service::Handle) with the client's Session; responses, payloads included, are
// written into that client's segment only, so a client can never see bytes of another client.
//
// Threads: one io thread (accepts, hang-ups) and `workers` worker threads that take requests from
// every client's ring, run the handler (which may block, e.g. a publish waiting for L2), and
// publish the responses. At most one idle worker spins looking for work before sleeping; sleeping
// workers wait on every client's control socket, where a doorbell byte wakes one of them
// (docs/shm.md, "Wake-ups").
//
// Failure handling: a client that exits or dies (even SIGKILL) hangs up its socket; the io thread
// detaches it at once, and its segment, its response regions (the memory behind its borrows) and
// its Session go away as soon as no worker still runs one of its requests. A client that breaks
// the ring protocol is disconnected; one that stops reading its responses only stalls itself: no
// worker ever waits for a client.
//
// Thread-safety: Start and Stop from one thread; Stats, WaitFor and socket_path from any.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "daemon/service.h"
#include "transport/shm/payload_arenas.h"
#include "transport/shm/segment_layout.h"
#include "wire/message.h"
#include "wombatkv/env.h"
#include "wombatkv/status.h"
#include "wombatkv/store.h"

namespace wombatkv {

struct ShmServerOptions {
  // Clients attach with WMBT_KV_REMOTE_PREFIX=<prefix>: 1..64 of [A-Za-z0-9._-].
  std::string prefix;
  // Directory of the control socket; empty = $WMBT_KV_RUN_DIR, else /tmp.
  std::string run_dir;
  // WMBT_KV_SHM_GROUP: a group (name or number) whose members may attach besides this user and
  // root; the control socket is then 0660 and owned by it. Empty = none (0600). Start fails with
  // InvalidArgument for an unknown group, FailedPrecondition when this user cannot give it the
  // socket.
  std::string group;
  // Per-client segment: ring slots and the two data areas (virtual size; pages are allocated
  // only when touched). A response larger than the free response area fails with
  // ResourceExhausted naming WMBT_KV_SHM_DATA_BYTES.
  shm::LayoutParams layout;
  // Worker threads shared by all clients. Requests that block (publishes) each hold one.
  size_t workers = 16;
  // Clients attached at once; more are refused with ResourceExhausted.
  size_t clients_max = 256;
  // Bytes at the start of each response area whose pages stay resident when freed; pages of
  // regions freed beyond it are given back to the kernel.
  uint64_t warm_bytes = 64ull << 20;
  // For WaitFor and for timing handler calls (how long requests take decides whether idle
  // workers spin); null = RealClock().
  Clock* clock = nullptr;
  // Attach/detach at debug level, refusals and protocol errors at warn. Null = warnings to stderr.
  LogSink log;
  // The store's payload arenas (StoreOptions::payload_allocator): a response payload lying in
  // one is passed by reference, the arena's read-only descriptor handed to the client first
  // (docs/shm.md, "Zero-copy gets"). Null = every payload is copied into the response area.
  std::shared_ptr<shm::PayloadArenas> arenas;
  // The control socket made already (ShmServer::Bind with these options), which Start takes
  // over; null = Start makes it.
  std::shared_ptr<shm::Listener> bound;
  // Tests: called by a worker right after it took a request off a client's ring, before serving
  // it (a test holds the worker there to act in between). Null = nothing.
  std::function<void()> on_taken;
};

struct ShmServerStats {
  uint64_t clients = 0;                // attached now
  uint64_t segments_live = 0;          // segments the daemon still maps (detached ones included
                                       // until their last in-flight request finishes)
  uint64_t response_regions_live = 0;  // response regions not released yet, over all clients
  uint64_t response_bytes_live = 0;
  uint64_t shared_payloads_live = 0;   // arena payloads held for clients until they release them
  uint64_t shared_bytes_live = 0;      // their bytes
  uint64_t shared_payloads = 0;        // payloads ever passed by reference (zero copy)
  uint64_t arena_grants = 0;           // arena descriptors handed to clients
  uint64_t attaches = 0;
  uint64_t detaches = 0;
  uint64_t refusals = 0;          // wrong uid, too many clients, segment creation failed
  uint64_t requests = 0;
  uint64_t doorbells = 0;         // wake-ups a client had to ask for (the daemon was asleep)
  uint64_t protocol_errors = 0;   // malformed slots, bad counters, bogus releases
  uint64_t responses_too_large = 0;
  uint64_t idle_spins = 0;        // times a worker out of requests spun for the next one
  uint64_t wakes_handed = 0;      // client wake-ups a sync round handed to a worker to do
  uint64_t workers_idle = 0;      // workers asleep (or about to sleep) and not being woken
  uint64_t requests_running = 0;  // taken off a ring and not answered yet
};

class ShmServer {
 public:
  // Runs one request and gives its response to the Respond it is passed: exactly once, before
  // returning or later from any thread (Service::HandleAsync: a save completes on the thread that
  // syncs it). The request is only read during the call.
  using Handler = std::function<void(Session&, const wire::Message&, Service::Respond)>;
  // A handler that returns its response, as a Handler (tests).
  static Handler Returning(std::function<wire::Message(Session&, const wire::Message&)> fn) {
    return [fn = std::move(fn)](Session& s, const wire::Message& m, Service::Respond respond) {
      respond(fn(s, m));
    };
  }
  // The response when it can be had without blocking (Service::HandleIfImmediate), else nullopt.
  using ImmediateHandler =
      std::function<std::optional<wire::Message>(Session&, const wire::Message&)>;

  // `service` must outlive the server. (Inline so that users of the handler form — tests — need
  // not link the Service.)
  ShmServer(Service& service, ShmServerOptions options)
      : ShmServer([&service](Session& s, const wire::Message& m,
                             Service::Respond r) { service.HandleAsync(s, m, std::move(r)); },
                  std::move(options),
                  [&service](Session& s, const wire::Message& m) {
                    return service.HandleIfImmediate(s, m);
                  }) {}
  // `immediate` (optional) is tried first: a request it answers cannot block, so a worker that
  // was the last awake one need not hand over the watch (docs/shm.md, "Who keeps watch").
  ShmServer(Handler handler, ShmServerOptions options, ImmediateHandler immediate = nullptr);
  ~ShmServer();  // Stop()
  ShmServer(const ShmServer&) = delete;
  ShmServer& operator=(const ShmServer&) = delete;

  // Creates the control socket (or takes `options.bound`) and starts the threads.
  // InvalidArgument for a bad prefix or layout; FailedPrecondition when another daemon serves the
  // prefix or the path is not ours.
  Status Start();
  // The control socket of `options`, made ahead of a server (ShmServerOptions::bound), with
  // Start's errors: a daemon finds a prefix already served before it opens its store. Until a
  // server takes it, clients that attach wait (up to their attach timeout) for their greeting.
  // Its path is removed when it is destroyed untaken.
  static Result<std::shared_ptr<shm::Listener>> Bind(const ShmServerOptions& options);
  // Stops accepting (the socket is removed), lets running requests finish and publish their
  // responses, then hangs up on every client (they see Unavailable and re-attach by themselves).
  // Idempotent.
  void Stop();
  // As Stop, but waits at most `timeout_micros` (on the clock) for running requests. Returns how
  // many were still running: then the clients are hung up on anyway and the worker threads are
  // left running inside their handler calls, with this server's internals deliberately leaked so
  // they stay valid (for a process about to exit; the handler's Service/Store must outlive them).
  size_t Shutdown(uint64_t timeout_micros);

  std::string socket_path() const;
  ShmServerStats Stats() const;
  // Waits until `done(Stats())` holds (re-checked at every attach, detach and segment release) or
  // `timeout_micros` pass on the clock; returns whether it holds.
  bool WaitFor(const std::function<bool(const ShmServerStats&)>& done, uint64_t timeout_micros);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace wombatkv
