// The read path: lookups (L0 only), gets (L0 → RAM cache → disk cache → L2, verified), listings,
// stats, and the disk cache's opening and fills.
#include <algorithm>
#include <tuple>

#include "base/limits.h"
#include "base/store_args.h"
#include "layout/envelope.h"
#include "layout/object_keys.h"
#include "store/store_impl.h"

namespace wombatkv {

Result<size_t> StoreImpl::LookupPrefix(std::string_view ns, const Fingerprint& fp,
                                       std::span<const BlockKey> keys) {
  WMBT_RETURN_IF_ERROR(CheckKeysArgs("lookup", ns, keys.size()));
  // A lookup is a use (docs/capacity.md): it stamps the deepest node it matched with the current
  // tick — a relaxed load here, at most one relaxed store in the index. The clock is read only on
  // every 256th lookup (gets and writes read it too), so the tick is coarse, never costly.
  if ((counters_.lookups.fetch_add(1, std::memory_order_relaxed) & 255) == 0) RefreshUseTick();
  const uint32_t tick = use_tick_.load(std::memory_order_relaxed);
  size_t matched;
  {
    std::shared_lock<std::shared_mutex> g(index_mu_);
    matched = index_.LookupPrefix(ns, fp, keys, tick);
  }
  counters_.lookup_keys.fetch_add(keys.size(), std::memory_order_relaxed);
  counters_.lookup_hit_keys.fetch_add(matched, std::memory_order_relaxed);
  return matched;
}

Result<Borrow> StoreImpl::GetBlocks(std::string_view ns, const Fingerprint& fp,
                                    std::span<const BlockKey> keys) {
  return *ReadBlocks(ns, fp, keys, /*may_block=*/true);
}

std::optional<Result<Borrow>> StoreImpl::GetBlocksIfCached(std::string_view ns,
                                                           const Fingerprint& fp,
                                                           std::span<const BlockKey> keys) {
  return ReadBlocks(ns, fp, keys, /*may_block=*/false);
}

std::optional<Result<Borrow>> StoreImpl::ReadBlocks(std::string_view ns, const Fingerprint& fp,
                                                    std::span<const BlockKey> keys,
                                                    bool may_block) {
  using R = Result<Borrow>;
  if (Status s = CheckKeysArgs("get", ns, keys.size()); !s.ok()) return R(s);
  const uint32_t tick = RefreshUseTick();  // a get is a use of the blocks it resolves
  // A pass may run on the caller's thread (inline executor): only a call that may block starts it.
  if (may_block) {
    MaybeScheduleEviction(/*urgent=*/false);
    MaybeScheduleRefresh();
  }
  std::vector<BlockMeta> metas(keys.size());
  size_t matched;
  {
    std::shared_lock<std::shared_mutex> g(index_mu_);
    matched = index_.Resolve(ns, fp, keys, metas, tick);
  }
  if (matched < keys.size()) {
    counters_.gets++;
    counters_.get_misses++;
    const std::string which =
        "block " + std::to_string(matched) + " (" + keys[matched].ToHex().substr(0, 16) + "…)";
    return R(Status::NotFound(
        matched == 0 ? which + " is not in a published chain"
                     : which + " does not follow block " + std::to_string(matched - 1) +
                           " in a published chain (a get asks for consecutive blocks)"));
  }
  if (options_.get_bytes_max > 0) {
    uint64_t total = 0;
    for (const BlockMeta& m : metas) total += m.length;
    if (total > options_.get_bytes_max) {
      return R(Status::ResourceExhausted(
          "these " + std::to_string(keys.size()) + " blocks hold " + std::to_string(total) +
          " bytes, over the " + std::to_string(options_.get_bytes_max) +
          " one get may return (StoreOptions::get_bytes_max); ask for fewer blocks per call"));
    }
  }
  // Cache hits first; every miss is then fetched from L2 in parallel on the executor, so a cold
  // restore of n blocks costs about one L2 round trip, not n.
  std::vector<Result<BufferSlice>> got(keys.size(), Status::NotFound("not fetched"));
  std::vector<size_t> misses;
  uint64_t hits = 0;
  if (std::optional<uint32_t> ns_id = FindNamespaceId(ns)) {
    for (size_t i = 0; i < keys.size(); ++i) {
      const CacheKey ck{*ns_id, metas[i].hash};
      // Buggify: a hit handled as a miss takes the fetch path (in parallel on the executor);
      // GetByContentHash's own point decides whether it skips the RAM cache too.
      if (may_block && Buggify("read.cache_miss")) {
        misses.push_back(i);
        continue;
      }
      // Hits are counted below, once this read knows it answers; a miss is counted once, by the
      // probe of GetByContentHash that fetches it.
      if (auto hit = cache_.LookupUncounted(ck)) {
        got[i] = std::move(*hit);
        ++hits;
      } else if (!may_block) {
        return std::nullopt;
      } else {
        misses.push_back(i);
      }
    }
    cache_.CountHits(hits);
  } else {
    if (!may_block) return std::nullopt;
    for (size_t i = 0; i < keys.size(); ++i) misses.push_back(i);
  }
  counters_.gets++;
  if (misses.size() == 1) {
    got[misses[0]] = GetByContentHash(ns, metas[misses[0]].hash);
  } else if (!misses.empty()) {
    std::vector<Completion> fetched(misses.size());
    for (size_t m = 0; m < misses.size(); ++m) {
      executor_->Submit([this, ns, &got, &metas, &fetched, i = misses[m], m] {
        got[i] = GetByContentHash(ns, metas[i].hash);
        fetched[m].Set(Status::Ok());
      });
    }
    // Every task is awaited before returning, whatever happens: they reference this frame.
    Status waited;
    for (const Completion& c : fetched) {
      Status s = executor_->Await(c);
      if (waited.ok() && !s.ok()) waited = s;
    }
    if (!waited.ok()) return R(waited);
  }
  std::vector<BufferSlice> slices;
  slices.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!got[i].ok()) {
      if (got[i].status().IsNotFound()) {
        counters_.get_misses++;
        return R(Status::NotFound(
            "blob " + metas[i].hash.ToHex() + " of block " + keys[i].ToHex() +
            " is missing from L2: the chain is damaged; put that block again (its bytes make "
            "every chain through it whole)"));
      }
      return R(got[i].status());
    }
    if (got[i]->size != metas[i].length) {
      counters_.corruptions++;
      return R(Status::Corruption("blob " + metas[i].hash.ToHex() + " is " +
                                  std::to_string(got[i]->size) + " bytes, its chain head says " +
                                  std::to_string(metas[i].length)));
    }
    slices.push_back(std::move(got[i]).value());
  }
  counters_.get_hits++;
  Borrow borrow(std::move(slices));
  counters_.get_bytes += borrow.total_bytes();
  return R(std::move(borrow));
}

std::optional<Result<BufferSlice>> StoreImpl::GetByContentHashIfCached(std::string_view ns,
                                                                       const ContentHash& hash) {
  if (Status s = ValidateNamespace(ns); !s.ok()) return Result<BufferSlice>(s);
  std::optional<uint32_t> ns_id = FindNamespaceId(ns);
  if (!ns_id) return std::nullopt;
  if (auto hit = cache_.LookupUncounted(CacheKey{*ns_id, hash})) {
    cache_.CountHits(1);
    return Result<BufferSlice>(std::move(*hit));
  }
  return std::nullopt;
}

Result<BufferSlice> StoreImpl::GetByContentHash(std::string_view ns, const ContentHash& hash) {
  WMBT_RETURN_IF_ERROR(ValidateNamespace(ns));
  // A namespace this process has never seen has nothing cached; its id is made only once L2
  // proves the namespace exists, so probing names cannot grow the id table.
  std::optional<uint32_t> ns_id = FindNamespaceId(ns);
  // Buggify: a hit taken as a miss, read through the disk cache or L2 and verified — not for a
  // blob RAM may hold the only copy of (G1).
  const bool skip_cache = ns_id && Buggify("read.cache_miss") && !MayBeOnlyInRam(*ns_id, hash);
  if (ns_id && !skip_cache) {
    if (auto hit = cache_.Lookup(CacheKey{*ns_id, hash})) return std::move(*hit);  // counted
  } else {
    cache_.CountMiss();  // a RAM miss all the same
  }
  // RAM miss → the disk cache (verified: a bad file is dropped and read from L2) → L2.
  if (disk_cache_) {
    if (auto hit = disk_cache_->Lookup(ns, hash)) {
      return cache_.Insert(CacheKey{ns_id ? *ns_id : NamespaceId(ns), hash},
                           payload_pool_->Compact(std::move(*hit)), /*pin=*/false);
    }
  }
  const std::string key = layout::BlobKey(options_.l2_prefix, ns, hash);
  WMBT_ASSIGN_OR_RETURN(ObjectData object,
                        L2Read(key, layout::kEnvelopeHeaderBytes + limits::kBlockBytesMax));
  auto payload =
      layout::DecodeVerified(layout::EnvelopeKind::kBlob, std::move(object.bytes), hash, key);
  if (!payload.ok()) {
    counters_.corruptions++;
    return payload.status();
  }
  // Without its header's buffer: the cache counts payload bytes (docs/capacity.md).
  BufferSlice cached = cache_.Insert(CacheKey{ns_id ? *ns_id : NamespaceId(ns), hash},
                                     payload_pool_->Compact(std::move(payload).value()),
                                     /*pin=*/false);
  FillDiskCacheLater(ns, hash, cached);  // verified above
  return cached;
}

bool StoreImpl::MayBeOnlyInRam(uint32_t ns_id, const ContentHash& hash) {
  const CacheKey ck{ns_id, hash};
  {
    std::lock_guard<std::mutex> g(pending_mu_);
    if (pending_hashes_.count(ck)) return true;
  }
  std::lock_guard<std::mutex> g(upload_mu_);
  auto it = uploads_.find(ck);
  return it != uploads_.end() && !(it->second->done.done() && it->second->done.status().ok());
}

Status StoreImpl::OpenDiskCache() {
  if (options_.disk_cache_bytes_max == 0) return Status::Ok();
  // A local-directory L2 is already on local disk: a cache in front of it would be a copy.
  const bool local_l2 = owned_l2_ != nullptr || l2_->Describe().starts_with("file://");
  if (local_l2 || options_.data_dir.empty()) {
    Log(LogLevel::kInfo, std::string("no disk cache: ") +
                             (local_l2 ? "L2 is a local directory (" + l2_->Describe() + ")"
                                       : std::string("no data directory")));
    return Status::Ok();
  }
  DiskCacheOptions o;
  o.dir = options_.data_dir + "/cache";
  o.bytes_max = options_.disk_cache_bytes_max;
  o.fs = fs_;
  o.warn = [this](const std::string& m) { Log(LogLevel::kWarn, m); };
  o.read_buffers = PoolReadBuffers();
  auto cache = DiskCache::Open(std::move(o));
  if (!cache.ok()) {
    return cache.status().WithContext(
        "opening the disk cache in " + options_.data_dir +
        "/cache (fix its permissions, or set WMBT_KV_DISK_CACHE_BYTES=0 to run without it)");
  }
  disk_cache_ = std::move(cache).value();
  const DiskCacheStats st = disk_cache_->Stats();
  Log(LogLevel::kInfo, "disk cache " + disk_cache_->dir() + ": " + std::to_string(st.files) +
                           " files, " + std::to_string(st.bytes) + " of " +
                           std::to_string(st.budget_bytes) + " bytes");
  return Status::Ok();
}

uint64_t StoreImpl::FillQueueBytesMax() const {
  // An eighth of the RAM cache: bounds how far queued fills hold it over its budget. At least
  // room for a few large blocks, at most what a slow disk needs to absorb a burst.
  return std::clamp<uint64_t>(options_.cache_bytes_max / 8, limits::kFillQueueBytesMin,
                              limits::kFillQueueBytesMax);
}

void StoreImpl::FillDiskCacheLater(std::string_view ns, const ContentHash& hash,
                                   BufferSlice payload) {
  if (!disk_cache_ || disk_cache_->Contains(ns, hash)) return;
  const CacheKey ck{NamespaceId(ns), hash};
  const uint64_t bytes = payload.view().size();
  {
    std::lock_guard<std::mutex> g(fill_mu_);
    if (fills_queued_.contains(ck)) return;
    if (fill_queued_bytes_ + bytes > FillQueueBytesMax()) {
      fills_not_queued_++;
      return;
    }
    fills_queued_.insert(ck);
    fill_queued_bytes_ += bytes;
  }
  executor_->Submit([this, ck, bytes, ns = std::string(ns), payload = std::move(payload)]() mutable {
    disk_cache_->Fill(ns, ck.hash, payload.view());
    {
      std::lock_guard<std::mutex> g(fill_mu_);
      fills_queued_.erase(ck);
      fill_queued_bytes_ -= bytes;
    }
    // While queued, this task's reference made the RAM cache treat the payload as borrowed (C2)
    // and keep it over its budget; let it go now rather than at the next insert.
    payload = BufferSlice{};
    cache_.Trim();
  });
}

Result<BufferSlice> StoreImpl::GetSidecar(std::string_view ns, const Fingerprint& fp,
                                          const BlockKey& tip) {
  WMBT_RETURN_IF_ERROR(ValidateNamespace(ns));
  const std::string key = layout::SidecarKey(options_.l2_prefix, ns, fp, tip);
  WMBT_ASSIGN_OR_RETURN(ObjectData object,
                        L2Read(key, layout::kEnvelopeHeaderBytes + limits::kSidecarBytesMax));
  auto payload = layout::DecodeSidecar(std::move(object.bytes), ns, fp, tip, key);
  if (!payload.ok()) counters_.corruptions++;
  return payload;
}

Result<std::vector<ChainState>> StoreImpl::ListChains(std::string_view ns) {
  if (!ns.empty()) WMBT_RETURN_IF_ERROR(ValidateNamespace(ns));
  std::vector<ChainState> out;
  {
    std::shared_lock<std::shared_mutex> g(index_mu_);
    auto add = [&](std::string_view cns, const Fingerprint& fp, const ChainInfo& info) {
      out.push_back(ChainState{std::string(cns), fp, info.chain_id, info.tip, info.version,
                               info.length});
    };
    if (ns.empty()) {
      index_.ForEachChain(add);
    } else {
      index_.ForEachChainIn(ns, [&](const Fingerprint& fp, const ChainInfo& info) {
        add(ns, fp, info);
      });
    }
  }
  std::sort(out.begin(), out.end(), [](const ChainState& a, const ChainState& b) {
    return std::tie(a.ns, a.fp, a.chain_id) < std::tie(b.ns, b.fp, b.chain_id);
  });
  return out;
}

Result<std::vector<ChainBlock>> StoreImpl::GetChain(std::string_view ns, const Fingerprint& fp,
                                                    const ChainId& chain_id) {
  WMBT_RETURN_IF_ERROR(ValidateNamespace(ns));
  std::vector<ChainEntry> entries;
  {
    std::shared_lock<std::shared_mutex> g(index_mu_);
    entries = index_.ChainEntries(ns, fp, chain_id);
  }
  if (entries.empty()) return Status::NotFound("chain " + chain_id.ToHex() + " is not published");
  std::vector<ChainBlock> out;
  out.reserve(entries.size());
  for (const auto& e : entries) out.push_back(ChainBlock{e.key, e.hash, e.length});
  return out;
}

Status StoreImpl::Health() { return l2_->Health(); }

Status StoreImpl::L2Reachability() {
  Status s = l2_->Reachability();
  if (s.ok()) return s;
  constexpr uint64_t kProbeEveryUs = 5'000'000;
  const uint64_t stamp = clock_->NowMicros() + 1;  // when this probe would be sent; 0 = never
  uint64_t last = last_l2_probe_us_.load(std::memory_order_relaxed);
  if ((last == 0 || stamp >= last + kProbeEveryUs) &&
      last_l2_probe_us_.compare_exchange_strong(last, stamp)) {
    // A listing of one key: its answer tells a missing bucket from a working one (a HEAD's has no
    // body), and it records itself as the reachability's latest outcome.
    executor_->Submit(
        [this] { (void)l2_->List(layout::NamespacesPrefix(options_.l2_prefix), "/", "", 1); });
  }
  return s;
}

StoreStats StoreImpl::Stats() {
  StoreStats s;
  {
    std::shared_lock<std::shared_mutex> g(index_mu_);
    s.l0_blocks = index_.block_count();
    s.l0_chains = index_.chain_count();
    s.l0_memory_bytes = index_.MemoryBytes();
  }
  const CacheStats c = cache_.Stats();
  s.cache_bytes = c.bytes;
  s.cache_entries = c.entries;
  s.cache_pinned_bytes = c.pinned_bytes;
  s.cache_budget_bytes = options_.cache_bytes_max;
  s.cache_hits = c.hits;
  s.cache_misses = c.misses;
  s.cache_evictions = c.evictions;
  {
    std::lock_guard<std::mutex> g(pending_mu_);
    s.pending_blocks = pending_.size();
  }
  const Counters& k = counters_;
  s.lookups = k.lookups;
  s.lookup_keys = k.lookup_keys;
  s.lookup_hit_keys = k.lookup_hit_keys;
  s.puts = k.puts;
  s.put_bytes = k.put_bytes;
  s.publishes = k.publishes;
  s.publish_conflicts = k.publish_conflicts;
  s.gets = k.gets;
  s.get_hits = k.get_hits;
  s.get_misses = k.get_misses;
  s.get_bytes = k.get_bytes;
  s.heads_compacted = k.heads_compacted;
  s.l2_puts = k.l2_puts;
  s.l2_put_bytes = k.l2_put_bytes;
  s.l2_blobs_compressed = k.l2_blobs_compressed;
  s.l2_compress_saved_bytes = k.l2_compress_saved_bytes;
  s.l2_gets = k.l2_gets;
  s.l2_get_bytes = k.l2_get_bytes;
  s.l2_errors = k.l2_errors;
  s.corruptions_detected = k.corruptions;
  s.l2_referenced_bytes = ledger_.AllReferencedBytes();
  s.l2_unreferenced_bytes = ledger_.AllUnreferencedBytes();
  s.evict_passes = k.evict_passes;
  s.evict_chains = k.evict_chains;
  s.evict_heads_deleted = k.evict_heads_deleted;
  s.evict_blocks = k.evict_blocks;
  s.evict_bytes = k.evict_bytes;
  s.evict_freed_bytes = k.evict_freed_bytes;
  s.evict_skipped_in_flight = k.evict_skipped_in_flight;
  s.evict_conflicts = k.evict_conflicts;
  s.gc_passes = k.gc_passes;
  s.gc_blobs_deleted = k.gc_blobs_deleted;
  s.gc_bytes_freed = k.gc_bytes_freed;
  s.gc_delete_failures = k.gc_delete_failures;
  s.refreshes = k.refreshes;
  s.refresh_failures = k.refresh_failures;
  s.pending_blocks_forgotten = k.pending_blocks_forgotten;
  s.l0_blocks_reassigned = k.l0_blocks_reassigned;
  s.gc_heads_read = k.gc_heads_read;
  s.gc_heads_unchanged = k.gc_heads_unchanged;
  s.gc_pass_micros = k.gc_pass_micros;
  s.gc_blobs_recovered = k.gc_blobs_recovered;
  s.evict_lease_waits = k.evict_lease_waits;
  s.l2_conditional_writes_emulated = l2_->HonoursConditionalWrites() ? 0 : 1;
  if (const uint64_t began = last_refresh_us_.load(std::memory_order_relaxed); began > 0) {
    const uint64_t now = clock_->NowMicros();
    s.refresh_staleness_us = now > began ? now - began : 0;
  }
  if (disk_cache_) {
    const DiskCacheStats d = disk_cache_->Stats();
    s.disk_cache_bytes = d.bytes;
    s.disk_cache_files = d.files;
    s.disk_cache_budget_bytes = d.budget_bytes;
    s.disk_cache_hits = d.hits;
    s.disk_cache_misses = d.misses;
    s.disk_cache_evictions = d.evictions;
    s.disk_cache_fills = d.fills;
    s.disk_cache_dropped = d.dropped;
    s.disk_cache_fills_skipped = d.fills_skipped + fills_not_queued_.load();
  }
  s.put_blocks_helped = k.put_blocks_helped;
  const UploadGate::Stats gate = upload_gate_.stats();
  s.uploads_parked = gate.parked;
  s.uploads_parked_bytes = gate.parked_bytes;
  const ObjectStoreCounters l2c = l2_->Counters();
  s.l2_attempts = l2c.attempts;
  s.l2_retries = l2c.retries;
  s.l2_throttled = l2c.throttled;
  s.l2_journal_syncs = l2c.journal.syncs;
  s.l2_journal_records_synced = l2c.journal.records_synced;
  s.l2_journal_sync_micros = l2c.journal.sync_micros;
  s.l2_journal_preallocations = l2c.journal.preallocations;
  s.l2_journal_preallocate_micros = l2c.journal.preallocate_micros;
  return s;
}

}  // namespace wombatkv
