// The shared-memory transport across real processes (shm_test_peer): a client SIGKILLed while
// holding borrows, a daemon SIGKILLed under a waiting client, other users kept out, and the
// members of a configured group (WMBT_KV_SHM_GROUP) let in.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <thread>

#include "transport/shm/shm_channel.h"
#include "transport/shm/shm_server.h"
#include "transport/shm/shm_test_handler.h"
#include "transport/shm/shm_test_util.h"
#include "wombatkv/env.h"

namespace wombatkv {
namespace {

using shm_test::Peer;
using shm_test::TextMessage;

constexpr uint64_t kWaitMicros = 20'000'000;
constexpr uid_t kNobody = 65534;
// A group for WMBT_KV_SHM_GROUP given by number: it needs no entry in /etc/group.
constexpr gid_t kTeam = 4242;

ShmServerOptions ServerOptions(const std::string& dir) {
  ShmServerOptions o;
  o.run_dir = dir;
  o.prefix = "p";
  o.workers = 2;
  o.layout.request_area_bytes = o.layout.response_area_bytes = 8 << 20;
  return o;
}

ShmClientOptions ClientOptions(const std::string& dir) {
  ShmClientOptions o;
  o.run_dir = dir;
  o.prefix = "p";
  return o;
}

// Two clients each hold a borrowed 100,000-byte payload; one is SIGKILLed (no chance to release
// anything). `held` counts what the daemon keeps for the clients' borrows.
void KillOneOfTwoHolders(ShmServer& server, const std::string& dir,
                         uint64_t (*held)(const ShmServerStats&)) {
  {
    Peer a({"hold", dir, "p"});
    Peer b({"hold", dir, "p"});
    ASSERT_EQ(a.ReadLine(), "holding");
    ASSERT_EQ(b.ReadLine(), "holding");
    ShmServerStats s = server.Stats();
    EXPECT_EQ(s.clients, 2u);
    EXPECT_EQ(s.segments_live, 2u);
    EXPECT_EQ(held(s), 2u);
    a.Kill();
    ASSERT_TRUE(server.WaitFor(
        [](const ShmServerStats& st) { return st.segments_live == 1 && st.clients == 1; },
        kWaitMicros));
    s = server.Stats();
    EXPECT_EQ(held(s), 1u);  // b's borrow is untouched
    EXPECT_EQ(s.detaches, 1u);
  }  // b is killed too
  ASSERT_TRUE(server.WaitFor([](const ShmServerStats& st) { return st.segments_live == 0; },
                             kWaitMicros));
  EXPECT_EQ(held(server.Stats()), 0u);
  EXPECT_EQ(server.Stats().response_bytes_live, 0u);
  // And the daemon serves the next client as if nothing happened.
  auto ch = ConnectShm(ClientOptions(dir));
  ASSERT_TRUE(ch.ok());
  EXPECT_TRUE((*ch)->Call(TextMessage(shm_test::kOpEcho, "next")).ok());
}

TEST(ShmProcess, ASigkilledClientHoldingBorrowsLosesItsSegmentAndRegions) {
  shm_test::TempRunDir dir;
  ShmServer server(ShmServer::Returning(shm_test::TestHandler), ServerOptions(dir.path()));
  ASSERT_TRUE(server.Start().ok());
  KillOneOfTwoHolders(server, dir.path(),
                      [](const ShmServerStats& s) { return s.response_regions_live; });
}

// The same with the payloads in a payload arena, passed by reference: the daemon holds their
// Buffers for the clients, and a killed client's go with its segment.
TEST(ShmProcess, ASigkilledClientHoldingSharedPayloadsLetsThemGo) {
  shm_test::TempRunDir dir;
  auto arenas = shm::PayloadArenas::Create(shm::PayloadArenasOptions{.arena_bytes = 8 << 20});
  ASSERT_TRUE(arenas.ok());
  ShmServerOptions o = ServerOptions(dir.path());
  o.arenas = *arenas;
  PayloadAllocator* memory = arenas->get();
  ShmServer server(ShmServer::Returning([memory](Session& s, const wire::Message& m) {
                     return shm_test::TestHandlerWithMemory(s, m, memory);
                   }),
                   o);
  ASSERT_TRUE(server.Start().ok());
  KillOneOfTwoHolders(server, dir.path(),
                      [](const ShmServerStats& s) { return s.shared_payloads_live; });
  EXPECT_EQ(server.Stats().response_regions_live, 0u);
  EXPECT_EQ((*arenas)->Stats().payloads_live, 0u) << "a killed client's payload stayed pinned";
}

TEST(ShmProcess, AKilledDaemonFailsWaitingCallsAndTheClientReattachesToANewOne) {
  shm_test::TempRunDir dir;
  auto daemon = std::make_unique<Peer>(std::vector<std::string>{"daemon", dir.path(), "p"});
  ASSERT_EQ(daemon->ReadLine(), "ready");
  auto ch = ConnectShm(ClientOptions(dir.path()));
  ASSERT_TRUE(ch.ok()) << ch.status().ToString();
  Channel& channel = **ch;
  ASSERT_TRUE(channel.Call(TextMessage(shm_test::kOpEcho, "before")).ok());
  auto held = channel.Call(TextMessage(shm_test::kOpPayloadOfSize, "5000"));
  ASSERT_TRUE(held.ok());

  // A call the daemon never answers, then SIGKILL: the waiting call returns Unavailable.
  Status blocked;
  std::thread caller([&] { blocked = channel.Call(TextMessage(shm_test::kOpBlock, "")).status(); });
  ASSERT_EQ(daemon->ReadLine(), "blocked");  // the call is inside the daemon now
  daemon->Kill();
  caller.join();
  EXPECT_EQ(blocked.code(), Code::kUnavailable) << blocked.ToString();
  auto r = channel.Call(TextMessage(shm_test::kOpEcho, "while down"));
  EXPECT_EQ(r.status().code(), Code::kUnavailable);

  // A new daemon (same prefix: the dead one's lock and socket are taken over).
  daemon = std::make_unique<Peer>(std::vector<std::string>{"daemon", dir.path(), "p"});
  ASSERT_EQ(daemon->ReadLine(), "ready");
  r = channel.Call(TextMessage(shm_test::kOpEcho, "after"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(shm_test::FieldsText(*r), "after");
  // The borrow of the dead daemon's segment is still readable.
  EXPECT_EQ(held->payloads[0].data[4999], static_cast<uint8_t>('a' + 4999 % 26));
}

// A daemon that is there but does not answer (SIGSTOP): a waiting call fails once it has waited
// request_timeout_ms (not before), and so does one made meanwhile; after SIGCONT the next call
// attaches again.
TEST(ShmProcess, AStoppedDaemonFailsCallsAfterTheRequestTimeoutAndTheClientReattaches) {
  shm_test::TempRunDir dir;
  Peer daemon({"daemon", dir.path(), "p"});
  ASSERT_EQ(daemon.ReadLine(), "ready");
  ShmClientOptions o = ClientOptions(dir.path());
  o.request_timeout_ms = 1000;
  o.attach_timeout_ms = 2000;
  auto ch = ConnectShm(o);
  ASSERT_TRUE(ch.ok()) << ch.status().ToString();
  Channel& channel = **ch;
  ASSERT_TRUE(channel.Call(TextMessage(shm_test::kOpEcho, "before")).ok());

  daemon.Pause();
  Status first, second;
  const uint64_t start = RealClock()->NowMicros();
  std::thread a([&] { first = channel.Call(TextMessage(shm_test::kOpEcho, "x")).status(); });
  std::thread b([&] { second = channel.Call(TextMessage(shm_test::kOpEcho, "y")).status(); });
  a.join();  // returns: without the deadline it would wait for ever
  b.join();
  EXPECT_GE(RealClock()->NowMicros() - start, 1'000'000u) << "gave up before the timeout";
  for (const Status& st : {first, second}) {
    EXPECT_EQ(st.code(), Code::kUnavailable) << st.ToString();
    EXPECT_NE(st.message().find("no response from wombatkvd at "), std::string::npos)
        << st.ToString();
    EXPECT_NE(st.message().find("within 1000 ms"), std::string::npos) << st.ToString();
    EXPECT_NE(st.message().find("WMBT_KV_REQUEST_TIMEOUT_MS"), std::string::npos);
  }
  // Attaching to a stopped daemon: no answer within the attach timeout.
  EXPECT_EQ(channel.Call(TextMessage(shm_test::kOpEcho, "z")).status().code(), Code::kUnavailable);

  daemon.Signal(SIGCONT);
  Result<wire::Message> r = Status::Unavailable("not called");
  // The attach made while it was stopped is answered (and dropped) first; a later one works.
  for (int i = 0; i < 100 && !r.ok(); ++i) {
    r = channel.Call(TextMessage(shm_test::kOpEcho, "after"));
    if (!r.ok()) RealClock()->SleepMicros(50'000);
  }
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(shm_test::FieldsText(*r), "after");
}

// Calls that take 40% of the request timeout, one after another and two at once, all succeed
// on one attachment: the deadline counts from each call, not from the attachment or a tick.
TEST(ShmProcess, SlowAnswersWithinTheRequestTimeoutAreNotGivenUpOn) {
  shm_test::TempRunDir dir;
  Peer daemon({"daemon", dir.path(), "p"});
  ASSERT_EQ(daemon.ReadLine(), "ready");
  ShmClientOptions o = ClientOptions(dir.path());
  o.request_timeout_ms = 1000;
  auto ch = ConnectShm(o);
  ASSERT_TRUE(ch.ok()) << ch.status().ToString();
  Channel& channel = **ch;
  for (int i = 0; i < 3; ++i) {
    auto r = channel.Call(TextMessage(shm_test::kOpSlow, "400"));
    ASSERT_TRUE(r.ok()) << i << ": " << r.status().ToString();
  }
  Status a_st, b_st;
  std::thread a([&] { a_st = channel.Call(TextMessage(shm_test::kOpSlow, "400")).status(); });
  std::thread b([&] { b_st = channel.Call(TextMessage(shm_test::kOpSlow, "400")).status(); });
  a.join();
  b.join();
  EXPECT_TRUE(a_st.ok()) << a_st.ToString();
  EXPECT_TRUE(b_st.ok()) << b_st.ToString();
}

// SPEC §10: another user can neither attach (socket 0600) nor, with the socket opened up by
// mistake, get past the daemon's SO_PEERCRED check.
TEST(ShmProcess, AnotherUserCannotAttach) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a child as another user";
  shm_test::TempRunDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0711), 0);  // let the other user reach the socket path
  ShmServer server(ShmServer::Returning(shm_test::TestHandler), ServerOptions(dir.path()));
  ASSERT_TRUE(server.Start().ok());

  Peer refused_by_mode({"attach", dir.path(), "p"}, kNobody);
  const std::string first = refused_by_mode.ReadLine();
  EXPECT_EQ(refused_by_mode.Wait(), 1);
  EXPECT_NE(first.find("PERMISSION_DENIED"), std::string::npos) << first;
  EXPECT_EQ(server.Stats().attaches, 0u);

  ASSERT_EQ(::chmod(server.socket_path().c_str(), 0666), 0);  // a misconfiguration
  Peer refused_by_cred({"attach", dir.path(), "p"}, kNobody);
  const std::string second = refused_by_cred.ReadLine();
  EXPECT_EQ(refused_by_cred.Wait(), 1);
  EXPECT_NE(second.find("uid 65534 may not attach"), std::string::npos) << second;
  EXPECT_EQ(server.Stats().refusals, 1u);
  EXPECT_EQ(server.Stats().segments_live, 0u);

  // Root may (it can read any process's memory anyway); this process is root.
  EXPECT_TRUE(ConnectShm(ClientOptions(dir.path())).ok());
}

// A client never sends its data to a daemon run by another user (a socket planted in /tmp).
TEST(ShmProcess, AClientRefusesADaemonOfAnotherUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a daemon as another user";
  shm_test::TempRunDir dir;
  ASSERT_EQ(::chown(dir.path().c_str(), kNobody, kNobody), 0);
  Peer daemon({"daemon", dir.path(), "p"}, kNobody);
  ASSERT_EQ(daemon.ReadLine(), "ready");
  const std::string sock = dir.path() + "/wombatkv-p.sock";
  ASSERT_EQ(::chmod(sock.c_str(), 0666), 0);
  // Root passes any file permission, so the daemon's socket accepts us; our own check refuses.
  // (As root we are allowed by the daemon's check too: only the client side stops this.)
  auto ch = ConnectShm(ClientOptions(dir.path()));
  ASSERT_FALSE(ch.ok());
  EXPECT_EQ(ch.status().code(), Code::kPermissionDenied);
  EXPECT_NE(ch.status().message().find("uid 65534"), std::string::npos) << ch.status().ToString();
}

// SPEC §10's "0660 with a configured group": the socket is the group's, its members attach
// (by effective or supplementary group), anyone else is still refused by mode and by credentials.
TEST(ShmProcess, TheMembersOfTheConfiguredGroupAttachAndNobodyElse) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run children as other users";
  shm_test::TempRunDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0711), 0);
  ShmServerOptions options = ServerOptions(dir.path());
  options.group = std::to_string(kTeam);
  ShmServer server(ShmServer::Returning(shm_test::TestHandler), options);
  ASSERT_TRUE(server.Start().ok());
  struct stat st {};
  ASSERT_EQ(::stat(server.socket_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  EXPECT_EQ(st.st_gid, kTeam);

  const std::vector<std::string> attach = {"attach", dir.path(), "p"};
  Peer supplementary(attach, Peer::Identity{kNobody, kNobody, {kTeam}});
  EXPECT_EQ(supplementary.ReadLine(), "ok");
  EXPECT_EQ(supplementary.Wait(), 0);
  Peer effective(attach, Peer::Identity{kNobody, kTeam, {}});
  EXPECT_EQ(effective.ReadLine(), "ok");
  EXPECT_EQ(effective.Wait(), 0);
  EXPECT_EQ(server.Stats().attaches, 2u);

  Peer outsider(attach, Peer::Identity{kNobody, kNobody, {kTeam + 1}});
  const std::string by_mode = outsider.ReadLine();
  EXPECT_EQ(outsider.Wait(), 1);
  EXPECT_NE(by_mode.find("PERMISSION_DENIED"), std::string::npos) << by_mode;

  ASSERT_EQ(::chmod(server.socket_path().c_str(), 0666), 0);  // a misconfiguration
  Peer outsider_again(attach, Peer::Identity{kNobody, kNobody, {kTeam + 1}});
  const std::string by_cred = outsider_again.ReadLine();
  EXPECT_EQ(outsider_again.Wait(), 1);
  EXPECT_NE(by_cred.find("uid 65534 may not attach"), std::string::npos) << by_cred;
  EXPECT_NE(by_cred.find("members of group 4242"), std::string::npos) << by_cred;
  EXPECT_EQ(server.Stats().attaches, 2u);
  EXPECT_EQ(server.Stats().refusals, 1u);
}

// A client attaches to a daemon run by another user only when that user is in the client's
// configured group; without the setting (or with another group) it refuses, as before.
TEST(ShmProcess, AClientAttachesToADaemonOfItsGroupOnly) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a daemon as another user";
  shm_test::TempRunDir dir;
  ASSERT_EQ(::chown(dir.path().c_str(), kNobody, kNobody), 0);
  const std::string team = std::to_string(kTeam);
  Peer daemon({"daemon", dir.path(), "p", team}, Peer::Identity{kNobody, kTeam, {}});
  ASSERT_EQ(daemon.ReadLine(), "ready");
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() + "/wombatkv-p.sock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  EXPECT_EQ(st.st_gid, kTeam);

  auto refused = ConnectShm(ClientOptions(dir.path()));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kPermissionDenied);
  EXPECT_NE(refused.status().message().find("WMBT_KV_SHM_GROUP"), std::string::npos)
      << refused.status().ToString();
  ShmClientOptions other = ClientOptions(dir.path());
  other.group = std::to_string(kTeam + 1);
  EXPECT_EQ(ConnectShm(other).status().code(), Code::kPermissionDenied);

  ShmClientOptions member = ClientOptions(dir.path());
  member.group = team;
  auto ch = ConnectShm(member);
  ASSERT_TRUE(ch.ok()) << ch.status().ToString();
  auto echo = (*ch)->Call(TextMessage(shm_test::kOpEcho, "team"));
  ASSERT_TRUE(echo.ok()) << echo.status().ToString();
}

// A daemon whose user is not in the configured group cannot give it the socket: it does not
// start, and says why.
TEST(ShmProcess, ADaemonOutsideItsGroupDoesNotStart) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a daemon as another user";
  shm_test::TempRunDir dir;
  ASSERT_EQ(::chown(dir.path().c_str(), kNobody, kNobody), 0);
  Peer daemon({"daemon", dir.path(), "p", std::to_string(kTeam)}, kNobody);
  const std::string line = daemon.ReadLine();
  if (line == "ready") {
    daemon.Kill();
    FAIL() << "a daemon outside group " << kTeam << " started";
  }
  EXPECT_EQ(daemon.Wait(), 1);
  EXPECT_NE(line.find("cannot give control socket"), std::string::npos) << line;
  EXPECT_NE(line.find("WMBT_KV_SHM_GROUP"), std::string::npos) << line;
}

}  // namespace
}  // namespace wombatkv
