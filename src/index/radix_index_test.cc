#include "index/radix_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

// Counts heap allocations, so the test can pin that lookups never allocate.
static std::atomic<size_t> g_allocations{0};
void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
// GCC pairs the inlined free() with the replaced operator new and warns; the pairing is right.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace wombatkv {
namespace {

uint64_t SplitMix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A hash-like key derived from n (what engines normally pass).
BlockKey Key(uint64_t n) {
  BlockKey k;
  uint64_t s = n * 7919 + 1;
  for (int w = 0; w < 4; ++w) {
    uint64_t v = SplitMix(s);
    std::memcpy(k.data() + 8 * w, &v, 8);
  }
  return k;
}

// A structured key: only the first byte differs (keys need not be hashes).
BlockKey SmallKey(uint8_t n) {
  BlockKey k;
  k.bytes[0] = n;
  return k;
}

ContentHash Hash(uint64_t n) {
  ContentHash h;
  uint64_t s = n + 0xABCDEF;
  uint64_t v = SplitMix(s);
  std::memcpy(h.data(), &v, 8);
  v = SplitMix(s);
  std::memcpy(h.data() + 8, &v, 8);
  return h;
}

Fingerprint Fp(uint8_t n) {
  Fingerprint fp;
  fp.bytes[0] = n;
  fp.bytes[11] = 0x5A;
  return fp;
}

ChainId Id(uint64_t n) { return Key(1'000'000 + n); }

// Entries for `keys` whose metas are derived from (key position, variant).
std::vector<ChainEntry> Entries(const std::vector<BlockKey>& keys, uint64_t variant = 0) {
  std::vector<ChainEntry> out;
  for (size_t i = 0; i < keys.size(); ++i) {
    out.push_back(ChainEntry{keys[i], Hash(variant * 1000 + i), static_cast<uint32_t>(100 + i)});
  }
  return out;
}

ChainInfo Info(const ChainId& id, const std::vector<ChainEntry>& entries, uint64_t version = 1,
               uint64_t etag_digest = 7) {
  return ChainInfo{id, version, etag_digest, entries.back().key,
                   static_cast<uint32_t>(entries.size())};
}

void Put(RadixIndex& index, std::string_view ns, const Fingerprint& fp, const ChainId& id,
         const std::vector<ChainEntry>& entries, uint64_t version = 1, uint64_t order = 0) {
  index.PutChain(ns, fp, Info(id, entries, version), entries, 0, order);
}

size_t Lookup(const RadixIndex& index, std::string_view ns, const Fingerprint& fp,
              const std::vector<BlockKey>& keys) {
  return index.LookupPrefix(ns, fp, keys);
}

std::vector<BlockKey> KeysOf(const std::vector<ChainEntry>& entries) {
  std::vector<BlockKey> out;
  for (const auto& e : entries) out.push_back(e.key);
  return out;
}

#define EXPECT_INVARIANTS(index)             \
  do {                                       \
    Status st_ = (index).CheckInvariants();  \
    EXPECT_TRUE(st_.ok()) << st_.ToString(); \
  } while (0)

const Fingerprint kFp = Fp(1);

TEST(RadixIndex, EmptyLookupReturnsZero) {
  RadixIndex index;
  std::vector<BlockKey> keys = {Key(1), Key(2)};
  EXPECT_EQ(index.LookupPrefix("ns", kFp, keys), 0u);
  EXPECT_EQ(index.LookupPrefix("ns", kFp, {}), 0u);
  Put(index, "ns", kFp, Id(1), Entries(keys));
  EXPECT_EQ(index.LookupPrefix("ns", kFp, {}), 0u);
  std::vector<BlockMeta> metas(1);
  EXPECT_EQ(index.Resolve("ns", kFp, {}, metas), 0u);
  EXPECT_EQ(index.block_count(), 2u);
  EXPECT_EQ(index.chain_count(), 1u);
  EXPECT_INVARIANTS(index);
}

TEST(RadixIndex, LookupStopsAtFirstMissingKey) {
  RadixIndex index;
  Put(index, "ns", kFp, Id(1), Entries({Key(1), Key(2), Key(3), Key(4)}));
  EXPECT_EQ(Lookup(index, "ns", kFp, {Key(1), Key(2), Key(3), Key(4)}), 4u);
  EXPECT_EQ(Lookup(index, "ns", kFp, {Key(1), Key(2), Key(99), Key(4)}), 2u);
  EXPECT_EQ(Lookup(index, "ns", kFp, {Key(1), Key(2), Key(3), Key(4), Key(5)}), 4u);
  EXPECT_EQ(Lookup(index, "ns", kFp, {Key(99), Key(1)}), 0u);
  std::vector<BlockMeta> metas(4);
  std::vector<BlockKey> keys = {Key(1), Key(2), Key(99), Key(4)};
  EXPECT_EQ(index.Resolve("ns", kFp, keys, metas), 2u);
  EXPECT_EQ(metas[0].hash, Hash(0));
  EXPECT_EQ(metas[1].hash, Hash(1));
  EXPECT_EQ(metas[1].length, 101u);
}

TEST(RadixIndex, LookupRequiresPathFromRoot) {
  RadixIndex index;
  Put(index, "ns", kFp, Id(1), Entries({Key(1), Key(2), Key(3)}));
  Put(index, "ns", kFp, Id(2), Entries({Key(7), Key(3)}));
  // Key(2) and Key(3) are present, but not as roots.
  EXPECT_EQ(Lookup(index, "ns", kFp, {Key(2), Key(3)}), 0u);
  EXPECT_EQ(Lookup(index, "ns", kFp, {Key(3)}), 0u);
  // Key(3) exists under Key(2) and under Key(7), not under Key(1).
  EXPECT_EQ(Lookup(index, "ns", kFp, {Key(1), Key(3)}), 1u);
  EXPECT_EQ(Lookup(index, "ns", kFp, {Key(7), Key(2)}), 1u);
  EXPECT_EQ(Lookup(index, "ns", kFp, {Key(7), Key(3)}), 2u);
  EXPECT_EQ(Lookup(index, "ns", kFp, {Key(1), Key(2), Key(3)}), 3u);
  EXPECT_EQ(index.block_count(), 5u);  // Key(3) is two nodes (I3)
  EXPECT_INVARIANTS(index);
}

TEST(RadixIndex, SameKeyAtTwoDepthsOfOneChainIsTwoNodes) {
  RadixIndex index;
  std::vector<BlockKey> keys = {SmallKey(1), SmallKey(2), SmallKey(1), SmallKey(1)};
  Put(index, "ns", kFp, Id(1), Entries(keys, 3));
  EXPECT_EQ(index.block_count(), 4u);
  EXPECT_EQ(Lookup(index, "ns", kFp, keys), 4u);
  EXPECT_EQ(index.ChainEntries("ns", kFp, Id(1)), Entries(keys, 3));
  EXPECT_INVARIANTS(index);
  EXPECT_TRUE(index.RemoveChain("ns", kFp, Id(1)));
  EXPECT_EQ(index.block_count(), 0u);
  EXPECT_INVARIANTS(index);
}

TEST(RadixIndex, ScopesAreIsolated) {  // G8
  RadixIndex index;
  std::vector<BlockKey> keys = {Key(1), Key(2), Key(3)};
  Put(index, "tenant-a", Fp(1), Id(1), Entries(keys, 1));
  EXPECT_EQ(Lookup(index, "tenant-a", Fp(1), keys), 3u);
  EXPECT_EQ(Lookup(index, "tenant-b", Fp(1), keys), 0u);  // other namespace
  EXPECT_EQ(Lookup(index, "tenant-a", Fp(2), keys), 0u);  // other fingerprint
  EXPECT_EQ(Lookup(index, "tenant-", Fp(1), keys), 0u);
  std::vector<BlockMeta> metas(3);
  EXPECT_EQ(index.Resolve("tenant-b", Fp(1), keys, metas), 0u);
  EXPECT_FALSE(index.GetChain("tenant-b", Fp(1), Id(1)).has_value());
  EXPECT_FALSE(index.GetChain("tenant-a", Fp(2), Id(1)).has_value());
  EXPECT_TRUE(index.ChainEntries("tenant-b", Fp(1), Id(1)).empty());
  EXPECT_TRUE(index.PathTo("tenant-a", Fp(2), Key(2)).empty());
  EXPECT_FALSE(index.RemoveChain("tenant-b", Fp(1), Id(1)));
  EXPECT_FALSE(index.RemoveChain("tenant-a", Fp(2), Id(1)));
  EXPECT_EQ(Lookup(index, "tenant-a", Fp(1), keys), 3u);

  // The same keys and chain id in another scope are separate nodes with their own metas.
  Put(index, "tenant-b", Fp(1), Id(1), Entries(keys, 2));
  Put(index, "tenant-a", Fp(2), Id(1), Entries(keys, 3));
  EXPECT_EQ(index.block_count(), 9u);
  ASSERT_EQ(index.Resolve("tenant-a", Fp(1), keys, metas), 3u);
  EXPECT_EQ(metas[2].hash, Hash(1002));
  ASSERT_EQ(index.Resolve("tenant-b", Fp(1), keys, metas), 3u);
  EXPECT_EQ(metas[2].hash, Hash(2002));
  ASSERT_EQ(index.Resolve("tenant-a", Fp(2), keys, metas), 3u);
  EXPECT_EQ(metas[2].hash, Hash(3002));
  // A scope that exists but lacks the key: nothing leaks in from the other scopes.
  Put(index, "tenant-c", Fp(1), Id(1), Entries({Key(50)}, 4));
  EXPECT_TRUE(index.PathTo("tenant-c", Fp(1), Key(2)).empty());
  EXPECT_EQ(Lookup(index, "tenant-c", Fp(1), keys), 0u);
  EXPECT_EQ(KeysOf(index.PathTo("tenant-b", Fp(1), Key(2))),
            (std::vector<BlockKey>{Key(1), Key(2)}));
  EXPECT_TRUE(index.RemoveChain("tenant-b", Fp(1), Id(1)));
  EXPECT_EQ(Lookup(index, "tenant-b", Fp(1), keys), 0u);
  EXPECT_EQ(Lookup(index, "tenant-a", Fp(1), keys), 3u);
  EXPECT_EQ(Lookup(index, "tenant-a", Fp(2), keys), 3u);
  EXPECT_INVARIANTS(index);
}

TEST(RadixIndex, ReplacingChainReleasesUnsharedNodes) {
  RadixIndex index;
  Put(index, "ns", kFp, Id(1), Entries({Key(1), Key(2), Key(3), Key(4)}), 1);
  EXPECT_EQ(index.block_count(), 4u);
  Put(index, "ns", kFp, Id(1), Entries({Key(1), Key(2), Key(5)}), 2);
  EXPECT_EQ(index.block_count(), 3u);
  EXPECT_EQ(index.chain_count(), 1u);
  EXPECT_EQ(Lookup(index, "ns", kFp, {Key(1), Key(2), Key(3)}), 2u);
  EXPECT_EQ(Lookup(index, "ns", kFp, {Key(1), Key(2), Key(5)}), 3u);
  auto info = index.GetChain("ns", kFp, Id(1));
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->version, 2u);
  EXPECT_EQ(info->tip, Key(5));
  EXPECT_EQ(info->length, 3u);
  EXPECT_INVARIANTS(index);
  // Re-publishing the identical chain keeps everything.
  Put(index, "ns", kFp, Id(1), Entries({Key(1), Key(2), Key(5)}), 3);
  EXPECT_EQ(index.block_count(), 3u);
  EXPECT_EQ(Lookup(index, "ns", kFp, {Key(1), Key(2), Key(5)}), 3u);
  EXPECT_INVARIANTS(index);
  // A completely different chain under the same id frees all old nodes.
  Put(index, "ns", kFp, Id(1), Entries({Key(8)}), 4);
  EXPECT_EQ(index.block_count(), 1u);
  EXPECT_EQ(Lookup(index, "ns", kFp, {Key(1)}), 0u);
  EXPECT_INVARIANTS(index);
}

TEST(RadixIndex, SharedPrefixSurvivesRemovalOfOneChain) {
  RadixIndex index;
  Put(index, "ns", kFp, Id(1), Entries({Key(1), Key(2), Key(3)}));
  Put(index, "ns", kFp, Id(2), Entries({Key(1), Key(2), Key(4)}));
  EXPECT_EQ(index.block_count(), 4u);
  EXPECT_TRUE(index.RemoveChain("ns", kFp, Id(1)));
  EXPECT_EQ(index.block_count(), 3u);
  EXPECT_EQ(Lookup(index, "ns", kFp, {Key(1), Key(2), Key(4)}), 3u);
  EXPECT_EQ(Lookup(index, "ns", kFp, {Key(1), Key(2), Key(3)}), 2u);
  EXPECT_FALSE(index.RemoveChain("ns", kFp, Id(1)));
  EXPECT_INVARIANTS(index);
  EXPECT_TRUE(index.RemoveChain("ns", kFp, Id(2)));
  EXPECT_EQ(index.block_count(), 0u);
  EXPECT_EQ(index.chain_count(), 0u);
  EXPECT_EQ(Lookup(index, "ns", kFp, {Key(1)}), 0u);
  EXPECT_INVARIANTS(index);
}

TEST(RadixIndex, NewestPublishWinsNodeMeta) {
  RadixIndex index;
  std::vector<BlockKey> keys = {Key(1), Key(2), Key(3)};
  std::vector<BlockMeta> metas(3);
  Put(index, "ns", kFp, Id(1), Entries({Key(1), Key(2)}, 1));
  Put(index, "ns", kFp, Id(2), Entries(keys, 2));
  ASSERT_EQ(index.Resolve("ns", kFp, keys, metas), 3u);
  EXPECT_EQ(metas[0].hash, Hash(2000));
  EXPECT_EQ(metas[1].hash, Hash(2001));
  Put(index, "ns", kFp, Id(1), Entries({Key(1), Key(2)}, 3));
  ASSERT_EQ(index.Resolve("ns", kFp, keys, metas), 3u);
  EXPECT_EQ(metas[0].hash, Hash(3000));
  EXPECT_EQ(metas[1].hash, Hash(3001));
  EXPECT_EQ(metas[2].hash, Hash(2002));
  // Removing the newest writer does not revert a shared node's meta.
  EXPECT_TRUE(index.RemoveChain("ns", kFp, Id(1)));
  ASSERT_EQ(index.Resolve("ns", kFp, keys, metas), 3u);
  EXPECT_EQ(metas[0].hash, Hash(3000));
  EXPECT_EQ(index.ChainEntries("ns", kFp, Id(2))[0].hash, Hash(3000));
}

// I8: a chain put with an older order (a head learned late) does not replace the meta of a newer
// one, and nodes left naming a departed chain's bytes take the newest remaining chain's.
TEST(RadixIndex, NodeMetaFollowsTheNewestOrderAndStaleNodesTakeTheNewestRemainingChains) {
  RadixIndex index;
  std::map<ChainId, std::pair<uint64_t, std::vector<ChainEntry>>> own;
  auto put = [&](uint64_t id, const std::vector<BlockKey>& keys, uint64_t order) {
    own[Id(id)] = {order, Entries(keys, id)};
    Put(index, "ns", kFp, Id(id), own[Id(id)].second, 1, order);
  };
  auto remove = [&](uint64_t id) {
    const auto [departed_order, gone] = own.at(Id(id));
    own.erase(Id(id));
    EXPECT_TRUE(index.RemoveChain("ns", kFp, Id(id)));
    std::set<ContentHash> named;
    for (const auto& [cid, c] : own) {
      for (const auto& e : c.second) named.insert(e.hash);
    }
    return index.ReassignStaleMeta(
        "ns", kFp, KeysOf(gone), departed_order,
        [&](const ContentHash& h) { return !named.count(h); },
        [&](const ChainId& cid, uint32_t position) -> std::optional<RadixIndex::OwnEntry> {
          const auto& [order, entries] = own.at(cid);
          return RadixIndex::OwnEntry{{entries[position].hash, entries[position].length}, order};
        });
  };
  const std::vector<BlockKey> keys = {Key(1), Key(2), Key(3)};
  std::vector<BlockMeta> metas(3);
  put(1, {Key(1), Key(2)}, 20);
  put(2, keys, 10);  // older
  ASSERT_EQ(index.Resolve("ns", kFp, keys, metas), 3u);
  EXPECT_EQ(metas[0].hash, Hash(1000));
  EXPECT_EQ(metas[1].hash, Hash(1001));
  EXPECT_EQ(metas[2].hash, Hash(2002));
  put(3, {Key(1), Key(2), Key(4)}, 15);
  EXPECT_EQ(metas[0].hash, Hash(1000));
  EXPECT_EQ(remove(1), 2u);  // chains 2 and 3 pass through Key(1), Key(2): 3 is newer
  ASSERT_EQ(index.Resolve("ns", kFp, keys, metas), 3u);
  EXPECT_EQ(metas[0].hash, Hash(3000));
  EXPECT_EQ(metas[1].hash, Hash(3001));
  EXPECT_EQ(metas[2].hash, Hash(2002));
  EXPECT_EQ(remove(3), 2u);
  ASSERT_EQ(index.Resolve("ns", kFp, keys, metas), 3u);
  EXPECT_EQ(metas[0].hash, Hash(2000));
  EXPECT_EQ(metas[1].hash, Hash(2001));
  EXPECT_EQ(index.ChainEntries("ns", kFp, Id(2)), own.at(Id(2)).second);
  EXPECT_INVARIANTS(index);
}

TEST(RadixIndex, PathToReturnsRootToKey) {
  RadixIndex index;
  auto entries = Entries({Key(1), Key(2), Key(3)}, 5);
  Put(index, "ns", kFp, Id(1), entries);
  EXPECT_EQ(index.PathTo("ns", kFp, Key(2)),
            std::vector<ChainEntry>(entries.begin(), entries.begin() + 2));
  EXPECT_EQ(index.PathTo("ns", kFp, Key(3)), entries);
  EXPECT_TRUE(index.PathTo("ns", kFp, Key(9)).empty());

  // Key(4) under two parents: the one a chain of the newest order wrote wins (I8).
  Put(index, "ns", kFp, Id(2), Entries({Key(1), Key(4)}, 6), 1, 10);
  Put(index, "ns", kFp, Id(3), Entries({Key(7), Key(4)}, 7), 1, 20);
  EXPECT_EQ(KeysOf(index.PathTo("ns", kFp, Key(4))), (std::vector<BlockKey>{Key(7), Key(4)}));
  Put(index, "ns", kFp, Id(2), Entries({Key(1), Key(4)}, 8), 2, 30);
  EXPECT_EQ(index.PathTo("ns", kFp, Key(4)), Entries({Key(1), Key(4)}, 8));
  EXPECT_TRUE(index.RemoveChain("ns", kFp, Id(2)));
  EXPECT_EQ(KeysOf(index.PathTo("ns", kFp, Key(4))), (std::vector<BlockKey>{Key(7), Key(4)}));
}

// Equal ETags give equal digests; different ETags, or one index's seed against another's, differ.
TEST(RadixIndex, EtagDigestsAreKeyedByTheIndexSeed) {
  RadixIndex a(1), b(2);
  EXPECT_EQ(a.EtagDigest("\"9b2cf535f27731c974343645a3985328\""),
            a.EtagDigest("\"9b2cf535f27731c974343645a3985328\""));
  EXPECT_NE(a.EtagDigest("\"9b2cf535f27731c974343645a3985328\""),
            a.EtagDigest("\"9b2cf535f27731c974343645a3985329\""));
  EXPECT_NE(a.EtagDigest("p-1"), a.EtagDigest("p-1 "));
  EXPECT_NE(a.EtagDigest(""), a.EtagDigest(std::string_view("\0", 1)));
  EXPECT_NE(a.EtagDigest("p-1"), b.EtagDigest("p-1"));
}

TEST(RadixIndex, ChainEntriesRoundTrip) {
  RadixIndex index;
  std::vector<BlockKey> keys;
  for (int i = 0; i < 100; ++i) keys.push_back(Key(i));
  auto entries = Entries(keys, 9);
  index.PutChain("ns", kFp, Info(Id(1), entries, 42, 0x0123456789abcdefull), entries);
  EXPECT_EQ(index.ChainEntries("ns", kFp, Id(1)), entries);
  EXPECT_TRUE(index.ChainEntries("ns", kFp, Id(2)).empty());
  auto info = index.GetChain("ns", kFp, Id(1));
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->chain_id, Id(1));
  EXPECT_EQ(info->version, 42u);
  EXPECT_EQ(info->etag_digest, 0x0123456789abcdefull);
  EXPECT_EQ(info->tip, keys.back());
  EXPECT_EQ(info->length, 100u);
  int seen = 0;
  index.ForEachChain([&](std::string_view ns, const Fingerprint& fp, const ChainInfo& c) {
    ++seen;
    EXPECT_EQ(ns, "ns");
    EXPECT_EQ(fp, kFp);
    EXPECT_EQ(c.chain_id, Id(1));
    EXPECT_EQ(c.tip, keys.back());
  });
  EXPECT_EQ(seen, 1);
}

TEST(RadixIndex, ForEachBlockVisitsEveryNodeOnce) {
  RadixIndex index;
  Put(index, "a", Fp(1), Id(1), Entries({Key(1), Key(2), Key(3)}, 1));
  Put(index, "a", Fp(1), Id(2), Entries({Key(1), Key(2), Key(4)}, 1));
  Put(index, "b", Fp(1), Id(1), Entries({Key(1)}, 2));
  std::multiset<std::tuple<std::string, uint8_t, BlockKey>> seen;
  index.ForEachBlock(
      [&](std::string_view ns, const Fingerprint& fp, const BlockKey& key, const BlockMeta& meta) {
        seen.emplace(std::string(ns), fp.bytes[0], key);
        EXPECT_NE(meta.length, 0u);
      });
  std::multiset<std::tuple<std::string, uint8_t, BlockKey>> want = {
      {"a", 1, Key(1)}, {"a", 1, Key(2)}, {"a", 1, Key(3)}, {"a", 1, Key(4)}, {"b", 1, Key(1)}};
  EXPECT_EQ(seen, want);
}

TEST(RadixIndex, LookupAndResolveDoNotAllocate) {
  RadixIndex index;
  // Names longer than the small-string buffer, so building a std::string from one would allocate.
  const std::string ns = "a-namespace-longer-than-sso";
  std::vector<BlockKey> keys;
  for (int i = 0; i < 40; ++i) keys.push_back(Key(i));
  Put(index, ns, kFp, Id(1), Entries(keys));
  keys.push_back(Key(99));
  std::vector<BlockMeta> metas(keys.size());
  const size_t before = g_allocations.load();
  size_t found = index.LookupPrefix(ns, kFp, keys);
  found += index.Resolve(ns, kFp, keys, metas);
  found += index.LookupPrefix("another-namespace-longer-than-sso", kFp, keys);
  found += index.LookupPrefix(ns, Fp(9), keys);
  found += index.LookupPrefix(ns, kFp, keys, /*touch=*/7);  // raising a use stamp allocates nothing
  found += index.Resolve(ns, kFp, keys, metas, /*touch=*/8);
  const size_t after = g_allocations.load();
  EXPECT_EQ(found, 160u);
  EXPECT_EQ(after, before);
}

// ------------------------------------------------------------------ use stamps and trimming (I7)

std::vector<uint32_t> TailStamps(const RadixIndex& index, const ChainId& id) {
  std::vector<uint32_t> out;
  for (const auto& t : index.TrimmableTail("ns", kFp, id, SIZE_MAX)) out.push_back(t.used);
  return out;
}

TEST(RadixIndex, TouchingLookupStampsOnlyTheDeepestMatchedNode) {
  RadixIndex index;
  const std::vector<BlockKey> keys = {Key(1), Key(2), Key(3), Key(4)};
  index.PutChain("ns", kFp, Info(Id(1), Entries(keys)), Entries(keys), /*used=*/10);
  EXPECT_EQ(TailStamps(index, Id(1)), (std::vector<uint32_t>{10, 10, 10, 10}));  // tip first
  std::vector<BlockKey> probe = {Key(1), Key(2), Key(9)};
  EXPECT_EQ(index.LookupPrefix("ns", kFp, probe, /*touch=*/20), 2u);
  EXPECT_EQ(TailStamps(index, Id(1)), (std::vector<uint32_t>{10, 10, 20, 10}));
  EXPECT_EQ(index.LookupPrefix("ns", kFp, probe), 2u);  // touch 0: a pure read
  EXPECT_EQ(index.LookupPrefix("ns", kFp, probe, /*touch=*/15), 2u);  // never lowers a stamp
  EXPECT_EQ(TailStamps(index, Id(1)), (std::vector<uint32_t>{10, 10, 20, 10}));
  std::vector<BlockMeta> metas(keys.size());
  EXPECT_EQ(index.Resolve("ns", kFp, keys, metas, /*touch=*/30), 4u);
  EXPECT_EQ(TailStamps(index, Id(1)), (std::vector<uint32_t>{30, 10, 20, 10}));
  EXPECT_EQ(index.ChainUsed("ns", kFp, Id(1)), 30u);
  EXPECT_FALSE(index.ChainUsed("ns", kFp, Id(2)).has_value());
  // A publish through the path raises every node of it, and never lowers one.
  index.PutChain("ns", kFp, Info(Id(1), Entries(keys), 2), Entries(keys), /*used=*/25);
  EXPECT_EQ(TailStamps(index, Id(1)), (std::vector<uint32_t>{30, 25, 25, 25}));
  EXPECT_INVARIANTS(index);
}

TEST(RadixIndex, TrimmableTailStopsWhereAnotherChainJoins) {
  RadixIndex index;
  // Id(1): 1-2-3-4-5; Id(2): 1-2-6 (branches at 2); Id(3): 1-2-3 (a prefix of Id(1)).
  Put(index, "ns", kFp, Id(1), Entries({Key(1), Key(2), Key(3), Key(4), Key(5)}));
  Put(index, "ns", kFp, Id(2), Entries({Key(1), Key(2), Key(6)}));
  Put(index, "ns", kFp, Id(3), Entries({Key(1), Key(2), Key(3)}));
  EXPECT_EQ(KeysOf([&] {
              std::vector<ChainEntry> e;
              for (const auto& t : index.TrimmableTail("ns", kFp, Id(1), SIZE_MAX))
                e.push_back(t.entry);
              return e;
            }()),
            (std::vector<BlockKey>{Key(5), Key(4)}));  // node 3 is also Id(3)'s
  EXPECT_EQ(index.TrimmableTail("ns", kFp, Id(2), SIZE_MAX).size(), 1u);  // node 2 is shared
  EXPECT_TRUE(index.TrimmableTail("ns", kFp, Id(3), SIZE_MAX).empty());   // tip has a child (I5)
  EXPECT_EQ(index.TrimmableTail("ns", kFp, Id(1), 1).size(), 1u);          // bounded
  std::set<ChainId> trimmable;
  index.ForEachTrimmableChain("ns", [&](const Fingerprint& fp, const ChainId& id, uint32_t) {
    EXPECT_EQ(fp, kFp);
    trimmable.insert(id);
  });
  size_t all = 0;
  for (size_t slice = 0; slice < RadixIndex::kChainSlices; ++slice) {
    index.ForEachChainUse(slice, [&](std::string_view, const Fingerprint&, const ChainId&,
                                     uint32_t) { ++all; });
  }
  EXPECT_EQ(all, 3u);
  EXPECT_EQ(trimmable, (std::set<ChainId>{Id(1), Id(2)}));
  // Two chains with one tip: the tail is both chains' (refs 2 all the way to the join).
  Put(index, "ns", kFp, Id(4), Entries({Key(1), Key(2), Key(6)}));
  EXPECT_EQ(index.TrimmableTail("ns", kFp, Id(2), SIZE_MAX).size(), 1u);
  EXPECT_EQ(index.TrimmableTail("ns", kFp, Id(4), SIZE_MAX).size(), 1u);
}

// The chains a sweep of one slice visits, as (ns, id) with the use stamp it reported.
std::map<std::pair<std::string, ChainId>, uint32_t> SliceOf(const RadixIndex& index,
                                                            size_t slice) {
  std::map<std::pair<std::string, ChainId>, uint32_t> out;
  index.ForEachChainUse(slice, [&](std::string_view ns, const Fingerprint&, const ChainId& id,
                                   uint32_t used) {
    EXPECT_TRUE(out.emplace(std::pair(std::string(ns), id), used).second) << "visited twice";
  });
  return out;
}

TEST(RadixIndex, ASliceSweepVisitsItsOwnChainsOnceInSmallAndSplitScopes) {
  RadixIndex index;
  // "big" passes the size at which a scope splits its chains by slice; "small" never does.
  constexpr uint64_t kBig = 700, kSmall = 40;
  std::map<std::pair<std::string, ChainId>, uint32_t> want;
  for (uint64_t i = 0; i < kBig + kSmall; ++i) {
    const std::string ns = i < kBig ? "big" : "small";
    const auto e = Entries({Key(2 * i), Key(2 * i + 1)});
    index.PutChain(ns, kFp, Info(Id(i), e, 1), e, /*used=*/static_cast<uint32_t>(i % 9));
    want[{ns, Id(i)}] = static_cast<uint32_t>(i % 9);
  }
  // A lookup stamps the deepest node it matched: the chain's use is the newest on its path.
  index.LookupPrefix("big", kFp, std::vector<BlockKey>{Key(0)}, /*touch=*/50);
  want[{"big", Id(0)}] = 50;
  for (uint64_t i = 0; i < kBig; i += 3) {  // removals from the split scope
    ASSERT_TRUE(index.RemoveChain("big", kFp, Id(i)));
    want.erase({"big", Id(i)});
  }
  ASSERT_TRUE(index.CheckInvariants().ok()) << index.CheckInvariants().ToString();
  std::map<std::pair<std::string, ChainId>, uint32_t> seen;
  size_t slices_used = 0;
  for (size_t slice = 0; slice < RadixIndex::kChainSlices; ++slice) {
    const auto got = SliceOf(index, slice);
    slices_used += !got.empty();
    for (const auto& [name, used] : got) {
      EXPECT_EQ(RadixIndex::ChainSlice(name.second), slice);
      EXPECT_EQ(index.ChainUsed(name.first, kFp, name.second), used);
      EXPECT_TRUE(seen.emplace(name, used).second);
    }
  }
  EXPECT_EQ(seen, want);
  EXPECT_GT(slices_used, RadixIndex::kChainSlices / 2);  // the ids spread over the slices
}

TEST(RadixIndex, ForEachChainInAndNamespacesSeeOnlyWhatIsThere) {
  RadixIndex index;
  EXPECT_TRUE(index.Namespaces().empty());
  Put(index, "b", kFp, Id(1), Entries({Key(1)}));
  Put(index, "a", kFp, Id(2), Entries({Key(2)}));
  Put(index, "a", Fp(2), Id(3), Entries({Key(3), Key(4)}));
  Put(index, "ab", kFp, Id(4), Entries({Key(5)}));
  EXPECT_EQ(index.Namespaces(), (std::vector<std::string>{"a", "ab", "b"}));
  std::set<std::pair<Fingerprint, ChainId>> in_a;
  index.ForEachChainIn("a", [&](const Fingerprint& fp, const ChainInfo& info) {
    in_a.emplace(fp, info.chain_id);
    if (info.chain_id == Id(3)) {
      EXPECT_EQ(info.length, 2u);
    }
  });
  EXPECT_EQ(in_a, (std::set<std::pair<Fingerprint, ChainId>>{{kFp, Id(2)}, {Fp(2), Id(3)}}));
  size_t in_other = 0;
  index.ForEachChainIn("c", [&](const Fingerprint&, const ChainInfo&) { ++in_other; });
  EXPECT_EQ(in_other, 0u);
  ASSERT_TRUE(index.RemoveChain("b", kFp, Id(1)));
  EXPECT_EQ(index.Namespaces(), (std::vector<std::string>{"a", "ab"}));
}

TEST(RadixIndex, CountsTipsThatARemovalOrReplacementLeavesTrimmable) {
  RadixIndex index;
  Put(index, "ns", kFp, Id(1), Entries({Key(1), Key(2)}));          // A
  Put(index, "ns", kFp, Id(2), Entries({Key(1), Key(2), Key(3)}));  // B extends A
  Put(index, "ns", kFp, Id(3), Entries({Key(7), Key(8)}));          // C, alone
  EXPECT_EQ(index.tips_exposed(), 0u);
  // C trimmed to its first block: its own new tip, no other chain's.
  Put(index, "ns", kFp, Id(3), Entries({Key(7)}));
  EXPECT_EQ(index.tips_exposed(), 0u);
  // B trimmed back to A's tip: A's tip has no child any more.
  Put(index, "ns", kFp, Id(2), Entries({Key(1), Key(2)}));
  EXPECT_EQ(index.tips_exposed(), 1u);
  Put(index, "ns", kFp, Id(4), Entries({Key(1), Key(2), Key(5)}));  // D extends A again
  ASSERT_TRUE(index.RemoveChain("ns", kFp, Id(4)));                  // and goes: A's tip bare
  EXPECT_EQ(index.tips_exposed(), 2u);
  ASSERT_TRUE(index.RemoveChain("ns", kFp, Id(3)));  // C's nodes all go: nothing bared
  EXPECT_EQ(index.tips_exposed(), 2u);
  std::set<ChainId> trimmable;
  index.ForEachTrimmableChain("ns", [&](const Fingerprint&, const ChainId& id, uint32_t) {
    trimmable.insert(id);
  });
  EXPECT_EQ(trimmable, (std::set<ChainId>{Id(1), Id(2)}));
}

TEST(RadixIndex, HasKeyFindsAKeyUnderAnyParentOfItsScopeOnly) {
  RadixIndex index;
  Put(index, "ns", kFp, Id(1), Entries({Key(1), Key(2)}));
  Put(index, "ns", kFp, Id(2), Entries({Key(7), Key(8), Key(2)}));
  EXPECT_TRUE(index.HasKey("ns", kFp, Key(2)));
  EXPECT_TRUE(index.HasKey("ns", kFp, Key(8)));
  EXPECT_FALSE(index.HasKey("ns", kFp, Key(3)));
  EXPECT_FALSE(index.HasKey("ns", Fp(2), Key(2)));
  EXPECT_FALSE(index.HasKey("other", kFp, Key(2)));
  EXPECT_TRUE(index.RemoveChain("ns", kFp, Id(1)));
  EXPECT_TRUE(index.HasKey("ns", kFp, Key(2)));  // still under Key(8)
  EXPECT_TRUE(index.RemoveChain("ns", kFp, Id(2)));
  EXPECT_FALSE(index.HasKey("ns", kFp, Key(2)));
}

// ------------------------------------------------------------------ randomized model test

// The reference: chains as plain vectors; nodes as a map from key path to (refs, meta, the order
// of the meta), maintained independently of the index's tree.
struct Model {
  struct NodeState {
    int refs = 0;
    BlockMeta meta;
    uint64_t order = 0;
  };
  struct ScopeState {
    std::map<ChainId, std::pair<ChainInfo, std::vector<ChainEntry>>> chains;
    std::map<ChainId, uint64_t> orders;
    std::map<std::vector<BlockKey>, NodeState> nodes;
  };
  std::map<std::pair<std::string, Fingerprint>, ScopeState> scopes;

  void Release(ScopeState& s, const std::vector<ChainEntry>& entries) {
    std::vector<BlockKey> path;
    for (const auto& e : entries) {
      path.push_back(e.key);
      auto it = s.nodes.find(path);
      ASSERT_NE(it, s.nodes.end());
      if (--it->second.refs == 0) s.nodes.erase(it);
    }
  }
  void Put(const std::string& ns, const Fingerprint& fp, const ChainInfo& info,
           const std::vector<ChainEntry>& entries, uint64_t order) {
    ScopeState& s = scopes[{ns, fp}];
    std::vector<BlockKey> path;
    for (const auto& e : entries) {
      path.push_back(e.key);
      NodeState& n = s.nodes[path];
      ++n.refs;
      if (order >= n.order) {
        n.meta = BlockMeta{e.hash, e.length};
        n.order = order;
      }
    }
    auto it = s.chains.find(info.chain_id);
    if (it != s.chains.end()) Release(s, it->second.second);
    s.chains[info.chain_id] = {info, entries};
    s.orders[info.chain_id] = order;
  }
  // Naive ReassignStaleMeta: each node on the path with the departed order or stale bytes takes
  // the meta of the newest chain whose keys start with the node's path.
  void Reassign(const std::string& ns, const Fingerprint& fp, const std::vector<BlockKey>& keys,
                uint64_t departed_order, const std::function<bool(const ContentHash&)>& stale) {
    auto sit = scopes.find({ns, fp});
    if (sit == scopes.end()) return;
    ScopeState& s = sit->second;
    std::vector<BlockKey> path;
    for (const BlockKey& k : keys) {
      path.push_back(k);
      auto nit = s.nodes.find(path);
      if (nit == s.nodes.end()) return;
      if (nit->second.order != departed_order && !stale(nit->second.meta.hash)) continue;
      std::optional<std::pair<uint64_t, ChainEntry>> best;
      for (const auto& [id, chain] : s.chains) {
        const auto& e = chain.second;
        if (e.size() < path.size() ||
            !std::equal(path.begin(), path.end(), e.begin(),
                        [](const BlockKey& a, const ChainEntry& b) { return a == b.key; })) {
          continue;
        }
        const uint64_t order = s.orders.at(id);
        if (!best || order >= best->first) best.emplace(order, e[path.size() - 1]);
      }
      if (!best) continue;
      nit->second.meta = BlockMeta{best->second.hash, best->second.length};
      nit->second.order = best->first;
    }
  }
  bool Remove(const std::string& ns, const Fingerprint& fp, const ChainId& id) {
    auto sit = scopes.find({ns, fp});
    if (sit == scopes.end()) return false;
    auto it = sit->second.chains.find(id);
    if (it == sit->second.chains.end()) return false;
    Release(sit->second, it->second.second);
    sit->second.chains.erase(it);
    sit->second.orders.erase(id);
    if (sit->second.chains.empty()) scopes.erase(sit);
    return true;
  }
  // Naive LookupPrefix: the longest common prefix with any chain of the scope.
  size_t Lookup(const std::string& ns, const Fingerprint& fp,
                const std::vector<BlockKey>& keys) const {
    auto sit = scopes.find({ns, fp});
    if (sit == scopes.end()) return 0;
    size_t best = 0;
    for (const auto& [id, chain] : sit->second.chains) {
      const auto& entries = chain.second;
      size_t i = 0;
      while (i < keys.size() && i < entries.size() && entries[i].key == keys[i]) ++i;
      best = std::max(best, i);
    }
    return best;
  }
  size_t blocks() const {
    size_t n = 0;
    for (const auto& [k, s] : scopes) n += s.nodes.size();
    return n;
  }
  size_t chains() const {
    size_t n = 0;
    for (const auto& [k, s] : scopes) n += s.chains.size();
    return n;
  }
  const NodeState* Node(const std::string& ns, const Fingerprint& fp,
                        const std::vector<BlockKey>& path) const {
    auto sit = scopes.find({ns, fp});
    if (sit == scopes.end()) return nullptr;
    auto it = sit->second.nodes.find(path);
    return it == sit->second.nodes.end() ? nullptr : &it->second;
  }
};

class RandomOps {
 public:
  explicit RandomOps(uint64_t seed) : rng_(seed) {
    for (uint8_t i = 0; i < 12; ++i) key_pool_.push_back(Key(i));
    for (uint8_t i = 0; i < 12; ++i) key_pool_.push_back(SmallKey(i));
  }

  void Run(int ops) {
    for (int op = 0; op < ops && !::testing::Test::HasFailure(); ++op) {
      Step(op);
    }
  }

 private:
  uint64_t Uniform(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  const BlockKey& AnyKey() { return key_pool_[Uniform(key_pool_.size())]; }

  void Step(int op) {
    const std::string ns = kNamespaces[Uniform(2)];
    const Fingerprint fp = Fp(static_cast<uint8_t>(1 + Uniform(2)));
    const ChainId id = Id(Uniform(10));
    const uint64_t dice = Uniform(100);
    SCOPED_TRACE("op " + std::to_string(op));
    if (dice < 62) {
      std::vector<ChainEntry> entries = NewChain(ns, fp);
      ChainInfo info = Info(id, entries, Uniform(1000), rng_());
      // Mostly newer than every chain so far; sometimes older, as a head learned late from L2.
      // Distinct, so the newest chain through a node is one (the model and the index may break
      // ties differently).
      uint64_t order = next_order_;
      while (Uniform(4) == 0 && !orders_.count(order - 1 - Uniform(3))) order -= 1 + Uniform(3);
      if (orders_.count(order)) order = next_order_;
      orders_.insert(order);
      next_order_ += 4;
      const auto [gone, gone_order] = Own(ns, fp, id);
      index_.PutChain(ns, fp, info, entries, 0, order);
      model_.Put(ns, fp, info, entries, order);
      Reassign(ns, fp, gone, gone_order);
    } else if (dice < 98) {
      const auto [gone, gone_order] = Own(ns, fp, id);
      EXPECT_EQ(index_.RemoveChain(ns, fp, id), model_.Remove(ns, fp, id));
      Reassign(ns, fp, gone, gone_order);
    } else {  // drop a whole scope, so the table shrinks and scope ids are reused
      auto sit = model_.scopes.find({ns, fp});
      if (sit != model_.scopes.end()) {
        std::vector<ChainId> ids;
        for (const auto& [cid, c] : sit->second.chains) ids.push_back(cid);
        for (const auto& cid : ids) {
          EXPECT_TRUE(index_.RemoveChain(ns, fp, cid));
          EXPECT_TRUE(model_.Remove(ns, fp, cid));
        }
      }
    }
    Status st = index_.CheckInvariants();
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(index_.block_count(), model_.blocks());
    ASSERT_EQ(index_.chain_count(), model_.chains());
    CheckScope(ns, fp, id);
    if (op % 64 == 0) CheckEverything();
  }

  // The keys and order of chain `id` as the model has it (none if absent).
  std::pair<std::vector<BlockKey>, uint64_t> Own(const std::string& ns, const Fingerprint& fp,
                                                 const ChainId& id) {
    auto sit = model_.scopes.find({ns, fp});
    if (sit == model_.scopes.end() || !sit->second.chains.count(id)) return {};
    return {KeysOf(sit->second.chains.at(id).second), sit->second.orders.at(id)};
  }

  // What the store does after a chain left or changed: nodes on its old path with its order or
  // naming bytes no chain of the scope names any more take the newest remaining chain's (I8).
  void Reassign(const std::string& ns, const Fingerprint& fp, const std::vector<BlockKey>& keys,
                uint64_t departed_order) {
    std::set<ContentHash> named;
    auto sit = model_.scopes.find({ns, fp});
    if (sit != model_.scopes.end()) {
      for (const auto& [cid, c] : sit->second.chains) {
        for (const auto& e : c.second) named.insert(e.hash);
      }
    }
    auto stale = [&](const ContentHash& h) { return !named.count(h); };
    index_.ReassignStaleMeta(
        ns, fp, keys, departed_order, stale,
        [&](const ChainId& cid, uint32_t position) -> std::optional<RadixIndex::OwnEntry> {
          const auto& s = model_.scopes.at({ns, fp});
          const auto& e = s.chains.at(cid).second.at(position);
          return RadixIndex::OwnEntry{BlockMeta{e.hash, e.length}, s.orders.at(cid)};
        });
    model_.Reassign(ns, fp, keys, departed_order, stale);
  }

  std::vector<ChainEntry> NewChain(const std::string& ns, const Fingerprint& fp) {
    std::vector<ChainEntry> out;
    auto fresh = [&](const BlockKey& k) {
      return ChainEntry{k, Hash(rng_()), static_cast<uint32_t>(1 + Uniform(1 << 20))};
    };
    auto sit = model_.scopes.find({ns, fp});
    if (sit != model_.scopes.end() && Uniform(2) == 0) {  // extend a prefix of an existing chain
      auto it = sit->second.chains.begin();
      std::advance(it, Uniform(sit->second.chains.size()));
      const auto& entries = it->second.second;
      size_t take = Uniform(entries.size() + 1);
      // Mostly its bytes (a deterministic kernel), sometimes others for the same key (I8).
      for (size_t i = 0; i < take; ++i) {
        out.push_back(Uniform(4) == 0 ? fresh(entries[i].key) : entries[i]);
      }
    }
    size_t extra = (out.empty() ? 1 : 0) + Uniform(Uniform(20) == 0 ? 60 : 6);
    for (size_t i = 0; i < extra; ++i) out.push_back(fresh(AnyKey()));
    return out;
  }

  // Probe sequences: whole chains, chains with a key replaced or appended, random keys.
  std::vector<std::vector<BlockKey>> Probes(const std::string& ns, const Fingerprint& fp) {
    std::vector<std::vector<BlockKey>> probes;
    auto sit = model_.scopes.find({ns, fp});
    if (sit != model_.scopes.end()) {
      for (const auto& [cid, chain] : sit->second.chains) {
        std::vector<BlockKey> keys = KeysOf(chain.second);
        probes.push_back(keys);
        keys.push_back(AnyKey());
        probes.push_back(keys);
        keys[Uniform(keys.size())] = AnyKey();
        probes.push_back(keys);
        // A stretch from the middle: what a get may ask for (Resolve).
        keys = KeysOf(chain.second);
        keys.erase(keys.begin(), keys.begin() + static_cast<ptrdiff_t>(Uniform(keys.size())));
        probes.push_back(keys);
      }
    }
    for (int i = 0; i < 4; ++i) {
      std::vector<BlockKey> keys;
      size_t n = Uniform(5);
      for (size_t j = 0; j < n; ++j) keys.push_back(AnyKey());
      probes.push_back(keys);
    }
    return probes;
  }

  void CheckScope(const std::string& ns, const Fingerprint& fp, const ChainId& id) {
    for (const auto& keys : Probes(ns, fp)) {
      const size_t want = model_.Lookup(ns, fp, keys);
      ASSERT_EQ(index_.LookupPrefix(ns, fp, keys), want);
      std::vector<BlockMeta> metas(keys.size());
      const size_t resolved = index_.Resolve(ns, fp, keys, metas);
      if (keys.empty()) {
        ASSERT_EQ(resolved, 0u);
      } else {
        CheckResolveFromAnywhere(ns, fp, keys, metas, resolved);
      }
    }
    CheckChain(ns, fp, id);
    CheckPathTo(ns, fp, AnyKey());
  }

  void CheckChain(const std::string& ns, const Fingerprint& fp, const ChainId& id) {
    auto got = index_.GetChain(ns, fp, id);
    auto sit = model_.scopes.find({ns, fp});
    if (sit == model_.scopes.end() || !sit->second.chains.count(id)) {
      EXPECT_FALSE(got.has_value());
      EXPECT_TRUE(index_.ChainEntries(ns, fp, id).empty());
      return;
    }
    const auto& [info, entries] = sit->second.chains.at(id);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->chain_id, info.chain_id);
    EXPECT_EQ(got->version, info.version);
    EXPECT_EQ(got->etag_digest, info.etag_digest);
    EXPECT_EQ(got->tip, info.tip);
    EXPECT_EQ(got->length, info.length);
    // Keys as published; metas as the nodes hold them now (the newest publish wins).
    std::vector<ChainEntry> want;
    std::vector<BlockKey> path;
    for (const auto& e : entries) {
      path.push_back(e.key);
      const Model::NodeState* n = model_.Node(ns, fp, path);
      ASSERT_NE(n, nullptr);
      want.push_back(ChainEntry{e.key, n->meta.hash, n->meta.length});
    }
    EXPECT_EQ(index_.ChainEntries(ns, fp, id), want);
  }

  // Whether metas[0..n) are the metas of the nodes at `start` + keys[0..i] (paths of the model).
  bool MetasFollow(const std::string& ns, const Fingerprint& fp, std::vector<BlockKey> start,
                   const std::vector<BlockKey>& keys, const std::vector<BlockMeta>& metas,
                   size_t n) const {
    for (size_t i = 0; i < n; ++i) {
      start.push_back(keys[i]);
      const Model::NodeState* node = model_.Node(ns, fp, start);
      if (node == nullptr || metas[i].hash != node->meta.hash ||
          metas[i].length != node->meta.length) {
        return false;
      }
    }
    return true;
  }

  // Resolve matches the longest path that starts at any node with key keys[0] (the root's child,
  // or one in the middle of a chain), and its metas are those of one such path.
  void CheckResolveFromAnywhere(const std::string& ns, const Fingerprint& fp,
                                const std::vector<BlockKey>& keys,
                                const std::vector<BlockMeta>& metas, size_t resolved) {
    std::vector<std::pair<std::vector<BlockKey>, size_t>> starts;  // (path above, keys matched)
    size_t longest = 0;
    if (auto sit = model_.scopes.find({ns, fp}); sit != model_.scopes.end()) {
      for (const auto& [path, n] : sit->second.nodes) {
        if (path.back() != keys[0]) continue;
        std::vector<BlockKey> walk(path.begin(), path.end() - 1);
        size_t matched = 0;
        while (matched < keys.size()) {
          walk.push_back(keys[matched]);
          if (model_.Node(ns, fp, walk) == nullptr) break;
          ++matched;
        }
        longest = std::max(longest, matched);
        starts.emplace_back(std::vector<BlockKey>(path.begin(), path.end() - 1), matched);
      }
    }
    ASSERT_EQ(resolved, longest);
    for (const auto& [above, matched] : starts) {
      if (matched == resolved && MetasFollow(ns, fp, above, keys, metas, resolved)) return;
    }
    ASSERT_EQ(resolved, 0u) << "the metas follow no path of " << resolved << " keys";
  }

  void CheckPathTo(const std::string& ns, const Fingerprint& fp, const BlockKey& key) {
    std::vector<ChainEntry> got = index_.PathTo(ns, fp, key);
    auto sit = model_.scopes.find({ns, fp});
    uint64_t newest = 0;
    if (sit != model_.scopes.end()) {
      for (const auto& [path, n] : sit->second.nodes) {
        if (path.back() == key) newest = std::max(newest, n.order + 1);
      }
    }
    if (newest == 0) {
      EXPECT_TRUE(got.empty());
      return;
    }
    ASSERT_FALSE(got.empty());
    std::vector<BlockKey> path = KeysOf(got);
    EXPECT_EQ(path.back(), key);
    const Model::NodeState* n = model_.Node(ns, fp, path);
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->order + 1, newest);
    std::vector<BlockKey> prefix;
    for (const auto& e : got) {
      prefix.push_back(e.key);
      EXPECT_EQ(e.hash, model_.Node(ns, fp, prefix)->meta.hash);
    }
  }

  void CheckEverything() {
    size_t chains = 0;
    index_.ForEachChain([&](std::string_view ns, const Fingerprint& fp, const ChainInfo& info) {
      ++chains;
      auto sit = model_.scopes.find({std::string(ns), fp});
      ASSERT_NE(sit, model_.scopes.end());
      auto it = sit->second.chains.find(info.chain_id);
      ASSERT_NE(it, sit->second.chains.end());
      EXPECT_EQ(info.tip, it->second.first.tip);
      EXPECT_EQ(info.version, it->second.first.version);
    });
    EXPECT_EQ(chains, model_.chains());
    // Every node once: compare per scope the multiset of (key, meta).
    std::map<std::pair<std::string, Fingerprint>, std::multiset<std::tuple<BlockKey, ContentHash>>>
        got, want;
    index_.ForEachBlock([&](std::string_view ns, const Fingerprint& fp, const BlockKey& key,
                            const BlockMeta& meta) {
      got[{std::string(ns), fp}].emplace(key, meta.hash);
    });
    for (const auto& [scope, s] : model_.scopes) {
      for (const auto& [path, n] : s.nodes) want[scope].emplace(path.back(), n.meta.hash);
    }
    EXPECT_EQ(got, want);
    for (const auto& [scope, s] : model_.scopes) {
      for (const auto& [cid, c] : s.chains) CheckChain(scope.first, scope.second, cid);
    }
  }

  static constexpr const char* kNamespaces[2] = {"alpha", "beta"};
  std::mt19937_64 rng_;
  std::vector<BlockKey> key_pool_;
  uint64_t next_order_ = 4;
  std::set<uint64_t> orders_;
  RadixIndex index_;
  Model model_;
};

TEST(RadixIndex, RandomOperationsMatchReferenceModel) {
  for (uint64_t seed : {1, 2, 3, 4}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    RandomOps(seed).Run(3000);
  }
}

// The L0 budget, with long chains (the nodes dominate), two-block chains (each chain's record is
// paid by two blocks) and one-block chains (one block pays a whole record). Chains are named by
// their tip, as the C ABI publishes them.
TEST(RadixIndex, MemoryPerBlockIsAtMost128Bytes) {
  for (const int chain_blocks : {64, 2, 1}) {
    SCOPED_TRACE(std::to_string(chain_blocks) + "-block chains");
    RadixIndex index;
    const int chains = 1'000'000 / chain_blocks;
    uint64_t seed = 42;
    std::vector<ChainEntry> entries(chain_blocks);
    std::vector<BlockKey> first_keys;
    for (int c = 0; c < chains; ++c) {
      for (auto& e : entries) {
        for (int w = 0; w < 4; ++w) {
          uint64_t v = SplitMix(seed);
          std::memcpy(e.key.data() + 8 * w, &v, 8);
        }
        uint64_t v = SplitMix(seed);
        std::memcpy(e.hash.data(), &v, 8);
        e.length = 256 << 10;
      }
      if (c % 1000 == 0) first_keys.push_back(entries[0].key);
      ChainInfo info{entries.back().key, 1, index.EtagDigest("9b2cf535f27731c974343645a3985328"),
                     entries.back().key, static_cast<uint32_t>(chain_blocks)};
      index.PutChain("ns", kFp, info, entries);
    }
    ASSERT_EQ(index.block_count(), size_t(chains) * chain_blocks);
    ASSERT_EQ(index.chain_count(), size_t(chains));
    const double per_block = static_cast<double>(index.MemoryBytes()) / index.block_count();
    std::printf("RadixIndex, %d-block chains: %.1f bytes per block (%zu blocks, %zu bytes)\n",
                chain_blocks, per_block, index.block_count(), index.MemoryBytes());
    EXPECT_LE(per_block, 128.0);
    for (const auto& k : first_keys) EXPECT_EQ(index.LookupPrefix("ns", kFp, {&k, 1}), 1u);
  }
}

}  // namespace
}  // namespace wombatkv
