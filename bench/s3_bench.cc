// s3_bench: WombatKV on S3 (issue 3), side by side with the `curl` CLI against the same server and
// bucket, all in one run:
//
//   PUT / GET      MB/s and p50/p99 latency of S3ObjectStore for 256 KiB and 2 MiB objects at 1
//                  and 8 requests in flight       vs `curl` processes (one per stream, each
//                  sending its share of the requests over one reused connection)   target ≥ 0.9×
//   bootstrap      seconds for Store::Open with an empty data dir on a bucket holding N chain
//                  heads (default 2,000; see --help) (list + read every head)  vs the bare client listing the heads and
//                  reading them with 32 in flight (what a parallel bootstrap could reach)
//   restore        GetBlocks of a 24-block chain of 256 KiB blocks from S3 alone (fresh data
//                  dir, cold cache)                vs 24 sequential GETs by one `curl` process
//
// plus diagnostics: the curl restore with 8 processes at once, the bare client's sequential read
// of every head, the listing alone.
//
// The server comes from the WOMBATKV_TEST_S3_* variables that `scripts/s3-server.sh start` prints.
// Every object goes under "wkvbench-<pid>/" in the bucket and is deleted at the end.
//
// Harness as in store_bench: each measurement is repeated (--reps) and the median reported; a ratio
// is the median of per-rep ratios, each against a baseline sample taken just before. Times come
// from wombatkv::RealClock(). curl latencies are curl's own %{time_total}; curl throughput counts
// the wall time of the whole batch, process start-up included (a few ms per process). curl sends
// `x-amz-content-sha256: UNSIGNED-PAYLOAD`; S3ObjectStore hashes every body (SHA-256), so its
// PUTs do more work per byte. Nothing here asserts a time.
//
// Usage: s3_bench [--reps=N] [--chains=N] [--only=tp,boot,restore] [--help]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
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

namespace wombatkv {
namespace {

using bench::Check;
using bench::Die;
using bench::Fmt;
using bench::kKiB;
using bench::kMiB;
using bench::Median;
using bench::SizeName;
using bench::WallSeconds;

constexpr const char* kNs = "bench";
constexpr const char* kL2Prefix = "kv";

struct Server {
  std::string name, endpoint, bucket, region, access_key, secret_key;
};

struct Options {
  int reps = 3;
  size_t chains = 2000;
  double build_seconds_max = 120;  // N falls back to 2,000 if 10,000 would take longer
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
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (auto& b : p) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<uint8_t>(x);
  }
  return p;
}

BlockKey Key(uint64_t i, uint64_t salt) {
  uint64_t in[2] = {i, salt};
  auto d = Blake3({reinterpret_cast<const uint8_t*>(in), sizeof in});
  return BlockKey::FromBytes(d);
}

Fingerprint Fp(uint8_t v) {
  Fingerprint f;
  f.bytes.fill(v);
  return f;
}

// ---------------------------------------------------------------------------------------------
// The table

struct Row {
  std::string metric, value, baseline, ratio, target, met;
};
std::vector<Row> g_rows;

// ---------------------------------------------------------------------------------------------
// curl

class Curl {
 public:
  Curl(const Server& s, std::string dir) : s_(s), dir_(std::move(dir)) {}

  struct Transfer {
    std::string key;
    std::string upload_file;  // empty: GET to /dev/null
  };
  struct Outcome {
    double wall = 0;  // seconds, spawn to last exit
    std::vector<double> latencies;
    size_t failures = 0;
  };

  // Runs one curl process per stream at once; each stream's transfers go over one connection.
  Outcome Run(const std::vector<std::vector<Transfer>>& streams) {
    std::vector<std::string> configs;
    for (size_t p = 0; p < streams.size(); ++p) {
      std::string path = dir_ + "/curl-" + std::to_string(p) + ".cfg";
      std::ofstream f(path, std::ios::trunc);
      // The secret goes into a 0600 file, never onto a command line.
      f << "silent\nshow-error\n"
        << "user = \"" << s_.access_key << ":" << s_.secret_key << "\"\n"
        << "aws-sigv4 = \"aws:amz:" << s_.region << ":s3\"\n"
        << "header = \"x-amz-content-sha256: UNSIGNED-PAYLOAD\"\n"
        << "write-out = \"%{http_code} %{time_total}\\n\"\n";
      for (const auto& t : streams[p]) {
        f << "url = \"" << s_.endpoint << "/" << s_.bucket << "/" << t.key << "\"\n";
        if (!t.upload_file.empty()) f << "upload-file = \"" << t.upload_file << "\"\n";
        f << "output = \"/dev/null\"\n";
      }
      f.close();
      std::filesystem::permissions(path, std::filesystem::perms::owner_read |
                                             std::filesystem::perms::owner_write);
      configs.push_back(path);
    }
    Outcome out;
    double t0 = WallSeconds();
    std::vector<FILE*> pipes;
    for (const auto& c : configs) {
      std::string cmd = "curl -K '" + c + "'";
      FILE* p = popen(cmd.c_str(), "r");
      if (!p) Die("cannot run curl");
      pipes.push_back(p);
    }
    size_t expected = 0;
    for (const auto& s : streams) expected += s.size();
    for (FILE* p : pipes) {
      char line[256];
      while (std::fgets(line, sizeof line, p)) {
        int code = 0;
        double t = 0;
        if (std::sscanf(line, "%d %lf", &code, &t) == 2) {
          if (code < 200 || code > 299) out.failures++;
          out.latencies.push_back(t);
        }
      }
      int rc = pclose(p);
      if (rc != 0) out.failures++;
    }
    out.wall = WallSeconds() - t0;
    if (out.latencies.size() != expected) out.failures += expected - std::min(expected, out.latencies.size());
    if (out.failures) {
      Die("curl: " + std::to_string(out.failures) + " failed transfers (try one by hand with " +
          configs[0] + ")");
    }
    return out;
  }

 private:
  const Server& s_;
  std::string dir_;
};

// ---------------------------------------------------------------------------------------------
// ours: C threads over one S3ObjectStore

struct Outcome {
  double wall = 0;
  std::vector<double> latencies;
};

Outcome RunOurs(size_t ops, size_t conc, const std::function<void(size_t)>& op) {
  std::atomic<size_t> next{0};
  std::vector<double> lat(ops);
  double t0 = WallSeconds();
  std::vector<std::thread> threads;
  for (size_t t = 0; t < conc; ++t) {
    threads.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < ops;) {
        double a = WallSeconds();
        op(i);
        lat[i] = WallSeconds() - a;
      }
    });
  }
  for (auto& t : threads) t.join();
  Outcome o;
  o.wall = WallSeconds() - t0;
  o.latencies = std::move(lat);
  return o;
}

std::unique_ptr<S3ObjectStore> OpenS3(const Server& s, const std::string& key_prefix) {
  S3Options o;
  o.endpoint = s.endpoint;
  o.bucket = s.bucket;
  o.region = s.region;
  o.access_key = s.access_key;
  o.secret_key = s.secret_key;
  o.key_prefix = key_prefix;
  return Check(S3ObjectStore::Open(std::move(o)), "S3ObjectStore::Open");
}

// ---------------------------------------------------------------------------------------------
// (1) PUT / GET throughput

void BenchThroughput(const Server& s, const Options& opt, const std::string& root,
                     const std::string& tmp) {
  auto store = OpenS3(s, root + "tp/");
  Curl curl(s, tmp);
  std::printf("\n== PUT/GET throughput: S3ObjectStore vs curl (%d reps, median) ==\n", opt.reps);
  std::printf("%-8s %-4s %-4s | %9s %8s %8s | %9s %8s %8s | %6s\n", "size", "op", "conc",
              "ours MB/s", "p50 ms", "p99 ms", "curl MB/s", "p50 ms", "p99 ms", "ratio");
  for (size_t size : {256 * kKiB, 2 * kMiB}) {
    std::vector<uint8_t> data = Payload(size, size);
    std::string file = tmp + "/payload-" + std::to_string(size);
    {
      std::ofstream f(file, std::ios::binary | std::ios::trunc);
      f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(size));
    }
    for (size_t conc : {size_t{1}, size_t{8}}) {
      size_t ops = std::max<size_t>(8 * conc, (32 * kMiB) / size);
      ops = (ops + conc - 1) / conc * conc;
      auto key = [&](size_t i) {
        return "o" + std::to_string(size) + "-" + std::to_string(i);
      };
      auto streams = [&](bool put) {
        std::vector<std::vector<Curl::Transfer>> st(conc);
        for (size_t i = 0; i < ops; ++i) {
          st[i % conc].push_back({root + "tp/" + key(i), put ? file : std::string()});
        }
        return st;
      };
      for (bool put : {true, false}) {
        std::vector<double> ours_rate, curl_rate, ratio, ours_lat, curl_lat;
        for (int r = 0; r < opt.reps; ++r) {
          Curl::Outcome c = curl.Run(streams(put));
          Outcome o = RunOurs(ops, conc, [&](size_t i) {
            if (put) {
              Check(store->Put(key(i), {ByteView(data)}, PutOptions{}), "Put");
            } else {
              auto got = Check(store->Get(key(i), 0, kToEnd), "Get");
              if (got.bytes->size() != size) Die("Get: short object " + key(i));
            }
          });
          double mb = static_cast<double>(ops * size) / 1e6;
          ours_rate.push_back(mb / o.wall);
          curl_rate.push_back(mb / c.wall);
          ratio.push_back(c.wall / o.wall);
          ours_lat.insert(ours_lat.end(), o.latencies.begin(), o.latencies.end());
          curl_lat.insert(curl_lat.end(), c.latencies.begin(), c.latencies.end());
        }
        const char* opn = put ? "PUT" : "GET";
        double rt = Median(ratio);
        std::printf("%-8s %-4s %-4zu | %9.1f %8.2f %8.2f | %9.1f %8.2f %8.2f | %5.2fx\n",
                    SizeName(size).c_str(), opn, conc, Median(ours_rate),
                    Pct(ours_lat, 0.5) * 1e3, Pct(ours_lat, 0.99) * 1e3, Median(curl_rate),
                    Pct(curl_lat, 0.5) * 1e3, Pct(curl_lat, 0.99) * 1e3, rt);
        std::fflush(stdout);
        std::string m = std::string(opn) + " " + SizeName(size) + " ×" + std::to_string(conc);
        g_rows.push_back({m + " (MB/s)", Fmt("%.1f", Median(ours_rate)),
                          Fmt("%.1f", Median(curl_rate)) + " curl", Fmt("%.2f×", rt), "≥ 0.9×",
                          rt >= 0.9 ? "yes" : "no"});
        g_rows.push_back({m + " p50/p99 (ms)",
                          Fmt("%.2f", Pct(ours_lat, 0.5) * 1e3) + " / " +
                              Fmt("%.2f", Pct(ours_lat, 0.99) * 1e3),
                          Fmt("%.2f", Pct(curl_lat, 0.5) * 1e3) + " / " +
                              Fmt("%.2f", Pct(curl_lat, 0.99) * 1e3) + " curl",
                          "", "—", ""});
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// (2) bootstrap

std::unique_ptr<Store> OpenStore(ObjectStore* l2, const std::string& dir) {
  StoreOptions so;
  so.data_dir = dir;
  so.l2_prefix = kL2Prefix;
  so.object_store = l2;
  return Check(Store::Open(so), "Store::Open");
}

void BenchBootstrap(const Server& s, const Options& opt, const std::string& root,
                    const std::string& tmp) {
  const std::string prefix = root + "boot/";
  size_t n = opt.chains;
  std::printf("\n== bootstrap: Store::Open on an empty data dir, %zu chain heads in the bucket ==\n",
              n);
  {
    auto l2 = OpenS3(s, prefix);
    auto store = OpenStore(l2.get(), tmp + "/boot-build");
    std::atomic<size_t> next{0}, built{0};
    std::atomic<bool> cut{false};
    std::vector<uint8_t> payload = Payload(7, 1024);
    double t0 = WallSeconds();
    std::vector<std::thread> threads;
    for (int t = 0; t < 32; ++t) {
      threads.emplace_back([&] {
        for (size_t i; (i = next.fetch_add(1)) < n;) {
          if (cut.load() && i >= 2000) break;
          BlockKey k = Key(i, 1);
          Fingerprint fp = Fp(static_cast<uint8_t>(i % 16));
          BlockPut b{k, BlockKey{}, ByteView(payload)};
          // Distinct payloads: the blob count matches the chain count.
          std::vector<uint8_t> p = payload;
          std::memcpy(p.data(), &i, sizeof i);
          b.payload = ByteView(p);
          Check(store->PutBlocks(kNs, fp, std::span<const BlockPut>(&b, 1)), "PutBlocks");
          Check(store->PublishChain(kNs, fp, Key(i, 2), k), "PublishChain");
          size_t done = ++built;
          if (done == 1000 && n > 2000) {
            double projected = (WallSeconds() - t0) * static_cast<double>(n) / 1000.0;
            if (projected > opt.build_seconds_max) {
              std::printf("building %zu chains would take ~%.0f s (> %.0f s): using 2,000\n", n,
                          projected, opt.build_seconds_max);
              cut = true;
            }
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    n = built.load();
    std::printf("built %zu chains (1 KiB block + head each) in %.1f s\n", n, WallSeconds() - t0);
  }
  std::vector<double> open_s, list_s, seq_s, par_s, ratio, curl_head_ms, ours_head_ms;
  const std::string chains_prefix = layout::ChainsPrefix(kL2Prefix, kNs);
  int reps = 1;  // one Open reads every head sequentially: minutes per rep on radosgw
  for (int r = 0; r < reps; ++r) {
    // Baseline first: the bare client lists and reads every head, 32 in flight.
    auto bare = OpenS3(s, prefix);
    double t0 = WallSeconds();
    std::vector<std::string> keys;
    std::string token;
    for (;;) {
      auto page = Check(bare->List(chains_prefix, "", token, 1000), "List");
      for (auto& o : page.objects) keys.push_back(o.key);
      if (page.next_token.empty()) break;
      token = page.next_token;
    }
    double listed = WallSeconds() - t0;
    std::atomic<size_t> next{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 32; ++t) {
      threads.emplace_back([&] {
        for (size_t i; (i = next.fetch_add(1)) < keys.size();) Check(bare->Get(keys[i], 0, kToEnd), "Get");
      });
    }
    for (auto& t : threads) t.join();
    double par = WallSeconds() - t0;
    if (keys.size() != n) Die("listed " + std::to_string(keys.size()) + " heads, built " +
                              std::to_string(n));
    // Sequential reads as Store::Open does them, on a sample (all of them would take minutes).
    const size_t sample = std::min<size_t>(keys.size(), 200);
    double t1 = WallSeconds();
    for (size_t i = 0; i < sample; ++i) Check(bare->Get(keys[i], 0, kToEnd), "Get");
    double per_head = (WallSeconds() - t1) / static_cast<double>(sample);
    double seq = listed + per_head * static_cast<double>(keys.size());
    bare.reset();
    // The same sequential reads by one curl process over one connection.
    std::vector<std::vector<Curl::Transfer>> cs(1);
    for (size_t i = 0; i < std::min<size_t>(keys.size(), 50); ++i) {
      cs[0].push_back({prefix + keys[i], ""});
    }
    Curl::Outcome co = Curl(s, tmp).Run(cs);
    double curl_per_head = Median(co.latencies);
    curl_head_ms.push_back(curl_per_head * 1e3);
    ours_head_ms.push_back(per_head * 1e3);

    std::string dir = tmp + "/boot-open-" + std::to_string(r);
    auto l2 = OpenS3(s, prefix);
    double t2 = WallSeconds();
    auto store = OpenStore(l2.get(), dir);
    double open = WallSeconds() - t2;
    size_t seen = store->ListChains(kNs).size();
    if (seen != n) Die("bootstrap saw " + std::to_string(seen) + " chains of " + std::to_string(n));
    store.reset();
    std::filesystem::remove_all(dir);
    open_s.push_back(open);
    list_s.push_back(listed);
    seq_s.push_back(seq);
    par_s.push_back(par);
    ratio.push_back(open / par);
    std::printf("rep %d: Store::Open %.2f s | bare: list %.2f s, list+32-way GETs %.2f s, "
                "list+sequential GETs %.2f s (extrapolated: %.2f ms/head over %zu heads) | curl "
                "sequential GET of a head: median %.2f ms\n",
                r, open, listed, par, seq, per_head * 1e3, sample, curl_per_head * 1e3);
    std::fflush(stdout);
  }
  std::string label = "bootstrap " + std::to_string(n) + " chains (s)";
  g_rows.push_back({label, Fmt("%.2f", Median(open_s)),
                    Fmt("%.2f", Median(par_s)) + " bare list+32-way GET",
                    Fmt("%.2f×", Median(ratio)) + " slower", "—", ""});
  g_rows.push_back({"  bare list+sequential GET (s, extrapolated)", Fmt("%.2f", Median(seq_s)), "",
                    "", "", ""});
  g_rows.push_back({"  sequential GET of one ~1 KiB head (ms)", Fmt("%.2f", Median(ours_head_ms)),
                    Fmt("%.2f", Median(curl_head_ms)) + " curl (median)", "", "", ""});
  g_rows.push_back({"  bare list only (s)", Fmt("%.2f", Median(list_s)), "", "", "", ""});
}

// ---------------------------------------------------------------------------------------------
// (3) restore of a 24-block chain from S3 alone

void BenchRestore(const Server& s, const Options& opt, const std::string& root,
                  const std::string& tmp) {
  const std::string prefix = root + "restore/";
  constexpr size_t kBlocks = 24;
  constexpr size_t kBlock = 256 * kKiB;
  std::printf("\n== restore: GetBlocks of a %zu-block chain of 256 KiB from S3 alone ==\n",
              kBlocks);
  const Fingerprint fp = Fp(0xab);
  const ChainId chain_id = Key(0, 99);
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
    Check(store->PublishChain(kNs, fp, chain_id, keys.back()), "PublishChain");
    auto chain = Check(store->GetChain(kNs, fp, chain_id), "GetChain");
    for (const auto& b : chain) blob_keys.push_back(prefix + layout::BlobKey(kL2Prefix, kNs, b.hash));
  }
  Curl curl(s, tmp);
  std::vector<double> get_s, open_s, curl_seq, curl_par, ratio;
  for (int r = 0; r < opt.reps; ++r) {
    std::vector<std::vector<Curl::Transfer>> seq(1), par(8);
    for (size_t i = 0; i < blob_keys.size(); ++i) {
      seq[0].push_back({blob_keys[i], ""});
      par[i % 8].push_back({blob_keys[i], ""});
    }
    Curl::Outcome c = curl.Run(seq);
    Curl::Outcome cp = curl.Run(par);
    std::string dir = tmp + "/restore-open-" + std::to_string(r);
    auto l2 = OpenS3(s, prefix);
    double t0 = WallSeconds();
    auto store = OpenStore(l2.get(), dir);
    double open = WallSeconds() - t0;
    double t1 = WallSeconds();
    auto borrow = Check(store->GetBlocks(kNs, fp, keys), "GetBlocks");
    double got = WallSeconds() - t1;
    if (borrow.size() != kBlocks || borrow.total_bytes() != kBlocks * kBlock) {
      Die("GetBlocks returned the wrong bytes");
    }
    borrow = Borrow();
    store.reset();
    std::filesystem::remove_all(dir);
    get_s.push_back(got);
    open_s.push_back(open);
    curl_seq.push_back(c.wall);
    curl_par.push_back(cp.wall);
    ratio.push_back(got / c.wall);
    std::printf("rep %d: Store::Open %.1f ms, GetBlocks %.1f ms | curl 24 sequential %.1f ms, "
                "curl 8 processes %.1f ms\n",
                r, open * 1e3, got * 1e3, c.wall * 1e3, cp.wall * 1e3);
    std::fflush(stdout);
  }
  double rt = Median(ratio);
  g_rows.push_back({"restore 24×256 KiB GetBlocks (ms)", Fmt("%.1f", Median(get_s) * 1e3),
                    Fmt("%.1f", Median(curl_seq) * 1e3) + " curl sequential",
                    Fmt("%.2f×", rt) + " of the time", "—", ""});
  g_rows.push_back({"  curl, 8 processes × 3 GETs (ms)", Fmt("%.1f", Median(curl_par) * 1e3), "",
                    "", "", ""});
  g_rows.push_back({"  Store::Open before it (ms)", Fmt("%.1f", Median(open_s) * 1e3), "", "", "",
                    ""});
}

void Cleanup(const Server& s, const std::string& root) {
  auto store = OpenS3(s, "");
  std::vector<std::string> keys;
  std::string token;
  for (;;) {
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
          "s3_bench: S3ObjectStore and the Store on S3 vs the curl CLI, same server, one run.\n"
          "  --reps=N     repetitions, median reported (default 3; bootstrap at most 2)\n"
          "  --chains=N   chain heads for the bootstrap (default 2000: Store::Open reads heads\n"
          "               one by one, ~45 ms each on radosgw, so 10000 takes ~7 minutes)\n"
          "  --only=LIST  subset of tp,boot,restore\n"
          "Needs WOMBATKV_TEST_S3_* from: eval \"$(scripts/s3-server.sh start radosgw)\"");
      return 0;
    } else if (a.rfind("--reps=", 0) == 0) {
      opt.reps = std::max(1, std::atoi(argv[i] + 7));
    } else if (a.rfind("--chains=", 0) == 0) {
      opt.chains = std::max(1, std::atoi(argv[i] + 9));
    } else if (a.rfind("--only=", 0) == 0) {
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
  Server s{env("WOMBATKV_TEST_S3_SERVER"),     env("WOMBATKV_TEST_S3_ENDPOINT"),
           env("WOMBATKV_TEST_S3_BUCKET"),     env("WOMBATKV_TEST_S3_REGION"),
           env("WOMBATKV_TEST_S3_ACCESS_KEY"), env("WOMBATKV_TEST_S3_SECRET_KEY")};
  if (s.endpoint.empty() || s.bucket.empty() || s.access_key.empty() || s.secret_key.empty()) {
    Die("no S3 server: WOMBATKV_TEST_S3_ENDPOINT/BUCKET/ACCESS_KEY/SECRET_KEY are not set. Run\n"
        "  eval \"$(scripts/s3-server.sh start radosgw)\"\nfirst (and scripts/s3-server.sh stop "
        "afterwards).");
  }
  if (s.region.empty()) s.region = "us-east-1";
  if (std::system("curl --version >/dev/null 2>&1") != 0) Die("the curl CLI is not installed");
  {
    auto probe = OpenS3(s, "");
    std::string warning;
    Check(probe->Probe("", &warning), "probe");
    if (!warning.empty()) std::printf("warning: %s\n", warning.c_str());
  }
  const std::string root = "wkvbench-" + std::to_string(::getpid()) + "/";
  std::string tmp = (std::filesystem::temp_directory_path() /
                     ("wombatkv-s3bench." + std::to_string(::getpid())))
                        .string();
  std::filesystem::create_directories(tmp);
  std::printf("s3_bench: server %s at %s, bucket %s, objects under %s\n",
              s.name.empty() ? "?" : s.name.c_str(), s.endpoint.c_str(), s.bucket.c_str(),
              root.c_str());
  double t0 = WallSeconds();
  auto want = [&](const char* n) { return opt.only.empty() || opt.only.count(n); };
  if (want("tp")) BenchThroughput(s, opt, root, tmp);
  if (want("restore")) BenchRestore(s, opt, root, tmp);
  if (want("boot")) BenchBootstrap(s, opt, root, tmp);
  Cleanup(s, root);
  std::filesystem::remove_all(tmp);

  std::printf("\n| metric | value | baseline | ratio | target | met? |\n|---|---|---|---|---|---|\n");
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
