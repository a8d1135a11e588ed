// EvictLease: taken when free, renewed at half time, left alone while another's runs, taken over
// once it lapses, and a damaged or own-but-unacknowledged lease replaced.
#include "store/evict_lease.h"

#include <gtest/gtest.h>

#include "gc/gc_test_util.h"
#include "store/store_test_util.h"

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
    return DecodeEvictLease(AsChars(got->bytes->view()));
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

// An L2 whose puts take `put_us` of the clock (an S3 put retried after timeouts).
class SlowPutL2 final : public ObjectStoreWrapper {
 public:
  SlowPutL2(ObjectStore* target, ManualClock* clock) : ObjectStoreWrapper(target), clock_(clock) {}
  Result<std::string> Put(std::string_view key, const std::vector<ByteView>& parts,
                          const PutOptions& options) override {
    clock_->Advance(put_us);
    return target()->Put(key, parts, options);
  }
  uint64_t put_us = 0;

 private:
  ManualClock* const clock_;
};

// The lease's expiry counts from before its put: a put whose retries outlast it holds nothing,
// and the other host takes the lapsed lease (both would have evicted at once).
TEST(EvictLease, APutWhoseRetriesOutlastTheLeaseDoesNotHoldIt) {
  Hosts h;
  SlowPutL2 slow(h.l2.get(), &h.clock);
  EvictLease a{&slow, &h.clock, kKey, "host-a:/data", kLeaseUs};
  ASSERT_TRUE(a.Hold());
  EXPECT_TRUE(a.Running());
  h.clock.Advance(kLeaseUs / 2 + 1);
  slow.put_us = kLeaseUs;  // the renewal lands after the lease it wrote has run out
  EXPECT_FALSE(a.Hold());
  EXPECT_FALSE(a.Running());
  EXPECT_TRUE(h.b.Hold());
}

// A holder stops evicting between head writes once its lease has run out (no I/O to ask).
TEST(EvictLease, RunningEndsWithTheLease) {
  Hosts h;
  ASSERT_TRUE(h.a.Hold());
  h.clock.Advance(kLeaseUs - 1);
  EXPECT_TRUE(h.a.Running());
  h.clock.Advance(1);
  EXPECT_FALSE(h.a.Running());
  EXPECT_FALSE(h.b.Running()) << "never held";
}

// Another host's lease is obeyed up to one lease duration of clock skew beyond its own; one
// running more than twice its duration past this clock (a host whose clock ran far ahead, and
// maybe died) is taken over, or eviction would wait until then.
TEST(EvictLease, ALeaseFarAheadOfThisClockIsTakenOver) {
  Hosts h;
  const uint64_t now = h.clock.WallMicros();
  const std::string skewed = EncodeEvictLease({"host-c:/data", now + kLeaseUs + kLeaseUs / 2});
  ASSERT_TRUE(h.l2->Put(kKey, {AsBytes(skewed)}, PutOptions{}).ok());
  EXPECT_FALSE(h.a.Hold());
  EXPECT_EQ(h.a.other_holder(), "host-c:/data");
  const std::string far = EncodeEvictLease({"host-c:/data", now + 10 * kLeaseUs});
  ASSERT_TRUE(h.l2->Put(kKey, {AsBytes(far)}, PutOptions{}).ok());
  h.clock.Advance(kLeaseUs);  // a reads the lease again once the one it saw may have ended
  EXPECT_TRUE(h.b.Hold());
  EXPECT_EQ(h.InL2()->holder, "host-b:/data");
}

// A data directory's seat mark is made once and read back unchanged; a damaged one is replaced;
// one made before marks had nonces is read as it is.
TEST(DataDirSeat, IsMadeOnceAndReadBack) {
  TempDir dir;
  ManualClock clock;
  auto random = NewSeededRandom(7);
  FileSystem* fs = PosixFileSystem();
  auto first = DataDirSeat(fs, &clock, random.get(), dir.path());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const std::string made_at = "seat " + std::to_string(clock.WallMicros()) + "-";
  EXPECT_TRUE(first->starts_with(made_at)) << *first;
  EXPECT_EQ(first->size(), made_at.size() + 16) << *first;
  clock.Advance(5);
  EXPECT_EQ(*DataDirSeat(fs, &clock, random.get(), dir.path()), *first);
  const std::string path = dir.path() + "/" + std::string(kDataDirSeatFile);
  for (const char* damaged : {"garbage", "wombatkv seat v1 created_us 12 nonce 0123\n",
                              "wombatkv seat v1 created_us 12 nonce 0123456789abcdeg\n",
                              "wombatkv seat v1 created_us 12 nonce 0123456789abcdef"}) {
    ASSERT_TRUE(fs->WriteFileAtomic(path, {AsBytes(damaged)}, false).ok());
    auto replaced = DataDirSeat(fs, &clock, random.get(), dir.path());
    EXPECT_TRUE(replaced->starts_with("seat " + std::to_string(clock.WallMicros()) + "-"))
        << damaged << " -> " << *replaced;
  }
  ASSERT_TRUE(fs->WriteFileAtomic(path, {AsBytes("wombatkv seat v1 created_us 12\n")}, false).ok());
  EXPECT_EQ(*DataDirSeat(fs, &clock, random.get(), dir.path()), "seat 12");
  EXPECT_NE(EvictLeaseHolder(dir.path(), *first), EvictLeaseHolder(dir.path(), "seat 1"));
}

// Two directories marked in the same microsecond (containers started together) get two marks.
TEST(DataDirSeat, MarksMadeInOneMicrosecondDiffer) {
  TempDir a, b;
  ManualClock clock;
  auto random = NewSystemRandom();
  FileSystem* fs = PosixFileSystem();
  auto in_a = DataDirSeat(fs, &clock, random.get(), a.path());
  auto in_b = DataDirSeat(fs, &clock, random.get(), b.path());
  ASSERT_TRUE(in_a.ok() && in_b.ok());
  EXPECT_NE(*in_a, *in_b);
}

}  // namespace
}  // namespace wombatkv::testing
