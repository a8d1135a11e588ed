#include "base/defer_scope.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

namespace wombatkv {
namespace {

TEST(DeferScope, WithoutAScopeNothingIsTaken) {
  bool ran = false;
  EXPECT_FALSE(DeferScope::Defer([&] { ran = true; }));
  EXPECT_FALSE(ran);
}

TEST(DeferScope, WorkRunsInOrderWhenTheScopeCloses) {
  std::string log;
  {
    DeferScope scope;
    EXPECT_TRUE(DeferScope::Defer([&] { log += "a"; }));
    EXPECT_TRUE(DeferScope::Defer([&] { log += "b"; }));
    log += "-";
    EXPECT_EQ(log, "-");  // nothing yet
  }
  EXPECT_EQ(log, "-ab");
  EXPECT_FALSE(DeferScope::Defer([&] { log += "x"; }));  // closed
}

TEST(DeferScope, WhileClosingItTakesNoMoreWork) {
  std::string log;
  DeferScope scope;
  DeferScope::Defer([&] {
    log += "a";
    EXPECT_FALSE(DeferScope::Defer([&] { log += "x"; }));  // the caller runs it at once
    log += "b";
  });
  DeferScope::Defer([&] { log += "c"; });
  scope.Close();
  EXPECT_EQ(log, "abc");
  scope.Close();  // idempotent
  EXPECT_EQ(log, "abc");
}

TEST(DeferScope, AnInnerScopeTakesWorkUntilItCloses) {
  std::string log;
  DeferScope outer;
  {
    DeferScope inner;
    EXPECT_EQ(DeferScope::Innermost(), &inner);
    DeferScope::Defer([&] { log += "i"; });
  }
  EXPECT_EQ(DeferScope::Innermost(), &outer);
  EXPECT_EQ(log, "i");
  DeferScope::Defer([&] { log += "o"; });
  outer.Close();
  EXPECT_EQ(log, "io");
}

TEST(DeferScope, DeferToOpenPassesAClosingScopeToTheOneAroundIt) {
  std::string log;
  EXPECT_FALSE(DeferScope::DeferToOpen([&] { log += "x"; }));  // no scope at all
  {
    DeferScope outer;
    {
      DeferScope inner;
      EXPECT_TRUE(DeferScope::DeferToOpen([&] { log += "i"; }));  // inner is open: to inner
      DeferScope::Defer([&] {
        log += "c";
        EXPECT_FALSE(DeferScope::Defer([&] { log += "x"; }));  // D1: inner takes no more
        EXPECT_TRUE(DeferScope::DeferToOpen([&] { log += "o"; }));
      });
    }
    EXPECT_EQ(log, "ic");  // what went past the closing inner scope waits for outer
  }
  EXPECT_EQ(log, "ico");
  {
    DeferScope alone;
    DeferScope::Defer([&] { EXPECT_FALSE(DeferScope::DeferToOpen([&] { log += "x"; })); });
  }
  EXPECT_EQ(log, "ico");
}

TEST(DeferScope, AScopeBelongsToItsThread) {
  DeferScope scope;
  bool taken = true;
  std::thread([&] { taken = DeferScope::Defer([] {}); }).join();
  EXPECT_FALSE(taken);
}

}  // namespace
}  // namespace wombatkv
