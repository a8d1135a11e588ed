// ManualExecutor (tests only): an Executor whose tasks run only when the test says so.
#pragma once

#include <deque>
#include <functional>

#include "wombatkv/env.h"

namespace wombatkv::testing {

// An executor that queues tasks and runs them only when asked: lets a test "crash" a store
// before its background uploads run.
class ManualExecutor final : public Executor {
 public:
  void Submit(std::function<void()> task) override { queue_.push_back(std::move(task)); }
  Status Await(const Completion& c) override {
    while (!c.done()) {
      if (queue_.empty()) return Status::Internal("nothing can complete the awaited task");
      RunOne();
    }
    return Status::Ok();
  }
  void Drain() override {
    if (!dropping_)
      while (!queue_.empty()) RunOne();
  }
  // Simulates a crash: queued work is lost.
  void DropAll() {
    queue_.clear();
    dropping_ = true;
  }
  size_t queued() const { return queue_.size(); }

 private:
  void RunOne() {
    auto t = std::move(queue_.front());
    queue_.pop_front();
    t();
  }
  std::deque<std::function<void()>> queue_;
  bool dropping_ = false;
};

}  // namespace wombatkv::testing
