// Whether a blob already in L2 may stand for a put of the same payload, judged without reading its
// payload: the check a writer makes before it skips an upload, and the quick audit's.
#pragma once

#include <cstdint>
#include <string>

#include "wombatkv/object_store.h"
#include "wombatkv/status.h"
#include "wombatkv/types.h"

namespace wombatkv::layout {

// What an object's size alone says of a blob of a `payload_len`-byte payload: the raw envelope's
// size; a size only a compressed blob can have (over the header, under the raw size); or neither.
enum class BlobSize { kRaw, kMaybeCompressed, kWrong };
BlobSize JudgeBlobSize(uint64_t size, uint64_t payload_len);

// True when the object `key` of `size` bytes (from a Head or a listing) is a blob envelope of a
// `payload_len`-byte payload named `hash`: raw, its size says so; any smaller size is read as a
// compressed blob (WMBT_KV_BLOCK_COMPRESS, of any writer and level), whose header (one ranged read
// of 48 bytes) must then name this payload and account for `size`. False for any other size or
// header. The content hash is checked by every read, so a payload damaged under a sound header is
// still never returned (G9). NotFound (deleted since) and read errors are returned as such.
Result<bool> BlobObjectFits(ObjectStore& l2, const std::string& key, uint64_t size,
                            uint64_t payload_len, const ContentHash& hash);

}  // namespace wombatkv::layout
