// Channel: how a client reaches a daemon. RemoteStore (remote_store.h) turns every Store call
// into one request Message and waits for its response through a Channel; the transports
// (src/transport/tcp, src/transport/shm) and the in-process LoopbackChannel (for tests) implement
// it. A Channel knows nothing about ops: it moves Messages and matches responses to requests by id.
#pragma once

#include <memory>
#include <string>

#include "wire/message.h"
#include "wombatkv/status.h"

namespace wombatkv {

class Channel {
 public:
  virtual ~Channel() = default;

  // Sends `request` and waits for the response with the same id (the channel assigns the id; any
  // id set by the caller is overwritten). Thread-safe: several threads may have calls in flight
  // at once on one channel (pipelining); responses may arrive in any order.
  // Request payload slices only need to stay valid until Call returns (they may be non-owning
  // views of the caller's memory). Response payload slices keep their bytes alive themselves.
  // Unavailable when the daemon cannot be reached or went away mid-call (the call may or may not
  // have taken effect); the next Call reconnects by itself.
  virtual Result<wire::Message> Call(wire::Message request) = 0;

  // "tcp://host:port", "shm://prefix", "loopback" — for messages.
  virtual std::string Describe() const = 0;
};

}  // namespace wombatkv
