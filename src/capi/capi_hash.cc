// Version and hashing entry points: thin wrappers over src/base.
#include "base/blake3_hash.h"
#include "base/crc32c.h"
#include "base/hex.h"
#include "capi/capi_internal.h"

using wombatkv::Status;
using wombatkv::capi::Fail;
using wombatkv::capi::Guarded;

static_assert(WMBT_KV_BATCH_BLOCKS_MAX == wombatkv::limits::kBatchBlocksMax);
static_assert(WMBT_KV_LOOKUP_KEYS_MAX == wombatkv::limits::kLookupKeysMax);
static_assert(WMBT_KV_BLOCK_BYTES_MAX == wombatkv::limits::kBlockBytesMax);
static_assert(WMBT_KV_SIDECAR_BYTES_MAX == wombatkv::limits::kSidecarBytesMax);
static_assert(WMBT_KV_ABI_VERSION == 0x00010005u);

extern "C" {

// Cannot fail: leaves the last error as it is (the header's conventions).
uint32_t wmbt_kv_abi_version(void) { return WMBT_KV_ABI_VERSION; }

int32_t wmbt_kv_blake3_64hex(const uint8_t* in, size_t in_len, char* out) {
  return Guarded("wmbt_kv_blake3_64hex", int32_t{-1}, nullptr, 0, [&]() -> int32_t {
    if (out == nullptr) return Fail(Status::InvalidArgument("out is NULL"));
    if (in == nullptr && in_len > 0)
      return Fail(Status::InvalidArgument("in is NULL with in_len " + std::to_string(in_len)));
    auto digest = wombatkv::Blake3({in, in_len});
    wombatkv::HexEncodeTo(digest, out);
    out[2 * digest.size()] = '\0';
    return 0;
  });
}

uint32_t wmbt_kv_crc32c_append(uint32_t crc, const uint8_t* in, size_t in_len) {
  return Guarded("wmbt_kv_crc32c_append", crc, nullptr, 0, [&]() -> uint32_t {
    if (in == nullptr && in_len > 0) {
      (void)Fail(Status::InvalidArgument("in is NULL with in_len " + std::to_string(in_len)));
      return crc;
    }
    return wombatkv::Crc32cAppend(crc, in, in_len);
  });
}

uint32_t wmbt_kv_crc32c(const uint8_t* in, size_t in_len) {
  return Guarded("wmbt_kv_crc32c", uint32_t{0}, nullptr, 0, [&]() -> uint32_t {
    if (in == nullptr && in_len > 0) {
      (void)Fail(Status::InvalidArgument("in is NULL with in_len " + std::to_string(in_len)));
      return 0;
    }
    return wombatkv::Crc32c(in, in_len);
  });
}

}  // extern "C"
