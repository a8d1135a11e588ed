// The POSIX FileSystem: atomic writes by temp file + rename/link, fsync of file and directory,
// flock(2) locks. Every errno becomes a Status whose message names the operation and the path.
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>  // renameat2
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <utility>

#include "base/check.h"
#include "env/dir_maker.h"
#include "env/errno_status.h"
#include "wombatkv/env.h"

namespace wombatkv {
namespace {

constexpr int kTempCreateAttemptsMax = 16;  // O_EXCL collisions with a crashed process's leftovers
constexpr size_t kTempBaseBytesMax = 64;    // keeps temp names well under NAME_MAX
constexpr size_t kOwnerNoteBytesMax = 512;

std::string DirOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string BaseOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

uint64_t MtimeNs(const struct stat& st) {
  return static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000ull +
         static_cast<uint64_t>(st.st_mtim.tv_nsec);
}

FileInfo InfoOf(const struct stat& st) {
  FileInfo info;
  info.size = static_cast<uint64_t>(st.st_size);
  info.mtime_ns = MtimeNs(st);
  info.inode = static_cast<uint64_t>(st.st_ino);
  info.is_dir = S_ISDIR(st.st_mode);
  return info;
}

// Closes on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Close(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int Release() { return std::exchange(fd_, -1); }
  // close(2) can report deferred write errors (NFS); never retried on EINTR (Linux closes anyway).
  int Close() {
    if (fd_ < 0) return 0;
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

Status FsyncDir(const std::string& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoStatus(errno, "open directory", dir);
  // Some file systems cannot fsync a directory (EINVAL): they need no directory fsync either.
  if (::fsync(fd.get()) != 0 && errno != EINVAL) return ErrnoStatus(errno, "fsync directory", dir);
  return Status::Ok();
}

// Writes all of `parts` at the current offset, resuming after short writes and EINTR.
Status WriteAll(int fd, const std::vector<ByteView>& parts, const std::string& path) {
  std::vector<iovec> iov;
  iov.reserve(parts.size());
  for (ByteView p : parts) {
    if (!p.empty()) iov.push_back({const_cast<uint8_t*>(p.data()), p.size()});
  }
  size_t i = 0;
  while (i < iov.size()) {
    const int count = static_cast<int>(std::min<size_t>(iov.size() - i, IOV_MAX));
    ssize_t n = ::writev(fd, &iov[i], count);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "write", path);
    }
    if (n == 0) return Status::Internal("write " + path + ": wrote no bytes");
    size_t left = static_cast<size_t>(n);
    while (left > 0) {
      if (left >= iov[i].iov_len) {
        left -= iov[i].iov_len;
        ++i;
      } else {
        iov[i].iov_base = static_cast<uint8_t*>(iov[i].iov_base) + left;
        iov[i].iov_len -= left;
        left = 0;
      }
    }
  }
  return Status::Ok();
}

// "<dir>/.<base>.tmp.<pid>.<seq>~": unique per process and call; '~' keeps it out of the object
// key alphabet so an object store never lists or serves it (env.h).
std::string TempPathFor(const std::string& path) {
  static std::atomic<uint64_t> seq{0};
  std::string dir = DirOf(path);
  std::string base = BaseOf(path).substr(0, kTempBaseBytesMax);
  std::string name = "." + base + ".tmp." + std::to_string(::getpid()) + "." +
                     std::to_string(seq.fetch_add(1, std::memory_order_relaxed)) + "~";
  return path.find('/') == std::string::npos ? name : dir + "/" + name;
}

// A written temporary file awaiting its name; unlinked on destruction unless Commit named it.
class PosixPendingFile final : public PendingFile {
 public:
  PosixPendingFile(std::string tmp, std::string path, const FileInfo& info)
      : tmp_(std::move(tmp)), path_(std::move(path)), info_(info) {}
  ~PosixPendingFile() override {
    if (!tmp_.empty()) ::unlink(tmp_.c_str());
  }
  PosixPendingFile(const PosixPendingFile&) = delete;
  PosixPendingFile& operator=(const PosixPendingFile&) = delete;

  const FileInfo& info() const override { return info_; }

  Status Commit(bool replace) override {
    WMBT_CHECK_MSG(!tmp_.empty(), "PendingFile::Commit called twice");
    if (replace) {
      if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
        return ErrnoStatus(errno, "rename over", path_);  // the destructor removes the temporary
      }
    } else {
      // link(2) fails if `path` exists, atomically; rename(2) would replace it.
      if (::link(tmp_.c_str(), path_.c_str()) != 0) {
        int err = errno;
        if (err == EEXIST) return Status::Conflict(path_ + " already exists");
        return ErrnoStatus(err, "link", path_);
      }
      ::unlink(tmp_.c_str());  // a leftover would be harmless: temp names are never listed
    }
    tmp_.clear();
    return Status::Ok();
  }

 private:
  std::string tmp_;  // empty once committed
  std::string path_;
  FileInfo info_;
};

// Writes `parts` to a fresh temporary file next to `path`. With `later_than_target`, the temp
// file's mtime is made greater than that of the current `path` (env.h: (inode, mtime_ns, size)
// never repeats across replacements). On failure nothing is left.
Result<std::unique_ptr<PendingFile>> WriteTempFile(const std::string& path,
                                                   const std::vector<ByteView>& parts, bool sync,
                                                   bool later_than_target) {
  std::string tmp;
  int raw = -1;
  for (int attempt = 0; attempt < kTempCreateAttemptsMax && raw < 0; ++attempt) {
    tmp = TempPathFor(path);
    raw = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (raw < 0 && errno != EEXIST && errno != EINTR) {
      return ErrnoStatus(errno, "create temporary file", tmp);
    }
  }
  if (raw < 0) return ErrnoStatus(EEXIST, "create temporary file", tmp);
  Fd fd(raw);
  auto fail = [&](Status s) -> Result<std::unique_ptr<PendingFile>> {
    fd.Close();
    ::unlink(tmp.c_str());
    return s;
  };

  Status s = WriteAll(fd.get(), parts, tmp);
  if (!s.ok()) return fail(std::move(s));

  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return fail(ErrnoStatus(errno, "fstat", tmp));
  if (later_than_target) {
    struct stat target;
    if (::stat(path.c_str(), &target) == 0) {
      // Timestamps are coarse (a clock tick): two replacements in one tick would otherwise get
      // the same mtime. Bumping by 1 ns keeps the mtimes of successive versions increasing.
      if (MtimeNs(st) <= MtimeNs(target)) {
        uint64_t ns = MtimeNs(target) + 1;
        struct timespec times[2];
        times[0].tv_sec = 0;
        times[0].tv_nsec = UTIME_OMIT;
        times[1].tv_sec = static_cast<time_t>(ns / 1000000000ull);
        times[1].tv_nsec = static_cast<long>(ns % 1000000000ull);
        if (::futimens(fd.get(), times) != 0) return fail(ErrnoStatus(errno, "futimens", tmp));
        if (::fstat(fd.get(), &st) != 0) return fail(ErrnoStatus(errno, "fstat", tmp));
      }
    } else if (errno != ENOENT && errno != ENOTDIR) {
      return fail(ErrnoStatus(errno, "stat", path));
    }
  }
  // fsync, not fdatasync: the mtime is part of the ETag (fs_object_store_impl.h), so it must not
  // revert after a crash either.
  if (sync && ::fsync(fd.get()) != 0) return fail(ErrnoStatus(errno, "fsync", tmp));
  if (fd.Close() != 0 && errno != EINTR) return fail(ErrnoStatus(errno, "close", tmp));
  return std::unique_ptr<PendingFile>(new PosixPendingFile(tmp, path, InfoOf(st)));
}

class PosixFileLock final : public FileLock {
 public:
  explicit PosixFileLock(int fd) : fd_(fd) {}
  ~PosixFileLock() override { ::close(fd_); }  // releases the flock

 private:
  int fd_;
};

Result<int> OpenLockFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    // Not "in use": nobody holds it; this user may not write there (env.h, LockFile).
    if (err == EACCES || err == EPERM || err == EROFS) {
      return Status::PermissionDenied("open lock file " + path + ": " + ErrnoText(err));
    }
    return ErrnoStatus(err, "open lock file", path);
  }
  return fd;
}

std::string ReadOwnerNote(int fd) {
  char buf[kOwnerNoteBytesMax];
  ssize_t n;
  do {
    n = ::pread(fd, buf, sizeof buf, 0);
  } while (n < 0 && errno == EINTR);
  std::string note;
  for (ssize_t i = 0; i < n; ++i) {
    char c = buf[i];
    note += (c >= 0x20 && c < 0x7f) ? c : ' ';  // the note is untrusted text: printable only
  }
  while (!note.empty() && note.back() == ' ') note.pop_back();
  return note;
}

class PosixAppendFile final : public AppendFile {
 public:
  PosixAppendFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

  Status Append(const std::vector<ByteView>& parts) override {
    // The descriptor's offset is where the last append ended (opened without O_APPEND, so a
    // preallocated file is overwritten in place).
    return WriteAll(fd_.get(), parts, path_);
  }

  Status Sync() override {
    if (::fdatasync(fd_.get()) != 0) return ErrnoStatus(errno, "fdatasync", path_);
    return Status::Ok();
  }

  Status StartWriteback() override {
    if (::sync_file_range(fd_.get(), 0, 0, SYNC_FILE_RANGE_WRITE) != 0) {
      // Only a hint: a file system without it loses nothing (Sync still does the work).
      if (errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP) return Status::Ok();
      return ErrnoStatus(errno, "sync_file_range", path_);
    }
    return Status::Ok();
  }

  Status Trim() override {
    const off_t at = ::lseek(fd_.get(), 0, SEEK_CUR);  // where the appends end
    if (at < 0) return ErrnoStatus(errno, "lseek", path_);
    if (::ftruncate(fd_.get(), at) != 0) return ErrnoStatus(errno, "ftruncate", path_);
    if (::fsync(fd_.get()) != 0) return ErrnoStatus(errno, "fsync", path_);
    return Status::Ok();
  }

  Status Preallocate(uint64_t bytes) override {
    // Zeros are written, not fallocate(2)d: writing into an fallocated (unwritten) extent is a
    // metadata change that every later fdatasync would have to commit.
    const off_t at = ::lseek(fd_.get(), 0, SEEK_CUR);
    if (at < 0) return ErrnoStatus(errno, "lseek", path_);
    struct stat st;
    if (::fstat(fd_.get(), &st) != 0) return ErrnoStatus(errno, "fstat", path_);
    constexpr size_t kChunk = 1 << 20;
    static const std::vector<uint8_t> zeros(kChunk, 0);
    for (uint64_t pos = std::max<uint64_t>(st.st_size, static_cast<uint64_t>(at)); pos < bytes;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, bytes - pos));
      ssize_t w = ::pwrite(fd_.get(), zeros.data(), n, static_cast<off_t>(pos));
      if (w < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(errno, "preallocate", path_);
      }
      pos += static_cast<uint64_t>(w);
    }
    if (::fsync(fd_.get()) != 0) return ErrnoStatus(errno, "fsync", path_);
    return Status::Ok();
  }

  Status Rename(const std::string& to) override {
    if (::renameat2(AT_FDCWD, path_.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) != 0) {
      if (errno == EEXIST) return Status::Conflict("rename " + path_ + " to " + to + ": it exists");
      return ErrnoStatus(errno, "rename " + path_ + " to", to);
    }
    path_ = to;
    return Status::Ok();
  }

 private:
  Fd fd_;
  std::string path_;
};

class PosixFs final : public FileSystem {
 public:
  Status CreateDirs(const std::string& path) override { return dir_maker_.CreateDirs(path); }

  Status WriteFileAtomic(const std::string& path, const std::vector<ByteView>& parts, bool sync,
                         FileInfo* written) override {
    return WriteAndName(path, parts, sync, /*replace=*/true, written);
  }

  Status CreateFileExclusive(const std::string& path, const std::vector<ByteView>& parts,
                             bool sync, FileInfo* written) override {
    return WriteAndName(path, parts, sync, /*replace=*/false, written);
  }

  Result<std::unique_ptr<PendingFile>> WriteTemp(const std::string& path,
                                                 const std::vector<ByteView>& parts, bool sync,
                                                 bool later_than_current) override {
    return WriteTempFile(path, parts, sync, later_than_current);
  }

  Status SyncDir(const std::string& dir) override { return FsyncDir(dir); }
  Result<std::unique_ptr<AppendFile>> NewAppendFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (errno == EEXIST) return Status::Conflict("create " + path + ": it already exists");
      return ErrnoStatus(errno, "create", path);
    }
    return std::unique_ptr<AppendFile>(new PosixAppendFile(fd, path));
  }

  // A fresh descriptor: reports no write-back error that happened before this call (see
  // OpenSyncHandle for callers that must not miss one).
  Status SyncFileSystem(const std::string& path) override {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return ErrnoStatus(errno, "open", path);
    if (::syncfs(fd.get()) != 0) return ErrnoStatus(errno, "syncfs", path);
    return Status::Ok();
  }

  Result<std::unique_ptr<FileSystemSyncHandle>> OpenSyncHandle(const std::string& path) override {
    class Handle final : public FileSystemSyncHandle {
     public:
      Handle(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
      // syncfs(2) checks the file system's error sequence against the one this descriptor
      // sampled at open (Linux >= 5.8), then advances it: each error is reported once, here.
      Status Sync() override {
        if (::syncfs(fd_.get()) != 0) return ErrnoStatus(errno, "syncfs", path_);
        return Status::Ok();
      }

     private:
      Fd fd_;
      std::string path_;
    };
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus(errno, "open", path);
    return std::unique_ptr<FileSystemSyncHandle>(new Handle(fd, path));
  }

  Result<std::shared_ptr<Buffer>> ReadFile(const std::string& path, uint64_t offset,
                                           uint64_t length, FileInfo* info) override {
    return ReadFileInto(path, offset, length, nullptr, info);
  }

  Result<std::shared_ptr<Buffer>> ReadFileInto(const std::string& path, uint64_t offset,
                                               uint64_t length, const ReadBuffers& buffers,
                                               FileInfo* info) override {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return ErrnoStatus(errno, "open", path);
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(errno, "fstat", path);
    if (S_ISDIR(st.st_mode)) return ErrnoStatus(EISDIR, "read", path);
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    const uint64_t n = offset >= size ? 0 : std::min(length, size - offset);
    // Not zero-filled: every byte is read over below, or cut off by the Truncate.
    std::shared_ptr<Buffer> buf = buffers ? buffers(n) : Buffer::Allocate(n);
    if (buf == nullptr || buf->size() < n) {
      return Status::Internal("reading " + path + ": the read buffer given holds " +
                              std::to_string(buf ? buf->size() : 0) + " bytes, " +
                              std::to_string(n) + " needed");
    }
    uint64_t got = 0;
    while (got < n) {
      ssize_t r = ::pread(fd.get(), buf->data() + got, n - got, static_cast<off_t>(offset + got));
      if (r < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(errno, "read", path);
      }
      if (r == 0) break;  // the file shrank under us (not ours): return what is there
      got += static_cast<uint64_t>(r);
    }
    buf->Truncate(got);
    if (info != nullptr) *info = InfoOf(st);
    return buf;
  }

  Result<FileInfo> Stat(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return ErrnoStatus(errno, "stat", path);
    return InfoOf(st);
  }

  Status DeleteFile(const std::string& path) override {
    if (::unlink(path.c_str()) == 0) return Status::Ok();
    if (errno != EISDIR && errno != EPERM) return ErrnoStatus(errno, "delete", path);
    if (::rmdir(path.c_str()) == 0) return Status::Ok();
    if (errno == ENOTDIR) return ErrnoStatus(EPERM, "delete", path);  // EPERM was not "a dir"
    return ErrnoStatus(errno, "delete directory", path);
  }

  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return ErrnoStatus(errno, "list directory", path);
    std::vector<std::string> names;
    for (;;) {
      errno = 0;
      struct dirent* e = ::readdir(dir);
      if (e == nullptr) break;
      std::string_view name(e->d_name);
      if (name == "." || name == "..") continue;
      names.emplace_back(name);
    }
    int err = errno;
    ::closedir(dir);
    if (err != 0) return ErrnoStatus(err, "list directory", path);
    return names;
  }

  Status DeleteTree(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec && ec.value() != ENOENT) return ErrnoStatus(ec.value(), "delete tree", path);
    return Status::Ok();
  }

  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path,
                                             const std::string& owner_note) override {
    WMBT_ASSIGN_OR_RETURN(int raw, OpenLockFile(path));
    Fd fd(raw);
    int rc;
    do {
      rc = ::flock(fd.get(), LOCK_EX | LOCK_NB);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      if (errno != EWOULDBLOCK) return ErrnoStatus(errno, "lock", path);
      std::string note = ReadOwnerNote(fd.get());
      return Status::FailedPrecondition(path + " is locked by " +
                                        (note.empty() ? "another holder (no owner note)" : note));
    }
    // The note is advisory text for error messages; failing to write it does not undo the lock.
    std::string note = owner_note.substr(0, kOwnerNoteBytesMax);
    if (::ftruncate(fd.get(), 0) == 0) {
      size_t done = 0;
      while (done < note.size()) {
        ssize_t n = ::pwrite(fd.get(), note.data() + done, note.size() - done,
                             static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<size_t>(n);
      }
    }
    return std::unique_ptr<FileLock>(new PosixFileLock(fd.Release()));
  }

  Result<std::unique_ptr<FileLock>> LockFileBlocking(const std::string& path) override {
    WMBT_ASSIGN_OR_RETURN(int raw, OpenLockFile(path));
    Fd fd(raw);
    int rc;
    do {
      rc = ::flock(fd.get(), LOCK_EX);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) return ErrnoStatus(errno, "lock", path);
    return std::unique_ptr<FileLock>(new PosixFileLock(fd.Release()));
  }

 private:
  // Both halves of a two-phase write at once: content (synced), name, then directory.
  Status WriteAndName(const std::string& path, const std::vector<ByteView>& parts, bool sync,
                      bool replace, FileInfo* written) {
    WMBT_ASSIGN_OR_RETURN(auto file, WriteTempFile(path, parts, sync, replace));
    WMBT_RETURN_IF_ERROR(file->Commit(replace));
    if (written != nullptr) *written = file->info();
    return sync ? FsyncDir(DirOf(path)) : Status::Ok();
  }

  DirMaker dir_maker_{FsyncDir};
};

}  // namespace

FileSystem* PosixFileSystem() {
  static PosixFs* fs = new PosixFs();
  return fs;
}

}  // namespace wombatkv
