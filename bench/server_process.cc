#include "server_process.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "bench_util.h"

extern char** environ;

namespace wombatkv::bench {
namespace {

std::string LogTail(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > 2000 ? s.substr(s.size() - 2000) : s;
}

}  // namespace

bool CanConnect(const std::string& addr) {
  int fd = -1;
  if (addr.rfind("unix:", 0) == 0) {
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, addr.c_str() + 5, sizeof sa.sun_path - 1);
    // Redis listens with a stream socket, wombatkvd's shared-memory control socket is a
    // seqpacket one: connecting with the other type fails with EPROTOTYPE.
    for (int type : {SOCK_STREAM, SOCK_SEQPACKET}) {
      fd = ::socket(AF_UNIX, type, 0);
      bool ok = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
      const int err = errno;
      if (fd >= 0) ::close(fd);
      if (ok) return true;
      if (err != EPROTOTYPE) return false;
    }
    return false;
  }
  const size_t colon = addr.rfind(':');
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (::getaddrinfo(addr.substr(0, colon).c_str(), addr.substr(colon + 1).c_str(), &hints, &res))
    return false;
  fd = ::socket(res->ai_family, SOCK_STREAM, 0);
  bool ok = fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0;
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(res);
  return ok;
}

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) Die("binding a free port");
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  ::close(fd);
  return ntohs(sa.sin_port);
}

ServerProcess::ServerProcess(std::vector<std::string> argv, std::vector<std::string> env,
                             const std::string& ready_addr, const std::string& log_path)
    : log_path_(log_path) {
  std::vector<char*> args, envp;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  for (char** e = environ; *e; ++e) envp.push_back(*e);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ < 0) Die("fork");
  if (pid_ == 0) {
    int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (log >= 0) {
      ::dup2(log, 1);
      ::dup2(log, 2);
    }
    ::execvpe(args[0], args.data(), envp.data());
    std::fprintf(stderr, "exec %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  for (int i = 0; i < 3000; ++i) {
    if (CanConnect(ready_addr)) return;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      Die(argv[0] + " exited before accepting connections; its log:\n" + LogTail(log_path));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Stop();
  Die(argv[0] + " did not accept connections on " + ready_addr + " within 30 s; its log:\n" +
      LogTail(log_path));
}

ServerProcess::~ServerProcess() { Stop(); }

void ServerProcess::Stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  for (int i = 0; i < 1000; ++i) {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

}  // namespace wombatkv::bench
