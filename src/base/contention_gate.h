// ContentionGate: whether a wait for a disk sync should poll at all, from how its recent polls
// ended. Used with SyncPoll (base/spin_poll.h) by the TCP client; not by the shared-memory
// client, whose polls spare the daemon a futex wake-up per answer (shm_channel.cc).
//
// Why: a sync poll stops at its first contended round (a yield that ran another task), but that
// round has already cost a yield that hands the core over, a poll(2) of the socket and two
// context switches. With eight clients saving on two cores 77% of the polls ended so, at 1.15
// yields and 2.1 poll(2) calls per save in each client, and clients that skipped the poll
// altogether spent 26-29 µs of CPU per 1 KiB save against 38-40 µs (BENCHMARKS.md, "Session
// 36"). A lone client's poll, uncontended, saves it a wake-up on every save, so the poll must
// stay there.
//
// Rule (a pure function of the history): avg is an exponential average (weight 1/8) of the
// polls' outcomes, 1 for one cut short by contention, 0 otherwise, kept in 1/1024ths. While
// avg is under three quarters every wait polls; above it, only every kProbeEvery-th wait does (a
// probe), so the gate learns when the cores free up: from a saturated average, three uncontended
// probes (24 waits) open it again. It takes eleven contended polls in a row to close it from 0.
// A lone client's polls are seldom contended (17% of them with the daemon's threads on the same
// two cores, where eight clients' were 77%), and a stray contended poll moves avg by 1/8 (an
// earlier back-off that skipped polls after any contended one made a lone client sleep through
// its next waits: BENCHMARKS.md, "Session 26").
//
// Thread-safety: any number of threads; relaxed races between them only blur the average.
#pragma once

#include <atomic>
#include <cstdint>

namespace wombatkv {

class ContentionGate {
 public:
  static constexpr uint32_t kOne = 1024;        // avg of polls that were all contended
  static constexpr uint32_t kClosedAt = kOne * 3 / 4;  // avg from which most waits do not poll
  static constexpr uint32_t kProbeEvery = 8;    // a closed gate still polls this often

  // Whether the wait that starts now polls. Call once per wait; report a poll with Polled.
  bool Admit() {
    if (avg_.load(std::memory_order_relaxed) < kClosedAt) return true;
    return countdown_.fetch_add(1, std::memory_order_relaxed) % kProbeEvery == kProbeEvery - 1;
  }

  // How an admitted poll ended: cut short because another task wanted the core, or not.
  void Polled(bool contended) {
    const int64_t avg = avg_.load(std::memory_order_relaxed);
    const int64_t diff = (contended ? int64_t{kOne} : 0) - avg;
    // Rounded towards the target, so that avg reaches 0 and kOne rather than stopping short.
    avg_.store(static_cast<uint32_t>(avg + (diff > 0 ? (diff + 7) / 8 : (diff - 7) / 8)),
               std::memory_order_relaxed);
  }

  uint32_t average() const { return avg_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint32_t> avg_{0};
  std::atomic<uint32_t> countdown_{0};
};

}  // namespace wombatkv
