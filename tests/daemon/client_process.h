// ClientProcess: a forked client process the daemon tests drive over pipes, one command per line,
// so that the test process itself never talks to the daemon (nothing it holds can hide a bug in
// what the clients see), and so that a client can be killed with SIGKILL like a crashing engine.
// Fork clients before the test process starts any thread.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

namespace wombatkv::testing {

// `line` and a newline to `fd`; false if the pipe broke.
bool WriteLine(int fd, const std::string& line);
// One line without its newline; "" at EOF.
std::string ReadLine(int fd);

class ClientProcess {
 public:
  // Forks; the child runs `body(in, out)` — reading commands from `in`, answering on `out` — and
  // exits with its return value.
  explicit ClientProcess(const std::function<int(int in, int out)>& body);
  ~ClientProcess();  // SIGKILLs the child if it still runs, and reaps it
  ClientProcess(const ClientProcess&) = delete;
  ClientProcess& operator=(const ClientProcess&) = delete;

  bool started() const { return pid_ > 0; }
  // Sends a command and returns the answer line.
  std::string Ask(const std::string& command);
  void Send(const std::string& command);
  // The next line; "fail: ..." when the child exited without one.
  std::string Read();
  // SIGKILL, then reap: the child is gone on return (a crash of the engine it plays).
  void Kill();

 private:
  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
};

}  // namespace wombatkv::testing
