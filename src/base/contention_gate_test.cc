// ContentionGate is a pure function of the polls reported to it: these tests feed histories and
// check which waits it lets poll (no clocks, no threads).
#include "base/contention_gate.h"

#include <gtest/gtest.h>

namespace wombatkv {
namespace {

// How many of `waits` waits the gate lets poll, each admitted poll ending as `contended` says.
int Admitted(ContentionGate& g, int waits, bool contended) {
  int polled = 0;
  for (int i = 0; i < waits; ++i) {
    if (!g.Admit()) continue;
    ++polled;
    g.Polled(contended);
  }
  return polled;
}

TEST(ContentionGate, EveryWaitPollsWhileThePollsAreNotCutShort) {
  ContentionGate g;
  EXPECT_EQ(Admitted(g, 1000, /*contended=*/false), 1000);
  EXPECT_EQ(g.average(), 0u);
}

TEST(ContentionGate, PollsThatKeepEndingContendedBecomeOneProbeInEight) {
  ContentionGate g;
  // Eleven contended polls in a row pass three quarters of the average; from then on one wait
  // in eight polls.
  EXPECT_EQ(Admitted(g, 10, /*contended=*/true), 10);
  EXPECT_LT(g.average(), ContentionGate::kClosedAt);
  EXPECT_EQ(Admitted(g, 1, /*contended=*/true), 1);
  EXPECT_GE(g.average(), ContentionGate::kClosedAt);
  EXPECT_EQ(Admitted(g, 800, /*contended=*/true), 800 / int{ContentionGate::kProbeEvery});
  EXPECT_EQ(g.average(), ContentionGate::kOne) << "the average reaches all-contended";
}

TEST(ContentionGate, AStrayContendedPollOnAnIdleMachineClosesNothing) {
  ContentionGate g;
  for (int round = 0; round < 50; ++round) {
    EXPECT_TRUE(g.Admit());
    g.Polled(/*contended=*/true);
    EXPECT_EQ(Admitted(g, 20, /*contended=*/false), 20) << "round " << round;
  }
  // Even ten in a row leave it open.
  for (int i = 0; i < 10; ++i) g.Polled(/*contended=*/true);
  EXPECT_TRUE(g.Admit());
}

TEST(ContentionGate, UncontendedProbesOpenAClosedGateAgain) {
  ContentionGate g;
  for (int i = 0; i < 100; ++i) g.Polled(/*contended=*/true);
  ASSERT_EQ(g.average(), ContentionGate::kOne);
  // The cores free up: the probes see it, and within three probes (24 waits) every wait polls.
  int waits = 0;
  while (g.average() >= ContentionGate::kClosedAt) {
    ASSERT_LT(waits, 100) << "the gate never opened";
    if (g.Admit()) g.Polled(/*contended=*/false);
    ++waits;
  }
  EXPECT_LE(waits, 3 * int{ContentionGate::kProbeEvery});
  EXPECT_EQ(Admitted(g, 100, /*contended=*/false), 100);
}

}  // namespace
}  // namespace wombatkv
