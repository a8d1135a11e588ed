// A server the benchmark starts and stops itself (redis-server, wombatkvd): spawned with its
// arguments, waited for until it accepts connections, stopped by its pid (SIGTERM, then SIGKILL).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace wombatkv::bench {

class ServerProcess {
 public:
  // Starts `argv` (argv[0] looked up in PATH) with `env` added ("NAME=value"), stdout/stderr to
  // `log_path`, and waits up to 30 s until `ready_addr` ("unix:/path" or "HOST:PORT") accepts a
  // connection (stream or seqpacket socket). Dies with the log's tail when it exits or never becomes ready.
  ServerProcess(std::vector<std::string> argv, std::vector<std::string> env,
                const std::string& ready_addr, const std::string& log_path);
  ~ServerProcess();  // Stop()
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  void Stop();
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  std::string log_path_;
};

// True once `addr` accepts a connection.
bool CanConnect(const std::string& addr);

// A free TCP port on 127.0.0.1 (bound once and released; racy only against other processes).
int FreePort();

}  // namespace wombatkv::bench
