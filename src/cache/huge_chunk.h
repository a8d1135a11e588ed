// Huge-page chunks carved into payload buffers. A copying put writes every payload into memory
// the store allocates, and memory the process has not touched yet is slow to touch the first
// time: each 4 KiB page is a fault, which a VM pays dearly for (on the AMD EPYC VM of session 29
// a fresh 4 KiB page cost ~13 µs: 0.31 GB/s, against 12 GB/s for huge pages the guest had used
// before; BENCHMARKS.md). Buffers of 2 MiB and more are huge-page backed already
// (Buffer::Allocate); CarveHugeChunk gives the smaller payload sizes engines use (64 KiB to
// 1 MiB) the same: one 2 MiB chunk, advised for transparent huge pages, cut into equal slots.
//
//   H1. Every slot is a Buffer of exactly `capacity` bytes; slots of one chunk never overlap, and
//       each starts and ends on a page boundary (capacity is a multiple of the system's page
//       size), so H3's advice never reaches a sibling: madvise rounds a length up to whole pages.
//   H2. The chunk is unmapped when its last slot's Buffer is destroyed, not before.
//   H3. A slot destroyed while a sibling lives gives its pages back (MADV_DONTNEED), so memory
//       a BufferPool drops is returned even though the chunk stays mapped.
//
// Thread-safety: slots may be destroyed on any thread, concurrently.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "wombatkv/buffer.h"

namespace wombatkv {

inline constexpr size_t kHugeChunkBytes = 2 << 20;

// The system's page size (sysconf), read once.
size_t SystemPageBytes();

// How many slots of `capacity` bytes one chunk is cut into: 0 when carving does not pay (fewer
// than 2 slots, or more than an eighth of the chunk left over) or is not safe (H1: `capacity` not
// a multiple of `page_bytes`, e.g. a 68 KiB capacity where pages are 16 KiB, as on some arm64).
size_t SlotsPerHugeChunk(size_t capacity, size_t page_bytes = SystemPageBytes());

// Maps a 2 MiB-aligned chunk advised for huge pages and returns `slots` Buffers of `capacity`
// bytes over it, the first at the chunk's start. Empty if the mapping fails.
// REQUIRES: slots >= 1, slots * capacity <= kHugeChunkBytes, capacity a multiple of the page size.
std::vector<std::shared_ptr<Buffer>> CarveHugeChunk(size_t capacity, size_t slots);

}  // namespace wombatkv
