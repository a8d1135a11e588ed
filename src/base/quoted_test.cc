#include "base/quoted.h"

#include <gtest/gtest.h>

#include <string>

namespace wombatkv {
namespace {

TEST(Quoted, KeepsPrintableAsciiAndEscapesTheRest) {
  EXPECT_EQ(Quoted("tenant-a.v1"), "\"tenant-a.v1\"");
  EXPECT_EQ(Quoted(""), "\"\"");
  // A newline would start a forged line in a log; a quote would end the quoted name early.
  EXPECT_EQ(Quoted("x\"\n[error] FORGED"), "\"x\\x22\\x0a[error] FORGED\"");
  EXPECT_EQ(Quoted(std::string("\0\xff\\", 3)), "\"\\x00\\xff\\x5c\"");
}

TEST(Quoted, CutsLongNamesAt80Characters) {
  const std::string shown = Quoted(std::string(200, 'n'));
  EXPECT_EQ(shown, "\"" + std::string(80, 'n') + "...\"");
}

}  // namespace
}  // namespace wombatkv
