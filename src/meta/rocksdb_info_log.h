// RocksDbInfoLog: where L1's RocksDB writes its informational log — `<dir>/LOG`, one rolled
// copy `<dir>/LOG.old` — written so that a failing disk cannot take the process down.
//
// RocksDB's own file logger (EnvLogger, RocksDB 7.8) goes through a WritableFileWriter that, once
// a write has failed, asserts on the next one: Debian's librocksdb keeps its assertions, so the
// first log line after the disk filled aborted the process (a daemon included), in the middle of a
// flush. This logger writes each line with one write(2) in append mode and drops a line the
// disk refuses (dropped_lines() counts them); the store's own errors report the full disk.
//
// Thread-safety: RocksDB calls Logv from its background threads concurrently; every method is
// thread-safe.
#pragma once

#include <rocksdb/env.h>

#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace wombatkv {

class RocksDbInfoLog final : public rocksdb::Logger {
 public:
  // The log of the RocksDB directory `dir` (which must exist), rolled to LOG.old past
  // `roll_bytes`. Never fails: a log that cannot be opened drops its lines.
  RocksDbInfoLog(const std::string& dir, uint64_t roll_bytes);
  ~RocksDbInfoLog() override;

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override;

  uint64_t dropped_lines() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  void OpenLocked();
  void RollLocked();

  const std::string path_;
  const uint64_t roll_bytes_;
  std::mutex mu_;
  int fd_ = -1;         // GUARDED_BY(mu_)
  uint64_t bytes_ = 0;  // GUARDED_BY(mu_): the current file's size
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace wombatkv
