#include "daemon/loop_saves.h"

#include "wire/codec.h"

namespace wombatkv {

bool SaveRunsOnLoop(const wire::Message& request) {
  if (static_cast<wire::Op>(request.op) != wire::Op::kSaveChain) return false;
  if (request.payloads.size() > kSaveOnLoopBlocksMax) return false;
  uint64_t bytes = 0;
  for (const BufferSlice& p : request.payloads) bytes += p.size;
  return bytes <= kSaveOnLoopBytesMax;
}

}  // namespace wombatkv
