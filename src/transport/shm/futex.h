// Futex wait/wake on 32-bit words, for the shared-memory transport's wake-ups.
//
// Shared*: words inside a MAP_SHARED segment, waited on and woken from different processes (the
// kernel keys the futex by the backing page, not the address). Private*: words of this process
// only (base/futex.h). A wake on a word nobody waits on — even one whose memory was reused — is
// harmless; waiters tolerate spurious returns and re-check their condition.
//
// The waits have no timeout on purpose: every waiter has a peer or a monitor thread that wakes it
// (docs/shm.md, "Wake-ups"), so an idle transport never polls.
#pragma once

#include <atomic>
#include <cstdint>

#include "base/adaptive_spin.h"
#include "base/futex.h"
#include "wombatkv/env.h"

namespace wombatkv::shm {

// Sleeps while `*word == expected` (returns at once otherwise), until woken.
void SharedFutexWait(uint32_t* word, uint32_t expected);
// Wakes up to `count` waiters of `word`.
void SharedFutexWake(uint32_t* word, int count);

using ::wombatkv::PrivateFutexWait;
using ::wombatkv::PrivateFutexWake;

// Atomic access to a plain word of a shared segment (C++20 atomic_ref: the segment holds plain
// integers, never std::atomic objects, so both processes agree on the bytes).
inline std::atomic_ref<uint32_t> Atomic(uint32_t& word) { return std::atomic_ref<uint32_t>(word); }

// Gives this thread's core to another runnable thread (sched_yield). Used between spinning and
// sleeping: a peer that is runnable on our core gets to run without the cross-core wake-up a
// futex sleep would need from it later (on a VM an inter-processor interrupt, several µs).
void YieldCore();
// Rounds of YieldCore() a waiter tries after its spin before it sleeps: bounded, so a long wait
// (a publish waiting for L2) costs a few dozen syscalls, then nothing.
inline constexpr uint32_t kYieldRounds = 32;

// The seq_cst fence of R3 (segment_layout.h). ThreadSanitizer does not model fences (and GCC
// refuses them under -fsanitize=thread), so there it is a seq_cst read-modify-write, which on
// every target the project builds for is a full barrier too.
inline void FullFence() {
#if defined(__SANITIZE_THREAD__)
  static std::atomic<uint32_t> fence_word{0};
  fence_word.fetch_add(0, std::memory_order_seq_cst);
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

// A hint for spin loops: lets the sibling hyper-thread run (x86 PAUSE).
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Rounds of CpuRelax() that take about `micros` on this core by `clock` (a PAUSE takes from a few
// ns to 140 cycles, by CPU model), at most AdaptiveSpin::kCeiling; `fallback` if the clock did
// not move (a test's manual clock). Measures for about 3 × 1024 rounds (60–150 µs), best of three:
// a run that lost its core reads long.
uint32_t RelaxRoundsFor(Clock& clock, uint32_t micros, uint32_t fallback);

// How long to spin before sleeping, learnt from recent waits (base/adaptive_spin.h, shared with
// the TCP transport).
using ::wombatkv::AdaptiveSpin;

}  // namespace wombatkv::shm
