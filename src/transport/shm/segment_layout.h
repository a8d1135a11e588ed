// The layout of one client's shared segment: what lies where, who writes what, and the invariants
// both processes rely on. The segment is a memfd the daemon creates per client and passes over the
// control socket (docs/shm.md); it never leaves the host, so integers are in host byte order and
// structs are laid out by this compiler (checked by static_assert).
//
//   offset 0        SegmentHeader            written by the daemon before the fd is passed; read-only
//                                            afterwards (the client validates it against Layout)
//   kRingControlsOffset  three RingControls  request, response, release (3 cache lines each)
//   request_slots   slot_count x slot_bytes  client -> daemon messages
//   response_slots  slot_count x slot_bytes  daemon -> client messages
//   release_slots   release_count x u64      client -> daemon: release tokens of responses it let go
//   request_area    request_area_bytes       payloads and spilled bodies of requests (client allocates)
//   response_area   response_area_bytes      payloads and spilled bodies of responses (daemon allocates)
//
// Rings (ring.h) are single-producer single-consumer over u32 counters that wrap:
//   R1  `tail` is written only by the producer, `head` only by the consumer; slots [head, tail) are
//       full, and 0 <= tail - head <= slot_count (a power of two). A reader of the other side's
//       counter treats a value breaking this as a protocol error, never as an index.
//   R2  the producer writes a slot completely, then publishes it with a release store of `tail`;
//       the consumer reads `tail` with acquire, copies the slot out, then releases it with a
//       release store of `head`. Nobody reads a slot after releasing it.
//   R3  wake words: request ring `wake` = doorbell armed (a daemon worker sets it before it may
//       sleep, and before it runs a handler that may block while no other worker scans, so
//       disarmed means a worker will scan; a client that finds it set after publishing a
//       request exchanges it to 0 and sends one byte on the control socket); response ring
//       `wake` = number of client threads about to sleep on the response ring's `wake_seq` futex
//       (after publishing, the daemon bumps `wake_seq` and wakes them when `wake` is non-zero).
//       Both sides put a seq_cst fence between their counter store and their read of the other
//       side's word, so a wake-up is never lost.
// Areas:
//   A1  the request area is allocated by the client alone and the response area by the daemon
//       alone, each with private bookkeeping (RegionAllocator), so neither can corrupt the other's
//       allocator through shared memory.
//   A2  every offset and length read from shared memory is checked against its area before use;
//       the daemon copies request bodies (fields, payload tables) out before decoding them.
//   A3  what a response holds — its region, and the payload arena ranges it refers to (kept by
//       the daemon holding their Buffers) — is let go only after the client pushes the response's
//       release token on the release ring (its Borrow died) or the client detaches; the daemon
//       ignores tokens it did not deliver to that client.
#pragma once

#include <cstddef>
#include <cstdint>

#include "wombatkv/status.h"

namespace wombatkv::shm {

inline constexpr uint32_t kSegmentMagic = 0x48534D57;  // "WMSH" as a little-endian u32
inline constexpr uint32_t kLayoutVersion = 2;  // 2: payload arenas, release tokens
inline constexpr size_t kCacheLineBytes = 64;
inline constexpr size_t kAreaAlignBytes = 2u << 20;  // areas start on a huge-page boundary
inline constexpr size_t kPayloadAlignBytes = 64;     // every payload in a region starts on a line

struct SegmentHeader {
  uint32_t magic;
  uint32_t layout_version;
  uint64_t segment_bytes;
  uint64_t session_id;
  uint32_t slot_bytes;
  uint32_t slot_count;
  uint32_t release_count;
  uint32_t reserved;
  uint64_t request_area_bytes;
  uint64_t response_area_bytes;
};

// One ring's counters, each on its own cache line so the producer and the consumer do not bounce
// a line between them on every message.
struct alignas(kCacheLineBytes) RingControl {
  alignas(kCacheLineBytes) uint32_t tail;
  alignas(kCacheLineBytes) uint32_t head;
  alignas(kCacheLineBytes) uint32_t wake;
  uint32_t wake_seq;
};
static_assert(sizeof(RingControl) == 3 * kCacheLineBytes);

inline constexpr size_t kRingControlsOffset = 256;
static_assert(sizeof(SegmentHeader) <= kRingControlsOffset);

// The sizes the daemon chose; everything else follows from them.
struct LayoutParams {
  uint32_t slot_bytes = 512;
  uint32_t slot_count = 256;
  uint32_t release_count = 16384;
  uint64_t request_area_bytes = 1ull << 30;
  uint64_t response_area_bytes = 1ull << 30;
};

inline constexpr uint32_t kSlotBytesMin = 128;
inline constexpr uint32_t kSlotBytesMax = 64u << 10;
inline constexpr uint32_t kSlotCountMax = 1u << 16;
inline constexpr uint32_t kReleaseCountMax = 1u << 20;
inline constexpr uint64_t kAreaBytesMin = 1u << 20;
inline constexpr uint64_t kAreaBytesMax = 1ull << 40;

struct Layout {
  LayoutParams params;
  uint64_t request_ring_control = 0;
  uint64_t response_ring_control = 0;
  uint64_t release_ring_control = 0;
  uint64_t request_slots = 0;
  uint64_t response_slots = 0;
  uint64_t release_slots = 0;
  uint64_t request_area = 0;
  uint64_t response_area = 0;
  uint64_t segment_bytes = 0;
};

// Computes where everything lies. InvalidArgument when a parameter is out of range (slot sizes
// and counts must be powers of two; areas between 1 MiB and 1 TiB).
Result<Layout> ComputeLayout(const LayoutParams& params);

// Writes the header and zeroes the ring controls of a fresh (zero-filled) segment.
void InitSegment(uint8_t* base, const Layout& layout, uint64_t session_id);

// Checks a mapped segment's header: magic, version, parameters in range and a layout that fits
// `mapped_bytes` exactly. Returns the layout to use. FailedPrecondition naming the mismatch (e.g.
// "shared segment layout version 2, this library speaks 1: upgrade the client library").
Result<Layout> ReadLayout(const uint8_t* base, uint64_t mapped_bytes);

// The one message on the control socket: the daemon's answer to a connecting client, with the
// segment's fd attached (SCM_RIGHTS) when `code` is 0. After it the socket carries only doorbell
// bytes (client -> daemon) and hang-ups, which are how each side learns the other is gone.
struct AttachReply {
  uint32_t magic;  // kSegmentMagic
  uint32_t layout_version;
  uint32_t code;   // 0, or a wombatkv::Code explaining the refusal in `message`
  uint32_t message_bytes;
  uint64_t segment_bytes;
  uint64_t session_id;
  char message[224];
};
static_assert(sizeof(AttachReply) == 256);

// The daemon's other message on the control socket: a payload arena's descriptor (SCM_RIGHTS,
// sealed so that it maps read-only), sent before the first response that refers to the arena,
// and only to a client served a payload of the arena's namespace (docs/shm.md, "Zero-copy gets").
inline constexpr uint32_t kArenaGrantMagic = 0x41524D57;  // "WMRA"
inline constexpr uint32_t kPayloadArenasMax = 64;  // arena numbers 1..64 (0: the client's area)
struct ArenaGrant {
  uint32_t magic;  // kArenaGrantMagic
  uint32_t arena;  // 1..kPayloadArenasMax
  uint64_t bytes;  // the arena's size
};
static_assert(sizeof(ArenaGrant) == 16);

}  // namespace wombatkv::shm
