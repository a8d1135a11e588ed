#include "base/thread_name.h"

#include <gtest/gtest.h>

#include <thread>

namespace wombatkv {
namespace {

TEST(ThreadName, NamesTheCallingThreadKeepingFifteenBytes) {
  std::string named, truncated;
  std::thread([&] {
    NameThisThread("wmbt-test");
    named = ThisThreadName();
    NameThisThread("wmbt-a-name-longer-than-fifteen-bytes");
    truncated = ThisThreadName();
  }).join();
  EXPECT_EQ(named, "wmbt-test");
  EXPECT_EQ(truncated, "wmbt-a-name-lon");
}

}  // namespace
}  // namespace wombatkv
