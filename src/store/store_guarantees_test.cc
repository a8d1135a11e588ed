// The guarantees of SPEC §5 that hold inside one process, each tested on in-memory planes and on
// real disk planes (RocksDB L1 + local-directory L2). Restart and L1-loss cases are in
// store_restart_test.cc. The same suite runs through the daemon's code path (RemoteStore over a
// loopback Service) in src/client's remote_store_test: see StoreVariants().
#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "layout/object_keys.h"
#include "object/packed_view.h"
#include "store/store_test_util.h"

namespace wombatkv::testing {
namespace {

class StoreGuarantees : public ::testing::TestWithParam<StoreVariant> {
 protected:
  StoreHarness h_{GetParam()};
  Fingerprint fp_ = Fp(7);

  void PutAndPublish(Store& s, const TestChain& c, std::string_view ns = "default") {
    auto puts = c.Puts();
    ASSERT_TRUE(s.PutBlocks(ns, fp_, puts).ok());
    auto v = s.PublishChain(ns, fp_, c.tip(), c.tip());
    ASSERT_TRUE(v.ok()) << v.status().ToString();
  }
};

// The 8-step example of seed/consistency.md, verbatim.
TEST_P(StoreGuarantees, SeedEightStepExampleHoldsAcrossRestart) {
  Store* s = &h_.Open();
  const std::vector<uint8_t> a = Payload(1, 4096), b = Payload(2, 4096);
  const BlockKey ka = Key(1), kb = Key(2), chain_x = Key(99);
  // 1. PUT(block_A) returns Ok
  BlockPut put_a{ka, BlockKey{}, a};
  ASSERT_TRUE(s->PutBlocks("default", fp_, {&put_a, 1}).ok());
  // 2. PUT(block_B with parent=block_A) returns Ok
  BlockPut put_b{kb, ka, b};
  ASSERT_TRUE(s->PutBlocks("default", fp_, {&put_b, 1}).ok());
  // 3. CHAIN_HEAD_PUBLISH(chain_X tip=block_B) returns Ok
  ASSERT_TRUE(s->PublishChain("default", fp_, chain_x, kb).ok());
  // 4. GET(block_A) returns block_A bytes
  auto ga = s->GetBlocks("default", fp_, std::vector<BlockKey>{ka});
  ASSERT_TRUE(ga.ok()) << ga.status().ToString();
  EXPECT_TRUE(std::ranges::equal(ga->payload(0), a));
  // 5. GET(block_B) returns block_B bytes
  auto gb = s->GetBlocks("default", fp_, std::vector<BlockKey>{kb});
  ASSERT_TRUE(gb.ok()) << gb.status().ToString();
  EXPECT_TRUE(std::ranges::equal(gb->payload(0), b));
  // 6. LOOKUP_BLOCK_PREFIX(chain_X) returns 2 blocks
  EXPECT_EQ(*s->LookupPrefix("default", fp_, std::vector<BlockKey>{ka, kb}), 2u);
  // 7. (daemon crash + restart)
  ga = Status::NotFound("released");
  gb = Status::NotFound("released");
  s = &h_.Reopen();
  // 8. LOOKUP_BLOCK_PREFIX(chain_X) returns 2 blocks
  EXPECT_EQ(*s->LookupPrefix("default", fp_, std::vector<BlockKey>{ka, kb}), 2u);
  auto again = s->GetBlocks("default", fp_, std::vector<BlockKey>{ka, kb});
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(std::ranges::equal(again->payload(0), a));
  EXPECT_TRUE(std::ranges::equal(again->payload(1), b));
  auto b_again = s->GetBlocks("default", fp_, std::vector<BlockKey>{kb});
  ASSERT_TRUE(b_again.ok()) << b_again.status().ToString();
  EXPECT_TRUE(std::ranges::equal(b_again->payload(0), b));
}

// A get asks for consecutive blocks of a chain starting at any of them: the middle of a chain, its
// tip alone; a key that does not follow the one before it is a miss that says so.
TEST_P(StoreGuarantees, GetStartsAnywhereInAChainButFollowsIt) {
  Store& s = h_.Open();
  auto c = MakeChain(4, 1000);
  PutAndPublish(s, c);
  auto mid = s.GetBlocks("default", fp_, std::vector<BlockKey>{c.keys[1], c.keys[2]});
  ASSERT_TRUE(mid.ok()) << mid.status().ToString();
  EXPECT_TRUE(std::ranges::equal(mid->payload(0), c.payloads[1]));
  EXPECT_TRUE(std::ranges::equal(mid->payload(1), c.payloads[2]));
  auto tip = s.GetBlocks("default", fp_, std::vector<BlockKey>{c.keys[3]});
  ASSERT_TRUE(tip.ok()) << tip.status().ToString();
  EXPECT_TRUE(std::ranges::equal(tip->payload(0), c.payloads[3]));
  auto skip = s.GetBlocks("default", fp_, std::vector<BlockKey>{c.keys[1], c.keys[3]});
  ASSERT_TRUE(skip.status().IsNotFound());
  EXPECT_NE(skip.status().message().find("does not follow block 0"), std::string::npos)
      << skip.status().ToString();
  // Lookup stays a prefix from the root: a prompt's cached prefix.
  EXPECT_EQ(*s.LookupPrefix("default", fp_, std::vector<BlockKey>{c.keys[1], c.keys[2]}), 0u);
  // Another namespace or fingerprint never sees the chain's middle.
  EXPECT_TRUE(s.GetBlocks("other", fp_, std::vector<BlockKey>{c.keys[1]}).status().IsNotFound());
  EXPECT_TRUE(s.GetBlocks("default", Fingerprint{}, std::vector<BlockKey>{c.keys[1]})
                  .status()
                  .IsNotFound());
}

TEST_P(StoreGuarantees, G1PutIsReadableByContentHashAtOnce) {
  Store& s = h_.Open();
  auto c = MakeChain(3, 10000);
  auto hashes = s.PutBlocks("default", fp_, c.Puts());
  ASSERT_TRUE(hashes.ok());
  for (size_t i = 0; i < 3; ++i) {
    auto got = s.GetByContentHash("default", (*hashes)[i]);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE(std::ranges::equal(got->view(), c.payloads[i]));
  }
  // Not published: invisible to lookups and gets by key.
  EXPECT_EQ(*s.LookupPrefix("default", fp_, c.keys), 0u);
  EXPECT_TRUE(s.GetBlocks("default", fp_, c.keys).status().IsNotFound());
}

TEST_P(StoreGuarantees, G1PublishIsVisibleToTheNextLookupAndGet) {
  Store& s = h_.Open();
  auto c = MakeChain(5, 1000);
  PutAndPublish(s, c);
  EXPECT_EQ(*s.LookupPrefix("default", fp_, c.keys), 5u);
  auto got = s.GetBlocks("default", fp_, c.keys);
  ASSERT_TRUE(got.ok());
  for (size_t i = 0; i < 5; ++i) EXPECT_TRUE(std::ranges::equal(got->payload(i), c.payloads[i]));
}

TEST_P(StoreGuarantees, G3PublishedChainIsInL2WhenPublishReturns) {
  Store& s = h_.Open();
  auto c = MakeChain(4, 2000);
  PutAndPublish(s, c);
  // Open a second view on the same L2 only (fresh L1): it must see the chain.
  StoreOptions o;
  std::unique_ptr<ObjectStore> fs_l2;
  if (GetParam() == Planes::kMemory) {
    o.object_store = h_.mem_l2();
  } else {
    fs_l2 = NewFsObjectStore(h_.dir() + "/data/l2", PosixFileSystem());
    o.object_store = fs_l2.get();
  }
  auto l1 = NewMemMetaStore();
  o.meta_store = l1.get();
  auto other = Store::Open(o);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_EQ(*(*other)->LookupPrefix("default", fp_, c.keys), 4u);
  auto got = (*other)->GetBlocks("default", fp_, c.keys);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(std::ranges::equal(got->payload(3), c.payloads[3]));
}

TEST_P(StoreGuarantees, G3PublishReturnsOnlyAfterEveryBlobIsInL2) {
  // Uploads run only when someone waits for them: the publish must wait for all of them before
  // it writes the head.
  auto exec = std::make_unique<ManualExecutor>();
  StoreOptions o = h_.Options();
  o.executor = exec.get();
  Store& s = h_.Open(o);
  auto c = MakeChain(5, 3000);
  ASSERT_TRUE(s.PutBlocks("default", fp_, c.Puts()).ok());
  EXPECT_EQ(exec->queued(), 5u);
  ASSERT_TRUE(s.PublishChain("default", fp_, c.tip(), c.tip()).ok());
  std::unique_ptr<ObjectStore> fs_l2;
  ObjectStore* l2 = h_.mem_l2();
  if (!l2) {
    fs_l2 = NewFsObjectStore(h_.dir() + "/data/l2", PosixFileSystem());
    l2 = fs_l2.get();
  }
  for (const auto& p : c.payloads) {
    EXPECT_TRUE(l2->Head(layout::BlobKey("kv", "default", HashPayload(p))).ok());
  }
  EXPECT_TRUE(l2->Head(layout::ChainKey("kv", "default", fp_, c.tip())).ok());
  exec->DropAll();  // nothing may be left that the chain needs
  h_.Close();
}

TEST_P(StoreGuarantees, G4UnpublishedBlocksAreInvisibleAfterACrash) {
  auto c = MakeChain(3, 5000);
  auto exec = std::make_unique<ManualExecutor>();
  StoreOptions o = h_.Options();
  o.executor = exec.get();
  Store* s = &h_.Open(o);
  ASSERT_TRUE(s->PutBlocks("default", fp_, c.Puts(0, 2)).ok());
  ASSERT_TRUE(s->PublishChain("default", fp_, c.keys[1], c.keys[1]).ok());
  exec->Drain();  // the upload tasks the publish made no-ops by running them itself
  // Block C is put (acknowledged) but its chain head never is; then the process dies with the
  // upload still queued.
  auto hc = s->PutBlocks("default", fp_, c.Puts(2, 3));
  ASSERT_TRUE(hc.ok());
  EXPECT_EQ(exec->queued(), 1u);
  exec->DropAll();
  h_.Close();
  exec.reset();
  s = &h_.Open();
  EXPECT_EQ(*s->LookupPrefix("default", fp_, c.keys), 2u);
  EXPECT_TRUE(s->GetBlocks("default", fp_, c.keys).status().IsNotFound());
  EXPECT_TRUE(s->GetByContentHash("default", (*hc)[0]).status().IsNotFound());  // no trace
  // Publishing a chain through a block whose bytes never reached L2 is refused, not half-done.
  EXPECT_EQ(s->PublishChain("default", fp_, c.tip(), c.tip()).status().code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(*s->LookupPrefix("default", fp_, c.keys), 2u);
}

TEST_P(StoreGuarantees, G4OrphanThatReachedL2IsReadableByHashButNotByLookup) {
  auto c = MakeChain(3, 5000);
  Store* s = &h_.Open();
  ASSERT_TRUE(s->PutBlocks("default", fp_, c.Puts(0, 2)).ok());
  ASSERT_TRUE(s->PublishChain("default", fp_, c.keys[1], c.keys[1]).ok());
  auto hc = s->PutBlocks("default", fp_, c.Puts(2, 3));
  ASSERT_TRUE(hc.ok());
  s = &h_.Reopen();  // the upload finished (drained); the head was never written
  EXPECT_EQ(*s->LookupPrefix("default", fp_, c.keys), 2u);
  auto orphan = s->GetByContentHash("default", (*hc)[0]);
  ASSERT_TRUE(orphan.ok()) << orphan.status().ToString();
  EXPECT_TRUE(std::ranges::equal(orphan->view(), c.payloads[2]));
  // A later process may still publish it explicitly: only then does it become visible.
  ASSERT_TRUE(s->PublishChain("default", fp_, c.tip(), c.tip()).ok());
  EXPECT_EQ(*s->LookupPrefix("default", fp_, c.keys), 3u);
}

TEST_P(StoreGuarantees, G5ConcurrentIdenticalPutsConverge) {
  Store& s = h_.Open();
  const auto payload = Payload(5, 64 << 10);
  const BlockKey k = Key(5);
  std::vector<std::thread> threads;
  std::vector<ContentHash> seen(8);
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      BlockPut p{k, BlockKey{}, payload};
      auto r = s.PutBlocks("default", fp_, {&p, 1});
      if (!r.ok()) {
        failures++;
        return;
      }
      seen[t] = (*r)[0];
      if (!s.PublishChain("default", fp_, k, k).ok()) failures++;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  for (const auto& h : seen) EXPECT_EQ(h, seen[0]);
  auto got = s.GetBlocks("default", fp_, std::vector<BlockKey>{k});
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(std::ranges::equal(got->payload(0), payload));
  if (GetParam() == Planes::kDisk) {
    // One blob in L2, whether packed in the journal (64 KiB blocks are) or a file: a fresh
    // read-only view of the directory lists both.
    auto view = NewFsObjectStore(h_.dir() + "/data/l2", PosixFileSystem());
    size_t blobs = 0;
    std::string token;
    do {
      auto page = view->List("", "", token, 1000);
      ASSERT_TRUE(page.ok()) << page.status().ToString();
      for (const ObjectInfo& o : page->objects) blobs += o.key.find("/blob/") != std::string::npos;
      token = page->next_token;
    } while (!token.empty());
    EXPECT_EQ(blobs, 1u);
  }
}

TEST_P(StoreGuarantees, G6LastWriterWinsAndEveryPublishIsAVersion) {
  Store& s = h_.Open();
  const ChainId id = Key(1000);
  constexpr int kWriters = 6;
  std::vector<TestChain> chains;
  for (int w = 0; w < kWriters; ++w) chains.push_back(MakeChain(3, 512, 10 + w));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      if (!s.PutBlocks("default", fp_, chains[w].Puts()).ok()) failures++;
      if (!s.PublishChain("default", fp_, id, chains[w].tip()).ok()) failures++;
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);
  auto listed = s.ListChains("default").value();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].version, static_cast<uint64_t>(kWriters));
  int winners = 0;
  for (const auto& c : chains) winners += *s.LookupPrefix("default", fp_, c.keys) == 3;
  EXPECT_EQ(winners, 1);
  // L0 agrees with L2 after a restart.
  Store& r = h_.Reopen();
  auto after = r.ListChains("default").value();
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].tip, listed[0].tip);
  EXPECT_EQ(after[0].version, listed[0].version);
}

TEST_P(StoreGuarantees, G6CompareAndSwapHasExactlyOneWinnerAndLosersLearnTheTip) {
  Store& s = h_.Open();
  const ChainId id = Key(2000);
  auto base = MakeChain(1, 256, 50);
  ASSERT_TRUE(s.PutBlocks("default", fp_, base.Puts()).ok());
  ASSERT_EQ(*s.PublishChain("default", fp_, id, base.tip(), 0), 1u);
  constexpr int kWriters = 8;
  std::vector<BlockKey> tips(kWriters);
  std::vector<int> outcome(kWriters, -1);
  std::vector<ChainState> seen(kWriters);
  for (int w = 0; w < kWriters; ++w) {
    tips[w] = Key(3000 + w);
    std::vector<uint8_t> p = Payload(3000 + w, 256);
    BlockPut put{tips[w], base.tip(), p};
    ASSERT_TRUE(s.PutBlocks("default", fp_, {&put, 1}).ok());
  }
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      auto r = s.PublishChain("default", fp_, id, tips[w], 1, &seen[w]);
      outcome[w] = r.ok() ? 1 : (r.status().IsConflict() ? 0 : 2);
    });
  }
  for (auto& t : threads) t.join();
  int winner = -1, wins = 0;
  for (int w = 0; w < kWriters; ++w) {
    EXPECT_NE(outcome[w], 2);
    if (outcome[w] == 1) {
      winner = w;
      ++wins;
    }
  }
  ASSERT_EQ(wins, 1);
  for (int w = 0; w < kWriters; ++w) {
    if (w == winner) continue;
    EXPECT_EQ(seen[w].tip, tips[winner]);
    EXPECT_EQ(seen[w].version, 2u);
  }
  // A stale CAS is refused with the current state.
  ChainState cur;
  auto stale = s.PublishChain("default", fp_, id, base.tip(), 1, &cur);
  EXPECT_TRUE(stale.status().IsConflict());
  EXPECT_EQ(cur.version, 2u);
}

TEST_P(StoreGuarantees, G7ChainWithoutSidecarIsASidecarMissNeverWrongBytes) {
  Store& s = h_.Open();
  auto c = MakeChain(2, 100);
  PutAndPublish(s, c);
  EXPECT_TRUE(s.GetSidecar("default", fp_, c.tip()).status().IsNotFound());
  const std::vector<uint8_t> tail = Payload(77, 3000);
  ASSERT_TRUE(s.PutSidecar("default", fp_, c.tip(), tail).ok());
  auto got = s.GetSidecar("default", fp_, c.tip());
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(std::ranges::equal(got->view(), tail));
  EXPECT_TRUE(s.GetSidecar("default", fp_, c.keys[0]).status().IsNotFound());
  EXPECT_TRUE(s.GetSidecar("default", Fp(8), c.tip()).status().IsNotFound());
}

// G9 for sidecars: one copied (or restored) under another tip's key is reported as corrupt, not
// served as that tip's raw tail.
TEST(StoreSidecar, ASidecarUnderAnotherTipsKeyIsCorruptionNotThatTipsBytes) {
  ManualClock clock;
  auto l2 = NewMemObjectStore(&clock);
  auto l1 = NewMemMetaStore();
  StoreOptions o;
  o.object_store = l2.get();
  o.meta_store = l1.get();
  o.clock = &clock;
  o.log = [](LogLevel, const std::string&) {};
  auto opened = Store::Open(o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Store& s = **opened;
  const Fingerprint fp = Fp(3);
  const BlockKey tip_a = Key(1, 9), tip_b = Key(2, 9);
  const std::vector<uint8_t> tail = Payload(5, 500);
  ASSERT_TRUE(s.PutSidecar("default", fp, tip_a, tail).ok());
  auto obj = l2->Get(layout::SidecarKey("kv", "default", fp, tip_a));
  ASSERT_TRUE(obj.ok());
  ASSERT_TRUE(
      l2->Put(layout::SidecarKey("kv", "default", fp, tip_b), {obj->bytes->view()}, {}).ok());
  auto got = s.GetSidecar("default", fp, tip_b);
  EXPECT_EQ(got.status().code(), Code::kCorruption) << got.status().ToString();
  got = s.GetSidecar("default", fp, tip_a);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(std::ranges::equal(got->view(), tail));
}

TEST_P(StoreGuarantees, G8NamespacesAndFingerprintsNeverMix) {
  Store& s = h_.Open();
  auto c = MakeChain(4, 700);
  auto hashes = s.PutBlocks("tenant-a", fp_, c.Puts());
  ASSERT_TRUE(hashes.ok());
  ASSERT_TRUE(s.PublishChain("tenant-a", fp_, c.tip(), c.tip()).ok());
  EXPECT_EQ(*s.LookupPrefix("tenant-a", fp_, c.keys), 4u);
  EXPECT_EQ(*s.LookupPrefix("tenant-b", fp_, c.keys), 0u);
  EXPECT_EQ(*s.LookupPrefix("tenant-a", Fp(8), c.keys), 0u);
  EXPECT_TRUE(s.GetBlocks("tenant-b", fp_, c.keys).status().IsNotFound());
  EXPECT_TRUE(s.GetBlocks("tenant-a", Fp(8), c.keys).status().IsNotFound());
  EXPECT_TRUE(s.GetByContentHash("tenant-b", (*hashes)[0]).status().IsNotFound());
  EXPECT_TRUE(s.GetSidecar("tenant-b", fp_, c.tip()).status().IsNotFound());
  Store& r = h_.Reopen();
  EXPECT_EQ(*r.LookupPrefix("tenant-b", fp_, c.keys), 0u);
  EXPECT_EQ(*r.LookupPrefix("tenant-a", fp_, c.keys), 4u);
}

TEST_P(StoreGuarantees, G9CorruptBlobIsReportedNeverServed) {
  Store* s = &h_.Open();
  auto c = MakeChain(2, 8192);
  PutAndPublish(*s, c);
  auto hash = HashPayload(c.payloads[1]);
  const std::string key = layout::BlobKey("kv", "default", hash);
  h_.Close();
  if (GetParam() == Planes::kMemory) {
    auto obj = h_.mem_l2()->Get(key);
    ASSERT_TRUE(obj.ok());
    auto bytes = Buffer::CopyOf(obj->bytes->view());
    bytes->data()[100] ^= 0x01;
    ASSERT_TRUE(h_.mem_l2()->Put(key, {bytes->view()}, {}).ok());
  } else {
    // The blob's file, or its packed record in the journal (8 KiB blobs are packed).
    auto at = LocateStoredByte(PosixFileSystem(), h_.dir() + "/data/l2", key, 100);
    ASSERT_TRUE(at.ok()) << at.status().ToString();
    std::fstream f(at->first, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.is_open());
    f.seekg(static_cast<std::streamoff>(at->second));
    char ch;
    f.read(&ch, 1);
    ch ^= 0x01;
    f.seekp(static_cast<std::streamoff>(at->second));
    f.write(&ch, 1);
  }
  s = &h_.Open();
  auto got = s->GetBlocks("default", fp_, c.keys);
  EXPECT_EQ(got.status().code(), Code::kCorruption) << got.status().ToString();
  EXPECT_EQ(s->GetByContentHash("default", hash).status().code(), Code::kCorruption);
  EXPECT_GE(s->Stats().corruptions_detected, 2u);
  // The uncorrupted block is still served.
  auto first = s->GetBlocks("default", fp_, std::vector<BlockKey>{c.keys[0]});
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(std::ranges::equal(first->payload(0), c.payloads[0]));
}

INSTANTIATE_TEST_SUITE_P(Planes, StoreGuarantees, ::testing::ValuesIn(StoreVariants()), VariantName);

}  // namespace
}  // namespace wombatkv::testing
