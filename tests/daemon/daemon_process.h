// DaemonProcess: a real wombatkvd child process for the daemon tests. It starts the binary with
// the given flags and environment (inherited WMBT_KV_* variables dropped, so the test decides),
// waits for its "ready" line, and parses the addresses it prints. The test stops it by pid
// (SIGTERM, SIGKILL); the destructor SIGKILLs a daemon still running, so a failed assertion
// never leaks a process.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace wombatkv::testing {

// A temporary directory removed (with its contents) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class DaemonProcess {
 public:
  using Env = std::vector<std::pair<std::string, std::string>>;

  // Starts wombatkvd with `args` and waits until it prints the line `until` or exits. Check
  // running(): false means it exited (exit_code(), output(), stderr_text() tell why).
  DaemonProcess(const std::vector<std::string>& args, const Env& env,
                const std::string& stderr_path, const std::string& until = "wombatkvd: ready");
  ~DaemonProcess();

  bool running() const { return running_; }
  pid_t pid() const { return pid_; }
  // "127.0.0.1:41234" for each "listening on tcp://..." line.
  const std::vector<std::string>& tcp() const { return tcp_; }
  // "http://127.0.0.1:9090", or "".
  const std::string& http() const { return http_; }

  // Sends `sig` and waits for the exit. Returns the exit status, or 128 + signal number when a
  // signal ended it (as a shell reports it).
  int Stop(int sig);
  // Reads the daemon's stdout until `text` has appeared in it; false if it ended first.
  bool WaitForOutput(const std::string& text);
  int exit_code() const { return exit_code_; }
  // Everything the daemon printed on stdout so far (all of it once stopped).
  const std::string& output() const { return output_; }
  std::string stderr_text() const;

 private:
  bool ReadLine(std::string* line);  // false at EOF
  void Reap();

  pid_t pid_ = -1;
  int out_fd_ = -1;
  bool running_ = false;
  int exit_code_ = -1;
  std::string output_;
  std::string pending_;
  std::string stderr_path_;
  std::vector<std::string> tcp_;
  std::string http_;
};

}  // namespace wombatkv::testing
