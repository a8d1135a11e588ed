// The store's API contract: argument checking, chains built from parents, compaction, listing.
#include <functional>

#include "store/store_test_util.h"

namespace wombatkv::testing {
namespace {

const Fingerprint kFp = Fp(1);

class StoreApi : public ::testing::Test {
 protected:
  StoreHarness h_{Planes::kMemory};
  Store& s_ = h_.Open();
};

TEST_F(StoreApi, BadNamespaceIsRejectedByEveryOperation) {
  auto c = MakeChain(1, 10);
  for (std::string_view ns : {"", "..", "a/b", "white space"}) {
    EXPECT_EQ(s_.PutBlocks(ns, kFp, c.Puts()).status().code(), Code::kInvalidArgument);
    EXPECT_EQ(s_.LookupPrefix(ns, kFp, c.keys).status().code(), Code::kInvalidArgument);
    EXPECT_EQ(s_.GetBlocks(ns, kFp, c.keys).status().code(), Code::kInvalidArgument);
    EXPECT_EQ(s_.PublishChain(ns, kFp, c.tip(), c.tip()).status().code(), Code::kInvalidArgument);
    EXPECT_EQ(s_.PutSidecar(ns, kFp, c.tip(), c.payloads[0]).code(), Code::kInvalidArgument);
  }
}

TEST_F(StoreApi, EmptyBatchZeroKeyAndSelfParentAreInvalid) {
  EXPECT_EQ(s_.PutBlocks("default", kFp, {}).status().code(), Code::kInvalidArgument);
  std::vector<uint8_t> p(10);
  BlockPut zero{BlockKey{}, BlockKey{}, p};
  EXPECT_EQ(s_.PutBlocks("default", kFp, {&zero, 1}).status().code(), Code::kInvalidArgument);
  BlockPut self{Key(1), Key(1), p};
  EXPECT_EQ(s_.PutBlocks("default", kFp, {&self, 1}).status().code(), Code::kInvalidArgument);
}

TEST_F(StoreApi, OversizedPayloadIsRejectedBeforeItIsRead) {
  uint8_t one = 0;
  // The size is checked before the bytes are touched, so this view is never dereferenced.
  BlockPut huge{Key(1), BlockKey{}, ByteView(&one, (256ull << 20) + 1)};
  auto r = s_.PutBlocks("default", kFp, {&huge, 1});
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("max"), std::string::npos);
}

TEST_F(StoreApi, PublishOfAChainWithAnUnknownAncestorFails) {
  std::vector<uint8_t> p(10);
  BlockPut orphan{Key(2), Key(1), p};  // parent Key(1) never put
  ASSERT_TRUE(s_.PutBlocks("default", kFp, {&orphan, 1}).ok());
  auto r = s_.PublishChain("default", kFp, Key(2), Key(2));
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(r.status().message().find(Key(1).ToHex()), std::string::npos);
  EXPECT_NE(r.status().message().find("an ancestor of tip"), std::string::npos);
  EXPECT_EQ(*s_.LookupPrefix("default", kFp, std::vector<BlockKey>{Key(1), Key(2)}), 0u);
  // A tip never put is named as the tip.
  r = s_.PublishChain("default", kFp, Key(3), Key(3));
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("(the tip itself)"), std::string::npos)
      << r.status().message();
}

TEST_F(StoreApi, PublishContinuesAnAlreadyPublishedPrefix) {
  auto c = MakeChain(6, 100);
  ASSERT_TRUE(s_.PutBlocks("default", kFp, c.Puts(0, 3)).ok());
  ASSERT_TRUE(s_.PublishChain("default", kFp, Key(500), c.keys[2]).ok());
  ASSERT_TRUE(s_.PutBlocks("default", kFp, c.Puts(3)).ok());
  ASSERT_TRUE(s_.PublishChain("default", kFp, Key(501), c.tip()).ok());
  EXPECT_EQ(*s_.LookupPrefix("default", kFp, c.keys), 6u);
  auto chain = s_.GetChain("default", kFp, Key(501));
  ASSERT_TRUE(chain.ok());
  ASSERT_EQ(chain->size(), 6u);
  EXPECT_EQ((*chain)[0].key, c.keys[0]);
  EXPECT_EQ((*chain)[5].hash, HashPayload(c.payloads[5]));
}

// A key put again with new bytes stays pending, to be published under those bytes, even when
// another chain is published meanwhile through the key's already-published block: that publish
// takes the old block from the index, so it publishes nothing of the new put.
TEST_F(StoreApi, APutOfAPublishedKeyOutlivesAPublishThroughItsOldBlock) {
  auto c = MakeChain(3, 100);
  ASSERT_TRUE(s_.PutBlocks("default", kFp, c.Puts(0, 2)).ok());
  ASSERT_TRUE(s_.PublishChain("default", kFp, c.keys[1], c.keys[1]).ok());
  const std::vector<uint8_t> fresh = Payload(77, 100);
  BlockPut again{c.keys[0], BlockKey{}, fresh};
  ASSERT_TRUE(s_.PutBlocks("default", kFp, {&again, 1}).ok());
  ASSERT_TRUE(s_.PutBlocks("default", kFp, c.Puts(2)).ok());
  ASSERT_TRUE(s_.PublishChain("default", kFp, c.tip(), c.tip()).ok());
  auto through = s_.GetChain("default", kFp, c.tip());
  ASSERT_TRUE(through.ok());
  EXPECT_EQ((*through)[0].hash, HashPayload(c.payloads[0])) << "the indexed block, not the put";
  EXPECT_EQ(s_.Stats().pending_blocks, 1u) << "the new put of key 0 was dropped";
  ASSERT_TRUE(s_.PublishChain("default", kFp, Key(700), c.keys[0]).ok());
  auto alone = s_.GetChain("default", kFp, Key(700));
  ASSERT_TRUE(alone.ok());
  ASSERT_EQ(alone->size(), 1u);
  EXPECT_EQ((*alone)[0].hash, HashPayload(fresh));
  EXPECT_EQ(s_.Stats().pending_blocks, 0u);
}

TEST_F(StoreApi, ResavingALongerChainCompactsTheRedundantHead) {
  // Engines re-save the whole chain each turn with the tip as chain id (the C ABI does).
  auto c = MakeChain(8, 100);
  for (size_t n : {2u, 5u, 8u}) {
    ASSERT_TRUE(s_.PutBlocks("default", kFp, c.Puts(0, n)).ok());
    ASSERT_TRUE(s_.PublishChain("default", kFp, c.keys[n - 1], c.keys[n - 1]).ok());
  }
  auto chains = s_.ListChains("default").value();
  ASSERT_EQ(chains.size(), 1u);
  EXPECT_EQ(chains[0].tip, c.tip());
  EXPECT_EQ(s_.Stats().heads_compacted, 2u);
  EXPECT_EQ(*s_.LookupPrefix("default", kFp, std::span(c.keys).first(5)), 5u);
  Store& r = h_.Reopen();
  EXPECT_EQ(r.ListChains("default").value().size(), 1u);
  EXPECT_EQ(*r.LookupPrefix("default", kFp, c.keys), 8u);
}

TEST_F(StoreApi, ExplicitlyNamedChainsAreNeverCompacted) {
  auto c = MakeChain(4, 100);
  ASSERT_TRUE(s_.PutBlocks("default", kFp, c.Puts()).ok());
  ASSERT_TRUE(s_.PublishChain("default", kFp, Key(900), c.keys[1]).ok());
  ASSERT_TRUE(s_.PublishChain("default", kFp, Key(901), c.tip()).ok());
  EXPECT_EQ(s_.ListChains("default").value().size(), 2u);
}

TEST_F(StoreApi, StaleCompareAndSwapIsAConflictBeforeAnythingElse) {
  auto c = MakeChain(2, 100);
  ASSERT_TRUE(s_.PutBlocks("default", kFp, c.Puts()).ok());
  ASSERT_EQ(*s_.PublishChain("default", kFp, Key(700), c.tip(), 0), 1u);
  ChainState cur;
  // The tip was never put: the stale version is still what the caller must learn about first.
  auto r = s_.PublishChain("default", kFp, Key(700), Key(12345), 0, &cur);
  EXPECT_TRUE(r.status().IsConflict()) << r.status().ToString();
  EXPECT_EQ(cur.version, 1u);
  EXPECT_EQ(cur.tip, c.tip());
  EXPECT_EQ(cur.length, 2u);
}

// An L2 whose conditional writes are emulated (an S3 server that ignores If-Match): a CAS
// publish would be a HEAD then a PUT, so two could both win. It is refused, saying why; a
// last-writer-wins publish still works, and Stats says the writes are emulated.
class EmulatedConditionalWrites final : public ObjectStoreWrapper {
 public:
  using ObjectStoreWrapper::ObjectStoreWrapper;
  bool HonoursConditionalWrites() const override { return false; }
};

TEST(StoreApiEmulatedL2, ACompareAndSwapPublishIsRefusedWhenL2CannotMakeItAtomic) {
  StoreHarness h(Planes::kMemory);
  EmulatedConditionalWrites l2(h.mem_l2());
  StoreOptions o = h.Options();
  o.object_store = &l2;
  Store& s = h.Open(o);
  auto c = MakeChain(2, 100);
  ASSERT_TRUE(s.PutBlocks("default", kFp, c.Puts()).ok());
  for (uint64_t expected : {0u, 1u}) {
    auto r = s.PublishChain("default", kFp, Key(700), c.tip(), expected);
    EXPECT_EQ(r.status().code(), Code::kFailedPrecondition) << r.status().ToString();
    EXPECT_NE(r.status().message().find("does not honour conditional writes"), std::string::npos)
        << r.status().message();
    EXPECT_EQ(*s.LookupPrefix("default", kFp, c.keys), 0u) << "a refused publish published";
  }
  EXPECT_EQ(*s.PublishChain("default", kFp, Key(700), c.tip()), 1u);
  EXPECT_EQ(*s.LookupPrefix("default", kFp, c.keys), 2u);
  EXPECT_EQ(s.Stats().l2_conditional_writes_emulated, 1u);
  EXPECT_EQ(h.Open().Stats().l2_conditional_writes_emulated, 0u) << "an honest L2 is not flagged";
}

TEST_F(StoreApi, OwnedPayloadsAreKeptWithoutACopy) {
  auto buf = Buffer::Allocate(5000);
  for (size_t i = 0; i < buf->size(); ++i) buf->data()[i] = static_cast<uint8_t>(i);
  BlockPut put{Key(1), BlockKey{}, {}, BufferSlice{buf, buf->data(), buf->size()}};
  auto hashes = s_.PutBlocks("default", kFp, {&put, 1});
  ASSERT_TRUE(hashes.ok());
  EXPECT_EQ((*hashes)[0], HashPayload(buf->view()));
  ASSERT_TRUE(s_.PublishChain("default", kFp, Key(1), Key(1)).ok());
  auto got = s_.GetBlocks("default", kFp, std::vector<BlockKey>{Key(1)});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->payload(0).data(), buf->data());
  EXPECT_EQ(got->payload(0).size(), 5000u);
}

TEST_F(StoreApi, GetIsAllOrNothing) {
  auto c = MakeChain(3, 100);
  ASSERT_TRUE(s_.PutBlocks("default", kFp, c.Puts()).ok());
  ASSERT_TRUE(s_.PublishChain("default", kFp, c.tip(), c.tip()).ok());
  std::vector<BlockKey> keys = c.keys;
  keys.push_back(Key(12345));
  auto r = s_.GetBlocks("default", kFp, keys);
  EXPECT_TRUE(r.status().IsNotFound());
  EXPECT_EQ(*s_.LookupPrefix("default", kFp, keys), 3u);
}

// Opens `h` with its options changed by `tune`, and publishes `c` in it.
static Store& OpenWithChain(StoreHarness& h, const std::function<void(StoreOptions&)>& tune,
                            const TestChain& c) {
  StoreOptions o = h.Options();
  tune(o);
  Store& s = h.Open(o);
  EXPECT_TRUE(s.PutBlocks("default", kFp, c.Puts()).ok());
  EXPECT_TRUE(s.PublishChain("default", kFp, c.tip(), c.tip()).ok());
  return s;
}

TEST_F(StoreApi, BorrowKeepsBytesValidAfterTheCacheEvictsThem) {
  StoreHarness small(Planes::kMemory);
  auto c = MakeChain(4, 3000);
  Store& s = OpenWithChain(small, [](StoreOptions& o) { o.cache_bytes_max = 4096; }, c);
  auto borrow = s.GetBlocks("default", kFp, c.keys);
  ASSERT_TRUE(borrow.ok());
  auto other = MakeChain(4, 3000, 9);
  ASSERT_TRUE(s.PutBlocks("default", kFp, other.Puts()).ok());
  ASSERT_TRUE(s.PublishChain("default", kFp, other.tip(), other.tip()).ok());
  ASSERT_TRUE(s.GetBlocks("default", kFp, other.keys).ok());
  for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(std::ranges::equal(borrow->payload(i), c.payloads[i]));
}

TEST_F(StoreApi, AGetOverItsByteBoundIsRefusedBeforeItReadsAnything) {
  StoreHarness bounded(Planes::kMemory);
  auto c = MakeChain(4, 3000);
  Store& s = OpenWithChain(bounded, [](StoreOptions& o) { o.get_bytes_max = 9000; }, c);
  const uint64_t gets = s.Stats().gets;
  auto all = s.GetBlocks("default", kFp, c.keys);
  EXPECT_EQ(all.status().code(), Code::kResourceExhausted) << all.status().ToString();
  EXPECT_NE(all.status().message().find("12000 bytes, over the 9000"), std::string::npos)
      << all.status().message();
  EXPECT_EQ(s.Stats().gets, gets) << "nothing was read";
  std::vector<BlockKey> three(c.keys.begin(), c.keys.begin() + 3);
  auto some = s.GetBlocks("default", kFp, three);
  ASSERT_TRUE(some.ok()) << some.status().ToString();
  EXPECT_TRUE(std::ranges::equal(some->payload(2), c.payloads[2]));
}

TEST_F(StoreApi, StatsCountOperations) {
  auto c = MakeChain(2, 100);
  ASSERT_TRUE(s_.PutBlocks("default", kFp, c.Puts()).ok());
  EXPECT_EQ(s_.Stats().pending_blocks, 2u);
  ASSERT_TRUE(s_.PublishChain("default", kFp, c.tip(), c.tip()).ok());
  ASSERT_TRUE(s_.LookupPrefix("default", kFp, c.keys).ok());
  StoreStats st = s_.Stats();
  EXPECT_EQ(st.puts, 2u);
  EXPECT_EQ(st.put_bytes, 200u);
  EXPECT_EQ(st.publishes, 1u);
  EXPECT_EQ(st.pending_blocks, 0u);
  EXPECT_EQ(st.l0_blocks, 2u);
  EXPECT_EQ(st.l0_chains, 1u);
  EXPECT_EQ(st.lookup_hit_keys, 2u);
}

}  // namespace
}  // namespace wombatkv::testing
