// The first step of PutBlocks: every payload is copied into memory the store owns and hashed
// (BLAKE3-20), or, for a zero-copy put (BlockPut::owned), only hashed.
//
// The copy is hashed, not the caller's bytes, and in cache-sized steps right after each step is
// copied (CopyAndHashPayload): a caller changing its buffer during the put cannot make the name
// and the kept bytes differ, and the hash reads the bytes from cache instead of RAM. Copies go
// into recycled buffers (BufferPool), so a put does not fault in fresh pages once the cache has
// released some.
//
// Everything runs on the calling thread. Sharing a multi-block put with a helper thread halved the
// caller's CPU per GB but gained no wall time on a 2-core machine whose other core runs the
// uploads (BENCHMARKS.md, store section), so it was removed.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "cache/buffer_pool.h"
#include "wombatkv/store.h"
#include "wombatkv/types.h"

namespace wombatkv {

struct CopiedBlocks {
  std::vector<BufferSlice> payloads;  // one per block: the copy, or the handed-over slice
  std::vector<ContentHash> hashes;
};

// Copies come from `pool`.
CopiedBlocks CopyAndHashBlocks(std::span<const BlockPut> blocks,
                               const std::shared_ptr<BufferPool>& pool);

}  // namespace wombatkv
