// Message: the unit every daemon transport moves, independent of how it travels.
//
// A message is a small `fields` record (encoded by src/wire/codec, one layout per op) plus an
// ordered list of bulk `payloads` (block bytes, sidecars). Transports carry the two differently:
//   TCP   — fields and payload bytes inline in one framed body (frame.h), one CRC over all of it;
//   shm   — fields in a ring slot, payloads in the client's shared data area, passed as offsets,
//           so a same-host put is one copy and a get hands the engine a pointer (docs/shm.md).
// Keeping payloads out of `fields` is what lets both transports avoid re-encoding bulk bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "wombatkv/buffer.h"

namespace wombatkv::wire {

struct Message {
  uint64_t id = 0;     // request id chosen by the client; a response carries its request's id
  uint16_t op = 0;     // wire::Op (codec.h); the same op in the request and its response
  uint16_t flags = 0;  // kFlagResponse, ...
  std::vector<uint8_t> fields;
  std::vector<BufferSlice> payloads;  // views that keep their bytes alive
};

inline constexpr uint16_t kFlagResponse = 1u << 0;

}  // namespace wombatkv::wire
