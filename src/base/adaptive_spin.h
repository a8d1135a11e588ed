// AdaptiveSpin: how long a waiter should spin (poll without sleeping) before it sleeps, learnt
// from how long recent waits took. After the adaptive mutexes of glibc, but shrinking on failure.
//
// Why: when the peer answering a request runs on another core, a waiter that sleeps pays two
// wake-ups per round trip (on a VM an inter-processor interrupt each, tens of µs); spinning for a
// few µs catches the answer instead. On oversubscribed cores (more busy processes than cores)
// spinning only delays the peer, the spins fail, and the limit decays so the waiter sleeps soon.
//
// The unit is the caller's: rounds of a CPU pause (the shared-memory transport) or microseconds
// (the TCP transport, whose polls are syscalls).
//
// Rule (a pure function of the history, so it is unit-tested without clocks):
//   limit() = min(ceiling, floor + 2 × avg), avg an exponential average of successful waits;
//   Succeeded(n): avg += (n − avg) / 8 (rounded towards n);   Failed(): avg −= ceil(avg / 4);
//   CaughtAfterSpin() (after Failed(), when a cheap wait right after the spin caught the event):
//   Succeeded(min(ceiling, 4 × limit()));
//   Waited(total) (instead of Succeeded/Failed, for waits learnt as a whole): total <= ceiling ?
//   Succeeded(total) : Failed().
// With floor 0 the limit can reach 0, and a waiter that never spins could never learn that
// spinning pays again (a client whose peer became idle-cored again). So with `probe_max` > 0,
// Budget() — called once per wait — hands out a probe of the full ceiling every k-th wait while
// the limit is 0, k doubling after each failed probe up to `probe_max` and back to 1 after any
// success: a waiter that spins in vain costs ceiling / probe_max per wait at most.
//
// Thread-safety: any number of threads; relaxed races between them only blur the average.
#pragma once

#include <atomic>
#include <cstdint>

namespace wombatkv {

// A spin round that yields the core (sched_yield, maybe with a non-blocking poll) and takes longer
// than this means another task had the core meanwhile: the cores are contended, and spinning on
// is stealing from the peer the waiter waits for.
inline constexpr uint64_t kContendedRoundMicros = 10;

class AdaptiveSpin {
 public:
  struct Options {
    uint32_t floor = 0;      // spun even when recent spins all failed
    uint32_t ceiling = 4096; // never spin longer than this
    uint32_t initial = 256;  // the average before any wait was seen
    uint32_t probe_max = 0;  // 0 = no probes (use a floor > 0 instead)
  };

  static constexpr uint32_t kCeiling = 4096;  // the default ceiling

  // `floor`: rounds spun even when recent spins all failed; the other options are the defaults.
  explicit AdaptiveSpin(uint32_t floor) : AdaptiveSpin(Options{floor, kCeiling, 256, 0}) {}
  explicit AdaptiveSpin(Options o)
      : floor_(o.floor), ceiling_(o.ceiling), probe_max_(o.probe_max), avg_(o.initial) {}

  // The spin limit now. No side effect: callers may re-read it inside their spin loop.
  uint32_t limit() const {
    const uint64_t l = 2ull * avg_.load(std::memory_order_relaxed) + floor_;
    return l < ceiling_ ? static_cast<uint32_t>(l) : ceiling_;
  }

  // The spin allowed for the wait that starts now: limit(), or a probe (see above) when that is 0.
  // Call once per wait, then report how it went with Succeeded or Failed.
  uint32_t Budget() {
    const uint32_t l = limit();
    if (l > 0 || probe_max_ == 0) return l;
    const uint32_t left = probe_countdown_.load(std::memory_order_relaxed);
    if (left > 1) {
      probe_countdown_.store(left - 1, std::memory_order_relaxed);
      return 0;
    }
    return ceiling_;
  }

  // The awaited event came after `spins` (rounds or µs) of spinning.
  void Succeeded(uint32_t spins) {
    const int64_t avg = avg_.load(std::memory_order_relaxed);
    // Rounded towards the sample when it is larger: an average of 1 must be able to learn that
    // waits take 3 (truncating would keep it at 1 and the spins would keep failing).
    const int64_t diff = int64_t{spins} - avg;
    avg_.store(static_cast<uint32_t>(avg + (diff > 0 ? (diff + 7) / 8 : diff / 8)),
               std::memory_order_relaxed);
    probe_interval_.store(1, std::memory_order_relaxed);
    probe_countdown_.store(1, std::memory_order_relaxed);
  }

  // The spin ran out, but a short wait without a sleep — a yield that came straight back, so no
  // other task wanted this core — caught the event: spinning longer would have caught it too,
  // and cost no more than the yields' system calls. Without this the limit could only shrink
  // once it fell below the usual wait (a success needs the spin to end first), and a waiter whose
  // limit collapsed at a burst of slow waits would yield on every wait of an idle machine: the
  // shared-memory client's get did, 3.4 yields per call (BENCHMARKS.md, "Session 14"). Reports a
  // success of four times the limit: after its Failed(), the average still grows by about 40%
  // per wait, so the limit passes a steady wait within a dozen waits. Overshooting costs nothing
  // on the waits that follow: a spin ends as soon as what it waits for is there.
  // Call after Failed() for the same wait.
  // With floor 0 and the limit at 0 it reports 0: such a waiter relearns through probes.
  void CaughtAfterSpin() {
    const uint32_t l = limit();  // once: another thread may change it meanwhile
    Succeeded(l < ceiling_ / 4 ? 4 * l : ceiling_);
  }

  // For waits learnt as a whole (kSyncWaitSpin in spin_poll.h), instead of Succeeded/Failed: the
  // event came `total` after the wait began, whether a spin caught it or the waiter slept
  // through the rest, and no other task wanted the core while it spun. A spin that long would
  // have caught it: Succeeded(total) when that is within the ceiling, else Failed(). So the
  // limit follows the waits themselves, where Succeeded/Failed alone could not grow it past the
  // spin of the moment: a spin of 50 µs never catches a save that syncs for 300 µs, and each
  // miss shrinks it.
  void Waited(uint64_t total) {
    if (total <= ceiling_) Succeeded(static_cast<uint32_t>(total));
    else Failed();
  }

  // The spin ran out and the waiter had to sleep.
  void Failed() {
    const uint32_t avg = avg_.load(std::memory_order_relaxed);
    avg_.store(avg - (avg + 3) / 4, std::memory_order_relaxed);
    if (probe_max_ == 0 || avg > 0) return;
    // A failed probe: the next one comes twice as late.
    uint32_t k = 2 * probe_interval_.load(std::memory_order_relaxed);
    if (k > probe_max_) k = probe_max_;
    probe_interval_.store(k, std::memory_order_relaxed);
    probe_countdown_.store(k, std::memory_order_relaxed);
  }

 private:
  const uint32_t floor_;
  const uint32_t ceiling_;
  const uint32_t probe_max_;
  std::atomic<uint32_t> avg_;
  std::atomic<uint32_t> probe_interval_{1};
  std::atomic<uint32_t> probe_countdown_{1};
};

}  // namespace wombatkv
