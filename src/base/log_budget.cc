#include "base/log_budget.h"

namespace wombatkv {

bool LogBudget::Take(uint64_t now_us, std::string* note) {
  std::lock_guard<std::mutex> g(mu_);
  if (!started_ || now_us < window_start_us_ || now_us - window_start_us_ >= window_us_) {
    started_ = true;
    window_start_us_ = now_us;
    used_ = 0;
  }
  if (used_ >= lines_) {
    ++held_;
    return false;
  }
  ++used_;
  note->clear();
  if (held_ > 0) {
    *note = " (" + std::to_string(held_) + " similar line" + (held_ == 1 ? "" : "s") +
            " held back)";
    held_ = 0;
  }
  return true;
}

}  // namespace wombatkv
