// RegionAllocator: first-fit allocation of byte ranges of one data area (segment_layout.h, A1).
//
// The bookkeeping is private to the process that owns the area (the client for requests, the
// daemon for responses), so the peer cannot corrupt it. Regions are rounded up to 64 bytes. The
// lowest fitting offset wins, so a steady workload keeps reusing the same (already faulted-in)
// pages at the start of the area; see `warm_bytes` in shm_server.h for giving the rest back.
//
// Cost: O(log n) to free; O(free extents) to allocate in the worst case (first fit scans).
// Thread-safety: none; callers hold their own lock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace wombatkv::shm {

class RegionAllocator {
 public:
  static constexpr uint64_t kAlignBytes = 64;

  // Manages [0, capacity). REQUIRES: capacity is a multiple of kAlignBytes.
  explicit RegionAllocator(uint64_t capacity);

  // Offset of a free region of at least `bytes` (> 0), or nullopt when none is large enough.
  std::optional<uint64_t> Allocate(uint64_t bytes);
  // Returns a region. REQUIRES: (offset, bytes) is exactly a live allocation.
  void Free(uint64_t offset, uint64_t bytes);

  uint64_t capacity() const { return capacity_; }
  uint64_t free_bytes() const { return free_bytes_; }
  uint64_t allocated_bytes() const { return capacity_ - free_bytes_; }
  // Number of free extents (1 when nothing is allocated).
  size_t fragments() const { return free_.size(); }

  static uint64_t Rounded(uint64_t bytes) { return (bytes + kAlignBytes - 1) & ~(kAlignBytes - 1); }

 private:
  uint64_t capacity_;
  uint64_t free_bytes_;
  std::map<uint64_t, uint64_t> free_;  // offset -> length; disjoint, never adjacent (coalesced)
};

}  // namespace wombatkv::shm
