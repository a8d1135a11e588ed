#include "client/loopback_channel.h"

#include <cstring>

#include "base/futex.h"
#include "wire/codec.h"
#include "wire/frame.h"

namespace wombatkv {

Result<wire::Message> ReframeMessage(const wire::Message& message) {
  WMBT_ASSIGN_OR_RETURN(wire::FramedMessage framed, wire::Frame(message));
  auto flat = Buffer::Allocate(framed.total_bytes());
  size_t at = 0;
  for (const iovec& v : framed.iov()) {
    std::memcpy(flat->data() + at, v.iov_base, v.iov_len);
    at += v.iov_len;
  }
  WMBT_ASSIGN_OR_RETURN(wire::Envelope env,
                        wire::ParseEnvelope(flat->data(), wire::kDefaultMaxBodyBytes));
  auto body = Buffer::CopyOf({flat->data() + wire::kEnvelopeBytes, env.body_len});
  return wire::ParseBody(std::move(body), env.crc);
}

// The way the daemon's transports call the service (a save may be answered from another thread).
static wire::Message Exchange(Service& service, Session& session, const wire::Message& request) {
  wire::Message response;
  Baton answered;
  service.HandleAsync(session, request, [&](wire::Message m) {
    response = std::move(m);
    answered.Post();
  });
  answered.Wait();
  return response;
}

LoopbackChannel::LoopbackChannel(Service& service, LoopbackOptions options)
    : service_(service), options_(std::move(options)) {
  session_.peer = "loopback";
  session_.token_required = options_.token_required;
}

LoopbackChannel::LoopbackChannel(std::unique_ptr<Service> service, LoopbackOptions options)
    : owned_(std::move(service)), service_(*owned_), options_(std::move(options)) {
  session_.peer = "loopback";
  session_.token_required = options_.token_required;
}

LoopbackChannel::~LoopbackChannel() = default;

Result<wire::Message> LoopbackChannel::RoundTrip(wire::Message request) {
  request.id = next_id_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t id = request.id;
  wire::Message response;
  if (options_.frame) {
    WMBT_ASSIGN_OR_RETURN(wire::Message sent, ReframeMessage(request));
    WMBT_ASSIGN_OR_RETURN(response, ReframeMessage(Exchange(service_, session_, sent)));
  } else {
    response = Exchange(service_, session_, request);
  }
  if (response.id != id || response.op != request.op ||
      (response.flags & wire::kFlagResponse) == 0) {
    return Status::Internal("loopback: response (id " + std::to_string(response.id) + ", op " +
                            std::to_string(response.op) + ") does not answer request (id " +
                            std::to_string(id) + ", op " + std::to_string(request.op) + ")");
  }
  return response;
}

Status LoopbackChannel::EnsureHello() {
  if (options_.token.empty() && !options_.token_required) return Status::Ok();
  std::lock_guard lock(hello_mu_);
  if (hello_done_) return Status::Ok();
  wire::HelloRequest hello{wire::kProtocolVersion, options_.client_name, options_.token};
  WMBT_ASSIGN_OR_RETURN(wire::Message response, RoundTrip(hello.Encode()));
  WMBT_RETURN_IF_ERROR(wire::HelloResponse::Decode(response).status());
  hello_done_ = true;
  return Status::Ok();
}

Result<wire::Message> LoopbackChannel::Call(wire::Message request) {
  if (request.op != static_cast<uint16_t>(wire::Op::kHello)) WMBT_RETURN_IF_ERROR(EnsureHello());
  return RoundTrip(std::move(request));
}

std::string LoopbackChannel::Describe() const {
  return options_.frame ? "loopback (framed)" : "loopback";
}

}  // namespace wombatkv
