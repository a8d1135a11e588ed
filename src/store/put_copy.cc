#include "store/put_copy.h"

namespace wombatkv {

CopiedBlocks CopyAndHashBlocks(std::span<const BlockPut> blocks,
                               const std::shared_ptr<BufferPool>& pool) {
  CopiedBlocks out;
  out.payloads.reserve(blocks.size());
  out.hashes.reserve(blocks.size());
  for (const BlockPut& b : blocks) {
    if (b.owned.owner) {
      out.payloads.push_back(b.owned);
      out.hashes.push_back(HashPayload(b.owned.view()));
    } else {
      auto buf = pool->Allocate(b.payload.size());
      out.hashes.push_back(CopyAndHashPayload(b.payload, buf->data()));
      out.payloads.push_back(BufferSlice{buf, buf->data(), buf->size()});
    }
  }
  return out;
}

}  // namespace wombatkv
