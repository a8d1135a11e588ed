#include "base/redialer.h"

#include <gtest/gtest.h>

#include <future>
#include <latch>

namespace wombatkv {
namespace {

struct Conn {
  int id = 0;
  bool alive = true;
};

bool Alive(const Conn& c) { return c.alive; }

// D2: calls that started before a dial failed (waiting for the lock it held) take its failure;
// none dials again. A call that starts after it dials afresh.
TEST(Redialer, CallsThatWaitedForAFailedDialShareItsFailure) {
  Redialer<Conn> r;
  int dials = 0;
  auto failing = [&]() -> Result<std::shared_ptr<Conn>> {
    ++dials;
    return Status::Unavailable("the daemon does not answer");
  };
  const uint64_t before = r.dials_finished();                            // four calls start here...
  EXPECT_EQ(r.Get(Alive, failing).status().code(), Code::kUnavailable);  // ...this one dials
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(r.GetSince(before, Alive, failing).status().code(), Code::kUnavailable);
  }
  EXPECT_EQ(dials, 1) << "calls waiting for a failed dial each dialled again";
  EXPECT_EQ(r.Get(Alive, failing).status().code(), Code::kUnavailable);
  EXPECT_EQ(dials, 2) << "a call after the failure dials afresh";
}

// D1: what a dial made serves every call while it is alive; a dead one is made again.
TEST(Redialer, AConnectionIsKeptWhileAliveAndMadeAgainOnceDead) {
  Redialer<Conn> r;
  int made = 0;
  auto good = [&]() -> Result<std::shared_ptr<Conn>> {
    return std::make_shared<Conn>(Conn{++made, true});
  };
  auto c = r.Get(Alive, good);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->id, 1);
  const uint64_t before = r.dials_finished();
  EXPECT_EQ(r.GetSince(before, Alive, good).value().get(), c->get());
  (*c)->alive = false;
  EXPECT_EQ(r.Get(Alive, good).value()->id, 2);
  // A success since a call started is no failure to share: a dead one is made again.
  r.Get(Alive, good).value()->alive = false;
  EXPECT_EQ(r.GetSince(before, Alive, good).value()->id, 3);
}

// Concurrently (for the sanitizers): every call gets a connection, and dials are few.
TEST(Redialer, ConcurrentCallsShareOneDial) {
  Redialer<Conn> r;
  std::atomic<int> dials{0};
  auto good = [&]() -> Result<std::shared_ptr<Conn>> {
    return std::make_shared<Conn>(Conn{++dials, true});
  };
  std::latch start(8);
  std::vector<std::future<bool>> calls;
  for (int i = 0; i < 8; ++i) {
    calls.push_back(std::async(std::launch::async, [&] {
      start.arrive_and_wait();
      return r.Get(Alive, good).ok();
    }));
  }
  for (auto& c : calls) EXPECT_TRUE(c.get());
  EXPECT_EQ(dials.load(), 1);
}

}  // namespace
}  // namespace wombatkv
