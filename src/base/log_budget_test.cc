#include "base/log_budget.h"

#include <gtest/gtest.h>

namespace wombatkv {
namespace {

TEST(LogBudget, LetsAFewLinesThroughPerWindowAndCountsTheRest) {
  LogBudget budget(3, 1'000'000);
  std::string note = "stale";
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(budget.Take(10 + i, &note)) << i;
    EXPECT_EQ(note, "");
  }
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(budget.Take(100 + i, &note)) << i;
  EXPECT_FALSE(budget.Take(999'999, &note));
  // The next window: the first line through says how many were held back, once.
  ASSERT_TRUE(budget.Take(1'000'010, &note));
  EXPECT_EQ(note, " (6 similar lines held back)");
  ASSERT_TRUE(budget.Take(1'000'011, &note));
  EXPECT_EQ(note, "");
  ASSERT_TRUE(budget.Take(1'000'012, &note));
  EXPECT_FALSE(budget.Take(1'000'013, &note));
  ASSERT_TRUE(budget.Take(5'000'000, &note));
  EXPECT_EQ(note, " (1 similar line held back)");
}

TEST(LogBudget, AClockThatGoesBackStartsANewWindow) {
  LogBudget budget(1, 1'000'000);
  std::string note;
  ASSERT_TRUE(budget.Take(5'000'000, &note));
  EXPECT_FALSE(budget.Take(5'000'001, &note));
  EXPECT_TRUE(budget.Take(1'000, &note)) << "a window that started in the future never ends";
  EXPECT_EQ(note, " (1 similar line held back)");
}

}  // namespace
}  // namespace wombatkv
