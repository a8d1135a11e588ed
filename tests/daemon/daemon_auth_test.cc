// Auth (SPEC §10) on a real wombatkvd: a listener that is not loopback requires a token; a token
// may be limited to namespaces; the daemon refuses to expose an unauthenticated listener.
#include <gtest/gtest.h>
#include <signal.h>

#include "tests/daemon/daemon_test_util.h"
#include "wire/codec.h"

namespace wombatkv::testing {
namespace {

constexpr const char* kTokens = "tok-a-secret=ns-a;tok-all-secret";

class DaemonAuth : public ::testing::Test {
 protected:
  void SetUp() override {
    // 0.0.0.0: reachable from the network, so every session must authenticate. The test
    // reaches it through 127.0.0.1, which the wildcard listener also serves.
    daemon_ = StartDaemon(dir_, {}, {{"WMBT_KV_AUTH_TOKENS", kTokens}}, "0.0.0.0:0");
    ASSERT_TRUE(daemon_->running()) << daemon_->output() << daemon_->stderr_text();
    const std::string bound = daemon_->tcp().at(0);
    addr_ = "127.0.0.1:" + bound.substr(bound.rfind(':') + 1);
    EXPECT_NE(daemon_->output().find("auth token required"), std::string::npos);
  }
  void TearDown() override {
    if (daemon_ && daemon_->running()) {
      EXPECT_EQ(daemon_->Stop(SIGTERM), 0);
    }
  }

  TempDir dir_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::string addr_;
};

TEST_F(DaemonAuth, NoTokenOrAWrongTokenIsRefused) {
  auto none = OpenRemote(addr_);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), Code::kPermissionDenied);
  EXPECT_NE(none.status().message().find("WMBT_KV_AUTH_TOKEN"), std::string::npos)
      << none.status().ToString();
  auto wrong = OpenRemote(addr_, "tok-a-secreT");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), Code::kPermissionDenied);
  EXPECT_EQ(wrong.status().message().find("tok-a-secreT"), std::string::npos)
      << "a refused token is never echoed";
  ExpectServes(addr_, "tok-all-secret");
}

TEST_F(DaemonAuth, RequestsBeforeAHelloAreRefused) {
  RawClient raw(addr_);
  wire::LookupPrefixRequest lookup;
  lookup.ns = "ns-a";
  lookup.keys = {Key(1, 1)};
  Status st = raw.Ask(lookup.Encode(), 5);
  EXPECT_EQ(st.code(), Code::kPermissionDenied) << st.ToString();
}

TEST_F(DaemonAuth, ATokenLimitedToOneNamespaceCannotReachAnother) {
  auto admin = OpenRemote(addr_, "tok-all-secret");
  ASSERT_TRUE(admin.ok()) << admin.status().ToString();
  auto in_a = PutAndPublish(**admin, "ns-a", Fp(1), 1, 2, 500);
  auto in_b = PutAndPublish(**admin, "ns-b", Fp(1), 2, 2, 500);
  ASSERT_TRUE(in_a.ok() && in_b.ok());

  auto limited = OpenRemote(addr_, "tok-a-secret");
  ASSERT_TRUE(limited.ok()) << limited.status().ToString();
  Store& a = **limited;
  ExpectChainReadable(a, "ns-a", Fp(1), 1, *in_a, 500);
  EXPECT_EQ(a.LookupPrefix("ns-b", Fp(1), *in_b).status().code(), Code::kPermissionDenied);
  EXPECT_EQ(a.GetBlocks("ns-b", Fp(1), *in_b).status().code(), Code::kPermissionDenied);
  EXPECT_EQ(a.GetChain("ns-b", Fp(1), in_b->back()).status().code(), Code::kPermissionDenied);
  EXPECT_EQ(PutAndPublish(a, "ns-b", Fp(1), 3, 1, 10).status().code(), Code::kPermissionDenied);
  auto listed = a.ListChains("");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  for (const ChainState& c : *listed) EXPECT_EQ(c.ns, "ns-a") << "listing stays in grant";
  EXPECT_EQ(a.ListChains("ns-b").status().code(), Code::kPermissionDenied);
  // The refusal left ns-b as it was.
  ExpectChainReadable(**admin, "ns-b", Fp(1), 2, *in_b, 500);
}

TEST(DaemonAuthStart, ANonLoopbackListenerWithoutTokensIsRefusedAtStart) {
  TempDir dir;
  auto daemon = StartDaemon(dir, {}, {}, "0.0.0.0:0");
  ASSERT_FALSE(daemon->running()) << "it must not listen on the network without a token";
  EXPECT_EQ(daemon->exit_code(), 1);
  const std::string err = daemon->stderr_text();
  EXPECT_NE(err.find("not a loopback address and no auth token"), std::string::npos) << err;
  EXPECT_NE(err.find("--auth-token"), std::string::npos) << "the message names the fix";
  EXPECT_EQ(err.find("WMBT_KV_AUTH_TOKEN is set"), std::string::npos) << err;
}

// At info level the daemon lists its effective settings, the flags' values included, and never
// a token.
TEST(DaemonAuthStart, AtInfoLevelTheEffectiveSettingsAreLoggedWithoutTokens) {
  TempDir dir;
  auto daemon = StartDaemon(dir, {"--log-level", "info", "--upload-threads", "3"},
                            {{"WMBT_KV_AUTH_TOKENS", "t0p-s3cret"}});
  ASSERT_TRUE(daemon->running()) << daemon->stderr_text();
  EXPECT_EQ(daemon->Stop(SIGTERM), 0);
  const std::string err = daemon->stderr_text();
  EXPECT_NE(err.find("wombatkvd [info] setting WMBT_KV_UPLOAD_THREADS=3\n"), std::string::npos)
      << err;
  EXPECT_NE(err.find("setting WMBT_KV_AUTH_TOKENS="), std::string::npos) << err;
  EXPECT_EQ(err.find("t0p-s3cret"), std::string::npos) << "never a token";
  // Only what the daemon reads: not a client's settings.
  for (const char* client : {"WMBT_KV_NAMESPACE=", "WMBT_KV_AUTH_TOKEN=", "WMBT_KV_TCP_ADDR="}) {
    EXPECT_EQ(err.find(std::string("setting ") + client), std::string::npos) << client;
  }
}

// The clients' variable, one letter short of the daemon's, set where the daemon runs.
TEST(DaemonAuthStart, TheClientsTokenVariableOnTheDaemonIsPointedOut) {
  TempDir dir;
  auto daemon = StartDaemon(dir, {}, {{"WMBT_KV_AUTH_TOKEN", "s3cret"}}, "0.0.0.0:0");
  ASSERT_FALSE(daemon->running());
  const std::string err = daemon->stderr_text();
  EXPECT_NE(err.find("WMBT_KV_AUTH_TOKEN is set, but it is the token a client sends; the "
                     "daemon's are WMBT_KV_AUTH_TOKENS"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("s3cret"), std::string::npos) << "never the token";
}

TEST(DaemonAuthStart, ALoopbackListenerNeedsNoToken) {
  TempDir dir;
  auto daemon = StartDaemon(dir);
  ASSERT_TRUE(daemon->running()) << daemon->stderr_text();
  ExpectServes(daemon->tcp().at(0));
  EXPECT_EQ(daemon->Stop(SIGTERM), 0);
}

}  // namespace
}  // namespace wombatkv::testing
