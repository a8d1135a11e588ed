// ProgressLine: one status line on stderr that a long command rewrites in place ("\r", at most
// ten times a second, by the injected clock). Only on a terminal and without --json/--quiet:
// elsewhere it prints nothing, so logs and pipes stay clean.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "wombatkv/env.h"

namespace wombatkv::cli {

class ProgressLine {
 public:
  ProgressLine(Clock* clock, std::FILE* out, bool enabled)
      : clock_(clock), out_(out), enabled_(enabled) {}
  ~ProgressLine() { Finish(); }

  // Shows `text` unless the last update was under 100 ms ago.
  void Update(std::string_view text) {
    if (!enabled_) return;
    const uint64_t now = clock_->NowMicros();
    if (shown_ && now - last_us_ < 100'000) return;
    last_us_ = now;
    shown_ = true;
    std::fprintf(out_, "\r%.*s\033[K", static_cast<int>(text.size()), text.data());
    std::fflush(out_);
  }
  // Clears the line, so what follows starts at column 0.
  void Finish() {
    if (!shown_) return;
    std::fprintf(out_, "\r\033[K");
    std::fflush(out_);
    shown_ = false;
  }

 private:
  Clock* clock_;
  std::FILE* out_;
  bool enabled_;
  bool shown_ = false;
  uint64_t last_us_ = 0;
};

}  // namespace wombatkv::cli
