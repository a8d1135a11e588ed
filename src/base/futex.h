// Futex wait/wake on 32-bit words of this process (FUTEX_PRIVATE: cheaper in the kernel than the
// shared kind in transport/shm/futex.h). A wake on a word nobody waits on — even one whose memory
// was reused — is harmless; waiters tolerate spurious returns and re-check their condition.
#pragma once

#include <atomic>
#include <cstdint>

namespace wombatkv {

// Sleeps while `*word == expected` (returns at once otherwise), until woken; may return early.
void PrivateFutexWait(std::atomic<uint32_t>* word, uint32_t expected);
// Wakes up to `count` waiters of `word`.
void PrivateFutexWake(std::atomic<uint32_t>* word, int count);

// A one-shot event for one waiting thread: Post() once, Wait() returns once it was posted.
//
// Why not a mutex and condition variable: the poster must notify under the mutex (the waiter may
// destroy the event as soon as it sees it posted), so a waiter woken on another core often finds
// the mutex still held and sleeps again on it — a second wake-up per event (10% of a durable-put
// load's context switches, BENCHMARKS.md "Session 13"). Here Post is one store and one wake, and
// the wake is safe even after the waiter has returned and freed the event (see above).
// Not std::binary_semaphore: libstdc++'s yields the core a few times before it sleeps.
class Baton {
 public:
  void Wait() {
    while (state_.load(std::memory_order_acquire) == 0) PrivateFutexWait(&state_, 0);
  }
  // What was written before Post is visible after Wait. The Baton may be gone once Post returns.
  void Post() {
    state_.store(1, std::memory_order_release);
    PrivateFutexWake(&state_, 1);
  }
  bool posted() const { return state_.load(std::memory_order_acquire) != 0; }

 private:
  std::atomic<uint32_t> state_{0};
};

}  // namespace wombatkv
