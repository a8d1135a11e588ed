// ThreadSleeps: how often the calling thread has slept so far — its voluntary context switches
// (getrusage(RUSAGE_THREAD)); a sched_yield that hands the core over counts as involuntary. The
// transport tests use it to tell a wait that polled for its answer from one that slept.
#pragma once

#include <sched.h>
#include <sys/resource.h>

#include "wombatkv/env.h"

namespace wombatkv {

// -1 when the kernel does not report it.
inline long ThreadSleeps() {
  rusage u{};
  if (::getrusage(RUSAGE_THREAD, &u) != 0) return -1;
  return u.ru_nvcsw;
}

// Whether ThreadSleeps counts here: a sleep of 1 ms on `clock` must raise it. Without it every
// wait would look sleepless.
inline bool ThreadSleepsAreCounted(Clock& clock) {
  const long before = ThreadSleeps();
  if (before < 0) return false;
  clock.SleepMicros(1000);
  return ThreadSleeps() > before;
}

// Calls `call` (false: it failed, stop) up to `calls_max` times, until `wanted` calls returned
// without a sleep of the calling thread. Returns how many did; `*calls` how many were made.
template <typename Call>
int CallsWithoutSleep(int calls_max, int wanted, int* calls, Call&& call) {
  int sleepless = 0;
  for (*calls = 0; *calls < calls_max && sleepless < wanted; ++*calls) {
    const long before = ThreadSleeps();
    if (!call()) break;
    if (ThreadSleeps() == before) ++sleepless;
  }
  return sleepless;
}

// Pins the calling thread (and the threads it creates meanwhile) to the `index`-th CPU it may
// run on, until destroyed. The sleep tests put a server's threads on one core and the caller on
// another: whether a poll catches its answer must not depend on where the scheduler placed them
// (sharing a core, the server's work makes every poll round look contended).
class CpuPin {
 public:
  explicit CpuPin(int index) {
    if (::sched_getaffinity(0, sizeof(before_), &before_) != 0) return;
    for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (!CPU_ISSET(cpu, &before_) || seen++ != index) continue;
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      pinned_ = ::sched_setaffinity(0, sizeof(one), &one) == 0;
      return;
    }
  }
  ~CpuPin() {
    if (pinned_) ::sched_setaffinity(0, sizeof(before_), &before_);
  }
  CpuPin(const CpuPin&) = delete;
  CpuPin& operator=(const CpuPin&) = delete;

  // False when the thread may run on `index` CPUs or fewer.
  bool pinned() const { return pinned_; }

 private:
  cpu_set_t before_{};
  bool pinned_ = false;
};

}  // namespace wombatkv
