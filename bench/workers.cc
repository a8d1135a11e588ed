#include "workers.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "bench_util.h"

namespace wombatkv::bench {

void ReadAll(int fd, void* p, size_t n) {
  auto* b = static_cast<uint8_t*>(p);
  while (n) {
    ssize_t r = ::read(fd, b, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) Die("a benchmark client process died (see its message above)");
    b += r;
    n -= static_cast<size_t>(r);
  }
}

void WriteAll(int fd, const void* p, size_t n) {
  auto* b = static_cast<const uint8_t*>(p);
  while (n) {
    ssize_t w = ::write(fd, b, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) ::_exit(3);
    b += w;
    n -= static_cast<size_t>(w);
  }
}

namespace {

struct ClientReport {
  uint64_t ops = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  double cpu_seconds = 0;  // of a client process (0 for a thread: its caller counts the process)
  LatencyHistogram latency;
};

ClientReport Loop(const Op& op, double seconds) {
  ClientReport r;
  const double start = WallSeconds();
  double now = start;
  const double end = start + seconds;
  while (now < end) {
    const double t0 = now;
    r.bytes += op(r.ops);
    now = WallSeconds();
    r.latency.Record(static_cast<uint64_t>((now - t0) * 1e9));
    r.ops++;
  }
  r.seconds = now - start;
  return r;
}

WorkerResult Merge(const std::vector<ClientReport>& reports) {
  WorkerResult out;
  for (const auto& r : reports) {
    out.ops += r.ops;
    out.bytes += r.bytes;
    out.seconds = std::max(out.seconds, r.seconds);
    out.cpu_seconds += r.cpu_seconds;
    out.latency.Merge(r.latency);
  }
  return out;
}

WorkerResult RunThreads(int clients, double seconds, const OpFactory& factory) {
  std::vector<ClientReport> reports(static_cast<size_t>(clients));
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      Op op = factory(c);
      ready++;
      while (!go.load()) std::this_thread::yield();
      reports[static_cast<size_t>(c)] = Loop(op, seconds);
    });
  }
  while (ready.load() < clients) std::this_thread::yield();
  const double cpu0 = ProcessCpuSeconds();
  go = true;
  for (auto& t : threads) t.join();
  WorkerResult out = Merge(reports);
  out.cpu_seconds = ProcessCpuSeconds() - cpu0;
  return out;
}

WorkerResult RunProcesses(int clients, double seconds, const OpFactory& factory) {
  int ready_pipe[2], go_pipe[2];
  if (::pipe(ready_pipe) || ::pipe(go_pipe)) Die("pipe");
  std::fflush(nullptr);
  std::vector<pid_t> pids;
  std::vector<int> result_fds;
  for (int c = 0; c < clients; ++c) {
    int result_pipe[2];
    if (::pipe(result_pipe)) Die("pipe");
    pid_t pid = ::fork();
    if (pid < 0) Die("fork");
    if (pid == 0) {
      ::close(result_pipe[0]);
      Op op = factory(c);
      char b = 'r';
      WriteAll(ready_pipe[1], &b, 1);
      ReadAll(go_pipe[0], &b, 1);
      const double cpu0 = ProcessCpuSeconds();
      ClientReport r = Loop(op, seconds);
      r.cpu_seconds = ProcessCpuSeconds() - cpu0;
      WriteAll(result_pipe[1], &r, sizeof r);
      std::fflush(nullptr);
      ::_exit(0);
    }
    ::close(result_pipe[1]);
    pids.push_back(pid);
    result_fds.push_back(result_pipe[0]);
  }
  ::close(ready_pipe[1]);
  for (int c = 0; c < clients; ++c) {
    char b;
    ReadAll(ready_pipe[0], &b, 1);
  }
  std::vector<char> go(static_cast<size_t>(clients), 'g');
  WriteAll(go_pipe[1], go.data(), go.size());
  std::vector<ClientReport> reports(static_cast<size_t>(clients));
  for (int c = 0; c < clients; ++c) {
    ReadAll(result_fds[static_cast<size_t>(c)], &reports[static_cast<size_t>(c)],
            sizeof(ClientReport));
    ::close(result_fds[static_cast<size_t>(c)]);
  }
  for (pid_t p : pids) ::waitpid(p, nullptr, 0);
  ::close(ready_pipe[0]);
  ::close(go_pipe[0]);
  ::close(go_pipe[1]);
  return Merge(reports);
}

}  // namespace

WorkerResult RunClients(int clients, bool processes, double seconds, const OpFactory& factory) {
  return processes ? RunProcesses(clients, seconds, factory)
                   : RunThreads(clients, seconds, factory);
}

}  // namespace wombatkv::bench
