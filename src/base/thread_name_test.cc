#include "base/thread_name.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

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

// docs/daemon.md, "Threads": a thread started at once by a named thread's body (cpp-httplib's
// pool in wmbt-http) inherits the name. Before the body named itself, such a thread could take
// its creator's name instead, when the body ran before its creator named it: the daemon then
// showed unnamed threads under load. Many tries, each from a creator with another name, and
// with more runnable threads than cores, to give the race its chances.
TEST(ThreadName, AThreadTheBodyStartsAtOnceInheritsTheName) {
  constexpr int kTries = 200;
  std::vector<std::string> names(kTries);
  std::thread creator([&] {
    NameThisThread("creator");
    for (int i = 0; i < kTries; ++i) {
      std::thread named = StartNamedThread("wmbt-named", [&names, i] {
        std::thread([&names, i] { names[i] = ThisThreadName(); }).join();
      });
      named.join();
    }
  });
  std::vector<std::thread> busy;
  for (unsigned i = 0; i < std::thread::hardware_concurrency(); ++i) {
    busy.emplace_back([&] {
      for (int n = 0; n < kTries * 10; ++n) std::this_thread::yield();
    });
  }
  creator.join();
  for (auto& t : busy) t.join();
  for (int i = 0; i < kTries; ++i) EXPECT_EQ(names[i], "wmbt-named") << "try " << i;
}

}  // namespace
}  // namespace wombatkv
