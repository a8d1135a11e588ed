#include "meta/rocksdb_info_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <vector>

namespace wombatkv {
namespace {

// RocksDB dumps its statistics and options in lines of a few KiB; longer ones are cut.
constexpr size_t kLineBytesMax = 64u << 10;

}  // namespace

RocksDbInfoLog::RocksDbInfoLog(const std::string& dir, uint64_t roll_bytes)
    : rocksdb::Logger(rocksdb::InfoLogLevel::INFO_LEVEL),
      path_(dir + "/LOG"),
      roll_bytes_(roll_bytes) {
  std::lock_guard<std::mutex> lk(mu_);
  OpenLocked();
}

RocksDbInfoLog::~RocksDbInfoLog() {
  if (fd_ >= 0) ::close(fd_);
}

void RocksDbInfoLog::OpenLocked() {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  struct stat st {};
  bytes_ = fd_ >= 0 && ::fstat(fd_, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

void RocksDbInfoLog::RollLocked() {
  if (fd_ >= 0) ::close(fd_);
  (void)::rename(path_.c_str(), (path_ + ".old").c_str());
  OpenLocked();
}

void RocksDbInfoLog::Logv(const char* format, va_list ap) {
  // The time stamp, as RocksDB's own logger writes it: the wall clock is what a reader of a log
  // correlates with (this file is for people, not for the store; nothing depends on it).
  const uint64_t now = rocksdb::Env::Default()->NowMicros();
  const time_t secs = static_cast<time_t>(now / 1000000);
  struct tm t {};
  localtime_r(&secs, &t);
  char head[64];
  const int head_len =
      std::snprintf(head, sizeof head, "%04d/%02d/%02d-%02d:%02d:%02d.%06" PRIu64 " %ld ",
                    t.tm_year + 1900, t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
                    now % 1000000, static_cast<long>(::syscall(SYS_gettid)));
  std::vector<char> line(head, head + head_len);
  va_list copy;
  va_copy(copy, ap);
  const int body = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  if (body > 0) {
    const size_t n = std::min<size_t>(static_cast<size_t>(body), kLineBytesMax);
    line.resize(line.size() + n + 1);
    std::vsnprintf(line.data() + head_len, n + 1, format, ap);
    line.pop_back();  // the NUL
  }
  if (line.empty() || line.back() != '\n') line.push_back('\n');

  std::lock_guard<std::mutex> lk(mu_);
  if (bytes_ >= roll_bytes_) RollLocked();
  const ssize_t w = fd_ >= 0 ? ::write(fd_, line.data(), line.size()) : -1;
  if (w == static_cast<ssize_t>(line.size())) {
    bytes_ += line.size();
  } else {
    if (w > 0) bytes_ += static_cast<uint64_t>(w);  // a cut line; the next one starts afresh
    dropped_.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace wombatkv
