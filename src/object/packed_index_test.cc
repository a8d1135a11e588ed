// PackedIndex (src/object/packed_index.h) against a plain ordered map of the same entries: its
// lookups (a hash index beside the ordered map) and its ordered walks agree after any sequence of
// sets, erases and clears, also in an index moved from another.
#include "object/packed_index.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace wombatkv {
namespace {

using Model = std::map<std::string, PackedEntry>;

void ExpectSame(const PackedIndex& index, const Model& model, const std::vector<std::string>& keys) {
  ASSERT_EQ(index.size(), model.size());
  uint64_t live = 0;
  std::map<uint64_t, uint64_t> per_segment;
  for (const auto& [key, e] : model) {
    live += e.record_bytes;
    ++per_segment[e.segment];
  }
  EXPECT_EQ(index.live_bytes(), live);
  for (const auto& [segment, n] : per_segment) EXPECT_EQ(index.LiveRecords(segment), n);
  for (const std::string& key : keys) {
    const PackedEntry* found = index.Find(key);
    auto it = model.find(key);
    ASSERT_EQ(found != nullptr, it != model.end()) << key;
    if (found) {
      EXPECT_EQ(found->lsn, it->second.lsn) << key;
      EXPECT_EQ(found->segment, it->second.segment) << key;
    }
  }
  std::vector<std::string> walked;
  index.ForEach([&](std::string_view key, const PackedEntry& e) {
    walked.emplace_back(key);
    EXPECT_EQ(e.lsn, model.at(std::string(key)).lsn);
  });
  std::vector<std::string> expected;
  for (const auto& [key, e] : model) expected.push_back(key);
  EXPECT_EQ(walked, expected);
}

TEST(PackedIndexTest, LookupsAndWalksAgreeWithAnOrderedMapAfterRandomChanges) {
  std::mt19937_64 rng(::testing::UnitTest::GetInstance()->random_seed());
  // Long shared prefixes, as real keys have; some keys are prefixes of others.
  std::vector<std::string> keys;
  for (int i = 0; i < 40; ++i) {
    keys.push_back("v1/ns/engine-a/blobs/" + std::to_string(i % 7) + "/" + std::to_string(i));
  }
  keys.push_back("v1/ns/engine-a/blobs/3");
  PackedIndex index;
  Model model;
  for (int step = 0; step < 4000; ++step) {
    const std::string& key = keys[rng() % keys.size()];
    const uint64_t what = rng() % 100;
    if (what < 60) {
      PackedEntry e;
      e.lsn = static_cast<uint64_t>(step) + 1;
      e.segment = rng() % 4;
      e.record_bytes = static_cast<uint32_t>(64 + rng() % 64);
      index.Set(key, e);
      model[key] = e;
    } else if (what < 98) {
      EXPECT_EQ(index.Erase(key), model.erase(key) == 1) << key;
    } else {
      index.Clear();
      model.clear();
    }
    if (step % 97 == 0) {
      PackedIndex moved(std::move(index));  // the hash index keeps pointing into the moved map
      ExpectSame(moved, model, keys);
      index = std::move(moved);
    }
    ExpectSame(index, model, keys);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace wombatkv
