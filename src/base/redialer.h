// Redialer<T>: a channel's current connection (T: a TCP connection, a shared-memory attachment),
// made again when it died, one dial at a time.
//
//   D1. While one call dials, the others wait for it and use what it made.
//   D2. A call that waited while a dial failed returns that failure without dialling again:
//       dialling in turn, the last of N calls waiting on a daemon that stopped answering waited
//       N dial timeouts instead of one. A call that starts after the failure dials afresh.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

#include "wombatkv/status.h"

namespace wombatkv {

template <typename T>
class Redialer {
 public:
  explicit Redialer(std::shared_ptr<T> first = nullptr) : current_(std::move(first)) {}

  // The current T if `alive(*it)`, else the one `dial()` makes (Result<std::shared_ptr<T>>).
  template <typename Alive, typename Dial>
  Result<std::shared_ptr<T>> Get(Alive alive, Dial dial) {
    return GetSince(dials_finished(), alive, dial);
  }

  // Dials finished so far.
  uint64_t dials_finished() const { return dials_finished_.load(std::memory_order_acquire); }

  // Get for a call that started when dials_finished() was `finished_before` (D2: a dial that
  // failed since answers it).
  template <typename Alive, typename Dial>
  Result<std::shared_ptr<T>> GetSince(uint64_t finished_before, Alive alive, Dial dial) {
    std::lock_guard<std::mutex> g(mu_);
    if (current_ && alive(*current_)) return current_;
    if (dials_finished_.load(std::memory_order_relaxed) != finished_before && !last_.ok()) {
      return last_;  // D2
    }
    current_.reset();
    Result<std::shared_ptr<T>> made = dial();
    last_ = made.status();
    dials_finished_.fetch_add(1, std::memory_order_release);
    if (made.ok()) current_ = *made;
    return made;
  }

 private:
  std::mutex mu_;
  std::shared_ptr<T> current_;               // GUARDED_BY(mu_)
  Status last_;                              // GUARDED_BY(mu_): how the last dial ended
  std::atomic<uint64_t> dials_finished_{0};  // written under mu_
};

}  // namespace wombatkv
