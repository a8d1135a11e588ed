// SpinPoll: the bounded, adaptive busy-poll both ends of the TCP transport do before they sleep
// (docs/daemon.md, "Spinning"): the client for its response, the server's event loop for the next
// request after a wake-up with work.
//
// Why: on a machine whose cores go idle, every sleep ends in a cross-core wake-up (on a VM an
// inter-processor interrupt and a halt exit, tens of µs); a one-client round trip pays two.
// Polling for a few µs catches the answer without either.
//
// When it must not: when the core is contended (more runnable processes than cores, e.g. eight
// clients and the daemon on two cores) every µs spent polling is taken from the peer that would
// answer. A yield that took long means another task ran on this core meanwhile: with
// Contended::kStop the spin then stops at once and counts as failed, so the AdaptiveSpin limit
// decays to 0 and the waiter sleeps from then on (with rare probes). The event loop does that.
// The client does not (Contended::kKeepYielding): its yield hands the core to the daemon or to
// another client, which is what it waits for anyway, and sleeping instead costs a wake-up per
// response (docs/daemon.md, "Spinning").
#pragma once

#include <sched.h>

#include <cstdint>

#include "base/adaptive_spin.h"
#include "wombatkv/env.h"

namespace wombatkv::tcp {

// Bounds the rounds even under a clock that does not move (a test's manual clock).
inline constexpr uint32_t kSpinRoundsPerMicroMax = 4;

enum class Contended { kStop, kKeepYielding };

// Calls `poll` (true: what we wait for is here) until it succeeds, the spin budget (µs) runs out,
// or (kStop) the core turns out to be contended; reports the outcome to `spin`. True when `poll`
// succeeded.
template <typename Poll>
bool SpinPoll(AdaptiveSpin& spin, Clock& clock, Contended contended, Poll&& poll) {
  const uint32_t budget = spin.Budget();
  if (budget == 0) return false;
  const uint64_t start = clock.NowMicros();
  uint64_t before = start;
  for (uint32_t round = 0; round < budget * kSpinRoundsPerMicroMax; ++round) {
    const bool done = poll();
    const uint64_t now = clock.NowMicros();
    if (done) {
      spin.Succeeded(static_cast<uint32_t>(now - start));
      return true;
    }
    if (now - start >= budget) break;
    if (contended == Contended::kStop && now - before > kContendedRoundMicros) break;
    // A peer runnable on this core gets it now rather than after a wake-up elsewhere.
    ::sched_yield();
    before = now;
  }
  spin.Failed();
  return false;
}

}  // namespace wombatkv::tcp
