// L0 lookup latency (SPEC §3: < 1 µs per block step). One index of ~1M blocks in 64-block chains,
// a quarter of which share a prefix with an earlier chain, built from a fixed seed. Every
// iteration looks up a different chain (pre-drawn order), so steps touch cold parts of the index
// as an engine's lookups would. Counters: per_step = CPU seconds per block step ("30n" = 30 ns);
// bytes_per_block = MemoryBytes() / block_count().
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "index/radix_index.h"

namespace wombatkv {
namespace {

constexpr size_t kBlocksTarget = 1'000'000;
constexpr size_t kChainBlocks = 64;
constexpr size_t kOrder = 1 << 16;  // pre-drawn chain order, cycled
constexpr uint64_t kSeed = 20240601;

struct Fixture {
  RadixIndex index;
  Fingerprint fp;
  size_t chains = 0;
  std::vector<BlockKey> chain_keys;  // chain c is [c * kChainBlocks, (c + 1) * kChainBlocks)
  std::vector<uint32_t> order;       // random chain indices, drawn once
  // Per iteration i: the root key of chain order[i], and a 4-key probe starting with an absent
  // key. Laid out in iteration order so the benchmark measures the index, not fetching its input.
  std::vector<BlockKey> roots;
  std::vector<BlockKey> misses;

  std::span<const BlockKey> Chain(size_t c) const {
    return {chain_keys.data() + c * kChainBlocks, kChainBlocks};
  }

  Fixture() {
    std::mt19937_64 rng(kSeed);
    auto random_key = [&] {
      BlockKey k;
      for (int w = 0; w < 4; ++w) {
        uint64_t v = rng();
        std::memcpy(k.data() + 8 * w, &v, 8);
      }
      return k;
    };
    fp.bytes[0] = 7;
    std::vector<ChainEntry> entries(kChainBlocks);
    while (index.block_count() < kBlocksTarget) {
      size_t shared = 0;
      if (chains > 0 && rng() % 4 == 0) {  // continue a random earlier chain's prefix
        std::span<const BlockKey> base = Chain(rng() % chains);
        shared = 8 + rng() % 40;
        for (size_t i = 0; i < shared; ++i) entries[i].key = base[i];
      }
      for (size_t i = shared; i < kChainBlocks; ++i) entries[i].key = random_key();
      for (auto& e : entries) {
        uint64_t v = rng();
        std::memcpy(e.hash.data(), &v, 8);
        e.length = 256 << 10;
      }
      ChainInfo info{entries.back().key, 1, rng(), entries.back().key,
                     static_cast<uint32_t>(kChainBlocks)};
      index.PutChain("bench", fp, info, entries);
      for (const auto& e : entries) chain_keys.push_back(e.key);
      ++chains;
    }
    for (size_t i = 0; i < kOrder; ++i) {
      order.push_back(static_cast<uint32_t>(rng() % chains));
      roots.push_back(Chain(order.back())[0]);
      misses.push_back(random_key());
      for (size_t j = 1; j < 4; ++j) misses.push_back(Chain(order.back())[j]);
    }
  }
};

Fixture& Shared() {
  static Fixture* f = new Fixture();  // built once, outlives every benchmark
  return *f;
}

void SetCounters(benchmark::State& state, const Fixture& f, size_t steps_per_call) {
  // Seconds (CPU) per block step, printed with an SI prefix: "30n" is 30 ns.
  state.counters["per_step"] = benchmark::Counter(
      static_cast<double>(steps_per_call),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["bytes_per_block"] =
      static_cast<double>(f.index.MemoryBytes()) / static_cast<double>(f.index.block_count());
  state.counters["blocks"] = static_cast<double>(f.index.block_count());
}

void BM_LookupPrefix64(benchmark::State& state) {
  Fixture& f = Shared();
  size_t i = 0;
  size_t matched = 0;
  for (auto _ : state) {
    matched += f.index.LookupPrefix("bench", f.fp, f.Chain(f.order[i++ & (kOrder - 1)]));
    benchmark::DoNotOptimize(matched);
  }
  if (matched != state.iterations() * kChainBlocks) state.SkipWithError("a chain did not match");
  SetCounters(state, f, kChainBlocks);
}
BENCHMARK(BM_LookupPrefix64);

void BM_Resolve64(benchmark::State& state) {
  Fixture& f = Shared();
  std::vector<BlockMeta> metas(kChainBlocks);
  size_t i = 0;
  size_t matched = 0;
  for (auto _ : state) {
    matched += f.index.Resolve("bench", f.fp, f.Chain(f.order[i++ & (kOrder - 1)]), metas);
    benchmark::DoNotOptimize(metas.data());
  }
  if (matched != state.iterations() * kChainBlocks) state.SkipWithError("a chain did not match");
  SetCounters(state, f, kChainBlocks);
}
BENCHMARK(BM_Resolve64);

// A get of the second half of a 64-block chain: its first key is no root's child, so Resolve
// finds it by key and walks its 32 ancestors to learn its scope, then follows 31 children.
void BM_ResolveSecondHalf(benchmark::State& state) {
  Fixture& f = Shared();
  constexpr size_t kHalf = kChainBlocks / 2;
  std::vector<BlockMeta> metas(kHalf);
  size_t i = 0;
  size_t matched = 0;
  for (auto _ : state) {
    matched += f.index.Resolve("bench", f.fp,
                               f.Chain(f.order[i++ & (kOrder - 1)]).subspan(kHalf, kHalf), metas);
    benchmark::DoNotOptimize(metas.data());
  }
  if (matched != state.iterations() * kHalf) state.SkipWithError("a half chain did not match");
  SetCounters(state, f, kHalf);
}
BENCHMARK(BM_ResolveSecondHalf);

// A get whose first key sits under many parents (an engine whose keys do not encode their prefix:
// one block reached after 1,024 different 62-block prefixes, each followed by its own key). Every
// candidate start is tried; the benchmark shows what each costs. Its own small index.
void BM_ResolveKeyUnderManyParents(benchmark::State& state) {
  constexpr size_t kParents = 1024;
  constexpr size_t kDepth = 64;
  static const auto* setup = [] {
    struct Setup {
      RadixIndex index;
      Fingerprint fp;
      BlockKey shared;
      std::vector<BlockKey> tips;
    };
    auto* s = new Setup();
    auto key = [](uint64_t a, uint64_t b) {
      BlockKey k;
      std::memcpy(k.data(), &a, 8);
      std::memcpy(k.data() + 8, &b, 8);
      k.data()[16] = 1;
      return k;
    };
    s->shared = key(0, 0);
    std::vector<ChainEntry> entries(kDepth);
    for (uint64_t c = 0; c < kParents; ++c) {
      for (uint64_t i = 0; i < kDepth; ++i) entries[i] = {key(c + 1, i), {}, 1024};
      entries[kDepth - 2].key = s->shared;
      s->index.PutChain("bench", s->fp, {entries.back().key, 1, c, entries.back().key, kDepth},
                        entries);
      s->tips.push_back(entries.back().key);
    }
    return s;
  }();
  std::vector<BlockMeta> metas(2);
  size_t i = 0;
  size_t matched = 0;
  for (auto _ : state) {
    const BlockKey keys[2] = {setup->shared, setup->tips[(i++ * 7919) % kParents]};
    matched += setup->index.Resolve("bench", setup->fp, keys, metas);
    benchmark::DoNotOptimize(metas.data());
  }
  if (matched != static_cast<size_t>(state.iterations()) * 2) state.SkipWithError("a pair missed");
  state.counters["candidates"] = kParents;
}
BENCHMARK(BM_ResolveKeyUnderManyParents);

void BM_LookupPrefix1(benchmark::State& state) {
  Fixture& f = Shared();
  size_t i = 0;
  size_t matched = 0;
  for (auto _ : state) {
    matched += f.index.LookupPrefix("bench", f.fp, {&f.roots[i++ & (kOrder - 1)], 1});
    benchmark::DoNotOptimize(matched);
  }
  if (matched != static_cast<size_t>(state.iterations())) state.SkipWithError("a root missed");
  SetCounters(state, f, 1);
}
BENCHMARK(BM_LookupPrefix1);

// The first key is in no chain: one hash, one probe run, no node matches.
void BM_LookupMiss(benchmark::State& state) {
  Fixture& f = Shared();
  size_t i = 0;
  size_t matched = 0;
  for (auto _ : state) {
    matched += f.index.LookupPrefix("bench", f.fp, {&f.misses[4 * (i++ & (kOrder - 1))], 4});
    benchmark::DoNotOptimize(matched);
  }
  if (matched != 0) state.SkipWithError("an absent key matched");
  SetCounters(state, f, 1);
}
BENCHMARK(BM_LookupMiss);

// The limit to read the numbers against: 64 dependent loads chasing a random cycle through an
// array as large as the index's nodes (one cache miss each, nothing to overlap). A lookup step
// needs two dependent loads (slot, node); prefetching the next keys' slots is what lets it beat
// this.
void BM_DependentLoadReference(benchmark::State& state) {
  const Fixture& f = Shared();
  constexpr size_t kWords = size_t{1} << 24;  // 64 MiB
  static const std::vector<uint32_t>* cycle = [] {
    auto* next = new std::vector<uint32_t>(kWords);
    std::vector<uint32_t> perm(kWords);
    for (size_t i = 0; i < kWords; ++i) perm[i] = static_cast<uint32_t>(i);
    std::mt19937_64 rng(kSeed);
    for (size_t i = kWords - 1; i > 0; --i) std::swap(perm[i], perm[rng() % (i + 1)]);
    for (size_t i = 0; i < kWords; ++i) (*next)[perm[i]] = perm[(i + 1) % kWords];
    return next;
  }();
  uint32_t at = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < kChainBlocks; ++i) at = (*cycle)[at];
    benchmark::DoNotOptimize(at);
  }
  SetCounters(state, f, kChainBlocks);
}
BENCHMARK(BM_DependentLoadReference);

// The store's use sweep (docs/capacity.md): once a second it reads one slice of the chains
// (RadixIndex::ForEachChainUse), under L0's shared lock. Here over 1M one-block chains, a chain
// per turn: the per-chain worst case. Until session 23 a slice's sweep visited every chain.
void BM_UseSweepOneSlice(benchmark::State& state) {
  static const RadixIndex* index = [] {
    auto* idx = new RadixIndex(kSeed);
    std::mt19937_64 rng(kSeed + 1);
    Fingerprint fp;
    for (size_t i = 0; i < kBlocksTarget; ++i) {
      ChainEntry e;
      for (int w = 0; w < 4; ++w) {
        uint64_t v = rng();
        std::memcpy(e.key.data() + 8 * w, &v, 8);
      }
      e.length = 1024;
      idx->PutChain("bench", fp, ChainInfo{e.key, 1, rng(), e.key, 1}, {&e, 1},
                    /*used=*/1);
    }
    return idx;
  }();
  size_t slice = 0, visited = 0;
  for (auto _ : state) {
    index->ForEachChainUse(slice++ % RadixIndex::kChainSlices,
                           [&](std::string_view, const Fingerprint&, const ChainId&,
                               uint32_t used) { visited += used; });
  }
  benchmark::DoNotOptimize(visited);
  if (visited == 0) state.SkipWithError("the sweep visited no chain");
  state.counters["chains"] = static_cast<double>(index->chain_count());
  state.counters["visited_per_sweep"] =
      static_cast<double>(visited) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_UseSweepOneSlice)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace wombatkv

BENCHMARK_MAIN();
