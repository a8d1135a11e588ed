#include "daemon/loop_saves.h"

#include <gtest/gtest.h>

#include <vector>

#include "wire/codec.h"

namespace wombatkv {
namespace {

wire::Message SaveOf(size_t blocks, size_t bytes_each, std::vector<uint8_t>& memory) {
  memory.assign(blocks * bytes_each, 7);
  wire::Message m;
  m.op = static_cast<uint16_t>(wire::Op::kSaveChain);
  for (size_t i = 0; i < blocks; ++i) {
    m.payloads.push_back(BufferSlice{nullptr, memory.data() + i * bytes_each, bytes_each});
  }
  return m;
}

// A loop starts small saves only: bounded in bytes and in blocks (a save of thousands of one-byte
// blocks is small in bytes and long in per-block work, which would stall the loop's other
// connections), and no other op.
TEST(LoopSaves, OnlySavesSmallInBytesAndInBlocksRunOnTheLoop) {
  std::vector<uint8_t> memory;
  EXPECT_TRUE(SaveRunsOnLoop(SaveOf(1, 1024, memory)));
  EXPECT_TRUE(SaveRunsOnLoop(SaveOf(16, 4096, memory)));  // 64 KiB
  EXPECT_FALSE(SaveRunsOnLoop(SaveOf(17, 4096, memory)));
  EXPECT_TRUE(SaveRunsOnLoop(SaveOf(kSaveOnLoopBlocksMax, 1, memory)));
  EXPECT_FALSE(SaveRunsOnLoop(SaveOf(kSaveOnLoopBlocksMax + 1, 1, memory)));
  EXPECT_FALSE(SaveRunsOnLoop(SaveOf(65536, 1, memory)));
  wire::Message put = SaveOf(1, 16, memory);
  put.op = static_cast<uint16_t>(wire::Op::kPutBlocks);
  EXPECT_FALSE(SaveRunsOnLoop(put));
}

}  // namespace
}  // namespace wombatkv
