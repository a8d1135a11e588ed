// ThreadSleeps: how often the calling thread has slept so far — its voluntary context switches
// (getrusage(RUSAGE_THREAD)); a sched_yield that hands the core over counts as involuntary. The
// transport tests use it to tell a wait that polled for its answer from one that slept.
#pragma once

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

}  // namespace wombatkv
