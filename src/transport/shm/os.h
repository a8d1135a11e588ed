// The operating-system pieces of the shared-memory transport: file descriptors, the sealed memfd
// segment and its mapping, and the unix-domain control socket (path, 0600 or group 0660 bind,
// peer credentials, passing the segment fd). Everything here converts errno into a Status naming
// what to do.
//
// Thread-safety: Fd and Mapping are owned by one holder; the free functions are thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "wombatkv/status.h"

namespace wombatkv::shm {

// An owned file descriptor (closed on destruction).
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept;
  ~Fd();
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void Reset();

 private:
  int fd_ = -1;
};

std::string ErrnoText(int err);

// A MAP_SHARED read-write mapping of a whole segment, unmapped on destruction.
class Mapping {
 public:
  static Result<std::unique_ptr<Mapping>> Map(int fd, uint64_t bytes);
  // A MAP_SHARED read-only mapping (a payload arena on the client's side).
  static Result<std::unique_ptr<Mapping>> MapReadOnly(int fd, uint64_t bytes);
  ~Mapping();
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  uint8_t* base() const { return base_; }
  uint64_t bytes() const { return bytes_; }
  // Gives the pages of [offset, offset + bytes) back to the kernel (MADV_REMOVE, page-aligned
  // inwards). Later reads see zeros. Best effort.
  void Discard(uint64_t offset, uint64_t bytes);

 private:
  Mapping(uint8_t* base, uint64_t bytes) : base_(base), bytes_(bytes) {}
  uint8_t* base_;
  uint64_t bytes_;
};

// A new anonymous segment of `bytes`: memfd_create (nobody can open it by name), mode 0600,
// sized, and sealed against shrinking and growing so a client cannot truncate it under the
// daemon (which would turn the daemon's next access into SIGBUS).
Result<Fd> CreateSegmentFd(uint64_t bytes);

// Who is at the other end of a unix socket (SO_PEERCRED, SO_PEERGROUPS): for the daemon's side
// of a connection, as the daemon was when it called listen(2); for a client's, when it connected.
struct PeerCred {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;              // effective group
  std::vector<gid_t> groups;  // supplementary groups
};
Result<PeerCred> GetPeerCred(int sock);

// Who may share memory (SPEC §10), on both sides of an attachment: this process's own user,
// root, and — when a group is configured (WMBT_KV_SHM_GROUP) — the members of that group.
using ShmGroup = std::optional<gid_t>;
bool PeerAllowed(const PeerCred& peer, ShmGroup group);
// The group WMBT_KV_SHM_GROUP names: empty → none; digits → that gid; otherwise the group of
// that name (getgrnam_r). InvalidArgument naming the setting when there is no such group.
Result<ShmGroup> ResolveShmGroup(const std::string& name_or_gid);

// "<run_dir>/wombatkv-<prefix>.sock". InvalidArgument when the prefix is not 1..64 characters of
// [A-Za-z0-9._-] (a name never becomes a path unchecked) or the path is too long for a socket.
Result<std::string> ControlSocketPath(const std::string& run_dir, const std::string& prefix);
// $WMBT_KV_RUN_DIR when set and non-empty, else /tmp.
std::string DefaultRunDir();

// A listening control socket and the lock that makes its daemon the only one for its prefix.
struct Listener {
  Fd lock;  // flock'ed "<path without .sock>.lock", held for the listener's life
  Fd sock;
  std::string path;
};
// Deletes the listener's lock file while still holding it (if the path still names the file it
// holds), then lets the lock go (no-op without one), so that a stopped daemon leaves no file
// behind. A daemon that opened the file before it
// was deleted finds, once it holds the lock, that the path names another file or none, and
// starts over (ListenControlSocket). The socket is the caller's to remove.
void RemoveLock(Listener& listener);
// Takes the prefix lock (FailedPrecondition when another daemon holds it), then binds and listens
// on `path` (SOCK_SEQPACKET, non-blocking) with mode 0600 — or, with a group, 0660 and owned by
// that group (FailedPrecondition when this user may not give it to the group): the socket is
// bound under a temporary name, chmod'ed (and chown'ed), and only then renamed into place, so it
// is never reachable with wider permissions. A leftover socket of a dead daemon is replaced; a
// path owned by another user is FailedPrecondition.
Result<Listener> ListenControlSocket(const std::string& path, ShmGroup group = std::nullopt);
// Connects to `path`. Unavailable when nobody listens (naming how to start wombatkvd), or when
// the daemon's listen queue stays full for `timeout_ms` (0: no bound) because it accepts nothing;
// PermissionDenied when permission is denied.
Result<Fd> ConnectControlSocket(const std::string& path, uint32_t timeout_ms = 0);

// One datagram with an optional descriptor attached (SCM_RIGHTS).
Status SendWithFd(int sock, const void* data, size_t bytes, int fd_or_minus_one);
// Receives one datagram of at most `bytes` into `data`; `*fd` gets a passed descriptor, if any
// (owned by the caller). Returns the datagram length; 0 = the peer closed. `flags`: recvmsg's
// (MSG_DONTWAIT: NotFound at once when nothing is queued).
Result<size_t> ReceiveWithFd(int sock, void* data, size_t bytes, Fd* fd, int flags = 0);

}  // namespace wombatkv::shm
