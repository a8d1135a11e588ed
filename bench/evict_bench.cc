// Eviction cost at 1M indexed blocks, and LookupPrefix latency while the evictor runs versus
// idle, in one run (issue 6; docs/capacity.md). Reports, never asserts.
//
// Setup: 15,625 chains × 64 blocks (payload length 256 KiB each in the heads, so the accounting
// sees 250 GiB) are written as heads straight into an in-memory L2 and L1, then the store opens
// them (L1 → L0, reconcile with L2). Every chain was published days ago; then the first 32 keys
// of every chain are looked up (a use), so each chain's tail is the cold part. The namespace
// budget is set to 75% of what is referenced: the evictor must trim 25% of the blocks — the
// tails of the least recently used chains, one head rewrite per chain.
//
// Measured in one run, on one thread each:
//   idle      the lookup thread alone: LookupPrefix of the first 32 keys of random chains
//   evicting  the same lookups while another thread runs Evict() passes until under budget
// and the evictor's wall and CPU time per evicted block. L2 and L1 are in memory, so the figures
// are the engine's own cost; a real L2 adds one head write (S3 PUT, or a fsync'd file) per trim.
//
// Usage: evict_bench [--chains N] [--chain-blocks N] [--evict-only] [--l1-dir DIR]
//   --chain-blocks: blocks per chain (64; even: the first half is looked up);
//   --evict-only: no lookup thread, for profiling;
//   --l1-dir: L1 in RocksDB under DIR (emptied first), as a store has it, instead of in memory.
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "bench_disk.h"
#include "bench_util.h"
#include "layout/chain_head.h"
#include "layout/object_keys.h"
#include "meta/meta_store.h"
#include "store/meta_records.h"
#include "wombatkv/store.h"

namespace wombatkv::bench {
namespace {


double Nanos(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::nano>(b - a).count();
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

double RssMiB() {
  std::ifstream f("/proc/self/statm");
  uint64_t pages = 0, rss = 0;
  f >> pages >> rss;
  return static_cast<double>(rss) * 4096 / (1 << 20);
}

struct Latencies {
  std::vector<double> ns;
  uint64_t calls = 0;
};

// Looks up the first half of random chains until `stop`, timing each call.
Latencies LookupLoop(Store& store, const Fingerprint& fp,
                     const std::vector<std::vector<BlockKey>>& keys, std::atomic<bool>& stop,
                     uint64_t calls_max) {
  const size_t lookup_keys = keys[0].size() / 2;
  Latencies out;
  out.ns.reserve(std::min<uint64_t>(calls_max, 4'000'000));
  uint64_t seed = 0x5eed;
  while (!stop.load(std::memory_order_relaxed) && out.calls < calls_max) {
    const auto& k = keys[SplitMix(seed) % keys.size()];
    const auto t0 = std::chrono::steady_clock::now();
    auto r = store.LookupPrefix("bench", fp, {k.data(), lookup_keys});
    const auto t1 = std::chrono::steady_clock::now();
    if (!r.ok() || *r != lookup_keys) Die("a lookup of a kept prefix missed");
    out.ns.push_back(Nanos(t0, t1));
    ++out.calls;
  }
  return out;
}

int Main(int argc, char** argv) {
  SetProgramName("evict_bench");
  size_t chains = 15'625, chain_blocks = 64;
  bool lookups = true, sidecars = false;
  std::string l1_dir;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--chains" && i + 1 < argc) {
      chains = std::stoul(argv[++i]);
    } else if (a == "--chain-blocks" && i + 1 < argc) {
      chain_blocks = std::stoul(argv[++i]);
    } else if (a == "--evict-only") {
      lookups = false;
    } else if (a == "--l1-dir" && i + 1 < argc) {
      l1_dir = argv[++i];
    } else if (a == "--sidecars") {
      sidecars = true;
    } else {
      Die("usage: evict_bench [--chains N] [--chain-blocks N (even, >= 2)] [--evict-only] "
          "[--l1-dir DIR] [--sidecars]");
    }
  }
  if (chains == 0 || chain_blocks < 2 || chain_blocks % 2 != 0) {
    Die("--chains must be positive and --chain-blocks even and at least 2");
  }
  const size_t lookup_keys = chain_blocks / 2;
  MarkStart();
  Section("setup: " + std::to_string(chains) + " chains × " + std::to_string(chain_blocks) +
          " blocks written as heads into " + (l1_dir.empty() ? "in-memory L1" : "L1 in RocksDB") +
          " and in-memory L2");
  std::unique_ptr<ObjectStore> l2 = NewMemObjectStore();
  std::unique_ptr<MetaStore> l1;
  if (l1_dir.empty()) {
    l1 = NewMemMetaStore();
  } else {
    RemoveTreeParallel(l1_dir);
    l1 = Check(OpenRocksDbMetaStore(l1_dir), "opening L1 in " + l1_dir);
  }
  Fingerprint fp;
  fp.bytes.fill(0x42);
  std::vector<std::vector<BlockKey>> keys(chains);
  const uint64_t published_us = RealClock()->WallMicros() - 3ull * 86400 * 1000000;  // 3 days ago
  {
    MetaWriteBatch batch;
    for (size_t c = 0; c < chains; ++c) {
      layout::ChainHead h;
      h.ns = "bench";
      h.fp = fp;
      h.version = 1;
      h.published_us = published_us + c * 1000000;  // one second apart: a strict LRU order
      for (size_t b = 0; b < chain_blocks; ++b) {
        ChainEntry e;
        e.key = MakeKey(c, b);
        const BlockKey hk = MakeKey(c + (1ull << 40), b);
        std::memcpy(e.hash.data(), hk.data(), ContentHash::kSize);
        e.length = 256 << 10;
        h.entries.push_back(e);
        keys[c].push_back(e.key);
      }
      h.chain_id = h.tip();
      const std::string encoded = layout::EncodeChainHead(h);
      auto etag = l2->Put(layout::ChainKey("kv", "bench", fp, h.chain_id), {AsBytes(encoded)},
                          PutOptions{PutMode::kIfAbsent, {}});
      if (!etag.ok()) Die("writing a head", etag.status());
      batch.Put(meta_records::HeadKey("bench", fp, h.chain_id),
                meta_records::EncodeHeadValue(*etag, encoded));
    }
    batch.Put(std::string(meta_records::kFormatKey), std::string(meta_records::kFormatValue));
    Check(l1->Write(batch, true), "writing L1");
  }
  const double rss_before = RssMiB();
  StoreOptions o;
  o.object_store = l2.get();
  o.meta_store = l1.get();
  o.upload_threads = 2;
  o.eviction_interval_ms = 0;  // passes only from the evictor thread below
  o.eviction_heads_per_pass = 64;
  // A budget is set below, once the referenced bytes are known; first open without one.
  double t0 = WallSeconds();
  auto opened = Store::Open(o);
  if (!opened.ok()) Die("opening the store", opened.status());
  std::unique_ptr<Store> store = std::move(opened).value();
  const double open_s = WallSeconds() - t0;
  StoreStats st = store->Stats();
  std::printf("opened: %llu blocks, %llu chains in %.2f s; L0 %.1f B/block; RSS +%.0f MiB "
              "(%.1f B/block: index, ledger, L1/L2 copies of the heads)\n",
              (unsigned long long)st.l0_blocks, (unsigned long long)st.l0_chains, open_s,
              double(st.l0_memory_bytes) / double(st.l0_blocks), RssMiB() - rss_before,
              (RssMiB() - rss_before) * (1 << 20) / double(st.l0_blocks));
  if (sidecars) {  // one 1 KiB sidecar per chain tip, as an engine saving metadata would
    const std::vector<uint8_t> sidecar(1024, 0x5c);
    for (const auto& k : keys) {
      Check(store->PutSidecar("bench", fp, k.back(), {sidecar.data(), sidecar.size()}),
            "putting a sidecar");
    }
    std::printf("put %zu sidecars of 1 KiB (one per chain tip)\n", keys.size());
  }
  const uint64_t referenced = store->Usage("bench", false)[0].referenced_bytes();

  // Reopen with the budget at 75% (the L1 reload is the same work as the first open).
  store.reset();
  o.namespace_bytes_max["bench"] = referenced / 4 * 3;
  opened = Store::Open(o);
  if (!opened.ok()) Die("reopening the store", opened.status());
  store = std::move(opened).value();
  // Use the first half of every chain now: the tails stay as cold as their publish.
  for (const auto& k : keys) (void)store->LookupPrefix("bench", fp, {k.data(), lookup_keys});

  Section("idle: LookupPrefix of " + std::to_string(lookup_keys) + " keys, no eviction");
  std::atomic<bool> stop{false};
  const uint64_t idle_calls = lookups ? 1'000'000 : 0;
  Latencies idle = LookupLoop(*store, fp, keys, stop, idle_calls);

  Section("evicting: the same lookups while Evict() passes trim 25% of the blocks");
  std::atomic<bool> evict_done{false};
  EvictionReport total;
  uint64_t passes = 0;
  double evict_wall = 0, evict_cpu = 0;
  std::thread evictor([&] {
    const double w0 = WallSeconds(), c0 = ThreadCpuSeconds();
    for (;;) {
      auto r = store->Evict();
      if (!r.ok()) Die("eviction pass", r.status());
      ++passes;
      total.chains += r->chains;
      total.blocks += r->blocks;
      total.bytes += r->bytes;
      total.heads_deleted += r->heads_deleted;
      if (!r->work_left) break;
    }
    evict_wall = WallSeconds() - w0;
    evict_cpu = ThreadCpuSeconds() - c0;
    evict_done = true;
  });
  Latencies busy = LookupLoop(*store, fp, keys, evict_done, lookups ? UINT64_MAX : 0);
  evictor.join();

  const auto u = store->Usage("bench", false)[0];
  std::vector<Row> rows;
  auto add = [&](const std::string& metric, const std::string& value, const std::string& note) {
    rows.push_back(Row{metric, value, note, NAN, "", -1});
  };
  add("blocks indexed", std::to_string(st.l0_blocks), "");
  add("blocks evicted (tails of the LRU chains)", std::to_string(total.blocks),
      std::to_string(total.chains) + " heads rewritten, " + std::to_string(total.heads_deleted) +
          " deleted, " + std::to_string(passes) + " passes");
  auto gib = [](uint64_t b) { return Fmt("%.3f GiB", double(b) / double(1ull << 30)); };
  add("referenced after / budget", gib(u.referenced_bytes()) + " / " + gib(u.budget_bytes),
      u.referenced_bytes() <= u.budget_bytes ? "within" : "OVER");
  add("evictor wall per evicted block", Fmt("%.2f µs", evict_wall * 1e6 / double(total.blocks)),
      Fmt("%.2f s in all", evict_wall));
  add("evictor CPU per evicted block", Fmt("%.2f µs", evict_cpu * 1e6 / double(total.blocks)),
      Fmt("%.2f s in all", evict_cpu));
  add("evictor wall per head rewrite", Fmt("%.1f µs", evict_wall * 1e6 / double(total.chains)), "");
  add("lookup p50 idle / evicting",
      Fmt("%.0f ns", Percentile(idle.ns, 0.5)) + " / " + Fmt("%.0f ns", Percentile(busy.ns, 0.5)),
      Fmt("%.2f×", Percentile(busy.ns, 0.5) / Percentile(idle.ns, 0.5)));
  add("lookup p99 idle / evicting",
      Fmt("%.0f ns", Percentile(idle.ns, 0.99)) + " / " + Fmt("%.0f ns", Percentile(busy.ns, 0.99)),
      Fmt("%.2f×", Percentile(busy.ns, 0.99) / Percentile(idle.ns, 0.99)));
  add("lookup p99.9 idle / evicting",
      Fmt("%.0f ns", Percentile(idle.ns, 0.999)) + " / " +
          Fmt("%.0f ns", Percentile(busy.ns, 0.999)),
      Fmt("%.2f×", Percentile(busy.ns, 0.999) / Percentile(idle.ns, 0.999)));
  add("lookups measured idle / evicting",
      std::to_string(idle.calls) + " / " + std::to_string(busy.calls), "");
  PrintTable(rows);
  return 0;
}

}  // namespace
}  // namespace wombatkv::bench

int main(int argc, char** argv) { return wombatkv::bench::Main(argc, argv); }
