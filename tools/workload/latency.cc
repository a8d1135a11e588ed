#include "tools/workload/latency.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace wombatkv::workload {

uint64_t LatencyRecorder::Percentile(double p) const {
  if (samples_.empty()) return 0;
  std::vector<uint64_t> sorted = samples_;
  std::sort(sorted.begin(), sorted.end());
  double rank = std::ceil(p / 100.0 * static_cast<double>(sorted.size()));
  size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return sorted[std::min(index, sorted.size() - 1)];
}

uint64_t LatencyRecorder::Max() const {
  return samples_.empty() ? 0 : *std::max_element(samples_.begin(), samples_.end());
}

std::string FormatMicros(uint64_t micros) {
  char buf[32];
  if (micros < 1000) {
    std::snprintf(buf, sizeof buf, "%llu µs", static_cast<unsigned long long>(micros));
  } else if (micros < 1000 * 1000) {
    std::snprintf(buf, sizeof buf, "%.1f ms", static_cast<double>(micros) / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f s", static_cast<double>(micros) / 1e6);
  }
  return buf;
}

}  // namespace wombatkv::workload
