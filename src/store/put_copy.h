// The first step of PutBlocks: every payload is copied into memory the store owns and hashed
// (BLAKE3-20), or, for a zero-copy put (BlockPut::owned), only hashed.
//
// The copy is hashed, not the caller's bytes, and in cache-sized steps right after each step is
// copied (CopyAndHashPayload): a caller changing its buffer during the put cannot make the name
// and the kept bytes differ, and the hash reads the bytes from cache instead of RAM. Copies go
// into recycled buffers (BufferPool), so a put does not fault in fresh pages once the cache has
// released some.
//
// With a helper executor, a large put (IsLargePut) of several blocks is shared between the calling thread and one
// helper thread: both take the next unclaimed block until none is left, so the caller never waits
// for a helper that has not started (a busy or late helper finds nothing left and returns at
// once), only for a block the helper is in the middle of. The helper touches the caller's
// payloads only for blocks it claimed, and PutBlocks returns only after those are done.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "cache/buffer_pool.h"
#include "wombatkv/env.h"
#include "wombatkv/store.h"
#include "wombatkv/types.h"

namespace wombatkv {

struct CopiedBlocks {
  std::vector<BufferSlice> payloads;  // one per block: the copy, or the handed-over slice
  std::vector<ContentHash> hashes;
  size_t helped = 0;  // blocks the helper thread did
};

// At least this much payload in one put: worth a helper's wake-up (with two blocks or more), and
// worth keeping the uploads off the CPUs while it copies (upload_gate.h).
inline constexpr uint64_t kLargePutBytes = 1 << 20;
bool IsLargePut(std::span<const BlockPut> blocks);

// Where the copies go: `shared` (StoreOptions::payload_allocator) when set and it has memory,
// else `pool`. `ns` must outlive the CopyAndHashBlocks call.
struct CopyTarget {
  std::shared_ptr<BufferPool> pool;
  PayloadAllocator* shared = nullptr;
  std::string_view ns;

  std::shared_ptr<Buffer> Allocate(size_t bytes) const;
};

// `helper` may be null (everything on the calling thread).
CopiedBlocks CopyAndHashBlocks(std::span<const BlockPut> blocks, const CopyTarget& target,
                               Executor* helper);

}  // namespace wombatkv
