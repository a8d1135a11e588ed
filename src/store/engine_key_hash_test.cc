#include "store/engine_key_hash.h"

#include <gtest/gtest.h>

#include <set>

namespace wombatkv {
namespace {

// A thousand block keys that differ only in their last two bytes hash apart (the first 8 bytes,
// as FixedBytesHash takes them, gave them one hash).
TEST(EngineKeyHash, KeysSharingAPrefixHashApart) {
  std::set<size_t> hashes;
  for (int i = 0; i < 1000; ++i) {
    BlockKey k;
    k.bytes.fill(7);
    k.bytes[30] = static_cast<uint8_t>(i >> 8);
    k.bytes[31] = static_cast<uint8_t>(i);
    hashes.insert(EngineKeyHash{}(k));
  }
  EXPECT_EQ(hashes.size(), 1000u);
}

}  // namespace
}  // namespace wombatkv
