// PauseOnce (tests): holds the first thread that reaches Hold() until Release(), so a test can
// act while another thread is in the middle of an operation (e.g. inside a file-system call of a
// FileSystemWrapper). Later callers of Hold() pass straight through.
#pragma once

#include <condition_variable>
#include <mutex>

namespace wombatkv {

class PauseOnce {
 public:
  void Hold() {
    std::unique_lock<std::mutex> lock(mu_);
    if (used_) return;
    used_ = held_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return !held_; });
  }
  // Returns once a thread is held (or was, and has been released).
  void AwaitHeld() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return used_; });
  }
  void Release() {
    std::lock_guard<std::mutex> g(mu_);
    held_ = false;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool used_ = false;
  bool held_ = false;
};

}  // namespace wombatkv
