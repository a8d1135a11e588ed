// wombatkv-sim: runs the deterministic simulator.
//
//   wombatkv-sim --seed N [--steps S] [--verbose]     one run; prints its trace digest
//   wombatkv-sim --seeds A..B [--steps S]             a sweep; stops at the first failure
//   --no-l2-invariants   judge only what the API returns (no L2 checks at head writes)
//   --tail N             events printed on failure (default 50)
//   --capacity           the evict-gc scenario on every seed (else on about 40% of them)
//
// Exit status: 0 all seeds passed, 1 a guarantee was violated, 2 usage.
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sim/simulator.h"

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: wombatkv-sim (--seed N | --seeds A..B) [--steps S] [--verbose] "
               "[--no-l2-invariants] [--capacity] [--tail N]\n");
  return 2;
}

bool ParseU64(const char* s, uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  *out = std::strtoull(s, &end, 10);
  return errno == 0 && end != s && *end == '\0';
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t first = 0, last = 0;
  bool have_seed = false;
  wombatkv::sim::SimOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--seed" && has_value) {
      if (!ParseU64(argv[++i], &first)) return Usage();
      last = first;
      have_seed = true;
    } else if (a == "--seeds" && has_value) {
      const std::string v = argv[++i];
      const size_t dots = v.find("..");
      if (dots == std::string::npos || !ParseU64(v.substr(0, dots).c_str(), &first) ||
          !ParseU64(v.substr(dots + 2).c_str(), &last) || last < first) {
        return Usage();
      }
      have_seed = true;
    } else if (a == "--steps" && has_value) {
      if (!ParseU64(argv[++i], &options.steps)) return Usage();
    } else if (a == "--tail" && has_value) {
      uint64_t n;
      if (!ParseU64(argv[++i], &n)) return Usage();
      options.tail_events = n;
    } else if (a == "--capacity") {
      options.capacity = true;
    } else if (a == "--verbose") {
      options.verbose = true;
    } else if (a == "--no-l2-invariants") {
      options.l2_invariants = false;
    } else {
      return Usage();
    }
  }
  if (!have_seed) return Usage();

  uint64_t events = 0, crashes = 0, acks = 0;
  uint64_t sweep_digest = 14695981039346656037ull;  // FNV-1a over every seed's digest
  for (uint64_t seed = first;; ++seed) {
    const auto r = wombatkv::sim::Simulate(seed, options);
    events += r.events;
    crashes += r.crashes;
    acks += r.acked_publishes;
    sweep_digest = (sweep_digest ^ r.digest) * 1099511628211ull;
    if (!r.ok) {
      std::printf("FAIL seed %" PRIu64 ": %s violated: %s\n", seed, r.guarantee.c_str(),
                  r.failure.c_str());
      std::printf("config: %s\n", r.config.c_str());
      std::printf("last %zu events:\n", r.tail.size());
      for (const auto& e : r.tail) std::printf("  %s\n", e.c_str());
      std::printf("reproduce: wombatkv-sim --seed %" PRIu64 " --steps %" PRIu64 " --verbose\n",
                  seed, options.steps);
      return 1;
    }
    if (first == last) {
      std::printf("seed %" PRIu64 " ok: %" PRIu64 " steps, %" PRIu64 " events, %" PRIu64
                  " crashes, %" PRIu64 " acked publishes\nconfig: %s\ndigest %016" PRIx64 "\n",
                  seed, r.steps_run, r.events, r.crashes, r.acked_publishes, r.config.c_str(),
                  r.digest);
    }
    if (seed == last) break;
  }
  if (first != last) {
    std::printf("seeds %" PRIu64 "..%" PRIu64 " ok: %" PRIu64 " seeds, %" PRIu64 " events, %" PRIu64
                " crashes, %" PRIu64 " acked publishes\ndigest %016" PRIx64 "\n",
                first, last, last - first + 1, events, crashes, acks, sweep_digest);
  }
  return 0;
}
