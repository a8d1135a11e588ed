// RegionAllocator: lowest-offset first-fit allocation of byte ranges of one data area
// (segment_layout.h, A1; and each namespace's payload arena, payload_arenas.h).
//
// The bookkeeping is private to the process that owns the area (the client for requests, the
// daemon for responses and arenas), so the peer cannot corrupt it. Regions are rounded up to 64
// bytes. The lowest fitting offset wins, so a steady workload keeps reusing the same (already
// faulted-in) pages at the start of the area; see `warm_bytes` in shm_server.h for giving the rest
// back.
//
// The free extents are a treap ordered by offset in which every node also knows the longest
// extent of its subtree, so the lowest extent that fits is found by one descent: an arena whose
// cache evicted in LRU order holds thousands of small holes below the first one a 2 MiB payload
// fits in, and a scan of them ran under the arena's lock on every put (BENCHMARKS.md, "Session
// 42").
//
// Invariants:
//   R1  Free extents are disjoint and never adjacent (Free coalesces); their total is free_bytes.
//   R2  max_length of a node == the longest length in its subtree.
//   R3  Heap order on priority (a parent's >= its children's); priorities are a fixed mix of a
//       counter, so the same calls give the same tree (the simulator replays them).
//
// Cost: O(log n) expected per Allocate and Free, n = free extents (looks() counts the nodes
// Allocate's descents visit).
// Thread-safety: none; callers hold their own lock.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace wombatkv::shm {

class RegionAllocator {
 public:
  static constexpr uint64_t kAlignBytes = 64;

  // Manages [0, capacity). REQUIRES: capacity is a multiple of kAlignBytes.
  explicit RegionAllocator(uint64_t capacity);

  // Offset of a free region of at least `bytes` (> 0), or nullopt when none is large enough.
  std::optional<uint64_t> Allocate(uint64_t bytes);
  // Returns a region. REQUIRES: (offset, bytes) is exactly a live allocation (a region that
  // overlaps a free extent is a fatal error: two messages would share bytes).
  void Free(uint64_t offset, uint64_t bytes);

  uint64_t capacity() const { return capacity_; }
  uint64_t free_bytes() const { return free_bytes_; }
  uint64_t allocated_bytes() const { return capacity_ - free_bytes_; }
  // Number of free extents (1 when nothing is allocated).
  size_t fragments() const { return extents_; }
  // Tree nodes Allocate has looked at since construction.
  uint64_t looks() const { return looks_; }

  static uint64_t Rounded(uint64_t bytes) { return (bytes + kAlignBytes - 1) & ~(kAlignBytes - 1); }

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  struct Node {
    uint64_t offset = 0;
    uint64_t length = 0;
    uint64_t max_length = 0;  // R2
    uint32_t left = kNil, right = kNil;
    uint32_t priority = 0;
  };

  uint32_t NewNode(uint64_t offset, uint64_t length);
  void DropNode(uint32_t x);
  uint64_t MaxOf(uint32_t x) const { return x == kNil ? 0 : nodes_[x].max_length; }
  void Pull(uint32_t x);
  // l gets the extents below `offset`, r the others.
  void Split(uint32_t t, uint64_t offset, uint32_t* l, uint32_t* r);
  uint32_t Merge(uint32_t l, uint32_t r);  // REQUIRES: every offset of l < every offset of r
  uint32_t Lowest(uint32_t t) const;
  uint32_t Highest(uint32_t t) const;
  uint32_t LowestFit(uint64_t n);  // REQUIRES: MaxOf(root_) >= n

  uint64_t capacity_;
  uint64_t free_bytes_;
  size_t extents_ = 0;
  uint64_t looks_ = 0;
  uint64_t priority_seq_ = 0;
  uint32_t root_ = kNil;
  std::vector<Node> nodes_;
  std::vector<uint32_t> spare_;  // indexes of unused nodes_
};

}  // namespace wombatkv::shm
