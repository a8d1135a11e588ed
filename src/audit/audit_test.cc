// The audit finds each planted violation, on the in-memory planes and on disk (local-directory L2
// + RocksDB L1); repair fixes the repairable ones so that a second audit is clean; the usage it
// reports equals what was written, byte for byte.
#include "audit/audit.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "audit/repair.h"
#include "gc/gc_test_util.h"
#include "layout/chain_head.h"
#include "layout/envelope.h"
#include "layout/object_keys.h"
#include "store/meta_records.h"
#include "store/store_test_util.h"

namespace wombatkv::testing {
namespace {

using audit::ViolationKind;

const Fingerprint kFpA = Fp(1), kFpB = Fp(2);
constexpr uint64_t kEnv = layout::kEnvelopeHeaderBytes;

// Object size of a chain head (docs/layout.md §3).
uint64_t HeadBytes(std::string_view ns, size_t entries) { return 76 + ns.size() + 56 * entries; }

TestChain ChainOfSizes(std::vector<size_t> sizes, uint64_t salt) {
  TestChain c;
  for (size_t i = 0; i < sizes.size(); ++i) {
    c.keys.push_back(Key(i, salt));
    c.payloads.push_back(Payload(i + 1000 * salt, sizes[i]));
  }
  return c;
}

class AuditTest : public ::testing::TestWithParam<Planes> {
 protected:
  void SetUp() override {
    if (GetParam() == Planes::kMemory) {
      l2_ = NewMemObjectStore(&clock_);
      l1_ = NewMemMetaStore();
    } else {
      l2_ = NewFsObjectStore(dir_.path() + "/l2", PosixFileSystem());
      auto l1 = OpenRocksDbMetaStore(dir_.path() + "/l1");
      ASSERT_TRUE(l1.ok()) << l1.status().ToString();
      l1_ = std::move(l1).value();
    }
    // Two namespaces, two fingerprints, a sidecar: the store writes them, then "exits".
    auto store = Open();
    ASSERT_TRUE(store->PutBlocks("default", kFpA, a_.Puts()).ok());
    ASSERT_TRUE(
        store->PublishChain("default", kFpA, a_.tip(), a_.tip(), std::nullopt, nullptr).ok());
    ASSERT_TRUE(store->PutBlocks("team", kFpB, b_.Puts()).ok());
    ASSERT_TRUE(store->PublishChain("team", kFpB, b_.tip(), b_.tip(), std::nullopt, nullptr).ok());
    ASSERT_TRUE(store->PutSidecar("default", kFpA, a_.tip(), AsBytes(sidecar_)).ok());
  }

  std::unique_ptr<Store> Open(int compress_level = 0) {
    StoreOptions o;
    o.block_compress_level = compress_level;
    o.object_store = l2_.get();
    o.meta_store = l1_.get();
    o.clock = &clock_;
    o.executor = executor_.get();
    o.log = [](LogLevel, const std::string&) {};
    auto s = Store::Open(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  audit::AuditReport Audit(bool quick = false, bool with_l1 = true) {
    audit::AuditOptions o;
    o.quick = quick;
    auto r = audit::RunAudit(l2_.get(), with_l1 ? l1_.get() : nullptr, &clock_, o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : audit::AuditReport{};
  }

  audit::RepairReport Repair(const audit::AuditReport& found) {
    auto r = audit::Repair(l2_.get(), l1_.get(), &clock_, found, audit::RepairOptions{});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r.ok() && r->failures() == 0);
    return r.ok() ? std::move(r).value() : audit::RepairReport{};
  }

  static std::string Describe(const audit::AuditReport& r) {
    std::string out;
    for (const auto& v : r.violations) {
      out += std::string(audit::KindName(v.kind)) + " " + v.key + ": " + v.detail + "\n";
    }
    return out;
  }

  // The only violations are `count` of `kind`.
  static void ExpectOnly(const audit::AuditReport& r, ViolationKind kind, size_t count = 1) {
    EXPECT_EQ(r.CountOf(kind), count) << Describe(r);
    EXPECT_EQ(r.violations.size(), count) << Describe(r);
  }

  void Replace(const std::string& key, std::string_view bytes) {
    ASSERT_TRUE(l2_->Put(key, {AsBytes(bytes)}, PutOptions{}).ok()) << key;
  }
  std::string Read(const std::string& key) {
    auto r = l2_->Get(key);
    EXPECT_TRUE(r.ok()) << key << ": " << r.status().ToString();
    return r.ok() ? std::string(AsChars(r->bytes->view())) : std::string();
  }
  std::string BlobKey(const std::vector<uint8_t>& payload, std::string_view ns = "default") {
    return layout::BlobKey("kv", ns, HashPayload(payload));
  }
  std::string HeadKeyA() { return layout::ChainKey("kv", "default", kFpA, a_.tip()); }
  void L1Write(MetaWriteBatch batch) { ASSERT_TRUE(l1_->Write(batch, true).ok()); }
  // Files get the real time as their modification time; once this test's clock has moved ahead,
  // stamp a new file with the clock's time (the in-memory L2 takes it from the clock already).
  void StampWithClock(const std::string& key) {
    if (GetParam() != Planes::kDisk) return;
    const std::string path = dir_.path() + "/l2/" + key;
    std::filesystem::last_write_time(path, std::filesystem::last_write_time(path) +
                                               std::chrono::microseconds(clock_.NowMicros()));
  }

  TempDir dir_;
  ManualClock clock_{RealClock()->WallMicros()};  // agrees with file modification times
  std::unique_ptr<Executor> executor_ = NewInlineExecutor();
  std::unique_ptr<ObjectStore> l2_;
  std::unique_ptr<MetaStore> l1_;
  TestChain a_ = ChainOfSizes({1000, 2000, 3000}, 1);
  TestChain b_ = ChainOfSizes({4096, 512}, 2);
  std::string sidecar_ = std::string(500, 's');
};

TEST_P(AuditTest, AStoreAsWrittenIsCleanAndItsUsageIsExact) {
  audit::AuditReport r = Audit();
  EXPECT_TRUE(r.violations.empty()) << Describe(r);
  EXPECT_TRUE(r.l1_checked);
  EXPECT_TRUE(r.orphans.empty());
  EXPECT_EQ(r.blobs_verified, 5u);
  EXPECT_EQ(r.sidecars_verified, 1u);
  ASSERT_EQ(r.usage.size(), 4u);  // default, default/fpA, team, team/fpB
  const audit::UsageRow& ns_a = r.usage[0];
  const audit::UsageRow& fp_a = r.usage[1];
  EXPECT_EQ(ns_a.ns, "default");
  EXPECT_FALSE(ns_a.fp.has_value());
  ASSERT_TRUE(fp_a.fp.has_value());
  EXPECT_EQ(*fp_a.fp, kFpA);
  for (const audit::UsageCounts& c : {ns_a.counts, fp_a.counts}) {
    EXPECT_EQ(c.heads, 1u);
    EXPECT_EQ(c.head_bytes, HeadBytes("default", 3));
    EXPECT_EQ(c.head_entries, 3u);
    EXPECT_EQ(c.blobs, 3u);
    EXPECT_EQ(c.payload_bytes, 6000u);
    EXPECT_EQ(c.blob_bytes, 6000u + 3 * kEnv);
    EXPECT_EQ(c.sidecars, 1u);
    EXPECT_EQ(c.sidecar_bytes, 500u + kEnv);
    EXPECT_EQ(c.l1_heads, 1u);
    EXPECT_EQ(c.l1_blocks, 3u);
    EXPECT_EQ(c.l1_pending, 0u);
  }
  const audit::UsageCounts& team = r.usage[2].counts;
  EXPECT_EQ(r.usage[2].ns, "team");
  EXPECT_EQ(team.blob_bytes, 4096u + 512u + 2 * kEnv);
  EXPECT_EQ(team.head_bytes, HeadBytes("team", 2));
  EXPECT_EQ(r.total.blobs, 5u);
  EXPECT_EQ(r.total.blob_bytes, 6000u + 4608u + 5 * kEnv);
  EXPECT_EQ(r.total.heads, 2u);
  EXPECT_EQ(r.total.orphans, 0u);
  EXPECT_EQ(r.total.strays, 0u);
}

TEST_P(AuditTest, UnpublishedPutsShowAsPendingInL1AndAsAgedOrphansInL2) {
  TestChain c = ChainOfSizes({700, 300}, 3);
  {
    auto store = Open();
    ASSERT_TRUE(store->PutBlocks("default", kFpA, c.Puts()).ok());
    // Closing drains the uploads: the blobs reach L2, no head names them.
  }
  clock_.Advance(2 * kHourUs);
  audit::AuditReport r = Audit();
  EXPECT_TRUE(r.violations.empty()) << Describe(r);
  ASSERT_EQ(r.orphans.size(), 2u);
  EXPECT_TRUE(r.orphans[0].age_known);
  EXPECT_GE(r.orphans[0].age_us, 2 * kHourUs - kMinuteUs);  // files: written after the start
  EXPECT_LT(r.orphans[0].age_us, 3 * kHourUs);
  EXPECT_EQ(r.expired_orphans, 2u);
  EXPECT_EQ(r.expired_orphan_bytes, 1000u + 2 * kEnv);
  EXPECT_EQ(r.usage[0].counts.orphans, 2u);
  EXPECT_EQ(r.usage[0].counts.blobs, 5u);  // the namespace row counts every blob once
  EXPECT_EQ(r.usage[1].counts.blobs, 3u);  // the fingerprint row, those its heads name
  EXPECT_EQ(r.usage[1].counts.l1_pending, 2u);
  EXPECT_EQ(r.usage[1].counts.l1_pending_payload_bytes, 1000u);
}

TEST_P(AuditTest, AMissingBlobIsFoundAndCannotBeRepaired) {
  const std::string blob = BlobKey(a_.payloads[1]);
  ASSERT_TRUE(l2_->Delete(blob).ok());
  audit::AuditReport r = Audit(/*quick=*/true);
  ExpectOnly(r, ViolationKind::kBlobMissing);
  EXPECT_EQ(r.violations[0].key, blob);
  EXPECT_NE(r.violations[0].detail.find(HeadKeyA()), std::string::npos);
  EXPECT_FALSE(audit::Repairable(ViolationKind::kBlobMissing));
  Repair(r);
  ExpectOnly(Audit(), ViolationKind::kBlobMissing);
  // What fixes it: a writer puts the block again.
  auto store = Open();
  ASSERT_TRUE(store->PutBlocks("default", kFpA, a_.Puts(1, 2)).ok());
  store.reset();
  EXPECT_TRUE(Audit().violations.empty());
}

TEST_P(AuditTest, ACorruptBlobIsFoundAndRepairLetsTheNextPutReplaceIt) {
  const std::string blob = BlobKey(a_.payloads[2]);
  std::string bytes = Read(blob);
  bytes[kEnv + 10] ^= 1;  // same size: only reading it shows the damage
  Replace(blob, bytes);
  EXPECT_TRUE(Audit(/*quick=*/true).violations.empty());
  audit::AuditReport r = Audit();
  ExpectOnly(r, ViolationKind::kBlobCorrupt);
  EXPECT_EQ(r.violations[0].key, blob);
  audit::RepairReport fixed = Repair(r);
  ASSERT_EQ(fixed.actions.size(), 1u);
  EXPECT_EQ(fixed.actions[0].action, "delete_blob");
  // Its bytes are gone for good (they were wrong); a put of the block restores them, which the
  // damaged object of the right size would have prevented (an upload skips an existing blob).
  ExpectOnly(Audit(), ViolationKind::kBlobMissing);
  auto store = Open();
  ASSERT_TRUE(store->PutBlocks("default", kFpA, a_.Puts(2, 3)).ok());
  store.reset();
  EXPECT_TRUE(Audit().violations.empty());
}

TEST_P(AuditTest, ABlobOfTheWrongSizeIsFoundEvenByAQuickAudit) {
  const std::string blob = BlobKey(a_.payloads[0]);
  Replace(blob, Read(blob).substr(0, 100));
  audit::AuditReport r = Audit(/*quick=*/true);
  ExpectOnly(r, ViolationKind::kBlobCorrupt);
  EXPECT_NE(r.violations[0].detail.find("1048"), std::string::npos)
      << r.violations[0].detail;
}

TEST_P(AuditTest, CompressedBlobsAreSoundAndACutOneIsFoundEvenByAQuickAudit) {
  TestChain z = ChainOfSizes({20000, 30000}, 3);
  for (auto& p : z.payloads) {
    for (size_t i = 0; i < p.size(); ++i) p[i] = i % 4 >= 2 ? 0 : p[i];
  }
  {
    auto store = Open(/*compress_level=*/1);
    ASSERT_TRUE(store->PutBlocks("team", kFpA, z.Puts()).ok());
    ASSERT_TRUE(store->PublishChain("team", kFpA, z.tip(), z.tip(), std::nullopt, nullptr).ok());
  }
  const std::string blob = BlobKey(z.payloads[1], "team");
  std::string stored = Read(blob);
  ASSERT_LT(stored.size(), kEnv + 30000) << "not compressed";
  EXPECT_TRUE(Audit(/*quick=*/true).violations.empty()) << Describe(Audit(true));
  EXPECT_TRUE(Audit().violations.empty()) << Describe(Audit());
  // Cut short: the header no longer accounts for the size. A quick audit reads the header only.
  std::string cut = stored.substr(0, stored.size() - 1);
  Replace(blob, cut);
  const auto quick = Audit(/*quick=*/true);
  ExpectOnly(quick, ViolationKind::kBlobCorrupt);
  EXPECT_LT(quick.bytes_read, cut.size());  // the heads and two 48-byte blob headers
  ExpectOnly(Audit(), ViolationKind::kBlobCorrupt);
  // Over the raw size: no blob of that payload can be that large, which a quick audit sees.
  Replace(blob, stored + std::string(30000, 'x'));
  ExpectOnly(Audit(/*quick=*/true), ViolationKind::kBlobCorrupt);
}

TEST_P(AuditTest, ACorruptHeadIsFoundAndRepaired) {
  std::string head = Read(HeadKeyA());
  head[head.size() / 2] ^= 0x10;
  Replace(HeadKeyA(), head);
  audit::AuditReport r = Audit(/*quick=*/true);
  EXPECT_EQ(r.CountOf(ViolationKind::kHeadUnreadable), 1u) << Describe(r);
  EXPECT_EQ(r.CountOf(ViolationKind::kL1Stale), 1u) << Describe(r);  // L1 has the good version
  EXPECT_EQ(r.violations.size(), 2u) << Describe(r);
  audit::RepairReport fixed = Repair(r);
  EXPECT_TRUE(fixed.l1_rebuilt);
  EXPECT_FALSE(l2_->Head(HeadKeyA()).ok());
  audit::AuditReport after = Audit();
  EXPECT_TRUE(after.violations.empty()) << Describe(after);
  EXPECT_EQ(after.orphans.size(), 3u);  // the lost chain's blobs, collected after the grace period
}

TEST_P(AuditTest, AHeadUnderAnotherChainsNameIsFoundAndRepaired) {
  const std::string wrong = layout::ChainKey("kv", "default", kFpA, Key(77));
  Replace(wrong, Read(HeadKeyA()));
  audit::AuditReport r = Audit();
  ExpectOnly(r, ViolationKind::kHeadNamesAnotherChain);
  EXPECT_EQ(r.violations[0].key, wrong);
  Repair(r);
  EXPECT_FALSE(l2_->Head(wrong).ok());
  EXPECT_TRUE(l2_->Head(HeadKeyA()).ok());
  EXPECT_TRUE(Audit().violations.empty());
}

TEST_P(AuditTest, StrayKeysAreFoundAndLeftAlone) {
  std::string upper = BlobKey(a_.payloads[0]);
  for (size_t i = upper.size() - 40; i < upper.size(); ++i) {
    upper[i] = static_cast<char>(std::toupper(static_cast<unsigned char>(upper[i])));
  }
  const std::vector<std::string> strays = {"kv/default/wombatkv/v1/notes.txt", "kv/README",
                                           "kv/default/backup/x", upper};
  for (const std::string& k : strays) Replace(k, "someone else's");
  audit::AuditReport r = Audit();
  ExpectOnly(r, ViolationKind::kStrayKey, strays.size());
  EXPECT_EQ(r.total.strays, strays.size());
  Repair(r);
  for (const std::string& k : strays) EXPECT_TRUE(l2_->Head(k).ok()) << k;
  ExpectOnly(Audit(), ViolationKind::kStrayKey, strays.size());
}

TEST_P(AuditTest, AStaleL1EntryIsFoundAndRepaired) {
  layout::ChainHead ghost;
  ghost.ns = "default";
  ghost.fp = kFpA;
  ghost.chain_id = Key(55);
  ghost.version = 3;
  ghost.entries = {ChainEntry{Key(55), HashPayload(a_.payloads[0]), 1000}};
  MetaWriteBatch b;
  b.Put(meta_records::HeadKey("default", kFpA, ghost.chain_id),
        meta_records::EncodeHeadValue("etag-of-nothing", layout::EncodeChainHead(ghost)));
  L1Write(std::move(b));
  audit::AuditReport r = Audit();
  ExpectOnly(r, ViolationKind::kL1Stale);
  EXPECT_NE(r.violations[0].detail.find("L2 does not have"), std::string::npos);
  EXPECT_EQ(r.usage[1].counts.l1_heads, 2u);
  audit::RepairReport fixed = Repair(r);
  EXPECT_TRUE(fixed.l1_rebuilt);
  EXPECT_EQ(fixed.l1_heads_written, 2u);
  EXPECT_TRUE(Audit().violations.empty());
}

TEST_P(AuditTest, AHeadMissingFromL1IsFoundAndRepaired) {
  MetaWriteBatch b;
  b.Delete(meta_records::HeadKey("team", kFpB, b_.tip()));
  L1Write(std::move(b));
  audit::AuditReport r = Audit();
  ExpectOnly(r, ViolationKind::kL1MissingHead);
  EXPECT_EQ(r.violations[0].ns, "team");
  Repair(r);
  EXPECT_TRUE(Audit().violations.empty());
  // The rebuilt L1 serves an open without help from L2's listing.
  auto store = Open();
  EXPECT_EQ(*store->LookupPrefix("team", kFpB, b_.keys), 2u);
}

TEST_P(AuditTest, AnUndecodableL1RecordIsFoundAndRepaired) {
  MetaWriteBatch b;
  b.Put(meta_records::HeadKey("default", kFpA, Key(66)), "not a head record");
  b.Put(meta_records::PendingKey("default", kFpA, Key(67)), "short");
  L1Write(std::move(b));
  audit::AuditReport r = Audit();
  ExpectOnly(r, ViolationKind::kL1Unreadable, 2);
  Repair(r);
  EXPECT_TRUE(Audit().violations.empty());
}

TEST_P(AuditTest, ACorruptSidecarIsFoundAndRepaired) {
  const std::string key = layout::SidecarKey("kv", "default", kFpA, a_.tip());
  std::string bytes = Read(key);
  bytes.back() ^= 0x01;
  Replace(key, bytes);
  audit::AuditReport r = Audit();
  ExpectOnly(r, ViolationKind::kSidecarCorrupt);
  Repair(r);
  EXPECT_FALSE(l2_->Head(key).ok());  // a sidecar miss: the engine recomputes (G7)
  EXPECT_TRUE(Audit().violations.empty());
}

TEST_P(AuditTest, RepairDeletesExpiredOrphansOnly) {
  {
    auto store = Open();
    ASSERT_TRUE(store->PutBlocks("default", kFpA, ChainOfSizes({100}, 4).Puts()).ok());
  }
  clock_.Advance(2 * kHourUs);
  TestChain young = ChainOfSizes({200}, 5);
  {
    auto store = Open();
    ASSERT_TRUE(store->PutBlocks("default", kFpA, young.Puts()).ok());
  }
  StampWithClock(BlobKey(young.payloads[0]));
  audit::AuditReport r = Audit();
  EXPECT_EQ(r.orphans.size(), 2u);
  EXPECT_EQ(r.expired_orphans, 1u);
  audit::RepairReport fixed = Repair(r);
  EXPECT_TRUE(fixed.gc_ran);
  EXPECT_EQ(fixed.gc.deleted, 1u);
  EXPECT_EQ(fixed.gc.freed_bytes, 100u + kEnv);
  audit::AuditReport after = Audit();
  ASSERT_EQ(after.orphans.size(), 1u);
  EXPECT_EQ(after.orphans[0].bytes, 200u + kEnv);
  EXPECT_EQ(after.total.blobs, 6u);
}

// `wombatkv audit --repair` with WMBT_KV_S3_LIST_LAG: an old orphan is named again by a head
// published just before the repair, whose listings still hide that head. The repair's GC pass
// finds the blob unreferenced; only a second listing of the heads after waiting out the lag sees
// the head, and the blob is not deleted (gc/orphan_gc.h R3).
TEST_P(AuditTest, RepairWaitsOutTheListingLagBeforeItDeletes) {
  TestChain c = ChainOfSizes({300}, 6);
  {
    auto store = Open();
    ASSERT_TRUE(store->PutBlocks("default", kFpA, c.Puts()).ok());
  }
  clock_.Advance(2 * kHourUs);  // an orphan long past the grace
  {
    auto store = Open();  // the same block put again and published: the old blob is reused
    ASSERT_TRUE(store->PutBlocks("default", kFpA, c.Puts()).ok());
    ASSERT_TRUE(
        store->PublishChain("default", kFpA, c.tip(), c.tip(), std::nullopt, nullptr).ok());
  }
  constexpr uint64_t kLagUs = 5 * kMinuteUs;
  LaggingListing lagging(l2_.get(), &clock_);
  lagging.hidden = layout::ChainKey("kv", "default", kFpA, c.tip());
  lagging.until_us = clock_.NowMicros() + kLagUs;
  audit::RepairOptions ro;
  ro.list_lag_us = kLagUs;
  auto fixed = audit::Repair(&lagging, l1_.get(), &clock_, Audit(), ro);
  ASSERT_TRUE(fixed.ok()) << fixed.status().ToString();
  EXPECT_EQ(fixed->gc.named_late, 1u);
  EXPECT_EQ(fixed->gc.restored, 0u) << "deleted, then put back";
  EXPECT_EQ(fixed->gc.deleted, 0u);
  EXPECT_EQ(fixed->gc.list_lag_waited_us, kLagUs);  // nothing deleted: no re-check
  EXPECT_TRUE(l2_->Head(BlobKey(c.payloads[0])).ok()) << "a published block's blob was deleted";
  EXPECT_TRUE(Audit().violations.empty());
}

TEST_P(AuditTest, WithoutL1OnlyL2IsChecked) {
  MetaWriteBatch b;
  b.Delete(meta_records::HeadKey("team", kFpB, b_.tip()));
  L1Write(std::move(b));
  audit::AuditReport r = Audit(false, /*with_l1=*/false);
  EXPECT_FALSE(r.l1_checked);
  EXPECT_TRUE(r.violations.empty()) << Describe(r);
  EXPECT_EQ(r.total.l1_heads, 0u);
}

INSTANTIATE_TEST_SUITE_P(Planes, AuditTest, ::testing::Values(Planes::kMemory, Planes::kDisk),
                         PlanesName);

}  // namespace
}  // namespace wombatkv::testing
