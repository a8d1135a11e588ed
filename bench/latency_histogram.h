// A fixed-size log-linear latency histogram (8 sub-buckets per power of two, so quantiles are
// within 12.5%), small enough to send through a pipe from a worker process and merge.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace wombatkv::bench {

class LatencyHistogram {
 public:
  static constexpr int kSub = 8;
  static constexpr int kBuckets = 64 * kSub;

  void Record(uint64_t ns) {
    counts_[Index(ns)]++;
    total_++;
  }
  void Merge(const LatencyHistogram& o) {
    for (int i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
    total_ += o.total_;
  }
  uint64_t total() const { return total_; }
  // The upper bound of the bucket holding quantile q (0..1), in nanoseconds; 0 when empty.
  uint64_t QuantileNs(double q) const {
    if (total_ == 0) return 0;
    uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(total_ - 1)) + 1;
    uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) return UpperBound(i);
    }
    return UpperBound(kBuckets - 1);
  }

 private:
  static int Index(uint64_t ns) {
    if (ns < kSub) return static_cast<int>(ns);
    const int log = 63 - std::countl_zero(ns);  // ns in [2^log, 2^(log+1))
    const int sub = static_cast<int>((ns >> (log - 3)) & (kSub - 1));
    return (log - 2) * kSub + sub;
  }
  static uint64_t UpperBound(int index) {
    if (index < kSub) return static_cast<uint64_t>(index);
    const int log = index / kSub + 2;
    const uint64_t sub = static_cast<uint64_t>(index % kSub);
    return (uint64_t{1} << log) + ((sub + 1) << (log - 3)) - 1;
  }

  std::array<uint64_t, kBuckets> counts_{};
  uint64_t total_ = 0;
};

}  // namespace wombatkv::bench
