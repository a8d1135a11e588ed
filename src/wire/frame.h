// The wire envelope of SPEC §8 and the framed body the TCP transport carries.
//
// Envelope (16 bytes, little-endian):  magic "WMBT" | u32 version | u32 CRC32C(body) | u32 body_len
// A reader checks magic, version and body_len against its configured maximum BEFORE allocating the
// body, then the CRC once the body is in. See docs/wire.md for the full format and golden bytes.
//
// Body of a framed Message (little-endian):
//   u64 id | u16 op | u16 flags | u32 payload_count | u32 fields_len |
//   u64 payload_len[payload_count] | fields[fields_len] | payload bytes, concatenated
// The table of payload lengths comes first so a receiver can split payloads without knowing ops.
#pragma once

#include <array>
#include <cstdint>
#include <sys/uio.h>
#include <vector>

#include "wire/message.h"
#include "wombatkv/status.h"

namespace wombatkv::wire {

inline constexpr uint32_t kMagic = 0x54424D57;  // "WMBT" read as a little-endian u32
inline constexpr uint32_t kVersion = 1;
inline constexpr size_t kEnvelopeBytes = 16;
inline constexpr size_t kBodyFixedBytes = 20;    // id .. fields_len
// One raw tail at its limit (1 GiB, limits.h) with room for its message's head: a frame limit of
// exactly 1 GiB refused the largest sidecar over TCP alone.
inline constexpr uint32_t kDefaultMaxBodyBytes = (1u << 30) + (1u << 20);
inline constexpr uint32_t kMaxPayloadsPerMessage = 1u << 16;

struct Envelope {
  uint32_t version = 0;
  uint32_t crc = 0;
  uint32_t body_len = 0;
};

void EncodeEnvelope(uint32_t body_len, uint32_t crc, uint8_t out[kEnvelopeBytes]);

// Checks magic, version and length (<= max_body). InvalidArgument naming what was wrong
// ("bad magic 0x...", "unsupported wire version 7", "frame body 2000000000 bytes exceeds the
// limit 1073741824"). Never allocates.
Result<Envelope> ParseEnvelope(const uint8_t in[kEnvelopeBytes], uint32_t max_body);

// A message framed for a byte stream: `head` holds the envelope, the fixed body fields, the
// payload-length table and the fields; the payload bytes are referenced, not copied, so a sender
// can writev() head + payloads. `iov()` lists them in order (valid while the FramedMessage and
// the message's payloads live).
struct FramedMessage {
  std::vector<uint8_t> head;
  std::vector<BufferSlice> payloads;
  std::vector<iovec> iov() const;
  size_t total_bytes() const;
};

// Supplies the CRC32C of a payload's bytes, e.g. remembered from an earlier frame that carried
// the same immutable bytes (transport/tcp/payload_crc_memo.h), so framing need not read them.
// Must return exactly Crc32c(slice.data, slice.size).
class PayloadCrcSource {
 public:
  virtual ~PayloadCrcSource() = default;
  virtual uint32_t PayloadCrc(const BufferSlice& slice) = 0;
};

// InvalidArgument when the body would exceed max_body or there are too many payloads.
// `crcs`: asked for the CRC of every payload of at least kPayloadCrcSourceBytesMin bytes
// (null: every CRC is computed here); the bytes on the wire are the same either way.
inline constexpr size_t kPayloadCrcSourceBytesMin = 16 << 10;
Result<FramedMessage> Frame(Message message, uint32_t max_body = kDefaultMaxBodyBytes,
                            PayloadCrcSource* crcs = nullptr);

// The fixed part of a body (its first kBodyFixedBytes), which says how long the rest of its head
// (the payload-length table and the fields) is: a receiver reads it before the payloads arrive,
// to decide where they go (transport/tcp/frame_reader.h).
struct BodyHead {
  uint64_t id = 0;
  uint16_t op = 0;
  uint16_t flags = 0;
  uint32_t payload_count = 0;
  uint32_t fields_len = 0;
  // The fixed part, the table and the fields: where the payloads begin.
  uint64_t bytes() const { return kBodyFixedBytes + 8ull * payload_count + fields_len; }
};

// Reads the fixed part of a body of `body_len` bytes. InvalidArgument when the body is shorter
// than the fixed part or than the head it announces, or has too many payloads.
Result<BodyHead> ParseBodyHead(const uint8_t* in, size_t body_len);

// Corruption naming both CRCs when the body's CRC32C `actual` is not the envelope's `expected`.
Status CheckBodyCrc(uint32_t expected, uint32_t actual);

// Parses a received body (CRC already checked by the caller, or checked here when `crc` is
// given). Payload slices point into `body` (no copy). InvalidArgument on any inconsistency:
// truncated fixed part, payload table longer than the body, lengths not summing to the body.
Result<Message> ParseBody(std::shared_ptr<const Buffer> body);
Result<Message> ParseBody(std::shared_ptr<const Buffer> body, uint32_t expected_crc);

}  // namespace wombatkv::wire
