// Every limit of the system, named with its unit last, in one place.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wombatkv::limits {

inline constexpr uint64_t kBlockBytesMax = 256ull << 20;       // one payload (SPEC §2)
inline constexpr uint64_t kSidecarBytesMax = 1ull << 30;       // one sidecar
inline constexpr size_t kNamespaceBytesMax = 64;
inline constexpr size_t kChainBlocksMax = 1u << 20;            // entries in one chain head
inline constexpr size_t kBatchBlocksMax = 1u << 16;            // blocks in one PutBlocks call
inline constexpr size_t kLookupKeysMax = 1u << 20;             // keys in one lookup/get
inline constexpr size_t kFingerprintExtrasMax = 256;           // free-form fingerprint fields
inline constexpr uint64_t kHeadObjectBytesMax = 256ull << 20;  // one encoded chain head
inline constexpr size_t kListPageKeysMax = 1000;               // as S3 ListObjectsV2
inline constexpr uint32_t kUploadRetriesMax = 8;            // attempts of one blob upload
// A blob upload of at least this many payload bytes asks L2 whether the blob is there before
// sending it; a smaller one is put if absent at once (store_write.cc, UploadBlob).
inline constexpr size_t kBlobBytesLookedForFirst = 64 << 10;
inline constexpr uint64_t kRetryBackoffMicros = 2000;        // first backoff; doubles per attempt
inline constexpr uint32_t kRetryBackoffDoublingsMax = 8;     // backoff stops growing after this
inline constexpr uint32_t kPublishAttemptsMax = 16;          // lost head races before Unavailable
inline constexpr size_t kPublishStripes = 64;                // per-chain publish locks
inline constexpr uint64_t kFillQueueBytesMin = 16ull << 20;  // disk cache fills waiting to run
inline constexpr uint64_t kFillQueueBytesMax = 256ull << 20;
// Bounds that keep a Hello far below the frame limit before authentication (tcp_server.h,
// invariant 4): a longer client name is cut; a longer token is refused where it is configured
// (WMBT_KV_AUTH_TOKEN, WMBT_KV_AUTH_TOKENS) and by the TCP channel.
inline constexpr size_t kClientNameBytesMax = 256;
inline constexpr size_t kAuthTokenBytesMax = 4096;
// zstd levels of WMBT_KV_BLOCK_COMPRESS (layout/block_codec.h). Above 9 a compressing thread
// needs 26-85 MB for 2 MiB and larger blocks (9: 13 MB), and on KV-like data level 3 already
// saved no more than level 1 (BENCHMARKS.md "Compression").
inline constexpr int kZstdLevelMin = 1;
inline constexpr int kZstdLevelMax = 9;

static_assert(kBlockBytesMax <= UINT32_MAX, "block lengths are stored as u32 in heads");
static_assert(kChainBlocksMax * 56 + 4096 <= kHeadObjectBytesMax,
              "a maximal chain head must fit the head object limit");
static_assert(kBatchBlocksMax <= kChainBlocksMax);

}  // namespace wombatkv::limits
