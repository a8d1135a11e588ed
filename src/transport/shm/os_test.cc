// Who may share memory (SPEC §10): the peer checks of both sides and WMBT_KV_SHM_GROUP's names.
#include "transport/shm/os.h"

#include <grp.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace wombatkv::shm {
namespace {

PeerCred Stranger() {
  PeerCred p;
  p.pid = 1;
  p.uid = ::geteuid() + 1;  // neither us nor (as we are not uid -1) root
  p.gid = 4242;
  p.groups = {100, 4243};
  return p;
}

TEST(ShmPeers, OwnUserAndRootAlwaysAnOtherUserOnlyThroughTheGroup) {
  PeerCred self = Stranger();
  self.uid = ::geteuid();
  EXPECT_TRUE(PeerAllowed(self, std::nullopt));
  PeerCred root = Stranger();
  root.uid = 0;
  EXPECT_TRUE(PeerAllowed(root, std::nullopt));

  const PeerCred other = Stranger();
  EXPECT_FALSE(PeerAllowed(other, std::nullopt));
  EXPECT_TRUE(PeerAllowed(other, gid_t{4242}));  // its effective group
  EXPECT_TRUE(PeerAllowed(other, gid_t{4243}));  // a supplementary one
  EXPECT_FALSE(PeerAllowed(other, gid_t{4244}));
  EXPECT_FALSE(PeerAllowed(other, gid_t{0}));
}

TEST(ShmPeers, PeerCredentialsIncludeTheSupplementaryGroups) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  Fd a(sv[0]), b(sv[1]);
  auto peer = GetPeerCred(a.get());
  ASSERT_TRUE(peer.ok()) << peer.status().ToString();
  EXPECT_EQ(peer->pid, ::getpid());
  EXPECT_EQ(peer->uid, ::geteuid());
  EXPECT_EQ(peer->gid, ::getegid());
  std::vector<gid_t> ours(static_cast<size_t>(::getgroups(0, nullptr)));
  ours.resize(static_cast<size_t>(::getgroups(static_cast<int>(ours.size()), ours.data())));
  std::sort(ours.begin(), ours.end());
  std::vector<gid_t> got = peer->groups;
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, ours);
}

TEST(ShmPeers, TheGroupSettingResolvesANameOrANumber) {
  auto none = ResolveShmGroup("");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  auto number = ResolveShmGroup("4242");
  ASSERT_TRUE(number.ok()) << number.status().ToString();
  EXPECT_EQ(number->value(), 4242u);  // a number needs no entry in /etc/group

  const group* root = ::getgrgid(0);
  ASSERT_NE(root, nullptr);
  auto named = ResolveShmGroup(root->gr_name);
  ASSERT_TRUE(named.ok()) << named.status().ToString();
  EXPECT_EQ(named->value(), 0u);

  for (const char* bad : {"no-such-group-wmbt", "99999999999", "4294967295"}) {
    auto r = ResolveShmGroup(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("WMBT_KV_SHM_GROUP"), std::string::npos)
        << r.status().ToString();
  }
}

}  // namespace
}  // namespace wombatkv::shm

namespace wombatkv::shm {
namespace {

// A daemon that accepts nothing (stopped, wedged, still opening its store) fills its listen queue;
// a client's connect then waits for room, bounded by the attach timeout it was given — it once
// waited for ever, and with it every thread of the engine behind the redialer.
TEST(ShmControlSocket, AConnectToADaemonThatAcceptsNothingGivesUpAfterItsTimeout) {
  char dir[] = "/tmp/wombatkv-ctl-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/ctl";
  auto listener = ListenControlSocket(path);
  ASSERT_TRUE(listener.ok()) << listener.status().ToString();
  std::vector<Fd> queued;
  Status last;
  for (int i = 0; i < 1000 && last.ok(); ++i) {  // the queue holds 129 (backlog 128)
    auto c = ConnectControlSocket(path, 100);
    if (c.ok())
      queued.push_back(std::move(c).value());
    else
      last = c.status();
  }
  EXPECT_EQ(last.code(), Code::kUnavailable) << last.ToString();
  EXPECT_NE(last.message().find("accepted no connection within 100 ms"), std::string::npos)
      << last.ToString();
  queued.clear();
  listener = Status::Unavailable("closed");
  ::unlink(path.c_str());
  ::rmdir(dir);
}

}  // namespace
}  // namespace wombatkv::shm
