// FrameReader: turns the bytes of one TCP connection into framed Messages (wire/frame.h). Both
// ends use it: the server on non-blocking sockets from its event loop, the client from its
// blocking reader thread.
//
// Invariants:
//   1. The envelope is validated (magic, version, body length <= max_body) before the body is
//      allocated, so a hostile length never costs memory (SPEC §8).
//   2. The body lands in one Buffer; a parsed Message's payloads are slices of it (no copy).
//   3. Small frames are read many at a time through a staging buffer (one read(2) for many
//      pipelined frames); the remainder of a large body is read straight into its Buffer.
//   4. After any error the stream cannot be resynchronised: the caller closes the connection.
//   5. With `recycle_bytes_max` > 0, a body of at most that size is kept after it was handed
//      out, and the next body of exactly its size reuses it once nobody else holds it
//      (use_count 1): a client receiving same-sized blocks (KV-cache blocks are) skips the
//      allocation — for a 2 MiB get an mmap, a madvise, a munmap and 4 MiB of zeroed huge pages
//      per response; for a 4 KiB get three malloc/free pairs (the bytes, the Buffer, its
//      reference count). At most two bodies are kept, one under kRecycleBytesMin and one at
//      least that large, so a small response (a lookup's) between two large ones does not cost
//      the large one its memory.
//   6. With a payload placer set (a client's), a body's head (fixed part, length table, fields)
//      is read whole into staging before anything is allocated for it, and the placer is asked
//      where its payloads go. When it names a buffer of room for each payload (a caller's
//      memory: wmbt_kv_get_kv_blocks_into), only the head gets a Buffer and each payload is
//      received straight into its buffer (recvmsg over several, no copy in user space); the
//      parsed Message's payloads then point there and own nothing. The CRC is checked over the
//      head and the placed bytes once all have arrived: a mismatch (or a connection lost
//      midway) leaves the placed buffers holding whatever came, and the caller reports the
//      error. A body whose head does not fit in staging is never placed.
//
// Thread-safety: none; one reader per connection, used by one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "wire/frame.h"
#include "wire/message.h"
#include "wombatkv/buffer.h"
#include "wombatkv/status.h"

namespace wombatkv::tcp {

class FrameReader {
 public:
  // Bodies this large or larger are recycled in the large slot, smaller ones in the small slot
  // (invariant 5).
  static constexpr size_t kRecycleBytesMin = 1 << 20;

  explicit FrameReader(uint32_t max_body_bytes, size_t staging_bytes = 64 << 10,
                       size_t recycle_bytes_max = 0);

  // Invariant 6: asked once per body whose head has arrived, with the body's id and payload
  // lengths; returns one buffer per payload, each with room for it, or an empty span for the
  // usual body Buffer (anything else is taken as empty). The buffers must stay valid and
  // untouched by others until the body is complete or the reader is abandoned.
  using PayloadPlacer = std::function<std::span<const std::span<uint8_t>>(
      uint64_t id, std::span<const uint64_t> lengths)>;
  void set_payload_placer(PayloadPlacer placer) { placer_ = std::move(placer); }

  enum class ReadResult { kData, kWouldBlock, kEof };
  // One recv(2) from `fd` into the staging buffer or the body being received, with `flags`
  // (MSG_DONTWAIT: a poll of a blocking socket). kWouldBlock on EAGAIN (non-blocking sockets,
  // MSG_DONTWAIT, or a receive timeout). Unavailable naming the error on a socket failure.
  Result<ReadResult> ReadFrom(int fd, int flags = 0);

  // After kData: the read returned less than it had room for, so the socket held nothing more at
  // that moment. An event loop (level-triggered) can then wait instead of reading again only to
  // get EAGAIN — one syscall per request saved.
  bool drained() const { return drained_; }

  // The next complete Message among the bytes read so far, or nullopt when more are needed.
  // InvalidArgument for a bad envelope or body, Corruption for a CRC mismatch (invariant 4).
  Result<std::optional<wire::Message>> Next();

  // True while part of a frame has been received: for idle-close log lines.
  bool mid_frame() const { return body_ != nullptr || end_ > begin_; }

  // After Next() failed on a received body's layout, the id and op it claimed, so the error
  // response can name the request; 0 when the envelope was bad or the body's CRC did not match
  // (then the id itself may be what was damaged: an answer to it could go to another call, so
  // the answer is the connection's, which closes).
  uint64_t rejected_id() const { return rejected_id_; }
  uint16_t rejected_op() const { return rejected_op_; }

  // Changes the body limit for envelopes not parsed yet (e.g. raised after authentication).
  void set_max_body_bytes(uint32_t max_body_bytes) { max_body_ = max_body_bytes; }

  // Bytes received so far, for statistics.
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  std::shared_ptr<Buffer> AllocateBody(size_t size);
  // Invariant 6: true when the staged bytes after the envelope do not hold the body's whole head
  // yet and it would fit in staging (wait for more); else false, having set up the body: placed
  // when the placer gave buffers, else one Buffer.
  Result<bool> AwaitHeadAndPlace(const wire::Envelope& env);
  // Counts n received bytes against the segments.
  // `s` from a body that failed to parse: a CRC mismatch (Corruption) forgets the claimed id.
  Status Rejected(Status s) {
    if (s.code() == Code::kCorruption) rejected_id_ = rejected_op_ = 0;
    return s;
  }
  void Advance(size_t n);
  Result<wire::Message> FinishPlaced();

  // How many iovecs one direct read fills at most.
  static constexpr size_t kMaxReadIovecs = 64;
  uint32_t max_body_;
  std::vector<uint8_t> staging_;
  size_t begin_ = 0;  // staged, unconsumed bytes are [begin_, end_)
  size_t end_ = 0;
  std::shared_ptr<Buffer> body_;  // non-null while receiving a body (its head only, when placed)
  // Where the body's bytes go, in order: body_ whole, or (placed) its head then each payload's
  // buffer. segment_ is the one being filled, segment_filled_ its bytes so far.
  std::vector<std::span<uint8_t>> segments_;
  size_t segment_ = 0;
  size_t segment_filled_ = 0;
  size_t body_size_ = 0;
  bool placed_ = false;
  wire::BodyHead head_;  // of a placed body
  PayloadPlacer placer_;
  std::vector<uint64_t> lengths_;  // scratch for the placer
  std::shared_ptr<Buffer> spare_;  // invariant 5: the last large body handed out
  std::shared_ptr<Buffer> spare_small_;  // invariant 5: the last small body handed out
  size_t recycle_bytes_max_ = 0;
  size_t body_filled_ = 0;
  uint32_t body_crc_ = 0;
  uint64_t rejected_id_ = 0;
  uint16_t rejected_op_ = 0;
  uint64_t bytes_read_ = 0;
  bool drained_ = false;
};

}  // namespace wombatkv::tcp
