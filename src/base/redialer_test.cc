#include "base/redialer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <latch>
#include <thread>
#include <vector>

namespace wombatkv {
namespace {

struct Conn {
  int id = 0;
  bool alive = true;
};

// D2: calls that waited while a dial failed take its failure; none dials again.
TEST(Redialer, CallsThatWaitedForAFailedDialShareItsFailure) {
  Redialer<Conn> r;
  std::atomic<int> dials{0};
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::latch entered(1);
  auto failing = [&]() -> Result<std::shared_ptr<Conn>> {
    if (dials++ == 0) {
      entered.count_down();
      released.wait();
    }
    return Status::Unavailable("the daemon does not answer");
  };
  auto alive = [](const Conn& c) { return c.alive; };
  auto first = std::async(std::launch::async, [&] { return r.Get(alive, failing).status(); });
  entered.wait();  // the first dial is running: the calls below wait for it
  std::vector<std::future<Status>> waiting;
  std::latch started(4);
  for (int i = 0; i < 4; ++i) {
    waiting.push_back(std::async(std::launch::async, [&] {
      started.count_down();
      return r.Get(alive, failing).status();
    }));
  }
  started.wait();
  // Not a timing assertion: each waiting call either is blocked on the lock already, or finds
  // the dial finished after it started — both share the failure. A little time lets them block.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  release.set_value();
  EXPECT_EQ(first.get().code(), Code::kUnavailable);
  for (auto& w : waiting) EXPECT_EQ(w.get().code(), Code::kUnavailable);
  EXPECT_EQ(dials.load(), 1);
  // A call that starts afterwards dials afresh, and what it makes is kept (D1).
  int made = 0;
  auto good = [&]() -> Result<std::shared_ptr<Conn>> {
    ++dials;
    return std::make_shared<Conn>(Conn{++made, true});
  };
  auto c = r.Get(alive, good);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->id, 1);
  EXPECT_EQ(r.Get(alive, good).value().get(), c->get());
  EXPECT_EQ(dials.load(), 2);
  (*c)->alive = false;  // died: the next call makes another
  EXPECT_EQ(r.Get(alive, good).value()->id, 2);
}

}  // namespace
}  // namespace wombatkv
