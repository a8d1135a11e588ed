#include "cache/buffer_pool.h"

#include <utility>

namespace wombatkv {
namespace {
constexpr size_t kPageBytes = 4 << 10;
constexpr size_t kHugePageBytes = 2 << 20;

size_t CapacityFor(size_t size) {
  const size_t unit = size >= kHugePageBytes ? kHugePageBytes : kPageBytes;
  return (size + unit - 1) / unit * unit;
}
}  // namespace

std::shared_ptr<BufferPool> BufferPool::Create(uint64_t idle_bytes_max) {
  return std::shared_ptr<BufferPool>(new BufferPool(idle_bytes_max));
}

std::shared_ptr<Buffer> BufferPool::Allocate(size_t size) {
  if (size < kMinPooledBytes) return Buffer::Allocate(size);
  const size_t capacity = CapacityFor(size);
  std::shared_ptr<Buffer> memory;
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
    }
  }
  if (!memory) memory = Buffer::Allocate(capacity);
  uint8_t* data = memory->data();
  // The handed-out Buffer borrows `memory`'s bytes; its release hands `memory` back (P1: only
  // once nothing references the handed-out Buffer any more).
  return Buffer::Adopt(data, size, [pool = shared_from_this(), m = std::move(memory)]() mutable {
    pool->Release(std::move(m));
  });
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

BufferPoolStats BufferPool::Stats() const {
  std::lock_guard<std::mutex> g(mu_);
  return stats_;
}

}  // namespace wombatkv
