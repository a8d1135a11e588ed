// POSIX implementations of Clock and Random, and Completion. The only place that reads the real
// clock or the OS's randomness.
#include <chrono>
#include <random>
#include <thread>

#include "wombatkv/env.h"

namespace wombatkv {
namespace {

class RealClockImpl final : public Clock {
 public:
  uint64_t NowMicros() override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  uint64_t WallMicros() override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  void SleepMicros(uint64_t micros) override {
    std::this_thread::sleep_for(std::chrono::microseconds(micros));
  }
  bool WaitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
               uint64_t micros) override {
    return cv.wait_for(lock, std::chrono::microseconds(micros)) == std::cv_status::no_timeout;
  }
};

// xoshiro256** seeded by splitmix64: small, fast, and reproducible from one 64-bit seed.
class SeededRandom final : public Random {
 public:
  explicit SeededRandom(uint64_t seed) {
    for (auto& s : s_) {
      seed += 0x9e3779b97f4a7c15ull;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      s = z ^ (z >> 31);
    }
  }
  uint64_t Next64() override {
    std::lock_guard<std::mutex> g(mu_);
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::mutex mu_;
  uint64_t s_[4];
};

}  // namespace

Clock* RealClock() {
  static RealClockImpl* clock = new RealClockImpl();
  return clock;
}

std::unique_ptr<Random> NewSeededRandom(uint64_t seed) {
  return std::make_unique<SeededRandom>(seed);
}

std::unique_ptr<Random> NewSystemRandom() {
  std::random_device rd;
  uint64_t seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return std::make_unique<SeededRandom>(seed);
}

void Completion::Set(Status status) {
  {
    std::lock_guard<std::mutex> g(mu_);
    status_ = std::move(status);
    done_ = true;
    // Notify under the lock: a waiter may destroy the Completion as soon as it sees done_.
    cv_.notify_all();
  }
}

bool Completion::done() const {
  std::lock_guard<std::mutex> g(mu_);
  return done_;
}

Status Completion::status() const {
  std::lock_guard<std::mutex> g(mu_);
  return status_;
}

void Completion::WaitBlocking() const {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return done_; });
}

// The defaults of the optional FileSystem calls: a file system that cannot say no.
Result<std::unique_ptr<AppendFile>> FileSystem::NewAppendFile(const std::string& path) {
  return Status::FailedPrecondition("create " + path +
                                    ": this file system has no append-only files");
}

Status AppendFile::Rename(const std::string& to) {
  return Status::FailedPrecondition("rename to " + to +
                                    ": this file system cannot rename an open file");
}

Status FileSystem::SyncFileSystem(const std::string& path) {
  return Status::FailedPrecondition("sync the file system of " + path +
                                    ": not supported by this file system");
}

Result<std::unique_ptr<FileSystemSyncHandle>> FileSystem::OpenSyncHandle(const std::string& path) {
  class ByPath final : public FileSystemSyncHandle {
   public:
    ByPath(FileSystem* fs, std::string path) : fs_(fs), path_(std::move(path)) {}
    Status Sync() override { return fs_->SyncFileSystem(path_); }

   private:
    FileSystem* fs_;
    std::string path_;
  };
  return std::unique_ptr<FileSystemSyncHandle>(new ByPath(this, path));
}

}  // namespace wombatkv
