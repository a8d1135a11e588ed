// SendQueue: the framed responses a server connection still has to write, written with as few
// syscalls as the socket allows (one sendmsg gathers many frames and their payload iovecs).
//
// A frame's payload slices stay referenced (e.g. cache pins of a GetBlocks response) until its
// last byte is written or the queue is destroyed, so a client that stops reading, or dies, holds
// nothing beyond its own connection.
//
// Thread-safety: none; the server guards each connection's queue with that connection's mutex.
#pragma once

#include <cstddef>
#include <deque>

#include "wire/frame.h"
#include "wombatkv/status.h"

namespace wombatkv::tcp {

class SendQueue {
 public:
  void Push(wire::FramedMessage frame);
  bool empty() const { return frames_.empty(); }
  size_t frames() const { return frames_.size(); }
  // Bytes queued and not yet written.
  uint64_t bytes() const { return bytes_; }

  // Writes what a non-blocking socket accepts now. true: everything was written; false: the
  // socket is full (wait for EPOLLOUT). Unavailable on a socket error (the peer went away).
  // `bytes_written`, if given, is increased by what was written.
  Result<bool> Flush(int fd, size_t* bytes_written = nullptr);

 private:
  std::deque<wire::FramedMessage> frames_;
  size_t offset_ = 0;  // bytes of frames_.front() already written
  uint64_t bytes_ = 0;
};

}  // namespace wombatkv::tcp
