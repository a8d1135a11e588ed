// Runs one operation in a loop on N concurrent clients — separate processes (as engines are) or
// threads — for a fixed time, and merges their counts and latency histograms.
#pragma once

#include <cstdint>
#include <functional>

#include "latency_histogram.h"

namespace wombatkv::bench {

// One client's loop body: performs one operation and returns the payload bytes it moved.
using Op = std::function<uint64_t(uint64_t iteration)>;
// Runs inside the client (after fork, for processes): connects, prepares, returns its Op.
using OpFactory = std::function<Op(int client)>;

struct WorkerResult {
  uint64_t ops = 0;
  uint64_t bytes = 0;
  double seconds = 0;  // the slowest client's measured time
  LatencyHistogram latency;
  // CPU seconds the clients used while they ran (thread clients: the whole process, the store's
  // own threads included); a caller adds its server's.
  double cpu_seconds = 0;
  double server_cpu_seconds = 0;  // the part of cpu_seconds the caller's server used
  double ops_per_second() const { return seconds > 0 ? double(ops) / seconds : 0; }
  // CPU per operation, the figure least moved by other tenants of a shared machine.
  double cpu_us_per_op() const { return ops > 0 ? cpu_seconds * 1e6 / double(ops) : 0; }
  double server_cpu_us_per_op() const {
    return ops > 0 ? server_cpu_seconds * 1e6 / double(ops) : 0;
  }
  double bytes_per_second() const { return seconds > 0 ? double(bytes) / seconds : 0; }
};

// Whole reads and writes on a pipe. ReadAll dies if the writer went away first (a child process
// that failed); WriteAll, in a child, exits it if the reader did.
void ReadAll(int fd, void* p, size_t n);
void WriteAll(int fd, const void* p, size_t n);

// Starts `clients` clients (processes when `processes`, else threads), waits until all are ready,
// lets them run for `seconds`, and merges their results. Dies if a client process fails.
WorkerResult RunClients(int clients, bool processes, double seconds, const OpFactory& factory);

}  // namespace wombatkv::bench
