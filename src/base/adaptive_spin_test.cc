// AdaptiveSpin is a pure function of the waits reported to it: these tests feed histories and
// check the limits and budgets it hands out (no clocks, no threads).
#include "base/adaptive_spin.h"

#include <gtest/gtest.h>

#include <vector>

namespace wombatkv {
namespace {

AdaptiveSpin::Options Micros(uint32_t initial, uint32_t probe_max) {
  AdaptiveSpin::Options o;
  o.floor = 0;
  o.ceiling = 100;
  o.initial = initial;
  o.probe_max = probe_max;
  return o;
}

TEST(AdaptiveSpin, TheLimitIsTwiceTheAverageSuccessPlusTheFloorWithinTheCeiling) {
  AdaptiveSpin s(32);  // the shared-memory defaults: average 256 rounds at first
  EXPECT_EQ(s.limit(), 2 * 256 + 32u);
  for (int i = 0; i < 200; ++i) s.Succeeded(10);
  EXPECT_NEAR(s.limit(), 2 * 10 + 32, 16);
  for (int i = 0; i < 200; ++i) s.Succeeded(100'000);
  EXPECT_EQ(s.limit(), AdaptiveSpin::kCeiling);
}

TEST(AdaptiveSpin, FailuresDecayTheLimitToTheFloor) {
  AdaptiveSpin s(32);
  for (int i = 0; i < 100; ++i) s.Failed();
  EXPECT_EQ(s.limit(), 32u);
  AdaptiveSpin zero(Micros(20, 0));
  for (int i = 0; i < 100; ++i) zero.Failed();
  EXPECT_EQ(zero.limit(), 0u) << "with floor 0 the waiter stops spinning entirely";
  EXPECT_EQ(zero.Budget(), 0u) << "and without probes it never spins again";
}

TEST(AdaptiveSpin, AWaitCaughtRightAfterTheSpinTeachesTheLimitToCoverIt) {
  AdaptiveSpin s(32);
  for (int i = 0; i < 100; ++i) s.Failed();  // collapsed to the floor by a burst of slow waits
  ASSERT_EQ(s.limit(), 32u);
  // The usual wait is now 270 rounds: every spin misses, and each wait is caught by a yield
  // that came straight back.
  const uint32_t wait = 270;
  int waits = 0;
  while (s.limit() < wait) {
    ASSERT_LT(++waits, 20) << "the limit must grow past the wait within a dozen waits";
    s.Failed();
    s.CaughtAfterSpin();
  }
  // From here the spin catches the wait, and successes keep the limit above it.
  for (int i = 0; i < 200; ++i) {
    ASSERT_GE(s.limit(), wait) << "wait " << i;
    s.Succeeded(wait);
  }
  // A misses-only history still decays to the floor: nothing but a catch makes it grow.
  for (int i = 0; i < 100; ++i) s.Failed();
  EXPECT_EQ(s.limit(), 32u);
}

TEST(AdaptiveSpin, CatchesNeverPushTheLimitPastTheCeiling) {
  AdaptiveSpin s(Micros(20, 0));
  for (int i = 0; i < 500; ++i) {
    s.Failed();
    s.CaughtAfterSpin();
    ASSERT_LE(s.limit(), 100u);
  }
  EXPECT_GE(s.limit(), 60u) << "catches of the whole limit drive it towards the ceiling";
}

TEST(AdaptiveSpin, ASpinThatPaysKeepsTheBudgetAboveTheTypicalWait) {
  AdaptiveSpin s(Micros(20, 64));
  for (int i = 0; i < 100; ++i) {
    const uint32_t b = s.Budget();
    ASSERT_GE(b, 12u) << "a wait of 12 must stay within the spin, round " << i;
    s.Succeeded(12);
  }
}

// Waits for a disk sync (kSyncWaitSpin): the limit starts at 0 and learns from whole waits, so
// within a few waits a spin covers the usual one, though no spin ever caught it before.
TEST(AdaptiveSpin, WholeWaitsTeachAStartingLimitOfZeroToCoverThem) {
  AdaptiveSpin s(Micros(0, 0));
  EXPECT_EQ(s.Budget(), 0u);
  int waits = 0;
  while (s.Budget() < 30 && waits < 100) {
    s.Waited(30);
    ++waits;
  }
  EXPECT_GE(s.Budget(), 30u);
  EXPECT_LE(waits, 8) << "a steady wait is covered within a handful of waits";
  for (int i = 0; i < 100; ++i) {
    ASSERT_GE(s.Budget(), 30u) << "and stays covered, wait " << i;
    s.Waited(30);
  }
}

// A wait beyond the ceiling (a throttled disk, S3) teaches nothing but to stop spinning: the
// limit decays to 0, and one steady run of short waits brings it back.
TEST(AdaptiveSpin, WholeWaitsBeyondTheCeilingDecayTheLimitToZero) {
  AdaptiveSpin s(Micros(0, 0));
  s.Waited(100);
  EXPECT_GT(s.limit(), 0u) << "a wait of exactly the ceiling is still worth polling for";
  for (int i = 0; i < 20; ++i) s.Waited(40);
  ASSERT_GE(s.limit(), 40u);
  for (int i = 0; i < 30; ++i) s.Waited(101);
  EXPECT_EQ(s.limit(), 0u);
  for (int i = 0; i < 20; ++i) s.Waited(40);
  EXPECT_GE(s.limit(), 40u);
}

TEST(AdaptiveSpin, WhenSpinsNeverPayProbesBackOffExponentiallyToTheMaximum) {
  AdaptiveSpin s(Micros(20, 64));
  // Fail until the limit is 0.
  while (s.limit() > 0) {
    ASSERT_GT(s.Budget(), 0u);
    s.Failed();
  }
  // From now on every spin is a probe of the full ceiling; count the waits between probes.
  std::vector<int> gaps;
  int since = 0;
  for (int wait = 0; wait < 2000; ++wait) {
    const uint32_t b = s.Budget();
    if (b == 0) {
      ++since;
      continue;  // slept at once: nothing to report
    }
    EXPECT_EQ(b, 100u) << "a probe spins up to the ceiling";
    gaps.push_back(since);
    since = 0;
    s.Failed();
  }
  ASSERT_GE(gaps.size(), 8u);
  EXPECT_EQ(gaps[0], 0);
  EXPECT_EQ(gaps[1], 1);
  EXPECT_EQ(gaps[2], 3);
  EXPECT_EQ(gaps[3], 7);
  EXPECT_EQ(gaps.back(), 63) << "probes settle at one per 64 waits";
  // Spent spinning in vain per wait, on average, once settled: ceiling / 64.
}

TEST(AdaptiveSpin, ASuccessfulProbeTurnsSpinningBackOn) {
  AdaptiveSpin s(Micros(20, 64));
  while (s.limit() > 0) s.Failed();
  for (int i = 0; i < 10; ++i) {  // back off a few probes
    if (s.Budget() > 0) s.Failed();
  }
  uint32_t b = 0;
  while ((b = s.Budget()) == 0) {
  }
  s.Succeeded(3);  // the peer became quick again: caught after 3 µs
  EXPECT_GT(s.limit(), 0u);
  for (int i = 0; i < 50; ++i) {
    b = s.Budget();
    ASSERT_GT(b, 0u) << "spinning stays on while it pays, wait " << i;
    s.Succeeded(3);
  }
  EXPECT_GE(s.limit(), 3u);
}

}  // namespace
}  // namespace wombatkv
