// shm_bench: the same-host shared-memory transport end to end (issue 4 targets), printed next to
// the baselines measured in the same run (SPEC §11):
//
//   get 1 KiB     ops/s, 1/4/8 client processes, one block per GetBlocks   target ≥ 250,000 at 8
//   lookup        ops/s, 1/4/8 client processes, LookupPrefix of --lookup-keys keys of a published
//                 chain                                                     target ≥ 250,000 at 8
//   get 2 MiB     GB/s of payload lent (zero copy) by GetBlocks of one 2 MiB block, 1/4/8 clients
//                                                   vs memcpy of 2 MiB     target ≥ 0.5×
//
// plus the embedded store doing the same gets in one thread, for context. This process is the
// daemon: a real Store (RocksDB L1 + local-directory L2 under --dir) behind a Service and a
// ShmServer; the clients are separate processes (this binary re-executed with --client), each a
// RemoteStore over ConnectShm calling in a loop for --seconds, with per-call latencies (p50/p99).
// The blocks are in the daemon's RAM cache: this measures the transport, not the disk. Nothing is
// asserted.
//
// Usage: shm_bench [--seconds=X] [--clients=1,4,8] [--only=get,lookup,get2m] [--dir=PATH]
//                  [--lookup-keys=N] [--workers=N]
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "client/remote_store.h"
#include "daemon/service.h"
#include "transport/shm/shm_channel.h"
#include "transport/shm/shm_server.h"
#include "wombatkv/env.h"
#include "wombatkv/store.h"

namespace wombatkv {
namespace {

using namespace bench;

constexpr char kNs[] = "bench";
// GetBlocks resolves a path from a root, so the blocks a get picks at random are each a
// one-block chain; lookups walk one long chain from its root.
constexpr size_t kSmallBlocks = 256;  // 1 KiB roots
constexpr size_t kLargeBlocks = 8;    // 2 MiB roots
constexpr size_t kLookupChainBlocks = 256;

struct Options {
  double seconds = 2.0;
  std::vector<size_t> clients = {1, 4, 8};
  std::vector<std::string> only = {"get", "lookup", "get2m"};
  std::string dir;
  size_t lookup_keys = 32;
  size_t workers = 16;
};

bool ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      const size_t n = std::strlen(name);
      return a.compare(0, n, name) == 0 ? a.c_str() + n : nullptr;
    };
    if (const char* v = value("--seconds=")) {
      o->seconds = std::atof(v);
    } else if (const char* v = value("--clients=")) {
      o->clients.clear();
      for (const auto& s : Split(v)) o->clients.push_back(std::stoul(s));
    } else if (const char* v = value("--only=")) {
      o->only = Split(v);
    } else if (const char* v = value("--dir=")) {
      o->dir = v;
    } else if (const char* v = value("--lookup-keys=")) {
      o->lookup_keys = std::stoul(v);
    } else if (const char* v = value("--workers=")) {
      o->workers = std::stoul(v);
    } else {
      std::fprintf(stderr,
                   "usage: shm_bench [--seconds=X] [--clients=1,4,8] [--only=get,lookup,get2m] "
                   "[--dir=PATH] [--lookup-keys=N] [--workers=N]\n");
      return false;
    }
  }
  if (o->lookup_keys == 0 || o->lookup_keys > kLookupChainBlocks) {
    std::fprintf(stderr, "--lookup-keys must be 1..%zu\n", kLookupChainBlocks);
    return false;
  }
  return o->seconds > 0 && !o->clients.empty();
}

BlockKey SmallKey(size_t i) { return MakeKey(1, i); }
BlockKey LargeKey(size_t i) { return MakeKey(2, i); }
BlockKey ChainKey(size_t i) { return MakeKey(3, i); }

// ---------------------------------------------------------------------------------------------
// Client process: shm_bench --client RUN_DIR PREFIX OP SECONDS LOOKUP_KEYS SEED
// Prints "ready", waits for a line on stdin, runs, prints "OPS BYTES SECONDS P50_US P99_US CPU_S".

int ClientMain(char** argv) {
  SetProgramName("shm_bench client");
  ShmClientOptions co;
  co.run_dir = argv[2];
  co.prefix = argv[3];
  const std::string op = argv[4];
  const double seconds = std::atof(argv[5]);
  const size_t lookup_keys = std::stoul(argv[6]);
  uint64_t seed = std::stoull(argv[7]);
  RemoteStore store(Check(ConnectShm(co), "attach"));
  const Fingerprint fp{};

  std::vector<BlockKey> chain(kLookupChainBlocks);
  for (size_t i = 0; i < kLookupChainBlocks; ++i) chain[i] = ChainKey(i);
  uint64_t bytes = 0;
  auto one = [&] {
    if (op == "lookup") {
      // A prefix from the root: every key matches.
      auto n = store.LookupPrefix(kNs, fp, std::span(chain).subspan(0, lookup_keys));
      if (!n.ok() || *n != lookup_keys) Die("lookup", n.status());
    } else {
      const bool large = op == "get2m";
      const BlockKey key = large ? LargeKey(SplitMix(seed) % kLargeBlocks)
                                 : SmallKey(SplitMix(seed) % kSmallBlocks);
      auto b = store.GetBlocks(kNs, fp, std::span(&key, 1));
      if (!b.ok() || b->size() != 1) Die("get", b.status());
      bytes += b->payload(0).size();
    }  // the borrow is released here, as wmbt_kv_release_borrow would
  };
  for (int i = 0; i < 1000; ++i) one();  // warm up: pages of the data areas faulted in
  bytes = 0;
  std::printf("ready\n");
  std::fflush(stdout);
  char go[8];
  if (!std::fgets(go, sizeof go, stdin)) return 1;

  std::vector<uint32_t> latencies;
  latencies.reserve(1 << 22);
  Clock* clock = RealClock();
  const double cpu_start = ProcessCpuSeconds();
  const uint64_t start = clock->NowMicros();
  const uint64_t end = start + static_cast<uint64_t>(seconds * 1e6);
  uint64_t ops = 0, now = start;
  while (now < end) {
    one();
    const uint64_t t = clock->NowMicros();
    if (latencies.size() < latencies.capacity()) latencies.push_back(static_cast<uint32_t>(t - now));
    now = t;
    ops++;
  }
  const double cpu = ProcessCpuSeconds() - cpu_start;
  std::sort(latencies.begin(), latencies.end());
  auto pct = [&](double p) {
    return latencies.empty() ? 0u : latencies[std::min(latencies.size() - 1,
                                                       size_t(p * double(latencies.size())))];
  };
  std::printf("%" PRIu64 " %" PRIu64 " %.6f %u %u %.6f\n", ops, bytes,
              double(now - start) * 1e-6, pct(0.5), pct(0.99), cpu);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Parent: the daemon and the driver.

struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;
  int in = -1;
};

Child Spawn(const std::vector<std::string>& args) {
  int to_child[2], from_child[2];
  if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0) Die("pipe");
  std::vector<std::string> a = {"/proc/self/exe"};
  a.insert(a.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  Child c;
  c.pid = ::fork();
  if (c.pid == 0) {
    ::dup2(to_child[0], 0);
    ::dup2(from_child[1], 1);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  c.in = to_child[1];
  c.out = ::fdopen(from_child[0], "r");
  return c;
}

std::string ReadLine(FILE* f) {
  char buf[256];
  if (!std::fgets(buf, sizeof buf, f)) return "";
  std::string s(buf);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

struct RunResult {
  double ops_per_s = 0;
  double bytes_per_s = 0;
  double p50_us = 0, p99_us = 0;  // medians over the clients
  // CPU time per call (user + system): of the client processes and of the daemon. On a shared
  // machine these say what the figures would be on idle cores: cores / (client + daemon).
  double client_cpu_us = 0, daemon_cpu_us = 0;
};

class Bench {
 public:
  explicit Bench(Options o) : o_(std::move(o)) {}

  int Run() {
    MarkStart();
    if (o_.dir.empty()) o_.dir = "/var/tmp/wombatkv-shm-bench." + std::to_string(::getpid());
    std::printf("shm_bench: the shared-memory transport (issue 4 targets)\n");
    std::printf("machine: %u cpus; load average at start: %s", std::thread::hardware_concurrency(),
                LoadAverage().c_str());
    std::printf("%.1f s per measurement, clients %s, lookup of %zu keys, %zu daemon workers\n",
                o_.seconds, ClientsText().c_str(), o_.lookup_keys, o_.workers);

    StoreOptions so;
    so.data_dir = o_.dir + "/store";
    so.cache_bytes_max = 256ull << 20;
    so.log = [](LogLevel level, const std::string& m) {
      if (level >= LogLevel::kWarn) std::fprintf(stderr, "  [store] %s\n", m.c_str());
    };
    auto store = Check(Store::Open(so), "open store");
    Fill(*store);
    Service service(*store, *RealClock(), ServiceOptions{});
    ShmServerOptions sso;
    sso.prefix = "bench-" + std::to_string(::getpid());
    sso.run_dir = o_.dir;
    sso.workers = o_.workers;
    ShmServer server(service, sso);
    Check(server.Start(), "start shm server");

    std::vector<Row> rows;
    const double memcpy_bps = MemcpyRate();
    const double embedded_get = EmbeddedGetRate(*store);
    rows.push_back({"memcpy 2 MiB, 1 thread", GBps(memcpy_bps), "", NAN, "", -1});
    rows.push_back({"embedded get 1 KiB, 1 thread", Fmt("%.0f ops/s", embedded_get), "", NAN, "",
                    -1});
    for (const std::string& op : o_.only) {
      for (size_t n : o_.clients) {
        Section(op + " with " + std::to_string(n) + " client process(es)");
        RunResult r = RunClients(sso, op, n);
        const unsigned cores = std::thread::hardware_concurrency();
        std::printf("  %.0f ops/s, %s, p50 %.0f µs, p99 %.0f µs; CPU per call: clients %.2f µs, "
                    "daemon %.2f µs (=> %.0f ops/s on %u idle cores)\n",
                    r.ops_per_s, GBps(r.bytes_per_s).c_str(), r.p50_us, r.p99_us, r.client_cpu_us,
                    r.daemon_cpu_us, cores * 1e6 / (r.client_cpu_us + r.daemon_cpu_us), cores);
        const std::string who = std::to_string(n) + " client" + (n > 1 ? "s" : "");
        const std::string lat = Fmt(" (p50 %.0f µs", r.p50_us) + Fmt(", p99 %.0f µs)", r.p99_us);
        if (op == "get2m") {
          const double ratio = r.bytes_per_s / memcpy_bps;
          rows.push_back({"shm get 2 MiB, " + who, GBps(r.bytes_per_s) + lat,
                          "memcpy " + GBps(memcpy_bps), ratio, "≥ 0.5×", ratio >= 0.5});
        } else {
          const std::string name = op == "get" ? "shm get 1 KiB, " : "shm lookup " +
                                                   std::to_string(o_.lookup_keys) + " keys, ";
          const bool target = n == 8;
          rows.push_back({name + who, Fmt("%.0f ops/s", r.ops_per_s) + lat, "", NAN,
                          target ? "≥ 250,000 ops/s" : "",
                          target ? int(r.ops_per_s >= 250000) : -1});
        }
      }
    }
    const ShmServerStats st = server.Stats();
    std::printf("\nserver: %" PRIu64 " requests, %" PRIu64 " doorbells (wake-ups the clients asked "
                "for), %" PRIu64 " protocol errors\n\n",
                st.requests, st.doorbells, st.protocol_errors);
    PrintTable(rows);
    server.Stop();
    store.reset();
    (void)!std::system(("rm -rf '" + o_.dir + "'").c_str());
    return 0;
  }

 private:
  static std::string LoadAverage() {
    FILE* f = std::fopen("/proc/loadavg", "r");
    if (!f) return "?\n";
    std::string s = ReadLine(f) + "\n";
    std::fclose(f);
    return s;
  }
  std::string ClientsText() const {
    std::string s;
    for (size_t n : o_.clients) s += (s.empty() ? "" : ",") + std::to_string(n);
    return s;
  }

  void Fill(Store& store) {
    const Fingerprint fp{};
    // `n` blocks of `size` bytes: as one chain, or as n one-block chains (roots).
    auto publish = [&](size_t n, size_t size, BlockKey (*key)(size_t), bool roots) {
      std::vector<std::shared_ptr<Buffer>> bufs;
      std::vector<BlockPut> puts(n);
      for (size_t i = 0; i < n; ++i) {
        bufs.push_back(Buffer::Allocate(size));
        FillRandom(bufs.back()->data(), size, i * 31 + size);
        puts[i].key = key(i);
        puts[i].parent = i && !roots ? key(i - 1) : BlockKey{};
        puts[i].payload = bufs.back()->view();
      }
      Check(store.PutBlocks(kNs, fp, puts), "put");
      for (size_t i = roots ? 0 : n - 1; i < n; ++i)
        Check(store.PublishChain(kNs, fp, ChainId(key(i)), key(i)), "publish");
    };
    publish(kSmallBlocks, 1024, SmallKey, true);
    publish(kLargeBlocks, 2 * kMiB, LargeKey, true);
    publish(kLookupChainBlocks, 1024, ChainKey, false);
  }

  double MemcpyRate() {
    std::vector<uint8_t> a(2 * kMiB, 1), b(2 * kMiB, 2);
    HarnessOptions ho;
    Samples s = Measure("memcpy 2 MiB", ho, 2 * kMiB, [&] {
      std::memcpy(b.data(), a.data(), a.size());
      asm volatile("" ::"r"(b.data()) : "memory");
    });
    return s.median();
  }

  double EmbeddedGetRate(Store& store) {
    const Fingerprint fp{};
    uint64_t seed = 1;
    HarnessOptions ho;
    Samples s = Measure("embedded get 1 KiB", ho, 1, [&] {
      const BlockKey key = SmallKey(SplitMix(seed) % kSmallBlocks);
      auto b = store.GetBlocks(kNs, fp, std::span(&key, 1));
      if (!b.ok()) Die("embedded get", b.status());
    });
    return s.median();
  }

  RunResult RunClients(const ShmServerOptions& sso, const std::string& op, size_t n) {
    std::vector<Child> children;
    for (size_t i = 0; i < n; ++i) {
      children.push_back(Spawn({"--client", sso.run_dir, sso.prefix, op,
                                Fmt("%.3f", o_.seconds), std::to_string(o_.lookup_keys),
                                std::to_string(1000 + i)}));
    }
    for (auto& c : children) {
      const std::string line = ReadLine(c.out);
      if (line != "ready") Die("client did not start: '" + line + "'");
    }
    const double daemon_cpu_start = ProcessCpuSeconds();
    for (auto& c : children) (void)!::write(c.in, "go\n", 3);  // all start together
    RunResult r;
    double client_cpu = 0;
    uint64_t total_ops = 0;
    std::vector<double> p50, p99;
    for (auto& c : children) {
      const std::string line = ReadLine(c.out);
      unsigned long long ops = 0, bytes = 0;
      double secs = 0;
      unsigned a = 0, b = 0;
      double cpu = 0;
      if (std::sscanf(line.c_str(), "%llu %llu %lf %u %u %lf", &ops, &bytes, &secs, &a, &b,
                      &cpu) != 6)
        Die("bad client report: '" + line + "'");
      client_cpu += cpu;
      total_ops += ops;
      r.ops_per_s += double(ops) / secs;
      r.bytes_per_s += double(bytes) / secs;
      p50.push_back(a);
      p99.push_back(b);
      ::close(c.in);
      std::fclose(c.out);
      int status = 0;
      ::waitpid(c.pid, &status, 0);
    }
    const double daemon_cpu = ProcessCpuSeconds() - daemon_cpu_start;
    r.p50_us = Median(p50);
    r.p99_us = Median(p99);
    if (total_ops) {
      r.client_cpu_us = client_cpu * 1e6 / double(total_ops);
      r.daemon_cpu_us = daemon_cpu * 1e6 / double(total_ops);
    }
    return r;
  }

  Options o_;
};

}  // namespace
}  // namespace wombatkv

int main(int argc, char** argv) {
  if (argc == 8 && std::strcmp(argv[1], "--client") == 0) return wombatkv::ClientMain(argv);
  wombatkv::bench::SetProgramName("shm_bench");
  wombatkv::Options o;
  if (!wombatkv::ParseArgs(argc, argv, &o)) return 2;
  return wombatkv::Bench(std::move(o)).Run();
}
