#include "transport/shm/os.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace wombatkv::shm {

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    Reset();
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}
Fd::~Fd() { Reset(); }
void Fd::Reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string ErrnoText(int err) {
  char buf[128];
  return std::string(strerror_r(err, buf, sizeof buf));  // GNU: may not use `buf`
}

namespace {

Status Errno(int err, const std::string& what) {
  return Status::Unavailable(what + ": " + ErrnoText(err));
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

Result<sockaddr_un> UnixAddress(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof a.sun_path)
    return Status::InvalidArgument("control socket path " + path + " is longer than " +
                                   std::to_string(sizeof a.sun_path - 1) +
                                   " bytes: choose a shorter WMBT_KV_RUN_DIR (--run-dir)");
  std::memcpy(a.sun_path, path.data(), path.size());
  return a;
}

std::string LockPath(const std::string& socket_path) {
  return socket_path.substr(0, socket_path.size() - 5) + ".lock";  // "....sock" -> "....lock"
}

}  // namespace

Result<std::unique_ptr<Mapping>> Mapping::MapReadOnly(int fd, uint64_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    return Status::ResourceExhausted("mapping a payload arena of " + std::to_string(bytes) +
                                     " bytes: " + ErrnoText(errno));
  return std::unique_ptr<Mapping>(new Mapping(static_cast<uint8_t*>(p), bytes));
}

Result<std::unique_ptr<Mapping>> Mapping::Map(int fd, uint64_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    return Status::ResourceExhausted("mapping a shared segment of " + std::to_string(bytes) +
                                     " bytes: " + ErrnoText(errno));
  return std::unique_ptr<Mapping>(new Mapping(static_cast<uint8_t*>(p), bytes));
}

Mapping::~Mapping() { ::munmap(base_, bytes_); }

void Mapping::Discard(uint64_t offset, uint64_t bytes) {
  const uint64_t page = 4096;
  const uint64_t start = (offset + page - 1) / page * page;
  const uint64_t end = (offset + bytes) / page * page;
  if (end > start) (void)::madvise(base_ + start, end - start, MADV_REMOVE);
}

Result<Fd> CreateSegmentFd(uint64_t bytes) {
  Fd fd(::memfd_create("wombatkv-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return Errno(errno, "memfd_create");
  // memfd inodes start 0777 on some kernels; they are reachable only through /proc/<pid>/fd (which
  // needs ptrace rights over us), but SPEC §10 asks for 0600 and costs nothing.
  if (::fchmod(fd.get(), 0600) != 0) return Errno(errno, "fchmod shared segment");
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0)
    return Status::ResourceExhausted("sizing a shared segment to " + std::to_string(bytes) +
                                     " bytes: " + ErrnoText(errno));
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
    return Errno(errno, "sealing shared segment");
  return fd;
}

Result<PeerCred> GetPeerCred(int sock) {
  ucred c{};
  socklen_t len = sizeof c;
  if (::getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &c, &len) != 0)
    return Errno(errno, "SO_PEERCRED");
  PeerCred peer{c.pid, c.uid, c.gid, {}};
  // Grown to what the kernel asks for (ERANGE sets len to the size needed).
  std::vector<gid_t> groups(32);
  for (;;) {
    len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (::getsockopt(sock, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) == 0) break;
    if (errno == ENOPROTOOPT) {  // before Linux 4.13: the effective group alone is known
      len = 0;
      break;
    }
    if (errno != ERANGE || len <= groups.size() * sizeof(gid_t))
      return Errno(errno, "SO_PEERGROUPS");
    groups.resize(len / sizeof(gid_t));
  }
  groups.resize(len / sizeof(gid_t));
  peer.groups = std::move(groups);
  return peer;
}

bool PeerAllowed(const PeerCred& peer, ShmGroup group) {
  if (peer.uid == ::geteuid() || peer.uid == 0) return true;
  if (!group) return false;
  return peer.gid == *group ||
         std::find(peer.groups.begin(), peer.groups.end(), *group) != peer.groups.end();
}

Result<ShmGroup> ResolveShmGroup(const std::string& name_or_gid) {
  if (name_or_gid.empty()) return ShmGroup{};
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (std::all_of(name_or_gid.begin(), name_or_gid.end(), digit)) {
    // (gid_t)-1 is no group: chown(2) reads it as "leave the group".
    uint64_t v = 0;
    for (char c : name_or_gid) v = v < (uint64_t{1} << 32) ? v * 10 + (c - '0') : v;
    if (v < static_cast<gid_t>(-1)) return ShmGroup{static_cast<gid_t>(v)};
    return Status::InvalidArgument("WMBT_KV_SHM_GROUP: '" + name_or_gid +
                                   "' is not a valid group id");
  }
  group g{};
  group* found = nullptr;
  std::vector<char> buf(4096);
  for (;;) {
    const int err = ::getgrnam_r(name_or_gid.c_str(), &g, buf.data(), buf.size(), &found);
    if (err == ERANGE && buf.size() < (1u << 20)) {
      buf.resize(buf.size() * 4);
      continue;
    }
    if (err != 0) return Errno(err, "looking up group '" + name_or_gid + "'");
    break;
  }
  if (found == nullptr)
    return Status::InvalidArgument("WMBT_KV_SHM_GROUP: no group named '" + name_or_gid +
                                   "' on this host (give a name from /etc/group or a number)");
  return ShmGroup{g.gr_gid};
}

Result<std::string> ControlSocketPath(const std::string& run_dir, const std::string& prefix) {
  bool ok = !prefix.empty() && prefix.size() <= 64 && prefix != "." && prefix != "..";
  for (char c : prefix) ok = ok && IsNameChar(c);
  if (!ok)
    return Status::InvalidArgument("shared-memory prefix '" + prefix +
                                   "' must be 1 to 64 characters from [A-Za-z0-9._-]");
  if (run_dir.empty()) return Status::InvalidArgument("empty run directory for the control socket");
  std::string path = run_dir;
  if (path.back() != '/') path += '/';
  path += "wombatkv-" + prefix + ".sock";
  WMBT_RETURN_IF_ERROR(UnixAddress(path).status());
  return path;
}

std::string DefaultRunDir() {
  const char* v = std::getenv("WMBT_KV_RUN_DIR");
  return v && *v ? std::string(v) : std::string("/tmp");
}

void RemoveLock(Listener& listener) {
  if (!listener.lock.valid()) return;
  // Only the file this listener holds: one removed from under it (a cleaner of /tmp) may have
  // been replaced by another daemon's, which is not ours to delete.
  const std::string path = LockPath(listener.path);
  struct stat held {
  }, named{};
  if (::fstat(listener.lock.get(), &held) == 0 && ::lstat(path.c_str(), &named) == 0 &&
      held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
    (void)::unlink(path.c_str());
  }
  listener.lock.Reset();
}

Result<Listener> ListenControlSocket(const std::string& path, ShmGroup group) {
  Listener l;
  l.path = path;
  WMBT_RETURN_IF_ERROR(UnixAddress(path).status());

  // One daemon per prefix: whoever holds the lock owns the socket path, so a socket left there
  // by a crashed daemon can be replaced without asking it.
  const std::string lock_path = LockPath(path);
  struct stat st {};
  for (int attempt = 0;; ++attempt) {
    l.lock = Fd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!l.lock.valid()) {
      return Status::FailedPrecondition("cannot open " + lock_path + ": " + ErrnoText(errno) +
                                        " (check WMBT_KV_RUN_DIR, --run-dir)");
    }
    if (::fstat(l.lock.get(), &st) != 0 || st.st_uid != ::geteuid())
      return Status::FailedPrecondition(lock_path +
                                        " belongs to another user: choose another "
                                        "prefix or WMBT_KV_RUN_DIR (--run-dir)");
    if (::flock(l.lock.get(), LOCK_EX | LOCK_NB) != 0)
      return Status::FailedPrecondition("another wombatkvd already serves this prefix (it holds " +
                                        lock_path + "): stop it or choose another --prefix");
    // A stopping daemon deletes the file before it lets the lock go (RemoveLock): a lock on a
    // file no longer at the path is no lock.
    struct stat now {};
    if (::stat(lock_path.c_str(), &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino)
      break;
    if (attempt == 8)
      return Status::FailedPrecondition(lock_path +
                                        " keeps being replaced: is another wombatkvd "
                                        "starting and stopping on this prefix?");
  }

  if (::lstat(path.c_str(), &st) == 0) {
    if (st.st_uid != ::geteuid())
      return Status::FailedPrecondition(
          path + " exists and belongs to uid " + std::to_string(st.st_uid) +
          ": remove it or choose another prefix or WMBT_KV_RUN_DIR (--run-dir)");
    if (!S_ISSOCK(st.st_mode))
      return Status::FailedPrecondition(path + " exists and is not a socket: remove it");
  }

  l.sock = Fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!l.sock.valid()) return Errno(errno, "socket(AF_UNIX)");
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "~";
  WMBT_ASSIGN_OR_RETURN(sockaddr_un tmp_addr, UnixAddress(tmp));
  (void)::unlink(tmp.c_str());
  if (::bind(l.sock.get(), reinterpret_cast<sockaddr*>(&tmp_addr), sizeof tmp_addr) != 0)
    return Status::FailedPrecondition("cannot bind " + tmp + ": " + ErrnoText(errno) +
                                      " (check WMBT_KV_RUN_DIR, --run-dir)");
  // Not listening yet, so nobody can connect while the mode is still the umask's. The group is
  // given before the mode opens to it.
  if (group && ::chown(tmp.c_str(), static_cast<uid_t>(-1), *group) != 0) {
    const int err = errno;
    (void)::unlink(tmp.c_str());
    return Status::FailedPrecondition(
        "cannot give control socket " + path + " to group " + std::to_string(*group) + ": " +
        ErrnoText(err) + " (wombatkvd's user must be a member of WMBT_KV_SHM_GROUP, or root)");
  }
  if (::chmod(tmp.c_str(), group ? 0660 : 0600) != 0 || ::listen(l.sock.get(), 128) != 0 ||
      ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    (void)::unlink(tmp.c_str());
    return Status::FailedPrecondition("cannot set up control socket " + path + ": " +
                                      ErrnoText(err));
  }
  return l;
}

Result<Fd> ConnectControlSocket(const std::string& path, uint32_t timeout_ms) {
  WMBT_ASSIGN_OR_RETURN(sockaddr_un addr, UnixAddress(path));
  Fd s(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!s.valid()) return Errno(errno, "socket(AF_UNIX)");
  // A daemon that accepts no connection (stopped, wedged, still opening its store) leaves them in
  // its listen queue; once that is full, connect(2) on a Unix socket waits for room — bounded by
  // the send timeout, which it honours.
  if (timeout_ms > 0) {
    timeval tv{static_cast<time_t>(timeout_ms / 1000),
               static_cast<suseconds_t>(timeout_ms % 1000) * 1000};
    (void)::setsockopt(s.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }
  if (::connect(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK || err == EINPROGRESS) {
      return Status::Unavailable("wombatkvd at " + path + " accepted no connection within " +
                                 std::to_string(timeout_ms) +
                                 " ms (stopped, wedged, or still opening its store?)");
    }
    if (err == EACCES || err == EPERM)
      return Status::PermissionDenied(
          "permission denied connecting to " + path +
          ": the daemon runs as another user (shared memory is for its own user and the "
          "members of its WMBT_KV_SHM_GROUP; or use TCP with a token)");
    return Status::Unavailable("no wombatkvd is listening at " + path + " (" + ErrnoText(err) +
                               "): start `wombatkvd --prefix NAME` with the same "
                               "WMBT_KV_RUN_DIR, or unset WMBT_KV_REMOTE_PREFIX");
  }
  timeval none{};
  (void)::setsockopt(s.get(), SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none);
  return s;
}

Status SendWithFd(int sock, const void* data, size_t bytes, int fd) {
  iovec iov{const_cast<void*>(data), bytes};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  ssize_t n;
  do {
    n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(bytes)) return Errno(n < 0 ? errno : EMSGSIZE, "sendmsg");
  return Status::Ok();
}

Result<size_t> ReceiveWithFd(int sock, void* data, size_t bytes, Fd* fd, int flags) {
  iovec iov{data, bytes};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | flags);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if ((errno == EAGAIN || errno == EWOULDBLOCK) && (flags & MSG_DONTWAIT))
      return Status::NotFound("nothing queued on the control socket");
    if (errno == EAGAIN || errno == EWOULDBLOCK)
      return Status::Unavailable(
          "wombatkvd did not answer the attach request in time: it may be starting (still "
          "opening its store: its /readyz says so) or overloaded (see its log)");
    return Errno(errno, "recvmsg");
  }
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int got;
      std::memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
      if (fd && !fd->valid()) {
        *fd = Fd(got);
      } else {
        ::close(got);  // more descriptors than expected: never leak them
      }
    }
  }
  if (msg.msg_flags & MSG_TRUNC) return Status::InvalidArgument("oversized control message");
  return static_cast<size_t>(n);
}

}  // namespace wombatkv::shm
