// Executors: a thread pool for production and an inline one for tests and the simulator.
#include <sys/resource.h>
#include <unistd.h>

#include <deque>
#include <thread>

#include "base/thread_name.h"
#include "wombatkv/env.h"

namespace wombatkv {
namespace {

class ThreadPoolExecutor final : public Executor {
 public:
  ThreadPoolExecutor(size_t threads, const std::string& name, int nice) {
    if (threads == 0) threads = 1;
    for (size_t i = 0; i < threads; ++i) {
      workers_.push_back(StartNamedThread(name, [this, nice] {
        // Best effort: a failure leaves the worker at normal priority.
        if (nice > 0) (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), nice);
        Loop();
      }));
    }
  }
  ~ThreadPoolExecutor() override {
    {
      std::lock_guard<std::mutex> g(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  void Submit(std::function<void()> task) override {
    {
      std::lock_guard<std::mutex> g(mu_);
      queue_.push_back(std::move(task));
      ++pending_;
    }
    cv_.notify_one();
  }
  Status Await(const Completion& c) override {
    c.WaitBlocking();
    return Status::Ok();
  }
  void Drain() override {
    std::unique_lock<std::mutex> l(mu_);
    idle_cv_.wait(l, [&] { return pending_ == 0; });
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      cv_.wait(l, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and nothing left: queued work always runs
      auto task = std::move(queue_.front());
      queue_.pop_front();
      l.unlock();
      task();
      l.lock();
      if (--pending_ == 0) idle_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> queue_;
  size_t pending_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

class InlineExecutor final : public Executor {
 public:
  ~InlineExecutor() override { Drain(); }
  void Submit(std::function<void()> task) override {
    std::lock_guard<std::mutex> g(mu_);
    queue_.push_back(std::move(task));
  }
  Status Await(const Completion& c) override {
    while (!c.done()) {
      if (!RunOne()) {
        return Status::Internal("inline executor: awaited completion can never finish "
                                "(no queued task left)");
      }
    }
    return Status::Ok();
  }
  void Drain() override {
    while (RunOne()) {
    }
  }

 private:
  bool RunOne() {
    std::function<void()> task;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (queue_.empty()) return false;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
    return true;
  }
  std::mutex mu_;
  std::deque<std::function<void()>> queue_;
};

}  // namespace

std::unique_ptr<Executor> NewThreadPoolExecutor(size_t threads, std::string name, int nice) {
  return std::make_unique<ThreadPoolExecutor>(threads, name, nice);
}

std::unique_ptr<Executor> NewInlineExecutor() { return std::make_unique<InlineExecutor>(); }

}  // namespace wombatkv
