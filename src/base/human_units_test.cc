#include "base/human_units.h"

#include <gtest/gtest.h>

namespace wombatkv {
namespace {

TEST(HumanBytes, BinaryUnitsWithOneDecimal) {
  EXPECT_EQ(HumanBytes(0), "0 B");
  EXPECT_EQ(HumanBytes(1023), "1023 B");
  EXPECT_EQ(HumanBytes(1024), "1.0 KiB");
  EXPECT_EQ(HumanBytes(1536), "1.5 KiB");
  EXPECT_EQ(HumanBytes(2ull << 20), "2.0 MiB");
  EXPECT_EQ(HumanBytes(3ull << 40), "3.0 TiB");
  EXPECT_EQ(HumanBytes(5ull << 50), "5120.0 TiB");
}

}  // namespace
}  // namespace wombatkv
