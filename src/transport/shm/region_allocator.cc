#include "transport/shm/region_allocator.h"

#include <algorithm>

#include "base/check.h"

namespace wombatkv::shm {
namespace {

// splitmix64's finaliser: spreads a counter over the priority range (R3).
uint32_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return static_cast<uint32_t>((x ^ (x >> 31)) >> 32);
}

}  // namespace

RegionAllocator::RegionAllocator(uint64_t capacity) : capacity_(capacity), free_bytes_(capacity) {
  WMBT_CHECK(capacity % kAlignBytes == 0);
  if (capacity) root_ = NewNode(0, capacity);
}

uint32_t RegionAllocator::NewNode(uint64_t offset, uint64_t length) {
  uint32_t x;
  if (spare_.empty()) {
    x = static_cast<uint32_t>(nodes_.size());
    nodes_.emplace_back();
  } else {
    x = spare_.back();
    spare_.pop_back();
  }
  nodes_[x] = Node{offset, length, length, kNil, kNil, Mix(++priority_seq_)};
  ++extents_;
  return x;
}

void RegionAllocator::DropNode(uint32_t x) {
  spare_.push_back(x);
  --extents_;
}

void RegionAllocator::Pull(uint32_t x) {
  Node& n = nodes_[x];
  n.max_length = std::max({n.length, MaxOf(n.left), MaxOf(n.right)});
}

void RegionAllocator::Split(uint32_t t, uint64_t offset, uint32_t* l, uint32_t* r) {
  if (t == kNil) {
    *l = *r = kNil;
    return;
  }
  if (nodes_[t].offset < offset) {
    Split(nodes_[t].right, offset, &nodes_[t].right, r);
    *l = t;
  } else {
    Split(nodes_[t].left, offset, l, &nodes_[t].left);
    *r = t;
  }
  Pull(t);
}

uint32_t RegionAllocator::Merge(uint32_t l, uint32_t r) {
  if (l == kNil) return r;
  if (r == kNil) return l;
  if (nodes_[l].priority >= nodes_[r].priority) {
    nodes_[l].right = Merge(nodes_[l].right, r);
    Pull(l);
    return l;
  }
  nodes_[r].left = Merge(l, nodes_[r].left);
  Pull(r);
  return r;
}

uint32_t RegionAllocator::Lowest(uint32_t t) const {
  if (t == kNil) return kNil;
  while (nodes_[t].left != kNil) t = nodes_[t].left;
  return t;
}

uint32_t RegionAllocator::Highest(uint32_t t) const {
  if (t == kNil) return kNil;
  while (nodes_[t].right != kNil) t = nodes_[t].right;
  return t;
}

uint32_t RegionAllocator::LowestFit(uint64_t n) {
  uint32_t t = root_;
  for (;;) {
    ++looks_;
    const Node& node = nodes_[t];
    if (MaxOf(node.left) >= n) {
      t = node.left;
    } else if (node.length >= n) {
      return t;
    } else {
      t = node.right;  // R2: the subtree's longest extent is here
    }
  }
}

std::optional<uint64_t> RegionAllocator::Allocate(uint64_t bytes) {
  WMBT_CHECK(bytes > 0);
  const uint64_t n = Rounded(bytes);
  if (n < bytes || n > free_bytes_ || MaxOf(root_) < n) return std::nullopt;  // n < bytes: overflow
  const uint32_t x = LowestFit(n);
  const uint64_t offset = nodes_[x].offset;
  const uint64_t rest = nodes_[x].length - n;
  uint32_t below, at, above;
  Split(root_, offset, &below, &at);
  Split(at, offset + 1, &at, &above);
  WMBT_CHECK(at == x);
  if (rest) {
    // The extent keeps its place in the order: what is left starts after the region.
    nodes_[x].offset = offset + n;
    nodes_[x].length = rest;
    Pull(x);
    at = x;
  } else {
    DropNode(x);
    at = kNil;
  }
  root_ = Merge(Merge(below, at), above);
  free_bytes_ -= n;
  return offset;
}

void RegionAllocator::Free(uint64_t offset, uint64_t bytes) {
  const uint64_t n = Rounded(bytes);
  WMBT_CHECK(offset % kAlignBytes == 0 && n > 0 && offset + n <= capacity_);
  uint32_t below, above;
  Split(root_, offset, &below, &above);
  // A region overlapping a free extent means a double free: bookkeeping is broken (always-on
  // check: a region handed out twice would let two messages overwrite each other's bytes).
  const uint32_t prev = Highest(below), next = Lowest(above);
  WMBT_CHECK(next == kNil || nodes_[next].offset >= offset + n);
  WMBT_CHECK(prev == kNil || nodes_[prev].offset + nodes_[prev].length <= offset);
  uint64_t start = offset, length = n;
  if (prev != kNil && nodes_[prev].offset + nodes_[prev].length == offset) {
    start = nodes_[prev].offset;
    length += nodes_[prev].length;
    uint32_t same;
    Split(below, start, &below, &same);
    DropNode(same);
  }
  if (next != kNil && nodes_[next].offset == offset + n) {
    length += nodes_[next].length;
    uint32_t same;
    Split(above, offset + n + 1, &same, &above);
    DropNode(same);
  }
  root_ = Merge(Merge(below, NewNode(start, length)), above);
  free_bytes_ += n;
}

}  // namespace wombatkv::shm
