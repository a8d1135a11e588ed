#include "cache/huge_chunk.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace wombatkv {
namespace {

// Owns the mapping (H2: unmapped with the last slot, which holds it alive).
class Chunk {
 public:
  static std::shared_ptr<Chunk> Map() {
    // Over-map by one chunk and trim, so that the chunk starts on a 2 MiB boundary: a huge page
    // can back it only then.
    const size_t span = 2 * kHugeChunkBytes;
    void* raw = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t base = (start + kHugeChunkBytes - 1) & ~uintptr_t{kHugeChunkBytes - 1};
    if (base > start) ::munmap(raw, base - start);
    if (const uintptr_t end = base + kHugeChunkBytes; end < start + span) {
      ::munmap(reinterpret_cast<void*>(end), start + span - end);
    }
    auto* p = reinterpret_cast<uint8_t*>(base);
    // Advice only: without transparent huge pages the chunk simply uses small pages.
    (void)::madvise(p, kHugeChunkBytes, MADV_HUGEPAGE);
    return std::shared_ptr<Chunk>(new Chunk(p));
  }
  ~Chunk() { ::munmap(base_, kHugeChunkBytes); }
  uint8_t* base() const { return base_; }

 private:
  explicit Chunk(uint8_t* base) : base_(base) {}
  uint8_t* const base_;
};

}  // namespace

size_t SystemPageBytes() {
  static const size_t bytes = [] {
    const long n = ::sysconf(_SC_PAGESIZE);
    return n > 0 ? static_cast<size_t>(n) : size_t{4096};
  }();
  return bytes;
}

size_t SlotsPerHugeChunk(size_t capacity, size_t page_bytes) {
  if (capacity == 0 || capacity > kHugeChunkBytes / 2) return 0;
  if (page_bytes == 0 || capacity % page_bytes != 0) return 0;  // H1
  const size_t slots = kHugeChunkBytes / capacity;
  const size_t left_over = kHugeChunkBytes - slots * capacity;
  return left_over * 8 <= kHugeChunkBytes ? slots : 0;
}

std::vector<std::shared_ptr<Buffer>> CarveHugeChunk(size_t capacity, size_t slots) {
  std::vector<std::shared_ptr<Buffer>> out;
  auto chunk = Chunk::Map();
  if (!chunk) return out;
  out.reserve(slots);
  for (size_t i = 0; i < slots; ++i) {
    uint8_t* p = chunk->base() + i * capacity;
    out.push_back(Buffer::Adopt(p, capacity, [chunk, p, capacity] {
      // H3. The callback's own reference keeps the chunk mapped while it runs; a sibling
      // released at the same moment may make this advice redundant, never unsafe.
      if (chunk.use_count() > 1) (void)::madvise(p, capacity, MADV_DONTNEED);
    }));
  }
  return out;
}

}  // namespace wombatkv
