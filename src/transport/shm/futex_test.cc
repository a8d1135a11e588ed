#include "transport/shm/futex.h"

#include <gtest/gtest.h>

#include <vector>

namespace wombatkv::shm {
namespace {

// Reads the given times in turn (then stands still), whatever the CPU did meanwhile.
class ScriptedClock final : public Clock {
 public:
  explicit ScriptedClock(std::vector<uint64_t> readings) : readings_(std::move(readings)) {}
  uint64_t NowMicros() override {
    if (next_ < readings_.size()) last_ = readings_[next_++];
    return last_;
  }
  uint64_t WallMicros() override { return last_; }
  void SleepMicros(uint64_t) override {}
  bool WaitFor(std::condition_variable&, std::unique_lock<std::mutex>&, uint64_t) override {
    return false;
  }

 private:
  std::vector<uint64_t> readings_;
  size_t next_ = 0;
  uint64_t last_ = 0;
};

// 1024 rounds in 10 µs: 5 µs are 512 rounds.
TEST(RelaxRoundsFor, ScalesTheRoundsOfAMeasuredRunToTheTimeAskedFor) {
  ScriptedClock clock({0, 10, 10, 20, 20, 30});
  EXPECT_EQ(RelaxRoundsFor(clock, 5, 99), 512u);
}

// Runs of 40, 10 and 25 µs: the two long ones lost the core to another task.
TEST(RelaxRoundsFor, TakesTheFastestRun) {
  ScriptedClock clock({0, 40, 40, 50, 50, 75});
  EXPECT_EQ(RelaxRoundsFor(clock, 5, 99), 512u);
}

TEST(RelaxRoundsFor, IsTheFallbackWhenTheClockDoesNotMove) {
  ScriptedClock clock({});
  EXPECT_EQ(RelaxRoundsFor(clock, 5, 99), 99u);
}

// A CPU whose pause takes ~1 ns would be asked for 5,000 rounds: spins never exceed the ceiling.
TEST(RelaxRoundsFor, NeverExceedsTheSpinCeiling) {
  ScriptedClock clock({0, 1, 1, 2, 2, 3});
  EXPECT_EQ(RelaxRoundsFor(clock, 5, 99), AdaptiveSpin::kCeiling);
}

}  // namespace
}  // namespace wombatkv::shm
