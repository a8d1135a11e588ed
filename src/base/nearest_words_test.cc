#include "base/nearest_words.h"

#include <gtest/gtest.h>

#include <array>
#include <string_view>

namespace wombatkv {
namespace {

TEST(EditDistance, CountsInsertionsDeletionsAndReplacements) {
  EXPECT_EQ(EditDistance("publish", "publish", 3), 0u);
  EXPECT_EQ(EditDistance("pubish", "publish", 3), 1u);    // one deleted
  EXPECT_EQ(EditDistance("publissh", "publish", 3), 1u);  // one inserted
  EXPECT_EQ(EditDistance("pablish", "publish", 3), 1u);   // one replaced
  EXPECT_EQ(EditDistance("kitten", "sitting", 3), 3u);
  EXPECT_EQ(EditDistance("", "abc", 3), 3u);
}

TEST(EditDistance, StopsAtOneOverItsBound) {
  EXPECT_EQ(EditDistance("kitten", "sitting", 2), 3u);
  EXPECT_EQ(EditDistance("a", "abcdefgh", 2), 3u);  // the lengths alone are too far apart
  EXPECT_EQ(EditDistance("abcdefgh", "hgfedcba", 1), 2u);
}

TEST(NearestWord, IsTheClosestWithinTheBoundOrNone) {
  constexpr std::array<std::string_view, 4> kCommands = {"put", "publish", "lookup", "ls"};
  EXPECT_EQ(NearestWord("pubish", kCommands, 2), "publish");
  EXPECT_EQ(NearestWord("lokup", kCommands, 2), "lookup");
  EXPECT_EQ(NearestWord("pit", kCommands, 2), "put");
  EXPECT_EQ(NearestWord("frobnicate", kCommands, 2), std::nullopt);
  EXPECT_EQ(NearestWord("", std::span<const std::string_view>{}, 2), std::nullopt);
}

}  // namespace
}  // namespace wombatkv
