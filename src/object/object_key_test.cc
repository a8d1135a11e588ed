// The key rules and the List continuation rules shared by every ObjectStore.
#include "object/object_key.h"

#include <gtest/gtest.h>

namespace wombatkv {
namespace {

TEST(ObjectKey, AcceptsSlashSeparatedSegmentsOfTheKeyAlphabet) {
  for (const char* key : {"a", "blob/0123abcd", "A-Z_a.z/0-9", "..a/b..", ".hidden", "x/.y/z"}) {
    EXPECT_TRUE(ValidateObjectKey(key).ok()) << key;
  }
  EXPECT_TRUE(ValidateObjectKey(std::string(1024, 'k')).ok());
}

TEST(ObjectKey, RejectsAnythingThatCouldEscapeOrAliasAPath) {
  for (const std::string& key : std::vector<std::string>{"", "/a", "a/", "a//b", ".", "..", "./a", "a/..", "a/./b", "a\\b",
                          "a:b", "a~", "a b", std::string("a\0b", 3), std::string(1025, 'k')}) {
    Status s = ValidateObjectKey(key);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << key;
  }
}

TEST(ObjectKey, MessagesShowUntrustedBytesEscaped) {
  Status s = ValidateObjectKey(std::string("a\0\n", 3));
  EXPECT_NE(s.message().find("a\\x00\\x0a"), std::string::npos) << s.message();
}

TEST(ObjectKey, AListPrefixMayEndInAPartialSegment) {
  for (const char* p : {"", "a", "a/", "a/b", "a/.", "a/..", "blob/"}) {
    EXPECT_TRUE(ValidateListPrefix(p).ok()) << p;
  }
  for (const char* p : {"/", "/a", "a//", "../", "./", "a/../b", "a~", "a\\"}) {
    EXPECT_EQ(ValidateListPrefix(p).code(), Code::kInvalidArgument) << p;
  }
}

TEST(ObjectKey, ListArgumentsClampThePageSizeToOneThousand) {
  EXPECT_EQ(*CheckListArgs("", "", 5000), 1000u);
  EXPECT_EQ(*CheckListArgs("", "/", 7), 7u);
  EXPECT_EQ(CheckListArgs("", "", 0).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(CheckListArgs("", "//", 1).status().code(), Code::kInvalidArgument);
}

TEST(ObjectKey, ATokenSkipsEverythingUpToItAndInsideACommonPrefixToken) {
  EXPECT_FALSE(SkippedByToken("a", ""));
  EXPECT_TRUE(SkippedByToken("a", "a"));
  EXPECT_TRUE(SkippedByToken("a", "b"));
  EXPECT_FALSE(SkippedByToken("b", "a"));
  EXPECT_TRUE(SkippedByToken("a/x", "a/"));  // inside a listed common prefix
  EXPECT_FALSE(SkippedByToken("a0", "a/"));
  EXPECT_FALSE(SkippedByToken("a/y", "a/x"));
}

TEST(ObjectKey, AWholeDirectoryIsSkippedOnlyIfEveryKeyInItIs) {
  EXPECT_TRUE(SubtreeSkippedByToken("a/", "b"));
  EXPECT_TRUE(SubtreeSkippedByToken("a/", "a/"));
  EXPECT_TRUE(SubtreeSkippedByToken("a/b/", "a/"));
  EXPECT_FALSE(SubtreeSkippedByToken("a/", "a/x"));  // keys after a/x remain
  EXPECT_FALSE(SubtreeSkippedByToken("b/", "a"));
  EXPECT_FALSE(SubtreeSkippedByToken("a/", "a"));
  EXPECT_FALSE(SubtreeSkippedByToken("a/", ""));
}

TEST(ListPageBuilder, SetsTheTokenOnlyWhenAnotherEntryExists) {
  ListPageBuilder exact(2);
  EXPECT_TRUE(exact.AddObject({"a", 0, "e"}));
  EXPECT_TRUE(exact.AddPrefix("b/"));
  EXPECT_TRUE(std::move(exact).Finish().next_token.empty());

  ListPageBuilder more(2);
  EXPECT_TRUE(more.AddObject({"a", 0, "e"}));
  EXPECT_TRUE(more.AddPrefix("b/"));
  EXPECT_FALSE(more.AddObject({"c", 0, "e"}));
  ListPage page = std::move(more).Finish();
  EXPECT_EQ(page.next_token, "b/");
  EXPECT_EQ(page.objects.size(), 1u);
  EXPECT_EQ(page.common_prefixes.size(), 1u);
}

}  // namespace
}  // namespace wombatkv
