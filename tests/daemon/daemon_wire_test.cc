// G12 on the wire: a real wombatkvd fed what no well-behaved client sends. Each bad input gets
// its clear error (or a closed connection), and the daemon keeps serving another client.
#include <gtest/gtest.h>

#include "tests/daemon/daemon_test_util.h"
#include "wire/codec.h"
#include "wire/frame.h"

namespace wombatkv::testing {
namespace {

wire::Message Ping(uint64_t id) {
  wire::Message m = wire::PingRequest{}.Encode();
  m.id = id;
  return m;
}

class DaemonWire : public ::testing::Test {
 protected:
  void StartWith(std::vector<std::string> extra = {}) {
    daemon_ = StartDaemon(dir_, std::move(extra));
    ASSERT_TRUE(daemon_->running()) << daemon_->output() << daemon_->stderr_text();
    addr_ = daemon_->tcp().at(0);
  }
  void TearDown() override {
    if (daemon_ && daemon_->running()) {
      EXPECT_EQ(daemon_->Stop(SIGTERM), 0) << daemon_->stderr_text();
    }
  }
  // The answer to a rejected frame: an error response, then the connection closes.
  Status ExpectErrorThenClose(RawClient& raw) {
    auto answer = raw.Read();
    EXPECT_TRUE(answer.has_value()) << "no error response before the close";
    if (!answer) return Status::Internal("no answer");
    EXPECT_TRUE(answer->flags & wire::kFlagResponse);
    EXPECT_TRUE(raw.SeesClose());
    return wire::ResponseStatus(*answer);
  }

  TempDir dir_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::string addr_;
};

TEST_F(DaemonWire, G12ATruncatedFrameCostsOnlyItsOwnConnection) {
  StartWith();
  auto whole = FrameBytes(Ping(1));
  {
    RawClient raw(addr_);
    raw.Send({whole.begin(), whole.begin() + whole.size() / 2});
    ExpectServes(addr_);  // while the half frame waits
  }  // ...and the truncated client goes away mid-frame
  ExpectServes(addr_);
}

TEST_F(DaemonWire, G12BadMagicIsAnsweredThenTheConnectionCloses) {
  StartWith();
  RawClient raw(addr_);
  auto bytes = FrameBytes(Ping(1));
  bytes[0] = 'X';
  raw.Send(bytes);
  Status st = ExpectErrorThenClose(raw);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("bad magic"), std::string::npos) << st.ToString();
  ExpectServes(addr_);
}

TEST_F(DaemonWire, G12BadVersionIsAnsweredThenTheConnectionCloses) {
  StartWith();
  RawClient raw(addr_);
  auto bytes = FrameBytes(Ping(1));
  bytes[4] = 9;
  raw.Send(bytes);
  Status st = ExpectErrorThenClose(raw);
  EXPECT_NE(st.message().find("unsupported wire version 9"), std::string::npos) << st.ToString();
  ExpectServes(addr_);
}

// The answer is the connection's (id 0), not the request's: with a CRC mismatch the id read may
// be the damaged bytes, and an answer to it could reach another call.
TEST_F(DaemonWire, G12BadCrcIsAnsweredOnTheConnectionThenClosed) {
  StartWith();
  RawClient raw(addr_);
  auto bytes = FrameBytes(Ping(4242));
  bytes[8] ^= 0xff;  // the CRC field
  raw.Send(bytes);
  auto answer = raw.Read();
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->id, 0u) << "the error named an id its CRC did not vouch for";
  Status st = wire::ResponseStatus(*answer);
  EXPECT_EQ(st.code(), Code::kCorruption);
  EXPECT_NE(st.message().find("CRC32C mismatch"), std::string::npos) << st.ToString();
  EXPECT_TRUE(raw.SeesClose());
  ExpectServes(addr_);
}

TEST_F(DaemonWire, G12ALengthOverTheLimitIsRefusedBeforeTheBodyArrives) {
  StartWith({"--max-frame-bytes", "64K"});
  RawClient raw(addr_);
  uint8_t env[wire::kEnvelopeBytes];
  wire::EncodeEnvelope(1u << 30, 0, env);  // 1 GiB announced; no body is ever sent
  raw.Send(std::vector<uint8_t>(env, env + sizeof env));
  Status st = ExpectErrorThenClose(raw);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("exceeds the limit 65536"), std::string::npos) << st.ToString();
  ExpectServes(addr_);
}

TEST_F(DaemonWire, G12AnUnknownOpIsRefusedAndTheConnectionStaysUsable) {
  StartWith();
  RawClient raw(addr_);
  wire::Message m;
  m.op = 999;
  Status st = raw.Ask(m, 7);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("unknown op 999"), std::string::npos) << st.ToString();
  EXPECT_TRUE(raw.Ask(Ping(0), 8).ok()) << "a bad request does not cost the connection";
  ExpectServes(addr_);
}

TEST_F(DaemonWire, G12MalformedFieldsAreRefusedNamingWhatIsWrong) {
  StartWith();
  RawClient raw(addr_);
  // A namespace that would be a path, if names became paths unchecked.
  wire::LookupPrefixRequest bad_ns;
  bad_ns.ns = "../etc";
  bad_ns.keys = {Key(1, 1)};
  Status s1 = raw.Ask(bad_ns.Encode(), 1);
  EXPECT_EQ(s1.code(), Code::kInvalidArgument);
  EXPECT_NE(s1.message().find("../etc"), std::string::npos) << s1.ToString();
  // A key cut short: the binary counterpart of bad hex on the C ABI.
  wire::GetBlocksRequest cut;
  cut.ns = "ok";
  cut.keys = {Key(1, 1), Key(1, 2)};
  wire::Message m2 = cut.Encode();
  m2.fields.resize(m2.fields.size() - 5);
  Status s2 = raw.Ask(m2, 2);
  EXPECT_EQ(s2.code(), Code::kInvalidArgument) << s2.ToString();
  EXPECT_FALSE(s2.message().empty());
  // A PutBlocks whose payload count disagrees with its blocks.
  wire::PutBlocksRequest put;
  put.ns = "ok";
  put.blocks.resize(2);
  put.blocks[0].key = Key(2, 0);
  put.blocks[1].key = Key(2, 1);
  put.blocks[1].parent = Key(2, 0);
  wire::Message m3 = put.Encode();
  m3.payloads.resize(1);
  EXPECT_EQ(raw.Ask(m3, 3).code(), Code::kInvalidArgument);
  EXPECT_TRUE(raw.Ask(Ping(0), 4).ok());
  ExpectServes(addr_);
}

TEST_F(DaemonWire, G12ASilentClientBlocksNoOneAndIsClosedWhenIdle) {
  StartWith({"--idle-timeout", "300"});
  RawClient silent(addr_);
  RawClient half(addr_);
  half.Send(std::vector<uint8_t>{'W', 'M', 'B', 'T', 1, 0});  // part of an envelope, then nothing
  ExpectServes(addr_);  // served while both hang
  EXPECT_TRUE(silent.SeesClose());
  EXPECT_TRUE(half.SeesClose());
  ExpectServes(addr_);
}

TEST_F(DaemonWire, G12GarbageFromManyClientsAtOnceLeavesTheDaemonServing) {
  StartWith();
  std::vector<std::unique_ptr<RawClient>> bad;
  for (int i = 0; i < 50; ++i) {
    bad.push_back(std::make_unique<RawClient>(addr_));
    std::vector<uint8_t> junk(64 + i);
    for (size_t j = 0; j < junk.size(); ++j) junk[j] = static_cast<uint8_t>(j * 31 + i);
    bad.back()->Send(junk);
  }
  ExpectServes(addr_);
  for (auto& c : bad) EXPECT_TRUE(c->SeesClose());
  ExpectServes(addr_);
}

}  // namespace
}  // namespace wombatkv::testing
