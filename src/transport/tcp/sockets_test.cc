#include "transport/tcp/sockets.h"

#include <gtest/gtest.h>

namespace wombatkv::tcp {
namespace {

TEST(HostPort, ParsesIpv4Ipv6AndNames) {
  auto a = ParseHostPort("127.0.0.1:7070", false);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 7070);
  auto b = ParseHostPort("[::1]:80", false);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->ToString(), "[::1]:80");
  EXPECT_TRUE(ParseHostPort("localhost:1", false).ok());
  EXPECT_TRUE(ParseHostPort("0.0.0.0:0", true).ok());
}

TEST(HostPort, RefusesBadFormsNamingTheText) {
  for (const char* bad : {"", "7070", ":7070", "host:", "host:65536", "host:x", "::1:7070",
                          "[::1:7070", "a b:1", "host:0"}) {
    auto r = ParseHostPort(bad, false);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("HOST:PORT"), std::string::npos) << bad;
  }
}

TEST(HostPort, LoopbackIsOnlyTheLoopbackNetworks) {
  auto check = [](const char* text) {
    auto hp = ParseHostPort(text, true);
    EXPECT_TRUE(hp.ok()) << text;
    auto r = Resolve(*hp, true);
    EXPECT_TRUE(r.ok()) << text << ": " << r.status().ToString();
    return IsLoopback(r->front());
  };
  EXPECT_TRUE(check("127.0.0.1:0"));
  EXPECT_TRUE(check("127.8.9.10:0"));
  EXPECT_TRUE(check("[::1]:0"));
  EXPECT_TRUE(check("[::ffff:127.0.0.1]:0"));
  EXPECT_FALSE(check("0.0.0.0:0")) << "a wildcard listener is reachable from the network";
  EXPECT_FALSE(check("[::]:0"));
  EXPECT_FALSE(check("10.1.2.3:0"));
}

}  // namespace
}  // namespace wombatkv::tcp
