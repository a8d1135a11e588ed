#include "base/store_args.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/limits.h"

namespace wombatkv {
namespace {

BlockKey Key(uint8_t b) {
  BlockKey k;
  k.bytes[0] = b;
  return k;
}

std::string Message(const Status& st) { return st.ok() ? "OK" : st.message(); }

TEST(CheckPutBlocksArgs, AcceptsAChainAndNamesTheFirstBadBlock) {
  const uint8_t byte = 1;
  std::vector<BlockPut> blocks = {{Key(1), BlockKey{}, ByteView(&byte, 1)},
                                  {Key(2), Key(1), ByteView(&byte, 1)}};
  EXPECT_TRUE(CheckPutBlocksArgs("ns", blocks).ok());
  EXPECT_EQ(Message(CheckPutBlocksArgs("ns", {})), "PutBlocks: empty batch");
  EXPECT_EQ(CheckPutBlocksArgs("../x", blocks).code(), Code::kInvalidArgument);
  blocks[1].parent = Key(2);
  EXPECT_EQ(Message(CheckPutBlocksArgs("ns", blocks)), "block 1 is its own parent");
  blocks[1].key = BlockKey{};
  EXPECT_EQ(Message(CheckPutBlocksArgs("ns", blocks)),
            "block 1: the all-zero key is reserved (it is a root's parent); use another key");
  std::vector<BlockPut> many(limits::kBatchBlocksMax + 1, blocks[0]);
  EXPECT_NE(Message(CheckPutBlocksArgs("ns", many)).find("blocks in one batch (max"),
            std::string::npos);
}

TEST(CheckKeysArgs, BoundsTheKeyCount) {
  EXPECT_TRUE(CheckKeysArgs("get", "ns", limits::kLookupKeysMax).ok());
  EXPECT_EQ(Message(CheckKeysArgs("get", "ns", limits::kLookupKeysMax + 1)),
            "get of " + std::to_string(limits::kLookupKeysMax + 1) + " keys (max " +
                std::to_string(limits::kLookupKeysMax) + ")");
  EXPECT_EQ(CheckKeysArgs("lookup", "", 1).code(), Code::kInvalidArgument);
}

TEST(CheckPutSidecarArgs, BoundsTheSize) {
  EXPECT_TRUE(CheckPutSidecarArgs("ns", limits::kSidecarBytesMax).ok());
  EXPECT_NE(Message(CheckPutSidecarArgs("ns", limits::kSidecarBytesMax + 1))
                .find("is over the limit of"),
            std::string::npos);
}

}  // namespace
}  // namespace wombatkv
