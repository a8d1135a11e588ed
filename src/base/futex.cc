#include "base/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace wombatkv {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));

void PrivateFutexWait(std::atomic<uint32_t>* word, uint32_t expected) {
  // EAGAIN (value changed), EINTR (signal) and spurious returns all mean "re-check".
  (void)::syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

void PrivateFutexWake(std::atomic<uint32_t>* word, int count) {
  (void)::syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, count, nullptr, nullptr, 0);
}

}  // namespace wombatkv
