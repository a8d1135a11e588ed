#include "tools/workload/progress.h"

namespace wombatkv::workload {

Progress::Progress(Clock* clock, std::FILE* out, bool terminal, bool enabled,
                   uint64_t plain_interval_micros)
    : clock_(clock),
      out_(out),
      terminal_(terminal),
      enabled_(enabled),
      interval_micros_(terminal ? 100'000 : plain_interval_micros),
      last_micros_(clock->NowMicros()) {}

void Progress::Update(const Counters& c) {
  if (!enabled_) return;
  const uint64_t now = clock_->NowMicros();
  const bool last = c.turns == c.turns_total;
  if (now - last_micros_ < interval_micros_ && !(terminal_ && last)) return;
  last_micros_ = now;
  const uint64_t keys = c.blocks_hit + c.blocks_missed;
  const double hit_pct = keys ? 100.0 * static_cast<double>(c.blocks_hit) / keys : 0.0;
  std::fprintf(out_,
               "%sturns %llu/%llu  hit rate %.1f%%  restored %.1f MiB  stored %.1f MiB  %.1f s%s",
               terminal_ ? "\r" : "", static_cast<unsigned long long>(c.turns),
               static_cast<unsigned long long>(c.turns_total), hit_pct,
               static_cast<double>(c.bytes_restored) / (1 << 20),
               static_cast<double>(c.bytes_put) / (1 << 20),
               static_cast<double>(c.elapsed_micros) / 1e6, terminal_ ? "\x1b[K" : "\n");
  std::fflush(out_);
  printed_ = true;
}

void Progress::Finish() {
  if (enabled_ && terminal_ && printed_) {
    std::fputc('\n', out_);
    std::fflush(out_);
  }
}

}  // namespace wombatkv::workload
