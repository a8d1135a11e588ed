// The cost of one payload arena allocation (src/transport/shm/region_allocator.h) once the arena
// has been recycled for a while, as wombatkvd's arenas are when the cache evicts. A --arena-mib
// arena holds payloads of mixed sizes (--large-percent of them 2 MiB, the rest 64 KiB, drawn from
// a fixed seed); when a new one does not fit, payloads are freed until it does, chosen at random
// (the cache evicts the least recently used, and gets keep re-using old payloads, so evictions
// come in no address order). After --warm-up
// allocations, --steps more are timed: ns per step (its frees included), the free extents the
// arena is split into, and the tree nodes each allocation looked at.
//
//   build/bench/region_allocator_bench [--arena-mib N] [--large-percent N] [--warm-up N]
//                                      [--steps N]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "transport/shm/region_allocator.h"

namespace wombatkv::shm {
namespace {

struct Options {
  uint64_t arena_mib = 1024;
  unsigned large_percent = 10;
  uint64_t warm_up = 200000;
  uint64_t steps = 200000;
};

int Run(const Options& o) {
  RegionAllocator arena(o.arena_mib << 20);
  std::vector<std::pair<uint64_t, uint64_t>> live;
  std::mt19937_64 rng(42);
  uint64_t frees = 0;
  auto step = [&] {
    const uint64_t bytes = rng() % 100 < o.large_percent ? (2 << 20) : (64 << 10);
    for (;;) {
      if (auto offset = arena.Allocate(bytes)) {
        live.emplace_back(*offset, bytes);
        return;
      }
      const size_t victim = rng() % live.size();
      arena.Free(live[victim].first, live[victim].second);
      live[victim] = live.back();
      live.pop_back();
      ++frees;
    }
  };
  for (uint64_t i = 0; i < o.warm_up; ++i) step();
  const uint64_t looks_before = arena.looks(), frees_before = frees;
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < o.steps; ++i) step();
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  std::printf("arena %llu MiB, %u%% 2 MiB payloads, the rest 64 KiB; %llu steps after %llu\n",
              static_cast<unsigned long long>(o.arena_mib), o.large_percent,
              static_cast<unsigned long long>(o.steps), static_cast<unsigned long long>(o.warm_up));
  std::printf(
      "  %.0f ns per step (%.2f frees each), %zu payloads live, %zu free extents at the end,"
      " %.1f tree nodes looked at per allocation\n",
      ns / double(o.steps), double(frees - frees_before) / double(o.steps), live.size(),
      arena.fragments(), double(arena.looks() - looks_before) / double(o.steps));
  return 0;
}

}  // namespace
}  // namespace wombatkv::shm

int main(int argc, char** argv) {
  wombatkv::shm::Options o;
  for (int i = 1; i < argc; ++i) {
    auto value = [&](const char* name) -> const char* {
      if (std::strcmp(argv[i], name) != 0 || i + 1 >= argc) return nullptr;
      return argv[++i];
    };
    if (const char* v = value("--arena-mib")) {
      o.arena_mib = std::strtoull(v, nullptr, 10);
    } else if (const char* v = value("--large-percent")) {
      o.large_percent = static_cast<unsigned>(std::strtoul(v, nullptr, 10));
    } else if (const char* v = value("--warm-up")) {
      o.warm_up = std::strtoull(v, nullptr, 10);
    } else if (const char* v = value("--steps")) {
      o.steps = std::strtoull(v, nullptr, 10);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--arena-mib N] [--large-percent N] [--warm-up N] [--steps N]\n",
                   argv[0]);
      return 2;
    }
  }
  if (o.arena_mib == 0 || o.arena_mib > (1u << 20) || o.large_percent > 100) {
    std::fprintf(stderr, "--arena-mib must be 1..1048576 and --large-percent 0..100\n");
    return 2;
  }
  return wombatkv::shm::Run(o);
}
