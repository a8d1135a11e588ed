#include <gtest/gtest.h>

#include "base/limits.h"
#include "daemon/service.h"

namespace wombatkv {
namespace {

TEST(ParseTokenGrants, TokensWithAndWithoutNamespaces) {
  auto g = ParseTokenGrants("root-tok; team-tok=tenant-a,tenant-b ;;");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(g->size(), 2u);
  EXPECT_EQ((*g)[0].token, "root-tok");
  EXPECT_TRUE((*g)[0].namespaces.empty()) << "no list: every namespace";
  EXPECT_EQ((*g)[1].token, "team-tok");
  EXPECT_EQ((*g)[1].namespaces, (std::vector<std::string>{"tenant-a", "tenant-b"}));
  EXPECT_TRUE(ParseTokenGrants("")->empty());
}

TEST(ParseTokenGrants, BadEntriesAreNamedByPositionNeverByToken) {
  const std::string long_token = "secret1" + std::string(limits::kAuthTokenBytesMax - 6, 'x');
  struct Case {
    const char* text;
    const char* needle;
  };
  for (const Case& c : {Case{"ok-tok;=tenant-a", "entry 2 has an empty token"},
                        Case{"sec ret", "entry 1: the token contains a space"},
                        Case{"secret1=", "entry 1 has '=' but no namespace"},
                        Case{"secret1=a/b", "entry 1: namespace"},
                        Case{"secret1;secret1=x", "entry 2 repeats the token"},
                        Case{long_token.c_str(), "entry 1 has a token of 4097 bytes"}}) {
    SCOPED_TRACE(c.text);
    auto g = ParseTokenGrants(c.text);
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().code(), Code::kInvalidArgument);
    EXPECT_NE(g.status().message().find(c.needle), std::string::npos) << g.status().message();
    EXPECT_EQ(g.status().message().find("secret1"), std::string::npos) << g.status().message();
    EXPECT_EQ(g.status().message().find("sec ret"), std::string::npos) << g.status().message();
  }
}

}  // namespace
}  // namespace wombatkv
