// Which saves a TCP event loop starts itself (TcpServerOptions::async_on_loop; docs/daemon.md,
// "Saves on the loop"): small ones, whose hashing, copies and index work take tens of µs and
// whose blobs are packed into the journal (FsJournalOptions::packed_object_bytes_max), so nothing
// in the call waits for the disk. The loop's budget counts requests, not their cost, so both the
// bytes and the number of blocks are bounded: a save of thousands of one-byte blocks would hold
// every other connection of the loop for its per-block work.
#pragma once

#include <cstdint>

#include "wire/message.h"

namespace wombatkv {

inline constexpr uint64_t kSaveOnLoopBytesMax = 64 << 10;
inline constexpr size_t kSaveOnLoopBlocksMax = 64;

// True for a SaveChain of at most kSaveOnLoopBlocksMax blocks and kSaveOnLoopBytesMax payload
// bytes.
bool SaveRunsOnLoop(const wire::Message& request);

}  // namespace wombatkv
