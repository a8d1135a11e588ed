// R3 across a crash (GcOptions::hold_dir): a collector killed between its deletes and its
// re-check leaves the bytes it kept on disk, and the next collector with the same directory does
// the re-check and puts back what a head names. Real files and a real SIGKILL of a child process.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gc/gc_test_util.h"
#include "gc/orphan_gc.h"
#include "layout/envelope.h"
#include "layout/object_keys.h"
#include "store/store_test_util.h"

namespace wombatkv::testing {
namespace {

const Fingerprint kFp = Fp(7);
constexpr size_t kBlockBytes = 1000;
constexpr uint64_t kLagUs = 5 * kMinuteUs;

// An L2 of real files that a forked collector shares with the test, a store on it for the
// publisher and the reader, and the hold directory.
struct FilePlanes {
  TempDir dir;
  // File modification times are real: the test's wall clock starts at the real time.
  ManualClock clock{RealClock()->WallMicros()};
  std::unique_ptr<ObjectStore> l2 = NewFsObjectStore(dir.path() + "/bucket", PosixFileSystem());
  std::vector<std::unique_ptr<MetaStore>> l1s;
  std::unique_ptr<Executor> inline_executor = NewInlineExecutor();
  const std::string hold_dir = dir.path() + "/held";

  std::unique_ptr<Store> Open() {
    l1s.push_back(NewMemMetaStore());
    StoreOptions o;
    o.object_store = l2.get();
    o.meta_store = l1s.back().get();
    o.clock = &clock;
    o.executor = inline_executor.get();
    o.log = [](LogLevel, const std::string&) {};
    auto s = Store::Open(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  gc::GcOptions Options() {
    gc::GcOptions o;
    o.grace_us = kHourUs;
    o.list_lag_us = kLagUs;
    o.hold_fs = PosixFileSystem();
    o.hold_dir = hold_dir;
    return o;
  }
  size_t HoldFiles() {
    auto names = PosixFileSystem()->ListDir(hold_dir);
    return names.ok() ? names->size() : 0;
  }
  // Puts `chain` and closes without publishing: its blobs are orphans.
  void PutOrphans(const TestChain& chain) {
    auto writer = Open();
    ASSERT_TRUE(writer->PutBlocks("default", kFp, chain.Puts()).ok());
  }
  // Each payload's blob as L2 holds it, as a collector keeps it.
  std::vector<gc::HeldBlob> Held(const TestChain& chain) {
    std::vector<gc::HeldBlob> out;
    for (const auto& payload : chain.payloads) {
      auto blob = HeldBlobOf(l2.get(), "default", payload);
      EXPECT_TRUE(blob.has_value());
      if (blob) out.push_back(std::move(*blob));
    }
    return out;
  }
  // What a collector that dies after writing its hold file leaves: the file (its path).
  std::string LeaveHoldFile(const std::vector<gc::HeldBlob>& blobs) {
    std::string path = testing::LeaveHoldFile(hold_dir, blobs);
    EXPECT_FALSE(path.empty());
    return path;
  }
  // What a collector that died after syncing its hold file for `chain`'s orphans left: the file
  // (its path in *path) and the blobs, still in L2.
  std::vector<gc::HeldBlob> LeaveHeldOrphans(const TestChain& chain, std::string* path = nullptr) {
    PutOrphans(chain);
    std::vector<gc::HeldBlob> blobs = Held(chain);
    EXPECT_EQ(blobs.size(), chain.payloads.size());
    const std::string file = LeaveHoldFile(blobs);
    if (path) *path = file;
    return blobs;
  }
  // One pass of a collector with the hold directory (a new process's first).
  gc::GcReport Pass(gc::OrphanCollector& collector) {
    auto r = collector.RunPass();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : gc::GcReport{};
  }
};

// The crash window R3 leaves without a hold directory: an orphan older than the grace is reused
// by a publisher on another host (its upload finds the blob and skips it), whose head a lagging
// listing does not show yet — not even the collector's second listing before its deletes (the
// head was written just before it). The collector deletes the blob; its re-check, after waiting
// out the lag, would put it back — but it is killed first. The chain's publish was acknowledged
// (its check after the head write found the blob, then not yet deleted), so only the collector can
// repair it.
TEST(OrphanGcCrash, ACollectorKilledBeforeItsRecheckLeavesItToTheNext) {
  FilePlanes p;
  const TestChain chain = MakeChain(1, kBlockBytes, 9);
  p.PutOrphans(chain);
  p.clock.Advance(2 * kHourUs);
  const std::string blob = layout::BlobKey("kv", "default", HashPayload(chain.payloads[0]));
  {
    auto publisher = p.Open();
    ASSERT_TRUE(publisher->PutBlocks("default", kFp, chain.Puts()).ok());
    auto v =
        publisher->PublishChain("default", kFp, chain.tip(), chain.tip(), std::nullopt, nullptr);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
  }
  LaggingListing lagging(p.l2.get(), &p.clock);
  lagging.hidden = layout::ChainKey("kv", "default", kFp, chain.tip());
  lagging.until_us = p.clock.NowMicros() + kLagUs + 1;  // past the wait before the deletes

  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The collector: says when it has deleted and is about to wait for the listing (its second
    // wait; the first came before the deletes), then waits to be killed.
    gc::GcOptions o = p.Options();
    int waits = 0;
    o.on_list_lag_wait = [&](uint64_t) {
      if (++waits < 2) return;
      const char c = 'd';
      (void)!::write(ready[1], &c, 1);
      for (;;) ::pause();
    };
    gc::OrphanCollector collector(&lagging, &p.clock, o);
    (void)collector.RunPass();
    ::_exit(3);  // it re-checked: the test's premise failed
  }
  ::close(ready[1]);
  char c = 0;
  const ssize_t got = ::read(ready[0], &c, 1);
  ::close(ready[0]);
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_EQ(got, 1) << "the collector ended without deleting (exit status " << status << ")";
  ASSERT_TRUE(WIFSIGNALED(status));

  // The damage the crash left: an acknowledged chain naming a deleted blob.
  EXPECT_TRUE(p.l2->Head(blob).status().IsNotFound());
  EXPECT_EQ(p.HoldFiles(), 1u);

  // The next collector with the same hold directory (a restarted process, as late as the killed
  // one got) finishes the re-check.
  p.clock.Advance(kLagUs);
  gc::OrphanCollector next(p.l2.get(), &p.clock, p.Options());
  const gc::GcReport r = p.Pass(next);
  EXPECT_EQ(r.recovered, 1u);
  EXPECT_EQ(r.restored, 1u);
  EXPECT_EQ(r.deleted, 0u);
  EXPECT_EQ(r.list_lag_waited_us, kLagUs);
  EXPECT_TRUE(p.l2->Head(blob).ok());
  EXPECT_EQ(p.HoldFiles(), 0u);
  auto reader = p.Open();
  auto read = reader->GetBlocks("default", kFp, chain.keys);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->total_bytes(), kBlockBytes);
}

// What an earlier collector left and no head names stays deleted, and its file goes.
TEST(OrphanGcCrash, ALeftoverBlobNoHeadNamesStaysDeleted) {
  FilePlanes p;
  const std::vector<gc::HeldBlob> blobs = p.LeaveHeldOrphans(MakeChain(2, kBlockBytes, 4));
  p.clock.Advance(2 * kHourUs);
  for (const gc::HeldBlob& b : blobs) ASSERT_TRUE(p.l2->Delete(b.orphan.key).ok());
  ASSERT_EQ(p.HoldFiles(), 1u);
  gc::OrphanCollector next(p.l2.get(), &p.clock, p.Options());
  const gc::GcReport r = p.Pass(next);
  EXPECT_EQ(r.recovered, 2u);
  EXPECT_EQ(r.restored, 0u);
  EXPECT_EQ(r.deleted, 2u);
  for (const gc::HeldBlob& b : blobs) EXPECT_FALSE(p.l2->Head(b.orphan.key).ok());
  EXPECT_EQ(p.HoldFiles(), 0u);
}

// A collector that died after syncing its hold file but before its deletes: the blobs are still
// in L2. The next collector re-checks them, counts none as deleted (the store would drop them
// from its ledger while L2 holds them), and leaves them to be collected as any orphan.
TEST(OrphanGcCrash, ALeftoverWhoseDeleteNeverHappenedIsNotCountedAsDeleted) {
  FilePlanes p;
  const std::vector<gc::HeldBlob> blobs = p.LeaveHeldOrphans(MakeChain(2, kBlockBytes, 8));
  gc::OrphanCollector next(p.l2.get(), &p.clock, p.Options());
  const gc::GcReport r = p.Pass(next);  // young orphans: this pass deletes nothing itself
  EXPECT_EQ(r.recovered, 2u);
  EXPECT_EQ(r.deleted, 0u);
  EXPECT_TRUE(r.removed.empty());
  for (const gc::HeldBlob& b : blobs) EXPECT_TRUE(p.l2->Head(b.orphan.key).ok());
  EXPECT_EQ(p.HoldFiles(), 0u);
}

// A hold file written under another L2 prefix (the CLI run with other settings on the same data
// directory) is not re-checked against this prefix's heads, which never name its blobs: it stays
// for a collector of its own prefix.
TEST(OrphanGcCrash, AHoldFileOfAnotherPrefixIsKeptUnread) {
  FilePlanes p;
  std::string path;
  const std::vector<gc::HeldBlob> blobs = p.LeaveHeldOrphans(MakeChain(1, kBlockBytes, 9), &path);
  p.clock.Advance(2 * kHourUs);
  ASSERT_TRUE(p.l2->Delete(blobs[0].orphan.key).ok());
  {
    gc::GcOptions o = p.Options();
    o.l2_prefix = "elsewhere";
    gc::OrphanCollector other(p.l2.get(), &p.clock, o);
    const gc::GcReport r = p.Pass(other);
    EXPECT_EQ(r.recovered, 0u);
    ASSERT_EQ(r.problems.size(), 1u);
    EXPECT_NE(r.problems[0].find("another L2 prefix"), std::string::npos) << r.problems[0];
  }
  EXPECT_TRUE(PosixFileSystem()->Stat(path).ok()) << "a file of another prefix was dropped";
  gc::OrphanCollector own(p.l2.get(), &p.clock, p.Options());
  EXPECT_EQ(p.Pass(own).recovered, 1u);
  EXPECT_EQ(p.HoldFiles(), 0u);
}

// A hold file that does not decode is reported and set aside, never read as blobs; the pass goes
// on.
TEST(OrphanGcCrash, ADamagedHoldFileIsReportedAndSetAside) {
  FilePlanes p;
  std::string path;
  const std::vector<gc::HeldBlob> blobs = p.LeaveHeldOrphans(MakeChain(1, kBlockBytes, 5), &path);
  auto bytes = PosixFileSystem()->ReadFile(path, 0, kToEnd);
  ASSERT_TRUE(bytes.ok());
  std::vector<uint8_t> damaged((*bytes)->data(), (*bytes)->data() + (*bytes)->size());
  damaged[damaged.size() / 2] ^= 0x40;
  ASSERT_TRUE(PosixFileSystem()
                  ->WriteFileAtomic(path, {ByteView(damaged.data(), damaged.size())}, true)
                  .ok());

  gc::OrphanCollector next(p.l2.get(), &p.clock, p.Options());
  const gc::GcReport r = p.Pass(next);
  EXPECT_EQ(r.recovered, 0u);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems[0].find("CRC32C"), std::string::npos) << r.problems[0];
  EXPECT_TRUE(PosixFileSystem()->Stat(path + ".unreadable").ok());
  EXPECT_FALSE(PosixFileSystem()->Stat(path).ok());
  EXPECT_TRUE(p.l2->Head(blobs[0].orphan.key).ok());  // young orphan: nothing deleted
  // Read once: the next pass does not report it again.
  EXPECT_TRUE(p.Pass(next).problems.empty());
  // A later collector's files take numbers past the one set aside: a file of its number, damaged
  // too, would replace it when set aside in turn.
  gc::HoldFiles later(PosixFileSystem(), p.hold_dir);
  std::vector<std::string> problems;
  ASSERT_TRUE(later.TakeLeftovers(&problems).ok());
  std::vector<const gc::HeldBlob*> refs{&blobs[0]};
  auto file = later.Write(refs);
  ASSERT_TRUE(file.ok());
  EXPECT_NE((*file)->path(), path);
  later.Close();
}

TEST(OrphanGcCrash, APassThatEndsLeavesNoHoldFile) {
  FilePlanes p;
  const TestChain chain = MakeChain(3, kBlockBytes, 6);
  p.PutOrphans(chain);
  p.clock.Advance(2 * kHourUs);
  gc::OrphanCollector collector(p.l2.get(), &p.clock, p.Options());
  const gc::GcReport r = p.Pass(collector);
  EXPECT_EQ(r.deleted, 3u);
  EXPECT_EQ(r.recovered, 0u);
  EXPECT_EQ(p.HoldFiles(), 0u);
  for (const auto& payload : chain.payloads) {
    EXPECT_FALSE(p.l2->Head(layout::BlobKey("kv", "default", HashPayload(payload))).ok());
  }
}

// Bytes that cannot be kept on disk are not deleted: the pass stops with the error and the
// orphans stay for a later pass.
TEST(OrphanGcCrash, NothingIsDeletedWhileTheHoldFileCannotBeWritten) {
  FilePlanes p;
  const TestChain chain = MakeChain(2, kBlockBytes, 7);
  p.PutOrphans(chain);
  p.clock.Advance(2 * kHourUs);
  // The hold directory's place is taken by a file: it cannot be made.
  ASSERT_TRUE(PosixFileSystem()->WriteFileAtomic(p.hold_dir, {}, true).ok());
  gc::OrphanCollector collector(p.l2.get(), &p.clock, p.Options());
  auto r = collector.RunPass();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nothing is deleted until they can be"), std::string::npos)
      << r.status().ToString();
  for (const gc::HeldBlob& b : p.Held(chain)) EXPECT_TRUE(p.l2->Head(b.orphan.key).ok());
  // Once it can be, they go.
  ASSERT_TRUE(PosixFileSystem()->DeleteFile(p.hold_dir).ok());
  const gc::GcReport again = p.Pass(collector);
  EXPECT_EQ(again.deleted, 2u);
}

}  // namespace
}  // namespace wombatkv::testing
