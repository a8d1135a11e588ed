#include "wire/frame.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "base/crc32c.h"
#include "base/endian.h"

namespace wombatkv::wire {

void EncodeEnvelope(uint32_t body_len, uint32_t crc, uint8_t out[kEnvelopeBytes]) {
  StoreLe32(out, kMagic);
  StoreLe32(out + 4, kVersion);
  StoreLe32(out + 8, crc);
  StoreLe32(out + 12, body_len);
}

Result<Envelope> ParseEnvelope(const uint8_t in[kEnvelopeBytes], uint32_t max_body) {
  const uint32_t magic = LoadLe32(in);
  if (magic != kMagic) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "bad magic 0x%08x (expected \"WMBT\"): not a WombatKV frame",
                  magic);
    std::string why = buf;
    // Text where a frame belongs (an HTTP server's "HTTP/1.1 400", a client's "GET /"): show it.
    if (std::all_of(in, in + 4, [](uint8_t c) { return c >= 0x20 && c < 0x7f; })) {
      why += " (it begins \"" + std::string(reinterpret_cast<const char*>(in), 4) + "\")";
    }
    return Status::InvalidArgument(why);
  }
  Envelope e{LoadLe32(in + 4), LoadLe32(in + 8), LoadLe32(in + 12)};
  if (e.version != kVersion) {
    return Status::InvalidArgument("unsupported wire version " + std::to_string(e.version) +
                                   " (this side speaks " + std::to_string(kVersion) + ")");
  }
  if (e.body_len > max_body) {
    return Status::InvalidArgument("frame body " + std::to_string(e.body_len) +
                                   " bytes exceeds the limit " + std::to_string(max_body));
  }
  return e;
}

std::vector<iovec> FramedMessage::iov() const {
  std::vector<iovec> v;
  v.reserve(1 + payloads.size());
  v.push_back({const_cast<uint8_t*>(head.data()), head.size()});
  for (const auto& p : payloads) {
    if (p.size) v.push_back({const_cast<uint8_t*>(p.data), p.size});
  }
  return v;
}

size_t FramedMessage::total_bytes() const {
  size_t n = head.size();
  for (const auto& p : payloads) n += p.size;
  return n;
}

Result<FramedMessage> Frame(Message m, uint32_t max_body, PayloadCrcSource* crcs) {
  if (m.payloads.size() > kMaxPayloadsPerMessage) {
    return Status::InvalidArgument("message carries " + std::to_string(m.payloads.size()) +
                                   " payloads; the limit is " +
                                   std::to_string(kMaxPayloadsPerMessage));
  }
  uint64_t body = kBodyFixedBytes + 8ull * m.payloads.size() + m.fields.size();
  for (const auto& p : m.payloads) body += p.size;
  if (body > max_body) {
    return Status::InvalidArgument("message of " + std::to_string(body) +
                                   " bytes exceeds the frame limit " + std::to_string(max_body));
  }
  FramedMessage f;
  f.head.resize(kEnvelopeBytes + kBodyFixedBytes + 8 * m.payloads.size() + m.fields.size());
  uint8_t* b = f.head.data() + kEnvelopeBytes;
  StoreLe64(b, m.id);
  StoreLe16(b + 8, m.op);
  StoreLe16(b + 10, m.flags);
  StoreLe32(b + 12, static_cast<uint32_t>(m.payloads.size()));
  StoreLe32(b + 16, static_cast<uint32_t>(m.fields.size()));
  uint8_t* p = b + kBodyFixedBytes;
  for (const auto& s : m.payloads) {
    StoreLe64(p, s.size);
    p += 8;
  }
  if (!m.fields.empty()) std::memcpy(p, m.fields.data(), m.fields.size());
  uint32_t crc = Crc32c(b, f.head.size() - kEnvelopeBytes);
  for (const auto& s : m.payloads) {
    crc = crcs != nullptr && s.size >= kPayloadCrcSourceBytesMin
              ? Crc32cCombine(crc, crcs->PayloadCrc(s), s.size)
              : Crc32cAppend(crc, s.data, s.size);
  }
  EncodeEnvelope(static_cast<uint32_t>(body), crc, f.head.data());
  f.payloads = std::move(m.payloads);
  return f;
}

Result<BodyHead> ParseBodyHead(const uint8_t* in, size_t body_len) {
  if (body_len < kBodyFixedBytes) {
    return Status::InvalidArgument("frame body of " + std::to_string(body_len) +
                                   " bytes is shorter than the fixed " +
                                   std::to_string(kBodyFixedBytes) + "-byte message header");
  }
  BodyHead h;
  h.id = LoadLe64(in);
  h.op = LoadLe16(in + 8);
  h.flags = LoadLe16(in + 10);
  h.payload_count = LoadLe32(in + 12);
  h.fields_len = LoadLe32(in + 16);
  if (h.payload_count > kMaxPayloadsPerMessage || h.bytes() > body_len) {
    return Status::InvalidArgument("frame body of " + std::to_string(body_len) +
                                   " bytes cannot hold " + std::to_string(h.payload_count) +
                                   " payload lengths and " + std::to_string(h.fields_len) +
                                   " bytes of fields");
  }
  return h;
}

Result<Message> ParseBody(std::shared_ptr<const Buffer> body) {
  const uint8_t* b = body->data();
  const size_t n = body->size();
  WMBT_ASSIGN_OR_RETURN(BodyHead head, ParseBodyHead(b, n));
  Message m;
  m.id = head.id;
  m.op = head.op;
  m.flags = head.flags;
  const uint32_t count = head.payload_count;
  const uint32_t fields_len = head.fields_len;
  const uint8_t* table = b + kBodyFixedBytes;
  const uint8_t* fields = table + 8ull * count;
  m.fields.assign(fields, fields + fields_len);
  uint64_t offset = head.bytes();
  m.payloads.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t len = LoadLe64(table + 8ull * i);
    if (len > n - offset) {
      return Status::InvalidArgument("payload " + std::to_string(i) + " of " +
                                     std::to_string(len) + " bytes runs past the frame body");
    }
    m.payloads.push_back(BufferSlice{body, b + offset, static_cast<size_t>(len)});
    offset += len;
  }
  if (offset != n) {
    return Status::InvalidArgument("frame body has " + std::to_string(n - offset) +
                                   " trailing bytes after its payloads");
  }
  return m;
}

Status CheckBodyCrc(uint32_t expected, uint32_t actual) {
  if (actual == expected) return Status::Ok();
  char buf[96];
  std::snprintf(buf, sizeof buf, "frame CRC32C mismatch (envelope 0x%08x, body 0x%08x)", expected,
                actual);
  return Status::Corruption(buf);
}

Result<Message> ParseBody(std::shared_ptr<const Buffer> body, uint32_t expected_crc) {
  WMBT_RETURN_IF_ERROR(CheckBodyCrc(expected_crc, Crc32c(body->data(), body->size())));
  return ParseBody(std::move(body));
}

}  // namespace wombatkv::wire
