#include "layout/envelope.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/crc32c.h"
#include "base/endian.h"
#include "base/limits.h"
#include "layout/block_codec.h"

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

std::shared_ptr<Buffer> WithHeader(const EnvelopeHeader& header, const std::vector<uint8_t>& p) {
  auto buf = Buffer::Allocate(kEnvelopeHeaderBytes + p.size());
  std::memcpy(buf->data(), header.bytes, kEnvelopeHeaderBytes);
  if (!p.empty()) std::memcpy(buf->data() + kEnvelopeHeaderBytes, p.data(), p.size());
  return buf;
}

// A sidecar is sealed to its key: read under another namespace, fingerprint or tip (an object
// copied or restored to the wrong key) it is Corruption, never that key's bytes. One written
// before sidecars were sealed (version 1: its payload's hash alone) is still read.
TEST(Envelope, ASidecarIsSealedToItsKeyAndAnUnsealedOneIsStillRead) {
  const std::vector<uint8_t> p(300, 0x5c);
  Fingerprint fp, other_fp;
  other_fp.data()[0] = 1;
  BlockKey tip, other_tip;
  other_tip.data()[31] = 7;
  auto sealed = WithHeader(EncodeSidecarHeader("ns", fp, tip, p.size(), HashPayload(p)), p);
  auto got = DecodeSidecar(sealed, "ns", fp, tip, "t");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(std::ranges::equal(got->view(), p));
  EXPECT_EQ(DecodeSidecar(sealed, "ns", fp, other_tip, "t").status().code(), Code::kCorruption);
  EXPECT_EQ(DecodeSidecar(sealed, "ns", other_fp, tip, "t").status().code(), Code::kCorruption);
  EXPECT_EQ(DecodeSidecar(sealed, "other", fp, tip, "t").status().code(), Code::kCorruption);
  auto damaged = WithHeader(EncodeSidecarHeader("ns", fp, tip, p.size(), HashPayload(p)),
                            std::vector<uint8_t>(300, 0x5d));
  EXPECT_EQ(DecodeSidecar(damaged, "ns", fp, tip, "t").status().code(), Code::kCorruption);

  auto unsealed = Wrap(EnvelopeKind::kSidecar, p);
  got = DecodeSidecar(unsealed, "ns", fp, other_tip, "t");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(std::ranges::equal(got->view(), p));
  // A blob envelope of version 2 does not exist.
  auto as_blob = WithHeader(EncodeSidecarHeader("ns", fp, tip, p.size(), HashPayload(p)), p);
  std::memcpy(as_blob->data(), "WKB1", 4);
  StoreLe32(as_blob->data() + 44, Crc32c(as_blob->data(), 44));
  EXPECT_EQ(DecodeEnvelope(EnvelopeKind::kBlob, as_blob, "t").status().code(), Code::kCorruption);
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

// A zstd envelope around `payload`, stored bytes as given (by default its zstd frame).
std::shared_ptr<Buffer> WrapZstd(const std::vector<uint8_t>& payload,
                                 std::vector<uint8_t> stored = {}) {
  if (stored.empty()) {
    stored.resize(ZSTD_compressBound(payload.size()));
    stored.resize(ZSTD_compress(stored.data(), stored.size(), payload.data(), payload.size(), 1));
  }
  auto header = EncodeEnvelopeHeader(
      EnvelopeKind::kBlob, {Codec::kZstd, payload.size(), stored.size(), HashPayload(payload)});
  auto buf = Buffer::Allocate(kEnvelopeHeaderBytes + stored.size());
  std::memcpy(buf->data(), header.bytes, kEnvelopeHeaderBytes);
  std::memcpy(buf->data() + kEnvelopeHeaderBytes, stored.data(), stored.size());
  return buf;
}

std::vector<uint8_t> HalfZeros(size_t n) {
  std::vector<uint8_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = i % 4 < 2 ? static_cast<uint8_t>(i * 131 + (i >> 7)) : 0;
  return p;
}

TEST(Envelope, ZstdRoundTripsIntoAFreshBuffer) {
  const std::vector<uint8_t> p = HalfZeros(100000);
  auto obj = WrapZstd(p);
  ASSERT_LT(obj->size(), p.size());
  auto r = DecodeVerified(EnvelopeKind::kBlob, obj, HashPayload(p), "t");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(std::ranges::equal(r->view(), p));
  EXPECT_NE(r->owner, obj);
  auto fields = ParseEnvelopeHeader(EnvelopeKind::kBlob, obj->view(), "t");
  ASSERT_TRUE(fields.ok());
  EXPECT_EQ(fields->codec, Codec::kZstd);
  EXPECT_EQ(fields->payload_len, p.size());
  EXPECT_EQ(fields->stored_len, obj->size() - kEnvelopeHeaderBytes);
}

TEST(Envelope, ZstdBytesThatDoNotDecodeToThePayloadLengthAreCorruption) {
  const std::vector<uint8_t> p = HalfZeros(5000);
  std::vector<uint8_t> shorter(p.begin(), p.end() - 1), longer = p;
  longer.push_back(0);
  std::vector<uint8_t> frame(ZSTD_compressBound(longer.size()));
  for (const auto* other : {&shorter, &longer}) {
    frame.resize(ZSTD_compressBound(other->size()));
    frame.resize(ZSTD_compress(frame.data(), frame.size(), other->data(), other->size(), 1));
    auto r = DecodeEnvelope(EnvelopeKind::kBlob, WrapZstd(p, frame), "t");
    EXPECT_EQ(r.status().code(), Code::kCorruption) << other->size();
  }
  auto garbage = DecodeEnvelope(EnvelopeKind::kBlob, WrapZstd(p, {1, 2, 3, 4, 5}), "t");
  EXPECT_EQ(garbage.status().code(), Code::kCorruption);
  EXPECT_NE(garbage.status().message().find("zstd"), std::string::npos)
      << garbage.status().ToString();
}

TEST(Envelope, AHeaderWithAnUnknownCodecOrInconsistentLengthsIsCorruption) {
  const std::vector<uint8_t> p = HalfZeros(1000);
  auto rewrite = [&](uint8_t codec, uint64_t stored_len) {
    auto obj = Wrap(EnvelopeKind::kBlob, p);
    obj->data()[5] = codec;
    StoreLe64(obj->data() + 16, stored_len);
    StoreLe32(obj->data() + 44, Crc32c(obj->data(), 44));
    return ParseEnvelopeHeader(EnvelopeKind::kBlob, obj->view(), "t").status();
  };
  EXPECT_TRUE(rewrite(0, p.size()).ok());
  EXPECT_NE(rewrite(2, p.size()).message().find("unknown codec 2"), std::string::npos);
  EXPECT_EQ(rewrite(0, p.size() - 1).code(), Code::kCorruption);  // raw: stored = payload
  EXPECT_EQ(rewrite(1, p.size()).code(), Code::kCorruption);      // zstd: stored < payload
  EXPECT_EQ(rewrite(1, 0).code(), Code::kCorruption);
  EXPECT_TRUE(rewrite(1, p.size() - 1).ok());
}

TEST(Envelope, OnlyBlobsMayBeCompressed) {
  const std::vector<uint8_t> p = HalfZeros(1000);
  auto obj = WrapZstd(p);
  obj->data()[2] = 'S';  // "WKS1": the same bytes as a sidecar
  StoreLe32(obj->data() + 44, Crc32c(obj->data(), 44));
  auto r = DecodeEnvelope(EnvelopeKind::kSidecar, obj, "t");
  EXPECT_EQ(r.status().code(), Code::kCorruption);
  EXPECT_NE(r.status().message().find("only blobs"), std::string::npos) << r.status().ToString();
}

TEST(Envelope, AZstdBlobIsCheckedAgainstItsNameBeforeItIsDecoded) {
  // A header asking for the largest payload, under another blob's name: refused on the name
  // (no 256 MiB buffer is made for it), not on the frame.
  const std::vector<uint8_t> p = HalfZeros(1000);
  auto obj = WrapZstd(p);
  StoreLe64(obj->data() + 8, limits::kBlockBytesMax);
  StoreLe32(obj->data() + 44, Crc32c(obj->data(), 44));
  auto r = DecodeVerified(EnvelopeKind::kBlob, obj, HashPayload(HalfZeros(999)), "t");
  EXPECT_EQ(r.status().code(), Code::kCorruption);
  EXPECT_NE(r.status().message().find("envelope names content hash"), std::string::npos)
      << r.status().ToString();
}

TEST(BlockCodec, CompressesOnlyWhenItSavesASixteenth) {
  const std::vector<uint8_t> p = HalfZeros(64 << 10);
  BufferSlice packed = CompressIfWorthIt(p, 1);
  ASSERT_NE(packed.owner, nullptr);
  EXPECT_LT(packed.size, p.size() - p.size() / 16);
  auto back = Decompress(packed.view(), p.size(), "t");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(std::ranges::equal((*back)->view(), p));
  std::vector<uint8_t> noise(64 << 10);
  uint64_t x = 88172645463325252ull;
  for (auto& b : noise) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<uint8_t>(x);
  }
  EXPECT_EQ(CompressIfWorthIt(noise, 9).owner, nullptr);
  // Every level, including those whose context is made per call (above 3).
  for (int level = limits::kZstdLevelMin; level <= limits::kZstdLevelMax; ++level) {
    BufferSlice at = CompressIfWorthIt(p, level);
    ASSERT_NE(at.owner, nullptr) << level;
    auto plain = Decompress(at.view(), p.size(), "t");
    ASSERT_TRUE(plain.ok()) << level;
    EXPECT_TRUE(std::ranges::equal((*plain)->view(), p)) << level;
  }
  EXPECT_EQ(CompressIfWorthIt({}, 1).owner, nullptr);
  EXPECT_EQ(CompressIfWorthIt(std::vector<uint8_t>(8, 0), 1).owner, nullptr);  // header > saving
}

}  // namespace
}  // namespace wombatkv::layout
