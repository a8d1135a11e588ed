// Test-only helpers for the shared-memory transport tests: a private run directory, and child
// processes running shm_test_peer (fork + exec, so the child is a fresh process, not a copy of a
// multi-threaded test).
#pragma once

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "wire/message.h"

namespace wombatkv::shm_test {

class TempRunDir {
 public:
  TempRunDir() {
    char tmpl[] = "/tmp/wkv-shm-test-XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    EXPECT_NE(d, nullptr);
    path_ = d ? d : "/tmp";
  }
  ~TempRunDir() { (void)!::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

#ifdef SHM_TEST_PEER  // the path of shm_test_peer, defined for the tests that run it
// A child running `shm_test_peer ARGS...`, its stdout on a pipe. Killed (SIGKILL) and reaped on
// destruction if still running.
class Peer {
 public:
  // Who the child runs as: with uid != 0 (and this process root) it takes these groups, then
  // this gid and uid, before exec.
  struct Identity {
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;  // supplementary
  };
  // With `uid` != 0, the child runs as that uid, with gid = uid and no supplementary group.
  explicit Peer(const std::vector<std::string>& args, uid_t uid = 0)
      : Peer(args, Identity{uid, uid, {}}) {}
  Peer(const std::vector<std::string>& args, const Identity& id) {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    std::vector<std::string> argv_s = {SHM_TEST_PEER};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {  // only async-signal-safe calls until exec
      ::dup2(fds[1], 1);
      if (id.uid != 0 && (::setgroups(id.groups.size(), id.groups.data()) != 0 ||
                          ::setgid(id.gid) != 0 || ::setuid(id.uid) != 0))
        ::_exit(3);
      ::execv(argv[0], argv.data());
      ::_exit(4);
    }
    ::close(fds[1]);
    out_ = fds[0];
  }
  ~Peer() {
    Kill();
    if (out_ >= 0) ::close(out_);
  }

  // The next line the child prints ("" at end of output).
  std::string ReadLine() {
    std::string line;
    char c;
    while (::read(out_, &c, 1) == 1 && c != '\n') line += c;
    return line;
  }
  void Signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  // SIGSTOP, returning once the child has stopped: a signal reaches a process running on another
  // CPU a little later, and a call made meanwhile would still be answered.
  void Pause() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGSTOP);
    int status = 0;
    while (::waitpid(pid_, &status, WUNTRACED) < 0 && errno == EINTR) {
    }
  }
  void Kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      Wait();
    }
  }
  // Reaps the child; its exit code, or 128 + signal.
  int Wait() {
    int status = 0;
    if (pid_ <= 0) return -1;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
};

#endif  // SHM_TEST_PEER

inline wire::Message TextMessage(uint16_t op, const std::string& fields) {
  wire::Message m;
  m.op = op;
  m.fields.assign(fields.begin(), fields.end());
  return m;
}

inline std::string FieldsText(const wire::Message& m) {
  return std::string(m.fields.begin(), m.fields.end());
}

}  // namespace wombatkv::shm_test
