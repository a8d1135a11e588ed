#include "transport/shm/segment_layout.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace wombatkv::shm {
namespace {

LayoutParams Small() {
  LayoutParams p;
  p.slot_bytes = 256;
  p.slot_count = 8;
  p.release_count = 16;
  p.request_area_bytes = 1 << 20;
  p.response_area_bytes = 2 << 20;
  return p;
}

TEST(SegmentLayout, PartsAreDisjointAlignedAndInsideTheSegment) {
  auto l = ComputeLayout(Small());
  ASSERT_TRUE(l.ok());
  EXPECT_LT(l->release_ring_control + sizeof(RingControl), l->request_slots);
  EXPECT_EQ(l->response_slots, l->request_slots + 256 * 8);
  EXPECT_LE(l->release_slots + 16 * 8, l->request_area);
  EXPECT_EQ(l->request_area % kAreaAlignBytes, 0u);
  EXPECT_EQ(l->response_area % kAreaAlignBytes, 0u);
  EXPECT_LE(l->request_area + (1 << 20), l->response_area);
  EXPECT_LE(l->response_area + (2 << 20), l->segment_bytes);
}

TEST(SegmentLayout, BadParametersAreRefused) {
  LayoutParams p = Small();
  p.slot_bytes = 300;
  EXPECT_EQ(ComputeLayout(p).status().code(), Code::kInvalidArgument);
  p = Small();
  p.slot_count = 0;
  EXPECT_FALSE(ComputeLayout(p).ok());
  p = Small();
  p.response_area_bytes = 1000;
  EXPECT_FALSE(ComputeLayout(p).ok());
  p = Small();
  p.request_area_bytes = 1500000;  // not whole 64-byte units (region_allocator.h)
  EXPECT_FALSE(ComputeLayout(p).ok());
}

TEST(SegmentLayout, AClientReadsBackWhatTheDaemonWrote) {
  auto l = ComputeLayout(Small());
  ASSERT_TRUE(l.ok());
  std::vector<uint8_t> seg(l->segment_bytes);
  InitSegment(seg.data(), *l, 77);
  auto back = ReadLayout(seg.data(), seg.size());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->response_area, l->response_area);
  EXPECT_EQ(back->params.slot_count, 8u);
}

TEST(SegmentLayout, AHeaderThatDoesNotMatchTheMappingIsRefused) {
  auto l = ComputeLayout(Small());
  ASSERT_TRUE(l.ok());
  std::vector<uint8_t> seg(l->segment_bytes);
  InitSegment(seg.data(), *l, 1);
  EXPECT_EQ(ReadLayout(seg.data(), seg.size() - 4096).status().code(), Code::kFailedPrecondition);
  SegmentHeader h;
  std::memcpy(&h, seg.data(), sizeof h);
  h.layout_version = kLayoutVersion + 1;
  std::memcpy(seg.data(), &h, sizeof h);
  auto r = ReadLayout(seg.data(), seg.size());
  EXPECT_NE(r.status().message().find("version " + std::to_string(kLayoutVersion + 1)),
            std::string::npos);
  h.layout_version = kLayoutVersion;
  h.response_area_bytes = 1ull << 41;
  std::memcpy(seg.data(), &h, sizeof h);
  EXPECT_FALSE(ReadLayout(seg.data(), seg.size()).ok());
  h.magic = 0;
  std::memcpy(seg.data(), &h, sizeof h);
  EXPECT_FALSE(ReadLayout(seg.data(), seg.size()).ok());
}

}  // namespace
}  // namespace wombatkv::shm
