// TcpChannel: the client end of the TCP transport, a Channel (client/channel.h) to one wombatkvd.
//
// One connection carries every call of the channel, pipelined: callers on any number of threads
// send their frames (a write mutex keeps frames whole) and wait for their own response, matched
// by id. There is no reader thread: a waiting caller reads the socket itself while nobody else
// does, handing other calls' responses to their waiters (leader/follower), so a lone caller's
// call never changes threads. Request payloads are written straight from the caller's memory
// (sendmsg over head + payload iovecs); response payloads are slices of the received body.
// The reading caller polls the socket for a bounded, adaptive while before it sleeps in recv(2)
// (base/spin_poll.h), so a quick answer costs no wake-up.
//
// Every (re)connect sends Hello with the configured auth token first. When the daemon goes away
// (restart, crash, idle close) the calls in flight fail with Unavailable — they may or may not
// have taken effect — and the next Call reconnects by itself.
//
// Thread-safety: Call and Describe from any number of threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "client/channel.h"
#include "wire/frame.h"
#include "wombatkv/env.h"
#include "wombatkv/status.h"

namespace wombatkv::tcp {

struct TcpClientOptions {
  std::string address;     // "HOST:PORT" of the daemon (WMBT_KV_TCP_ADDR)
  std::string auth_token;  // sent in every Hello (WMBT_KV_AUTH_TOKEN); secret, never logged
  std::string client_name = "wombatkv";  // for the daemon's logs
  // For the TCP connect and, separately, for the Hello answer. 0 = wait for ever.
  uint64_t connect_timeout_ms = 5'000;
  // How long a call waits for its response (and a send for room); then Unavailable. A durable
  // publish to S3 can take seconds. 0 = wait for ever.
  uint64_t request_timeout_ms = 300'000;
  // Largest response body accepted from the daemon.
  uint32_t max_frame_bytes = wire::kDefaultMaxBodyBytes;
  // A waiting caller polls the socket for a while before it sleeps in recv(2), yielding its core
  // between polls; how long adapts to whether it paid, and a call that awaits a disk sync
  // polls for up to twice as long as such calls took lately, at most 1 ms (base/spin_poll.h,
  // docs/daemon.md "Spinning"). false = sleep at once.
  bool spin = true;
  Clock* clock = nullptr;  // null = RealClock()
};

// Connects and says Hello, so a wrong address or token fails here and not at the first call:
// InvalidArgument (bad HOST:PORT), Unavailable (cannot resolve or connect: "is wombatkvd
// running?"), PermissionDenied (token refused or required), FailedPrecondition (protocol).
Result<std::unique_ptr<Channel>> ConnectTcp(const TcpClientOptions& options);

}  // namespace wombatkv::tcp
