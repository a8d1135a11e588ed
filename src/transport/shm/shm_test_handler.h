// Test-only: a stand-in for Service::Handle that the transport tests and shm_test_peer share, so
// the transport can be exercised without a Store. It answers Hello like the Service, and a few
// test ops: echo (fields and payloads back), a payload of a requested size, "block" (never
// answers until the process dies — for killing a daemon mid-call) and "slow" (answers after the
// milliseconds its fields say).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "daemon/service.h"
#include "wire/codec.h"
#include "wire/message.h"
#include "wombatkv/env.h"

namespace wombatkv::shm_test {

inline constexpr uint16_t kOpEcho = 100;
inline constexpr uint16_t kOpPayloadOfSize = 101;  // fields: decimal byte count; payload i = 'a'+i%26
inline constexpr uint16_t kOpBlock = 102;
inline constexpr uint16_t kOpSlow = 103;  // fields: decimal milliseconds; answers with no fields
inline constexpr uint16_t kOpEmptyPayloads = 104;  // fields: decimal count of empty payloads
inline constexpr uint16_t kOpThrow = 105;          // the handler throws std::bad_alloc

// `memory` (may be null) supplies the kOpPayloadOfSize payload (e.g. the server's payload
// arenas).
inline wire::Message TestHandlerWithMemory(Session& session, const wire::Message& request,
                                           PayloadAllocator* memory) {
  (void)session;
  if (request.op == static_cast<uint16_t>(wire::Op::kHello)) {
    wire::HelloResponse hello;
    hello.server_version = "shm test handler";
    return hello.Encode();
  }
  wire::Message out;
  out.op = request.op;
  out.flags = wire::kFlagResponse;
  if (request.op == kOpEcho) {
    out.fields = request.fields;
    out.payloads = request.payloads;  // views into the request area: copied before the response
  } else if (request.op == kOpPayloadOfSize) {
    const size_t n = std::strtoull(
        std::string(request.fields.begin(), request.fields.end()).c_str(), nullptr, 10);
    std::shared_ptr<Buffer> b = memory ? memory->Allocate("test", n) : nullptr;
    if (!b) b = Buffer::Allocate(n);
    for (size_t i = 0; i < n; ++i) b->data()[i] = static_cast<uint8_t>('a' + i % 26);
    out.payloads.push_back(BufferSlice{b, b->data(), n});
  } else if (request.op == kOpEmptyPayloads) {
    const size_t n = std::strtoull(
        std::string(request.fields.begin(), request.fields.end()).c_str(), nullptr, 10);
    out.payloads.resize(n);
  } else if (request.op == kOpSlow) {
    const uint64_t ms = std::strtoull(
        std::string(request.fields.begin(), request.fields.end()).c_str(), nullptr, 10);
    RealClock()->SleepMicros(ms * 1000);
  } else if (request.op == kOpThrow) {
    throw std::bad_alloc();
  } else if (request.op == kOpBlock) {
    std::printf("blocked\n");  // tells shm_process_test the call is inside the daemon
    std::fflush(stdout);
    for (;;) ::pause();  // until the process dies
  } else {
    return wire::EncodeStatusResponse(static_cast<wire::Op>(request.op),
                                      Status::InvalidArgument("unknown test op"));
  }
  return out;
}

inline wire::Message TestHandler(Session& session, const wire::Message& request) {
  return TestHandlerWithMemory(session, request, nullptr);
}

}  // namespace wombatkv::shm_test
