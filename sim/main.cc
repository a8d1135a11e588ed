// wombatkv-sim: runs the deterministic simulator.
//
//   wombatkv-sim --seed N [--steps S] [--verbose]     one run; prints its trace digest
//   wombatkv-sim --seeds A..B [--steps S]             a sweep; stops at the first failure (on a
//                                                     terminal, a progress line on stderr)
//   --no-l2-invariants   judge only what the API returns (no L2 checks at head writes)
//   --tail N             events printed on failure (default 50)
//   --capacity           the evict-gc scenario on every seed (else on about 40% of them)
//   --no-fault NAME      switch a fault class off after the seed drew it (repeatable)
//   --hosts N            run with N hosts instead of the seed's number
//   --list-lag US        the eventual-listing fault on every seed, with this lag
//   --buggify PERCENT    buggify (workload and store points) on every seed, at this rate
//   --auto-refresh MS    every host refreshes from L2 by itself every MS ms, on every seed
//   --no-shrink          on failure, print the failing run only (not the shrunk one)
//   --seed-digests       a sweep prints each seed's digest (to find where two builds differ)
//   --break publish-order  test only: PublishChain skips its durability barrier (G3 broken)
//   --gc-ignores-list-lag  stores are not told the listing lag (orphan GC's R3 re-check unsafe)
//
// Exit status: 0 all seeds passed, 1 a guarantee was violated, 2 usage.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sim/shrink.h"
#include "sim/simulator.h"
#include "tools/wombatkv/progress_line.h"
#include "wombatkv/env.h"

namespace {

int Usage() {
  std::string faults;
  for (const std::string& n : wombatkv::sim::FaultClassNames()) faults += " " + n;
  std::fprintf(
      stderr,
      "usage: wombatkv-sim (--seed N | --seeds A..B) [options]\n"
      "  --steps S            safety-phase steps (default 300)\n"
      "  --verbose            print every event as it happens\n"
      "  --tail N             events printed on failure without shrinking (default 50)\n"
      "  --no-l2-invariants   judge only what the API returns\n"
      "  --capacity           the evict-gc scenario on every seed\n"
      "  --no-fault NAME      switch a fault class off after the seed drew it;\n"
      "                       repeatable. NAME is one of:%s\n"
      "  --hosts N            N hosts (1..8) instead of the seed's number\n"
      "  --list-lag US        listings lag writes by up to US microseconds on every seed\n"
      "  --buggify PERCENT    buggify on every seed at this rate (1..100): the workload's\n"
      "                       hostile choices and the store's points (docs/testing.md)\n"
      "  --auto-refresh MS    every host refreshes from L2 by itself every MS ms of\n"
      "                       simulated time, on every seed (else on about 30%% of seeds)\n"
      "  --no-shrink          on failure, do not search for the shortest failing run\n"
      "  --seed-digests       a sweep prints each seed's digest, one line each\n"
      "  --break publish-order  test only: publish heads before their blocks are\n"
      "                       durable (G3 broken on purpose; the simulator must catch it)\n"
      "  --gc-ignores-list-lag  stores are not told the bucket's listing lag\n"
      "                       (StoreOptions::l2_list_lag_us = 0)\n"
      "On failure the run is shrunk (fewer steps, fault classes off, fewer hosts) while\n"
      "it still fails the same guarantee; the shrunk command line and its whole trace\n"
      "are printed. A sweep on a terminal shows its progress on stderr.\n"
      "Exit status: 0 pass, 1 violation, 2 usage.\n",
      faults.c_str());
  return 2;
}

bool ParseU64(const char* s, uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  *out = std::strtoull(s, &end, 10);
  return errno == 0 && end != s && *end == '\0';
}

}  // namespace

using wombatkv::sim::SimOptions;

int main(int argc, char** argv) {
  uint64_t first = 0, last = 0;
  bool have_seed = false;
  bool shrink = true;
  bool seed_digests = false;
  wombatkv::sim::SimOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--help" || a == "-h") {
      Usage();
      return 0;
    }
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
    } else if (a == "--no-fault" && has_value) {
      const std::string name = argv[++i];
      const auto& names = wombatkv::sim::FaultClassNames();
      if (std::find(names.begin(), names.end(), name) == names.end()) return Usage();
      options.overrides.off.insert(name);
    } else if (a == "--hosts" && has_value) {
      uint64_t n;
      if (!ParseU64(argv[++i], &n) || n < 1 || n > 8) return Usage();
      options.overrides.hosts = static_cast<int>(n);
    } else if (a == "--list-lag" && has_value) {
      if (!ParseU64(argv[++i], &options.overrides.list_lag_us)) return Usage();
    } else if (a == "--buggify" && has_value) {
      uint64_t percent;
      if (!ParseU64(argv[++i], &percent) || percent < 1 || percent > 100) return Usage();
      options.overrides.buggify_percent = static_cast<uint32_t>(percent);
    } else if (a == "--auto-refresh" && has_value) {
      if (!ParseU64(argv[++i], &options.overrides.refresh_interval_ms) ||
          options.overrides.refresh_interval_ms == 0) {
        return Usage();
      }
    } else if (a == "--no-shrink") {
      shrink = false;
    } else if (a == "--seed-digests") {
      seed_digests = true;
    } else if (a == "--break" && has_value) {
      if (std::string(argv[++i]) != "publish-order") return Usage();
      options.break_publish_order = true;
    } else if (a == "--gc-ignores-list-lag") {
      options.gc_ignores_list_lag = true;
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
  // A sweep on a terminal shows where it is (a seed takes from milliseconds to minutes).
  wombatkv::Clock* const clock = wombatkv::RealClock();
  wombatkv::cli::ProgressLine progress(clock, stderr, first != last && ::isatty(2));
  const uint64_t started_us = clock->NowMicros();
  for (uint64_t seed = first;; ++seed) {
    progress.Update(std::to_string(seed - first) + " of " + std::to_string(last - first + 1) +
                    " seeds passed (" + std::to_string(events) + " events, " +
                    std::to_string(crashes) + " crashes, " +
                    std::to_string((clock->NowMicros() - started_us) / 1000000) +
                    " s); running seed " + std::to_string(seed));
    const auto r = wombatkv::sim::Simulate(seed, options);
    events += r.events;
    crashes += r.crashes;
    acks += r.acked_publishes;
    if (!r.ok) progress.Finish();
    sweep_digest = (sweep_digest ^ r.digest) * 1099511628211ull;
    if (seed_digests) std::printf("seed %" PRIu64 " digest %016" PRIx64 "\n", seed, r.digest);
    if (!r.ok) {
      std::printf("FAIL seed %" PRIu64 ": %s violated: %s\n", seed, r.guarantee.c_str(),
                  r.failure.c_str());
      std::printf("config: %s\n", r.config.c_str());
      std::printf("last %zu events:\n", r.tail.size());
      for (const auto& e : r.tail) std::printf("  %s\n", e.c_str());
      SimOptions one = options;
      std::printf("reproduce: %s --verbose\n", wombatkv::sim::CommandLine(seed, one).c_str());
      if (!shrink) return 1;
      const auto s = wombatkv::sim::ShrinkFailure(seed, options, r);
      std::printf("\nshrunk (%" PRIu64 " runs): %" PRIu64 " events -> %" PRIu64
                  " events, %s violated: %s\n",
                  s.runs, r.events, s.result.events, s.result.guarantee.c_str(),
                  s.result.failure.c_str());
      std::printf("shrunk config: %s\n", s.result.config.c_str());
      std::printf("shrunk trace (%zu events):\n", s.result.tail.size());
      for (const auto& e : s.result.tail) std::printf("  %s\n", e.c_str());
      std::printf("shrunk reproduce: %s --verbose\n",
                  wombatkv::sim::CommandLine(seed, s.options).c_str());
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
  progress.Finish();
  if (first != last) {
    std::printf("seeds %" PRIu64 "..%" PRIu64 " ok: %" PRIu64 " seeds, %" PRIu64 " events, %" PRIu64
                " crashes, %" PRIu64 " acked publishes\ndigest %016" PRIx64 "\n",
                first, last, last - first + 1, events, crashes, acks, sweep_digest);
  }
  return 0;
}
