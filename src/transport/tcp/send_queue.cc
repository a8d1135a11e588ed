#include "transport/tcp/send_queue.h"

#include <sys/socket.h>

#include <cerrno>
#include <vector>

#include "transport/tcp/sockets.h"

namespace wombatkv::tcp {
namespace {
constexpr size_t kIovPerCall = 256;  // well under IOV_MAX (1024)
}  // namespace

void SendQueue::Push(wire::FramedMessage frame) {
  bytes_ += frame.total_bytes();
  frames_.push_back(std::move(frame));
}

Result<bool> SendQueue::Flush(int fd, size_t* bytes_written) {
  std::vector<iovec> iov;
  while (!frames_.empty()) {
    iov.clear();
    size_t skip = offset_;
    // Gather head + payload iovecs of as many frames as fit, skipping what was already written.
    auto add = [&](const uint8_t* data, size_t len) {
      if (skip >= len) {
        skip -= len;
        return;
      }
      iov.push_back({const_cast<uint8_t*>(data) + skip, len - skip});
      skip = 0;
    };
    for (const auto& f : frames_) {
      add(f.head.data(), f.head.size());
      for (const auto& p : f.payloads) {
        if (iov.size() == kIovPerCall) break;
        add(p.data, p.size);
      }
      if (iov.size() >= kIovPerCall - 1) break;
    }
    msghdr msg{};
    msg.msg_iov = iov.data();
    msg.msg_iovlen = iov.size();
    ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
      return SocketError("send", errno);
    }
    if (bytes_written) *bytes_written += static_cast<size_t>(n);
    bytes_ -= static_cast<uint64_t>(n);
    size_t done = static_cast<size_t>(n);
    // Drop every frame now fully written; remember how far into the next one we got.
    while (!frames_.empty()) {
      size_t left = frames_.front().total_bytes() - offset_;
      if (done < left) {
        offset_ += done;
        break;
      }
      done -= left;
      offset_ = 0;
      frames_.pop_front();
    }
  }
  return true;
}

}  // namespace wombatkv::tcp
