// The store's durability barrier on the local-directory L2, observed through a FileSystem that
// records every content sync, name and directory sync (object/sync_order_recorder.h): a chain
// head is named only after every blob it names is durable — content synced, named, and its
// directory synced — even when concurrent publishes share blobs (one uploads, the others find
// it) and share directory syncs (group commit). Two stores share one L2 object store, as two
// engines of one process could: a blob one of them is still making durable must not be named by
// the other's head (it learns of the blob from L2, not from its own upload table).
#include <functional>
#include <thread>

#include "layout/object_keys.h"
#include "meta/meta_store.h"
#include "wombatkv/object_store.h"
#include "object/sync_order_recorder.h"
#include "store/store_test_util.h"

namespace wombatkv::testing {
namespace {

// Runs the workload below against `l2` (on `rec`), then `check(head, blobs)` for every published
// chain, with the recorded events.
void PublishConcurrently(SyncOrderRecorder& rec, ObjectStore* l2_store, const TempDir& dir,
                         const std::function<void(const std::vector<SyncEvent>&,
                                                  const std::string& head_key,
                                                  const std::vector<ContentHash>& blobs)>& check) {
  auto* l2 = l2_store;
  std::unique_ptr<MetaStore> l1[2] = {NewMemMetaStore(), NewMemMetaStore()};
  std::unique_ptr<Store> stores[2];
  for (int i = 0; i < 2; ++i) {
    StoreOptions o;
    o.data_dir = dir.path() + "/data" + std::to_string(i);
    o.fs = &rec;
    o.object_store = l2;
    o.meta_store = l1[i].get();
    o.upload_threads = 4;
    auto opened = Store::Open(o);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    stores[i] = std::move(*opened);
  }

  constexpr int kThreads = 6;
  constexpr int kChains = 5;
  constexpr int kBlocks = 3;
  const Fingerprint fp = Fp(7);
  struct Published {
    ChainId chain;
    std::vector<ContentHash> blobs;
  };
  std::vector<std::vector<Published>> published(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Store* store = stores[t % 2].get();
      for (int c = 0; c < kChains; ++c) {
        // The same payloads in every thread: blobs are shared, so most publishes rely on a blob
        // another thread is uploading (found by HEAD, or a Conflict on create).
        std::vector<std::vector<uint8_t>> payloads;
        std::vector<BlockPut> blocks(kBlocks);
        for (int b = 0; b < kBlocks; ++b) payloads.push_back(Payload(c * kBlocks + b, 256));
        for (int b = 0; b < kBlocks; ++b) {
          blocks[b].key = Key(c * kBlocks + b, 100 + t);
          blocks[b].parent = b == 0 ? BlockKey{} : blocks[b - 1].key;
          blocks[b].payload = ByteView(payloads[b].data(), payloads[b].size());
        }
        auto hashes = store->PutBlocks("ns", fp, blocks);
        ASSERT_TRUE(hashes.ok()) << hashes.status().ToString();
        const ChainId chain = blocks.back().key;
        auto v = store->PublishChain("ns", fp, chain, chain);
        ASSERT_TRUE(v.ok()) << v.status().ToString();
        published[t].push_back(Published{chain, *hashes});
      }
    });
  }
  for (auto& th : threads) th.join();
  for (auto& s : stores) s.reset();

  const auto ev = rec.events();
  size_t heads = 0;
  for (const auto& per_thread : published) {
    for (const Published& p : per_thread) {
      check(ev, layout::ChainKey("kv", "ns", fp, p.chain), p.blobs);
      heads++;
    }
  }
  EXPECT_EQ(heads, size_t{kThreads * kChains});
}

// Index of the first commit of `path` (its name created), or events.size().
size_t NamedAt(const std::vector<SyncEvent>& ev, const std::string& path) {
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev[i].kind == SyncEvent::kCommitBegin && ev[i].path == path) return i;
  }
  return ev.size();
}

TEST(StoreDurabilityOrder, AHeadIsNamedOnlyAfterEveryBlobItNamesIsDurable) {
  TempDir dir;
  SyncOrderRecorder rec(PosixFileSystem());
  const std::string root = dir.path() + "/l2/";
  auto l2 = NewFsObjectStore(root, &rec);
  PublishConcurrently(rec, l2.get(), dir, [&](const auto& ev, const std::string& head_key,
                                               const std::vector<ContentHash>& blobs) {
    const std::string head = root + head_key;
    const size_t named = NamedAt(ev, head);
    ASSERT_LT(named, ev.size()) << "head " << head << " was never named";
    for (const ContentHash& h : blobs) {
      const std::string blob = root + layout::BlobKey("kv", "ns", h);
      EXPECT_EQ(SyncOrderRecorder::DurableBefore(ev, blob, blob.substr(0, blob.rfind('/')), named),
                "")
          << "head " << head;
    }
    // The head itself was acknowledged durable too.
    EXPECT_EQ(SyncOrderRecorder::DurableBefore(ev, head, head.substr(0, head.rfind('/')),
                                               ev.size()),
              "");
  });
}

// The journaled L2 (the store's own, OpenJournaledFsObjectStore): blob uploads return before
// they are durable, and one journal sync commits a head with its blobs. A head's name may reach
// the directory only after the journal records of every blob it names — and its own — were
// synced (journal.h: then a crash keeps them all); every name of a journaled object comes after
// its record's sync. (Objects are named files here: packed ones have no name, and their order
// is the journal's, which journal_crash_test checks.)
TEST(StoreDurabilityOrder, JournaledHeadIsNamedOnlyAfterTheRecordsOfItsBlobsAreSynced) {
  TempDir dir;
  SyncOrderRecorder rec(PosixFileSystem());
  const std::string root = dir.path() + "/l2";
  FsJournalOptions options;
  options.packed_object_bytes_max = 0;
  auto l2 = OpenJournaledFsObjectStore(root, &rec, options);
  ASSERT_TRUE(l2.ok()) << l2.status().ToString();
  PublishConcurrently(rec, l2->get(), dir, [&](const auto& ev, const std::string& head_key,
                                                const std::vector<ContentHash>& blobs) {
    const size_t named = NamedAt(ev, root + "/" + head_key);
    ASSERT_LT(named, ev.size()) << "head " << head_key << " was never named";
    EXPECT_EQ(SyncOrderRecorder::JournaledBefore(ev, head_key, named), "");
    for (const ContentHash& h : blobs) {
      const std::string blob = layout::BlobKey("kv", "ns", h);
      EXPECT_EQ(SyncOrderRecorder::JournaledBefore(ev, blob, named), "") << "head " << head_key;
      EXPECT_LT(NamedAt(ev, root + "/" + blob), ev.size()) << blob << " was never named";
    }
  });
}

}  // namespace
}  // namespace wombatkv::testing
