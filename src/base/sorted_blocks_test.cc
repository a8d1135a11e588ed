#include "base/sorted_blocks.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace wombatkv {
namespace {

using Map = std::unordered_map<std::string, int>;
using Element = Map::value_type;

// The keys in iteration order.
std::vector<std::string> Keys(const SortedBlocks<Element>& s) {
  std::vector<std::string> out;
  for (const Element* e : s) out.push_back(e->first);
  return out;
}

// A key from a small alphabet over a few shapes: short keys, keys that end where others go on
// (with a NUL after), long keys that share their first 16 bytes or more (equal heads), and keys
// like the store's, which share 26 bytes or more (past a block's longest prefix, too).
std::string RandomKey(std::mt19937_64& rng) {
  static const std::string kLong = "kv/ns/wombatkv/v1/chain/0123456789abcdef01234567/";
  static const std::string kPrefixes[] = {"",
                                          "a",
                                          "chain/0123456789abcdef/",
                                          "blob/",
                                          std::string("x\0", 2),
                                          "chain/0123456789abcdef/00",
                                          "kv/ns/wombatkv/v1/blob/",
                                          "kv/ns/wombatkv/v1/blob/a",
                                          "kv/nt/wombatkv/v1/blob/",
                                          kLong,
                                          kLong + "0123456789abcdef"};
  std::string key = kPrefixes[rng() % std::size(kPrefixes)];
  const size_t tail = rng() % 4;
  for (size_t i = 0; i < tail; ++i) key.push_back("\0\x01" "az\xff"[rng() % 5]);
  if (key.empty()) key = "k";
  return key;
}

// Checks iteration, size and both bounds of `s` against the model `m` (the same keys).
void ExpectSame(const SortedBlocks<Element>& s, const std::map<std::string, Element*>& m,
                std::mt19937_64& rng) {
  std::vector<std::string> want;
  for (const auto& [k, e] : m) want.push_back(k);
  ASSERT_EQ(Keys(s), want);
  ASSERT_EQ(s.size(), m.size());
  // The key a bound found, or "(end)".
  auto found = [&](SortedBlocks<Element>::Iterator it) {
    return it == s.end() ? std::string("(end)") : (*it)->first;
  };
  auto want_found = [&](std::map<std::string, Element*>::const_iterator it) {
    return it == m.end() ? std::string("(end)") : it->first;
  };
  for (int i = 0; i < 20; ++i) {
    // Half the probes are keys in the set, where the two bounds differ.
    const std::string probe =
        i % 2 == 0 || m.empty()
            ? RandomKey(rng)
            : std::next(m.begin(), static_cast<long>(rng() % m.size()))->first;
    EXPECT_EQ(found(s.LowerBound(probe)), want_found(m.lower_bound(probe))) << probe;
    EXPECT_EQ(found(s.UpperBound(probe)), want_found(m.upper_bound(probe))) << probe;
  }
}

TEST(SortedBlocks, OrdersKeysAsTheirBytesDoThroughSplitsAndMerges) {
  std::mt19937_64 rng(7);
  Map store;
  SortedBlocks<Element> s;
  std::map<std::string, Element*> model;
  // Grows well past one block (splits), then shrinks to nothing (merges, emptied blocks).
  for (int phase = 0; phase < 2; ++phase) {
    for (int step = 0; step < 4000; ++step) {
      const bool grow = phase == 0 ? rng() % 4 != 0 : rng() % 4 == 0;
      if (grow) {
        const std::string key = RandomKey(rng) + std::to_string(rng() % 3000);
        if (store.count(key)) continue;
        Element* e = &*store.emplace(key, step).first;
        s.Insert(e);
        model[key] = e;
      } else if (!model.empty()) {
        auto victim = std::next(model.begin(), static_cast<long>(rng() % model.size()));
        s.Erase(victim->second);
        store.erase(victim->first);
        model.erase(victim);
      }
      if (step % 500 == 0) ExpectSame(s, model, rng);
    }
    ExpectSame(s, model, rng);
    if (phase == 0) {
      ASSERT_GT(s.size(), 4 * SortedBlocks<Element>::kBlockMax);
    }
  }
  for (auto it = store.begin(); it != store.end(); it = store.erase(it)) s.Erase(&*it);
  EXPECT_TRUE(s.empty());
  EXPECT_TRUE(s.begin() == s.end());
}

TEST(SortedBlocks, KeysEqualInTheirFirstSixteenBytesAreOrderedByTheRest) {
  Map store;
  SortedBlocks<Element> s;
  const std::string head = "chain/0123456789";  // 16 bytes
  const std::string nul(1, '\0');
  for (const std::string& tail : {std::string("b"), std::string(), std::string("a"), nul,
                                  std::string("ab")}) {
    s.Insert(&*store.emplace(head + tail, 0).first);
  }
  EXPECT_EQ(Keys(s),
            (std::vector<std::string>{head, head + nul, head + "a", head + "ab", head + "b"}));
  EXPECT_EQ((*s.LowerBound(head + "aa"))->first, head + "ab");
  EXPECT_EQ((*s.UpperBound(head + "a"))->first, head + "ab");
  EXPECT_TRUE(s.LowerBound(head + "c") == s.end());
}

TEST(SortedBlocks, InsertingAKeyTwiceIsAProgrammingError) {
  Map store;
  SortedBlocks<Element> s;
  Element* e = &*store.emplace("k", 0).first;
  s.Insert(e);
  EXPECT_DEATH(s.Insert(e), "");
}

}  // namespace
}  // namespace wombatkv
