#include "daemon/http_endpoint.h"

#include <gtest/gtest.h>

#include <string>

namespace wombatkv {
namespace {

HttpEndpointCallbacks Healthy() {
  HttpEndpointCallbacks c;
  c.not_ready_reason = [] { return std::string(); };
  c.unhealthy_reason = [] { return std::string(); };
  c.metrics = [] { return std::string(); };
  return c;
}

// Two daemons must never share a health or metrics port: a probe could reach either one.
TEST(HttpEndpoint, APortAnotherEndpointServesIsRefused) {
  auto first = HttpEndpoint::Start("127.0.0.1:0", Healthy());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const std::string url = (*first)->url();  // http://127.0.0.1:PORT
  const std::string address = url.substr(url.find("//") + 2);
  auto second = HttpEndpoint::Start(address, Healthy());
  ASSERT_FALSE(second.ok()) << "a second endpoint bound " << address;
  EXPECT_EQ(second.status().code(), Code::kUnavailable);
  EXPECT_NE(second.status().message().find(address), std::string::npos)
      << second.status().ToString();
}

}  // namespace
}  // namespace wombatkv
