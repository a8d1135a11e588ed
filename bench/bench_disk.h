// Disk helpers for store_bench: the fsync'd baselines a Store is compared with (sequential
// write, file-per-blob writes, fsync latency), flushing and deleting the scratch directories, and
// a FileSystem that skips fsyncs for building a large store quickly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "wombatkv/env.h"

namespace wombatkv::bench {

// Flushes everything dirty on the file system holding `dir`, so writeback left over from one
// measurement does not slow the next one down.
void SyncFs(const std::string& dir);
void FsyncPath(const std::string& path);
bool WriteAllFd(int fd, const uint8_t* p, size_t n);

// One large file written sequentially in 4 MiB writes, then one fsync: the disk's bandwidth.
// `path` must not exist yet; the file is left in place (see Bench::FreshDir).
double SeqWriteFsync(const std::string& path, uint64_t bytes, const uint8_t* src,
                     size_t src_bytes);

enum class FileMode {
  kStoreLike,   // as FsObjectStore's if-absent put: temp, write, fsync, link, unlink, fsync dir
  kDirPerBatch, // the same, but the directory fsync once per `batch` files (per thread)
};

// Files of `block` bytes written by `threads` threads, each made durable before the next: the
// bandwidth a file-per-blob L2 can reach on this disk. Stops after `bytes` or `max_seconds`.
// `sub` is a new directory (created here, left in place).
double FileWrites(const std::string& sub, size_t block, int threads, FileMode mode, size_t batch,
                  uint64_t bytes, double max_seconds, const uint8_t* src, size_t src_bytes);

// Median latencies in ms over `n` files of `bytes`, written as FsObjectStore writes a blob:
// (create temp + write + fsync + close) and then (link + unlink temp + directory fsync).
std::pair<double, double> FsyncLatency(const std::string& sub, size_t bytes, int n,
                                       const uint8_t* src);

// Drops the page cache of every file below `dir` (posix_fadvise DONTNEED after an fdatasync, so
// every page is clean): the next reads come from the disk, as after a reboot. Returns the bytes.
uint64_t EvictFromPageCache(const std::string& dir);

// Deletes `dir` and everything below it, unlinking files from 16 threads (see bench_disk.cc).
// Returns the number of files and their bytes.
std::pair<size_t, uint64_t> RemoveTreeParallel(const std::string& dir);

// A FileSystem that never fsyncs: only for building the 1M-block store, whose build time is not
// a measurement (the result is synced with syncfs before it is reopened and measured).
class NoSyncFileSystem final : public FileSystem {
 public:
  explicit NoSyncFileSystem(FileSystem* base) : base_(base) {}
  Status CreateDirs(const std::string& path) override { return base_->CreateDirs(path); }
  Status WriteFileAtomic(const std::string& path, const std::vector<ByteView>& parts, bool,
                         FileInfo* written) override {
    return base_->WriteFileAtomic(path, parts, false, written);
  }
  Status CreateFileExclusive(const std::string& path, const std::vector<ByteView>& parts, bool,
                             FileInfo* written) override {
    return base_->CreateFileExclusive(path, parts, false, written);
  }
  Result<std::unique_ptr<PendingFile>> WriteTemp(const std::string& path,
                                                 const std::vector<ByteView>& parts, bool,
                                                 bool later_than_current) override {
    return base_->WriteTemp(path, parts, false, later_than_current);
  }
  Status SyncDir(const std::string&) override { return Status::Ok(); }
  Result<std::unique_ptr<AppendFile>> NewAppendFile(const std::string& path) override {
    return base_->NewAppendFile(path);  // its syncs are cheap next to the store's build
  }
  Status SyncFileSystem(const std::string&) override { return Status::Ok(); }
  Result<std::shared_ptr<Buffer>> ReadFile(const std::string& path, uint64_t offset,
                                           uint64_t length, FileInfo* info) override {
    return base_->ReadFile(path, offset, length, info);
  }
  Result<FileInfo> Stat(const std::string& path) override { return base_->Stat(path); }
  Status DeleteFile(const std::string& path) override { return base_->DeleteFile(path); }
  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    return base_->ListDir(path);
  }
  Status DeleteTree(const std::string& path) override { return base_->DeleteTree(path); }
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path,
                                             const std::string& owner_note) override {
    return base_->LockFile(path, owner_note);
  }
  Result<std::unique_ptr<FileLock>> LockFileBlocking(const std::string& path) override {
    return base_->LockFileBlocking(path);
  }

 private:
  FileSystem* base_;
};

}  // namespace wombatkv::bench
