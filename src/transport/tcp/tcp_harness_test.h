// What the TCP transport tests share: a small handler instead of the Service, a server and a
// channel over loopback, raw sockets for what no well-behaved client sends, a clock the test
// moves. Tests only.
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "transport/tcp/frame_reader.h"
#include "transport/tcp/sockets.h"
#include "transport/tcp/tcp_channel.h"
#include "transport/tcp/tcp_server.h"
#include "wire/codec.h"
#include "wire/frame.h"

namespace wombatkv::tcp::tcp_test {

constexpr uint16_t kEchoOp = 100;    // answers with the request's fields and payloads
constexpr uint16_t kBlockOp = 101;   // waits until the test releases it, then echoes
constexpr uint16_t kNowOp = 102;     // echoed on the event loop by the immediate handler
constexpr uint16_t kSlowOp = 103;    // runs Handler::slow, then echoes
constexpr uint16_t kWorkerOp = 104;  // echoes; never accepted for an inline run
constexpr uint16_t kLaterOp = 105;   // LaterServer: answered when the test says so
constexpr uint16_t kSinkOp = 106;    // answered with no payload, whatever the request carried
// Runs Handler::slow, then echoes; the client waits for it as for a disk sync.
constexpr auto kSyncOp = static_cast<uint16_t>(wire::Op::kSaveChain);

// A gate the test opens; the handler counts who waits at it.
class Gate {
 public:
  void Wait() {
    std::unique_lock<std::mutex> l(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(l, [&] { return open_; });
  }
  void AwaitWaiters(int n) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return waiting_ >= n; });
  }
  void Open() {
    std::lock_guard<std::mutex> g(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_ = 0;
  bool open_ = false;
};

struct Handler {
  Gate gate;
  std::atomic<int> immediate_answers{0};
  std::atomic<int> hellos{0};
  std::atomic<int> token_required_sessions{0};
  std::atomic<int> unauthenticated_requests{0};  // other than Hello, on a token-required session
  uint32_t advertised_max_frame = wire::kDefaultMaxBodyBytes;
  bool hello_authenticates = false;  // as Service does for a valid token
  std::string good_token;            // if set, only a Hello with it authenticates
  std::function<void()> slow;        // kSlowOp
  std::mutex calls_mu;
  std::vector<std::string> calls;  // GUARDED_BY(calls_mu): the fields of each request run, in order

  wire::Message operator()(Session& session, const wire::Message& request) {
    {
      std::lock_guard<std::mutex> g(calls_mu);
      calls.emplace_back(request.fields.begin(), request.fields.end());
    }
    if (request.op == static_cast<uint16_t>(wire::Op::kHello)) {
      hellos.fetch_add(1);
      if (session.token_required) token_required_sessions.fetch_add(1);
      auto hello = wire::HelloRequest::Decode(request);
      if (hello_authenticates && (good_token.empty() || (hello.ok() && hello->token == good_token)))
        session.authenticated.store(true, std::memory_order_release);
      wire::HelloResponse r;
      r.server_version = "test";
      r.max_frame_bytes = advertised_max_frame;
      return r.Encode();
    }
    if (session.token_required && !session.authenticated.load(std::memory_order_acquire))
      unauthenticated_requests.fetch_add(1);
    if (request.op == kBlockOp) gate.Wait();
    if (request.op == kSinkOp) {
      wire::Message ok;
      ok.op = request.op;
      return ok;
    }
    if ((request.op == kSlowOp || request.op == kSyncOp) && slow) slow();
    wire::Message echo;
    echo.op = request.op;
    echo.fields = request.fields;
    echo.payloads = request.payloads;  // slices of the request body: kept alive by the response
    return echo;
  }

  // Like Service::HandleIfImmediate: answers kNowOp (also when it runs on a worker instead).
  std::optional<wire::Message> Immediate(Session& session, const wire::Message& request) {
    if (request.op != kNowOp) return std::nullopt;
    immediate_answers.fetch_add(1);
    return (*this)(session, request);
  }
};

inline std::unique_ptr<TcpServer> StartServer(Handler& h, TcpServerOptions o = {},
                                              size_t workers = 8) {
  if (o.listen.empty()) o.listen = {"127.0.0.1:0"};
  o.worker_threads = workers;
  o.immediate = [&h](Session& s, const wire::Message& m) { return h.Immediate(s, m); };
  auto s =
      TcpServer::Start(Returning([&h](Session& s, const wire::Message& m) { return h(s, m); }), o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

inline std::unique_ptr<Channel> Connect(const std::string& addr,
                                        uint64_t request_timeout_ms = 300'000) {
  TcpClientOptions o;
  o.address = addr;
  o.request_timeout_ms = request_timeout_ms;
  auto c = ConnectTcp(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

inline wire::Message Echo(uint16_t op, std::string_view text) {
  wire::Message m;
  m.op = op;
  m.fields.assign(text.begin(), text.end());
  // A non-owning view of the caller's memory: the channel writes it straight from here.
  m.payloads = {BufferSlice{nullptr, reinterpret_cast<const uint8_t*>(text.data()), text.size()}};
  return m;
}

inline std::string PayloadText(const wire::Message& m) {
  return m.payloads.empty() ? "" : std::string(AsChars(m.payloads[0].view()));
}

// The loopback address that reaches a listener bound to the wildcard address `wildcard`
// ("0.0.0.0:PORT"): its connections count as from the network (a token is required).
inline std::string ViaLoopback(const std::string& wildcard) {
  return "127.0.0.1:" + wildcard.substr(wildcard.rfind(':') + 1);
}

// A raw client socket for sending what no well-behaved client would.
inline int RawConnect(const std::string& addr) {
  auto hp = ParseHostPort(addr, false);
  auto a = Resolve(*hp, false);
  int fd = ::socket(a->front().family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(::connect(fd, a->front().get(), a->front().length), 0);
  return fd;
}

// Reads one frame (blocking); nullopt when the server closed the connection first.
inline std::optional<wire::Message> RawReadFrame(int fd, FrameReader& r) {
  for (;;) {
    auto m = r.Next();
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    if (!m.ok()) return std::nullopt;
    if (m->has_value()) return std::move(**m);
    auto rr = r.ReadFrom(fd);
    if (!rr.ok() || *rr == FrameReader::ReadResult::kEof) return std::nullopt;
  }
}

// True when the peer has closed: recv returns 0 (or a reset).
inline bool RawSeesClose(int fd) {
  char buf[256];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno != EINTR)) return true;
  }
}

// A clock the test moves; waits are real (Shutdown's drain).
class TestClock final : public Clock {
 public:
  uint64_t NowMicros() override { return now_.load(); }
  uint64_t WallMicros() override { return now_.load(); }
  void SleepMicros(uint64_t micros) override { RealClock()->SleepMicros(micros); }
  // A wait that times out moves the clock by its length (Shutdown's bound passes).
  bool WaitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
               uint64_t micros) override {
    const bool woken =
        cv.wait_for(lock, std::chrono::microseconds(micros)) == std::cv_status::no_timeout;
    if (!woken) Advance(micros);
    return woken;
  }
  void Advance(uint64_t micros) { now_.fetch_add(micros); }

 private:
  std::atomic<uint64_t> now_{1'000'000};
};

// Appends the bytes of `m`'s frame to `bytes`.
inline void AppendFrame(wire::Message m, std::vector<uint8_t>* bytes) {
  auto f = wire::Frame(std::move(m));
  ASSERT_TRUE(f.ok());
  for (const iovec& v : f->iov()) {
    const auto* p = static_cast<const uint8_t*>(v.iov_base);
    bytes->insert(bytes->end(), p, p + v.iov_len);
  }
}

}  // namespace wombatkv::tcp::tcp_test
