// IdleWorkers: the shared-memory server's ledger of its sleeping workers and of the client
// wake-ups handed to them (docs/shm.md, "Wake-ups"). ShmServer::Impl drives it with
// Client = std::shared_ptr<Conn>; idle_workers_test.cc drives every step by hand, in the orders
// two threads can take them.
//
// Counts, under one mutex:
//   idle    workers asleep or about to sleep (EnterIdle .. LeaveIdle / TakeToken);
//   tokens  WakeOne's tokens posted and not yet taken (post_token writes one unit to the eventfd
//           the workers sleep on); tokens <= idle always, so a token never waits for a worker
//           that is not coming. A worker that leaves the idle count otherwise (a doorbell, a
//           request found before sleeping) while every idle worker has a token on its way
//           clamps the count: one unit in the eventfd is then uncounted, and the worker that
//           reads it sleeps on (TakeToken is false).
// The hand-over, under a second mutex: clients a thread answered while they slept, which a
// worker wakes for it (so that the thread, a sync round's leader, goes on at once).
//
// Invariant H: every client handed over is woken without waiting for a later event. HandOver
// queues the clients before it asks for a token. If WakeOne queues none, no worker is idle
// without a token already on its way — the hander wakes them itself. If it queues one, that
// token was counted after the clients were queued, and whichever worker ends it — the one that
// takes it (TakeToken), or one whose LeaveIdle clamps it away — looks at the hand-over right
// after, in the same call. (Before session 30 a hander decided first and queued after, and a
// worker leaving in between left the clients asleep for good.)
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace wombatkv::shm {

template <typename Client>
class IdleWorkers {
 public:
  struct Hooks {
    std::function<void()> post_token;          // one unit to the workers' wake eventfd
    std::function<void(Client&)> wake_client;  // the client's futex wake
    // Called under the mutex with idle - tokens, whenever either changes (metrics, WaitFor).
    std::function<void(size_t asleep_without_token)> idle_changed;
    // Tests only: runs after HandOver queued its clients, before it asks for a token.
    std::function<void()> after_queueing;
  };

  explicit IdleWorkers(Hooks hooks) : hooks_(std::move(hooks)) {}

  // At a (re)start: no worker yet.
  void Reset() {
    std::lock_guard<std::mutex> lk(mu_);
    idle_ = 0;
    tokens_ = 0;
    Changed();
  }

  // A worker is about to sleep: WakeOne may count on it from now on.
  void EnterIdle() {
    std::lock_guard<std::mutex> lk(mu_);
    ++idle_;
    Changed();
  }

  // A worker leaves the idle count without a token: it found a request before sleeping, a
  // client's doorbell woke it, or the server stops. Invariant H: then it does the hand-over.
  void LeaveIdle() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      tokens_ = std::min(tokens_, idle_ - 1);
      --idle_;
      Changed();
    }
    WakeHanded();
  }

  // A sleeping worker read a unit from the wake eventfd (`read`: the read succeeded). True when
  // it was a counted token: the worker has left the idle count and done the hand-over. False: an
  // uncounted unit (see above), or nothing read; the worker stays idle and sleeps on.
  bool TakeToken(bool read) {
    bool counted = false;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (read && tokens_ > 0) {
        --tokens_;
        --idle_;
        Changed();
        counted = true;
      }
    }
    WakeHanded();  // also for an uncounted unit: cheap when nothing waits
    return counted;
  }

  // Posts a token for one idle worker that has none on its way; false if there is none (then
  // nothing was posted).
  bool WakeOne() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (tokens_ >= idle_) return false;
      ++tokens_;
      Changed();
    }
    // After unlocking: a worker woken on another core would often find the mutex still held.
    // The eventfd keeps the unit until a worker reads it, so no wake-up is lost.
    hooks_.post_token();
    return true;
  }

  // Has an idle worker wake `clients`, or wakes them here when none can (invariant H; while
  // the server stops, always here). True when they were handed over.
  bool HandOver(std::vector<Client> clients, bool stopping) {
    if (!stopping) {
      {
        std::lock_guard<std::mutex> lk(handed_mu_);
        for (Client& c : clients) handed_.push_back(std::move(c));
        waiting_.store(true, std::memory_order_release);
      }
      if (hooks_.after_queueing) hooks_.after_queueing();
      if (WakeOne()) return true;
      WakeHanded();
      return false;
    }
    for (Client& c : clients) hooks_.wake_client(c);
    return false;
  }

  // Wakes the clients handed over so far (nothing but an atomic load when there are none).
  void WakeHanded() {
    if (!waiting_.load(std::memory_order_acquire)) return;
    std::vector<Client> list;
    {
      std::lock_guard<std::mutex> lk(handed_mu_);
      list.swap(handed_);
      waiting_.store(false, std::memory_order_relaxed);
    }
    for (Client& c : list) hooks_.wake_client(c);
  }

 private:
  void Changed() {  // REQUIRES: mu_ held
    if (hooks_.idle_changed) hooks_.idle_changed(idle_ - tokens_);
  }

  const Hooks hooks_;
  std::mutex mu_;
  size_t idle_ = 0;    // GUARDED_BY(mu_)
  size_t tokens_ = 0;  // GUARDED_BY(mu_), <= idle_
  std::mutex handed_mu_;
  std::vector<Client> handed_;     // GUARDED_BY(handed_mu_)
  std::atomic<bool> waiting_{false};  // handed_ is not empty
};

}  // namespace wombatkv::shm
