// The environment seam: every source of nondeterminism the engine uses — time, timed waits,
// randomness, files and task execution — reaches it through these interfaces, passed to
// constructors. POSIX implementations are in src/env/; the simulator supplies its own. Nothing
// outside src/env/ may read the real clock, sleep or draw real randomness (tests/tidy_test.sh).
//
// Thread-safety: every implementation must be safe to call from several threads at once.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "wombatkv/buffer.h"
#include "wombatkv/status.h"

namespace wombatkv {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic microseconds since an arbitrary origin: for durations and deadlines.
  virtual uint64_t NowMicros() = 0;
  // Microseconds since the Unix epoch: for timestamps written into objects and records.
  virtual uint64_t WallMicros() = 0;
  virtual void SleepMicros(uint64_t micros) = 0;
  // Waits on `cv` (with `lock` held) until notified or `micros` elapse on this clock. Returns
  // false on timeout. Spurious wake-ups are allowed: callers re-check their predicate.
  virtual bool WaitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                       uint64_t micros) = 0;
};

class Random {
 public:
  virtual ~Random() = default;
  virtual uint64_t Next64() = 0;
  // Uniform in [0, n). REQUIRES: n > 0.
  uint64_t Uniform(uint64_t n) { return Next64() % n; }
};

// A one-shot result that a task sets and others await (through Executor::Await, so that an
// inline/simulated executor can run queued work while "waiting").
class Completion {
 public:
  void Set(Status status);
  bool done() const;
  // REQUIRES: done().
  Status status() const;
  // Blocks the calling thread until done() (used by thread-pool executors).
  void WaitBlocking() const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool done_ = false;
  Status status_;
};

class Executor {
 public:
  virtual ~Executor() = default;
  // Queues `task` to run later (possibly on another thread). Never runs it inside Submit.
  virtual void Submit(std::function<void()> task) = 0;
  // Returns once `c` is done. An inline executor runs queued tasks until then; if the queue runs
  // dry first it returns Internal (a deadlock: nothing can complete `c`).
  virtual Status Await(const Completion& c) = 0;
  // Returns after every task submitted so far (and any they submit) has run.
  virtual void Drain() = 0;
};

struct FileInfo {
  uint64_t size = 0;
  uint64_t mtime_ns = 0;
  uint64_t inode = 0;
  bool is_dir = false;
};

// An exclusive advisory lock on a file; released on destruction (and by the kernel on process
// death, so a crashed owner never wedges a directory).
class FileLock {
 public:
  virtual ~FileLock() = default;
};

// A file written next to its destination but not yet named: the first half of an atomic write,
// for callers that make many names durable in one directory sync (group commit: FsObjectStore).
// Destroying it before a successful Commit removes the file.
class PendingFile {
 public:
  virtual ~PendingFile() = default;
  // The Stat of the written file (as WriteFileAtomic's `written`); a name given to it by Commit
  // keeps this inode, size and mtime.
  virtual const FileInfo& info() const = 0;
  // Gives the file its name, atomically: with `replace`, over whatever `path` holds (rename(2));
  // without, Conflict if `path` exists (link(2)). The new directory entry is NOT synced: it
  // survives a crash only once SyncDir of its directory, started after Commit returned, has
  // returned. REQUIRES: called at most once.
  virtual Status Commit(bool replace) = 0;
};

// A file written from its start, in order: a write-ahead journal (FsObjectStore's, journal.h).
// Closed on destruction.
class AppendFile {
 public:
  virtual ~AppendFile() = default;
  // Writes parts (concatenated) right after everything this handle wrote before (at offset 0 for
  // the first call), whatever the file's size: a preallocated file is overwritten, not extended.
  virtual Status Append(const std::vector<ByteView>& parts) = 0;
  // fdatasync(2): every byte appended so far is on stable storage on return. The file's name is
  // not (SyncDir of its directory does that, once, after creating it).
  virtual Status Sync() = 0;
  // Makes the file at least `bytes` long, allocated and zero-filled beyond what was written, and
  // durable (size included), so that later Syncs of appends inside it persist data only, not a
  // size change each time. Bytes appended so far are kept.
  virtual Status Preallocate(uint64_t bytes) = 0;
  // Starts writing what was appended to the device without waiting (sync_file_range(2)
  // SYNC_FILE_RANGE_WRITE), so that a later Sync has less to wait for. Durability is still
  // Sync's alone.
  virtual Status StartWriteback() { return Status::Ok(); }
  // Cuts the file where this handle's appends end, giving back what Preallocate zero-filled
  // beyond them, and makes the new size durable. The default leaves the file as it is.
  virtual Status Trim() { return Status::Ok(); }
  // Gives the file the name `to`, in the same directory; Conflict if `to` exists (nothing is
  // replaced). The handle stays open on it. As for a created name, the new name survives a crash
  // only once SyncDir of its directory, started after Rename returned, has returned. The default
  // says the file system cannot (FailedPrecondition).
  virtual Status Rename(const std::string& to);
};

// A descriptor held open on a file system for syncfs(2). Linux reports a write-back error to
// syncfs only through descriptors opened before the error happened (each samples the file
// system's error sequence when opened), and to each descriptor once: so a caller that must not
// miss an error keeps one handle, opened before its first write, and remembers what it reported.
// Closed on destruction.
class FileSystemSyncHandle {
 public:
  virtual ~FileSystemSyncHandle() = default;
  // As FileSystem::SyncFileSystem, and an error if a write-back on that file system failed since
  // the handle was opened (or since the last Sync that reported such an error).
  virtual Status Sync() = 0;
};

// Paths are absolute or relative POSIX paths; callers validate untrusted names before they become
// paths. Durability contract: a call with sync=true returns only after the data and the directory
// entry are on stable storage (fsync of the file and of its directory). Two-phase writes
// (WriteTemp, PendingFile::Commit, SyncDir) spell the same steps out: content durable before the
// name exists, then the name durable.
//
// The `FileInfo* out` parameters are optional (may be null): when given, they receive the Stat of
// the very file written or read (taken from its open descriptor, so no concurrent replacement of
// `path` can make it describe other bytes).
class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Creates `path` and missing parents. Directories it creates are durable on return (their
  // parents are fsynced). FailedPrecondition if a component exists and is not a directory.
  virtual Status CreateDirs(const std::string& path) = 0;
  // Writes parts (concatenated) to a temporary file, then renames it over `path`: readers see
  // the old or the new content, never a mix. The temporary file is in the same directory and its
  // name contains ".tmp." and ends with '~' (never a valid object key; see object_store.h). The
  // new file's mtime_ns is greater than that of the file it replaces (bumped if the clock has not
  // moved on), so (inode, mtime_ns, size) never repeats across replacements of one path.
  virtual Status WriteFileAtomic(const std::string& path, const std::vector<ByteView>& parts,
                                 bool sync, FileInfo* written = nullptr) = 0;
  // As WriteFileAtomic, but fails with Conflict if `path` exists (atomic create: link(2)).
  virtual Status CreateFileExclusive(const std::string& path, const std::vector<ByteView>& parts,
                                     bool sync, FileInfo* written = nullptr) = 0;
  // Writes parts (concatenated) to a new temporary file beside `path` (named as WriteFileAtomic's)
  // and returns it unnamed. With `sync`, its content is on stable storage on return (so a name
  // given to it later never shows other bytes after a crash). With `later_than_current`, its
  // mtime_ns is made greater than that of the file `path` holds now (as WriteFileAtomic does).
  virtual Result<std::unique_ptr<PendingFile>> WriteTemp(const std::string& path,
                                                         const std::vector<ByteView>& parts,
                                                         bool sync, bool later_than_current) = 0;
  // Makes the directory's entries (names created, replaced or removed so far) durable: fsync of
  // the directory. OK on file systems that cannot sync a directory (they need no such sync).
  virtual Status SyncDir(const std::string& dir) = 0;
  // Reads up to `length` bytes from `offset` (fewer at end of file, none past it). NotFound if
  // absent.
  virtual Result<std::shared_ptr<Buffer>> ReadFile(const std::string& path, uint64_t offset,
                                                   uint64_t length, FileInfo* info = nullptr) = 0;
  // Where a read's bytes land: a buffer of at least the given size (a smaller or null one fails
  // the read with Internal). It may hold older bytes: every byte read is written over and the
  // buffer is truncated to what was read.
  using ReadBuffers = std::function<std::shared_ptr<Buffer>(size_t)>;
  // As ReadFile, into a buffer from `buffers` (e.g. recycled, huge-page-backed memory: a fresh
  // buffer's first touch can cost more than the read). File systems that ignore it (the
  // default) read as ReadFile does — wrappers too, so that a wrapper overriding ReadFile sees
  // every read.
  virtual Result<std::shared_ptr<Buffer>> ReadFileInto(const std::string& path, uint64_t offset,
                                                       uint64_t length, const ReadBuffers& buffers,
                                                       FileInfo* info = nullptr) {
    (void)buffers;
    return ReadFile(path, offset, length, info);
  }
  virtual Result<FileInfo> Stat(const std::string& path) = 0;
  // Removes a file, or an empty directory (as remove(3)). NotFound if absent; FailedPrecondition
  // if a directory is not empty.
  virtual Status DeleteFile(const std::string& path) = 0;
  // Names (not paths) of the entries of a directory, unsorted; NotFound if absent.
  virtual Result<std::vector<std::string>> ListDir(const std::string& path) = 0;
  // Deletes `path` and everything below it; OK if absent.
  virtual Status DeleteTree(const std::string& path) = 0;
  // Creates `path` (Conflict if it exists) for AppendFile writes. The default says the file
  // system cannot (FailedPrecondition); FsObjectStore's journal needs it.
  virtual Result<std::unique_ptr<AppendFile>> NewAppendFile(const std::string& path);
  // Makes everything written to the file system holding `path` durable: content, names and
  // deletions of every file (syncfs(2)). The default syncs nothing and says so
  // (FailedPrecondition).
  virtual Status SyncFileSystem(const std::string& path);
  // A handle whose Syncs do what SyncFileSystem(path) does, through one descriptor opened now
  // (see FileSystemSyncHandle). The default calls this->SyncFileSystem(path) at each Sync.
  virtual Result<std::unique_ptr<FileSystemSyncHandle>> OpenSyncHandle(const std::string& path);
  // Takes an exclusive lock on `path` (created if needed) without blocking. If another process
  // holds it: FailedPrecondition; if this user may not create or open it for writing (its
  // permissions, a read-only file system): PermissionDenied. `owner_note` is written into the file
  // for the error message a later contender sees (e.g. "pid 1234 on host x").
  virtual Result<std::unique_ptr<FileLock>> LockFile(const std::string& path,
                                                     const std::string& owner_note) = 0;
  // As LockFile, but waits until the lock is free and writes no note: for short critical
  // sections shared by threads and processes (e.g. FsObjectStore's conditional writes). Each
  // call is a separate holder, so two threads of one process exclude each other too.
  virtual Result<std::unique_ptr<FileLock>> LockFileBlocking(const std::string& path) = 0;
};

// Forwards every call to a target file system (not owned), so that decorators — fault injection,
// recording the order of syncs in tests — override only what they change (as ObjectStoreWrapper).
// REQUIRES: the target outlives the wrapper.
class FileSystemWrapper : public FileSystem {
 public:
  explicit FileSystemWrapper(FileSystem* target) : target_(target) {}

  Status CreateDirs(const std::string& path) override { return target_->CreateDirs(path); }
  Status WriteFileAtomic(const std::string& path, const std::vector<ByteView>& parts, bool sync,
                         FileInfo* written) override {
    return target_->WriteFileAtomic(path, parts, sync, written);
  }
  Status CreateFileExclusive(const std::string& path, const std::vector<ByteView>& parts,
                             bool sync, FileInfo* written) override {
    return target_->CreateFileExclusive(path, parts, sync, written);
  }
  Result<std::unique_ptr<PendingFile>> WriteTemp(const std::string& path,
                                                 const std::vector<ByteView>& parts, bool sync,
                                                 bool later_than_current) override {
    return target_->WriteTemp(path, parts, sync, later_than_current);
  }
  Status SyncDir(const std::string& dir) override { return target_->SyncDir(dir); }
  Result<std::shared_ptr<Buffer>> ReadFile(const std::string& path, uint64_t offset,
                                           uint64_t length, FileInfo* info) override {
    return target_->ReadFile(path, offset, length, info);
  }
  Result<FileInfo> Stat(const std::string& path) override { return target_->Stat(path); }
  Status DeleteFile(const std::string& path) override { return target_->DeleteFile(path); }
  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    return target_->ListDir(path);
  }
  Status DeleteTree(const std::string& path) override { return target_->DeleteTree(path); }
  Result<std::unique_ptr<AppendFile>> NewAppendFile(const std::string& path) override {
    return target_->NewAppendFile(path);
  }
  Status SyncFileSystem(const std::string& path) override {
    return target_->SyncFileSystem(path);
  }
  // The target's handle: a decorator that changes SyncFileSystem must override this too.
  Result<std::unique_ptr<FileSystemSyncHandle>> OpenSyncHandle(const std::string& path) override {
    return target_->OpenSyncHandle(path);
  }
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path,
                                             const std::string& owner_note) override {
    return target_->LockFile(path, owner_note);
  }
  Result<std::unique_ptr<FileLock>> LockFileBlocking(const std::string& path) override {
    return target_->LockFileBlocking(path);
  }

 protected:
  FileSystem* target() const { return target_; }

 private:
  FileSystem* target_;
};

// The process-wide POSIX implementations (never destroyed).
Clock* RealClock();
FileSystem* PosixFileSystem();
// A Random seeded from the OS.
std::unique_ptr<Random> NewSystemRandom();
// A deterministic generator (splitmix64/xoshiro) for tests and the simulator.
std::unique_ptr<Random> NewSeededRandom(uint64_t seed);
// A pool of `threads` worker threads named `name` (the first 15 bytes: what top -H and perf
// show); tasks run in submission order per free worker. With
// `nice` > 0 the workers run at that lower scheduling priority (setpriority), so background work
// yields the CPU to the threads that wait on it.
std::unique_ptr<Executor> NewThreadPoolExecutor(size_t threads, std::string name, int nice = 0);
// Runs nothing until awaited: Await() runs queued tasks on the caller's thread. For tests and the
// simulator.
std::unique_ptr<Executor> NewInlineExecutor();

}  // namespace wombatkv
