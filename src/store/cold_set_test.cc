#include "store/cold_set.h"

#include <gtest/gtest.h>

#include <vector>

namespace wombatkv {
namespace {

EvictCandidate C(uint32_t used, uint8_t id) {
  EvictCandidate c{used, {}, {}};
  c.chain_id.bytes[0] = id;
  return c;
}

// The candidates' ids in the order the set hands them out, emptying it.
std::vector<int> Drain(ColdSet& s) {
  std::vector<int> out;
  while (!s.Empty()) {
    out.push_back(s.Top().chain_id.bytes[0]);
    s.Pop();
  }
  return out;
}

TEST(ColdSet, KeepsTheColdestInOrderAndBoundsWhatItLeftOut) {
  ColdSet s;
  std::vector<EvictCandidate> found = {C(50, 1), C(10, 2), C(40, 3), C(20, 4), C(30, 5)};
  s.Fill(found, 3, ColdSet::Scan{7, /*tick=*/100, true, 0});
  EXPECT_TRUE(s.left_out());
  EXPECT_EQ(s.beyond(), 40u);  // the coldest left out
  EXPECT_EQ(s.Top().used, 10u);
  EXPECT_EQ(s.NextUsed(), 10u);
  EXPECT_EQ(Drain(s), (std::vector<int>{2, 4, 5}));
  EXPECT_EQ(s.NextUsed(), 40u);
}

TEST(ColdSet, ChainsPublishedAfterTheScanBoundItToo) {
  ColdSet s;
  std::vector<EvictCandidate> found = {C(10, 1), C(20, 2)};
  s.Fill(found, 16, ColdSet::Scan{0, /*tick=*/15, true, 0});
  EXPECT_FALSE(s.left_out());
  // Nothing was left out, but a chain published at tick 15 or later is outside the set: the
  // last member may be trimmed only up to the scan's tick (C1).
  EXPECT_EQ(s.beyond(), 15u);
  s.Pop();
  EXPECT_EQ(s.NextUsed(), 15u);
}

TEST(ColdSet, PushedCandidatesMergeInStampOrder) {
  ColdSet s;
  std::vector<EvictCandidate> found = {C(10, 1), C(30, 2), C(50, 3)};
  s.Fill(found, 16, ColdSet::Scan{0, 100, true, 0});
  s.Pop();             // 1 trimmed...
  s.Push(C(20, 1));    // ...and back with its new tip's stamp (C4)
  s.Push(C(60, 4));
  EXPECT_EQ(Drain(s), (std::vector<int>{1, 2, 3, 4}));
}

TEST(ColdSet, AnswersOnlyForTheSameGenerationAndAScanThatCoveredThePass) {
  ColdSet s;
  const ColdSet::Scan ttl_only{3, 100, /*every_chain=*/false, /*cutoff=*/40};
  EXPECT_FALSE(s.Answers(ttl_only));  // never filled
  std::vector<EvictCandidate> found = {C(10, 1), C(20, 2)};
  s.Fill(found, 16, ttl_only);
  EXPECT_TRUE(s.Answers(ttl_only));
  EXPECT_TRUE(s.Answers(ColdSet::Scan{3, 101, false, 35}));   // an earlier cutoff: covered
  EXPECT_FALSE(s.Answers(ColdSet::Scan{3, 101, false, 41}));  // later: chains expired since
  EXPECT_FALSE(s.Answers(ColdSet::Scan{3, 101, true, 0}));    // over budget: every chain counts
  EXPECT_FALSE(s.Answers(ColdSet::Scan{4, 101, false, 40}));  // C2: something got colder
  found = {C(10, 1)};
  s.Fill(found, 16, ColdSet::Scan{4, 102, true, 0});
  EXPECT_TRUE(s.Answers(ColdSet::Scan{4, 103, false, 90}));  // every chain covers expiry too
  s.Pop();
  EXPECT_FALSE(s.Answers(ColdSet::Scan{4, 103, true, 0}));  // empty: scan again
}

}  // namespace
}  // namespace wombatkv
