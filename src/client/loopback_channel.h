// LoopbackChannel: a Channel that hands each request straight to a Service in the same process,
// as one client session. For tests (RemoteStore against a real Store without a transport) and
// for tools that want the daemon's code path without a socket.
//
// With `frame` set, every request and response also goes through the TCP body framing
// (wire::Frame, then wire::ParseBody into a fresh buffer, CRC checked), so the codec is exercised
// on exactly the bytes a socket would carry, and response payloads no longer alias the store's
// memory. Without it, messages are passed as they are (response payloads point into the cache).
//
// Authentication: when `token` is set or `token_required` is, the first Call sends a Hello with
// the token first (as a transport does on connect); a refused Hello fails that Call with the
// daemon's PermissionDenied and is retried on the next one.
//
// Thread-safety: Call may run on many threads at once.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "client/channel.h"
#include "daemon/service.h"

namespace wombatkv {

struct LoopbackOptions {
  bool frame = false;
  bool token_required = false;  // as on a non-loopback listener
  std::string token;
  std::string client_name = "loopback";
};

class LoopbackChannel final : public Channel {
 public:
  // `service` must outlive the channel.
  explicit LoopbackChannel(Service& service, LoopbackOptions options = {});
  // Owns the service (and whatever it owns), e.g. for a test's RemoteStore.
  explicit LoopbackChannel(std::unique_ptr<Service> service, LoopbackOptions options = {});
  ~LoopbackChannel() override;

  Result<wire::Message> Call(wire::Message request) override;
  std::string Describe() const override;

  Session& session() { return session_; }

 private:
  Result<wire::Message> RoundTrip(wire::Message request);
  Status EnsureHello();

  std::unique_ptr<Service> owned_;
  Service& service_;
  LoopbackOptions options_;
  Session session_;
  std::atomic<uint64_t> next_id_{1};
  std::mutex hello_mu_;
  bool hello_done_ = false;  // guarded by hello_mu_
};

// Copies `message` through the TCP body framing and back (Frame, flatten, ParseBody with the
// CRC): what a socket would deliver. Exposed for tests of other layers.
Result<wire::Message> ReframeMessage(const wire::Message& message);

}  // namespace wombatkv
