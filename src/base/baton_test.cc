#include "base/futex.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace wombatkv {
namespace {

TEST(BatonTest, WaitReturnsAtOnceWhenPostedBefore) {
  Baton b;
  EXPECT_FALSE(b.posted());
  b.Post();
  EXPECT_TRUE(b.posted());
  b.Wait();
}

TEST(BatonTest, PostWakesAWaiterAndPublishesWhatWasWrittenBefore) {
  Baton b;
  int value = 0;
  std::thread waiter([&] {
    b.Wait();
    EXPECT_EQ(value, 42);
  });
  value = 42;
  b.Post();
  waiter.join();
}

// The journal's pattern: the event lives on the waiter's stack and is gone as soon as Wait
// returns, possibly before the poster's wake-up call has finished. Every round must end (a lost
// wake-up hangs the test) and see the poster's write.
TEST(BatonTest, EventsOnTheWaitersStackSurviveThousandsOfHandOvers) {
  constexpr int kRounds = 20000;
  std::atomic<Baton*> slot{nullptr};
  std::atomic<int> seen{0};
  int payload = 0;
  std::thread poster([&] {
    for (int i = 1; i <= kRounds; ++i) {
      Baton* b;
      while ((b = slot.exchange(nullptr, std::memory_order_acquire)) == nullptr) {
        std::this_thread::yield();
      }
      payload = i;
      b->Post();
    }
  });
  for (int i = 1; i <= kRounds; ++i) {
    Baton b;
    slot.store(&b, std::memory_order_release);
    b.Wait();
    if (payload == i) seen.fetch_add(1);
  }
  poster.join();
  EXPECT_EQ(seen.load(), kRounds);
}

}  // namespace
}  // namespace wombatkv
