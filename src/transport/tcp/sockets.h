// Socket helpers shared by both ends of the TCP transport: parsing HOST:PORT, resolving it,
// telling loopback from the rest (SPEC §10: a non-loopback listener requires an auth token),
// and turning errno into a Status that names the operation and the address.
//
// Thread-safety: functions only.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "wombatkv/status.h"

namespace wombatkv::tcp {

struct HostPort {
  std::string host;  // a name, an IPv4 address, or an IPv6 address without brackets
  uint16_t port = 0;
  std::string ToString() const;  // brackets an IPv6 host again: "[::1]:7070"
};

// "HOST:PORT", HOST a name, IPv4 or bracketed IPv6 ("[::1]:7070"); PORT 1..65535, or 0 when
// `allow_port_zero` (a listener on any free port). InvalidArgument naming the text and the form.
Result<HostPort> ParseHostPort(std::string_view text, bool allow_port_zero);

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
  int family() const { return storage.ss_family; }
};

// getaddrinfo for TCP; `passive` for a listener. Unavailable naming the host when it does not
// resolve (with gai_strerror's reason).
Result<std::vector<SocketAddress>> Resolve(const HostPort& hp, bool passive);

// 127.0.0.0/8, ::1, and IPv4-mapped 127.x.y.z. A wildcard address (0.0.0.0, ::) is not loopback.
bool IsLoopback(const SocketAddress& address);

// "127.0.0.1:7070", "[::1]:7070".
std::string FormatAddress(const SocketAddress& address);
// The local or remote address of a connected/bound socket ("?" if it cannot be read).
std::string LocalAddressOf(int fd);
std::string PeerAddressOf(int fd);

// Unavailable "<what>: <strerror(err)>" (errno values are transient network conditions here).
Status SocketError(std::string_view what, int err);

// TCP_NODELAY: requests and responses are small and latency-bound; never wait for Nagle.
Status SetNoDelay(int fd);

// Reads and drops what the peer sent that nobody will read (at most a few MiB), without waiting.
// Before a connection is shut down or closed: closing a socket with unread input makes the
// kernel reset the connection, discarding answers still in its send buffer that the peer has not
// received yet (a review, session 60: a drained answer lost that way).
void DiscardUnread(int fd);

}  // namespace wombatkv::tcp
