#include "tests/daemon/client_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace wombatkv::testing {

bool WriteLine(int fd, const std::string& line) {
  std::string l = line + "\n";
  size_t done = 0;
  while (done < l.size()) {
    ssize_t n = write(fd, l.data() + done, l.size() - done);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string ReadLine(int fd) {
  std::string line;
  char c = 0;
  while (read(fd, &c, 1) == 1) {
    if (c == '\n') return line;
    line += c;
  }
  return line;
}

ClientProcess::ClientProcess(const std::function<int(int, int)>& body) {
  int down[2];
  int up[2];
  if (pipe(down) != 0 || pipe(up) != 0) return;
  pid_ = fork();
  if (pid_ == 0) {
    close(down[1]);
    close(up[0]);
    _exit(body(down[0], up[1]));
  }
  close(down[0]);
  close(up[1]);
  to_ = down[1];
  from_ = up[0];
}

ClientProcess::~ClientProcess() {
  if (to_ >= 0) close(to_);
  if (from_ >= 0) close(from_);
  Kill();
}

void ClientProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

std::string ClientProcess::Ask(const std::string& command) {
  if (!WriteLine(to_, command)) return "fail: the client process is gone";
  return Read();
}

void ClientProcess::Send(const std::string& command) { WriteLine(to_, command); }

std::string ClientProcess::Read() {
  std::string line = ReadLine(from_);
  return line.empty() ? "fail: the client process exited without answering" : line;
}

}  // namespace wombatkv::testing
