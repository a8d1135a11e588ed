// The shared-memory transport in one process: a ShmServer with the test handler, and channels
// attached to it through the real control socket and real memfd segments.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "base/defer_scope.h"
#include "base/thread_sleeps.h"
#include "object/pause_once.h"
#include "transport/shm/os.h"
#include "transport/shm/ring.h"
#include "transport/shm/shm_channel.h"
#include "transport/shm/shm_server.h"
#include "transport/shm/shm_test_handler.h"
#include "transport/shm/shm_test_util.h"

namespace wombatkv {
namespace {

using shm_test::FieldsText;
using shm_test::TextMessage;

constexpr uint64_t kWaitMicros = 20'000'000;  // a bound for waits on the server, never reached

class ShmTransport : public ::testing::Test {
 protected:
  void SetUp() override { StartServer(); }

  void StartServer(uint64_t area_bytes = 4 << 20, uint32_t release_count = 16384) {
    ShmServerOptions o;
    o.run_dir = dir_.path();
    o.prefix = "t";
    o.workers = 4;
    o.layout.request_area_bytes = area_bytes;
    o.layout.response_area_bytes = area_bytes;
    o.layout.release_count = release_count;
    server_ = std::make_unique<ShmServer>(ShmServer::Returning(shm_test::TestHandler), o);
    ASSERT_TRUE(server_->Start().ok());
  }

  ShmClientOptions ClientOptions() {
    ShmClientOptions o;
    o.run_dir = dir_.path();
    o.prefix = "t";
    return o;
  }
  std::unique_ptr<Channel> Connect() {
    auto c = ConnectShm(ClientOptions());
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }
  static wire::Message PayloadOfSize(size_t n) {
    return TextMessage(shm_test::kOpPayloadOfSize, std::to_string(n));
  }
  // Calls for payloads of `bytes`, keeping each response (a borrow), until one is refused or
  // `calls_max` were made; returns the refusal (OK if none).
  static Status BorrowUntilRefused(Channel& ch, size_t bytes, int calls_max,
                                   std::vector<wire::Message>* held) {
    for (int i = 0; i < calls_max; ++i) {
      auto r = ch.Call(PayloadOfSize(bytes));
      if (!r.ok()) return r.status();
      held->push_back(std::move(*r));
    }
    return Status::Ok();
  }
  bool WaitForSegments(uint64_t n) {
    return server_->WaitFor([n](const ShmServerStats& s) { return s.segments_live == n; },
                            kWaitMicros);
  }

  shm_test::TempRunDir dir_;
  std::unique_ptr<ShmServer> server_;
};

TEST_F(ShmTransport, EchoCarriesFieldsAndPayloadsThroughSharedMemory) {
  auto ch = Connect();
  ASSERT_TRUE(ch);
  EXPECT_EQ(ch->Describe(), "shm://t");
  std::string a(3000, 'a'), b = "bb";
  wire::Message m = TextMessage(shm_test::kOpEcho, "fields");
  m.payloads.push_back(BufferSlice{nullptr, reinterpret_cast<const uint8_t*>(a.data()), a.size()});
  m.payloads.push_back(BufferSlice{nullptr, reinterpret_cast<const uint8_t*>(b.data()), b.size()});
  auto r = ch->Call(std::move(m));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(FieldsText(*r), "fields");
  EXPECT_TRUE(r->flags & wire::kFlagResponse);
  ASSERT_EQ(r->payloads.size(), 2u);
  EXPECT_EQ(AsChars(r->payloads[0].view()), a);
  EXPECT_EQ(AsChars(r->payloads[1].view()), b);
  // The response payload is the daemon's copy in our shared mapping, kept alive by its slice.
  EXPECT_NE(r->payloads[0].data, reinterpret_cast<const uint8_t*>(a.data()));
  EXPECT_TRUE(r->payloads[0].owner);
}

// The client takes a slot of more payloads than a message may carry for a broken daemon and drops
// the attachment, failing every call in flight: the daemon answers with an error instead.
TEST_F(ShmTransport, AResponseOfTooManyPayloadsIsAnErrorAndTheAttachmentStays) {
  auto ch = Connect();
  ASSERT_TRUE(ch);
  auto ok = ch->Call(TextMessage(shm_test::kOpEmptyPayloads, "65536"));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->payloads.size(), 65536u);
  auto r = ch->Call(TextMessage(shm_test::kOpEmptyPayloads, "65537"));
  EXPECT_EQ(r.status().code(), Code::kResourceExhausted) << r.status().ToString();
  EXPECT_NE(r.status().message().find("at most 65536"), std::string::npos) << r.status().ToString();
  auto after = ch->Call(TextMessage(shm_test::kOpEcho, "still attached"));
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(FieldsText(*after), "still attached");
  EXPECT_EQ(ch->Describe(), "shm://t");
}

// A handler that throws (std::bad_alloc) is answered INTERNAL, as over TCP; the worker, the daemon
// and the attachment go on (it once ended the daemon, every client with it).
TEST_F(ShmTransport, AHandlerThatThrowsIsAnsweredAsAnInternalErrorAndTheDaemonGoesOn) {
  auto ch = Connect();
  ASSERT_NE(ch, nullptr);
  for (int i = 0; i < 8; ++i) {  // more than the workers: none of them is lost
    auto r = ch->Call(TextMessage(shm_test::kOpThrow, ""));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInternal) << r.status().ToString();
  }
  auto echo = ch->Call(TextMessage(shm_test::kOpEcho, "still here"));
  ASSERT_TRUE(echo.ok()) << echo.status().ToString();
}

TEST_F(ShmTransport, FieldsOfTenThousandKeysSpillBothWays) {
  auto ch = Connect();
  ASSERT_TRUE(ch);
  std::string keys(10000 * 32, '\0');
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = static_cast<char>(i * 31 + 7);
  auto r = ch->Call(TextMessage(shm_test::kOpEcho, keys));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(FieldsText(*r), keys);
}

TEST_F(ShmTransport, ManyThreadsPipelineAndEachGetsItsOwnResponse) {
  auto ch = Connect();
  ASSERT_TRUE(ch);
  constexpr int kThreads = 8, kCalls = 3000;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        const std::string text = std::to_string(t) + ":" + std::to_string(i);
        // Every 50th call spills, every 7th carries a payload: both paths interleave.
        std::string fields = i % 50 == 0 ? text + std::string(2000, '.') : text;
        wire::Message m = TextMessage(shm_test::kOpEcho, fields);
        if (i % 7 == 0)
          m.payloads.push_back(
              BufferSlice{nullptr, reinterpret_cast<const uint8_t*>(text.data()), text.size()});
        auto r = ch->Call(std::move(m));
        if (!r.ok() || FieldsText(*r) != fields ||
            (i % 7 == 0 && (r->payloads.size() != 1 || AsChars(r->payloads[0].view()) != text)))
          wrong++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GE(server_->Stats().requests, uint64_t{kThreads * kCalls});
}

TEST_F(ShmTransport, ReleasedBorrowsGiveTheirRegionBackToTheDaemon) {
  auto ch = Connect();
  ASSERT_TRUE(ch);
  // 200 MiB through a 4 MiB response area: only possible if every region comes back.
  for (int i = 0; i < 200; ++i) {
    auto r = ch->Call(PayloadOfSize(1 << 20));
    ASSERT_TRUE(r.ok()) << i << ": " << r.status().ToString();
    ASSERT_EQ(r->payloads[0].size, 1u << 20);
    ASSERT_EQ(r->payloads[0].data[27], 'b');
  }
}

TEST_F(ShmTransport, BorrowsHeldTooLongExhaustTheAreaWithAnErrorNamingTheSetting) {
  auto ch = Connect();
  ASSERT_TRUE(ch);
  std::vector<wire::Message> held;
  const Status failure = BorrowUntilRefused(*ch, 1 << 20, 8, &held);
  ASSERT_FALSE(failure.ok());
  EXPECT_EQ(failure.code(), Code::kResourceExhausted);
  EXPECT_NE(failure.message().find("WMBT_KV_SHM_DATA_BYTES"), std::string::npos) << failure.message();
  EXPECT_EQ(held.size(), 4u);  // 4 MiB area, 1 MiB regions
  EXPECT_EQ(server_->Stats().responses_too_large, 1u);
  held.pop_back();
  auto again = ch->Call(PayloadOfSize(1 << 20));
  EXPECT_TRUE(again.ok()) << again.status().ToString();
  // The daemon keeps serving small calls all along.
  EXPECT_TRUE(ch->Call(TextMessage(shm_test::kOpEcho, "x")).ok());
}

// The other bound on borrows: how many responses one client may hold at once (the release ring's
// size), whatever their bytes. Its error says so, not that the area is too small.
TEST_F(ShmTransport, TooManyBorrowsHeldAreRefusedNamingTheCountNotTheArea) {
  server_.reset();
  StartServer(4 << 20, /*release_count=*/8);
  auto ch = Connect();
  ASSERT_TRUE(ch);
  std::vector<wire::Message> held;
  const Status failure = BorrowUntilRefused(*ch, 10, 20, &held);
  ASSERT_FALSE(failure.ok());
  EXPECT_EQ(failure.code(), Code::kResourceExhausted);
  EXPECT_EQ(held.size(), 8u);
  EXPECT_NE(failure.message().find("holds 8 borrowed responses, the most one client may"),
            std::string::npos)
      << failure.message();
  EXPECT_EQ(failure.message().find("WMBT_KV_SHM_DATA_BYTES"), std::string::npos)
      << "raising the area would not help: " << failure.message();
  held.pop_back();
  EXPECT_TRUE(ch->Call(PayloadOfSize(10)).ok());
}

TEST_F(ShmTransport, ARequestLargerThanTheRequestAreaIsResourceExhausted) {
  auto ch = Connect();
  ASSERT_TRUE(ch);
  std::vector<uint8_t> big(5 << 20, 1);
  wire::Message m = TextMessage(shm_test::kOpEcho, "");
  m.payloads.push_back(BufferSlice{nullptr, big.data(), big.size()});
  auto r = ch->Call(std::move(m));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kResourceExhausted);
  EXPECT_NE(r.status().message().find("WMBT_KV_SHM_DATA_BYTES"), std::string::npos);
  EXPECT_TRUE(ch->Call(TextMessage(shm_test::kOpEcho, "still fine")).ok());
}

TEST_F(ShmTransport, ABorrowOutlivesItsChannelAndTheDaemon) {
  auto ch = Connect();
  ASSERT_TRUE(ch);
  auto r = ch->Call(PayloadOfSize(100000));
  ASSERT_TRUE(r.ok());
  BufferSlice kept = r->payloads[0];
  r = Status::NotFound("dropped");
  ch.reset();
  server_->Stop();
  server_.reset();
  EXPECT_EQ(kept.size, 100000u);
  EXPECT_EQ(kept.data[99999], static_cast<uint8_t>('a' + 99999 % 26));
}

TEST_F(ShmTransport, AClientThatDetachesLeavesNoSegmentOrRegionBehind) {
  auto ch = Connect();
  ASSERT_TRUE(ch);
  auto r = ch->Call(PayloadOfSize(1000));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(server_->Stats().clients, 1u);
  EXPECT_GE(server_->Stats().response_regions_live, 1u);
  ch.reset();  // the borrow in `r` is still held: the daemon frees it with the segment
  ASSERT_TRUE(WaitForSegments(0));
  const ShmServerStats s = server_->Stats();
  EXPECT_EQ(s.clients, 0u);
  EXPECT_EQ(s.detaches, 1u);
  EXPECT_EQ(s.response_regions_live, 0u);
  EXPECT_EQ(s.response_bytes_live, 0u);
  EXPECT_EQ(AsChars(r->payloads[0].view()).substr(0, 3), "abc");  // still mapped here
}

TEST_F(ShmTransport, StopMakesCallsUnavailableAndTheChannelReattachesToTheNextServer) {
  auto ch = Connect();
  ASSERT_TRUE(ch);
  ASSERT_TRUE(ch->Call(TextMessage(shm_test::kOpEcho, "1")).ok());
  server_->Stop();
  auto r = ch->Call(TextMessage(shm_test::kOpEcho, "2"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable) << r.status().ToString();
  StartServer();
  auto again = ch->Call(TextMessage(shm_test::kOpEcho, "3"));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(FieldsText(*again), "3");
}

TEST_F(ShmTransport, AStoppedServerLeavesNeitherItsSocketNorItsLockBehind) {
  const std::string sock = server_->socket_path(), lock = dir_.path() + "/wombatkv-t.lock";
  struct stat st {};
  ASSERT_EQ(::stat(lock.c_str(), &st), 0);
  server_->Stop();
  EXPECT_NE(::stat(sock.c_str(), &st), 0);
  EXPECT_NE(::stat(lock.c_str(), &st), 0) << "the lock file outlived its daemon";
  StartServer();  // and the prefix is free for the next one
  EXPECT_TRUE(Connect());
  EXPECT_EQ(::stat(lock.c_str(), &st), 0);
}

// A lock file removed from under a running server (a cleaner of /tmp) and made anew by another
// daemon is that daemon's: the stop leaves it.
TEST_F(ShmTransport, AStopLeavesALockFileThatIsNoLongerItsOwn) {
  const std::string lock = dir_.path() + "/wombatkv-t.lock";
  ASSERT_EQ(::unlink(lock.c_str()), 0);
  const int other = ::open(lock.c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(other, 0);
  ::close(other);
  server_->Stop();
  struct stat st {};
  EXPECT_EQ(::stat(lock.c_str(), &st), 0) << "deleted another daemon's lock file";
}

TEST_F(ShmTransport, NoDaemonIsUnavailableNamingHowToStartOne) {
  ShmClientOptions o = ClientOptions();
  o.prefix = "nobody-here";
  auto c = ConnectShm(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kUnavailable);
  EXPECT_NE(c.status().message().find("wombatkvd --prefix"), std::string::npos);
}

TEST_F(ShmTransport, BadPrefixesNeverBecomePaths) {
  for (const char* bad : {"", "..", "a/b", "x y", "../../etc"}) {
    ShmClientOptions o = ClientOptions();
    o.prefix = bad;
    EXPECT_EQ(ConnectShm(o).status().code(), Code::kInvalidArgument) << bad;
  }
}

TEST_F(ShmTransport, ASecondDaemonForTheSamePrefixIsRefused) {
  ShmServerOptions o;
  o.run_dir = dir_.path();
  o.prefix = "t";
  ShmServer second(ShmServer::Returning(shm_test::TestHandler), o);
  Status s = second.Start();
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("another wombatkvd"), std::string::npos) << s.ToString();
  EXPECT_TRUE(Connect());  // the first one still serves
}

TEST_F(ShmTransport, TheSocketOfADeadDaemonIsReplaced) {
  server_->Stop();
  // What a SIGKILLed daemon leaves: a socket file nobody listens on.
  const std::string path = dir_.path() + "/wombatkv-t.sock";
  int s = ::socket(AF_UNIX, SOCK_SEQPACKET, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strcpy(a.sun_path, path.c_str());
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ::close(s);
  StartServer();
  EXPECT_TRUE(Connect());
}

// SPEC §10: the socket, its lock and every segment are 0600; the segment cannot be resized by the
// client (sealed), so the daemon can never be made to fault on it.
TEST_F(ShmTransport, SocketLockAndSegmentAre0600AndTheSegmentIsSealed) {
  struct stat st {};
  ASSERT_EQ(::stat(server_->socket_path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir_.path() + "/wombatkv-t.lock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  auto sock = shm::ConnectControlSocket(server_->socket_path());
  ASSERT_TRUE(sock.ok());
  shm::AttachReply reply{};
  shm::Fd seg;
  auto n = shm::ReceiveWithFd(sock->get(), &reply, sizeof reply, &seg);
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(reply.code, 0u);
  ASSERT_TRUE(seg.valid());
  ASSERT_EQ(::fstat(seg.get(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), reply.segment_bytes);
  EXPECT_NE(::ftruncate(seg.get(), 4096), 0);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(::ftruncate(seg.get(), st.st_size * 2), 0);
}

// A client that writes garbage into its ring gets an error back (or is disconnected when its
// counters make no sense); the daemon keeps serving everyone else.
TEST_F(ShmTransport, MalformedSlotsAreAnsweredWithAnErrorAndBadCountersDisconnect) {
  auto good = Connect();
  ASSERT_TRUE(good);

  auto sock = shm::ConnectControlSocket(server_->socket_path());
  ASSERT_TRUE(sock.ok());
  shm::AttachReply reply{};
  shm::Fd fd;
  ASSERT_TRUE(shm::ReceiveWithFd(sock->get(), &reply, sizeof reply, &fd).ok());
  auto map = shm::Mapping::Map(fd.get(), reply.segment_bytes);
  ASSERT_TRUE(map.ok());
  auto layout = shm::ReadLayout((*map)->base(), (*map)->bytes());
  ASSERT_TRUE(layout.ok());
  uint8_t* base = (*map)->base();
  shm::Ring req(reinterpret_cast<shm::RingControl*>(base + layout->request_ring_control),
                base + layout->request_slots, layout->params.slot_count,
                layout->params.slot_bytes);
  shm::Ring resp(reinterpret_cast<shm::RingControl*>(base + layout->response_ring_control),
                 base + layout->response_slots, layout->params.slot_count,
                 layout->params.slot_bytes);

  // A slot whose payload points far outside the request area.
  shm::SlotHeader h{};
  h.id = 5;
  h.op = shm_test::kOpEcho;
  h.kind = static_cast<uint8_t>(shm::SlotKind::kMessage);
  h.payload_count = 1;
  shm::PayloadRef far{1ull << 50, 16};
  std::memcpy(req.slot(0), &h, sizeof h);
  std::memcpy(req.slot(0) + sizeof h, &far, sizeof far);
  req.tail().store(1);
  const char bell = 1;
  ASSERT_EQ(::send(sock->get(), &bell, 1, 0), 1);
  // Wait for the answer without a clock: the daemon answers within microseconds.
  for (uint64_t spins = 0; resp.tail().load() == 0 && spins < 2'000'000'000ull; ++spins)
    shm::CpuRelax();
  ASSERT_EQ(resp.tail().load(), 1u);
  auto answer = shm::ReadSlot(resp.slot(0), resp.slot_bytes(), base + layout->response_area,
                              layout->params.response_area_bytes);
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->header.id, 5u);
  EXPECT_EQ(answer->error.code(), Code::kInvalidArgument);
  EXPECT_NE(answer->error.message().find("outside the data area"), std::string::npos);
  EXPECT_EQ(server_->Stats().protocol_errors, 1u);

  // A tail that claims more requests than the ring holds: disconnected.
  req.tail().store(1 + 10 * layout->params.slot_count);
  ASSERT_EQ(::send(sock->get(), &bell, 1, 0), 1);
  ASSERT_TRUE(server_->WaitFor([](const ShmServerStats& s) { return s.detaches == 1; },
                               kWaitMicros));
  // Hung up on: end of stream, or ECONNRESET when the daemon closed with doorbell bytes unread.
  char buf[8];
  const ssize_t got = ::recv(sock->get(), buf, sizeof buf, 0);
  EXPECT_TRUE(got == 0 || (got < 0 && errno == ECONNRESET)) << got << " " << std::strerror(errno);

  auto r = good->Call(TextMessage(shm_test::kOpEcho, "unaffected"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(FieldsText(*r), "unaffected");
}

// A bounded shutdown: the running request is abandoned (its client told Unavailable), the server
// reports it, and the worker left inside the handler can still finish safely later.
TEST(ShmServerShutdown, ARequestRunningPastTheBoundIsAbandonedAndReported) {
  shm_test::TempRunDir dir;
  std::promise<void> release, entered;
  std::shared_future<void> released = release.get_future().share();
  auto server = std::make_unique<ShmServer>(
      ShmServer::Returning([released, &entered](Session& s, const wire::Message& m) {
        if (m.op == shm_test::kOpBlock) {
          entered.set_value();
          released.wait();
        }
        return shm_test::TestHandler(s, m.op == shm_test::kOpBlock
                                            ? TextMessage(shm_test::kOpEcho, "late")
                                            : m);
      }),
      ShmServerOptions{.prefix = "s", .run_dir = dir.path(), .workers = 2});
  ASSERT_TRUE(server->Start().ok());
  auto ch = ConnectShm(ShmClientOptions{.prefix = "s", .run_dir = dir.path()});
  ASSERT_TRUE(ch.ok());
  Status blocked;
  std::thread caller([&] { blocked = (*ch)->Call(TextMessage(shm_test::kOpBlock, "")).status(); });
  entered.get_future().wait();  // the call is inside the handler
  EXPECT_EQ(server->Shutdown(1000), 1u);
  caller.join();
  EXPECT_EQ(blocked.code(), Code::kUnavailable);
  release.set_value();  // the abandoned worker finishes into a closed connection
  server.reset();
}

// A daemon that hangs up takes nothing more from its clients' rings, so a call it never took is
// known not to have taken effect: the client says so (and sends it once more, on a new
// attachment), where a call the daemon did take may or may not have taken effect.
TEST(ShmServerShutdown, ACallTheDaemonNeverTookIsSaidNotToHaveTakenEffect) {
  shm_test::TempRunDir dir;
  std::promise<void> release, entered;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> echoes{0};
  auto server = std::make_unique<ShmServer>(
      ShmServer::Returning([&, released](Session& s, const wire::Message& m) {
        if (m.op == shm_test::kOpBlock) {
          entered.set_value();
          released.wait();
        }
        if (m.op == shm_test::kOpEcho) echoes++;
        return shm_test::TestHandler(
            s, m.op == shm_test::kOpBlock ? TextMessage(shm_test::kOpEcho, "late") : m);
      }),
      ShmServerOptions{.prefix = "n", .run_dir = dir.path(), .workers = 1});
  ASSERT_TRUE(server->Start().ok());
  auto ch = ConnectShm(ShmClientOptions{.prefix = "n", .run_dir = dir.path()});
  ASSERT_TRUE(ch.ok()) << ch.status().ToString();
  auto blocked = std::async(std::launch::async,
                            [&] { return (*ch)->Call(TextMessage(shm_test::kOpBlock, "")); });
  entered.get_future().wait();  // the only worker is inside the handler
  // Waits in the ring behind it (or, if slower than the stop, never gets there: the same).
  auto queued = std::async(std::launch::async,
                           [&] { return (*ch)->Call(TextMessage(shm_test::kOpEcho, "q")); });
  RealClock()->SleepMicros(50'000);
  EXPECT_EQ(server->Shutdown(1000), 1u);  // the blocked call is abandoned; everyone hung up on
  auto q = queued.get();
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), Code::kUnavailable);
  EXPECT_NE(q.status().message().find("before taking the call; it did not take effect"),
            std::string::npos)
      << q.status().message();
  EXPECT_NE(q.status().message().find("attaching again"), std::string::npos)
      << "not sent again: " << q.status().message();
  auto b = blocked.get();
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("may or may not have taken effect"), std::string::npos)
      << "a call the daemon took: " << b.status().message();
  release.set_value();  // the abandoned worker finishes into a closed connection
  server.reset();
  EXPECT_EQ(echoes.load(), 0);
}

// A request a worker takes as a stop begins counts as running from the moment it is taken, so
// the stop waits for its answer — given later from another thread, as a save's is — instead of
// returning (and letting the daemon free the server) with that answer still to come.
TEST(ShmServerShutdown, ARequestTakenAsTheStopBeginsIsAnsweredBeforeTheStopReturns) {
  shm_test::TempRunDir dir;
  std::atomic<bool> armed{false};
  PauseOnce taken;
  std::mutex mu;
  std::condition_variable handled;
  Service::Respond held;  // GUARDED_BY(mu)
  ShmServerOptions options{.prefix = "t", .run_dir = dir.path(), .workers = 2};
  options.on_taken = [&] {
    if (armed.load()) taken.Hold();
  };
  auto server = std::make_unique<ShmServer>(
      [&](Session& s, const wire::Message& m, Service::Respond respond) {
        if (m.op != shm_test::kOpEcho) return respond(shm_test::TestHandler(s, m));  // attaching
        std::lock_guard<std::mutex> lk(mu);
        held = std::move(respond);
        handled.notify_all();
      },
      options);
  ASSERT_TRUE(server->Start().ok());
  auto ch = ConnectShm(ShmClientOptions{.prefix = "t", .run_dir = dir.path()});
  ASSERT_TRUE(ch.ok()) << ch.status().ToString();
  armed = true;
  auto call = std::async(std::launch::async,
                         [&] { return (*ch)->Call(TextMessage(shm_test::kOpEcho, "answered")); });
  taken.AwaitHeld();  // a worker took the call off the ring and has not served it yet
  EXPECT_EQ(server->Stats().requests_running, 1u) << "a taken request counts as running";
  auto stop = std::async(std::launch::async, [&] { return server->Shutdown(kWaitMicros); });
  taken.Release();
  {
    std::unique_lock<std::mutex> lk(mu);
    ASSERT_TRUE(handled.wait_for(lk, std::chrono::microseconds(kWaitMicros),
                                 [&] { return held != nullptr; }));
    held(TextMessage(shm_test::kOpEcho, "answered"));
    held = nullptr;
  }
  auto r = call.get();
  ASSERT_TRUE(r.ok()) << "the stop hung up before the answer: " << r.status().ToString();
  EXPECT_EQ(FieldsText(*r), "answered");
  EXPECT_EQ(stop.get(), 0u);
}

// The real clock, moved ahead by Advance: a handler "takes" as long as the test says.
class AdvancedClock final : public Clock {
 public:
  uint64_t NowMicros() override { return RealClock()->NowMicros() + ahead_.load(); }
  uint64_t WallMicros() override { return RealClock()->WallMicros() + ahead_.load(); }
  void SleepMicros(uint64_t micros) override { RealClock()->SleepMicros(micros); }
  bool WaitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
               uint64_t micros) override {
    return RealClock()->WaitFor(cv, lock, micros);
  }
  void Advance(uint64_t micros) { ahead_ += micros; }

 private:
  std::atomic<uint64_t> ahead_{0};
};

// A handler for kOpBlock calls that stay inside until released; other ops go to TestHandler.
class BlockingCalls {
 public:
  // Releases the calls and joins their callers at scope end, so a failed ASSERT cannot hang:
  // declare one after the server and the channels the calls use.
  struct ReleaseAtExit {
    BlockingCalls& calls;
    ~ReleaseAtExit() { calls.ReleaseAll(); }
  };

  ShmServer::Handler Handler(std::function<void(const wire::Message&)> before = nullptr) {
    return ShmServer::Returning([this, before](Session& s, const wire::Message& m) {
      if (before) before(m);
      if (m.op != shm_test::kOpBlock) return shm_test::TestHandler(s, m);
      std::unique_lock<std::mutex> lk(mu_);
      inside_++;
      cv_.notify_all();
      cv_.wait(lk, [&] { return released_; });
      return shm_test::TestHandler(s, TextMessage(shm_test::kOpEcho, "done"));
    });
  }
  // Calls kOpBlock on `ch` from a new thread.
  void Start(Channel& ch) {
    threads_.emplace_back(
        [&ch] { EXPECT_TRUE(ch.Call(TextMessage(shm_test::kOpBlock, "")).ok()); });
  }
  bool AwaitInside(int calls) {
    std::unique_lock<std::mutex> lk(mu_);
    return cv_.wait_for(lk, std::chrono::microseconds(kWaitMicros),
                        [&] { return inside_ == calls; });
  }
  // Lets every call inside finish and joins their callers; later calls block again.
  void ReleaseAll() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      released_ = true;
      cv_.notify_all();
    }
    for (auto& t : threads_) t.join();
    threads_.clear();
    std::lock_guard<std::mutex> lk(mu_);
    released_ = false;
    inside_ = 0;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int inside_ = 0;
  bool released_ = false;
  std::vector<std::thread> threads_;
};

bool WaitForIdleWorkers(ShmServer& server, uint64_t idle) {
  return server.WaitFor([&](const ShmServerStats& st) { return st.workers_idle == idle; },
                        kWaitMicros);
}

// docs/shm.md, "Wake-ups": a worker out of requests spins for the next one, except while other
// requests run and requests are slow (durable saves): then it sleeps and leaves the cores to the
// clients.
TEST(ShmServerWorkers, AWorkerSleepsInsteadOfSpinningWhileOthersAreServedSlowly) {
  constexpr uint16_t kOpSlow = 200;  // takes 1 ms on the server's clock
  constexpr uint64_t kWorkers = 3;
  shm_test::TempRunDir dir;
  AdvancedClock clock;
  BlockingCalls blocking;
  ShmServer server(blocking.Handler([&](const wire::Message& m) {
                     if (m.op == kOpSlow) clock.Advance(1000);
                   }),
                   ShmServerOptions{.prefix = "s", .run_dir = dir.path(), .workers = kWorkers,
                                    .clock = &clock});
  ASSERT_TRUE(server.Start().ok());
  auto a = ConnectShm(ShmClientOptions{.prefix = "s", .run_dir = dir.path()});
  auto b = ConnectShm(ShmClientOptions{.prefix = "s", .run_dir = dir.path()});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  BlockingCalls::ReleaseAtExit release{blocking};
  for (int i = 0; i < 8; ++i) ASSERT_TRUE((*a)->Call(TextMessage(kOpSlow, "")).ok());

  // A's next call stays in its handler; B's call is served meanwhile.
  blocking.Start(**a);
  ASSERT_TRUE(blocking.AwaitInside(1));
  ASSERT_TRUE(WaitForIdleWorkers(server, kWorkers - 1));
  uint64_t spins = server.Stats().idle_spins;
  ASSERT_TRUE((*b)->Call(TextMessage(shm_test::kOpEcho, "fast")).ok());
  ASSERT_TRUE(WaitForIdleWorkers(server, kWorkers - 1));
  EXPECT_EQ(server.Stats().idle_spins, spins) << "a worker spun while a slow request ran";

  // Nothing else running: the worker that served B spins for B's next call.
  blocking.ReleaseAll();
  ASSERT_TRUE(WaitForIdleWorkers(server, kWorkers));
  spins = server.Stats().idle_spins;
  ASSERT_TRUE((*b)->Call(TextMessage(shm_test::kOpEcho, "fast")).ok());
  ASSERT_TRUE(WaitForIdleWorkers(server, kWorkers));
  EXPECT_GE(server.Stats().idle_spins, spins + 1) << "no worker spun with the cores free";
}

// docs/shm.md, "Wake-ups": a call whose answer waits for a disk sync (here a handler that takes
// 300 µs) is soon caught by the receiver's poll instead of a futex sleep and the wake-up after
// it: that poll learns from whole waits (base/spin_poll.h, kSyncWaitSpin). It stops when
// another task wants the core, so on a loaded machine fewer calls go without a sleep: the test
// wants 50 within 10,000 calls (once, under a full ctest run, 2,000 were not enough). Without
// the poll 4 of 2,000 did (the short spin catches a rare one), so about 20 of 10,000: the
// bound still fails a client that does not poll.
TEST(ShmClientWaits, ACallThatAwaitsADiskSyncIsCaughtWithoutSleeping) {
  constexpr auto kOpSync = static_cast<uint16_t>(wire::Op::kSaveChain);
  shm_test::TempRunDir dir;
  ShmServer server(ShmServer::Returning([](Session& s, const wire::Message& m) {
                     if (m.op != kOpSync) return shm_test::TestHandler(s, m);
                     RealClock()->SleepMicros(300);
                     wire::Message out = TextMessage(kOpSync, FieldsText(m));
                     out.flags = wire::kFlagResponse;
                     return out;
                   }),
                   ShmServerOptions{.prefix = "w", .run_dir = dir.path(), .workers = 2});
  std::optional<CpuPin> server_core(std::in_place, 1);
  if (!server_core->pinned()) GTEST_SKIP() << "needs two CPUs: one for the server, one to poll";
  ASSERT_TRUE(server.Start().ok());
  server_core.reset();
  std::optional<CpuPin> client_core(std::in_place, 0);
  ASSERT_TRUE(client_core->pinned());
  auto c = ConnectShm(ShmClientOptions{.prefix = "w", .run_dir = dir.path()});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE(ThreadSleepsAreCounted(*RealClock()));
  int calls = 0;
  const int sleepless = CallsWithoutSleep(10000, 50, &calls, [&] {
    auto r = (*c)->Call(TextMessage(kOpSync, "save"));
    EXPECT_TRUE(r.ok() && FieldsText(*r) == "save") << r.status().ToString();
    return r.ok();
  });
  EXPECT_EQ(sleepless, 50) << "of " << calls << " calls";
  client_core.reset();

  // WMBT_KV_CLIENT_POLL=0: the calls sleep.
  auto quiet = ConnectShm(ShmClientOptions{.prefix = "w", .run_dir = dir.path(), .poll = false});
  ASSERT_TRUE(quiet.ok()) << quiet.status().ToString();
  // A call can still miss its sleep when its thread is preempted until the answer is there
  // (ctest runs two tests at once): a few, not the dozens a poll catches.
  EXPECT_LE(CallsWithoutSleep(20, 20, &calls, [&] {
              return (*quiet)->Call(TextMessage(kOpSync, "save")).ok();
            }),
            2);
  EXPECT_EQ(calls, 20);
}

// R3 (docs/shm.md, "Wake-ups"): a client that finds its doorbell disarmed relies on a worker to
// scan. When the only awake worker takes a request whose handler blocks, the client's next
// request must still be served: not wait for that handler.
TEST(ShmServerWorkers, ACallIsServedWhileTheLastAwakeWorkerBlocksInAHandler) {
  constexpr uint64_t kWorkers = 3;
  shm_test::TempRunDir dir;
  BlockingCalls blocking;
  // Echoes are answered as immediate (they cannot block), like the daemon's cache hits.
  ShmServer server(
      blocking.Handler(),
      ShmServerOptions{.prefix = "s", .run_dir = dir.path(), .workers = kWorkers},
      [](Session& s, const wire::Message& m) -> std::optional<wire::Message> {
        if (m.op != shm_test::kOpEcho) return std::nullopt;
        return shm_test::TestHandler(s, m);
      });
  ASSERT_TRUE(server.Start().ok());
  auto ch = ConnectShm(ShmClientOptions{.prefix = "s", .run_dir = dir.path()});
  ASSERT_TRUE(ch.ok()) << ch.status().ToString();
  BlockingCalls::ReleaseAtExit release{blocking};
  // With every worker asleep, the blocking call rings (which disarms this client's doorbell) and
  // the one worker woken takes it. A worker still on its way to sleep may take it first (no
  // doorbell rung): then the scenario did not happen, and it is tried again, a little later
  // each time (workers_idle counts a worker about to sleep: on a loaded machine, retrying at
  // once could meet that window every time; a CI run once failed all 50 tries in 24 ms).
  bool rang = false;
  for (int attempt = 0; attempt < 50 && !rang; ++attempt) {
    ASSERT_TRUE(WaitForIdleWorkers(server, kWorkers));
    RealClock()->SleepMicros(200 * static_cast<uint64_t>(attempt));
    const uint64_t doorbells = server.Stats().doorbells;
    blocking.Start(**ch);
    ASSERT_TRUE(blocking.AwaitInside(1));
    rang = server.Stats().doorbells == doorbells + 1;
    if (!rang) blocking.ReleaseAll();
  }
  ASSERT_TRUE(rang) << "the blocking call never rang the doorbell";
  auto call = std::async(std::launch::async, [&] {
    return (*ch)->Call(TextMessage(shm_test::kOpEcho, "meanwhile")).ok();
  });
  const bool served = call.wait_for(std::chrono::microseconds(kWaitMicros)) ==
                      std::future_status::ready;
  blocking.ReleaseAll();  // lets a call that waited for the handler finish
  EXPECT_TRUE(call.get());
  EXPECT_TRUE(served) << "the call waited for the blocked handler";
}

// True once thread `tid` of this process sleeps (state S: a client waiting on its futex).
bool AwaitSleeping(pid_t tid) {
  const std::string path = "/proc/self/task/" + std::to_string(tid) + "/stat";
  for (uint64_t waited = 0; waited < kWaitMicros; waited += 1000) {
    std::ifstream in(path);
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t end_of_name = stat.rfind(')');
    if (end_of_name != std::string::npos && stat.compare(end_of_name, 3, ") S") == 0) return true;
    RealClock()->SleepMicros(1000);
  }
  return false;
}

// docs/shm.md, "Wake-ups": a thread that answers a batch of requests off the pool (the journal's
// leader completing a sync round's saves) does not wake the sleeping clients itself: at the end
// of the batch it hands their wake-ups to one idle worker — and they are woken.
TEST(ShmServerWorkers, ABatchOfAnswersHandsItsClientsWakeUpsToAWorker) {
  constexpr uint64_t kWorkers = 2;
  constexpr int kClients = 3;
  shm_test::TempRunDir dir;
  std::mutex mu;
  std::condition_variable arrived;
  std::vector<std::pair<wire::Message, Service::Respond>> held;  // GUARDED_BY(mu)
  ShmServer server(
      [&](Session& s, const wire::Message& m, Service::Respond respond) {
        if (m.op != shm_test::kOpEcho) return respond(shm_test::TestHandler(s, m));  // attaching
        std::lock_guard<std::mutex> lk(mu);
        held.emplace_back(m, std::move(respond));
        arrived.notify_all();
      },
      ShmServerOptions{.prefix = "h", .run_dir = dir.path(), .workers = kWorkers});
  ASSERT_TRUE(server.Start().ok());
  std::vector<std::unique_ptr<Channel>> channels;
  for (int i = 0; i < kClients; ++i) {
    // No poll: a waiting caller sleeps at once, so each answer has a client to wake.
    auto ch = ConnectShm(ShmClientOptions{.prefix = "h", .run_dir = dir.path(), .poll = false});
    ASSERT_TRUE(ch.ok()) << ch.status().ToString();
    channels.push_back(std::move(ch).value());
  }
  std::vector<std::atomic<pid_t>> callers(kClients);
  std::vector<std::future<bool>> calls;
  for (int i = 0; i < kClients; ++i) {
    calls.push_back(std::async(std::launch::async, [&, i] {
      callers[i] = ::gettid();
      auto r = channels[i]->Call(TextMessage(shm_test::kOpEcho, "call " + std::to_string(i)));
      return r.ok() && FieldsText(*r) == "call " + std::to_string(i);
    }));
  }
  auto answer_all = [&] {
    std::lock_guard<std::mutex> lk(mu);
    for (auto& [m, respond] : held) {
      if (!respond) continue;
      respond(TextMessage(m.op, FieldsText(m)));
      respond = nullptr;
    }
  };
  // Whatever fails below, no caller is left waiting: what is held is answered, and the server
  // hangs up (it wakes everyone) before the calls are waited for.
  struct AtExit {
    std::function<void()> fn;
    ~AtExit() { fn(); }
  } release{[&] {
    answer_all();
    server.Shutdown(kWaitMicros);
  }};
  {
    std::unique_lock<std::mutex> lk(mu);
    ASSERT_TRUE(arrived.wait_for(lk, std::chrono::microseconds(kWaitMicros),
                                 [&] { return held.size() == kClients; }))
        << "the calls never reached the handler";
  }
  ASSERT_TRUE(WaitForIdleWorkers(server, kWorkers));
  for (int i = 0; i < kClients; ++i) {
    while (callers[i].load() == 0) std::this_thread::yield();
    ASSERT_TRUE(AwaitSleeping(callers[i].load())) << "caller " << i << " never slept";
  }
  {
    // As the journal runs a round's completions (Journal::RunCovered): the answers come from
    // what the round's scope runs as it closes (the round's L1 write), inside an outer scope.
    DeferScope after_round;
    DeferScope round;
    DeferScope::Defer(answer_all);
  }
  for (int i = 0; i < kClients; ++i) {
    ASSERT_EQ(calls[i].wait_for(std::chrono::microseconds(kWaitMicros)),
              std::future_status::ready)
        << "caller " << i << " was never woken";
    EXPECT_TRUE(calls[i].get()) << "caller " << i;
  }
  EXPECT_EQ(server.Stats().wakes_handed, uint64_t{kClients});
}

// A stopped daemon may still accept the connection: a call that attaches again first must not
// wait for it longer than the request timeout the engine chose (WMBT_KV_REQUEST_TIMEOUT_MS).
TEST(ShmClientOptions, AnAttachWaitsNoLongerThanACall) {
  ShmClientOptions o;
  EXPECT_EQ(AttachTimeoutMs(o), 5000u);
  o.request_timeout_ms = 100;
  EXPECT_EQ(AttachTimeoutMs(o), 100u);
  o.request_timeout_ms = 0;  // calls wait for ever; an attach still gives up
  EXPECT_EQ(AttachTimeoutMs(o), 5000u);
}

}  // namespace
}  // namespace wombatkv
