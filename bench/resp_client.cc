#include "resp_client.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>

#include "bench_util.h"

namespace wombatkv::bench {
namespace {

int ConnectTo(const std::string& addr) {
  if (addr.rfind("unix:", 0) == 0) {
    const std::string path = addr.substr(5);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (path.size() >= sizeof sa.sun_path) Die("unix socket path too long: " + path);
    std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
      Die("connecting to redis at " + addr + ": " + std::strerror(errno));
    return fd;
  }
  const size_t colon = addr.rfind(':');
  if (colon == std::string::npos) Die("redis address must be HOST:PORT or unix:PATH: " + addr);
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (::getaddrinfo(addr.substr(0, colon).c_str(), addr.substr(colon + 1).c_str(), &hints, &res))
    Die("resolving " + addr);
  int fd = ::socket(res->ai_family, SOCK_STREAM, 0);
  if (fd < 0 || ::connect(fd, res->ai_addr, res->ai_addrlen) != 0)
    Die("connecting to redis at " + addr + ": " + std::strerror(errno));
  ::freeaddrinfo(res);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

}  // namespace

RespClient::RespClient(const std::string& addr) : fd_(ConnectTo(addr)), buf_(1 << 16) {}
RespClient::~RespClient() {
  if (fd_ >= 0) ::close(fd_);
}

void RespClient::SendArgs(const std::vector<std::pair<const uint8_t*, size_t>>& args) {
  // Headers go in out_; each value is its own iovec (no copy of large values). The iovecs are
  // built after out_ is complete so its buffer no longer moves.
  out_ = "*" + std::to_string(args.size()) + "\r\n";
  std::vector<size_t> header_end;  // out_ offset after each argument's "$len\r\n"
  for (const auto& a : args) {
    out_ += "$" + std::to_string(a.second) + "\r\n";
    header_end.push_back(out_.size());
    out_ += "\r\n";
  }
  std::vector<iovec> iov;
  size_t at = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    iov.push_back({out_.data() + at, header_end[i] - at});
    iov.push_back({const_cast<uint8_t*>(args[i].first), args[i].second});
    at = header_end[i];
  }
  iov.push_back({out_.data() + at, out_.size() - at});
  size_t idx = 0;
  while (idx < iov.size()) {
    const int n = static_cast<int>(std::min<size_t>(iov.size() - idx, 64));
    ssize_t w = ::writev(fd_, iov.data() + idx, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      Die(std::string("writing to redis: ") + std::strerror(errno));
    }
    size_t left = static_cast<size_t>(w);
    while (idx < iov.size() && left >= iov[idx].iov_len) left -= iov[idx++].iov_len;
    if (idx < iov.size()) {
      iov[idx].iov_base = static_cast<char*>(iov[idx].iov_base) + left;
      iov[idx].iov_len -= left;
    }
  }
}

void RespClient::ReadExact(size_t n) {
  // Ensures [head_, head_ + n) is buffered.
  if (buf_.size() < n) buf_.resize(n + (1 << 16));
  if (head_ + n > buf_.size()) {
    std::memmove(buf_.data(), buf_.data() + head_, tail_ - head_);
    tail_ -= head_;
    head_ = 0;
  }
  while (tail_ - head_ < n) {
    ssize_t r = ::read(fd_, buf_.data() + tail_, buf_.size() - tail_);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) Die("redis closed the connection");
    tail_ += static_cast<size_t>(r);
  }
}

std::string RespClient::ReadLine() {
  for (size_t want = 1;; ++want) {
    ReadExact(want);
    const uint8_t* p = buf_.data() + head_;
    if (want >= 2 && p[want - 2] == '\r' && p[want - 1] == '\n') {
      std::string line(reinterpret_cast<const char*>(p), want - 2);
      head_ += want;
      return line;
    }
  }
}

void RespClient::Set(const std::string& key, const uint8_t* value, size_t len) {
  static const std::string kSet = "SET";
  SendArgs({{reinterpret_cast<const uint8_t*>(kSet.data()), 3},
            {reinterpret_cast<const uint8_t*>(key.data()), key.size()},
            {value, len}});
  std::string line = ReadLine();
  if (line != "+OK") Die("redis SET answered " + line);
}

size_t RespClient::Get(const std::string& key) {
  static const std::string kGet = "GET";
  SendArgs({{reinterpret_cast<const uint8_t*>(kGet.data()), 3},
            {reinterpret_cast<const uint8_t*>(key.data()), key.size()}});
  std::string line = ReadLine();
  if (line.empty() || line[0] != '$' || line == "$-1") Die("redis GET " + key + " answered " + line);
  const size_t n = std::stoull(line.substr(1));
  ReadExact(n + 2);
  value_at_ = head_;
  head_ += n + 2;
  return n;
}

std::string RespClient::Command(const std::vector<std::string>& args) {
  std::vector<std::pair<const uint8_t*, size_t>> parts;
  for (const auto& a : args) parts.push_back({reinterpret_cast<const uint8_t*>(a.data()), a.size()});
  SendArgs(parts);
  return ReadLine();
}

}  // namespace wombatkv::bench
