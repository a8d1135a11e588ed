#include "bench_util.h"

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "wombatkv/env.h"

namespace wombatkv::bench {
namespace {

const char* g_program = "bench";
double g_start_seconds = 0;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Errors

void SetProgramName(const char* name) { g_program = name; }

void Die(const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", g_program, what.c_str());
  std::exit(1);
}
void Die(const std::string& what, const Status& s) { Die(what + ": " + s.ToString()); }
void Check(const Status& s, const std::string& what) {
  if (!s.ok()) Die(what, s);
}

// ---------------------------------------------------------------------------------------------
// Option parsing

bool ParseSize(std::string_view s, size_t* out) {
  if (s.empty()) return false;
  uint64_t mult = 1;
  char last = s.back();
  if (last == 'K' || last == 'k') mult = kKiB;
  if (last == 'M' || last == 'm') mult = kMiB;
  if (mult != 1) s.remove_suffix(1);
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = static_cast<size_t>(v * mult);
  return *out > 0;
}

std::vector<std::string> Split(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string_view::npos) comma = s.size();
    if (comma > start) out.emplace_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Timing and counters

double WallSeconds() { return static_cast<double>(RealClock()->NowMicros()) * 1e-6; }

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double ProcessCpuSeconds() {
  rusage ru;
  ::getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

double ProcessCpuSeconds(pid_t pid) {
  std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return NAN;
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  // Fields 14 and 15 (utime, stime), counted after the command name, which is in parentheses
  // and may itself hold spaces.
  const char* p = std::strrchr(buf, ')');
  unsigned long long utime = 0, stime = 0;
  if (!p || std::sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                        &stime) != 2) {
    return NAN;
  }
  return double(utime + stime) / double(::sysconf(_SC_CLK_TCK));
}

uint64_t MinorFaults() {
  rusage ru;
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_minflt);
}

void MarkStart() { g_start_seconds = WallSeconds(); }
double SinceStart() { return WallSeconds() - g_start_seconds; }

// ---------------------------------------------------------------------------------------------
// Statistics and formatting

double Median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string SizeName(size_t bytes) {
  if (bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
  if (bytes % kKiB == 0) return std::to_string(bytes / kKiB) + " KiB";
  return std::to_string(bytes) + " B";
}

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string GBps(double bytes_per_second) { return Fmt("%.2f GB/s", bytes_per_second / 1e9); }

// ---------------------------------------------------------------------------------------------
// Deterministic data

uint64_t SplitMix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void FillRandom(uint8_t* p, size_t n, uint64_t seed) {
  uint64_t state = seed;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = SplitMix(state);
    std::memcpy(p + i, &v, 8);
  }
  for (; i < n; ++i) p[i] = static_cast<uint8_t>(SplitMix(state));
}

BlockKey MakeKey(uint64_t stream, uint64_t index) {
  BlockKey k;
  uint64_t state = (stream << 40) ^ index ^ 0x5eed5eed00000000ull;
  for (int w = 0; w < 4; ++w) {
    uint64_t v = SplitMix(state);
    std::memcpy(k.data() + 8 * w, &v, 8);
  }
  if (k.IsZero()) k.data()[0] = 1;
  return k;
}

PayloadPool::PayloadPool(size_t block, uint64_t pool_bytes) : block_(block) {
  count_ = std::max<size_t>(pool_bytes / block, 2);
  bytes_.reset(new uint8_t[count_ * block_]);
  FillRandom(bytes_.get(), count_ * block_, block * 7919);
}

ByteView PayloadPool::Fresh(uint64_t serial, uint64_t stream) {
  uint8_t* p = slot(serial);
  if (block_ >= 16) {
    std::memcpy(p, &serial, 8);
    std::memcpy(p + 8, &stream, 8);
  }
  return {p, block_};
}

// ---------------------------------------------------------------------------------------------
// Results

void PrintTable(const std::vector<Row>& rows) {
  auto ratio_text = [](const Row& r) {
    return std::isnan(r.ratio) ? std::string("") : Fmt("%.2f×", r.ratio);
  };
  auto met_text = [](const Row& r) {
    return r.met < 0 ? std::string("") : r.met ? std::string("yes") : std::string("NO");
  };
  // Widths in characters: "µ", "≥", "×" are multi-byte in UTF-8.
  auto len = [](const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xc0) != 0x80;
    return n;
  };
  size_t w[6] = {6, 5, 8, 5, 6, 4};
  for (const Row& r : rows) {
    w[0] = std::max(w[0], len(r.metric));
    w[1] = std::max(w[1], len(r.value));
    w[2] = std::max(w[2], len(r.baseline));
    w[3] = std::max(w[3], len(ratio_text(r)));
    w[4] = std::max(w[4], len(r.target));
  }
  auto line = [&](std::vector<std::string> cells) {
    std::string out = "|";
    for (size_t i = 0; i < cells.size(); ++i) {
      out += " " + cells[i] + std::string(w[i] - len(cells[i]) + 1, ' ') + "|";
    }
    std::printf("%s\n", out.c_str());
  };
  line({"metric", "value", "baseline", "ratio", "target", "met?"});
  std::string sep = "|";
  for (size_t x : w) sep += std::string(x + 2, '-') + "|";
  std::printf("%s\n", sep.c_str());
  for (const Row& r : rows) {
    line({r.metric, r.value, r.baseline, ratio_text(r), r.target, met_text(r)});
  }
}

void Section(const std::string& title) {
  std::printf("\n== %s  [t=%.0f s]\n", title.c_str(), SinceStart());
  std::fflush(stdout);
}

// ---------------------------------------------------------------------------------------------
// Repeated rate samples

Rate Sample(const HarnessOptions& o, uint64_t bytes_per_call, const std::function<void()>& body) {
  uint64_t calls = 0;
  const double w0 = WallSeconds(), c0 = ThreadCpuSeconds();
  double w1;
  do {
    body();
    ++calls;
    w1 = WallSeconds();
  } while (w1 - w0 < o.min_seconds);
  const double c1 = ThreadCpuSeconds();
  const double bytes = static_cast<double>(calls * bytes_per_call);
  return {bytes / (w1 - w0), bytes / (c1 - c0)};
}

void PrintRate(const std::string& label, const Samples& s) {
  std::printf("  %-46s %7.2f GB/s", label.c_str(), s.median() / 1e9);
  if (!s.cpu.empty() && !std::isnan(s.cpu[0])) {
    std::printf("  (%.2f per CPU second)", Median(s.cpu) / 1e9);
  }
  std::printf("  reps:");
  for (double x : s.wall) std::printf(" %.2f", x / 1e9);
  std::printf("\n");
}

Samples Measure(const std::string& label, const HarnessOptions& o, uint64_t bytes_per_call,
                const std::function<void()>& body, const std::function<void()>& before) {
  Samples s;
  body();
  for (int r = 0; r < o.reps; ++r) {
    if (before) before();
    s.Add(Sample(o, bytes_per_call, body));
  }
  PrintRate(label, s);
  return s;
}

}  // namespace wombatkv::bench
