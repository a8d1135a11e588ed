#include "transport/tcp/frame_reader.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>

#include "base/crc32c.h"
#include "base/endian.h"
#include "transport/tcp/sockets.h"

namespace wombatkv::tcp {

FrameReader::FrameReader(uint32_t max_body_bytes, size_t staging_bytes, size_t recycle_bytes_max)
    : max_body_(max_body_bytes),
      staging_(staging_bytes < 4096 ? 4096 : staging_bytes),
      recycle_bytes_max_(recycle_bytes_max) {}

std::shared_ptr<Buffer> FrameReader::AllocateBody(size_t size) {
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer does not model the fence below (and GCC refuses it under -fsanitize=thread):
  // it would take the last holder's reads and our new bytes for a race. Nothing is recycled there.
  return Buffer::Allocate(size);
#else
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
#endif
}

Result<FrameReader::ReadResult> FrameReader::ReadFrom(int fd, int flags) {
  uint8_t* into = nullptr;
  size_t room = 0;
  iovec iov[kMaxReadIovecs];
  msghdr msg{};
  const size_t staged = end_ - begin_;
  const bool direct =
      body_ != nullptr && staged == 0 && body_size_ - body_filled_ >= staging_.size() / 2;
  if (direct) {
    // Invariant 3 (and 6: across the placed buffers): a large remainder goes straight into the
    // body, never through staging.
    size_t offset = segment_filled_;
    for (size_t s = segment_; s < segments_.size() && msg.msg_iovlen < kMaxReadIovecs; ++s) {
      const size_t left = segments_[s].size() - offset;
      if (left > 0) iov[msg.msg_iovlen++] = {segments_[s].data() + offset, left};
      room += left;
      offset = 0;
    }
    msg.msg_iov = iov;
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
    const ssize_t n = direct ? ::recvmsg(fd, &msg, flags) : ::recv(fd, into, room, flags);
    if (n > 0) {
      if (direct) {
        Advance(static_cast<size_t>(n));
      } else {
        end_ += static_cast<size_t>(n);
      }
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

void FrameReader::Advance(size_t n) {
  body_filled_ += n;
  segment_filled_ += n;
  while (segment_ < segments_.size() && segment_filled_ >= segments_[segment_].size()) {
    segment_filled_ -= segments_[segment_].size();
    ++segment_;
  }
}

Result<bool> FrameReader::AwaitHeadAndPlace(const wire::Envelope& env) {
  const uint8_t* at = staging_.data() + begin_ + wire::kEnvelopeBytes;
  const size_t staged = end_ - begin_ - wire::kEnvelopeBytes;
  placed_ = false;
  size_t head_bytes = 0;
  if (placer_ && env.body_len >= wire::kBodyFixedBytes &&
      wire::kEnvelopeBytes + wire::kBodyFixedBytes <= staging_.size()) {
    if (staged < wire::kBodyFixedBytes) return true;
    auto head = wire::ParseBodyHead(at, env.body_len);
    // A bad head is left to ParseBody on the whole body: one place reports it.
    if (head.ok() && wire::kEnvelopeBytes + head->bytes() <= staging_.size()) {
      if (staged < head->bytes()) return true;
      lengths_.resize(head->payload_count);
      uint64_t left = env.body_len - head->bytes();
      bool exact = true;
      for (uint32_t i = 0; i < head->payload_count; ++i) {
        lengths_[i] = LoadLe64(at + wire::kBodyFixedBytes + 8ull * i);
        exact = exact && lengths_[i] <= left;
        left -= exact ? lengths_[i] : 0;
      }
      std::span<const std::span<uint8_t>> dsts;
      if (exact && left == 0 && head->payload_count > 0) dsts = placer_(head->id, lengths_);
      placed_ = !dsts.empty() && dsts.size() == lengths_.size();
      for (size_t i = 0; placed_ && i < dsts.size(); ++i) placed_ = dsts[i].size() >= lengths_[i];
      if (placed_) {
        head_ = *head;
        head_bytes = head->bytes();
        segments_.assign(1, {});
        for (size_t i = 0; i < dsts.size(); ++i) segments_.push_back(dsts[i].first(lengths_[i]));
      }
    }
  }
  begin_ += wire::kEnvelopeBytes;
  try {
    body_ = AllocateBody(placed_ ? head_bytes : env.body_len);
  } catch (const std::bad_alloc&) {
    // Within the frame limit but beyond the memory there is now (a strict overcommit policy, an
    // address-space limit): this connection's frame is refused, the process serves on.
    placed_ = false;
    segments_.clear();
    return Status::ResourceExhausted("no memory for a frame body of " +
                                     std::to_string(env.body_len) + " bytes");
  }
  if (placed_) {
    segments_[0] = {body_->data(), body_->size()};
  } else {
    segments_.assign(1, {body_->data(), body_->size()});
  }
  body_size_ = env.body_len;
  body_crc_ = env.crc;
  body_filled_ = 0;
  segment_ = 0;
  segment_filled_ = 0;
  Advance(0);  // past the segments of empty payloads at the front, if the head is all
  return false;
}

Result<wire::Message> FrameReader::FinishPlaced() {
  uint32_t crc = Crc32c(segments_[0].data(), segments_[0].size());
  for (size_t i = 1; i < segments_.size(); ++i) {
    crc = Crc32cAppend(crc, segments_[i].data(), segments_[i].size());
  }
  WMBT_RETURN_IF_ERROR(wire::CheckBodyCrc(body_crc_, crc));
  wire::Message m;
  m.id = head_.id;
  m.op = head_.op;
  m.flags = head_.flags;
  const uint8_t* fields = segments_[0].data() + wire::kBodyFixedBytes + 8ull * head_.payload_count;
  m.fields.assign(fields, fields + head_.fields_len);
  m.payloads.reserve(segments_.size() - 1);
  for (size_t i = 1; i < segments_.size(); ++i) {
    m.payloads.push_back(BufferSlice{nullptr, segments_[i].data(), segments_[i].size()});
  }
  return m;
}

Result<std::optional<wire::Message>> FrameReader::Next() {
  if (body_ == nullptr) {
    if (end_ - begin_ < wire::kEnvelopeBytes) return std::optional<wire::Message>();
    rejected_id_ = 0;
    rejected_op_ = 0;
    // Invariant 1: nothing is allocated before ParseEnvelope accepted the length.
    auto env = wire::ParseEnvelope(staging_.data() + begin_, max_body_);
    if (!env.ok()) return env.status();
    WMBT_ASSIGN_OR_RETURN(bool await_head, AwaitHeadAndPlace(*env));
    if (await_head) return std::optional<wire::Message>();
  }
  while (begin_ < end_ && body_filled_ < body_size_) {
    const std::span<uint8_t> segment = segments_[segment_];
    const size_t take = std::min(end_ - begin_, segment.size() - segment_filled_);
    std::memcpy(segment.data() + segment_filled_, staging_.data() + begin_, take);
    begin_ += take;
    Advance(take);
  }
  if (body_filled_ < body_size_) return std::optional<wire::Message>();
  std::shared_ptr<const Buffer> body = std::move(body_);
  body_ = nullptr;
  if (placed_) {
    placed_ = false;
    rejected_id_ = head_.id;
    rejected_op_ = head_.op;
    auto m = FinishPlaced();
    segments_.clear();
    if (!m.ok()) return Rejected(m.status());
    rejected_id_ = 0;
    rejected_op_ = 0;
    return std::optional<wire::Message>(std::move(m).value());
  }
  segments_.clear();
  if (body->size() >= 12) {
    rejected_id_ = LoadLe64(body->data());
    rejected_op_ = LoadLe16(body->data() + 8);
  }
  auto m = wire::ParseBody(std::move(body), body_crc_);
  if (!m.ok()) return Rejected(m.status());
  rejected_id_ = 0;
  rejected_op_ = 0;
  return std::optional<wire::Message>(std::move(m).value());
}

}  // namespace wombatkv::tcp
