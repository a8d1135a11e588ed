#include "layout/block_codec.h"

#include <zstd.h>

#include <string>

#include "base/check.h"
#include "base/limits.h"

namespace wombatkv::layout {
namespace {

// Contexts kept per thread: creating one costs more than compressing a small block. Only for
// levels up to kKeptContextLevelMax, whose context stays small (1.3 MB at level 3; level 9 needs
// 13 MB for 2 MiB blocks, which 16 upload threads should not keep while idle).
constexpr int kKeptContextLevelMax = 3;

struct Contexts {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_DCtx* d = ZSTD_createDCtx();
  ~Contexts() {
    ZSTD_freeCCtx(c);
    ZSTD_freeDCtx(d);
  }
};

Contexts& ThreadContexts() {
  thread_local Contexts contexts;
  WMBT_CHECK(contexts.c != nullptr && contexts.d != nullptr);
  return contexts;
}

struct CCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

}  // namespace

BufferSlice CompressIfWorthIt(ByteView payload, int level) {
  WMBT_CHECK(level >= limits::kZstdLevelMin && level <= limits::kZstdLevelMax);
  const size_t limit = payload.size() - payload.size() / 16;
  if (limit == 0) return {};
  std::unique_ptr<ZSTD_CCtx, CCtxFree> own;
  ZSTD_CCtx* cctx = ThreadContexts().c;
  if (level > kKeptContextLevelMax) {
    own.reset(ZSTD_createCCtx());
    WMBT_CHECK(own != nullptr);
    cctx = own.get();
  }
  ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 0);  // the content hash checks the result
  // Into a buffer of the size it must beat: zstd stops with an error when the frame would not fit.
  auto out = Buffer::Allocate(limit);
  const size_t n = ZSTD_compress2(cctx, out->data(), limit, payload.data(), payload.size());
  if (ZSTD_isError(n) || n >= limit) return {};
  // Kept while the upload holds it (and the local L2's journal, by reference): copied to its size
  // when that frees at least half of the buffer.
  if (n < limit / 2) out = Buffer::CopyOf(out->view().first(n));
  const uint8_t* data = out->data();
  return BufferSlice{std::move(out), data, n};
}

Result<std::shared_ptr<Buffer>> Decompress(ByteView stored, uint64_t payload_len,
                                           std::string_view what) {
  auto bad = [&](const std::string& why) {
    return Status::Corruption(std::string(what) + ": " + why);
  };
  auto out = Buffer::Allocate(payload_len);
  const size_t n = ZSTD_decompressDCtx(ThreadContexts().d, out->data(), payload_len, stored.data(),
                                       stored.size());
  if (ZSTD_isError(n)) {
    return bad(std::string("zstd payload does not decode (") + ZSTD_getErrorName(n) + ")");
  }
  if (n != payload_len) {
    return bad("zstd payload decodes to " + std::to_string(n) + " bytes, header says " +
               std::to_string(payload_len));
  }
  return out;
}

}  // namespace wombatkv::layout
