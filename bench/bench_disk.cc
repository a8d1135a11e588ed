#include "bench_disk.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "bench_util.h"

namespace wombatkv::bench {

// Flushes everything dirty on the file system holding `dir`, so writeback left over from one
// measurement does not slow the next one down.
void SyncFs(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::syncfs(fd);
    ::close(fd);
  }
}

void FsyncPath(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

bool WriteAllFd(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// One large file written sequentially in 4 MiB writes, then one fsync: the disk's bandwidth.
// `path` must not exist yet; the file is left in place (see Bench::FreshDir).
double SeqWriteFsync(const std::string& path, uint64_t bytes, const uint8_t* src,
                     size_t src_bytes) {
  SyncFs(std::filesystem::path(path).parent_path().string());
  const double t0 = WallSeconds();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Die("open " + path, Status::Internal(std::strerror(errno)));
  const size_t chunk = std::min<size_t>(4 * kMiB, src_bytes);
  for (uint64_t done = 0; done < bytes; done += chunk) {
    if (!WriteAllFd(fd, src + (done % (src_bytes - chunk + 1)), chunk)) {
      Die("write " + path, Status::Internal(std::strerror(errno)));
    }
  }
  ::fsync(fd);
  ::close(fd);
  const double t1 = WallSeconds();
  return static_cast<double>(bytes) / (t1 - t0);
}

// Files of `block` bytes written by `threads` threads, each made durable before the next: the
// bandwidth a file-per-blob L2 can reach on this disk. Stops after `bytes` or `max_seconds`.
// `sub` is a new directory (created here, left in place).
double FileWrites(const std::string& sub, size_t block, int threads, FileMode mode, size_t batch,
                  uint64_t bytes, double max_seconds, const uint8_t* src, size_t src_bytes) {
  std::filesystem::create_directories(sub);
  FsyncPath(std::filesystem::path(sub).parent_path().string());
  SyncFs(sub);
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> written{0};
  const uint64_t files = std::max<uint64_t>(bytes / block, 1);
  const double t0 = WallSeconds();
  auto worker = [&] {
    int dfd = ::open(sub.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    size_t since_dir_sync = 0;
    for (;;) {
      uint64_t i = next.fetch_add(1);
      if (i >= files || WallSeconds() - t0 > max_seconds) break;
      const std::string name = sub + "/" + std::to_string(i);
      const std::string tmp = sub + "/." + std::to_string(i) + ".tmp~";
      int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0) Die("open " + tmp, Status::Internal(std::strerror(errno)));
      const uint8_t* p = src + (i * block) % (src_bytes - block + 1);
      if (!WriteAllFd(fd, p, block)) Die("write " + tmp, Status::Internal(std::strerror(errno)));
      ::fsync(fd);
      ::close(fd);
      ::link(tmp.c_str(), name.c_str());
      ::unlink(tmp.c_str());
      if (mode == FileMode::kStoreLike || ++since_dir_sync == batch) {
        ::fsync(dfd);
        since_dir_sync = 0;
      }
      written += block;
    }
    if (since_dir_sync > 0) ::fsync(dfd);
    ::close(dfd);
  };
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) ts.emplace_back(worker);
  for (auto& t : ts) t.join();
  const double t1 = WallSeconds();
  return static_cast<double>(written.load()) / (t1 - t0);
}

// Median latencies in ms over `n` files of `bytes`, written as FsObjectStore writes a blob:
// (create temp + write + fsync + close) and then (link + unlink temp + directory fsync).
std::pair<double, double> FsyncLatency(const std::string& sub, size_t bytes, int n,
                                       const uint8_t* src) {
  std::filesystem::create_directories(sub);
  SyncFs(sub);
  int dfd = ::open(sub.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  std::vector<double> file_ms, dir_ms;
  for (int i = 0; i < n; ++i) {
    const std::string name = sub + "/" + std::to_string(i);
    const std::string tmp = sub + "/." + std::to_string(i) + ".tmp~";
    const double t0 = WallSeconds();
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 || !WriteAllFd(fd, src, bytes)) {
      Die("write " + tmp, Status::Internal(std::strerror(errno)));
    }
    ::fsync(fd);
    ::close(fd);
    const double t1 = WallSeconds();
    ::link(tmp.c_str(), name.c_str());
    ::unlink(tmp.c_str());
    ::fsync(dfd);
    const double t2 = WallSeconds();
    file_ms.push_back((t1 - t0) * 1e3);
    dir_ms.push_back((t2 - t1) * 1e3);
  }
  ::close(dfd);
  return {Median(file_ms), Median(dir_ms)};
}

uint64_t EvictFromPageCache(const std::string& dir) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    const int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    bytes += e.file_size(ec);
    ::close(fd);
  }
  return bytes;
}

// Deletes `dir` and everything below it, unlinking files from 16 threads: on a file system
// mounted with `discard` (ext4 without a journal discards synchronously in unlink), each unlink
// waits for the device: one thread takes tens of seconds for the ~10,000 files a full
// run leaves behind.
// Returns the number of files and their bytes.
std::pair<size_t, uint64_t> RemoveTreeParallel(const std::string& dir) {
  std::vector<std::string> files;
  uint64_t bytes = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_directory(ec)) {
      files.push_back(it->path().string());
      if (it->is_regular_file(ec)) bytes += it->file_size(ec);
    }
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 16; ++t) {
    ts.emplace_back([&] {
      for (size_t i; (i = next.fetch_add(1)) < files.size();) ::unlink(files[i].c_str());
    });
  }
  for (auto& t : ts) t.join();
  std::filesystem::remove_all(dir, ec);
  return {files.size(), bytes};
}

}  // namespace wombatkv::bench
