// zstd for block payloads (WMBT_KV_BLOCK_COMPRESS; docs/layout.md §2): the stored bytes of an
// envelope with codec 1. One zstd frame per payload, with no dictionary, so any reader decodes any
// writer's blob whatever level it used.
#pragma once

#include <cstdint>
#include <memory>

#include "wombatkv/buffer.h"
#include "wombatkv/status.h"

namespace wombatkv::layout {

// `payload` compressed at `level` (limits::kZstdLevelMin..kZstdLevelMax) when that saves at least
// 1/16 of it; an empty slice when it does not (KV data of high entropy mostly does not): store it
// raw.
BufferSlice CompressIfWorthIt(ByteView payload, int level);

// The `payload_len` bytes `stored` decompresses to, in a fresh buffer allocated only after
// `payload_len` was checked by the caller. Corruption (naming `what`) unless `stored` is zstd that
// decodes to exactly `payload_len` bytes.
Result<std::shared_ptr<Buffer>> Decompress(ByteView stored, uint64_t payload_len,
                                           std::string_view what);

}  // namespace wombatkv::layout
