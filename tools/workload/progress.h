// Progress: the live status line of wombatkv-workload on stderr. On a terminal it rewrites one
// line in place ("\r", at most 10 times a second); otherwise (a pipe, a CI log) it prints a plain
// line at most once every `plain_interval_micros`. Time comes from the injected Clock.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>

#include "tools/workload/workload.h"
#include "wombatkv/env.h"

namespace wombatkv::workload {

class Progress {
 public:
  Progress(Clock* clock, std::FILE* out, bool terminal, bool enabled,
           uint64_t plain_interval_micros = 2'000'000);
  void Update(const Counters& c);
  // Ends the in-place line (terminal) so the summary starts on a fresh line.
  void Finish();

 private:
  Clock* clock_;
  std::FILE* out_;
  bool terminal_;
  bool enabled_;
  uint64_t interval_micros_;
  uint64_t last_micros_ = 0;
  bool printed_ = false;
};

}  // namespace wombatkv::workload
