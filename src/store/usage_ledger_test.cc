#include "store/usage_ledger.h"

#include <gtest/gtest.h>

#include <set>

#include "layout/chain_head.h"

namespace wombatkv {
namespace {

ChainEntry E(uint8_t key, uint8_t hash, uint32_t length) {
  ChainEntry e;
  e.key.bytes.fill(key);
  e.hash.bytes.fill(hash);
  e.length = length;
  return e;
}

Fingerprint Fp(uint8_t v) {
  Fingerprint f;
  f.bytes.fill(v);
  return f;
}

ChainId Id(uint8_t v) {
  ChainId id;
  id.bytes.fill(v);
  return id;
}

const UsageLedger::IndexedFn kAllIndexed = [](const Fingerprint&, const BlockKey&) {
  return true;
};

TEST(UsageLedger, BlobsAreCountedOncePerNamespaceAtTheirObjectSize) {
  UsageLedger l;
  UsageLedger::Changes ch;
  // Two chains share hash 1; chain b names hash 2 twice (identical payloads under two keys).
  std::vector<ChainEntry> a = {E(1, 1, 100), E(2, 3, 300)};
  std::vector<ChainEntry> b = {E(1, 1, 100), E(4, 2, 200), E(5, 2, 200)};
  l.ChainSet("ns", Fp(1), Id(1), a, 0, 0, &ch);
  l.ChainSet("ns", Fp(1), Id(2), b, 0, 0, &ch);
  auto t = l.NamespaceTotals("ns", kAllIndexed);
  EXPECT_EQ(t.blobs, 3u);
  EXPECT_EQ(t.blob_bytes, BlobObjectBytes(100) + BlobObjectBytes(200) + BlobObjectBytes(300));
  EXPECT_EQ(t.chains, 2u);
  EXPECT_EQ(t.head_bytes, layout::ChainHeadBytes(2, 2) + layout::ChainHeadBytes(2, 3));
  EXPECT_TRUE(ch.unreferenced.empty());

  // Removing a: hash 3 goes (unreferenced), hash 1 stays (b still names it).
  EXPECT_TRUE(l.ChainRemoved("ns", Fp(1), Id(1), /*now_us=*/77, &ch));
  EXPECT_FALSE(l.ChainRemoved("ns", Fp(1), Id(1), 78, &ch));
  ASSERT_EQ(ch.unreferenced.size(), 1u);
  EXPECT_EQ(ch.unreferenced[0].hash, E(0, 3, 0).hash);
  EXPECT_EQ(ch.unreferenced[0].bytes, BlobObjectBytes(300));
  EXPECT_EQ(ch.unreferenced[0].since_us, 77u);
  t = l.NamespaceTotals("ns", kAllIndexed);
  EXPECT_EQ(t.blobs, 2u);
  EXPECT_EQ(t.unreferenced_blobs, 1u);
  EXPECT_EQ(t.unreferenced_bytes, BlobObjectBytes(300));

  // Naming it again takes it off the unreferenced list (U2).
  UsageLedger::Changes again;
  l.ChainSet("ns", Fp(2), Id(1), a, 0, 0, &again);
  ASSERT_EQ(again.rereferenced.size(), 1u);
  t = l.NamespaceTotals("ns", kAllIndexed);
  EXPECT_EQ(t.unreferenced_blobs, 0u);
  EXPECT_EQ(t.blobs, 3u);
  auto per_fp = l.FingerprintTotals("ns", kAllIndexed);
  EXPECT_EQ(per_fp[Fp(1)].chains, 1u);
  EXPECT_EQ(per_fp[Fp(2)].chains, 1u);
  EXPECT_EQ(per_fp[Fp(1)].blobs, 2u);  // b: hashes 1 and 2
  EXPECT_EQ(per_fp[Fp(2)].blobs, 2u);  // a: hashes 1 and 3
}

// A blob unreferenced, referenced again and unreferenced again is queued for its existence probe
// each time; the stale entries used to stay until they reached the front (a pass looks at a few
// dozen), so a chain set and removed over and over grew the queue for ever. It is bounded by the
// live entries.
TEST(UsageLedger, ThePendingProbesOfABlobReferencedOnAndOffStayBounded) {
  UsageLedger l;
  std::vector<ChainEntry> a = {E(1, 1, 100), E(2, 3, 300)};
  for (uint64_t round = 0; round < 20000; ++round) {
    UsageLedger::Changes ch;
    l.ChainSet("ns", Fp(1), Id(1), a, 0, 0, &ch);
    ASSERT_TRUE(l.ChainRemoved("ns", Fp(1), Id(1), round, &ch));
  }
  EXPECT_EQ(l.NamespaceTotals("ns", kAllIndexed).unreferenced_blobs, 2u);
  EXPECT_LE(l.ProbeQueueSize(), 2 * 4096u) << "two live entries";
  // The live ones are still probed.
  auto due = l.DueForProbe(/*now_us=*/1ull << 40, /*interval_us=*/1, 8);
  EXPECT_EQ(due.size(), 2u);
}

// A blob that several chains of one fingerprint name counts once for it, however the chains of
// different fingerprints interleave in the ledger's (hashed) order.
TEST(UsageLedger, FingerprintTotalsCountABlobSharedByManyChainsOnce) {
  UsageLedger l;
  for (uint8_t c = 0; c < 100; ++c) {
    const uint8_t fp = 1 + c % 2;
    const std::vector<ChainEntry> chain = {E(1, fp, 100), E(c + 2, 100 + c, 10)};
    l.ChainSet("ns", Fp(fp), Id(c), chain, 0, 0, nullptr);
  }
  auto per_fp = l.FingerprintTotals("ns", kAllIndexed);
  for (uint8_t fp : {1, 2}) {
    SCOPED_TRACE("fingerprint " + std::to_string(fp));
    EXPECT_EQ(per_fp[Fp(fp)].chains, 50u);
    EXPECT_EQ(per_fp[Fp(fp)].blobs, 51u);  // the shared first block's, and 50 of their own
    EXPECT_EQ(per_fp[Fp(fp)].blob_bytes, BlobObjectBytes(100) + 50 * BlobObjectBytes(10));
  }
}

// Chain ids are the engine's: a thousand that differ only in their last two bytes hash apart
// (hashing their first 8 bytes gave them one, and the ledger's map one probe run).
TEST(UsageLedger, ChainIdsSharingAPrefixHashApart) {
  std::set<size_t> hashes;
  for (int i = 0; i < 1000; ++i) {
    ChainId id = Id(7);
    id.bytes[30] = static_cast<uint8_t>(i >> 8);
    id.bytes[31] = static_cast<uint8_t>(i);
    hashes.insert(UsageLedger::ChainNameHash{}({Fp(1), id}));
  }
  EXPECT_EQ(hashes.size(), 1000u);
}

TEST(UsageLedger, TwoHeadsNamingDifferentBytesUnderOneKeyKeepBothBlobs) {
  // L0 keeps one hash per node (the newest); the ledger counts what each head names.
  UsageLedger l;
  std::vector<ChainEntry> a = {E(1, 1, 100)};
  std::vector<ChainEntry> b = {E(1, 2, 100), E(2, 3, 100)};
  l.ChainSet("ns", Fp(1), Id(1), a, 0, 0, nullptr);
  l.ChainSet("ns", Fp(1), Id(2), b, 0, 0, nullptr);
  EXPECT_EQ(l.NamespaceTotals("ns", kAllIndexed).blobs, 3u);
  // Replacing a chain's head drops exactly what the old head named.
  UsageLedger::Changes ch;
  l.ChainSet("ns", Fp(1), Id(2), a, 0, 5, &ch);
  ASSERT_EQ(ch.unreferenced.size(), 2u);
  EXPECT_EQ(l.NamespaceTotals("ns", kAllIndexed).blobs, 1u);
  EXPECT_EQ(l.NamespaceTotals("ns", kAllIndexed).chains, 2u);
  EXPECT_TRUE(l.ChainRemoved("ns", Fp(1), Id(1), 6, nullptr));
  EXPECT_TRUE(l.ChainRemoved("ns", Fp(1), Id(2), 6, nullptr));
  auto t = l.NamespaceTotals("ns", kAllIndexed);
  EXPECT_EQ(t.blobs, 0u);
  EXPECT_EQ(t.blob_bytes, 0u);
  EXPECT_EQ(t.head_bytes, 0u);
  EXPECT_EQ(t.unreferenced_blobs, 3u);
  EXPECT_EQ(l.NamespaceTotals("other", kAllIndexed).blobs, 0u);
}

TEST(UsageLedger, SidecarListingKeepsPutsMadeWhileItRan) {
  UsageLedger l;
  BlockKey t1, t2, t3;
  t1.bytes.fill(1);
  t2.bytes.fill(2);
  t3.bytes.fill(3);
  l.SidecarPut("ns", Fp(1), t1, 100);
  l.SidecarPut("ns", Fp(1), t2, 200);
  const uint64_t token = l.BeginSidecarListing();
  l.SidecarPut("ns", Fp(1), t3, 300);  // after the listing began: it may not have seen it
  UsageLedger::ListedSidecar listed[] = {{Fp(1), t1, 150}};  // t2 was deleted meanwhile
  l.ReplaceSidecars("ns", token, listed);
  auto t = l.NamespaceTotals("ns", kAllIndexed);
  EXPECT_EQ(t.sidecars, 2u);
  EXPECT_EQ(t.sidecar_bytes, 450u);
  EXPECT_EQ(l.SidecarBytes("ns", Fp(1), t2), 0u);
  // Sidecars whose tip is not indexed are stray.
  t = l.NamespaceTotals("ns", [&](const Fingerprint&, const BlockKey& tip) { return tip == t1; });
  EXPECT_EQ(t.sidecars, 1u);
  EXPECT_EQ(t.stray_sidecars, 1u);
  EXPECT_EQ(t.stray_sidecar_bytes, 300u);
  l.SidecarDeleted("ns", Fp(1), t1);
  EXPECT_EQ(l.QuickBytes("ns"), 300u);
}

TEST(UsageLedger, UnreferencedBlobsAreProbedAfterAnIntervalAndFreedOnlyWhenGone) {
  UsageLedger l;
  UsageLedger::Changes ch;
  std::vector<ChainEntry> a = {E(1, 1, 10), E(2, 2, 20)};
  l.ChainSet("ns", Fp(1), Id(1), a, 0, 0, &ch);
  l.ChainRemoved("ns", Fp(1), Id(1), /*now_us=*/1000, &ch);
  EXPECT_TRUE(l.DueForProbe(1500, 1000, 10).empty());  // too young
  auto due = l.DueForProbe(2000, 1000, 10);
  ASSERT_EQ(due.size(), 2u);
  EXPECT_TRUE(l.DueForProbe(2500, 1000, 10).empty());  // probed at 2000: next at 3000
  EXPECT_EQ(l.UnrefDeleted("ns", due[0].second.hash), due[0].second.bytes);
  EXPECT_EQ(l.UnrefDeleted("ns", due[0].second.hash), 0u);  // counted once
  EXPECT_EQ(l.DueForProbe(3000, 1000, 10).size(), 1u);
  // A loaded record of a referenced blob is refused (U2).
  l.ChainSet("ns", Fp(1), Id(2), a, 0, 0, &ch);
  EXPECT_FALSE(l.UnrefLoaded("ns", {a[0].hash, 58, 5}));
  EXPECT_EQ(l.AllUnreferencedBytes(), 0u);
}

}  // namespace
}  // namespace wombatkv
