#include "transport/shm/futex.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

namespace wombatkv::shm {
namespace {

static_assert(std::atomic_ref<uint32_t>::is_always_lock_free,
              "shared words must be lock-free (address-free) to work across processes");

void Futex(void* addr, int op, uint32_t val) {
  // EAGAIN (value changed), EINTR (signal) and spurious returns all mean "re-check".
  (void)::syscall(SYS_futex, addr, op, val, nullptr, nullptr, 0);
}

}  // namespace

void SharedFutexWait(uint32_t* word, uint32_t expected) { Futex(word, FUTEX_WAIT, expected); }
void SharedFutexWake(uint32_t* word, int count) {
  Futex(word, FUTEX_WAKE, static_cast<uint32_t>(count));
}
void YieldCore() { (void)::sched_yield(); }

uint32_t RelaxRoundsFor(Clock& clock, uint32_t micros, uint32_t fallback) {
  constexpr uint64_t kRounds = 1024;
  uint64_t best = 0;
  for (int run = 0; run < 3; ++run) {
    const uint64_t start = clock.NowMicros();
    for (uint64_t i = 0; i < kRounds; ++i) CpuRelax();
    const uint64_t took = clock.NowMicros() - start;
    if (took > 0 && (best == 0 || took < best)) best = took;
  }
  if (best == 0) return fallback;
  return static_cast<uint32_t>(std::min<uint64_t>(kRounds * micros / best, AdaptiveSpin::kCeiling));
}

}  // namespace wombatkv::shm
