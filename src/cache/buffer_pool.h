// BufferPool: recycles payload buffers, so that copying a payload writes into memory that is
// already faulted in instead of fresh pages. On the Firecracker VM of BENCHMARKS.md a copy into
// fresh 4 KiB pages ran at 0.39–0.53× memcpy, and the payload cache keeps each put's buffer, so
// every copying put used to fault in all of its pages.
//
// A buffer handed out by Allocate returns to the pool when its last reference goes: after the
// payload cache has evicted it AND every borrower and upload has dropped it. So:
//   P1. Allocate never hands out memory that is still referenced (pinned, borrowed, uploading):
//       a buffer is idle only once its Buffer has been destroyed.
//   P2. The idle memory held is at most `idle_bytes_max`; a buffer released beyond that is freed
//       (a huge-chunk slot gives its pages back: cache/huge_chunk.h H3).
//   P3. A recycled buffer holds a previous payload's bytes (of this process, possibly of another
//       namespace): Allocate is for callers that overwrite every byte before anyone reads it
//       (the copying put does; so do the store's local L2 and disk-cache reads, which cut a
//       buffer to what they read: FileSystem::ReadFileInto). Never hand one to a caller to fill
//       (wmbt_kv_payload_alloc).
//
// Buffers are grouped by capacity (the size rounded up to 4 KiB, or to 2 MiB from 2 MiB on, as
// Buffer::Allocate does); a request reuses only an idle buffer of its own capacity, so engines
// with fixed block sizes recycle everything. Below kMinPooledBytes, Allocate is plain
// Buffer::Allocate (malloc serves small sizes from memory it already has).
//
// With no idle buffer of its capacity, Allocate cuts a huge-page chunk into slots of that
// capacity when they divide it well (cache/huge_chunk.h: 64 KiB to 1 MiB), hands out the first
// and keeps the rest idle — only if the idle bound (P2) has room for them all; otherwise it
// allocates one buffer as before. So a cold store's copies fault once per 2 MiB, not per 4 KiB.
//
// Thread-safety: all methods may be called concurrently; a buffer may be released on any thread.
// Buffers may outlive the BufferPool object's owner: each holds the pool alive.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "wombatkv/buffer.h"

namespace wombatkv {

struct BufferPoolStats {
  uint64_t idle_bytes = 0;  // capacity of idle buffers held for reuse
  uint64_t reused = 0;      // Allocate calls served from an idle buffer
  uint64_t fresh = 0;       // Allocate calls (of pooled sizes) that allocated new memory
  uint64_t chunks = 0;      // huge-page chunks carved (each counted in `fresh` once)
  uint64_t dropped = 0;     // buffers freed on release because the pool was full
};

class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  static constexpr size_t kMinPooledBytes = 64 << 10;

  static std::shared_ptr<BufferPool> Create(uint64_t idle_bytes_max);

  // `size` bytes, uninitialised (see P3).
  std::shared_ptr<Buffer> Allocate(size_t size);

  // `slice` in memory of its own (from Allocate) when the buffer it points into holds a quarter
  // or more above what the slice alone would (a payload read with its envelope's header: a 2 MiB
  // block in a buffer of 2 MiB + 48 bytes takes 4 MiB of whole 2 MiB pages), else `slice`. So
  // what a cache keeps is close to the payload bytes it counts.
  BufferSlice Compact(BufferSlice slice);

  BufferPoolStats Stats() const;

 private:
  explicit BufferPool(uint64_t idle_bytes_max) : idle_bytes_max_(idle_bytes_max) {}
  void Release(std::shared_ptr<Buffer> memory);
  // Carves a chunk into `slots` slots of `capacity` (cache/huge_chunk.h), keeps all but the first
  // idle and returns the first; null if the mapping failed. REQUIRES: the room of `slots - 1`
  // slots was added to stats_.idle_bytes.
  std::shared_ptr<Buffer> TakeCarved(size_t capacity, size_t slots);

  const uint64_t idle_bytes_max_;
  mutable std::mutex mu_;
  // capacity -> idle buffers of that capacity, each the sole owner of its memory.
  std::unordered_map<size_t, std::vector<std::shared_ptr<Buffer>>> idle_;  // GUARDED_BY(mu_)
  BufferPoolStats stats_;                                                  // GUARDED_BY(mu_)
};

}  // namespace wombatkv
