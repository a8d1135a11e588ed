#include "wombatkv/buffer.h"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace wombatkv {
namespace {
constexpr size_t kHugePageBytes = 2u << 20;
}

std::shared_ptr<Buffer> Buffer::Allocate(size_t size) {
  void* p;
  if (size >= kHugePageBytes) {
    const size_t rounded = (size + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
    p = std::aligned_alloc(kHugePageBytes, rounded);
    // Advice only: without transparent huge pages the buffer simply uses small pages.
    if (p != nullptr) (void)madvise(p, rounded, MADV_HUGEPAGE);
  } else {
    p = std::malloc(size ? size : 1);
  }
  if (p == nullptr) throw std::bad_alloc();  // as operator new: out of memory is fatal here
  std::unique_ptr<Buffer> b;
  try {
    b.reset(new Buffer(static_cast<uint8_t*>(p), size));
  } catch (...) {
    std::free(p);  // not yet any Buffer's to free
    throw;
  }
  // If the control block cannot be allocated, `b` keeps the Buffer and frees it (and `p`).
  return std::shared_ptr<Buffer>(std::move(b));
}

std::shared_ptr<Buffer> Buffer::Adopt(uint8_t* data, size_t size, std::function<void()> release) {
  // The callback is in place before the shared_ptr exists: if its control block cannot be
  // allocated, the Buffer it deletes releases `data` as asked instead of free()ing it. An empty
  // callback still must not free() memory the Buffer never owned.
  auto* b = new Buffer(data, size);
  b->release_ = release ? std::move(release) : [] {};
  return std::shared_ptr<Buffer>(b);
}

Buffer::~Buffer() {
  if (release_) {
    release_();
  } else {
    std::free(data_);
  }
}

}  // namespace wombatkv
