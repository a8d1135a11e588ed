// Polling with yields: how a waiter catches an answer without sleeping. Used by both ends of the
// TCP transport (docs/daemon.md, "Spinning": the client for its response, the server's event
// loop for the next request after a wake-up with work) and by the shared-memory client while a
// request waits for a disk sync (docs/shm.md, "Wake-ups").
//
// Why: on a machine whose cores go idle, every sleep ends in a cross-core wake-up (on a VM an
// inter-processor interrupt and a halt exit, tens of µs); a one-client round trip pays two.
// Polling catches the answer without either.
//
// When it must not: when the core is contended (more runnable processes than cores, e.g. eight
// clients and the daemon on two cores) every µs spent polling is taken from the peer that would
// answer. A yield that took long means another task ran on this core meanwhile: with
// Contended::kStop the poll then stops at once. The TCP event loop and every wait for a disk
// sync do that. The TCP client's short waits do not (Contended::kKeepYielding): its yield hands
// the core to the daemon or to another client, which is what it waits for anyway, and sleeping
// instead costs a wake-up per response (docs/daemon.md, "Spinning").
#pragma once

#include <sched.h>

#include <algorithm>
#include <cstdint>

#include "base/adaptive_spin.h"
#include "base/contention_gate.h"
#include "wombatkv/env.h"

namespace wombatkv {

// Bounds the rounds even under a clock that does not move (a test's manual clock).
inline constexpr uint32_t kSpinRoundsPerMicroMax = 4;

// How long a caller polls for an answer that waits for a disk sync (a save, a publish: hundreds
// of µs on a local SSD): twice the average whole wait (AdaptiveSpin::Waited), at most 1 ms.
// Waits longer than that (a throttled disk, S3) decay it to 0, after which they are slept
// through. Floor 0, no probes: a waiter that stopped polling still learns from the waits it
// slept through — so under sustained contention the limit rises and falls again (each
// contended poll costs a round or two). Its polls may take up to kSyncRoundsPerMicroMax rounds
// per µs: a bare sched_yield on a fast host takes ~100 ns, and the clock, not the round cap,
// should end a poll of a millisecond.
inline constexpr AdaptiveSpin::Options kSyncWaitSpin{0, 1000, 0, 0};
inline constexpr uint32_t kSyncRoundsPerMicroMax = 32;

enum class Contended { kStop, kKeepYielding };

// How a poll ended: what it waited for came, the budget ran out, or (Contended::kStop) a yield
// took over kContendedRoundMicros. `micros`: how long it polled.
struct PollEnd {
  enum Kind { kCaught, kSpent, kContended } kind;
  uint32_t micros;
};

// Calls `poll` (true: what we wait for is here) until it succeeds, `budget` µs pass by `clock`,
// or (kStop) the core turns out to be contended — a round (poll and yield) took over
// kContendedRoundMicros, which is checked first, so a contended round that also used up the
// budget counts as contended — yielding the core between calls. At most `rounds_per_micro`
// rounds per µs of budget. A budget of 0 polls not at all.
template <typename Poll>
PollEnd PollYielding(Clock& clock, uint32_t budget, Contended contended, Poll&& poll,
                     uint32_t rounds_per_micro = kSpinRoundsPerMicroMax) {
  if (budget == 0) return {PollEnd::kSpent, 0};
  const uint64_t start = clock.NowMicros();
  uint64_t before = start;
  for (uint64_t round = 0; round < uint64_t{budget} * rounds_per_micro; ++round) {
    const bool done = poll();
    const uint64_t now = clock.NowMicros();
    const auto micros = static_cast<uint32_t>(now - start);
    if (done) return {PollEnd::kCaught, micros};
    if (contended == Contended::kStop && now - before > kContendedRoundMicros)
      return {PollEnd::kContended, micros};
    if (now - start >= budget) return {PollEnd::kSpent, micros};
    // A peer runnable on this core gets it now rather than after a wake-up elsewhere.
    ::sched_yield();
    before = now;
  }
  return {PollEnd::kSpent, static_cast<uint32_t>(clock.NowMicros() - start)};
}

// PollYielding for as long as `spin` allows, reporting the outcome to it (a spin that did not
// catch counts as failed). True when `poll` succeeded.
template <typename Poll>
bool SpinPoll(AdaptiveSpin& spin, Clock& clock, Contended contended, Poll&& poll) {
  const uint32_t budget = spin.Budget();
  if (budget == 0) return false;
  const PollEnd end = PollYielding(clock, budget, contended, poll);
  if (end.kind == PollEnd::kCaught) {
    spin.Succeeded(end.micros);
    return true;
  }
  spin.Failed();
  return false;
}

// A wait for a disk sync (kSyncWaitSpin): unless `gate` (optional) keeps this wait from polling,
// PollYielding for `spin`'s budget, at most `cap` µs, stopping at the first contended round,
// which counts as a failure. True when it polled and no contention stopped it: then the whole
// wait may teach `spin` (AdaptiveSpin::Waited) once it ends.
template <typename Poll>
bool SyncPoll(AdaptiveSpin& spin, ContentionGate* gate, Clock& clock, uint64_t cap, Poll&& poll) {
  if (gate && !gate->Admit()) return false;
  const auto budget = static_cast<uint32_t>(std::min<uint64_t>(spin.Budget(), cap));
  const bool contended =
      PollYielding(clock, budget, Contended::kStop, poll, kSyncRoundsPerMicroMax).kind ==
      PollEnd::kContended;
  if (gate && budget > 0) gate->Polled(contended);
  if (!contended) return true;
  spin.Failed();
  return false;
}

}  // namespace wombatkv
