// What WMBT_KV_BLOCK_COMPRESS buys and costs (docs/layout.md §2), in one run. Reports, never
// asserts.
//
// For each block size and each kind of payload: the stored size (zstd at levels 1 and 3, as
// CompressIfWorthIt decides it: raw when the saving is under 1/16), the compression and
// decompression rates, next to BLAKE3 of the same blocks measured in the same run (hashing is what
// a put and a verified read cost without compression; memcpy is printed too).
// Then an embedded put+publish of fp16 blocks with compression off and on, into in-memory L1 and
// L2 (so the figure is the engine's own cost: what compression adds in front of an L2 that is
// free), with the bytes that reached L2.
//
// The payloads are synthetic (no model's real KV cache ships with this repository):
//   fp16   IEEE half floats of a bell-shaped distribution (a sum of four uniforms), as keys and
//          values of attention layers roughly are;
//   bf16   the same values as bfloat16 (the upper half of a float32);
//   zeros  half the bytes zero (every other 16-bit value 0);
//   random uniformly random bytes (incompressible).
//
// Usage: compress_bench [--sizes=256K,2M] [--reps=N] [--publish-mib=N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "base/blake3_hash.h"
#include "bench_util.h"
#include "layout/block_codec.h"
#include "meta/meta_store.h"
#include "wombatkv/store.h"

namespace wombatkv::bench {
namespace {

struct Options {
  std::vector<size_t> sizes = {256 << 10, 2 << 20};
  HarnessOptions harness;
  size_t publish_mib = 256;
};

const char* kHelp =
    R"(compress_bench: zstd block compression (WMBT_KV_BLOCK_COMPRESS) — stored size,
compression and decompression rates next to memcpy and BLAKE3, and put+publish with it off and on.
  --sizes=LIST       block sizes (default 256K,2M)
  --reps=N           repetitions per rate (default 3; the median is reported)
  --publish-mib=N    payload MiB per put+publish measurement (default 256)
)";

// A value of a bell-shaped distribution around 0 with deviation ~0.6, from `state`.
float Bell(uint64_t& state) {
  float sum = 0;
  for (int i = 0; i < 4; ++i) sum += static_cast<float>(SplitMix(state) >> 40) / (1 << 24);
  return (sum - 2.0f) * 1.2f;
}

std::vector<uint8_t> MakePayload(const std::string& kind, size_t bytes, uint64_t seed) {
  std::vector<uint8_t> out(bytes);
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
  if (kind == "random") {
    FillRandom(out.data(), bytes, seed);
    return out;
  }
  for (size_t i = 0; i + 2 <= bytes; i += 2) {
    uint16_t v = 0;
    if (kind == "fp16") {
      const _Float16 h = static_cast<_Float16>(Bell(state));
      std::memcpy(&v, &h, 2);
    } else if (kind == "bf16") {
      const float f = Bell(state);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      v = static_cast<uint16_t>(bits >> 16);
    } else {  // zeros
      v = (i / 2) % 2 ? 0 : static_cast<uint16_t>(SplitMix(state));
    }
    std::memcpy(out.data() + i, &v, 2);
  }
  return out;
}

// Put+publish of fp16 chains (8 blocks each) until `mib` MiB, into in-memory planes; prints and
// returns payload bytes/s.
double PutPublish(size_t block, size_t mib, int level, uint64_t* l2_bytes) {
  auto l2 = NewMemObjectStore();
  auto l1 = NewMemMetaStore();
  StoreOptions so;
  so.object_store = l2.get();
  so.meta_store = l1.get();
  so.block_compress_level = level;
  so.log = [](LogLevel, const std::string&) {};
  auto store = Check(Store::Open(so), "open the store");
  const size_t chain = 8, chains = std::max<size_t>(1, (mib << 20) / (block * chain));
  // Fresh payloads (no dedup), made before the clock starts.
  std::vector<std::vector<uint8_t>> payloads;
  for (size_t i = 0; i < chains * chain; ++i) payloads.push_back(MakePayload("fp16", block, i));
  Fingerprint fp;
  fp.bytes.fill(7);
  const double t0 = WallSeconds();
  for (size_t c = 0; c < chains; ++c) {
    std::vector<BlockPut> puts;
    for (size_t i = 0; i < chain; ++i) {
      puts.push_back({MakeKey(c, i), i ? MakeKey(c, i - 1) : BlockKey{}, payloads[c * chain + i]});
    }
    Check(store->PutBlocks("bench", fp, puts), "PutBlocks");
    Check(store->PublishChain("bench", fp, puts.back().key, puts.back().key), "PublishChain");
  }
  const double rate = static_cast<double>(chains * chain * block) / (WallSeconds() - t0);
  *l2_bytes = store->Stats().l2_put_bytes;
  return rate;
}

void Run(const Options& o) {
  std::vector<Row> rows;
  for (size_t size : o.sizes) {
    const std::string sz = SizeName(size);
    Section("block size " + sz);
    std::vector<uint8_t> src = MakePayload("random", size, 1), dst(size);
    Measure("memcpy " + sz, o.harness, size, [&] { std::memcpy(dst.data(), src.data(), size); });
    const double blake3_rate =
        Measure("BLAKE3 " + sz, o.harness, size, [&] { (void)HashPayload(src); }).median();
    const std::string vs_blake3 = "BLAKE3 " + GBps(blake3_rate);
    for (const char* kind : {"fp16", "bf16", "zeros", "random"}) {
      const std::vector<uint8_t> p = MakePayload(kind, size, 2);
      for (int level : {1, 3}) {
        const std::string what = std::string(kind) + " " + sz + " zstd:" + std::to_string(level);
        BufferSlice packed = layout::CompressIfWorthIt(p, level);
        const double stored = packed.owner ? static_cast<double>(packed.size) : size;
        rows.push_back({what + " stored/raw", Fmt("%.3f", stored / static_cast<double>(size)),
                        packed.owner ? "" : "(stored raw: saves < 1/16)", NAN, "", -1});
        const double c = Measure(what + " compress", o.harness, size, [&] {
                           (void)layout::CompressIfWorthIt(p, level);
                         }).median();
        rows.push_back({what + " compress", GBps(c), vs_blake3, c / blake3_rate, "", -1});
        if (!packed.owner) continue;
        const double d =
            Measure(what + " decompress", o.harness, size, [&] {
              (void)Check(layout::Decompress(packed.view(), size, "bench"), "decompress");
            }).median();
        rows.push_back({what + " decompress", GBps(d), vs_blake3, d / blake3_rate, "", -1});
      }
    }
    Section("put+publish of fp16 " + sz + " blocks, in-memory L1 and L2");
    // Alternating, so that a drift of the machine's speed touches both alike.
    uint64_t raw_bytes = 0, zstd_bytes = 0;
    std::vector<double> raws, zstds;
    for (int r = 0; r < o.harness.reps; ++r) {
      raws.push_back(PutPublish(size, o.publish_mib, 0, &raw_bytes));
      zstds.push_back(PutPublish(size, o.publish_mib, 1, &zstd_bytes));
      std::printf("  put+publish rep %d: off %s, zstd:1 %s\n", r + 1, GBps(raws.back()).c_str(),
                  GBps(zstds.back()).c_str());
    }
    const double raw = Median(raws), zstd = Median(zstds);
    rows.push_back({"put+publish fp16 " + sz + " off", GBps(raw), "", NAN, "", -1});
    rows.push_back(
        {"put+publish fp16 " + sz + " zstd:1", GBps(zstd), "off " + GBps(raw), zstd / raw, "", -1});
    rows.push_back({"L2 bytes written, zstd:1 / off " + sz,
                    Fmt("%.3f", static_cast<double>(zstd_bytes) / static_cast<double>(raw_bytes)),
                    "", NAN, "", -1});
  }
  Section("summary (no targets: a trade to choose, docs/layout.md §2)");
  PrintTable(rows);
}

bool ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&](std::string_view name) -> std::optional<std::string_view> {
      if (a.size() > name.size() && a.substr(0, name.size()) == name && a[name.size()] == '=') {
        return a.substr(name.size() + 1);
      }
      return std::nullopt;
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kHelp, stdout);
      std::exit(0);
    } else if (auto v = value("--sizes")) {
      o->sizes.clear();
      for (const std::string& s : Split(*v)) {
        size_t n = 0;
        if (!ParseSize(s, &n) || n == 0) return false;
        o->sizes.push_back(n);
      }
    } else if (auto v = value("--reps")) {
      o->harness.reps = std::atoi(std::string(*v).c_str());
      if (o->harness.reps <= 0) return false;
    } else if (auto v = value("--publish-mib")) {
      o->publish_mib = static_cast<size_t>(std::atoll(std::string(*v).c_str()));
      if (o->publish_mib == 0) return false;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace
}  // namespace wombatkv::bench

int main(int argc, char** argv) {
  using namespace wombatkv::bench;  // NOLINT
  SetProgramName("compress_bench");
  Options o;
  if (!ParseArgs(argc, argv, &o)) {
    std::fprintf(stderr, "compress_bench: bad arguments\n%s", kHelp);
    return 2;
  }
  MarkStart();
  Run(o);
  return 0;
}
