// ThreadSleeps: how often the calling thread has slept so far — its voluntary context switches
// (getrusage(RUSAGE_THREAD)); a sched_yield that hands the core over counts as involuntary. The
// transport tests use it to tell a wait that polled for its answer from one that slept.
#pragma once

#include <sys/resource.h>

namespace wombatkv {

// -1 when the kernel does not report it.
inline long ThreadSleeps() {
  rusage u{};
  if (::getrusage(RUSAGE_THREAD, &u) != 0) return -1;
  return u.ru_nvcsw;
}

}  // namespace wombatkv
