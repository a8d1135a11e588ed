#include "transport/tcp/frame_reader.h"

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>

#include "base/endian.h"
#include "transport/tcp/sockets.h"

namespace wombatkv::tcp {

FrameReader::FrameReader(uint32_t max_body_bytes, size_t staging_bytes, size_t recycle_bytes_max)
    : max_body_(max_body_bytes),
      staging_(staging_bytes < 4096 ? 4096 : staging_bytes),
      recycle_bytes_max_(recycle_bytes_max) {}

std::shared_ptr<Buffer> FrameReader::AllocateBody(size_t size) {
  if (size > recycle_bytes_max_) return Buffer::Allocate(size);
  std::shared_ptr<Buffer>& spare = size >= kRecycleBytesMin ? spare_ : spare_small_;
  // Invariant 5. use_count 1: the last holder (a caller's Borrow, on any thread) let go, and
  // nobody can take a new reference without ours. Its release decremented with release
  // semantics; the fence orders its reads of the old bytes before our writes of the new.
  if (spare && spare->size() == size && spare.use_count() == 1) {
    std::atomic_thread_fence(std::memory_order_acquire);
    return spare;
  }
  spare = Buffer::Allocate(size);
  return spare;
}

Result<FrameReader::ReadResult> FrameReader::ReadFrom(int fd, int flags) {
  uint8_t* into;
  size_t room;
  bool direct = false;
  const size_t staged = end_ - begin_;
  const size_t body_left = body_ ? body_->size() - body_filled_ : 0;
  if (body_ != nullptr && staged == 0 && body_left >= staging_.size() / 2) {
    // Invariant 3: a large remainder goes straight into the body, never through staging.
    into = body_->data() + body_filled_;
    room = body_left;
    direct = true;
  } else {
    if (begin_ > 0) {  // compact: keep the unconsumed bytes at the front
      std::memmove(staging_.data(), staging_.data() + begin_, staged);
      begin_ = 0;
      end_ = staged;
    }
    into = staging_.data() + end_;
    room = staging_.size() - end_;
    if (room == 0) {
      drained_ = false;
      return ReadResult::kData;  // Next() must consume first
    }
  }
  for (;;) {
    ssize_t n = ::recv(fd, into, room, flags);
    if (n > 0) {
      (direct ? body_filled_ : end_) += static_cast<size_t>(n);
      bytes_read_ += static_cast<uint64_t>(n);
      drained_ = static_cast<size_t>(n) < room;
      return ReadResult::kData;
    }
    if (n == 0) return ReadResult::kEof;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return ReadResult::kWouldBlock;
    return SocketError("recv", errno);
  }
}

Result<std::optional<wire::Message>> FrameReader::Next() {
  for (;;) {
    if (body_ == nullptr) {
      if (end_ - begin_ < wire::kEnvelopeBytes) return std::optional<wire::Message>();
      rejected_id_ = 0;
      rejected_op_ = 0;
      // Invariant 1: nothing is allocated before ParseEnvelope accepted the length.
      auto env = wire::ParseEnvelope(staging_.data() + begin_, max_body_);
      if (!env.ok()) return env.status();
      begin_ += wire::kEnvelopeBytes;
      try {
        body_ = AllocateBody(env->body_len);
      } catch (const std::bad_alloc&) {
        // Within the frame limit but beyond the memory there is now (a strict overcommit
        // policy, an address-space limit): this connection's frame is refused, the process
        // serves on.
        return Status::ResourceExhausted("no memory for a frame body of " +
                                         std::to_string(env->body_len) + " bytes");
      }
      body_filled_ = 0;
      body_crc_ = env->crc;
    }
    const size_t want = body_->size() - body_filled_;
    const size_t take = want < end_ - begin_ ? want : end_ - begin_;
    if (take > 0) {
      std::memcpy(body_->data() + body_filled_, staging_.data() + begin_, take);
      body_filled_ += take;
      begin_ += take;
    }
    if (body_filled_ < body_->size()) return std::optional<wire::Message>();
    std::shared_ptr<const Buffer> body = std::move(body_);
    body_ = nullptr;
    if (body->size() >= 12) {
      rejected_id_ = LoadLe64(body->data());
      rejected_op_ = LoadLe16(body->data() + 8);
    }
    auto m = wire::ParseBody(std::move(body), body_crc_);
    if (!m.ok()) return m.status();
    rejected_id_ = 0;
    rejected_op_ = 0;
    return std::optional<wire::Message>(std::move(m).value());
  }
}

}  // namespace wombatkv::tcp
