#include "transport/shm/futex.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

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

}  // namespace wombatkv::shm
