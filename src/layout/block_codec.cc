#include "layout/block_codec.h"

#include <zstd.h>

#include <string>

#include "base/check.h"
#include "base/limits.h"

namespace wombatkv::layout {
namespace {

// One context per thread: creating one costs more than compressing a small block.
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

}  // namespace

BufferSlice CompressIfWorthIt(ByteView payload, int level) {
  WMBT_CHECK(level >= limits::kZstdLevelMin && level <= limits::kZstdLevelMax);
  const size_t limit = payload.size() - payload.size() / 16;
  if (limit == 0) return {};
  // Into a buffer of the size it must beat: zstd stops with an error when the frame would not fit.
  // Kept whole (the slice is uploaded, then freed) rather than copied to its exact size.
  auto out = Buffer::Allocate(limit);
  ZSTD_CCtx* cctx = ThreadContexts().c;
  ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 0);  // the content hash checks the result
  const size_t n = ZSTD_compress2(cctx, out->data(), limit, payload.data(), payload.size());
  if (ZSTD_isError(n) || n >= limit) return {};
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
