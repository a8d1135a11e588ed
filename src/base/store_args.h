// The argument checks of the Store calls that every implementation makes before it does anything:
// StoreImpl (embedded, and behind the daemon) and RemoteStore (the client, which checks before it
// ships a batch over a transport). One function per call, so both refuse the same arguments with
// the same words.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "wombatkv/status.h"
#include "wombatkv/store.h"

namespace wombatkv {

// PutBlocks: a valid namespace; 1..limits::kBatchBlocksMax blocks, each at most
// limits::kBlockBytesMax bytes, with a non-zero key that is not its own parent.
Status CheckPutBlocksArgs(std::string_view ns, std::span<const BlockPut> blocks);

// LookupPrefix / GetBlocks: a valid namespace and at most limits::kLookupKeysMax keys. `what`
// ("lookup", "get") names the call in the error.
Status CheckKeysArgs(std::string_view what, std::string_view ns, size_t keys);

// PutSidecar: a valid namespace and at most limits::kSidecarBytesMax bytes.
Status CheckPutSidecarArgs(std::string_view ns, size_t bytes);

}  // namespace wombatkv
