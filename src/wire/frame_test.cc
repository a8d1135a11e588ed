#include "wire/frame.h"

#include <gtest/gtest.h>

#include <cstring>

#include "base/crc32c.h"

namespace wombatkv::wire {
namespace {

std::shared_ptr<Buffer> Flatten(const FramedMessage& f) {
  auto out = Buffer::Allocate(f.total_bytes());
  size_t at = 0;
  for (const auto& v : f.iov()) {
    std::memcpy(out->data() + at, v.iov_base, v.iov_len);
    at += v.iov_len;
  }
  return out;
}

BufferSlice SliceOf(std::string_view s) {
  auto b = Buffer::CopyOf(AsBytes(s));
  return {b, b->data(), b->size()};
}

TEST(Frame, GoldenBytesOfASmallMessage) {
  Message m;
  m.id = 0x0102030405060708ull;
  m.op = 0x0a0b;
  m.flags = kFlagResponse;
  m.fields = {0xaa, 0xbb};
  m.payloads = {SliceOf("xyz")};
  auto f = Frame(m);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto all = Flatten(*f);
  const std::vector<uint8_t> body = {
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // id
      0x0b, 0x0a, 0x01, 0x00,                          // op, flags
      0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,  // payload_count, fields_len
      0x03, 0, 0, 0, 0, 0, 0, 0,                       // payload_len[0]
      0xaa, 0xbb, 'x', 'y', 'z'};
  const uint32_t crc = Crc32c(body.data(), body.size());
  std::vector<uint8_t> expected = {'W', 'M', 'B', 'T', 1, 0, 0, 0};
  for (int i = 0; i < 4; ++i) expected.push_back(uint8_t(crc >> (8 * i)));
  expected.insert(expected.end(), {uint8_t(body.size()), 0, 0, 0});
  expected.insert(expected.end(), body.begin(), body.end());
  EXPECT_EQ(std::vector<uint8_t>(all->data(), all->data() + all->size()), expected);
  EXPECT_EQ(crc, 0x5ba2ec3cu) << "the golden CRC recorded in docs/wire.md";
}

TEST(Frame, RoundTripsFieldsAndPayloadsWithoutCopyingPayloads) {
  Message m;
  m.id = 42;
  m.op = 7;
  m.fields = {1, 2, 3};
  m.payloads = {SliceOf("first"), SliceOf(""), SliceOf(std::string(100000, 'q'))};
  auto f = Frame(m);
  ASSERT_TRUE(f.ok());
  auto all = Flatten(*f);
  auto env = ParseEnvelope(all->data(), kDefaultMaxBodyBytes);
  ASSERT_TRUE(env.ok());
  ASSERT_EQ(env->body_len, all->size() - kEnvelopeBytes);
  auto body = Buffer::CopyOf({all->data() + kEnvelopeBytes, env->body_len});
  auto got = ParseBody(body, env->crc);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->id, 42u);
  EXPECT_EQ(got->op, 7);
  EXPECT_EQ(got->fields, m.fields);
  ASSERT_EQ(got->payloads.size(), 3u);
  EXPECT_EQ(AsChars(got->payloads[0].view()), "first");
  EXPECT_EQ(got->payloads[1].size, 0u);
  EXPECT_EQ(got->payloads[2].size, 100000u);
  EXPECT_GE(got->payloads[0].data, body->data());
  EXPECT_LT(got->payloads[0].data, body->data() + body->size()) << "payloads point into the body";
}

// A PayloadCrcSource supplies the CRCs of large payloads; the frame's bytes are the same.
TEST(Frame, PayloadCrcsFromASourceGiveTheSameBytes) {
  struct Counting : PayloadCrcSource {
    int asked = 0;
    uint32_t PayloadCrc(const BufferSlice& s) override {
      ++asked;
      return Crc32c(s.data, s.size);
    }
  } source;
  Message m;
  m.id = 9;
  m.op = 6;
  m.fields = {4, 5};
  m.payloads = {SliceOf(std::string(70000, 'a')), SliceOf("small"),
                SliceOf(std::string(kPayloadCrcSourceBytesMin, 'b'))};
  auto plain = Frame(m);
  auto sourced = Frame(m, kDefaultMaxBodyBytes, &source);
  ASSERT_TRUE(plain.ok() && sourced.ok());
  EXPECT_EQ(source.asked, 2) << "only the payloads of at least kPayloadCrcSourceBytesMin";
  auto a = Flatten(*plain);
  auto b = Flatten(*sourced);
  ASSERT_EQ(a->size(), b->size());
  EXPECT_EQ(std::memcmp(a->data(), b->data(), a->size()), 0);
}

TEST(Frame, EnvelopeRejectsBadMagicVersionAndLengthBeforeAllocating) {
  uint8_t e[kEnvelopeBytes];
  EncodeEnvelope(100, 0, e);
  EXPECT_TRUE(ParseEnvelope(e, 100).ok());
  auto too_long = ParseEnvelope(e, 99);
  EXPECT_EQ(too_long.status().code(), Code::kInvalidArgument);
  EXPECT_NE(too_long.status().message().find("exceeds the limit 99"), std::string::npos);
  e[0] = 'X';
  EXPECT_NE(ParseEnvelope(e, 100).status().message().find("bad magic"), std::string::npos);
  EncodeEnvelope(100, 0, e);
  e[4] = 9;
  EXPECT_NE(ParseEnvelope(e, 100).status().message().find("unsupported wire version 9"),
            std::string::npos);
}

TEST(Frame, BodyRejectsEveryInconsistency) {
  Message m;
  m.fields = {1, 2};
  m.payloads = {SliceOf("abcd")};
  auto f = Frame(m);
  ASSERT_TRUE(f.ok());
  auto all = Flatten(*f);
  std::vector<uint8_t> body(all->data() + kEnvelopeBytes, all->data() + all->size());
  auto parse = [](std::vector<uint8_t> b) { return ParseBody(Buffer::CopyOf(b)).status(); };
  EXPECT_TRUE(parse(body).ok());
  EXPECT_FALSE(parse({body.begin(), body.begin() + 10}).ok()) << "truncated fixed part";
  EXPECT_FALSE(parse({body.begin(), body.end() - 1}).ok()) << "payload runs past the end";
  auto trailing = body;
  trailing.push_back(0);
  EXPECT_FALSE(parse(trailing).ok()) << "trailing bytes";
  auto huge_count = body;
  huge_count[12] = 0xff;
  huge_count[13] = 0xff;
  huge_count[14] = 0xff;
  EXPECT_FALSE(parse(huge_count).ok()) << "payload table longer than the body";
  auto huge_len = body;
  huge_len[20 + 7] = 0x80;
  EXPECT_FALSE(parse(huge_len).ok()) << "payload length overflowing";
  auto crc_bad = ParseBody(Buffer::CopyOf(body), 0x12345678);
  EXPECT_EQ(crc_bad.status().code(), Code::kCorruption);
}

TEST(Frame, RefusesMessagesOverTheLimit) {
  Message m;
  m.payloads = {SliceOf(std::string(1000, 'a'))};
  EXPECT_FALSE(Frame(m, 999).ok());
  EXPECT_TRUE(Frame(m, 2000).ok());
}

}  // namespace
}  // namespace wombatkv::wire
