#include "base/store_args.h"

#include <string>

#include "base/limits.h"

namespace wombatkv {

Status CheckPutBlocksArgs(std::string_view ns, std::span<const BlockPut> blocks) {
  WMBT_RETURN_IF_ERROR(ValidateNamespace(ns));
  if (blocks.empty()) return Status::InvalidArgument("PutBlocks: empty batch");
  if (blocks.size() > limits::kBatchBlocksMax) {
    return Status::InvalidArgument("PutBlocks: " + std::to_string(blocks.size()) +
                                   " blocks in one batch (max " +
                                   std::to_string(limits::kBatchBlocksMax) + ")");
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    const BlockPut& b = blocks[i];
    if (b.bytes().size() > limits::kBlockBytesMax) {
      return Status::InvalidArgument("block " + std::to_string(i) + " is " +
                                     std::to_string(b.bytes().size()) + " bytes (max " +
                                     std::to_string(limits::kBlockBytesMax) + ")");
    }
    if (b.key.IsZero()) {
      return Status::InvalidArgument("block " + std::to_string(i) +
                                     ": the all-zero key is reserved (it is a root's parent); "
                                     "use another key");
    }
    if (b.key == b.parent) {
      return Status::InvalidArgument("block " + std::to_string(i) + " is its own parent");
    }
  }
  return Status::Ok();
}

Status CheckKeysArgs(std::string_view what, std::string_view ns, size_t keys) {
  WMBT_RETURN_IF_ERROR(ValidateNamespace(ns));
  if (keys <= limits::kLookupKeysMax) return Status::Ok();
  return Status::InvalidArgument(std::string(what) + " of " + std::to_string(keys) + " keys (max " +
                                 std::to_string(limits::kLookupKeysMax) + ")");
}

Status CheckPutSidecarArgs(std::string_view ns, size_t bytes) {
  WMBT_RETURN_IF_ERROR(ValidateNamespace(ns));
  if (bytes <= limits::kSidecarBytesMax) return Status::Ok();
  return Status::InvalidArgument("sidecar of " + std::to_string(bytes) +
                                 " bytes is over the limit of " +
                                 std::to_string(limits::kSidecarBytesMax));
}

}  // namespace wombatkv
