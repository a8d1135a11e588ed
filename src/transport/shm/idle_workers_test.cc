// IdleWorkers (idle_workers.h), stepped by hand: the server's workers and a thread handing over
// client wake-ups are modelled as state machines whose steps are the ledger's calls, taken in
// the orders two threads can take them. Invariant H: every client handed over is woken without
// waiting for a later event — here, with no step of a busy worker after the hand-over.
#include "transport/shm/idle_workers.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "wombatkv/env.h"

namespace wombatkv::shm {
namespace {

// A worker as the ledger sees it (shm_server_workers.cc): busy (scanning or serving), counted
// idle but not yet asleep (GoIdle's last scan), or asleep in epoll_wait.
enum class State { kBusy, kIdle, kAsleep };

class Model {
 public:
  explicit Model(size_t workers) : state_(workers, State::kBusy) {
    IdleWorkers<int>::Hooks h;
    h.post_token = [this] { ++units_; };
    h.wake_client = [this](int& client) { ++woken_[client]; };
    h.idle_changed = [this](size_t n) { asleep_without_token_ = n; };
    h.after_queueing = [this] {
      if (between_) between_();
    };
    pool_ = std::make_unique<IdleWorkers<int>>(std::move(h));
  }

  // --- a worker's steps --------------------------------------------------------------------
  void EnterIdle(size_t w) {  // GoIdle's first step
    ASSERT_EQ(state_[w], State::kBusy);
    pool_->EnterIdle();
    state_[w] = State::kIdle;
  }
  void Sleep(size_t w) {  // GoIdle found nothing: it looks at the hand-over, then sleeps
    ASSERT_EQ(state_[w], State::kIdle);
    pool_->WakeHanded();
    state_[w] = State::kAsleep;
  }
  void FindRequest(size_t w) {  // GoIdle's last scan found one
    ASSERT_EQ(state_[w], State::kIdle);
    pool_->LeaveIdle();
    state_[w] = State::kBusy;
  }
  void Doorbell(size_t w) {  // a client's doorbell woke it
    ASSERT_EQ(state_[w], State::kAsleep);
    pool_->LeaveIdle();
    state_[w] = State::kBusy;
  }
  void ReadUnit(size_t w) {  // epoll_wait returned the wake eventfd, and it read one unit
    ASSERT_EQ(state_[w], State::kAsleep);
    ASSERT_GT(units_, 0);
    --units_;
    if (pool_->TakeToken(/*read=*/true)) state_[w] = State::kBusy;
  }

  // --- the answering thread ------------------------------------------------------------------
  // Hands client `c` over; `between` runs after it is queued, before the token is asked for.
  bool HandOver(int c, std::function<void()> between = nullptr) {
    between_ = std::move(between);
    handed_.push_back(c);
    const bool handed = pool_->HandOver({c}, /*stopping=*/false);
    between_ = nullptr;
    return handed;
  }

  // What follows with no busy worker taking a step: idle workers go to sleep, sleeping ones
  // read the units waiting for them. True when every client handed over has been woken.
  ::testing::AssertionResult EveryHandedClientWokenWithoutBusyWorkers() {
    for (bool moved = true; moved;) {
      moved = false;
      for (size_t w = 0; w < state_.size(); ++w) {
        if (state_[w] == State::kIdle) {
          Sleep(w);
          moved = true;
        } else if (state_[w] == State::kAsleep && units_ > 0) {
          ReadUnit(w);
          moved = true;
        }
      }
    }
    for (int c : handed_) {
      if (woken_[c] == 0) {
        return ::testing::AssertionFailure()
               << "client " << c << " was handed over and is still asleep (" << units_
               << " unit(s) unread, " << Describe() << ")";
      }
    }
    return ::testing::AssertionSuccess();
  }

  std::string Describe() const {
    std::string s;
    for (State st : state_) s += st == State::kBusy ? 'B' : st == State::kIdle ? 'I' : 'S';
    return "workers " + s;
  }

  State state(size_t w) const { return state_[w]; }
  int woken(int c) { return woken_[c]; }
  int units() const { return units_; }
  size_t asleep_without_token() const { return asleep_without_token_; }
  IdleWorkers<int>& pool() { return *pool_; }

 private:
  std::vector<State> state_;
  std::unique_ptr<IdleWorkers<int>> pool_;
  std::function<void()> between_;
  int units_ = 0;  // in the wake eventfd
  std::map<int, int> woken_;
  std::vector<int> handed_;
  size_t asleep_without_token_ = 0;
};

TEST(IdleWorkers, WithNoWorkerIdleTheHanderWakesTheClientsItself) {
  Model m(2);
  EXPECT_FALSE(m.HandOver(1));
  EXPECT_EQ(m.woken(1), 1);
  EXPECT_EQ(m.units(), 0);
}

TEST(IdleWorkers, ASleepingWorkerIsWokenWithATokenAndWakesTheClients) {
  Model m(1);
  m.EnterIdle(0);
  m.Sleep(0);
  EXPECT_EQ(m.asleep_without_token(), 1u);
  EXPECT_TRUE(m.HandOver(1));
  EXPECT_EQ(m.woken(1), 0) << "the hander woke the client itself";
  EXPECT_EQ(m.units(), 1);
  EXPECT_EQ(m.asleep_without_token(), 0u);
  m.ReadUnit(0);
  EXPECT_EQ(m.state(0), State::kBusy);
  EXPECT_EQ(m.woken(1), 1);
}

// The window session 30 found: the worker a token was counted for leaves for a doorbell before
// it reads the token. Its unit is now surplus; the worker must do the hand-over as it leaves.
TEST(IdleWorkers, AWorkerLeavingForADoorbellAfterItsTokenWakesTheClients) {
  Model m(1);
  m.EnterIdle(0);
  m.Sleep(0);
  ASSERT_TRUE(m.HandOver(1));
  m.Doorbell(0);
  EXPECT_EQ(m.woken(1), 1);
  EXPECT_TRUE(m.EveryHandedClientWokenWithoutBusyWorkers());
}

// The worker leaves between the hander queueing the clients and asking for the token: WakeOne
// then finds no idle worker, and one of the two wakes the clients.
TEST(IdleWorkers, AWorkerLeavingBetweenQueueingAndTheTokenLeavesNoClientAsleep) {
  Model m(1);
  m.EnterIdle(0);
  m.Sleep(0);
  EXPECT_FALSE(m.HandOver(1, [&] { m.Doorbell(0); }));
  EXPECT_GE(m.woken(1), 1);
  EXPECT_EQ(m.units(), 0);
}

// GoIdle's early take: the worker counted itself idle, a hand-over counted on it, and its last
// scan found a request.
TEST(IdleWorkers, AWorkerFindingARequestAfterATokenWasCountedForItWakesTheClients) {
  Model m(2);
  m.EnterIdle(0);
  ASSERT_TRUE(m.HandOver(1));
  m.FindRequest(0);
  EXPECT_EQ(m.woken(1), 1);
  EXPECT_EQ(m.units(), 1) << "the surplus unit stays in the eventfd";
  // A worker that reads the surplus unit later finds it uncounted and sleeps on.
  m.EnterIdle(1);
  m.Sleep(1);
  m.ReadUnit(1);
  EXPECT_EQ(m.state(1), State::kAsleep);
  EXPECT_EQ(m.asleep_without_token(), 1u);
}

TEST(IdleWorkers, WhileStoppingTheHanderWakesTheClientsItself) {
  Model m(1);
  m.EnterIdle(0);
  m.Sleep(0);
  int c = 7;
  std::vector<int> clients{c};
  EXPECT_FALSE(m.pool().HandOver(clients, /*stopping=*/true));
  EXPECT_EQ(m.woken(7), 1);
  EXPECT_EQ(m.units(), 0);
}

// Every order of the steps of three workers and one hander, at random: after any hand-over,
// with busy workers taking no further step, every client handed over is woken. Also: tokens
// never outnumber the idle workers.
TEST(IdleWorkers, EveryHandedClientIsWokenInRandomInterleavings) {
  for (uint64_t seed = 1; seed <= 3000; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto rng = NewSeededRandom(seed);
    Model m(3);
    int next_client = 1;
    // One step of a worker, picked at random among those it can take now.
    auto worker_step = [&] {
      const size_t w = rng->Uniform(3);
      switch (m.state(w)) {
        case State::kBusy:
          m.EnterIdle(w);
          break;
        case State::kIdle:
          if (rng->Uniform(3) == 0) m.FindRequest(w);
          else m.Sleep(w);
          break;
        case State::kAsleep:
          if (m.units() > 0 && rng->Uniform(2) == 0) m.ReadUnit(w);
          else if (rng->Uniform(4) == 0) m.Doorbell(w);
          break;
      }
    };
    for (int step = 0; step < 60; ++step) {
      if (rng->Uniform(4) == 0) {
        if (rng->Uniform(2) == 0) {
          m.HandOver(next_client++, [&] {
            for (uint64_t k = rng->Uniform(3); k > 0; --k) worker_step();
          });
        } else {
          m.HandOver(next_client++);
        }
      } else {
        worker_step();
      }
      if (::testing::Test::HasFatalFailure()) return;
      ASSERT_LE(m.asleep_without_token(), 3u) << "more tokens than idle workers";
    }
    ASSERT_TRUE(m.EveryHandedClientWokenWithoutBusyWorkers()) << m.Describe();
  }
}

}  // namespace
}  // namespace wombatkv::shm
