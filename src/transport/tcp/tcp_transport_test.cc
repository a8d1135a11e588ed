// TcpServer + TcpChannel over real loopback sockets, with a small handler instead of the Service
// (the daemon tests in tests/daemon run the real wombatkvd): pipelining, out-of-order responses,
// inline and immediate answers, workers in turn, graceful and bounded shutdown, reconnection.
// Admission (tokens, malformed frames, idle and anonymous peers): tcp_admission_test.cc.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <functional>
#include <latch>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "base/defer_scope.h"
#include "base/limits.h"
#include "base/must_not_block.h"
#include "base/thread_sleeps.h"
#include "transport/tcp/frame_reader.h"
#include "transport/tcp/loopback_listener_for_tests.h"
#include "transport/tcp/sockets.h"
#include "transport/tcp/tcp_channel.h"
#include "transport/tcp/tcp_harness_test.h"
#include "transport/tcp/tcp_server.h"
#include "wire/codec.h"

namespace wombatkv::tcp::tcp_test {
namespace {

TEST(TcpTransport, CallsFromManyThreadsArePipelinedOnOneConnection) {
  Handler h;
  auto server = StartServer(h);
  auto channel = Connect(server->listeners()[0].address);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        std::string text = "thread " + std::to_string(t) + " call " + std::to_string(i);
        auto r = channel->Call(Echo(kEchoOp, text));
        if (!r.ok() || PayloadText(*r) != text ||
            std::string(r->fields.begin(), r->fields.end()) != text)
          wrong.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(server->stats().connections_accepted.load(), 1u) << "one connection carried all";
  EXPECT_EQ(h.hellos.load(), 1);
}

// Spinning (base/spin_poll.h): the client spins by default in every other test, the server does
// not. The other combinations must carry the same pipelined, mixed loop/worker traffic.
TEST(TcpTransport, WithOrWithoutSpinningAtEitherEndPipelinedCallsAreAnswered) {
  for (const bool server_spins : {true, false}) {
    SCOPED_TRACE(server_spins ? "server spins, client sleeps" : "neither spins");
    Handler h;
    TcpServerOptions so;
    so.spin = server_spins;
    auto server = StartServer(h, so);
    TcpClientOptions co;
    co.address = server->listeners()[0].address;
    co.spin = false;
    auto channel = ConnectTcp(co);
    ASSERT_TRUE(channel.ok()) << channel.status().ToString();
    std::vector<std::thread> threads;
    std::atomic<int> wrong{0};
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 100; ++i) {
          std::string text = "t" + std::to_string(t) + " #" + std::to_string(i);
          auto r = (*channel)->Call(Echo(i % 2 ? kNowOp : kEchoOp, text));
          if (!r.ok() || PayloadText(*r) != text) wrong.fetch_add(1);
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_GT(h.immediate_answers.load(), 0) << "half the calls were answered on the loop";
  }
}

// A call whose answer waits for a disk sync (here a handler that takes 300 µs, six times the
// 50 µs spin of other calls) is soon caught by the caller's poll instead of a sleep in recv(2)
// and the wake-up after it: that poll learns from whole waits (base/spin_poll.h,
// kSyncWaitSpin). It stops when another task wants the core, so on a loaded machine fewer
// calls go without a sleep: the test wants 50 within 10,000 calls (once, under a full ctest run,
// 2,000 were not enough). Without the poll, none of 2,000 did.
TEST(TcpTransport, ACallThatAwaitsADiskSyncIsCaughtWithoutSleeping) {
  Handler h;
  h.slow = [] { RealClock()->SleepMicros(300); };
  std::optional<CpuPin> server_core(std::in_place, 1);
  if (!server_core->pinned()) GTEST_SKIP() << "needs two CPUs: one for the server, one to poll";
  auto server = StartServer(h);
  server_core.reset();
  std::optional<CpuPin> client_core(std::in_place, 0);
  ASSERT_TRUE(client_core->pinned());
  auto channel = Connect(server->listeners()[0].address);
  ASSERT_TRUE(ThreadSleepsAreCounted(*RealClock()));
  int calls = 0;
  const int sleepless = CallsWithoutSleep(10000, 50, &calls, [&] {
    auto r = channel->Call(Echo(kSyncOp, "save"));
    EXPECT_TRUE(r.ok() && PayloadText(*r) == "save") << r.status().ToString();
    return r.ok();
  });
  EXPECT_EQ(sleepless, 50) << "of " << calls << " calls";
  client_core.reset();

  // WMBT_KV_CLIENT_POLL=0 (TcpClientOptions::spin): the calls sleep.
  TcpClientOptions o;
  o.address = server->listeners()[0].address;
  o.spin = false;
  auto quiet = ConnectTcp(o);
  ASSERT_TRUE(quiet.ok()) << quiet.status().ToString();
  // A call can still miss its sleep when its thread is preempted until the answer is there
  // (ctest runs two tests at once): a few, not the dozens a poll catches.
  EXPECT_LE(CallsWithoutSleep(20, 20, &calls, [&] {
              return (*quiet)->Call(Echo(kSyncOp, "save")).ok();
            }),
            2);
  EXPECT_EQ(calls, 20);
}

// A server on a manual clock that never closes idle connections.
struct ClockedServer {
  explicit ClockedServer(bool spin_when_alone, bool inline_when_alone = false,
                         bool spin = false) {
    TcpServerOptions so;
    so.clock = &clock;
    so.idle_timeout_ms = 0;
    so.hello_timeout_ms = 0;
    so.spin_when_alone = spin_when_alone;
    so.spin = spin;
    if (inline_when_alone) {
      so.inline_when_alone = [](const wire::Message& m) { return m.op != kWorkerOp; };
    }
    server = StartServer(h, so);
  }
  std::unique_ptr<Channel> Connect() {
    return ::wombatkv::tcp::tcp_test::Connect(server->listeners()[0].address);
  }
  uint64_t loop_spins() const { return server->stats().loop_spins.load(); }
  uint64_t inline_runs() const { return server->stats().requests_inline.load(); }

  Handler h;
  TestClock clock;
  std::unique_ptr<TcpServer> server;
};

// spin_when_alone: the loop spins after serving a connection that was alone in the last window
// (a lone client's ping-pong), never while several connections are sending.
TEST(TcpTransport, LoopSpinsOnlyWhileOneConnectionAloneSendsRequests) {
  auto call = [](Channel& c, const std::string& text) {
    auto r = c.Call(Echo(kNowOp, text));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(PayloadText(*r), text);
  };
  {
    SCOPED_TRACE("two connections");
    ClockedServer s(/*spin_when_alone=*/true);
    auto a = s.Connect();
    auto b = s.Connect();
    for (int window = 0; window < 3; ++window) {
      for (int i = 0; i < 5; ++i) {
        call(*a, "a");
        call(*b, "b");
      }
      s.clock.Advance(2'000);  // the next wake-up with requests ends the window
    }
    EXPECT_EQ(s.loop_spins(), 0u);
  }
  {
    SCOPED_TRACE("one connection");
    ClockedServer s(/*spin_when_alone=*/true);
    auto a = s.Connect();
    call(*a, "first window");
    s.clock.Advance(2'000);
    call(*a, "ends the window: a was alone in it");
    // The loop began its spin after answering the call above, before it read this one.
    call(*a, "caught by the spin, or after it");
    EXPECT_GE(s.loop_spins(), 1u);
  }
  {
    SCOPED_TRACE("turned off");
    ClockedServer s(/*spin_when_alone=*/false);
    auto a = s.Connect();
    call(*a, "first window");
    s.clock.Advance(2'000);
    for (int i = 0; i < 5; ++i) call(*a, "no spin");
    EXPECT_EQ(s.loop_spins(), 0u);
  }
}

// spin: the loop spins after every wake-up with work, however many connections send. Each call
// below is read in a wake-up of its own (the next is sent after the answer).
TEST(TcpTransport, LoopSpinsAfterEveryWakeUpWithWorkWhenSpinIsOn) {
  ClockedServer s(/*spin_when_alone=*/false, /*inline_when_alone=*/false, /*spin=*/true);
  auto a = s.Connect();
  auto b = s.Connect();
  constexpr uint64_t kCalls = 5;
  for (uint64_t i = 0; i < kCalls; ++i) {
    for (Channel* c : {a.get(), b.get()}) {
      auto r = c->Call(Echo(kNowOp, "x"));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    }
  }
  EXPECT_GE(s.loop_spins(), 2 * kCalls);
}

// A client on a raw socket that decides how its frames are split into writes.
struct RawClient {
  explicit RawClient(const std::string& addr) : fd(RawConnect(addr)) {}
  ~RawClient() { ::close(fd); }
  // Sends frames of kEchoOp-like requests (op, text) in one write.
  void Send(const std::vector<std::pair<uint16_t, std::string>>& requests) {
    std::vector<uint8_t> bytes;
    for (const auto& [op, text] : requests) {
      wire::Message m = Echo(op, text);
      m.id = ++last_id;
      ASSERT_NO_FATAL_FAILURE(AppendFrame(std::move(m), &bytes));
    }
    ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  }
  // Waits until the server's side has received (acknowledged) everything sent.
  void AwaitReceived() {
    int unacked = 1;
    while (::ioctl(fd, SIOCOUTQ, &unacked) == 0 && unacked > 0) std::this_thread::yield();
  }
  std::string Read() {
    auto m = RawReadFrame(fd, reader);
    EXPECT_TRUE(m.has_value());
    return m ? PayloadText(*m) : "";
  }
  // The next two answers, in whatever order they came.
  std::set<std::string> ReadTwo() {
    std::set<std::string> answers;
    answers.insert(Read());
    answers.insert(Read());
    return answers;
  }
  // One request, then its answer.
  void Call(uint16_t op, const std::string& text) {
    Send({{op, text}});
    EXPECT_EQ(Read(), text);
  }

  int fd;
  FrameReader reader{1 << 20};
  uint64_t last_id = 0;
};

// Brings `a` to where its blocking requests run on the loop: one inline run so far.
void MakeAlone(ClockedServer& s, RawClient& a) {
  a.Call(kEchoOp, "first window: to a worker");
  s.clock.Advance(2'000);
  // The window ends at the end of the loop's next batch of events: the one that read the call
  // above if the worker answered (and the clock moved) before the loop got there, else the next.
  for (int i = 0; i < 2 && s.inline_runs() == 0; ++i) a.Call(kEchoOp, "alone, or ends the window");
  if (s.inline_runs() == 0) a.Call(kEchoOp, "alone: on the loop");
  ASSERT_EQ(s.inline_runs(), 1u);
}

// inline_when_alone (TcpServer invariant 8): a lone client that waits for each answer gets its
// blocking requests run on the loop, once the loop has seen it alone for a window.
TEST(TcpTransport, ALoneSequentialClientsBlockingRequestsRunOnTheLoop) {
  ClockedServer s(/*spin_when_alone=*/true, /*inline_when_alone=*/true);
  RawClient a(s.server->listeners()[0].address);
  a.Call(kEchoOp, "first window: to a worker");
  EXPECT_EQ(s.inline_runs(), 0u);
  MakeAlone(s, a);
  for (int i = 0; i < 5; ++i) a.Call(kEchoOp, "alone: on the loop " + std::to_string(i));
  EXPECT_EQ(s.inline_runs(), 6u);
  a.Call(kNowOp, "an immediate request is answered as before");
  EXPECT_EQ(s.inline_runs(), 6u);
}

TEST(TcpTransport, NoRequestRunsOnTheLoopWhileTwoConnectionsSend) {
  ClockedServer s(/*spin_when_alone=*/true, /*inline_when_alone=*/true);
  RawClient a(s.server->listeners()[0].address);
  RawClient b(s.server->listeners()[0].address);
  for (int window = 0; window < 3; ++window) {
    for (int i = 0; i < 5; ++i) {
      a.Call(kEchoOp, "a");
      b.Call(kEchoOp, "b");
    }
    s.clock.Advance(2'000);
  }
  EXPECT_EQ(s.inline_runs(), 0u);
}

// A server with inline runs, and a client `a` whose blocking requests run on the loop (one so far).
class TcpInline : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(MakeAlone(s, a)); }

  ClockedServer s{/*spin_when_alone=*/true, /*inline_when_alone=*/true};
  RawClient a{s.server->listeners()[0].address};
};

TEST_F(TcpInline, ANewcomersFirstRequestDoesNotRunInlineBesideALoneConnection) {
  RawClient b(s.server->listeners()[0].address);
  b.Call(kEchoOp, "b is not the lone connection: to a worker");
  EXPECT_EQ(s.inline_runs(), 1u);
  a.Call(kEchoOp, "a is no longer alone either");
  EXPECT_EQ(s.inline_runs(), 1u);
  s.clock.Advance(2'000);
  b.Call(kEchoOp, "ends a window with both in it");
  b.Call(kEchoOp, "the window before had two connections: to a worker");
  EXPECT_EQ(s.inline_runs(), 1u);
}

TEST_F(TcpInline, AConnectionAcceptedBesideALoneOneEndsItsInlineRuns) {
  RawClient b(s.server->listeners()[0].address);  // sends nothing yet
  while (s.server->stats().connections_accepted.load() < 2) std::this_thread::yield();
  a.Call(kEchoOp, "b may send any moment: to a worker");
  EXPECT_EQ(s.inline_runs(), 1u);
}

TEST_F(TcpInline, AConnectionThatSendsTwoFramesInOneWriteNeverRunsInlineAgain) {
  a.Send({{kEchoOp, "one"}, {kEchoOp, "two"}});
  EXPECT_EQ(a.ReadTwo(), (std::set<std::string>{"one", "two"}));
  for (int i = 0; i < 5; ++i) a.Call(kEchoOp, "to a worker");
  EXPECT_EQ(s.inline_runs(), 1u) << "a connection seen pipelining runs nothing inline";
}

TEST_F(TcpInline, AFrameArrivingDuringAnInlineRunEndsInlineRunsForThatConnection) {
  a.Send({{kBlockOp, "blocks the loop"}});
  s.h.gate.AwaitWaiters(1);
  EXPECT_EQ(s.inline_runs(), 2u);
  a.Send({{kEchoOp, "waits for it"}});  // the cost of inlining: once per connection
  a.AwaitReceived();
  s.h.gate.Open();
  EXPECT_EQ(a.Read(), "blocks the loop");
  EXPECT_EQ(a.Read(), "waits for it");
  for (int i = 0; i < 5; ++i) a.Call(kEchoOp, "to a worker");
  EXPECT_EQ(s.inline_runs(), 2u);
}

TEST_F(TcpInline, ARequestThePredicateRefusesRunsOnAWorker) {
  a.Call(kWorkerOp, "refused: to a worker");
  EXPECT_EQ(s.inline_runs(), 1u);
  a.Call(kEchoOp, "accepted: on the loop");
  EXPECT_EQ(s.inline_runs(), 2u);
}

TEST_F(TcpInline, ABlockingFrameReadAfterAnotherInOneReadEndsInlineRuns) {
  // The lookup is answered on the loop; the save behind it must not hold that answer back.
  a.Send({{kNowOp, "lookup"}, {kEchoOp, "save"}});
  EXPECT_EQ(a.ReadTwo(), (std::set<std::string>{"lookup", "save"}));
  EXPECT_EQ(s.inline_runs(), 1u);
  for (int i = 0; i < 3; ++i) a.Call(kEchoOp, "to a worker");
  EXPECT_EQ(s.inline_runs(), 1u);
}

TEST_F(TcpInline, ShutdownKeepsItsBoundWhileALoopRunsAnInlineRequest) {
  a.Send({{kBlockOp, "holds the loop"}});
  s.h.gate.AwaitWaiters(1);
  EXPECT_EQ(s.inline_runs(), 2u);
  EXPECT_EQ(s.server->Shutdown(50), 1u) << "the inline request is abandoned, not waited for";
  s.h.gate.Open();  // the destructor joins the loop once its request returns
}

TEST_F(TcpInline, ASlowInlineRunSendsTheNextRequestsToWorkers) {
  s.h.slow = [this] { s.clock.Advance(kInlineSlowMicros + 1); };
  a.Call(kSlowOp, "slow, inline");
  EXPECT_EQ(s.inline_runs(), 2u);
  for (uint32_t i = 0; i < kInlinePauseRequests; ++i) a.Call(kEchoOp, "paused: to a worker");
  EXPECT_EQ(s.inline_runs(), 2u);
  a.Call(kEchoOp, "inline again");
  EXPECT_EQ(s.inline_runs(), 3u);
}

TEST(TcpTransport, ImmediateAndWorkerAnswersFromManyThreadsMatchTheirCalls) {
  Handler h;
  auto server = StartServer(h);
  auto channel = Connect(server->listeners()[0].address);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        std::string text = "thread " + std::to_string(t) + " call " + std::to_string(i);
        auto r = channel->Call(Echo((i + t) % 2 ? kNowOp : kEchoOp, text));
        if (!r.ok() || PayloadText(*r) != text) wrong.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(h.immediate_answers.load(), 0);
}

TEST(TcpTransport, AnImmediateAnswerDoesNotWaitForBusyWorkers) {
  Handler h;
  auto server = StartServer(h, {}, /*workers=*/1);
  const std::string addr = server->listeners()[0].address;
  auto busy = Connect(addr);
  // A call would time out (and the test fail) if it needed the one worker, held below.
  auto other = Connect(addr, /*request_timeout_ms=*/20'000);
  std::thread slow([&] { EXPECT_TRUE(busy->Call(Echo(kBlockOp, "slow")).ok()); });
  h.gate.AwaitWaiters(1);  // the only worker is blocked
  for (int i = 0; i < 3; ++i) {
    auto r = other->Call(Echo(kNowOp, "now " + std::to_string(i)));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(PayloadText(*r), "now " + std::to_string(i));
  }
  h.gate.Open();
  slow.join();
}

// A server whose kLaterOp requests are answered when the test calls Answer (as a save is by the
// journal's sync thread), and run on the loop when `async_on_loop` (invariant 12). Other ops
// echo.
struct LaterServer {
  explicit LaterServer(bool async_on_loop) {
    TcpServerOptions o;
    o.listen = {"127.0.0.1:0"};
    o.worker_threads = 2;
    o.immediate = [](Session&, const wire::Message&) { return std::optional<wire::Message>(); };
    if (async_on_loop) o.async_on_loop = [](const wire::Message& m) { return m.op == kLaterOp; };
    auto s = TcpServer::Start(
        [this](Session&, const wire::Message& request, Service::Respond respond) {
          if (request.op == static_cast<uint16_t>(wire::Op::kHello)) {
            wire::HelloResponse r;
            r.max_frame_bytes = wire::kDefaultMaxBodyBytes;
            return respond(r.Encode());
          }
          wire::Message echo;
          echo.op = request.op;
          echo.fields = request.fields;
          if (request.op != kLaterOp) return respond(std::move(echo));
          std::lock_guard<std::mutex> g(mu);
          started_must_not_block = MustNotBlock::Here();
          later = std::move(respond);
          later_echo = std::move(echo);
          cv.notify_all();
        },
        o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    server = std::move(s).value();
  }
  // Waits for a kLaterOp request to be started, then answers it (on this thread).
  void Answer() {
    Service::Respond respond;
    wire::Message echo;
    {
      std::unique_lock<std::mutex> g(mu);
      cv.wait(g, [&] { return later != nullptr; });
      respond = std::move(later);
      echo = std::move(later_echo);
      later = nullptr;
    }
    respond(std::move(echo));
  }
  void AwaitStarted() {
    std::unique_lock<std::mutex> g(mu);
    cv.wait(g, [&] { return later != nullptr; });
  }

  std::mutex mu;
  std::condition_variable cv;
  Service::Respond later;
  wire::Message later_echo;
  bool started_must_not_block = false;
  std::unique_ptr<TcpServer> server;
};

// Invariant 12: the request only starts on the loop (under MustNotBlock); the loop serves other
// connections while it waits for its answer, which a thread of the test gives later.
TEST(TcpTransport, AnAsyncRequestStartsOnTheLoopAndIsAnsweredLater) {
  LaterServer s(/*async_on_loop=*/true);
  const std::string addr = s.server->listeners()[0].address;
  auto first = Connect(addr);
  auto other = Connect(addr);
  std::thread call([&] {
    auto r = first->Call(Echo(kLaterOp, "later"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  });
  s.AwaitStarted();
  EXPECT_TRUE(s.started_must_not_block) << "it ran on a worker, or not under MustNotBlock";
  EXPECT_EQ(s.server->stats().requests_async_on_loop.load(), 1u);
  EXPECT_TRUE(other->Call(Echo(kEchoOp, "meanwhile")).ok());
  s.Answer();
  call.join();
}

// Invariant 13: answers given inside a batch by a thread outside any handler call are queued,
// and written by the loop when the batch ends.
TEST(TcpTransport, AnswersGivenInABatchAreWrittenByTheLoopWhenItEnds) {
  LaterServer s(/*async_on_loop=*/false);
  auto client = Connect(s.server->listeners()[0].address);
  std::thread call([&] {
    auto r = client->Call(Echo(kLaterOp, "later"));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  });
  {
    DeferScope batch;  // as the journal opens around a sync round's completions
    s.Answer();
    EXPECT_EQ(s.server->stats().answers_handed_to_loops.load(), 0u) << "before the batch ended";
  }
  call.join();
  EXPECT_EQ(s.server->stats().answers_handed_to_loops.load(), 1u);
  EXPECT_FALSE(s.started_must_not_block);
}

TEST(TcpTransport, PipelinedFramesBeyondTheImmediateBudgetAreAllAnsweredById) {
  Handler h;
  auto server = StartServer(h);
  int raw = RawConnect(server->listeners()[0].address);
  // Far more frames than one wake-up answers on the loop, in one write: the rest go to workers.
  constexpr int kFrames = 5 * static_cast<int>(kImmediatePerWakeup);
  std::vector<uint8_t> bytes;
  std::vector<std::string> texts;
  for (int i = 0; i < kFrames; ++i) texts.push_back("request " + std::to_string(i));
  for (int i = 0; i < kFrames; ++i) {
    wire::Message m = Echo(i % 3 ? kNowOp : kEchoOp, texts[i]);
    m.id = 1000 + static_cast<uint64_t>(i);
    ASSERT_NO_FATAL_FAILURE(AppendFrame(std::move(m), &bytes));
  }
  ASSERT_EQ(::send(raw, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  FrameReader r(1 << 20);
  std::vector<int> seen(kFrames, 0);
  for (int n = 0; n < kFrames; ++n) {
    auto m = RawReadFrame(raw, r);
    ASSERT_TRUE(m.has_value());
    ASSERT_GE(m->id, 1000u);
    const size_t i = m->id - 1000;
    ASSERT_LT(i, seen.size());
    ++seen[i];
    EXPECT_EQ(PayloadText(*m), texts[i]) << "the answer to request " << i;
    EXPECT_EQ(m->op, i % 3 ? kNowOp : kEchoOp);
  }
  for (int i = 0; i < kFrames; ++i) EXPECT_EQ(seen[i], 1) << "request " << i;
  EXPECT_GT(h.immediate_answers.load(), 0);
  ::close(raw);
}

TEST(TcpTransport, AClientThatDoesNotReadItsAnswersIsNoLongerRead) {
  Handler h;
  TcpServerOptions o;
  o.queued_response_bytes_max = 256 << 10;  // invariant 9
  auto server = StartServer(h, o);
  int raw = RawConnect(server->listeners()[0].address);
  // Answered on the loop, like the pings and refusals an anonymous peer can ask for.
  const std::string text(16 << 10, 'p');
  std::vector<uint8_t> frame;
  ASSERT_NO_FATAL_FAILURE(AppendFrame(Echo(kNowOp, text), &frame));
  // Sends frames without reading until the socket stays full. Without the bound the daemon
  // reads and answers forever, queueing every answer, and this never stops before the cap.
  constexpr uint64_t kSendCap = 256u << 20;
  uint64_t sent = 0;
  size_t offset = 0;  // into the frame being sent
  int frames_started = 0;
  for (int full_in_a_row = 0; full_in_a_row < 3 && sent < kSendCap;) {
    if (offset == 0) ++frames_started;
    ssize_t n = ::send(raw, frame.data() + offset, frame.size() - offset, MSG_DONTWAIT);
    if (n < 0) {
      ASSERT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK) << std::strerror(errno);
      if (offset == 0) --frames_started;
      ++full_in_a_row;
      RealClock()->SleepMicros(200'000);  // for the server to drain what it will
      continue;
    }
    full_in_a_row = 0;
    sent += static_cast<uint64_t>(n);
    offset = (offset + static_cast<size_t>(n)) % frame.size();
  }
  ASSERT_LT(sent, kSendCap) << "the server kept reading a client that reads nothing";
  EXPECT_GE(server->stats().backlog_pauses.load(), 1u);
  // Once the client reads, the server reads again: every request is answered exactly once.
  std::thread finish([&] {
    if (offset > 0) {
      ASSERT_EQ(::send(raw, frame.data() + offset, frame.size() - offset, 0),
                static_cast<ssize_t>(frame.size() - offset));
    }
  });
  FrameReader r(1 << 20);
  for (int i = 0; i < frames_started; ++i) {
    auto m = RawReadFrame(raw, r);
    ASSERT_TRUE(m.has_value()) << "answer " << i << " of " << frames_started;
    ASSERT_EQ(m->op, kNowOp);
    ASSERT_EQ(PayloadText(*m).size(), text.size());
  }
  finish.join();
  ::close(raw);
}

TEST(TcpTransport, AnUnansweredCallTimesOutAndTheReadingPassesToTheNextCaller) {
  Handler h;
  auto server = StartServer(h);
  auto channel = Connect(server->listeners()[0].address, /*request_timeout_ms=*/300);
  // The first call reads the socket for its own answer, which never comes in time.
  auto lost = channel->Call(Echo(kBlockOp, "never answered in time"));
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.status().code(), Code::kUnavailable) << lost.status().ToString();
  EXPECT_NE(lost.status().message().find("no response"), std::string::npos);
  // Several callers at once on the same connection: each gets its own answer, and the late
  // answer to the timed-out call is dropped by whoever reads it.
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        std::string text = std::to_string(t) + "/" + std::to_string(i);
        auto r = channel->Call(Echo(i % 2 ? kNowOp : kEchoOp, text));
        if (!r.ok() || PayloadText(*r) != text) wrong.fetch_add(1);
        if (t == 0 && i == 10) h.gate.Open();  // the late answer arrives among these
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(TcpTransport, TheChannelStartsNoThreadOfItsOwn) {
  Handler h;
  auto server = StartServer(h);
  auto count_threads = [] {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
      (void)e;
      ++n;
    }
    return n;
  };
  auto warm = Connect(server->listeners()[0].address);  // the server's threads are all up
  ASSERT_TRUE(warm->Call(Echo(kEchoOp, "warm")).ok());
  const int before = count_threads();
  auto channel = Connect(server->listeners()[0].address);
  auto r = channel->Call(Echo(kNowOp, "mine"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(PayloadText(*r), "mine");
  EXPECT_EQ(count_threads(), before) << "the caller read its own response";
}

TEST(TcpTransport, AFastResponseOvertakesASlowOneOnTheSameConnection) {
  Handler h;
  auto server = StartServer(h);
  auto channel = Connect(server->listeners()[0].address);
  std::atomic<bool> slow_done{false};
  std::thread slow([&] {
    auto r = channel->Call(Echo(kBlockOp, "slow"));
    EXPECT_TRUE(r.ok());
    slow_done = true;
  });
  h.gate.AwaitWaiters(1);  // the slow request is running in the handler
  auto fast = channel->Call(Echo(kEchoOp, "fast"));
  ASSERT_TRUE(fast.ok()) << fast.status().ToString();
  EXPECT_EQ(PayloadText(*fast), "fast");
  EXPECT_FALSE(slow_done.load()) << "the fast call did not wait behind the slow one";
  h.gate.Open();
  slow.join();
  EXPECT_TRUE(slow_done.load());
}

// Invariant 16: a connection's requests queued for the workers take turns with other
// connections' — another client's call waits for one of them, not for all.
TEST(TcpTransport, WorkersTakeConnectionsInTurn) {
  Handler h;
  TcpServerOptions o;
  o.idle_timeout_ms = 0;
  auto server = StartServer(h, o, /*workers=*/2);
  const std::string addr = server->listeners()[0].address;
  int hog = RawConnect(addr), other = RawConnect(addr);
  std::vector<uint8_t> bytes;
  for (uint64_t id = 1; id <= 6; ++id) {  // two hold the workers at the gate, four queue
    wire::Message m = Echo(kBlockOp, "");
    m.fields.assign({'h', static_cast<uint8_t>('0' + id)});
    m.id = id;
    ASSERT_NO_FATAL_FAILURE(AppendFrame(std::move(m), &bytes));
  }
  ASSERT_EQ(::send(hog, bytes.data(), bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(bytes.size()));
  h.gate.AwaitWaiters(2);
  wire::Message m = Echo(kEchoOp, "");
  m.fields.assign({'o'});
  m.id = 1;
  bytes.clear();
  ASSERT_NO_FATAL_FAILURE(AppendFrame(std::move(m), &bytes));
  ASSERT_EQ(::send(other, bytes.data(), bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(bytes.size()));
  while (server->stats().frames_in.load() < 7) std::this_thread::yield();  // all dispatched
  h.gate.Open();
  FrameReader r(1 << 20);
  ASSERT_TRUE(RawReadFrame(other, r).has_value());
  FrameReader hr(1 << 20);
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(RawReadFrame(hog, hr).has_value());
  std::lock_guard<std::mutex> g(h.calls_mu);
  ASSERT_EQ(h.calls.size(), 7u);
  const size_t at = std::find(h.calls.begin(), h.calls.end(), "o") - h.calls.begin();
  EXPECT_LE(at, 3u) << "the other connection's call waited for the queued ones: ran " << at + 1
                    << "th of 7";
  ::close(hog);
  ::close(other);
}

TEST(TcpTransport, ShutdownLetsARunningRequestFinishAndAnswersIt) {
  Handler h;
  auto server = StartServer(h);
  const std::string addr = server->listeners()[0].address;
  auto channel = Connect(addr);
  Result<wire::Message> slow = Status::Internal("not run");
  std::thread caller([&] { slow = channel->Call(Echo(kBlockOp, "in flight")); });
  h.gate.AwaitWaiters(1);
  size_t abandoned = 99;
  std::thread stopper([&] { abandoned = server->Shutdown(60'000); });
  // Once the listener is closed the server is draining; only then let the request finish.
  for (;;) {
    auto hp = ParseHostPort(addr, false);
    auto a = Resolve(*hp, false);
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool refused = ::connect(fd, a->front().get(), a->front().length) != 0;
    ::close(fd);
    if (refused) break;
    std::this_thread::yield();
  }
  h.gate.Open();
  stopper.join();
  caller.join();
  EXPECT_EQ(abandoned, 0u);
  ASSERT_TRUE(slow.ok()) << slow.status().ToString();
  EXPECT_EQ(PayloadText(*slow), "in flight");
}

// A connection closed with input it never read is reset by the kernel, which throws away what
// the daemon's send buffer still held for the client: here the answer of the request a shutdown
// let finish, lost because the client had sent one more frame after the drain began (a review,
// session 60). The unread input is dropped first, so the close is an orderly one.
TEST(TcpTransport, AnAnswerInTheSendBufferSurvivesACloseWithUnreadInput) {
  Handler h;
  TcpServerOptions o;
  o.idle_timeout_ms = 0;
  auto server = StartServer(h, o);
  const std::string addr = server->listeners()[0].address;
  int raw = RawConnect(addr);
  int small = 4096;  // the answer waits in the daemon's send buffer, not in ours
  ASSERT_EQ(::setsockopt(raw, SOL_SOCKET, SO_RCVBUF, &small, sizeof small), 0);
  const std::string big(1 << 20, 'B');  // Echo's payload is a view of it
  wire::Message slow = Echo(kBlockOp, big);
  slow.id = 7;
  std::vector<uint8_t> bytes;
  ASSERT_NO_FATAL_FAILURE(AppendFrame(std::move(slow), &bytes));
  ASSERT_EQ(::send(raw, bytes.data(), bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(bytes.size()));
  h.gate.AwaitWaiters(1);
  std::thread stopper([&] { EXPECT_EQ(server->Shutdown(60'000), 0u); });
  for (;;) {  // draining once the listener refuses
    int probe = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    auto a = Resolve(*ParseHostPort(addr, false), false);
    const bool refused = ::connect(probe, a->front().get(), a->front().length) != 0;
    ::close(probe);
    if (refused) break;
    std::this_thread::yield();
  }
  wire::Message more = Echo(kEchoOp, "one more");
  more.id = 8;
  std::vector<uint8_t> more_bytes;
  ASSERT_NO_FATAL_FAILURE(AppendFrame(std::move(more), &more_bytes));
  ASSERT_EQ(::send(raw, more_bytes.data(), more_bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(more_bytes.size()));
  h.gate.Open();  // the answer goes to the kernel at once; the close follows while it trickles
  FrameReader r(4 << 20);
  auto answer = RawReadFrame(raw, r);
  stopper.join();
  ASSERT_TRUE(answer.has_value()) << "the answer was lost to a reset";
  EXPECT_EQ(answer->id, 7u);
  EXPECT_EQ(PayloadText(*answer).size(), size_t{1} << 20);
  ::close(raw);
}

TEST(TcpTransport, ShutdownGivesUpOnRequestsPastTheBound) {
  Handler h;
  auto server = StartServer(h);
  auto channel = Connect(server->listeners()[0].address);
  Result<wire::Message> stuck = Status::Internal("not run");
  std::thread caller([&] { stuck = channel->Call(Echo(kBlockOp, "stuck")); });
  h.gate.AwaitWaiters(1);
  EXPECT_EQ(server->Shutdown(50), 1u);
  caller.join();
  EXPECT_EQ(stuck.status().code(), Code::kUnavailable) << stuck.status().ToString();
  h.gate.Open();  // lets the worker return so the server can be destroyed
}

TEST(TcpTransport, TheChannelReconnectsToARestartedServer) {
  Handler h1;
  auto server = StartServer(h1);
  const std::string addr = server->listeners()[0].address;
  auto channel = Connect(addr);
  ASSERT_TRUE(channel->Call(Echo(kEchoOp, "before")).ok());
  EXPECT_EQ(server->Shutdown(1000), 0u);
  server.reset();
  // The first call may still find the old connection (then: "lost the connection"); by the
  // second the channel knows and tries to reconnect.
  EXPECT_EQ(channel->Call(Echo(kEchoOp, "while down")).status().code(), Code::kUnavailable);
  auto down = channel->Call(Echo(kEchoOp, "while down"));
  EXPECT_EQ(down.status().code(), Code::kUnavailable);
  EXPECT_NE(down.status().message().find("is wombatkvd running"), std::string::npos)
      << down.status().ToString();

  Handler h2;
  TcpServerOptions o;
  o.listen = {addr};
  auto again = StartServer(h2, o);
  auto after = channel->Call(Echo(kEchoOp, "after"));
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(PayloadText(*after), "after");
  EXPECT_EQ(h2.hellos.load(), 1) << "the reconnect said Hello first";
}

TEST(TcpTransport, AnIdleChannelSendsItsNextCallOnAFreshConnectionAfterARestart) {
  Handler h1;
  auto server = StartServer(h1);
  const std::string addr = server->listeners()[0].address;
  auto channel = Connect(addr);
  ASSERT_TRUE(channel->Call(Echo(kEchoOp, "before")).ok());
  EXPECT_EQ(server->Shutdown(1000), 0u);  // closes the idle connection
  server.reset();
  Handler h2;
  TcpServerOptions o;
  o.listen = {addr};
  auto again = StartServer(h2, o);
  // Nobody reads an idle channel's socket, yet the call sees the old connection is closed
  // before sending, so it goes out (once) on a new one instead of failing.
  auto after = channel->Call(Echo(kEchoOp, "after"));
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(PayloadText(*after), "after");
}

TEST(TcpTransport, ARequestOverTheServersFrameLimitIsRefusedBeforeSending) {
  Handler h;
  h.advertised_max_frame = 64 << 10;
  TcpServerOptions o;
  o.max_frame_bytes = 64 << 10;
  auto server = StartServer(h, o);
  auto channel = Connect(server->listeners()[0].address);
  std::string big(100 << 10, 'b');
  auto r = channel->Call(Echo(kEchoOp, big));
  EXPECT_EQ(r.status().code(), Code::kResourceExhausted);  // as over shared memory
  EXPECT_NE(r.status().message().find("frame limit"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(server->stats().frames_in.load(), 1u) << "only the Hello reached the server";
  EXPECT_TRUE(channel->Call(Echo(kEchoOp, "small")).ok());
}

// Sends `bytes` of zero pages as one payload to a server whose frame limit is `limit` (and says
// so at Hello). The pages are mapped only as they are read: the call costs the server's copy.
Result<wire::Message> SinkZeroPages(uint32_t limit, size_t bytes) {
  Handler h;
  h.advertised_max_frame = limit;
  TcpServerOptions o;
  o.max_frame_bytes = limit;
  auto server = StartServer(h, o);
  auto channel = Connect(server->listeners()[0].address);
  void* memory =
      ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) return Status::ResourceExhausted("mmap of the test's payload failed");
  wire::Message m;
  m.op = kSinkOp;
  m.payloads = {BufferSlice{nullptr, static_cast<const uint8_t*>(memory), bytes}};
  auto r = channel->Call(std::move(m));
  ::munmap(memory, bytes);
  return r;
}

// A daemon whose --max-frame-bytes is above the default takes requests up to it: the client
// frames by the limit the daemon told it at Hello, not by the default (it once refused anything
// over 1 GiB before looking).
TEST(TcpTransport, ARequestOverTheDefaultFrameLimitGoesToADaemonThatAllowsIt) {
  auto r = SinkZeroPages(wire::kDefaultMaxBodyBytes + (4u << 20),
                         wire::kDefaultMaxBodyBytes + (1u << 20));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->op, kSinkOp);
}

// The default frame takes a raw tail at its limit with its message's head (a 1 GiB frame limit
// refused the largest sidecar over TCP alone, while embedded and shared memory took it).
TEST(TcpTransport, TheDefaultFrameLimitTakesASidecarAtItsLimit) {
  auto r = SinkZeroPages(wire::kDefaultMaxBodyBytes, limits::kSidecarBytesMax);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->op, kSinkOp);
}

// A socket on 127.0.0.1:`port` that never accepts: connects complete in the kernel and no Hello
// is ever answered (a daemon stopped with SIGSTOP, or its port taken over).
int SilentListenerOn(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  EXPECT_EQ(::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one), 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
  EXPECT_EQ(::listen(fd, 16), 0);
  return fd;
}

// The connections waiting in `fd`'s accept queue (accepted and closed).
int DrainAcceptQueue(int fd) {
  EXPECT_EQ(::fcntl(fd, F_SETFL, O_NONBLOCK), 0);
  int n = 0;
  for (int c; (c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) {
    ::close(c);
    ++n;
  }
  return n;
}

TEST(TcpTransport, AHelloWaitsNoLongerThanACallMay) {
  LoopbackListener silent;  // never accepts
  TcpClientOptions o;
  o.address = silent.address;
  o.connect_timeout_ms = 600'000;
  o.request_timeout_ms = 300;
  auto c = ConnectTcp(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kUnavailable) << c.status().ToString();
  EXPECT_NE(c.status().message().find("within 300 ms"), std::string::npos) << c.status().ToString();
}

// Calls that queue behind one reconnect to a daemon that stopped answering share its failure:
// each dialling again in turn made the last of N calls wait N Hello timeouts.
TEST(TcpTransport, CallsWaitingForOneReconnectShareItsFailure) {
  Handler h;
  auto server = StartServer(h);
  const std::string addr = server->listeners()[0].address;
  auto channel = Connect(addr, /*request_timeout_ms=*/500);
  ASSERT_TRUE(channel->Call(Echo(kEchoOp, "up")).ok());
  server.reset();
  const int silent =
      SilentListenerOn(static_cast<uint16_t>(std::stoi(addr.substr(addr.rfind(':') + 1))));
  constexpr int kThreads = 4;
  std::latch start(kThreads);
  std::atomic<int> unavailable{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      auto r = channel->Call(Echo(kEchoOp, "down"));
      if (!r.ok() && r.status().code() == Code::kUnavailable) ++unavailable;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(unavailable.load(), kThreads);
  // At most one dial: a call that found the old connection dead waits for the first dial and
  // shares its failure (one whose request had left fails without dialling).
  EXPECT_LE(DrainAcceptQueue(silent), 1) << "calls waiting for a reconnect each dialled again";
  ::close(silent);
}

TEST(TcpTransport, ATokenTooLongForAHelloIsRefusedBeforeConnecting) {
  TcpClientOptions o;
  o.address = "127.0.0.1:1";  // nothing is dialled
  o.auth_token = std::string(limits::kAuthTokenBytesMax + 1, 't');
  auto c = ConnectTcp(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kInvalidArgument);
  EXPECT_NE(c.status().message().find("at most 4096"), std::string::npos) << c.status().ToString();
}

TEST(TcpTransport, ConnectingToNothingSaysSo) {
  TcpClientOptions o;
  o.address = "127.0.0.1:1";  // privileged port nobody listens on in a test environment
  auto c = ConnectTcp(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kUnavailable);
  EXPECT_NE(c.status().message().find("tcp://127.0.0.1:1"), std::string::npos);
}

// WMBT_KV_TCP_ADDR pointing at something else (the daemon's --http port, another service): the
// error says that, not that a call may have taken effect.
TEST(TcpTransport, ConnectingToAServiceThatIsNotWombatkvdSaysSo) {
  LoopbackListener http;
  std::thread server([&] {
    int c = ::accept(http.fd, nullptr, nullptr);
    char hello[64];
    EXPECT_GT(::recv(c, hello, sizeof hello, 0), 0);  // then answers as an HTTP server would
    const char answer[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    EXPECT_GT(::send(c, answer, sizeof answer - 1, MSG_NOSIGNAL), 0);
    ::close(c);
  });
  TcpClientOptions o;
  o.address = http.address;
  auto c = ConnectTcp(o);
  server.join();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kUnavailable);
  const std::string& m = c.status().message();
  EXPECT_NE(m.find("accepted the connection but did not answer as wombatkvd"), std::string::npos)
      << m;
  EXPECT_NE(m.find("it begins \"HTTP\""), std::string::npos) << m;
  EXPECT_NE(m.find("not its --http port"), std::string::npos) << m;
  EXPECT_EQ(m.find("may or may not have taken effect"), std::string::npos) << m;

  LoopbackListener silent;  // accepts (the backlog) and never answers
  o.address = silent.address;
  o.connect_timeout_ms = 200;
  c = ConnectTcp(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kUnavailable);
  EXPECT_NE(c.status().message().find("did not complete the greeting (no response from wombatkvd"),
            std::string::npos)
      << c.status().ToString();
  EXPECT_NE(c.status().message().find("within 200 ms"), std::string::npos);
}

}  // namespace
}  // namespace wombatkv::tcp::tcp_test
