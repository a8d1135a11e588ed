// Who gets a connection and what it may send before authenticating: tokens on non-loopback
// listeners, the pre-authentication frame limit, malformed frames, idle and anonymous peers,
// refused Hellos (TcpServer invariants 1, 3, 4, 5, 10, 14, 15), over real loopback sockets.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "transport/tcp/tcp_harness_test.h"

namespace wombatkv::tcp::tcp_test {
namespace {

TEST(TcpTransport, SessionsOnANonLoopbackListenerRequireATokenOthersDoNot) {
  Handler h;
  TcpServerOptions o;
  o.listen = {"0.0.0.0:0", "127.0.0.1:0"};
  auto server = StartServer(h, o);
  ASSERT_EQ(server->listeners().size(), 2u);
  EXPECT_FALSE(server->listeners()[0].loopback);
  EXPECT_TRUE(server->listeners()[1].loopback);
  auto via_wildcard = Connect(ViaLoopback(server->listeners()[0].address));
  EXPECT_EQ(h.token_required_sessions.load(), 1);
  auto via_loopback = Connect(server->listeners()[1].address);
  EXPECT_EQ(h.hellos.load(), 2);
  EXPECT_EQ(h.token_required_sessions.load(), 1);
}

TEST(TcpTransport, BeforeAuthenticationOnlySmallFramesAreAccepted) {
  Handler h;
  TcpServerOptions o;
  o.listen = {"0.0.0.0:0"};
  auto server = StartServer(h, o);
  int raw = RawConnect(ViaLoopback(server->listeners()[0].address));
  uint8_t env[wire::kEnvelopeBytes];
  wire::EncodeEnvelope(1 << 20, 0, env);  // 1 MiB announced before any Hello
  ASSERT_EQ(::send(raw, env, sizeof env, 0), static_cast<ssize_t>(sizeof env));
  FrameReader r(1 << 20);
  auto answer = RawReadFrame(raw, r);
  ASSERT_TRUE(answer.has_value());
  Status st = wire::ResponseStatus(*answer);
  EXPECT_NE(st.message().find("exceeds the limit 65536"), std::string::npos) << st.ToString();
  EXPECT_TRUE(RawSeesClose(raw));
  ::close(raw);
}

// Invariant 11: a client need not wait for its Hello's answer. What it sends right behind the
// Hello, in the same write, is served as the Hello left the session: authenticated, and allowed
// frames over the pre-authentication limit.
TEST(TcpTransport, FramesSentRightBehindAHelloAreServedAsItsSession) {
  Handler h;
  h.hello_authenticates = true;
  TcpServerOptions o;
  o.listen = {"0.0.0.0:0"};
  auto server = StartServer(h, o);
  int raw = RawConnect(ViaLoopback(server->listeners()[0].address));
  wire::Message hello = wire::HelloRequest{wire::kProtocolVersion, "raw", "a-token"}.Encode();
  hello.id = 1;
  const std::string large(kUnauthenticatedFrameBytesMax + 1000, 'L');
  wire::Message small = Echo(kEchoOp, "right behind");
  small.id = 2;
  wire::Message big = Echo(kEchoOp, large);
  big.id = 3;
  std::vector<uint8_t> bytes;
  for (wire::Message* m : {&hello, &small, &big}) {
    ASSERT_NO_FATAL_FAILURE(AppendFrame(std::move(*m), &bytes));
  }
  ASSERT_EQ(::send(raw, bytes.data(), bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(bytes.size()));
  FrameReader r(1 << 20);
  std::map<uint64_t, std::string> echoed;
  for (int i = 0; i < 3; ++i) {
    auto answer = RawReadFrame(raw, r);
    ASSERT_TRUE(answer.has_value()) << "closed after " << i << " answers";
    if (answer->id == 1) {
      EXPECT_TRUE(wire::HelloResponse::Decode(*answer).ok()) << "the Hello was refused";
    }
    echoed[answer->id] = PayloadText(*answer);
  }
  EXPECT_EQ(echoed[2], "right behind");
  EXPECT_EQ(echoed[3], large);
  EXPECT_EQ(h.unauthenticated_requests.load(), 0) << "served before the Hello authenticated";
  ::close(raw);
}

TEST(TcpTransport, AMalformedFrameIsAnsweredAndClosedWhileOthersAreServed) {
  Handler h;
  auto server = StartServer(h);
  const std::string addr = server->listeners()[0].address;
  auto good = Connect(addr);
  int raw = RawConnect(addr);
  const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_GT(::send(raw, junk, sizeof junk - 1, 0), 0);
  FrameReader r(1 << 20);
  auto answer = RawReadFrame(raw, r);
  ASSERT_TRUE(answer.has_value()) << "an error response before the close";
  Status st = wire::ResponseStatus(*answer);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("bad magic"), std::string::npos) << st.ToString();
  EXPECT_TRUE(RawSeesClose(raw));
  ::close(raw);
  auto still = good->Call(Echo(kEchoOp, "still here"));
  ASSERT_TRUE(still.ok()) << still.status().ToString();
  EXPECT_EQ(server->stats().frames_rejected.load(), 1u);
}

TEST(TcpTransport, APeerSendingJunkCannotFloodTheLog) {
  Handler h;
  TestClock clock;
  std::mutex mu;
  std::vector<std::string> warnings;
  TcpServerOptions o;
  o.clock = &clock;
  o.log = [&](LogLevel level, const std::string& line) {
    std::lock_guard<std::mutex> g(mu);
    if (level >= LogLevel::kWarn) warnings.push_back(line);
  };
  auto server = StartServer(h, o);
  const std::string addr = server->listeners()[0].address;
  const char junk[] = "GET / HTTP/1.1\r\n\r\n";
  auto send_junk = [&] {
    int raw = RawConnect(addr);
    ASSERT_GT(::send(raw, junk, sizeof junk - 1, 0), 0);
    EXPECT_TRUE(RawSeesClose(raw));
    ::close(raw);
  };
  constexpr int kJunk = 40;
  for (int i = 0; i < kJunk; ++i) ASSERT_NO_FATAL_FAILURE(send_junk());
  EXPECT_EQ(server->stats().frames_rejected.load(), uint64_t{kJunk}) << "each one is counted";
  {
    std::lock_guard<std::mutex> g(mu);
    EXPECT_EQ(warnings.size(), 10u) << "a second of junk writes at most ten lines";
  }
  clock.Advance(1'000'001);
  ASSERT_NO_FATAL_FAILURE(send_junk());
  std::lock_guard<std::mutex> g(mu);
  ASSERT_EQ(warnings.size(), 11u);
  EXPECT_NE(warnings.back().find("(30 similar lines held back)"), std::string::npos)
      << warnings.back();
}

TEST(TcpTransport, ASilentClientIsClosedAfterTheIdleTimeoutAndBlocksNoOne) {
  Handler h;
  TcpServerOptions o;
  o.idle_timeout_ms = 100;
  auto server = StartServer(h, o);
  const std::string addr = server->listeners()[0].address;
  int silent = RawConnect(addr);
  int half = RawConnect(addr);
  ASSERT_EQ(::send(half, "WMBT\x01", 5, 0), 5);  // a third of an envelope, then nothing
  auto good = Connect(addr);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(good->Call(Echo(kEchoOp, "x")).ok());
  EXPECT_TRUE(RawSeesClose(silent));
  EXPECT_TRUE(RawSeesClose(half));
  ::close(silent);
  ::close(half);
  EXPECT_GE(server->stats().connections_idle_closed.load(), 2u);
}

TEST(TcpTransport, AnUnauthenticatedPeerIsClosedAfterTheHelloTimeoutHoweverBusy) {
  Handler h;
  h.hello_authenticates = true;
  TcpServerOptions o;
  o.listen = {"0.0.0.0:0", "127.0.0.1:0"};  // the first requires a token (invariant 1)
  o.idle_timeout_ms = 0;
  o.hello_timeout_ms = 200;
  auto server = StartServer(h, o);
  const std::string addr = ViaLoopback(server->listeners()[0].address);
  int anonymous = RawConnect(addr);
  int local = RawConnect(server->listeners()[1].address);
  auto authenticated = Connect(addr);  // its Hello authenticates it
  // The anonymous peer keeps sending (a frame every 20 ms): activity does not save it.
  std::vector<uint8_t> frame;
  ASSERT_NO_FATAL_FAILURE(AppendFrame(Echo(kNowOp, "busy"), &frame));
  FrameReader r(1 << 20);
  bool closed = false;
  for (int i = 0; i < 250 && !closed; ++i) {
    if (::send(anonymous, frame.data(), frame.size(), MSG_NOSIGNAL) < 0) {
      closed = true;
      break;
    }
    closed = !RawReadFrame(anonymous, r).has_value();
    RealClock()->SleepMicros(20'000);
  }
  EXPECT_TRUE(closed) << "an unauthenticated peer kept its connection for 5 s";
  EXPECT_EQ(server->stats().connections_unauthenticated_closed.load(), 1u);
  // Those that need no token, or presented one, are served on.
  ASSERT_EQ(::send(local, frame.data(), frame.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(frame.size()));
  FrameReader lr(1 << 20);
  auto answer = RawReadFrame(local, lr);
  ASSERT_TRUE(answer.has_value()) << "the loopback connection was closed";
  EXPECT_EQ(PayloadText(*answer), "busy");
  EXPECT_TRUE(authenticated->Call(Echo(kEchoOp, "still here")).ok());
  ::close(anonymous);
  ::close(local);
}

// Invariant 14: a Hello that does not authenticate is answered, then the connection is closed —
// the frames a token guesser pipelines behind it are not read (a review of session 60 saw 20,000
// guesses answered on one connection in 0.07 s).
TEST(TcpTransport, ARefusedHelloIsAnsweredAndItsConnectionClosed) {
  Handler h;
  h.hello_authenticates = true;
  h.good_token = "good";
  TcpServerOptions o;
  o.listen = {"0.0.0.0:0"};
  auto server = StartServer(h, o);
  const std::string addr = ViaLoopback(server->listeners()[0].address);
  int raw = RawConnect(addr);
  std::vector<uint8_t> bytes;
  for (uint64_t id = 1; id <= 3; ++id) {
    wire::Message guess = wire::HelloRequest{wire::kProtocolVersion, "raw", "guess"}.Encode();
    guess.id = id;
    ASSERT_NO_FATAL_FAILURE(AppendFrame(std::move(guess), &bytes));
  }
  ASSERT_EQ(::send(raw, bytes.data(), bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(bytes.size()));
  FrameReader r(1 << 20);
  auto first = RawReadFrame(raw, r);
  ASSERT_TRUE(first.has_value()) << "the refused Hello was not answered";
  EXPECT_EQ(first->id, 1u);
  EXPECT_FALSE(RawReadFrame(raw, r).has_value()) << "the connection served a second guess";
  EXPECT_EQ(h.hellos.load(), 1);
  ::close(raw);
  TcpClientOptions co;
  co.address = addr;
  co.auth_token = "good";
  auto good = ConnectTcp(co);
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_TRUE((*good)->Call(Echo(kEchoOp, "served")).ok());
}

// Invariant 15: anonymous peers that connect and say nothing cannot keep a client with a token
// out: the oldest of them makes room (before, four silent sockets filled connections_max = 4 and
// the client was refused until their Hello timeout).
TEST(TcpTransport, SilentAnonymousPeersCannotKeepAnAuthenticatingClientOut) {
  Handler h;
  h.hello_authenticates = true;
  h.good_token = "good";
  TcpServerOptions o;
  o.listen = {"0.0.0.0:0"};
  o.connections_max = 4;
  o.unauthenticated_max = 2;
  o.unauthenticated_grace_ms = 0;  // old enough at once (the burst test below has the default)
  o.hello_timeout_ms = 60'000;
  auto server = StartServer(h, o);
  const std::string addr = ViaLoopback(server->listeners()[0].address);
  std::vector<int> silent;
  for (int i = 0; i < 4; ++i) {
    silent.push_back(RawConnect(addr));
    const uint64_t accepted = i + 1;
    for (int spins = 0; spins < 2000 && server->stats().connections_accepted.load() != accepted;
         ++spins)
      RealClock()->SleepMicros(1000);
    EXPECT_EQ(server->stats().connections_open.load(), std::min<uint64_t>(i + 1, 2))
        << "after " << i + 1;
  }
  EXPECT_EQ(server->stats().connections_unauthenticated_closed.load(), 2u);
  TcpClientOptions co;
  co.address = addr;
  co.auth_token = "good";
  std::vector<std::unique_ptr<Channel>> clients;
  for (int i = 0; i < 4; ++i) {  // every slot: the silent peers give theirs up
    auto c = ConnectTcp(co);
    ASSERT_TRUE(c.ok()) << "client " << i << ": " << c.status().ToString();
    ASSERT_TRUE((*c)->Call(Echo(kEchoOp, "in")).ok());
    clients.push_back(std::move(*c));
  }
  EXPECT_EQ(server->stats().connections_refused.load(), 0u);
  EXPECT_EQ(server->stats().connections_unauthenticated_closed.load(), 4u);
  for (int fd : silent) ::close(fd);
}

// Invariant 15's grace: connections accepted in one burst, their Hellos still unread, do not
// close one another (a review of the first version: with Hellos queued while the daemon opened
// its store, only unauthenticated_max of ten clients were answered).
TEST(TcpTransport, ABurstOfClientsWithHellosQueuedIsServedWhole) {
  auto bound = BoundListeners::Bind({"0.0.0.0:0"});
  ASSERT_TRUE(bound.ok()) << bound.status().ToString();
  const std::string addr = ViaLoopback((*bound)->listeners()[0].address);
  std::vector<int> raws;
  for (uint64_t i = 0; i < 10; ++i) {  // queued by the kernel: no server yet
    raws.push_back(RawConnect(addr));
    wire::Message hello = wire::HelloRequest{wire::kProtocolVersion, "raw", "good"}.Encode();
    hello.id = i + 1;
    std::vector<uint8_t> bytes;
    ASSERT_NO_FATAL_FAILURE(AppendFrame(std::move(hello), &bytes));
    ASSERT_EQ(::send(raws.back(), bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  Handler h;
  h.hello_authenticates = true;
  h.good_token = "good";
  TcpServerOptions o;
  o.bound = *bound;
  o.unauthenticated_max = 4;
  auto server = StartServer(h, o);
  for (int raw : raws) {
    FrameReader r(1 << 20);
    EXPECT_TRUE(RawReadFrame(raw, r).has_value()) << "a client of the burst was closed";
    ::close(raw);
  }
  EXPECT_EQ(server->stats().connections_unauthenticated_closed.load(), 0u);
}

}  // namespace
}  // namespace wombatkv::tcp::tcp_test
