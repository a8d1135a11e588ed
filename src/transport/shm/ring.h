// Rings of message slots in a shared segment, and how a wire::Message is laid out in them.
//
// A Ring is a view (no ownership) of one single-producer single-consumer ring described in
// segment_layout.h (invariants R1-R3). Each side keeps its own index privately and publishes it
// through the ring's counters; the other side's counter is read as untrusted input.
//
// A message in a slot: SlotHeader, then — when it fits — the body inline; otherwise the body is
// spilled to the start of a region the sender allocated in its data area. The body is the payload
// table (PayloadRef per payload: offset from the area start, length) followed by the fields.
// Payload bytes never travel in a slot: they sit in the region (after the spilled body, each
// 64-byte aligned), so a put copies each payload once and a get hands the reader a pointer.
//
//   slot:    SlotHeader | body if inline
//   region:  [body if spilled, 64-aligned] [payload 0, 64-aligned] [payload 1] ...
//
// A response's payload may instead lie in one of the daemon's payload arenas (payload_arenas.h):
// its PayloadRef names the arena, and it takes no room in the region (zero-copy get).
//
// Thread-safety: none here; callers serialise each side of a ring (shm_server.h, shm_channel.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "transport/shm/futex.h"
#include "transport/shm/segment_layout.h"
#include "wire/message.h"
#include "wombatkv/status.h"

namespace wombatkv::shm {

class Ring {
 public:
  Ring() = default;
  Ring(RingControl* control, uint8_t* slots, uint32_t slot_count, uint32_t slot_bytes)
      : control_(control), slots_(slots), count_(slot_count), slot_bytes_(slot_bytes) {}

  uint32_t capacity() const { return count_; }
  uint32_t slot_bytes() const { return slot_bytes_; }
  uint8_t* slot(uint32_t index) const {
    return slots_ + size_t{index & (count_ - 1)} * slot_bytes_;
  }
  std::atomic_ref<uint32_t> tail() const { return Atomic(control_->tail); }
  std::atomic_ref<uint32_t> head() const { return Atomic(control_->head); }
  std::atomic_ref<uint32_t> wake() const { return Atomic(control_->wake); }
  std::atomic_ref<uint32_t> wake_seq() const { return Atomic(control_->wake_seq); }
  uint32_t* wake_seq_word() const { return &control_->wake_seq; }

  // Slots in use given the two counters, or -1 when they break R1 (tail - head > capacity).
  int64_t Used(uint32_t tail, uint32_t head) const {
    const uint32_t used = tail - head;
    return used <= count_ ? int64_t{used} : -1;
  }

 private:
  RingControl* control_ = nullptr;
  uint8_t* slots_ = nullptr;
  uint32_t count_ = 0;
  uint32_t slot_bytes_ = 0;
};

enum class SlotKind : uint8_t { kMessage = 1, kError = 2 };

struct SlotHeader {
  uint64_t id;
  uint16_t op;
  uint16_t flags;
  uint8_t kind;          // SlotKind
  uint8_t code;          // kError: a wombatkv::Code; the body is the message text
  uint8_t body_spilled;  // 1: the body is at the start of the region, not inline
  uint8_t reserved;
  uint32_t payload_count;
  uint32_t reserved2;
  uint64_t fields_bytes;
  uint64_t region_offset;  // in the sender's area
  uint64_t region_bytes;   // 0 = no region
  // Responses: what the client pushes on the release ring once it is done with the response's
  // region and shared payloads (A3); 0 = nothing to release. Requests: 0.
  uint64_t release_token;
};
static_assert(sizeof(SlotHeader) == 56);

struct PayloadRef {
  uint64_t offset;  // from the start of the area (arena 0) or of the payload arena
  uint64_t bytes;
  // 0: the sender's own data area. 1..kPayloadArenasMax: a payload arena of the daemon,
  // whose descriptor the client was handed on the control socket (ArenaGrant; responses only).
  uint32_t arena;
  uint32_t reserved;
};
static_assert(sizeof(PayloadRef) == 24);

// How one message will be laid out.
struct MessagePlan {
  uint64_t body_bytes = 0;    // payload table + fields
  bool body_inline = true;
  uint64_t region_bytes = 0;  // 0 when everything fits the slot and no payload is copied
  std::vector<uint64_t> payload_offsets;  // of each copied payload within the region
  std::vector<PayloadRef> shared;  // per payload: arena != 0 when it is passed by reference
  size_t shared_count = 0;
};

inline uint64_t InlineBodyBytesMax(uint32_t slot_bytes) { return slot_bytes - sizeof(SlotHeader); }

// `shared` (empty, or one entry per payload): payloads with an arena set are passed by that
// reference instead of being copied into the region.
MessagePlan PlanMessage(const wire::Message& m, uint32_t slot_bytes,
                        std::vector<PayloadRef> shared = {});

// Copies the payloads (and the body, when spilled) into the region at `region` whose offset in
// its area is `region_offset`. REQUIRES: the region holds plan.region_bytes.
void WriteRegion(const wire::Message& m, const MessagePlan& plan, uint8_t* region,
                 uint64_t region_offset);

// Writes the slot header and the inline body. REQUIRES: `slot` has slot_bytes.
void WriteSlot(uint8_t* slot, const wire::Message& m, const MessagePlan& plan,
               uint64_t region_offset, uint64_t release_token = 0);

// A transport-level failure in place of a response (e.g. the response does not fit the area).
// The message is cut to fit the slot.
void WriteErrorSlot(uint8_t* slot, uint32_t slot_bytes, uint64_t id, uint16_t op,
                    const Status& status);

// A slot read back into private memory (A2): header, fields and payload table copied out of the
// shared segment and checked against the area, so later changes by the peer cannot affect them.
struct SlotMessage {
  SlotHeader header{};
  std::vector<uint8_t> fields;
  std::vector<PayloadRef> payloads;
  Status error;  // kError slots
};

// Reads the slot; a spilled body is read from `area` (of `area_bytes`). InvalidArgument naming
// the inconsistency when any count, length or offset is out of bounds, or the kind is unknown.
// Payloads in an arena (a response's) are checked against `arenas_max` here and against the
// arena's size by the caller; with arenas_max 0 (requests) none may refer to one. Fields longer
// than `fields_max` are refused too: the daemon reads a request's fields with kRequestFieldsMax,
// so that a client naming a whole data area as fields (which costs it nothing) does not make it
// copy that much.
Result<SlotMessage> ReadSlot(const uint8_t* slot, uint32_t slot_bytes, const uint8_t* area,
                             uint64_t area_bytes, uint32_t arenas_max = 0,
                             uint64_t fields_max = UINT64_MAX);
// The longest fields of any request: a lookup or get of limits::kLookupKeysMax keys (32 MiB of
// keys), with room to spare.
inline constexpr uint64_t kRequestFieldsMax = 48ull << 20;

}  // namespace wombatkv::shm
