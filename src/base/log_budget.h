// LogBudget: lets a warning that peers can cause (a malformed frame, a refused connection) through
// at most `lines` times per window of `window_us`, so that a hostile or broken peer cannot fill
// the disk through the log. What it holds back is counted, and the next line let through says so.
//
// Thread-safety: Take may be called concurrently.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

namespace wombatkv {

class LogBudget {
 public:
  LogBudget(uint32_t lines, uint64_t window_us) : lines_(lines), window_us_(window_us) {}

  // Whether a line may be written at `now_us`. If so, `*note` is "" or, when lines were held
  // back since the last one let through, " (N similar lines held back)" to append to it.
  bool Take(uint64_t now_us, std::string* note);

 private:
  const uint32_t lines_;
  const uint64_t window_us_;
  std::mutex mu_;
  uint64_t window_start_us_ = 0;  // GUARDED_BY(mu_)
  uint32_t used_ = 0;             // GUARDED_BY(mu_): lines let through in this window
  uint64_t held_ = 0;             // GUARDED_BY(mu_): held back since the last let through
  bool started_ = false;          // GUARDED_BY(mu_)
};

}  // namespace wombatkv
