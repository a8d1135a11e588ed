// WMBT_KV_BLOCK_COMPRESS (StoreOptions::block_compress_level): blobs stored zstd-compressed when
// that saves, raw otherwise; read back by any store whatever its own setting; a blob of either
// codec stands for a put of the same bytes by a writer of the other; damage is still caught (G9).
#include <gtest/gtest.h>

#include "base/limits.h"
#include "layout/envelope.h"
#include "layout/object_keys.h"
#include "store/store_test_util.h"

namespace wombatkv::testing {
namespace {

const Fingerprint kFp = Fp(9);

// Half the bytes zero, as in the high bytes of small 16-bit values: compresses to about half.
TestChain CompressibleChain(size_t n, size_t bytes) {
  TestChain c = MakeChain(n, bytes, 7);
  for (auto& p : c.payloads) {
    for (size_t i = 0; i < p.size(); ++i) {
      if (i % 4 >= 2) p[i] = 0;
    }
  }
  return c;
}

// Both ways of uploading a blob: put at once, or looked for first (kBlobBytesLookedForFirst).
class StoreCompress : public ::testing::TestWithParam<size_t> {
 protected:
  Store& Open(int level) {
    StoreOptions o = h_.Options();
    o.block_compress_level = level;
    return h_.Open(o);
  }
  std::string BlobKey(const std::vector<uint8_t>& payload) {
    return layout::BlobKey("kv", "default", HashPayload(payload));
  }
  layout::EnvelopeFields Header(const std::string& key) {
    auto obj = h_.mem_l2()->Get(key);
    EXPECT_TRUE(obj.ok()) << obj.status().ToString();
    if (!obj.ok()) return {};
    auto f = layout::ParseEnvelopeHeader(layout::EnvelopeKind::kBlob, obj->bytes->view(), key);
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    return f.ok() ? *f : layout::EnvelopeFields{};
  }
  void PutAndPublish(Store& s, const TestChain& c) {
    ASSERT_TRUE(s.PutBlocks("default", kFp, c.Puts()).ok());
    auto v = s.PublishChain("default", kFp, c.tip(), c.tip());
    ASSERT_TRUE(v.ok()) << v.status().ToString();
  }
  void ExpectChainReadsBack(Store& s, const TestChain& c) {
    auto got = s.GetBlocks("default", kFp, c.keys);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    for (size_t i = 0; i < c.keys.size(); ++i) {
      const ByteView p = got->payload(i);
      EXPECT_TRUE(std::equal(p.begin(), p.end(), c.payloads[i].begin(), c.payloads[i].end()))
          << "block " << i;
    }
  }

  StoreHarness h_{Planes::kMemory};
};

TEST_P(StoreCompress, CompressibleBlocksAreStoredSmallerAndReadBackByAStoreThatDoesNotCompress) {
  const TestChain c = CompressibleChain(3, GetParam());
  Store& s = Open(3);
  PutAndPublish(s, c);
  uint64_t stored = 0, saved = 0;
  for (const auto& p : c.payloads) {
    const std::string key = BlobKey(p);
    const layout::EnvelopeFields f = Header(key);
    EXPECT_EQ(f.codec, layout::Codec::kZstd);
    EXPECT_EQ(f.payload_len, p.size());
    EXPECT_LT(f.stored_len, p.size() * 3 / 4);
    auto head = h_.mem_l2()->Head(key);
    ASSERT_TRUE(head.ok());
    EXPECT_EQ(head->size, layout::kEnvelopeHeaderBytes + f.stored_len);
    stored += head->size;
    saved += p.size() - f.stored_len;
  }
  EXPECT_EQ(s.Stats().l2_blobs_compressed, c.payloads.size());
  EXPECT_EQ(s.Stats().l2_compress_saved_bytes, saved);
  // The put counter counts what went to L2 (the blobs compressed, and a head of a few hundred
  // bytes), not the blocks' raw size.
  EXPECT_GE(s.Stats().l2_put_bytes, stored);
  EXPECT_LT(s.Stats().l2_put_bytes, stored + 1024);
  Store& raw = Open(0);  // a restart: the RAM cache is empty, every block comes from L2
  ExpectChainReadsBack(raw, c);
  EXPECT_EQ(raw.Stats().corruptions_detected, 0u);
}

TEST_P(StoreCompress, BlocksThatDoNotCompressAreStoredRaw) {
  const TestChain c = MakeChain(2, GetParam(), 8);  // pseudo-random bytes
  Store& s = Open(9);
  PutAndPublish(s, c);
  EXPECT_EQ(s.Stats().l2_blobs_compressed, 0u);
  EXPECT_EQ(s.Stats().l2_compress_saved_bytes, 0u);
  for (const auto& p : c.payloads) {
    EXPECT_EQ(Header(BlobKey(p)).codec, layout::Codec::kRaw);
    EXPECT_EQ(h_.mem_l2()->Head(BlobKey(p))->size, layout::kEnvelopeHeaderBytes + p.size());
  }
  ExpectChainReadsBack(Open(1), c);
}

TEST_P(StoreCompress, ABlobOfEitherCodecOrAnyLevelStandsForAPutOfItsBytes) {
  const TestChain c = CompressibleChain(1, GetParam());
  const std::string key = BlobKey(c.payloads[0]);
  // Written raw, then compressing writers at two levels; written compressed, then a raw writer.
  for (const std::vector<int>& levels : {std::vector<int>{0, 1, 9}, std::vector<int>{1, 0, 9}}) {
    h_.Close();
    ASSERT_TRUE(h_.mem_l2()->Delete(key).ok());
    PutAndPublish(Open(levels[0]), c);
    const std::string etag = h_.mem_l2()->Head(key)->etag;
    for (size_t i = 1; i < levels.size(); ++i) {
      SCOPED_TRACE("written at level " + std::to_string(levels[0]) + ", put again at level " +
                   std::to_string(levels[i]));
      Store& s = Open(levels[i]);  // an empty RAM cache: the blob is found only in L2
      PutAndPublish(s, c);
      EXPECT_EQ(h_.mem_l2()->Head(key)->etag, etag) << "the blob was written again";
      ExpectChainReadsBack(s, c);
    }
  }
}

TEST_P(StoreCompress, ADamagedCompressedBlobIsReplacedWhenItsBytesArePutAgain) {
  const TestChain c = CompressibleChain(1, GetParam());
  const std::string key = BlobKey(c.payloads[0]);
  PutAndPublish(Open(1), c);
  auto good = h_.mem_l2()->Get(key);
  ASSERT_TRUE(good.ok());
  const ByteView whole = good->bytes->view();
  // Cut short under a sound header; a sound header naming another payload length.
  std::vector<std::vector<uint8_t>> damaged;
  damaged.emplace_back(whole.begin(), whole.end() - 1);
  layout::EnvelopeFields other = Header(key);
  other.payload_len -= 1;
  const auto header = layout::EncodeEnvelopeHeader(layout::EnvelopeKind::kBlob, other);
  damaged.emplace_back(header.bytes, header.bytes + sizeof header.bytes);
  damaged.back().insert(damaged.back().end(), whole.begin() + layout::kEnvelopeHeaderBytes,
                        whole.end());
  for (size_t d = 0; d < damaged.size(); ++d) {
    SCOPED_TRACE("damage " + std::to_string(d));
    h_.Close();
    ASSERT_TRUE(h_.mem_l2()->Put(key, {ByteView(damaged[d])}, {}).ok());
    Store& s = Open(1);
    EXPECT_EQ(s.GetBlocks("default", kFp, c.keys).status().code(), Code::kCorruption);  // G9
    PutAndPublish(s, c);
    auto now = h_.mem_l2()->Get(key);
    ASSERT_TRUE(now.ok());
    EXPECT_TRUE(std::ranges::equal(now->bytes->view(), whole)) << "not replaced";
  }
}

TEST_P(StoreCompress, AFlippedByteOfACompressedBlobIsCorruptionNeverOtherBytes) {
  const TestChain c = CompressibleChain(1, GetParam());
  const std::string key = BlobKey(c.payloads[0]);
  PutAndPublish(Open(1), c);
  auto good = h_.mem_l2()->Get(key);
  ASSERT_TRUE(good.ok());
  const std::vector<uint8_t> whole(good->bytes->view().begin(), good->bytes->view().end());
  // Every header byte, then a spread of the compressed bytes (each a fresh store: no RAM copy).
  // A few bytes of a zstd frame do not change what it decodes to (its window size, say): such a
  // flip may read back the very payload, verified by its hash (G9 is about wrong bytes).
  size_t flips = 0, caught = 0;
  for (size_t i = 0; i < whole.size(); i += i < layout::kEnvelopeHeaderBytes ? 1 : 97) {
    std::vector<uint8_t> bad = whole;
    bad[i] ^= 0x10;
    ASSERT_TRUE(h_.mem_l2()->Put(key, {ByteView(bad)}, {}).ok());
    Store& s = Open(0);
    auto got = s.GetBlocks("default", kFp, c.keys);
    ++flips;
    if (!got.ok()) {
      EXPECT_EQ(got.status().code(), Code::kCorruption) << "byte " << i;
      ++caught;
    } else {
      EXPECT_TRUE(std::ranges::equal(got->payload(0), c.payloads[0])) << "byte " << i;
      EXPECT_GE(i, layout::kEnvelopeHeaderBytes) << "a header byte went unnoticed";
    }
  }
  EXPECT_GE(caught * 10, flips * 9) << caught << " of " << flips << " flips caught";
}

TEST(StoreCompressOptions, ALevelOutsideOneToNineIsRefusedAtOpen) {
  for (int level : {-1, 10, 22}) {
    StoreHarness h(Planes::kMemory);
    StoreOptions o = h.Options();
    o.block_compress_level = level;
    auto s = Store::Open(o);
    EXPECT_EQ(s.status().code(), Code::kInvalidArgument) << level;
    EXPECT_NE(s.status().message().find("block_compress_level"), std::string::npos);
  }
}

// The local directory's journal keeps a packed blob's bytes by reference until its round is
// written: the compressed buffer must live that long, and read back after a restart.
TEST(StoreCompressOnDisk, CompressedBlobsPackedInTheJournalReadBackAfterARestart) {
  StoreHarness h(Planes::kDisk);
  TestChain c = CompressibleChain(8, 200 << 10);
  c.payloads[3].resize(5000);
  StoreOptions o = h.Options();
  o.block_compress_level = 1;
  {
    Store& s = h.Open(o);
    ASSERT_TRUE(s.PutBlocks("default", kFp, c.Puts()).ok());
    ASSERT_TRUE(s.PublishChain("default", kFp, c.tip(), c.tip()).ok());
    EXPECT_EQ(s.Stats().l2_blobs_compressed, c.payloads.size());
  }
  h.Close();
  Store& s = h.Open();  // raw, and a new process: every block comes from the journal files
  auto got = s.GetBlocks("default", kFp, c.keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  for (size_t i = 0; i < c.keys.size(); ++i) {
    EXPECT_TRUE(std::ranges::equal(got->payload(i), c.payloads[i])) << "block " << i;
  }
  EXPECT_EQ(s.Stats().corruptions_detected, 0u);
}

INSTANTIATE_TEST_SUITE_P(BelowAndAboveTheLookFirstSize, StoreCompress,
                         ::testing::Values(size_t{10000},
                                           size_t{limits::kBlobBytesLookedForFirst + 1000}));

}  // namespace
}  // namespace wombatkv::testing
