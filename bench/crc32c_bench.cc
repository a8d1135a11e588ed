// CRC32C throughput of each implementation this CPU can run (src/base/crc32c.h), on one core, at
// the sizes the wire carries: a 256-byte request, a 4 KiB block, 64 KiB and 2 MiB payloads.
// `bytes_per_second` is the rate; Crc32cAppend picks the folding path from 256 bytes on when the
// CPU has it, else the crc32 instruction.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "base/crc32c.h"

namespace wombatkv {
namespace {

using CrcFn = uint32_t (*)(uint32_t, const uint8_t*, size_t);

const std::vector<uint8_t>& Data() {
  static const std::vector<uint8_t> data = [] {
    std::vector<uint8_t> v(2 << 20);
    std::mt19937_64 rng(20261205);
    for (auto& b : v) b = static_cast<uint8_t>(rng());
    return v;
  }();
  return data;
}

void Run(benchmark::State& state, CrcFn fn) {
  const auto n = static_cast<size_t>(state.range(0));
  const uint8_t* p = Data().data();
  uint32_t crc = 0;
  for (auto _ : state) {
    crc = fn(crc, p, n);
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}

void Register(const std::string& name, CrcFn fn) {
  benchmark::RegisterBenchmark(name.c_str(), Run, fn)
      ->Arg(256)
      ->Arg(4 << 10)
      ->Arg(64 << 10)
      ->Arg(2 << 20);
}

}  // namespace
}  // namespace wombatkv

int main(int argc, char** argv) {
  using namespace wombatkv;
  Register("Crc32c/portable", &Crc32cAppendPortable);
  if (Crc32cHardwareAvailable()) Register("Crc32c/crc32_instruction", &Crc32cAppendInstruction);
  if (Crc32cFoldingAvailable()) Register("Crc32c/folding", &Crc32cAppendFolding);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
