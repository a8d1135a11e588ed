// s3_bench: WombatKV on S3 (issue 3) against a bare libcurl-multi loop (s3_bare_loop.h) on the
// same server and bucket, in one run:
//
//   PUT / GET   MB/s and p50/p99 latency of S3ObjectStore for 256 KiB and 4 MiB objects at 1, 8
//               and 32 requests in flight (that many threads over one store, whose pool holds as
//               many connections)   vs the bare loop at the same concurrency    target ≥ 0.9×
//               PUTs are measured under both payload-hash policies (signed: SHA-256 of every body;
//               unsigned: UNSIGNED-PAYLOAD), the bare loop always using the same policy as ours,
//               so a ratio compares our layers only; signed vs unsigned shows what hashing costs.
//   bootstrap   Store::Open (which lists and reads every chain head: Refresh) with an empty data
//               directory on a bucket holding N chains (default 10,000)
//                                    vs listing the heads + reading them with the bare loop, 32
//                                       in flight (the server's ceiling for that work)
//               then Refresh() with nothing new (what each automatic refresh costs)
//                                    vs listing the heads alone
//   restore     Store::Open + GetBlocks of a 24-block chain of 256 KiB blocks from S3 alone (empty
//               data directory, cold cache)   vs the bare loop reading the 24 blobs, 24 in flight
//
// The server comes from the WOMBATKV_TEST_S3_* variables that `scripts/s3-server.sh start` prints.
// Every object goes under "wkvbench-<pid>/" in the bucket and is deleted at the end.
//
// Each measurement is repeated (--reps) and the median reported; a ratio is the median of per-rep
// ratios, ours and the bare loop taking turns going first. Nothing here asserts a time.
//
// Usage: s3_bench [--reps=N] [--chains=N] [--only=tp,boot,restore] [--help]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/blake3_hash.h"
#include "layout/object_keys.h"
#include "object/s3/s3_object_store.h"
#include "wombatkv/buffer.h"
#include "wombatkv/env.h"
#include "wombatkv/object_store.h"
#include "wombatkv/store.h"
#include "wombatkv/types.h"

#include "bench_util.h"
#include "s3_bare_loop.h"

namespace wombatkv {
namespace {

using bench::BareS3Loop;
using bench::Check;
using bench::Die;
using bench::Fmt;
using bench::kKiB;
using bench::kMiB;
using bench::Median;
using bench::S3Server;
using bench::SizeName;
using bench::WallSeconds;

constexpr const char* kNs = "bench";
constexpr const char* kL2Prefix = "kv";

struct Options {
  int reps = 3;
  size_t chains = 10000;
  std::set<std::string> only;
};

double Pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::vector<uint8_t> Payload(uint64_t seed, size_t size) {
  std::vector<uint8_t> p(size);
  bench::FillRandom(p.data(), p.size(), seed);
  return p;
}

BlockKey Key(uint64_t i, uint64_t salt) {
  uint64_t in[2] = {i, salt};
  return BlockKey::FromBytes(Blake3({reinterpret_cast<const uint8_t*>(in), sizeof in}));
}

Fingerprint Fp(uint8_t v) {
  Fingerprint f;
  f.bytes.fill(v);
  return f;
}

struct Row {
  std::string metric, value, baseline, ratio, target, met;
};
std::vector<Row> g_rows;

std::string Ms(double seconds) { return Fmt("%.2f", seconds * 1e3); }

// `conc` threads sharing one S3ObjectStore, each taking the next request.
BareS3Loop::Outcome RunOurs(size_t ops, size_t conc, const std::function<void(size_t)>& op) {
  std::atomic<size_t> next{0};
  BareS3Loop::Outcome o;
  o.latencies.resize(ops);
  const double t0 = WallSeconds();
  std::vector<std::thread> threads;
  for (size_t t = 0; t < conc; ++t) {
    threads.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < ops;) {
        const double a = WallSeconds();
        op(i);
        o.latencies[i] = WallSeconds() - a;
      }
    });
  }
  for (auto& t : threads) t.join();
  o.wall = WallSeconds() - t0;
  return o;
}

std::unique_ptr<S3ObjectStore> OpenS3(const S3Server& s, const std::string& key_prefix,
                                      S3PayloadSigning signing = S3PayloadSigning::kAuto,
                                      size_t concurrency = 32) {
  S3Options o;
  o.endpoint = s.endpoint;
  o.bucket = s.bucket;
  o.region = s.region;
  o.access_key = s.access_key;
  o.secret_key = s.secret_key;
  o.key_prefix = key_prefix;
  o.payload_signing = signing;
  o.requests_inflight_max = concurrency;
  return Check(S3ObjectStore::Open(std::move(o)), "S3ObjectStore::Open");
}

// ---------------------------------------------------------------------------------------------
// (1) PUT / GET throughput

struct Cell {
  std::vector<double> ours_rate, bare_rate, ratio, ours_lat, bare_lat;
};

void Report(const std::string& name, size_t size, size_t conc, const Cell& c) {
  const double rt = Median(c.ratio);
  std::printf("%-22s %-8s %4zu | %9.1f %8.2f %8.2f | %9.1f %8.2f %8.2f | %5.2fx\n", name.c_str(),
              SizeName(size).c_str(), conc, Median(c.ours_rate), Pct(c.ours_lat, 0.5) * 1e3,
              Pct(c.ours_lat, 0.99) * 1e3, Median(c.bare_rate), Pct(c.bare_lat, 0.5) * 1e3,
              Pct(c.bare_lat, 0.99) * 1e3, rt);
  std::fflush(stdout);
  const std::string m = name + " " + SizeName(size) + " ×" + std::to_string(conc);
  g_rows.push_back({m + " (MB/s)", Fmt("%.1f", Median(c.ours_rate)),
                    Fmt("%.1f", Median(c.bare_rate)), Fmt("%.2f×", rt), "≥ 0.9×",
                    rt >= 0.9 ? "yes" : "no"});
  g_rows.push_back({m + " p50/p99 (ms)",
                    Ms(Pct(c.ours_lat, 0.5)) + " / " + Ms(Pct(c.ours_lat, 0.99)),
                    Ms(Pct(c.bare_lat, 0.5)) + " / " + Ms(Pct(c.bare_lat, 0.99)), "", "", ""});
}

void BenchThroughput(const S3Server& s, const Options& opt, const std::string& root) {
  std::printf("\n== PUT/GET: S3ObjectStore vs a bare libcurl-multi loop (%d reps, median) ==\n",
              opt.reps);
  std::printf("%-22s %-8s %4s | %9s %8s %8s | %9s %8s %8s | %6s\n", "op (payload hash)", "size",
              "conc", "ours MB/s", "p50 ms", "p99 ms", "bare MB/s", "p50 ms", "p99 ms", "ratio");
  const std::string prefix = root + "tp/";
  struct Mode {
    const char* name;
    bool put;
    S3PayloadSigning signing;
  };
  const Mode modes[] = {{"PUT (signed)", true, S3PayloadSigning::kSigned},
                        {"PUT (unsigned)", true, S3PayloadSigning::kUnsigned},
                        {"GET", false, S3PayloadSigning::kUnsigned}};
  for (size_t size : {256 * kKiB, 4 * kMiB}) {
    const std::vector<uint8_t> data = Payload(size, size);
    for (size_t conc : {size_t{1}, size_t{8}, size_t{32}}) {
      // At least 4 rounds of `conc` requests and 32 MiB, in whole rounds.
      size_t ops = std::max<size_t>(4 * conc, (32 * kMiB) / size);
      ops = (ops + conc - 1) / conc * conc;
      std::vector<std::string> names, keys;
      for (size_t i = 0; i < ops; ++i) {
        names.push_back("o" + std::to_string(size) + "-" + std::to_string(i));
        keys.push_back(prefix + names.back());
      }
      for (const Mode& mode : modes) {
        const bool signed_payload = mode.signing == S3PayloadSigning::kSigned;
        auto store = OpenS3(s, prefix, mode.signing, conc);
        BareS3Loop bare(s, conc, signed_payload);
        Cell cell;
        for (int r = 0; r < opt.reps; ++r) {
          auto run_bare = [&] {
            return mode.put ? bare.Put(keys, ByteView(data)) : bare.Get(keys, size);
          };
          auto run_ours = [&] {
            return RunOurs(ops, conc, [&](size_t i) {
              if (mode.put) {
                Check(store->Put(names[i], {ByteView(data)}, PutOptions{}), "Put");
              } else {
                auto got = Check(store->Get(names[i], 0, kToEnd), "Get");
                if (got.bytes->size() != size) Die("Get: short object " + names[i]);
              }
            });
          };
          BareS3Loop::Outcome b, o;
          if (r % 2 == 0) {
            b = run_bare();
            o = run_ours();
          } else {
            o = run_ours();
            b = run_bare();
          }
          const double mb = static_cast<double>(ops * size) / 1e6;
          cell.ours_rate.push_back(mb / o.wall);
          cell.bare_rate.push_back(mb / b.wall);
          cell.ratio.push_back(b.wall / o.wall);
          cell.ours_lat.insert(cell.ours_lat.end(), o.latencies.begin(), o.latencies.end());
          cell.bare_lat.insert(cell.bare_lat.end(), b.latencies.begin(), b.latencies.end());
        }
        Report(mode.name, size, conc, cell);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// (2) bootstrap and (3) restore: the Store on S3 alone

std::unique_ptr<Store> OpenStore(ObjectStore* l2, const std::string& dir) {
  StoreOptions so;
  so.data_dir = dir;
  so.l2_prefix = kL2Prefix;
  so.object_store = l2;
  return Check(Store::Open(so), "Store::Open");
}

void BenchBootstrap(const S3Server& s, const Options& opt, const std::string& root,
                    const std::string& tmp) {
  const std::string prefix = root + "boot/";
  const size_t n = opt.chains;
  std::printf("\n== bootstrap: Store::Open on an empty data dir, %zu chains in the bucket ==\n", n);
  {
    auto l2 = OpenS3(s, prefix);
    auto store = OpenStore(l2.get(), tmp + "/boot-build");
    std::atomic<size_t> next{0};
    const std::vector<uint8_t> payload = Payload(7, 1024);
    const double t0 = WallSeconds();
    std::vector<std::thread> threads;
    for (int t = 0; t < 32; ++t) {
      threads.emplace_back([&] {
        for (size_t i; (i = next.fetch_add(1)) < n;) {
          std::vector<uint8_t> p = payload;  // distinct payloads: one blob per chain
          std::memcpy(p.data(), &i, sizeof i);
          const BlockPut b{Key(i, 1), BlockKey{}, ByteView(p)};
          const Fingerprint fp = Fp(static_cast<uint8_t>(i % 16));
          Check(store->PutBlocks(kNs, fp, std::span<const BlockPut>(&b, 1)), "PutBlocks");
          Check(store->PublishChain(kNs, fp, Key(i, 2), b.key), "PublishChain");
        }
      });
    }
    for (auto& t : threads) t.join();
    std::printf("built %zu chains (one 1 KiB block + a head each) in %.1f s\n", n,
                WallSeconds() - t0);
  }
  const std::string chains_prefix = layout::ChainsPrefix(kL2Prefix, kNs);
  std::vector<double> open_s, bare_s, ratio, refresh_s, list_s, refresh_ratio;
  const int reps = std::min(opt.reps, 2);
  for (int r = 0; r < reps; ++r) {
    // The ceiling: list every head, then read them all, 32 in flight.
    double t0 = WallSeconds();
    auto lister = OpenS3(s, prefix);
    std::vector<std::string> keys;
    for (std::string token;;) {
      auto page = Check(lister->List(chains_prefix, "", token, 1000), "List");
      for (auto& o : page.objects) keys.push_back(prefix + o.key);
      if (page.next_token.empty()) break;
      token = page.next_token;
    }
    if (keys.size() != n) {
      Die("listed " + std::to_string(keys.size()) + " heads of " + std::to_string(n));
    }
    const double listed = WallSeconds() - t0;
    BareS3Loop bare(s, 32, false);
    bare.Get(keys, BareS3Loop::kAnySize);  // heads vary in size
    const double bare_all = WallSeconds() - t0;

    const std::string dir = tmp + "/boot-open-" + std::to_string(r);
    auto l2 = OpenS3(s, prefix);
    const double t1 = WallSeconds();
    auto store = OpenStore(l2.get(), dir);
    const double open = WallSeconds() - t1;
    const size_t seen = store->ListChains(kNs).value().size();
    if (seen != n) Die("bootstrap saw " + std::to_string(seen) + " chains of " + std::to_string(n));
    // What each automatic refresh costs once loaded (WMBT_KV_REFRESH_INTERVAL): nothing new to
    // read, so it should be the listing.
    const double t2 = WallSeconds();
    Check(store->Refresh(), "Refresh");
    const double refresh = WallSeconds() - t2;
    refresh_s.push_back(refresh);
    list_s.push_back(listed);
    refresh_ratio.push_back(listed / refresh);
    store.reset();
    std::filesystem::remove_all(dir);
    open_s.push_back(open);
    bare_s.push_back(bare_all);
    ratio.push_back(bare_all / open);
    std::printf(
        "rep %d: Store::Open %.2f s | bare: list %.2f s, list + GET every head (32 in "
        "flight) %.2f s | ratio %.2fx | Refresh() with nothing new %.2f s\n",
        r, open, listed, bare_all, bare_all / open, refresh);
    std::fflush(stdout);
  }
  g_rows.push_back({"bootstrap " + std::to_string(n) + " chains: Store::Open (s)",
                    Fmt("%.2f", Median(open_s)), Fmt("%.2f", Median(bare_s)) + " list + GETs",
                    Fmt("%.2f×", Median(ratio)), "—", ""});
  g_rows.push_back({"refresh, nothing new, " + std::to_string(n) + " chains: Refresh() (s)",
                    Fmt("%.2f", Median(refresh_s)), Fmt("%.2f", Median(list_s)) + " list",
                    Fmt("%.2f×", Median(refresh_ratio)), "—", ""});
}

void BenchRestore(const S3Server& s, const Options& opt, const std::string& root,
                  const std::string& tmp) {
  const std::string prefix = root + "restore/";
  constexpr size_t kBlocks = 24;
  constexpr size_t kBlock = 256 * kKiB;
  std::printf("\n== restore: a %zu-block chain of 256 KiB blocks from S3 alone ==\n", kBlocks);
  const Fingerprint fp = Fp(0xab);
  std::vector<BlockKey> keys;
  std::vector<std::string> blob_keys;
  {
    auto l2 = OpenS3(s, prefix);
    auto store = OpenStore(l2.get(), tmp + "/restore-build");
    std::vector<std::vector<uint8_t>> payloads;
    std::vector<BlockPut> puts;
    for (size_t i = 0; i < kBlocks; ++i) {
      keys.push_back(Key(i, 3));
      payloads.push_back(Payload(1000 + i, kBlock));
    }
    for (size_t i = 0; i < kBlocks; ++i) {
      puts.push_back(BlockPut{keys[i], i ? keys[i - 1] : BlockKey{}, ByteView(payloads[i])});
    }
    Check(store->PutBlocks(kNs, fp, puts), "PutBlocks");
    const ChainId chain_id = Key(0, 99);
    Check(store->PublishChain(kNs, fp, chain_id, keys.back()), "PublishChain");
    for (const auto& b : Check(store->GetChain(kNs, fp, chain_id), "GetChain")) {
      blob_keys.push_back(prefix + layout::BlobKey(kL2Prefix, kNs, b.hash));
    }
  }
  std::vector<double> get_s, open_s, total_s, bare_s, ratio;
  for (int r = 0; r < opt.reps; ++r) {
    BareS3Loop bare(s, kBlocks, false);
    const BareS3Loop::Outcome b = bare.Get(blob_keys, BareS3Loop::kAnySize);
    const std::string dir = tmp + "/restore-open-" + std::to_string(r);
    auto l2 = OpenS3(s, prefix);
    const double t0 = WallSeconds();
    auto store = OpenStore(l2.get(), dir);
    const double t1 = WallSeconds();
    auto borrow = Check(store->GetBlocks(kNs, fp, keys), "GetBlocks");
    const double t2 = WallSeconds();
    if (borrow.size() != kBlocks || borrow.total_bytes() != kBlocks * kBlock) {
      Die("GetBlocks returned the wrong bytes");
    }
    borrow = Borrow();
    store.reset();
    std::filesystem::remove_all(dir);
    open_s.push_back(t1 - t0);
    get_s.push_back(t2 - t1);
    total_s.push_back(t2 - t0);
    bare_s.push_back(b.wall);
    ratio.push_back(b.wall / (t2 - t1));
    std::printf("rep %d: Store::Open %.1f ms + GetBlocks %.1f ms | bare 24 GETs at once %.1f ms\n",
                r, (t1 - t0) * 1e3, (t2 - t1) * 1e3, b.wall * 1e3);
    std::fflush(stdout);
  }
  g_rows.push_back({"restore 24×256 KiB: GetBlocks (ms)", Ms(Median(get_s)),
                    Ms(Median(bare_s)) + " bare, 24 in flight", Fmt("%.2f×", Median(ratio)), "—",
                    ""});
  g_rows.push_back({"restore 24×256 KiB: Store::Open + GetBlocks (ms)", Ms(Median(total_s)), "",
                    "", "", ""});
}

void Cleanup(const S3Server& s, const std::string& root) {
  auto store = OpenS3(s, "");
  std::vector<std::string> keys;
  for (std::string token;;) {
    auto page = store->List(root, "", token, 1000);
    if (!page.ok()) {
      std::fprintf(stderr, "s3_bench: cleanup list failed: %s\n", page.status().ToString().c_str());
      return;
    }
    for (auto& o : page->objects) keys.push_back(o.key);
    if (page->next_token.empty()) break;
    token = page->next_token;
  }
  Status st = store->DeleteMany(keys);
  if (!st.ok()) std::fprintf(stderr, "s3_bench: cleanup failed: %s\n", st.ToString().c_str());
  std::printf("\ndeleted %zu objects under %s\n", keys.size(), root.c_str());
}

int Main(int argc, char** argv) {
  bench::SetProgramName("s3_bench");
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      std::puts(
          "s3_bench: S3ObjectStore and the Store on S3 vs a bare libcurl-multi loop, same server.\n"
          "  --reps=N     repetitions, median reported (default 3; bootstrap at most 2)\n"
          "  --chains=N   chains for the bootstrap (default 10000)\n"
          "  --only=LIST  subset of tp,boot,restore\n"
          "Needs WOMBATKV_TEST_S3_* from: eval \"$(scripts/s3-server.sh start radosgw)\"");
      return 0;
    } else if (a.starts_with("--reps=")) {
      opt.reps = std::max(1, std::atoi(argv[i] + 7));
    } else if (a.starts_with("--chains=")) {
      opt.chains = static_cast<size_t>(std::max(1, std::atoi(argv[i] + 9)));
    } else if (a.starts_with("--only=")) {
      for (auto& name : bench::Split(a.substr(7))) opt.only.insert(name);
    } else {
      std::fprintf(stderr, "s3_bench: unknown argument %s (see --help)\n", argv[i]);
      return 2;
    }
  }
  auto env = [](const char* n) {
    const char* v = std::getenv(n);
    return std::string(v ? v : "");
  };
  S3Server s{env("WOMBATKV_TEST_S3_SERVER"),     env("WOMBATKV_TEST_S3_ENDPOINT"),
             env("WOMBATKV_TEST_S3_BUCKET"),     env("WOMBATKV_TEST_S3_REGION"),
             env("WOMBATKV_TEST_S3_ACCESS_KEY"), env("WOMBATKV_TEST_S3_SECRET_KEY")};
  if (s.endpoint.empty() || s.bucket.empty() || s.access_key.empty() || s.secret_key.empty()) {
    Die("no S3 server: WOMBATKV_TEST_S3_ENDPOINT/BUCKET/ACCESS_KEY/SECRET_KEY are not set. Run\n"
        "  eval \"$(scripts/s3-server.sh start radosgw)\"\nfirst (and scripts/s3-server.sh stop "
        "afterwards).");
  }
  if (s.region.empty()) s.region = "us-east-1";
  {
    auto probe = OpenS3(s, "");
    std::string warning;
    Check(probe->Probe("", &warning), "probe");
    if (!warning.empty()) std::printf("warning: %s\n", warning.c_str());
  }
  const std::string root = "wkvbench-" + std::to_string(::getpid()) + "/";
  const std::string tmp = (std::filesystem::temp_directory_path() /
                           ("wombatkv-s3bench." + std::to_string(::getpid())))
                              .string();
  std::filesystem::create_directories(tmp);
  std::printf("s3_bench: server %s at %s, bucket %s, objects under %s\n",
              s.name.empty() ? "?" : s.name.c_str(), s.endpoint.c_str(), s.bucket.c_str(),
              root.c_str());
  const double t0 = WallSeconds();
  auto want = [&](const char* n) { return opt.only.empty() || opt.only.count(n); };
  if (want("tp")) BenchThroughput(s, opt, root);
  if (want("restore")) BenchRestore(s, opt, root, tmp);
  if (want("boot")) BenchBootstrap(s, opt, root, tmp);
  Cleanup(s, root);
  std::filesystem::remove_all(tmp);

  std::printf(
      "\n| metric | ours | bare libcurl-multi | ratio (bare time / ours) | target | met? |\n"
      "|---|---|---|---|---|---|\n");
  for (const auto& r : g_rows) {
    std::printf("| %s | %s | %s | %s | %s | %s |\n", r.metric.c_str(), r.value.c_str(),
                r.baseline.c_str(), r.ratio.c_str(), r.target.c_str(), r.met.c_str());
  }
  std::printf("\ntotal %.0f s\n", WallSeconds() - t0);
  return 0;
}

}  // namespace
}  // namespace wombatkv

int main(int argc, char** argv) { return wombatkv::Main(argc, argv); }
