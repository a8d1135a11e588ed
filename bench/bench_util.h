// The generic harness shared by the benchmarks (store_bench, s3_bench): option parsing, timing
// and CPU counters, medians and formatting, deterministic payloads and keys, repeated rate
// samples and the result table. See store_bench.cc for how the measurements use them.
#pragma once

#include <sys/types.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wombatkv/buffer.h"
#include "wombatkv/types.h"

namespace wombatkv::bench {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// Errors: Die prints "<program>: <what>" to stderr and exits 1.

// The name Die prints before a message (default "bench").
void SetProgramName(const char* name);

[[noreturn]] void Die(const std::string& what);
[[noreturn]] void Die(const std::string& what, const Status& s);
template <typename T>
T Check(Result<T> r, const std::string& what) {
  if (!r.ok()) Die(what, r.status());
  return std::move(r).value();
}
void Check(const Status& s, const std::string& what);

// ---------------------------------------------------------------------------------------------
// Option parsing

// "256K", "2M", "100": a positive count, K/k and M/m meaning KiB and MiB.
bool ParseSize(std::string_view s, size_t* out);
// Comma-separated non-empty items.
std::vector<std::string> Split(std::string_view s);

// ---------------------------------------------------------------------------------------------
// Timing and counters

double WallSeconds();  // wombatkv::RealClock()
double ThreadCpuSeconds();
// CPU seconds (user + system) used so far by every thread of this process.
double ProcessCpuSeconds();
// The same for another process of this user (every thread; from /proc, in clock ticks: 10 ms
// here); NaN if it cannot be read (the process is gone).
double ProcessCpuSeconds(pid_t pid);
uint64_t MinorFaults();

// Marks the start of the run; SinceStart() is the wall time since then.
void MarkStart();
double SinceStart();

// ---------------------------------------------------------------------------------------------
// Statistics and formatting

double Median(std::vector<double> v);  // NAN for none
std::string SizeName(size_t bytes);    // "2 MiB", "256 KiB", "100 B"
std::string Fmt(const char* fmt, double v);
std::string GBps(double bytes_per_second);

// ---------------------------------------------------------------------------------------------
// Deterministic data

uint64_t SplitMix(uint64_t& state);
void FillRandom(uint8_t* p, size_t n, uint64_t seed);
// A distinct key for (stream, index): no two calls with different arguments collide.
BlockKey MakeKey(uint64_t stream, uint64_t index);

// Distinct source payloads of one size, filled with random bytes once. Fresh(serial, stream)
// stamps both into the first 16 bytes of slot `serial`, so every (serial, stream) names a payload
// never seen before (nothing dedups) while the pool stays a fixed size.
class PayloadPool {
 public:
  PayloadPool(size_t block, uint64_t pool_bytes);
  size_t count() const { return count_; }
  size_t block() const { return block_; }
  uint8_t* slot(size_t i) { return bytes_.get() + (i % count_) * block_; }
  ByteView Fresh(uint64_t serial, uint64_t stream);

 private:
  size_t block_;
  size_t count_;
  std::unique_ptr<uint8_t[]> bytes_;
};

// ---------------------------------------------------------------------------------------------
// Results

struct Row {
  std::string metric;
  std::string value;
  std::string baseline;  // "BLAKE3 2.61 GB/s", or "" for none
  double ratio = NAN;    // value / baseline, when there is one
  std::string target;    // "≥ 0.8×", "≤ 5 µs", or "" for a diagnostic
  int met = -1;          // 1 met, 0 not met, -1 no target
};

// A Markdown table of `rows`, columns padded to the widest cell.
void PrintTable(const std::vector<Row>& rows);

// "\n== title  [t=N s]" with N = SinceStart().
void Section(const std::string& title);

// ---------------------------------------------------------------------------------------------
// Repeated rate samples

// What a repeated measurement needs from a benchmark's options.
struct HarnessOptions {
  int reps = 3;
  double min_seconds = 0.3;  // per CPU-bound repetition
};

struct Rate {
  double wall = NAN;  // bytes per wall second
  double cpu = NAN;   // bytes per CPU second of the calling thread
};

// One repetition: calls `body` (which processes `bytes_per_call`) until min_seconds have passed.
Rate Sample(const HarnessOptions& o, uint64_t bytes_per_call, const std::function<void()>& body);

struct Samples {
  std::vector<double> wall, cpu;
  void Add(Rate r) {
    wall.push_back(r.wall);
    cpu.push_back(r.cpu);
  }
  double median() const { return Median(wall); }
};

void PrintRate(const std::string& label, const Samples& s);

// `reps` samples of `body` after one warm-up call, printed; returns them.
Samples Measure(const std::string& label, const HarnessOptions& o, uint64_t bytes_per_call,
                const std::function<void()>& body, const std::function<void()>& before = nullptr);

}  // namespace wombatkv::bench
