#include "tests/daemon/daemon_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace wombatkv::testing {

TempDir::TempDir() {
  char tmpl[] = "/tmp/wombatkvd-test-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

DaemonProcess::DaemonProcess(const std::vector<std::string>& args, const Env& env,
                             const std::string& stderr_path, const std::string& until)
    : stderr_path_(stderr_path) {
  // Everything the child needs is built before fork: after fork only exec-safe calls.
  std::vector<std::string> argv_s = {WOMBATKVD_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "WMBT_KV_", 8) != 0) env_s.emplace_back(*e);
  }
  for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  int err_fd = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(pipefd[1], STDOUT_FILENO);
    if (err_fd >= 0) ::dup2(err_fd, STDERR_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(pipefd[1]);
  if (err_fd >= 0) ::close(err_fd);
  out_fd_ = pipefd[0];
  running_ = true;
  std::string line;
  while (ReadLine(&line)) {
    const std::string tcp_mark = "listening on tcp://";
    if (auto at = line.find(tcp_mark); at != std::string::npos) {
      std::string rest = line.substr(at + tcp_mark.size());
      tcp_.push_back(rest.substr(0, rest.find(' ')));
    }
    const std::string http_mark = "http on ";
    if (auto at = line.find(http_mark); at != std::string::npos) {
      std::string rest = line.substr(at + http_mark.size());
      http_ = rest.substr(0, rest.find(' '));
    }
    if (line.starts_with(until)) return;
  }
  Reap();  // exited before ready
}

DaemonProcess::~DaemonProcess() {
  if (running_) Stop(SIGKILL);
  if (out_fd_ >= 0) ::close(out_fd_);
}

bool DaemonProcess::ReadLine(std::string* line) {
  for (;;) {
    if (auto nl = pending_.find('\n'); nl != std::string::npos) {
      *line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return true;
    }
    // A bound, not a timing assertion: a daemon that prints nothing for a minute is broken.
    pollfd p{out_fd_, POLLIN, 0};
    if (::poll(&p, 1, 60'000) <= 0) return false;
    char buf[4096];
    ssize_t n = ::read(out_fd_, buf, sizeof buf);
    if (n <= 0) return false;
    output_.append(buf, static_cast<size_t>(n));
    pending_.append(buf, static_cast<size_t>(n));
  }
}

void DaemonProcess::Reap() {
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  running_ = false;
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::string line;
  while (ReadLine(&line)) {
  }
}

int DaemonProcess::Stop(int sig) {
  if (!running_) return exit_code_;
  ::kill(pid_, sig);
  Reap();
  return exit_code_;
}

bool DaemonProcess::WaitForOutput(const std::string& text) {
  std::string line;
  while (output_.find(text) == std::string::npos) {
    if (!ReadLine(&line)) return false;
  }
  return true;
}

std::string DaemonProcess::stderr_text() const {
  std::ifstream in(stderr_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace wombatkv::testing
