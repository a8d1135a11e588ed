// LatencyRecorder: every sample of one operation kind (microseconds), summarised as count, p50,
// p99 and max at the end. Samples are kept exactly (a run has at most a few thousand calls).
// Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wombatkv::workload {

class LatencyRecorder {
 public:
  void Add(uint64_t micros) {
    samples_.push_back(micros);
    total_ += micros;
  }
  uint64_t count() const { return samples_.size(); }
  uint64_t total_micros() const { return total_; }
  // Nearest-rank percentile, p in (0, 100]; 0 when empty.
  uint64_t Percentile(double p) const;
  uint64_t Max() const;

 private:
  std::vector<uint64_t> samples_;
  uint64_t total_ = 0;
};

// "850 µs", "12.3 ms", "2.41 s".
std::string FormatMicros(uint64_t micros);

}  // namespace wombatkv::workload
