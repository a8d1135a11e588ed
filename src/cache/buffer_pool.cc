#include "cache/buffer_pool.h"

#include <cstring>
#include <utility>

#include "cache/huge_chunk.h"

namespace wombatkv {
namespace {
constexpr size_t kPageBytes = 4 << 10;

size_t CapacityFor(size_t size) {
  const size_t unit = size >= kHugeChunkBytes ? kHugeChunkBytes : kPageBytes;
  return (size + unit - 1) / unit * unit;
}
}  // namespace

std::shared_ptr<BufferPool> BufferPool::Create(uint64_t idle_bytes_max) {
  return std::shared_ptr<BufferPool>(new BufferPool(idle_bytes_max));
}

std::shared_ptr<Buffer> BufferPool::Allocate(size_t size) {
  if (size < kMinPooledBytes) return Buffer::Allocate(size);
  const size_t capacity = CapacityFor(size);
  const size_t slots = SlotsPerHugeChunk(capacity);
  std::shared_ptr<Buffer> memory;
  size_t carve = 0;  // slots of a new chunk to cut, their siblings' room already taken (P2)
  {
    std::lock_guard<std::mutex> g(mu_);
    auto it = idle_.find(capacity);
    if (it != idle_.end() && !it->second.empty()) {
      memory = std::move(it->second.back());
      it->second.pop_back();
      stats_.idle_bytes -= capacity;
      ++stats_.reused;
    } else {
      ++stats_.fresh;
      if (slots > 1 && stats_.idle_bytes + (slots - 1) * capacity <= idle_bytes_max_) {
        stats_.idle_bytes += (slots - 1) * capacity;
        carve = slots;
      }
    }
  }
  if (carve > 0) memory = TakeCarved(capacity, carve);
  if (!memory) memory = Buffer::Allocate(capacity);
  uint8_t* data = memory->data();
  // The handed-out Buffer borrows `memory`'s bytes; its release hands `memory` back (P1: only
  // once nothing references the handed-out Buffer any more).
  return Buffer::Adopt(data, size, [pool = shared_from_this(), m = std::move(memory)]() mutable {
    pool->Release(std::move(m));
  });
}

std::shared_ptr<Buffer> BufferPool::TakeCarved(size_t capacity, size_t slots) {
  std::vector<std::shared_ptr<Buffer>> carved = CarveHugeChunk(capacity, slots);
  std::lock_guard<std::mutex> g(mu_);
  if (carved.empty()) {  // the mapping failed: give the room back, the caller mallocs
    stats_.idle_bytes -= (slots - 1) * capacity;
    return nullptr;
  }
  ++stats_.chunks;
  std::vector<std::shared_ptr<Buffer>>& idle = idle_[capacity];
  // Handed out last-in first-out: the slots after the first go out in address order.
  for (size_t i = carved.size() - 1; i >= 1; --i) idle.push_back(std::move(carved[i]));
  return std::move(carved[0]);
}

void BufferPool::Release(std::shared_ptr<Buffer> memory) {
  const size_t capacity = memory->size();
  {
    std::lock_guard<std::mutex> g(mu_);
    if (stats_.idle_bytes + capacity <= idle_bytes_max_) {
      idle_[capacity].push_back(std::move(memory));
      stats_.idle_bytes += capacity;
      return;
    }
    ++stats_.dropped;
  }
  // Freed outside the lock (P2): munmap can take a while.
  memory.reset();
}

BufferSlice BufferPool::Compact(BufferSlice slice) {
  if (!slice.owner || slice.size < kMinPooledBytes) return slice;
  const size_t held = CapacityFor(slice.owner->size());
  const size_t own = CapacityFor(slice.size);
  if (held < own + own / 4) return slice;
  std::shared_ptr<Buffer> copy = Allocate(slice.size);
  std::memcpy(copy->data(), slice.data, slice.size);
  const uint8_t* data = copy->data();
  return BufferSlice{std::move(copy), data, slice.size};
}

BufferPoolStats BufferPool::Stats() const {
  std::lock_guard<std::mutex> g(mu_);
  return stats_;
}

}  // namespace wombatkv
