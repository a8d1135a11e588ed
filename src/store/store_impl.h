// StoreImpl: the engine behind Store. It only composes planes; each plane is its own module.
// The .cc files are split by operation: store_open.cc (open, L1 load, refresh/reconcile),
// store_write.cc (put, publish, sidecar put), store_read.cc (lookup, get, stats).
//
// Locking (always acquired in this order, never the reverse):
//   refresh_mu_          one Refresh at a time (held across its L2 listing and reads)
//   publish_stripes_[i]  serialises head changes of chains hashing to stripe i (publish,
//                        refresh, compaction); at most one stripe is held at a time
//   index_mu_            the L0 index (shared for reads, exclusive for changes)
//   upload_mu_ → the cache's mutex;  pending_mu_, ns_mu_: leaf locks
// Only refresh_mu_ and a publish stripe are ever held across L2 I/O.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/limits.h"
#include "cache/payload_cache.h"
#include "index/radix_index.h"
#include "layout/chain_head.h"
#include "meta/meta_store.h"
#include "wombatkv/store.h"

namespace wombatkv {

class StoreImpl final : public Store {
 public:
  explicit StoreImpl(const StoreOptions& options);
  ~StoreImpl() override;

  // Everything Open does after construction: directory lock, planes, L1 load, reconcile.
  Status Init();

  Result<std::vector<ContentHash>> PutBlocks(std::string_view ns, const Fingerprint& fp,
                                             std::span<const BlockPut> blocks) override;
  Result<uint64_t> PublishChain(std::string_view ns, const Fingerprint& fp,
                                const ChainId& chain_id, const BlockKey& tip,
                                std::optional<uint64_t> expected_version,
                                ChainState* current) override;
  Result<size_t> LookupPrefix(std::string_view ns, const Fingerprint& fp,
                              std::span<const BlockKey> keys) override;
  Result<Borrow> GetBlocks(std::string_view ns, const Fingerprint& fp,
                           std::span<const BlockKey> keys) override;
  Result<BufferSlice> GetByContentHash(std::string_view ns, const ContentHash& hash) override;
  Status PutSidecar(std::string_view ns, const Fingerprint& fp, const BlockKey& tip,
                    ByteView bytes) override;
  Result<BufferSlice> GetSidecar(std::string_view ns, const Fingerprint& fp,
                                 const BlockKey& tip) override;
  Result<RefreshReport> Refresh() override;
  std::vector<ChainState> ListChains(std::string_view ns) override;
  Result<std::vector<ChainBlock>> GetChain(std::string_view ns, const Fingerprint& fp,
                                           const ChainId& chain_id) override;
  StoreStats Stats() override;
  std::string DescribeL2() const override { return l2_->Describe(); }

 private:
  // A block put in this process and not yet published.
  struct PendingKey {
    uint32_t ns_id;
    Fingerprint fp;
    BlockKey key;
    bool operator==(const PendingKey&) const = default;
  };
  struct PendingKeyHash {
    size_t operator()(const PendingKey& k) const {
      return static_cast<size_t>(k.key.Prefix64() ^ k.fp.Prefix64() ^ k.ns_id);
    }
  };
  struct PendingBlock {
    BlockKey parent;
    ContentHash hash;
    uint32_t length = 0;
  };
  // One background upload of a blob to L2. Lives in uploads_ until a publish consumes it.
  struct Upload {
    Completion done;
    std::string ns;
    BufferSlice payload;  // kept (and pinned in the cache) until the blob is durable
    // After a failed background upload, publishers retry it themselves: one at a time, and the
    // pin is released exactly once.
    std::mutex retry_mu;
    bool retried_ok = false;  // GUARDED_BY(retry_mu)
    bool superseded = false;  // GUARDED_BY(retry_mu): failed, and a newer upload replaced it
  };
  struct CacheKeyHash {
    size_t operator()(const CacheKey& k) const {
      return static_cast<size_t>(k.hash.Prefix64() ^ k.ns_id);
    }
  };

  // --- helpers (store_write.cc) ---
  void StartUpload(const CacheKey& ck, std::string ns, BufferSlice payload);
  // A failed upload that no publisher is retrying gives way to a new upload of the same bytes
  // (a later put): releases its pin and returns true. REQUIRES: upload_mu_ held.
  bool RetireFailedUpload(const CacheKey& ck, Upload& old);
  Status UploadBlob(const std::string& ns, const ContentHash& hash, ByteView payload);
  Status EnsureDurable(std::string_view ns, const CacheKey& ck);
  // The chain root→tip; `*indexed` gets how many leading entries came from L0 (published, hence
  // already durable in L2).
  Result<std::vector<ChainEntry>> CollectChain(std::string_view ns, uint32_t ns_id,
                                               const Fingerprint& fp, const BlockKey& tip,
                                               size_t* indexed);
  // After a publish: its blocks are no longer pending, their uploads are done.
  Status ForgetPublished(std::string_view ns, uint32_t ns_id, const Fingerprint& fp,
                         const std::vector<ChainEntry>& entries);
  std::optional<ChainInfo> IndexedHead(std::string_view ns, const Fingerprint& fp,
                                       const ChainId& chain_id);
  // The chain's head as L2 has it now, installed in L1 and L0 (removed there if L2 has none).
  // REQUIRES: the chain's stripe is held.
  Result<std::optional<ChainInfo>> SyncHeadFromL2(std::string_view ns, const Fingerprint& fp,
                                                  const ChainId& chain_id);
  Status StaleConflict(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id,
                       const std::optional<ChainInfo>& base, uint64_t expected_version,
                       ChainState* current);
  static uint64_t VersionOf(const std::optional<ChainInfo>& c) { return c ? c->version : 0; }
  void CompactRedundantHeads(std::string_view ns, const Fingerprint& fp,
                             const std::vector<ChainEntry>& entries);
  // Deletes a redundant head if L2 still holds exactly `expected` under it.
  Status DeleteRedundantHead(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id,
                             std::span<const ChainEntry> expected);

  // --- helpers (store_open.cc) ---
  Status OpenPlanes();
  Status LoadFromL1(bool* l1_was_empty);
  // Reads the current head of a chain from L2: nullopt if absent.
  Result<std::optional<std::pair<std::string, layout::ChainHead>>> ReadHead(
      std::string_view ns, const Fingerprint& fp, const ChainId& chain_id);
  // Installs a head in L1 and L0 (REQUIRES: the chain's stripe is held).
  Status ApplyHead(const layout::ChainHead& head, const std::string& etag,
                   const std::string& encoded);
  Status RemoveHeadLocally(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id);
  Result<std::vector<std::string>> ListNamespacesInL2();
  Status RefreshNamespace(const std::string& ns, RefreshReport* report);

  // --- shared ---
  uint32_t NamespaceId(std::string_view ns);  // creates the id on first use
  std::optional<uint32_t> FindNamespaceId(std::string_view ns);
  std::mutex& StripeFor(const ChainId& chain_id) {
    return publish_stripes_[chain_id.Prefix64() % publish_stripes_.size()];
  }
  void Log(LogLevel level, const std::string& message) const;
  // Reads a whole object of at most `bytes_max` bytes: a larger one is Corruption, found before
  // it is allocated (a hostile or broken bucket cannot exhaust memory).
  Result<ObjectData> L2Read(const std::string& key, uint64_t bytes_max);

  StoreOptions options_;
  Clock* clock_;
  FileSystem* fs_;
  std::unique_ptr<Random> owned_random_;
  Random* random_;
  std::unique_ptr<Executor> owned_executor_;
  Executor* executor_;
  std::unique_ptr<FileLock> dir_lock_;
  std::unique_ptr<ObjectStore> owned_l2_;
  ObjectStore* l2_ = nullptr;
  std::unique_ptr<MetaStore> owned_l1_;
  MetaStore* l1_ = nullptr;

  PayloadCache cache_;

  mutable std::shared_mutex index_mu_;
  RadixIndex index_;  // GUARDED_BY(index_mu_)

  std::mutex ns_mu_;
  std::unordered_map<std::string, uint32_t> ns_ids_;  // GUARDED_BY(ns_mu_); never shrinks

  std::mutex pending_mu_;
  std::unordered_map<PendingKey, PendingBlock, PendingKeyHash> pending_;  // GUARDED_BY

  std::mutex upload_mu_;
  std::unordered_map<CacheKey, std::shared_ptr<Upload>, CacheKeyHash> uploads_;  // GUARDED_BY

  std::array<std::mutex, limits::kPublishStripes> publish_stripes_;
  std::mutex refresh_mu_;

  struct Counters {
    std::atomic<uint64_t> lookups{0}, lookup_keys{0}, lookup_hit_keys{0};
    std::atomic<uint64_t> puts{0}, put_bytes{0}, publishes{0}, publish_conflicts{0};
    std::atomic<uint64_t> gets{0}, get_hits{0}, get_misses{0}, get_bytes{0};
    std::atomic<uint64_t> heads_compacted{0};
    std::atomic<uint64_t> l2_puts{0}, l2_put_bytes{0}, l2_gets{0}, l2_get_bytes{0}, l2_errors{0};
    std::atomic<uint64_t> corruptions{0};
  };
  mutable Counters counters_;
};

}  // namespace wombatkv
