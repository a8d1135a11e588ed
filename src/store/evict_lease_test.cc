// EvictLease: taken when free, renewed at half time, left alone while another's runs, taken over
// once it lapses, and a damaged or own-but-unacknowledged lease replaced.
#include "store/evict_lease.h"

#include <gtest/gtest.h>

#include "gc/gc_test_util.h"

namespace wombatkv::testing {
namespace {

constexpr uint64_t kLeaseUs = 30ull * 1000000;
const std::string kKey = "kv/default/wombatkv/v1/lease/evict";

struct Hosts {
  ManualClock clock;
  std::unique_ptr<ObjectStore> l2 = NewMemObjectStore(&clock);
  EvictLease a{l2.get(), &clock, kKey, "host-a:/data", kLeaseUs};
  EvictLease b{l2.get(), &clock, kKey, "host-b:/data", kLeaseUs};
  std::optional<EvictLeaseState> InL2() {
    auto got = l2->Get(kKey);
    if (!got.ok()) return std::nullopt;
    return DecodeEvictLease(
        std::string_view(reinterpret_cast<const char*>(got->bytes->data()), got->bytes->size()));
  }
};

TEST(EvictLease, EncodesAndDecodesAndRefusesAnythingElse) {
  const EvictLeaseState lease{"host-a:/data", 1234567};
  auto back = DecodeEvictLease(EncodeEvictLease(lease));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->holder, lease.holder);
  EXPECT_EQ(back->expires_us, lease.expires_us);
  EXPECT_FALSE(DecodeEvictLease(""));
  EXPECT_FALSE(DecodeEvictLease("wombatkv eviction lease v1\nholder a\nexpires_us 12x\n"));
  EXPECT_FALSE(DecodeEvictLease("wombatkv eviction lease v1\nholder \nexpires_us 12\n"));
  EXPECT_FALSE(DecodeEvictLease("wombatkv eviction lease v2\nholder a\nexpires_us 12\n"));
}

TEST(EvictLease, OneHolderAtATimeUntilItLapses) {
  Hosts h;
  EXPECT_TRUE(h.a.Hold());
  EXPECT_FALSE(h.b.Hold());
  EXPECT_EQ(h.b.other_holder(), "host-a:/data");
  h.clock.Advance(kLeaseUs / 2 + 1);
  EXPECT_TRUE(h.a.Hold());  // renewed: a full lease from now
  EXPECT_EQ(h.InL2()->expires_us, h.clock.WallMicros() + kLeaseUs);
  h.clock.Advance(kLeaseUs - 1);
  EXPECT_FALSE(h.b.Hold());
  h.clock.Advance(2);  // a stopped renewing: lapsed
  EXPECT_TRUE(h.b.Hold());
  EXPECT_EQ(h.InL2()->holder, "host-b:/data");
  h.clock.Advance(kLeaseUs / 2 + 1);
  EXPECT_FALSE(h.a.Hold()) << "a took back a lease b had renewed";
}

TEST(EvictLease, ADamagedLeaseIsTakenOverAndAnOwnOneResumed) {
  Hosts h;
  const std::string junk = "not a lease";
  ASSERT_TRUE(h.l2->Put(kKey, {AsBytes(junk)}, PutOptions{}).ok());
  EXPECT_TRUE(h.a.Hold());
  EXPECT_EQ(h.InL2()->holder, "host-a:/data");
  // A restarted a (same holder) whose earlier lease is still running resumes it.
  EvictLease again{h.l2.get(), &h.clock, kKey, "host-a:/data", kLeaseUs};
  EXPECT_TRUE(again.Hold());
}

}  // namespace
}  // namespace wombatkv::testing
