#include "transport/shm/segment_layout.h"

#include <cstring>
#include <string>

#include "base/check.h"

namespace wombatkv::shm {
namespace {

bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

Result<Layout> ComputeLayout(const LayoutParams& p) {
  if (!IsPowerOfTwo(p.slot_bytes) || p.slot_bytes < kSlotBytesMin || p.slot_bytes > kSlotBytesMax)
    return Status::InvalidArgument("shm slot size " + std::to_string(p.slot_bytes) +
                                   " must be a power of two from " +
                                   std::to_string(kSlotBytesMin) + " to " +
                                   std::to_string(kSlotBytesMax) + " bytes");
  if (!IsPowerOfTwo(p.slot_count) || p.slot_count < 2 || p.slot_count > kSlotCountMax)
    return Status::InvalidArgument("shm ring of " + std::to_string(p.slot_count) +
                                   " slots: must be a power of two from 2 to " +
                                   std::to_string(kSlotCountMax));
  if (!IsPowerOfTwo(p.release_count) || p.release_count < 2 || p.release_count > kReleaseCountMax)
    return Status::InvalidArgument("shm release ring of " + std::to_string(p.release_count) +
                                   " entries: must be a power of two from 2 to " +
                                   std::to_string(kReleaseCountMax));
  for (uint64_t area : {p.request_area_bytes, p.response_area_bytes}) {
    // The region allocator hands out 64-byte units (region_allocator.h).
    if (area < kAreaBytesMin || area > kAreaBytesMax || area % 64 != 0)
      return Status::InvalidArgument("shm data area of " + std::to_string(area) +
                                     " bytes: must be a multiple of 64 from 1 MiB to 1 TiB");
  }
  Layout l;
  l.params = p;
  l.request_ring_control = kRingControlsOffset;
  l.response_ring_control = l.request_ring_control + sizeof(RingControl);
  l.release_ring_control = l.response_ring_control + sizeof(RingControl);
  const uint64_t ring_bytes = uint64_t{p.slot_bytes} * p.slot_count;
  l.request_slots = AlignUp(l.release_ring_control + sizeof(RingControl), 4096);
  l.response_slots = l.request_slots + ring_bytes;
  l.release_slots = l.response_slots + ring_bytes;
  l.request_area = AlignUp(l.release_slots + 8ull * p.release_count, kAreaAlignBytes);
  l.response_area = AlignUp(l.request_area + p.request_area_bytes, kAreaAlignBytes);
  l.segment_bytes = AlignUp(l.response_area + p.response_area_bytes, 4096);
  return l;
}

void InitSegment(uint8_t* base, const Layout& l, uint64_t session_id) {
  SegmentHeader h{};
  h.magic = kSegmentMagic;
  h.layout_version = kLayoutVersion;
  h.segment_bytes = l.segment_bytes;
  h.session_id = session_id;
  h.slot_bytes = l.params.slot_bytes;
  h.slot_count = l.params.slot_count;
  h.release_count = l.params.release_count;
  h.request_area_bytes = l.params.request_area_bytes;
  h.response_area_bytes = l.params.response_area_bytes;
  std::memcpy(base, &h, sizeof h);
  std::memset(base + kRingControlsOffset, 0, 3 * sizeof(RingControl));
  // R3: no worker is asleep yet, but arming costs nothing and makes the first request of an
  // idle daemon ring the doorbell rather than wait for a scan.
  reinterpret_cast<RingControl*>(base + l.request_ring_control)->wake = 1;
}

Result<Layout> ReadLayout(const uint8_t* base, uint64_t mapped_bytes) {
  if (mapped_bytes < sizeof(SegmentHeader))
    return Status::FailedPrecondition("shared segment of " + std::to_string(mapped_bytes) +
                                      " bytes is too small to hold its header");
  SegmentHeader h;
  std::memcpy(&h, base, sizeof h);
  if (h.magic != kSegmentMagic)
    return Status::FailedPrecondition("shared segment has a bad magic number: the peer on the "
                                      "control socket is not a wombatkvd");
  if (h.layout_version != kLayoutVersion)
    return Status::FailedPrecondition(
        "shared segment layout version " + std::to_string(h.layout_version) +
        ", this library speaks " + std::to_string(kLayoutVersion) +
        ": use a client library and wombatkvd from the same release");
  LayoutParams p;
  p.slot_bytes = h.slot_bytes;
  p.slot_count = h.slot_count;
  p.release_count = h.release_count;
  p.request_area_bytes = h.request_area_bytes;
  p.response_area_bytes = h.response_area_bytes;
  auto layout = ComputeLayout(p);
  if (!layout.ok())
    return Status::FailedPrecondition("shared segment header is invalid: " +
                                      layout.status().message());
  if (layout->segment_bytes != h.segment_bytes || layout->segment_bytes != mapped_bytes)
    return Status::FailedPrecondition(
        "shared segment is " + std::to_string(mapped_bytes) + " bytes but its header describes " +
        std::to_string(h.segment_bytes) + " (layout needs " +
        std::to_string(layout->segment_bytes) + ")");
  return layout;
}

}  // namespace wombatkv::shm
