#include "layout/envelope.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace wombatkv::layout {
namespace {

std::shared_ptr<Buffer> Wrap(EnvelopeKind kind, const std::vector<uint8_t>& payload) {
  const ContentHash h = HashPayload(payload);
  auto header = EncodeEnvelopeHeader(kind, payload.size(), h);
  auto buf = Buffer::Allocate(kEnvelopeHeaderBytes + payload.size());
  std::memcpy(buf->data(), header.bytes, kEnvelopeHeaderBytes);
  if (!payload.empty()) std::memcpy(buf->data() + kEnvelopeHeaderBytes, payload.data(), payload.size());
  return buf;
}

TEST(Envelope, RoundTripReturnsThePayloadWithoutCopying) {
  std::vector<uint8_t> p(1000, 0xab);
  auto obj = Wrap(EnvelopeKind::kBlob, p);
  auto r = DecodeVerified(EnvelopeKind::kBlob, obj, HashPayload(p), "t");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->data, obj->data() + kEnvelopeHeaderBytes);
  EXPECT_EQ(r->size, p.size());
}

TEST(Envelope, EmptyPayloadRoundTrips) {
  std::vector<uint8_t> p;
  auto r = DecodeVerified(EnvelopeKind::kSidecar, Wrap(EnvelopeKind::kSidecar, p), HashPayload(p), "t");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size, 0u);
}

TEST(Envelope, EveryFlippedByteIsDetected) {
  std::vector<uint8_t> p(64);
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(i);
  const ContentHash h = HashPayload(p);
  auto good = Wrap(EnvelopeKind::kBlob, p);
  for (size_t i = 0; i < good->size(); ++i) {
    auto bad = Buffer::CopyOf(good->view());
    bad->data()[i] ^= 0x40;
    auto r = DecodeVerified(EnvelopeKind::kBlob, bad, h, "t");
    EXPECT_EQ(r.status().code(), Code::kCorruption) << "byte " << i;
  }
}

TEST(Envelope, TruncatedOrExtendedObjectIsCorruption) {
  std::vector<uint8_t> p(100, 1);
  auto good = Wrap(EnvelopeKind::kBlob, p);
  for (size_t n : {size_t{0}, size_t{10}, kEnvelopeHeaderBytes, good->size() - 1}) {
    auto cut = Buffer::CopyOf(good->view().first(n));
    EXPECT_EQ(DecodeEnvelope(EnvelopeKind::kBlob, cut, "t").status().code(), Code::kCorruption);
  }
  auto longer = Buffer::Allocate(good->size() + 1);
  std::memcpy(longer->data(), good->data(), good->size());
  EXPECT_EQ(DecodeEnvelope(EnvelopeKind::kBlob, longer, "t").status().code(), Code::kCorruption);
}

TEST(Envelope, BlobAndSidecarEnvelopesAreNotInterchangeable) {
  std::vector<uint8_t> p(10, 2);
  auto r = DecodeEnvelope(EnvelopeKind::kSidecar, Wrap(EnvelopeKind::kBlob, p), "t");
  EXPECT_EQ(r.status().code(), Code::kCorruption);
}

TEST(Envelope, ObjectNamedForAnotherHashIsCorruption) {
  std::vector<uint8_t> p(10, 3), q(10, 4);
  auto r = DecodeVerified(EnvelopeKind::kBlob, Wrap(EnvelopeKind::kBlob, p), HashPayload(q), "t");
  EXPECT_EQ(r.status().code(), Code::kCorruption);
}

}  // namespace
}  // namespace wombatkv::layout
