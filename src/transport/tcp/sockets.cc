#include "transport/tcp/sockets.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace wombatkv::tcp {

std::string HostPort::ToString() const {
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<HostPort> ParseHostPort(std::string_view text, bool allow_port_zero) {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("\"" + std::string(text.substr(0, 200)) +
                                   "\" is not a valid address (" + std::string(why) +
                                   "): expected HOST:PORT, e.g. 127.0.0.1:7070, [::1]:7070 or "
                                   "localhost:7070");
  };
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return bad("no HOST:PORT separator");
  std::string_view host = text.substr(0, colon);
  std::string_view port_text = text.substr(colon + 1);
  unsigned port = 0;
  auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || ptr != port_text.data() + port_text.size() ||
      port > 65535 || (port == 0 && !allow_port_zero)) {
    return bad(allow_port_zero ? "port must be 0 to 65535" : "port must be 1 to 65535");
  }
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return bad("unterminated IPv6 bracket");
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return bad("an IPv6 address needs brackets");
  }
  for (char c : host) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_' || c == ':' || c == '%';
    if (!ok) return bad("bad character in host");
  }
  return HostPort{std::string(host), static_cast<uint16_t>(port)};
}

Result<std::vector<SocketAddress>> Resolve(const HostPort& hp, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* list = nullptr;
  std::string port = std::to_string(hp.port);
  int rc = ::getaddrinfo(hp.host.c_str(), port.c_str(), &hints, &list);
  if (rc != 0) {
    return Status::Unavailable("cannot resolve host \"" + hp.host + "\": " + gai_strerror(rc));
  }
  std::vector<SocketAddress> out;
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_addrlen > sizeof(sockaddr_storage)) continue;
    SocketAddress a;
    std::memcpy(&a.storage, ai->ai_addr, ai->ai_addrlen);
    a.length = ai->ai_addrlen;
    out.push_back(a);
  }
  ::freeaddrinfo(list);
  if (out.empty()) return Status::Unavailable("host \"" + hp.host + "\" has no TCP address");
  return out;
}

bool IsLoopback(const SocketAddress& a) {
  if (a.family() == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&a.storage);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (a.family() == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a.storage);
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) return in6->sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

std::string FormatAddress(const SocketAddress& a) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (a.family() == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&a.storage);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (a.family() == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a.storage);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "?";
}

namespace {
template <typename Getter>
std::string AddressOf(int fd, Getter get) {
  SocketAddress a;
  a.length = sizeof a.storage;
  if (get(fd, reinterpret_cast<sockaddr*>(&a.storage), &a.length) != 0) return "?";
  return FormatAddress(a);
}
}  // namespace

std::string LocalAddressOf(int fd) { return AddressOf(fd, ::getsockname); }
std::string PeerAddressOf(int fd) { return AddressOf(fd, ::getpeername); }

Status SocketError(std::string_view what, int err) {
  char buf[128];
  // GNU strerror_r returns the message (possibly not in buf).
  const char* msg = ::strerror_r(err, buf, sizeof buf);
  return Status::Unavailable(std::string(what) + ": " + msg);
}

Status SetNoDelay(int fd) {
  int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
    return SocketError("setsockopt(TCP_NODELAY)", errno);
  }
  return Status::Ok();
}

void DiscardUnread(int fd) {
  constexpr size_t kDiscardMax = 4u << 20;  // then the peer is flooding: let the reset come
  char sink[16384];
  for (size_t dropped = 0; dropped < kDiscardMax;) {
    const ssize_t n = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    dropped += static_cast<size_t>(n);
  }
}

}  // namespace wombatkv::tcp
