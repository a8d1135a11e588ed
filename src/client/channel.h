// Channel: how a client reaches a daemon. RemoteStore (remote_store.h) turns every Store call
// into one request Message and waits for its response through a Channel; the transports
// (src/transport/tcp, src/transport/shm) and the in-process LoopbackChannel (for tests) implement
// it. A Channel knows nothing about ops: it moves Messages and matches responses to requests by id.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
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

  // As Call, for a request whose response's payloads the caller wants in memory of its own (a get
  // into buffers): when the response has exactly dsts.size() payloads, each with room in its
  // buffer, a transport may receive payload i straight into dsts[i]; the response's payload i
  // then points there and owns nothing. Otherwise, and by default, payloads are as Call's. The
  // buffers must stay valid until this returns; after a failure they may hold part of a response.
  virtual Result<wire::Message> CallInto(wire::Message request,
                                         std::span<const std::span<uint8_t>> /*dsts*/) {
    return Call(std::move(request));
  }

  // "tcp://host:port", "shm://prefix", "loopback" — for messages.
  virtual std::string Describe() const = 0;
};

}  // namespace wombatkv
