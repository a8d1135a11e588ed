#include "transport/shm/ring.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "base/limits.h"
#include "transport/shm/region_allocator.h"
#include "wire/frame.h"

namespace wombatkv::shm {
namespace {

constexpr uint32_t kSlotBytes = 256;
constexpr uint32_t kSlots = 8;
constexpr uint64_t kAreaBytes = 1 << 20;

// One ring with its data area in private memory: the producer and consumer halves a test drives
// by hand, exactly as the two processes do (each with its private index, R1/R2).
struct Fixture {
  RingControl control{};
  std::vector<uint8_t> slots = std::vector<uint8_t>(size_t{kSlots} * kSlotBytes);
  std::vector<uint8_t> area = std::vector<uint8_t>(kAreaBytes);
  Ring ring{&control, slots.data(), kSlots, kSlotBytes};
  RegionAllocator alloc{kAreaBytes};
  uint32_t tail = 0;  // producer's private index
  uint32_t head = 0;  // consumer's private index

  bool Full() { return ring.Used(tail, ring.head().load()) == ring.capacity(); }

  // Producer: plans, allocates, copies, publishes.
  void Push(const wire::Message& m) {
    ASSERT_FALSE(Full());
    MessagePlan plan = PlanMessage(m, kSlotBytes);
    uint64_t region = 0;
    if (plan.region_bytes) {
      auto off = alloc.Allocate(plan.region_bytes);
      ASSERT_TRUE(off.has_value());
      region = *off;
      WriteRegion(m, plan, area.data() + region, region);
    }
    WriteSlot(ring.slot(tail), m, plan, region);
    ring.tail().store(++tail);
  }

  // Consumer: reads the next slot (nullopt when empty) and releases it.
  std::optional<Result<SlotMessage>> Pop() {
    if (ring.tail().load() == head) return std::nullopt;
    auto m = ReadSlot(ring.slot(head), kSlotBytes, area.data(), kAreaBytes);
    ring.head().store(++head);
    return m;
  }

  std::string PayloadText(const PayloadRef& p) {
    return std::string(reinterpret_cast<const char*>(area.data() + p.offset), p.bytes);
  }
};

wire::Message Msg(uint64_t id, std::string fields, std::vector<std::string>* payloads = nullptr) {
  wire::Message m;
  m.id = id;
  m.op = 6;
  m.flags = 0;
  m.fields.assign(fields.begin(), fields.end());
  if (payloads) {
    for (const std::string& p : *payloads) {
      m.payloads.push_back(
          BufferSlice{nullptr, reinterpret_cast<const uint8_t*>(p.data()), p.size()});
    }
  }
  return m;
}

TEST(ShmRing, SmallMessageTravelsInlineWithoutARegion) {
  Fixture f;
  f.Push(Msg(7, "hello"));
  EXPECT_EQ(f.alloc.allocated_bytes(), 0u);
  auto m = f.Pop();
  ASSERT_TRUE(m.has_value());
  ASSERT_TRUE(m->ok()) << m->status().ToString();
  EXPECT_EQ((*m)->header.id, 7u);
  EXPECT_EQ((*m)->header.op, 6u);
  EXPECT_EQ((*m)->header.body_spilled, 0);
  EXPECT_EQ(std::string((*m)->fields.begin(), (*m)->fields.end()), "hello");
  EXPECT_FALSE(f.Pop().has_value());
}

TEST(ShmRing, PayloadsLieInTheRegionAndOnlyTheirOffsetsInTheSlot) {
  Fixture f;
  std::vector<std::string> payloads = {std::string(1000, 'a'), "", std::string(70, 'c')};
  f.Push(Msg(1, "f", &payloads));
  auto m = f.Pop();
  ASSERT_TRUE(m && m->ok());
  ASSERT_EQ((*m)->payloads.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(f.PayloadText((*m)->payloads[i]), payloads[i]);
    EXPECT_EQ((*m)->payloads[i].offset % kPayloadAlignBytes, 0u);
  }
  EXPECT_GE((*m)->header.region_bytes, 1000u + 70u);
}

TEST(ShmRing, APayloadInAnArenaTakesNoRoomInTheRegionAndTravelsAsItsReference) {
  Fixture f;
  std::vector<std::string> payloads = {std::string(1000, 'a'), std::string(5000, 'b')};
  wire::Message m = Msg(3, "f", &payloads);
  // The second payload lies in arena 2 at offset 4096: only the first is copied.
  std::vector<PayloadRef> shared(2, PayloadRef{});
  shared[1] = PayloadRef{4096, 5000, 2, 0};
  MessagePlan plan = PlanMessage(m, kSlotBytes, shared);
  EXPECT_EQ(plan.shared_count, 1u);
  EXPECT_EQ(plan.region_bytes, 1024u) << "the shared payload was given room in the region";
  auto off = f.alloc.Allocate(plan.region_bytes);
  ASSERT_TRUE(off);
  WriteRegion(m, plan, f.area.data() + *off, *off);
  WriteSlot(f.ring.slot(f.tail), m, plan, *off, /*release_token=*/77);
  f.ring.tail().store(++f.tail);
  auto got = ReadSlot(f.ring.slot(0), kSlotBytes, f.area.data(), kAreaBytes, kPayloadArenasMax);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->header.release_token, 77u);
  ASSERT_EQ(got->payloads.size(), 2u);
  EXPECT_EQ(got->payloads[0].arena, 0u);
  EXPECT_EQ(f.PayloadText(got->payloads[0]), payloads[0]);
  EXPECT_EQ(got->payloads[1].arena, 2u);
  EXPECT_EQ(got->payloads[1].offset, 4096u);
  EXPECT_EQ(got->payloads[1].bytes, 5000u);
  // A reader that knows no arenas (the daemon reading a request) refuses the reference, and one
  // past the last arena number is refused by everyone.
  auto request = ReadSlot(f.ring.slot(0), kSlotBytes, f.area.data(), kAreaBytes);
  ASSERT_FALSE(request.ok());
  EXPECT_NE(request.status().message().find("unknown arena 2"), std::string::npos);
  shared[1].arena = kPayloadArenasMax + 1;
  plan = PlanMessage(m, kSlotBytes, shared);
  WriteSlot(f.ring.slot(0), m, plan, *off, 77);
  EXPECT_FALSE(
      ReadSlot(f.ring.slot(0), kSlotBytes, f.area.data(), kAreaBytes, kPayloadArenasMax).ok());
}

TEST(ShmRing, FieldsLongerThanASlotSpillToTheDataArea) {
  Fixture f;
  // A LookupPrefix of 10,000 keys: 320,000 bytes of fields.
  std::string big(10000 * 32, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  std::vector<std::string> payloads = {"xyz"};
  f.Push(Msg(9, big, &payloads));
  auto m = f.Pop();
  ASSERT_TRUE(m && m->ok()) << m->status().ToString();
  EXPECT_EQ((*m)->header.body_spilled, 1);
  EXPECT_EQ(std::string((*m)->fields.begin(), (*m)->fields.end()), big);
  ASSERT_EQ((*m)->payloads.size(), 1u);
  EXPECT_EQ(f.PayloadText((*m)->payloads[0]), "xyz");
}

TEST(ShmRing, ExactlyTheInlineLimitStaysInline) {
  Fixture f;
  const uint64_t limit = InlineBodyBytesMax(kSlotBytes);
  f.Push(Msg(1, std::string(limit, 'x')));
  f.Push(Msg(2, std::string(limit + 1, 'y')));
  auto a = f.Pop();
  auto b = f.Pop();
  ASSERT_TRUE(a && a->ok() && b && b->ok());
  EXPECT_EQ((*a)->header.body_spilled, 0);
  EXPECT_EQ((*b)->header.body_spilled, 1);
  EXPECT_EQ((*b)->fields.size(), limit + 1);
}

TEST(ShmRing, FullRingRefusesMoreUntilTheConsumerReleasesASlot) {
  Fixture f;
  for (uint32_t i = 0; i < kSlots; ++i) f.Push(Msg(i, "m"));
  EXPECT_TRUE(f.Full());
  auto first = f.Pop();
  ASSERT_TRUE(first && first->ok());
  EXPECT_EQ((*first)->header.id, 0u);
  EXPECT_FALSE(f.Full());
  f.Push(Msg(kSlots, "m"));
  EXPECT_TRUE(f.Full());
}

TEST(ShmRing, CountersWrapAroundTheirRangeAndTheSlotIndex) {
  Fixture f;
  // Start both counters just below 2^32 so they wrap during the test.
  f.tail = f.head = UINT32_MAX - 20;
  f.ring.tail().store(f.tail);
  f.ring.head().store(f.head);
  uint64_t next_pop = 0;
  for (uint64_t id = 0; id < 100; ++id) {
    f.Push(Msg(id, "n" + std::to_string(id)));
    if (id % 3 == 2 || f.Full()) {
      while (auto m = f.Pop()) {
        ASSERT_TRUE(m->ok());
        ASSERT_EQ((*m)->header.id, next_pop);
        EXPECT_EQ(std::string((*m)->fields.begin(), (*m)->fields.end()),
                  "n" + std::to_string(next_pop));
        next_pop++;
      }
    }
  }
  while (auto m = f.Pop()) next_pop++;
  EXPECT_EQ(next_pop, 100u);
  EXPECT_LT(f.tail, 100u);  // wrapped
}

TEST(ShmRing, CountersBreakingTheirInvariantAreDetected) {
  Fixture f;
  EXPECT_EQ(f.ring.Used(5, 5), 0);
  EXPECT_EQ(f.ring.Used(5 + kSlots, 5), kSlots);
  EXPECT_EQ(f.ring.Used(6 + kSlots, 5), -1);  // more than the capacity
  EXPECT_EQ(f.ring.Used(4, 5), -1);           // head past tail
}

// A2: whatever the peer writes into a slot, ReadSlot never reads outside the slot or the area.
TEST(ShmRing, OutOfBoundsOffsetsAndLengthsAreRejected) {
  Fixture f;
  std::vector<std::string> payloads = {"abc"};
  f.Push(Msg(1, "x", &payloads));
  SlotHeader good;
  std::memcpy(&good, f.ring.slot(0), sizeof good);

  auto expect_bad = [&](const char* what, auto mutate) {
    SlotHeader h = good;
    mutate(h);
    std::memcpy(f.ring.slot(0), &h, sizeof h);
    auto m = ReadSlot(f.ring.slot(0), kSlotBytes, f.area.data(), kAreaBytes);
    EXPECT_FALSE(m.ok()) << what;
    if (!m.ok()) {
      EXPECT_EQ(m.status().code(), Code::kInvalidArgument) << what;
    }
  };
  expect_bad("kind", [](SlotHeader& h) { h.kind = 9; });
  expect_bad("payload count", [](SlotHeader& h) { h.payload_count = wire::kMaxPayloadsPerMessage + 1; });
  expect_bad("inline body too long", [](SlotHeader& h) { h.fields_bytes = kSlotBytes; });
  expect_bad("fields beyond the area", [](SlotHeader& h) { h.fields_bytes = kAreaBytes + 1; });
  expect_bad("region past the end", [](SlotHeader& h) {
    h.region_offset = kAreaBytes - 64;
    h.region_bytes = 128;
  });
  expect_bad("region wrapping around", [](SlotHeader& h) {
    h.region_offset = 64;
    h.region_bytes = UINT64_MAX - 10;
  });
  expect_bad("spilled body longer than region", [](SlotHeader& h) {
    h.body_spilled = 1;
    h.region_bytes = 8;
  });
  expect_bad("spill flag", [](SlotHeader& h) { h.body_spilled = 2; });
  expect_bad("error code", [](SlotHeader& h) {
    h.kind = static_cast<uint8_t>(SlotKind::kError);
    h.code = 200;
  });

  // A payload reference pointing past the area.
  std::memcpy(f.ring.slot(0), &good, sizeof good);
  PayloadRef bad{kAreaBytes - 2, 3};
  std::memcpy(f.ring.slot(0) + sizeof(SlotHeader), &bad, sizeof bad);
  EXPECT_FALSE(ReadSlot(f.ring.slot(0), kSlotBytes, f.area.data(), kAreaBytes).ok());
}

// A client can name its whole data area as a request's fields at no cost; the daemon would copy
// it all, under that client's lock. Requests are read with a bound on their fields
// (kRequestFieldsMax: past the longest real request).
TEST(ShmRing, FieldsPastTheBoundAreRejectedBeforeAnyCopy) {
  Fixture f;
  f.Push(Msg(1, std::string(100, 'f'), nullptr));
  EXPECT_TRUE(ReadSlot(f.ring.slot(0), kSlotBytes, f.area.data(), kAreaBytes, 0, 100).ok());
  auto m = ReadSlot(f.ring.slot(0), kSlotBytes, f.area.data(), kAreaBytes, 0, 99);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("100 bytes of fields (the limit is 99)"), std::string::npos)
      << m.status().ToString();
  EXPECT_GE(kRequestFieldsMax, 32ull * limits::kLookupKeysMax + 4096)
      << "a lookup of the most keys";
}

TEST(ShmRing, ErrorSlotsCarryTheStatus) {
  Fixture f;
  WriteErrorSlot(f.ring.slot(0), kSlotBytes, 42, 6,
                 Status::ResourceExhausted(std::string(1000, 'm')));
  auto m = ReadSlot(f.ring.slot(0), kSlotBytes, f.area.data(), kAreaBytes);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->header.id, 42u);
  EXPECT_EQ(m->error.code(), Code::kResourceExhausted);
  EXPECT_EQ(m->error.message().size(), InlineBodyBytesMax(kSlotBytes));  // cut to fit
}

TEST(ShmRing, EveryStatusCodeSurvivesAnErrorSlot) {
  Fixture f;
  for (uint8_t c = 1; c <= static_cast<uint8_t>(Code::kPermissionDenied); ++c) {
    WriteErrorSlot(f.ring.slot(0), kSlotBytes, 1, 1, Status(static_cast<Code>(c), "m"));
    auto m = ReadSlot(f.ring.slot(0), kSlotBytes, f.area.data(), kAreaBytes);
    ASSERT_TRUE(m.ok()) << int{c};
    EXPECT_EQ(m->error.code(), static_cast<Code>(c));
  }
}

}  // namespace
}  // namespace wombatkv::shm
