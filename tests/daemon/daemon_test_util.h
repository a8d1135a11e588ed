// Helpers shared by the daemon tests: starting a wombatkvd on free ports, clients (a RemoteStore
// over a TcpChannel, or a raw socket for what no well-behaved client sends), and small chains.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/remote_store.h"
#include "tests/daemon/daemon_process.h"
#include "wire/message.h"
#include "wombatkv/status.h"
#include "wombatkv/types.h"

namespace wombatkv::testing {

// A daemon on a fresh data directory under `dir`, listening on `tcp` (default: a free loopback
// port), with `extra` flags and `env`. ASSERTs nothing: check running().
std::unique_ptr<DaemonProcess> StartDaemon(const TempDir& dir,
                                           std::vector<std::string> extra = {},
                                           const DaemonProcess::Env& env = {},
                                           const std::string& tcp = "127.0.0.1:0");

// A RemoteStore over TCP; the status of ConnectTcp when that fails.
Result<std::unique_ptr<RemoteStore>> OpenRemote(const std::string& addr,
                                                const std::string& token = "");

BlockKey Key(uint64_t a, uint64_t b);
Fingerprint Fp(uint8_t seed);
std::string Payload(uint64_t seed, size_t bytes);

// Puts `n` blocks as one chain (root first) and publishes it with chain id = tip. Returns the
// keys root→tip, or the first failing status.
Result<std::vector<BlockKey>> PutAndPublish(Store& store, std::string_view ns,
                                            const Fingerprint& fp, uint64_t chain, size_t n,
                                            size_t payload_bytes);
// Every block of the chain is found by lookup and read back byte for byte.
void ExpectChainReadable(Store& store, std::string_view ns, const Fingerprint& fp, uint64_t chain,
                         const std::vector<BlockKey>& keys, size_t payload_bytes);

// A new client can put, publish, look up and get on the daemon at `addr`.
void ExpectServes(const std::string& addr, const std::string& token = "");

// A raw TCP client.
class RawClient {
 public:
  explicit RawClient(const std::string& addr);
  ~RawClient();
  void Send(const std::vector<uint8_t>& bytes);
  void Send(const wire::Message& m);  // framed correctly
  // The next frame from the daemon; nullopt if it closed the connection first.
  std::optional<wire::Message> Read();
  // True once the daemon has closed the connection (reads until EOF or reset).
  bool SeesClose();
  // Sends `m` as request `id` and returns the status of the answer, which must carry that id
  // (EXPECTed); an Internal status when the daemon closed the connection instead.
  Status Ask(wire::Message m, uint64_t id);
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  struct Reader;
  std::unique_ptr<Reader> reader_;
};

// The value of the unlabelled series `name` on a /metrics page; -1 when it is not there.
double MetricValue(const std::string& page, const std::string& name);

// The framed bytes of `m` (envelope included).
std::vector<uint8_t> FrameBytes(const wire::Message& m);

}  // namespace wombatkv::testing
