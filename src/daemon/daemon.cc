#include "daemon/daemon.h"

#include <sys/resource.h>
#include <sys/stat.h>

#include <cstdio>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "base/human_units.h"
#include "base/thread_name.h"
#include "daemon/http_endpoint.h"
#include "daemon/loop_saves.h"
#include "daemon/metrics_text.h"
#include "daemon/service.h"
#include "setup/store_from_config.h"
#include "transport/shm/os.h"
#include "transport/shm/shm_server.h"
#include "transport/tcp/sockets.h"
#include "transport/tcp/tcp_server.h"
#include "wire/codec.h"
#include "wire/frame.h"

namespace wombatkv {
namespace {

// Descriptors kept for the store (RocksDB's files, the journal, the disk cache, shared-memory
// segments) however many TCP connections are open.
constexpr uint64_t kDescriptorsForTheStore = 512;

// How many TCP connections fit the process's descriptor limit — raised to its hard limit first,
// as a server does — leaving kDescriptorsForTheStore: past it, accept(2) fails for every
// listener and the store's own opens fail with "Too many open files" (a review, session 60).
size_t ConnectionsWithinDescriptors(size_t wanted, std::string* note) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return wanted;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= wanted + kDescriptorsForTheStore) {
    return wanted;
  }
  const size_t fit = limit.rlim_cur > kDescriptorsForTheStore + 16
                         ? static_cast<size_t>(limit.rlim_cur - kDescriptorsForTheStore)
                         : 16;
  *note = "the descriptor limit is " + std::to_string(limit.rlim_cur) + ": serving at most " +
          std::to_string(fit) +
          " TCP connections (raise it: ulimit -n, or LimitNOFILE= in "
          "the systemd unit)";
  return fit;
}

// What the listeners need that can be checked without binding them: a listener anyone on the
// network can reach needs a token (docs/daemon.md, "Authentication"); the shared-memory run
// directory exists. Checked before the listeners are bound and the store is opened, so a
// misconfigured daemon fails in milliseconds with the fix in the message.
Status CheckListeners(const DaemonSettings& s, const Config& c) {
  for (const std::string& addr : s.tcp) {
    WMBT_ASSIGN_OR_RETURN(tcp::HostPort hp, tcp::ParseHostPort(addr, /*allow_port_zero=*/true));
    auto resolved = tcp::Resolve(hp, /*passive=*/true);
    if (!resolved.ok()) return resolved.status().WithContext("--tcp " + addr);
    if (!tcp::IsLoopback(resolved->front()) && s.tokens.empty()) {
      return Status::FailedPrecondition(
          "refusing to listen on " + addr +
          ": it is not a loopback address and no auth token is configured. Pass --auth-token "
          "TOKEN (or set WMBT_KV_AUTH_TOKENS), or listen on 127.0.0.1 / [::1] only "
          "(docs/daemon.md, \"Authentication\")" +
          (c.auth_token.empty() ? ""
                                : ". WMBT_KV_AUTH_TOKEN is set, but it is the token a client "
                                  "sends; the daemon's are WMBT_KV_AUTH_TOKENS"));
    }
  }
  // The run directory, named as the setting an operator fixes (binding the control socket in a
  // missing one would only say ENOENT). Its group and path are checked by the bind that follows,
  // still before the store opens.
  if (!s.shm_prefix.empty()) {
    const std::string run_dir = c.run_dir.empty() ? shm::DefaultRunDir() : c.run_dir;
    struct stat st;
    if (::stat(run_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Status::InvalidArgument("WMBT_KV_RUN_DIR " + run_dir +
                                     " is not a directory: create it, or point --run-dir at one");
    }
  }
  if (s.tcp.empty() && s.shm_prefix.empty()) {
    return Status::InvalidArgument(
        "nothing to serve: pass --tcp HOST:PORT (WMBT_KV_TCP) and/or --prefix NAME "
        "(WMBT_KV_DAEMON_SHM_PREFIX)");
  }
  return Status::Ok();
}

}  // namespace

struct Daemon::Impl {
  DaemonOptions options;
  Clock* clock = nullptr;
  LogSink log;
  std::function<void(const std::string&)> announce;

  // Guards the components against /metrics while Shutdown takes them down.
  mutable std::shared_mutex components_mu;
  std::shared_ptr<Store> store;
  std::unique_ptr<Service> service;
  std::unique_ptr<tcp::TcpServer> tcp;
  // Bound before the store opens (a port in use is found at once), served from StartTcp on.
  std::shared_ptr<tcp::BoundListeners> tcp_bound;
  std::shared_ptr<shm::Listener> shm_bound;  // likewise, for StartShm
  std::unique_ptr<ShmServer> shm;
  // The store's payload arenas, handed to `shm` (docs/shm.md, "Zero-copy gets"); null = none.
  std::shared_ptr<shm::PayloadArenas> arenas;
  std::unique_ptr<HttpEndpoint> http;  // outlives the others: /healthz answers to the end

  mutable std::mutex state_mu;
  std::string not_ready = "starting";  // "" = ready
  bool shut_down = false;
  std::vector<std::string> tcp_addresses;
  uint64_t start_unix_seconds = 0;

  void SetNotReady(std::string why) {
    std::lock_guard<std::mutex> g(state_mu);
    not_ready = std::move(why);
  }
  std::string NotReadyReason() const {
    std::lock_guard<std::mutex> g(state_mu);
    return not_ready;
  }
  // What /readyz says: the start or the stop under way, else an L2 whose requests all fail
  // (Store::L2Reachability). REQUIRES: components_mu held (shared is enough).
  std::string ReadinessLocked(const Status& l2) const {
    std::string why = NotReadyReason();
    if (!why.empty() || !store || l2.ok()) return why;
    return "L2 " + store->DescribeL2() + " does not answer: " + l2.message();
  }
  std::string ReadinessLocked() const {
    return ReadinessLocked(store ? store->L2Reachability() : Status::Ok());
  }
  std::string Readiness() const {
    std::shared_lock lock(components_mu);
    return ReadinessLocked();
  }
  // Empty while the store takes writes (or is not open yet); else why it cannot until restarted.
  std::string UnhealthyReason() const {
    std::shared_lock lock(components_mu);
    if (!store) return "";
    const Status s = store->Health();
    if (s.ok()) return "";
    // A restart on a disk that is still full fails: say so, to whoever restarts on this answer.
    return std::string("the store cannot take writes until wombatkvd restarts") +
           (s.code() == Code::kResourceExhausted
                ? " on a disk with free space (on a full disk the restart fails and nothing "
                  "is served)"
                : "") +
           ": " + s.ToString();
  }

  Status StartTcp();
  // The shared-memory server (docs/shm.md), with `*service` and options.settings.shm_prefix,
  // kept next to `tcp`; StopShm stops it within Shutdown's bound, while the TCP server stops on
  // another thread, and returns how many requests it abandoned.
  // Where the shared-memory server listens (prefix, run directory, group).
  ShmServerOptions ShmOptions() const;
  Status StartShm();
  size_t StopShm(uint64_t timeout_ms);
};

Status Daemon::Impl::StartTcp() {
  if (options.settings.tcp.empty()) return Status::Ok();
  tcp::TcpServerOptions o;
  o.listen = options.settings.tcp;
  o.bound = std::move(tcp_bound);
  o.max_frame_bytes = options.settings.max_frame_bytes;
  o.idle_timeout_ms = options.settings.idle_timeout_ms;
  o.worker_threads = options.settings.workers;
  o.spin = options.settings.tcp_poll;
  // A lone client's saves and publishes run on the event loop when they wait only for the local
  // disk (about a millisecond); never with S3, whose requests may take seconds, and never the
  // requests that may walk a whole L2 (refresh, usage, listings) or read it (a get missing the
  // cache) (docs/daemon.md, "Inline requests").
  if (options.config.s3_bucket.empty()) {
    o.inline_when_alone = [](const wire::Message& request) {
      const auto op = static_cast<wire::Op>(request.op);
      return op == wire::Op::kSaveChain || op == wire::Op::kPutBlocks ||
             op == wire::Op::kPublishChain;
    };
    // Other clients' small saves run on the loop too, with no worker hand-off: the journal's
    // sync thread syncs and answers them (docs/daemon.md, "Saves on the loop"). Larger ones
    // would hold the loop for their hashing and copies, and their blobs are written as files.
    o.async_on_loop = SaveRunsOnLoop;
  }
  o.clock = clock;
  LogSink sink = log;
  o.log = [sink](LogLevel level, const std::string& line) { sink(level, "tcp: " + line); };
  std::string fewer;
  o.connections_max = ConnectionsWithinDescriptors(o.connections_max, &fewer);
  if (!fewer.empty()) sink(LogLevel::kWarn, "tcp: " + fewer);
  Service* svc = service.get();
  // Lookups and gets from RAM are answered on the event loop: no worker hand-off.
  o.immediate = [svc](Session& session, const wire::Message& request) {
    return svc->HandleIfImmediate(session, request);
  };
  auto server = tcp::TcpServer::Start(
      [svc](Session& session, const wire::Message& request, Service::Respond respond) {
        svc->HandleAsync(session, request, std::move(respond));
      },
      std::move(o));
  if (!server.ok()) return server.status();
  tcp = std::move(server).value();
  for (const tcp::ListenerInfo& l : tcp->listeners()) {
    tcp_addresses.push_back(l.address);
    announce("listening on tcp://" + l.address +
             (l.loopback ? " (loopback: no token needed)" : " (auth token required)"));
  }
  return Status::Ok();
}

ShmServerOptions Daemon::Impl::ShmOptions() const {
  ShmServerOptions o;
  o.prefix = options.settings.shm_prefix;
  o.run_dir = options.config.run_dir;  // WMBT_KV_RUN_DIR: the clients read the same setting
  o.group = options.config.shm_group;
  return o;
}

Status Daemon::Impl::StartShm() {
  if (options.settings.shm_prefix.empty()) return Status::Ok();
  ShmServerOptions o = ShmOptions();
  o.bound = std::move(shm_bound);
  o.layout.request_area_bytes = options.settings.shm_data_bytes;
  o.layout.response_area_bytes = options.settings.shm_data_bytes;
  o.workers = options.settings.workers;
  o.clock = clock;
  o.arenas = arenas;
  LogSink sink = log;
  o.log = [sink](LogLevel level, const std::string& line) { sink(level, "shm: " + line); };
  auto server = std::make_unique<ShmServer>(*service, std::move(o));
  WMBT_RETURN_IF_ERROR(server->Start());
  const std::string& group = options.config.shm_group;
  announce("listening for shared-memory clients on " + server->socket_path() +
           " (WMBT_KV_REMOTE_PREFIX=" + options.settings.shm_prefix +
           (group.empty() ? ", same user only)" : ", same user and group " + group + ")"));
  shm = std::move(server);
  return Status::Ok();
}

size_t Daemon::Impl::StopShm(uint64_t timeout_ms) {
  if (!shm) return 0;
  return shm->Shutdown(timeout_ms * 1000);
}

Daemon::Daemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Daemon>> Daemon::Start(DaemonOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  Impl& d = *impl;
  d.clock = d.options.clock ? d.options.clock : RealClock();
  d.start_unix_seconds = d.clock->WallMicros() / 1'000'000;
  d.log = d.options.log ? d.options.log : StderrLogSink(d.options.config.log_level, "wombatkvd");
  d.announce = d.options.announce ? d.options.announce : [](const std::string& line) {
    std::fprintf(stdout, "wombatkvd: %s\n", line.c_str());
    std::fflush(stdout);
  };
  WMBT_RETURN_IF_ERROR(CheckListeners(d.options.settings, d.options.config));
  if (!d.options.settings.tcp.empty()) {
    auto bound = tcp::BoundListeners::Bind(d.options.settings.tcp);
    if (!bound.ok()) return bound.status();
    d.tcp_bound = std::move(bound).value();
  }
  if (!d.options.settings.shm_prefix.empty()) {
    auto bound = ShmServer::Bind(d.ShmOptions());
    if (!bound.ok()) return bound.status();
    d.shm_bound = std::move(bound).value();
  }
  auto daemon = std::unique_ptr<Daemon>(new Daemon(std::move(impl)));

  if (!d.options.settings.http.empty()) {
    HttpEndpointCallbacks cb;
    cb.not_ready_reason = [&d] { return d.Readiness(); };
    cb.unhealthy_reason = [&d] { return d.UnhealthyReason(); };
    Daemon* self = daemon.get();
    cb.metrics = [self] { return self->Metrics(); };
    auto http = HttpEndpoint::Start(d.options.settings.http, std::move(cb));
    if (!http.ok()) return http.status();
    d.http = std::move(http).value();
    d.announce("http on " + d.http->url() + " (/healthz /readyz /metrics)");
    auto hp = tcp::ParseHostPort(d.options.settings.http, /*allow_port_zero=*/true);
    auto resolved = hp.ok() ? tcp::Resolve(*hp, /*passive=*/true) : hp.status();
    if (resolved.ok() && !tcp::IsLoopback(resolved->front())) {
      d.log(LogLevel::kWarn, "http on " + d.options.settings.http +
                                 " is not loopback: anyone who reaches it reads /healthz, /readyz "
                                 "and /metrics (counters; no blocks, no tokens), with no token "
                                 "asked");
    }
  }

  d.SetNotReady("opening the store (reaching L2, then loading chains from L1 and L2)");
  const uint64_t open_start = d.clock->NowMicros();
  StoreSetup setup;
  setup.log = d.log;
  setup.program = "wombatkvd";
  if (!d.options.settings.shm_prefix.empty() && d.options.settings.shm_arena_bytes > 0) {
    shm::PayloadArenasOptions ao;
    ao.arena_bytes = d.options.settings.shm_arena_bytes;
    ao.arenas_max = d.options.settings.shm_arenas;
    auto arenas = shm::PayloadArenas::Create(ao);
    if (!arenas.ok()) return arenas.status();
    d.arenas = *arenas;
    setup.payload_allocator = d.arenas;
  }
  // A get must fit one response frame (its body limit, whatever requests are limited to):
  // refused before it reads (and pins) anything, rather than read whole and then refused by the
  // framing. The margin covers the frame's fields and payload table.
  setup.get_bytes_max = (1u << 30) - (16u << 20);  // wombatkv.h states this bound
  auto store = OpenStoreFromConfig(d.options.config, setup);
  if (!store.ok()) return store.status();
  {
    std::unique_lock lock(d.components_mu);
    d.store = std::move(store).value();
    ServiceOptions so;
    so.tokens = d.options.settings.tokens;
    so.server_version = d.options.version;
    so.log = d.log;
    so.max_frame_bytes = d.options.settings.max_frame_bytes;
    d.service = std::make_unique<Service>(*d.store, *d.clock, std::move(so));
  }
  const StoreStats stats = d.store->Stats();
  d.announce("store: data dir " + d.options.config.data_dir + ", L2 " + d.store->DescribeL2() +
             "; loaded " + std::to_string(stats.l0_chains) + " chains, " +
             std::to_string(stats.l0_blocks) + " blocks (L0 " + HumanBytes(stats.l0_memory_bytes) +
             ") in " + std::to_string((d.clock->NowMicros() - open_start) / 1000) +
             " ms; RAM cache " + HumanBytes(d.options.config.cache_bytes) + "; " +
             std::to_string(d.options.settings.tokens.size()) + " auth token(s)");

  {
    std::unique_lock lock(d.components_mu);
    Status st = d.StartTcp();
    if (st.ok()) st = d.StartShm();
    if (!st.ok()) {
      lock.unlock();
      daemon->Shutdown();
      return st;
    }
  }
  d.SetNotReady("");
  d.announce("ready");
  return daemon;
}

Daemon::~Daemon() {
  if (impl_ && !impl_->shut_down) Shutdown();
}

size_t Daemon::Shutdown() {
  Impl& d = *impl_;
  if (d.shut_down) return 0;
  d.shut_down = true;
  d.SetNotReady("shutting down");
  const uint64_t timeout = d.options.settings.shutdown_timeout_ms;
  size_t abandoned = 0;
  // Both transports at once: each stops taking requests first, so neither keeps serving while
  // the other drains, and the stop takes one bound, not two.
  size_t shm_abandoned = 0;
  std::thread shm_stop =
      StartNamedThread("wmbt-shm-stop", [&] { shm_abandoned = d.StopShm(timeout); });
  if (d.tcp) abandoned += d.tcp->Shutdown(timeout);
  shm_stop.join();
  abandoned += shm_abandoned;
  if (abandoned > 0) {
    d.announce(std::to_string(abandoned) + " request(s) did not finish within " +
               std::to_string(timeout) +
               " ms; leaving the store open for an immediate exit (acknowledged publishes are "
               "durable)");
    // Deliberately leaked: worker threads are still inside Service/Store calls.
    std::unique_lock lock(d.components_mu);
    (void)d.tcp.release();
    (void)d.shm.release();
    (void)d.service.release();
    (void)new std::shared_ptr<Store>(std::move(d.store));
    return abandoned;
  }
  std::shared_ptr<Store> store;
  {
    std::unique_lock lock(d.components_mu);
    d.tcp.reset();
    d.shm.reset();
    d.service.reset();
    store = std::move(d.store);
  }
  if (store) {
    // The store's destructor waits for its background uploads: the flush, which can take long
    // against S3. Outside the lock, so that /healthz, /readyz and /metrics answer meanwhile.
    d.announce("closing the store (its uploads finish first)");
    store.reset();
    d.announce("store closed");
  }
  d.http.reset();
  return 0;
}

bool Daemon::ready() const { return impl_->Readiness().empty(); }

std::string Daemon::Metrics() const {
  const Impl& d = *impl_;
  std::shared_lock lock(d.components_mu);
  MetricsSources src;
  const std::string& v = d.options.version;  // "wombatkvd 1.5.0"
  src.version = v.substr(v.rfind(' ') + 1);
  src.start_unix_seconds = d.start_unix_seconds;
  // One answer of L2's reachability for both, so that they agree.
  const Status l2 = d.store ? d.store->L2Reachability() : Status::Ok();
  src.ready = d.ReadinessLocked(l2).empty();
  if (d.store) {
    src.healthy = d.store->Health().ok();
    src.l2_up = l2.ok();
  }
  StoreStats stats;
  if (d.store) {
    stats = d.store->Stats();
    src.store = &stats;
  }
  if (d.service) {  // the transports served
    if (!d.options.settings.tcp.empty()) {
      src.service[static_cast<size_t>(Transport::kTcp)] = &d.service->metrics(Transport::kTcp);
    }
    if (!d.options.settings.shm_prefix.empty()) {
      src.service[static_cast<size_t>(Transport::kShm)] = &d.service->metrics(Transport::kShm);
    }
  }
  if (d.tcp) src.tcp = &d.tcp->stats();
  ShmServerStats shm;
  if (d.shm) {
    shm = d.shm->Stats();
    src.shm = &shm;
  }
  return RenderMetrics(src);
}

std::vector<std::string> Daemon::tcp_addresses() const { return impl_->tcp_addresses; }

std::string Daemon::http_url() const { return impl_->http ? impl_->http->url() : ""; }

}  // namespace wombatkv
