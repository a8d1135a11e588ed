#include "index/chain_table.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

namespace wombatkv {
namespace {

// Node keys by index, as the radix index's arena would give them.
class FakeNodes final : public NodeKeys {
 public:
  const BlockKey& KeyOf(uint32_t node) const override {
    ++reads;
    return keys.at(node);
  }
  std::vector<BlockKey> keys;
  mutable size_t reads = 0;
};

BlockKey RandomKey(std::mt19937_64& rng) {
  BlockKey k;
  for (auto& b : k.bytes) b = static_cast<uint8_t>(rng());
  return k;
}

struct Expected {
  uint32_t tip;
  uint32_t length;
  uint64_t version;
  uint64_t etag_digest;
};

// Random adds, replacements and erases against a std::map, across the split into slices; ids
// are the tip's key (read from the tip) or not, versions small or past what a record holds (both
// kinds of chain that need a side entry).
TEST(ChainTable, MatchesAMapThroughAddsReplacementsErasesAndTheSplit) {
  for (uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    FakeNodes nodes;
    ChainTable table(&nodes, seed);
    std::map<ChainId, Expected> model;
    auto value_for = [&](const ChainId& id, Expected* e) {
      // A fresh node for the tip; half the time its key is the chain's id.
      e->tip = static_cast<uint32_t>(nodes.keys.size());
      nodes.keys.push_back(rng() % 2 ? id : RandomKey(rng));
      e->length = static_cast<uint32_t>(rng() % 64 + 1);
      e->version = rng() % 4 == 0 ? rng() : rng() % 1000;
      e->etag_digest = rng();
      return ChainValue{e->tip, nodes.keys[e->tip], e->length, e->version, e->etag_digest};
    };
    for (int step = 0; step < 6000; ++step) {
      const int op = static_cast<int>(rng() % 10);
      // Grow to ~700 chains (past the split at 256), then shrink.
      if (op < (step < 3000 ? 6 : 2) || model.empty()) {
        const ChainId id = RandomKey(rng);
        Expected e;
        const ChainValue v = value_for(id, &e);
        table.Add(id, v);
        model[id] = e;
        continue;
      }
      auto it = model.begin();
      std::advance(it, static_cast<long>(rng() % model.size()));
      ChainTable::Ref ref;
      ASSERT_TRUE(table.Locate(it->first, &ref));
      if (op < 7) {
        const ChainValue v = value_for(it->first, &it->second);
        table.Set(ref, it->first, v);
      } else {
        table.Erase(ref, it->first);
        model.erase(it);
      }
    }
    ASSERT_EQ(table.size(), model.size());
    size_t sides = 0;
    for (const auto& [id, e] : model) {
      const ChainRecord* rec = table.Find(id);
      ASSERT_NE(rec, nullptr);
      EXPECT_EQ(rec->tip, e.tip);
      EXPECT_EQ(rec->length, e.length);
      EXPECT_EQ(table.VersionOf(*rec), e.version);
      EXPECT_EQ(rec->etag_digest(), e.etag_digest);
      EXPECT_EQ(table.IdOf(*rec), id);
      const bool needs_side = e.version >= ChainRecord::kSide || nodes.keys[e.tip] != id;
      EXPECT_EQ(rec->has_side(), needs_side);
      sides += needs_side;
    }
    EXPECT_EQ(table.side_entries(), sides);  // released ones are free again
    size_t visited = 0;
    for (size_t slice = 0; slice < RadixIndex::kChainSlices; ++slice) {
      table.ForEachIn(slice, [&](const ChainId& id, const ChainRecord&) {
        EXPECT_EQ(RadixIndex::ChainSlice(id), slice);
        EXPECT_TRUE(model.count(id));
        ++visited;
      });
    }
    EXPECT_EQ(visited, model.size());
    EXPECT_EQ(table.Find(RandomKey(rng)), nullptr);
  }
}

// A slot holds its record's hash bits above the table's index bits: a probe reads a record's id
// only when they match. So looking for absent ids (every new chain's publish) reads none, and a
// present one reads its own only, in a table around 3/4 full, where a probe sequence is long.
TEST(ChainTable, ProbesReadOnlyIdsWhoseHashBitsMatch) {
  std::mt19937_64 rng(7);
  FakeNodes nodes;
  ChainTable table(&nodes, 7);
  constexpr uint32_t kChains = 48'000;  // 64 parts of 750 in 1024 slots each (~0.73 full)
  for (uint32_t c = 0; c < kChains; ++c) {
    nodes.keys.push_back(RandomKey(rng));
    table.Add(nodes.keys.back(), ChainValue{c, nodes.keys.back(), 1, 1, c});
  }
  nodes.reads = 0;
  for (int i = 0; i < 10'000; ++i) ASSERT_EQ(table.Find(RandomKey(rng)), nullptr);
  EXPECT_LE(nodes.reads, 2u);  // a 22-bit match by chance: ~1 in 4 million probes
  nodes.reads = 0;
  for (uint32_t c = 0; c < kChains; c += 7) ASSERT_NE(table.Find(nodes.keys[c]), nullptr);
  EXPECT_LE(nodes.reads, kChains / 7 + 3);
}

// What a chain costs, the figure short chains pay per block (radix_index.h): with its id as its
// tip's key, the record and its slot, under the ~35 bytes a one-block chain may spend past its
// node and the node's slot (128 - 76 - 17).
TEST(ChainTable, AChainNamedByItsTipCostsUnder34Bytes) {
  std::mt19937_64 rng(5);
  FakeNodes nodes;
  ChainTable table(&nodes, 5);
  constexpr int kChains = 100'000;
  for (int c = 0; c < kChains; ++c) {
    nodes.keys.push_back(RandomKey(rng));
    table.Add(nodes.keys.back(),
              ChainValue{static_cast<uint32_t>(c), nodes.keys.back(), 2, 1, rng()});
  }
  const double per_chain = static_cast<double>(table.MemoryBytes()) / kChains;
  std::printf("ChainTable: %.1f bytes per chain\n", per_chain);
  EXPECT_LE(per_chain, 34.0);
  EXPECT_EQ(table.side_entries(), 0u);
}

}  // namespace
}  // namespace wombatkv
