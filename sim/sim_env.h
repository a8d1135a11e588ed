// The simulated environment: simulated time, seeded randomness, a single-threaded executor that
// runs queued tasks in a seed-chosen order, and the event trace whose digest proves a run
// reproducible. Everything here is deterministic given the seed; nothing reads the real clock.
//
// Thread-safety: none. The simulator is single-threaded by design (one seed = one schedule).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "wombatkv/env.h"

namespace wombatkv::sim {

// Thrown by a simulated plane (L1 or L2) when the host it serves crashes in the middle of an
// operation. The simulator catches it around every call into that host's Store, then destroys the
// Store without running its queued tasks: the process is gone mid-flight.
struct HostCrash {
  int host;
};

// A seeded generator with the conveniences the simulator needs.
class SimRandom final : public Random {
 public:
  explicit SimRandom(uint64_t seed) : state_(seed ^ 0x6a09e667f3bcc909ull) {}
  uint64_t Next64() override;  // splitmix64
  bool Chance(double p) { return p > 0 && (Next64() >> 11) * 0x1.0p-53 < p; }
  // Uniform in [lo, hi]. REQUIRES: lo <= hi.
  uint64_t Range(uint64_t lo, uint64_t hi) { return lo + Uniform(hi - lo + 1); }
  // One of several hostile-or-tame values.
  template <typename T>
  T Pick(std::initializer_list<T> xs) {
    return *(xs.begin() + Uniform(xs.size()));
  }

 private:
  uint64_t state_;
};

// Simulated time: starts at 0, moves only when the simulator or a sleeping/waiting caller moves it.
class SimClock final : public Clock {
 public:
  // A fixed, plausible epoch so WallMicros looks like a real timestamp (2025-01-01).
  static constexpr uint64_t kEpochMicros = 1735689600ull * 1000000;
  uint64_t NowMicros() override { return now_us_; }
  uint64_t WallMicros() override { return kEpochMicros + now_us_; }
  void SleepMicros(uint64_t micros) override { now_us_ += micros; }
  // Nobody else can notify in a single-threaded world: the whole wait elapses, then "timeout".
  bool WaitFor(std::condition_variable&, std::unique_lock<std::mutex>&, uint64_t micros) override {
    now_us_ += micros;
    return false;
  }
  void Advance(uint64_t micros) { now_us_ += micros; }

 private:
  uint64_t now_us_ = 0;
};

// One host's background work. Tasks wait in a queue; the simulator runs some of them at its
// steps, and Await runs them (in a seed-chosen order, not submission order) until the awaited
// completion is done. DropAll models a crash: queued work is lost and nothing runs afterwards.
class SimExecutor final : public Executor {
 public:
  explicit SimExecutor(SimRandom* order) : order_(order) {}
  void Submit(std::function<void()> task) override;
  Status Await(const Completion& c) override;
  void Drain() override;
  // Runs one queued task chosen by the seed; false if none is queued (or after DropAll).
  bool RunOne();
  void DropAll();
  size_t queued() const { return queue_.size(); }
  bool dropped() const { return dropped_; }

 private:
  SimRandom* order_;
  std::vector<std::function<void()>> queue_;
  bool dropped_ = false;
};

// The event trace: every step, fault and result the simulator sees, in order. Its digest is what
// "reproducible" means (same seed and commit → same digest); the tail explains a failure.
class Trace {
 public:
  static constexpr size_t kTailEvents = 200;
  explicit Trace(SimClock* clock) : clock_(clock) {}
  void Add(std::string event);
  uint64_t digest() const { return digest_; }
  uint64_t events() const { return count_; }
  std::vector<std::string> Tail(size_t n) const;
  bool verbose = false;
  size_t keep = kTailEvents;  // events kept for Tail()

 private:
  SimClock* clock_;
  uint64_t digest_ = 14695981039346656037ull;  // FNV-1a offset basis
  uint64_t count_ = 0;
  std::deque<std::string> tail_;
};

// The hosts' data directories are real files, stamped by the kernel's coarse clock: writes in a
// row share an mtime or not depending on timing, and a directory lists in an order of its own.
// Through this wrapper every file written whole (WriteFileAtomic, as the disk cache writes) has a
// logical mtime, the number of such writes before it (no two alike), and directories list sorted:
// what the store reads back depends on the seed alone. Files written otherwise report mtime 0.
class LogicalMtimeFs final : public FileSystemWrapper {
 public:
  explicit LogicalMtimeFs(FileSystem* target) : FileSystemWrapper(target) {}
  Status WriteFileAtomic(const std::string& path, const std::vector<ByteView>& parts, bool sync,
                         FileInfo* written) override;
  Result<FileInfo> Stat(const std::string& path) override;
  Result<std::vector<std::string>> ListDir(const std::string& path) override;

 private:
  uint64_t writes_ = 0;
  std::map<std::string, uint64_t> mtimes_;  // path → its last write's number (kept past a delete)
};

}  // namespace wombatkv::sim
