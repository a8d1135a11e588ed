#include "base/spin_poll.h"

#include <gtest/gtest.h>

namespace wombatkv {
namespace {

// Moves `step` µs at every reading, so every spin round looks like a yield that lost the core
// for that long: contention without timing.
class SteppingClock final : public Clock {
 public:
  explicit SteppingClock(uint64_t step) : step_(step) {}
  uint64_t NowMicros() override { return now_ += step_; }
  uint64_t WallMicros() override { return now_; }
  void SleepMicros(uint64_t micros) override { now_ += micros; }
  bool WaitFor(std::condition_variable&, std::unique_lock<std::mutex>&, uint64_t) override {
    return false;
  }

 private:
  const uint64_t step_;
  uint64_t now_ = 0;
};

// Budget 2 × 16 = 32 µs; rounds of 11 µs count as contended (over kContendedRoundMicros).
constexpr AdaptiveSpin::Options kSpin{0, 50, 16, 128};
static_assert(11 > kContendedRoundMicros);

// The event loop: a round that lost the core ends the spin, as failed.
TEST(SpinPoll, StopsAtTheFirstContendedRoundWhenAskedTo) {
  AdaptiveSpin spin(kSpin);
  SteppingClock clock(11);
  int polls = 0;
  EXPECT_FALSE(SpinPoll(spin, clock, Contended::kStop, [&] { return ++polls == 3; }));
  EXPECT_EQ(polls, 1);
  EXPECT_LT(spin.limit(), 32u) << "a stopped spin counts as failed";
}

// The client: the core went to others (the daemon answering), and it keeps polling within its
// budget until the answer is there.
TEST(SpinPoll, KeepsYieldingThroughContendedRoundsWithinTheBudget) {
  AdaptiveSpin spin(kSpin);
  SteppingClock clock(11);
  int polls = 0;
  EXPECT_TRUE(SpinPoll(spin, clock, Contended::kKeepYielding, [&] { return ++polls == 3; }));
  EXPECT_EQ(polls, 3);

  // The budget still bounds it.
  polls = 0;
  EXPECT_FALSE(SpinPoll(spin, clock, Contended::kKeepYielding, [&] { return ++polls == 100; }));
  EXPECT_LE(polls, 5);
}

// A wait for a disk sync: PollYielding tells a contended stop from a spent budget, and a budget
// of 0 polls not at all.
TEST(PollYielding, ReportsHowThePollEnded) {
  SteppingClock quiet(1);
  int polls = 0;
  PollEnd end = PollYielding(quiet, 20, Contended::kStop, [&] { return ++polls == 3; });
  EXPECT_EQ(end.kind, PollEnd::kCaught);
  EXPECT_EQ(polls, 3);

  polls = 0;
  end = PollYielding(quiet, 20, Contended::kStop, [&] { return ++polls == 1000; });
  EXPECT_EQ(end.kind, PollEnd::kSpent);
  EXPECT_GE(end.micros, 20u);

  SteppingClock busy(11);
  polls = 0;
  end = PollYielding(busy, 200, Contended::kStop, [&] { return ++polls == 1000; });
  EXPECT_EQ(end.kind, PollEnd::kContended);
  EXPECT_EQ(polls, 1);

  // A contended round that also used up the budget counts as contended: it says nothing about
  // how long the wait would have been on a free core.
  polls = 0;
  end = PollYielding(busy, 5, Contended::kStop, [&] { return ++polls == 1000; });
  EXPECT_EQ(end.kind, PollEnd::kContended);

  polls = 0;
  end = PollYielding(quiet, 0, Contended::kStop, [&] { return ++polls > 0; });
  EXPECT_EQ(end.kind, PollEnd::kSpent);
  EXPECT_EQ(polls, 0);
}

}  // namespace
}  // namespace wombatkv
