#include "transport/shm/region_allocator.h"

#include "base/check.h"

namespace wombatkv::shm {

RegionAllocator::RegionAllocator(uint64_t capacity) : capacity_(capacity), free_bytes_(capacity) {
  WMBT_CHECK(capacity % kAlignBytes == 0);
  if (capacity) free_.emplace(0, capacity);
}

std::optional<uint64_t> RegionAllocator::Allocate(uint64_t bytes) {
  WMBT_CHECK(bytes > 0);
  const uint64_t n = Rounded(bytes);
  if (n < bytes || n > free_bytes_) return std::nullopt;  // n < bytes: rounding overflowed
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < n) continue;
    const uint64_t offset = it->first;
    const uint64_t rest = it->second - n;
    free_.erase(it);
    if (rest) free_.emplace(offset + n, rest);
    free_bytes_ -= n;
    return offset;
  }
  return std::nullopt;
}

void RegionAllocator::Free(uint64_t offset, uint64_t bytes) {
  const uint64_t n = Rounded(bytes);
  WMBT_CHECK(offset % kAlignBytes == 0 && n > 0 && offset + n <= capacity_);
  auto next = free_.lower_bound(offset);
  // A region overlapping a free extent means a double free: bookkeeping is broken (always-on
  // check: a region handed out twice would let two messages overwrite each other's bytes).
  WMBT_CHECK(next == free_.end() || next->first >= offset + n);
  uint64_t start = offset, length = n;
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    WMBT_CHECK(prev->first + prev->second <= offset);
    if (prev->first + prev->second == offset) {
      start = prev->first;
      length += prev->second;
      free_.erase(prev);
    }
  }
  if (next != free_.end() && next->first == offset + n) {
    length += next->second;
    free_.erase(next);
  }
  free_.emplace(start, length);
  free_bytes_ += n;
}

}  // namespace wombatkv::shm
