// Opening the store (directory lock, planes, L1 → L0) and reconciling with L2 (refresh).
#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "base/check.h"
#include "base/limits.h"
#include "layout/envelope.h"
#include "layout/object_keys.h"
#include "store/data_dir_owner.h"
#include "store/meta_records.h"
#include "store/store_impl.h"

namespace wombatkv {

Result<std::unique_ptr<Store>> Store::Open(const StoreOptions& options) {
  auto store = std::make_unique<StoreImpl>(options);
  WMBT_RETURN_IF_ERROR(store->Init());
  return std::unique_ptr<Store>(std::move(store));
}

StoreImpl::StoreImpl(const StoreOptions& options)
    : options_(options),
      clock_(options.clock ? options.clock : RealClock()),
      fs_(options.fs ? options.fs : PosixFileSystem()),
      owned_random_(options.random ? nullptr : NewSystemRandom()),
      random_(options.random ? options.random : owned_random_.get()),
      hash_seed_(random_->Next64()),
      owned_executor_(options.executor
                          ? nullptr
                          : NewThreadPoolExecutor(options.upload_threads, "wmbt-upload")),
      executor_(options.executor ? options.executor : owned_executor_.get()),
      cache_(options.cache_bytes_max, hash_seed_ ^ 0x5bd1e9955bd1e995ull),
      index_(hash_seed_) {
  for (const auto* values : {&options.namespace_bytes_max, &options.namespace_ttl_seconds}) {
    for (const auto& [ns, v] : *values) evict_configured_ = evict_configured_ || v > 0;
  }
}

StoreImpl::~StoreImpl() {
  {
    // A save completing on another thread (the journal's leader) still uses this object.
    std::unique_lock<std::mutex> g(async_mu_);
    async_cv_.wait(g, [&] { return async_pending_ == 0; });
  }
  // No new eviction pass or automatic refresh from here on; a queued one returns at once, and a
  // refresh under way stops at its next page.
  const bool opened = !evict_stopped_.exchange(true);
  closing_ = true;
  {
    std::lock_guard<std::mutex> g(evict_wait_mu_);
    evict_wait_cv_.notify_all();
  }
  if (evict_thread_) evict_thread_->Drain();
  if (gc_thread_) gc_thread_->Drain();  // a pass under way ends early (GcOptions::stop)
  if (gc_io_) gc_io_->Drain();
  if (refresh_thread_) refresh_thread_->Drain();
  // Background uploads reference this object: let them finish before the planes go away.
  upload_gate_.ReleaseAll();
  executor_->Drain();
  // A clean close records every chain's last use, so the next open keeps the LRU order.
  if (opened) PersistUse(/*all=*/true);
}

void StoreImpl::Log(LogLevel level, const std::string& message) const {
  if (options_.log) {
    options_.log(level, message);
    return;
  }
  if (level >= LogLevel::kWarn) std::fprintf(stderr, "wombatkv: %s\n", message.c_str());
}

uint32_t StoreImpl::NamespaceId(std::string_view ns) {
  std::lock_guard<std::mutex> g(ns_mu_);
  auto it = ns_ids_.find(std::string(ns));
  if (it != ns_ids_.end()) return it->second;
  uint32_t id = static_cast<uint32_t>(ns_ids_.size());
  ns_ids_.emplace(std::string(ns), id);
  return id;
}

std::optional<uint32_t> StoreImpl::FindNamespaceId(std::string_view ns) {
  std::lock_guard<std::mutex> g(ns_mu_);
  auto it = ns_ids_.find(std::string(ns));
  if (it == ns_ids_.end()) return std::nullopt;
  return it->second;
}

Result<ObjectData> StoreImpl::L2Read(const std::string& key, uint64_t bytes_max) {
  counters_.l2_gets++;
  auto r = l2_->Get(key, 0, bytes_max + 1);
  if (!r.ok()) {
    // A local L2 checks its packed objects' bytes itself: their damage is ours to count.
    if (r.status().code() == Code::kCorruption) {
      counters_.corruptions++;
    } else if (!r.status().IsNotFound()) {
      counters_.l2_errors++;
    }
    return r.status();
  }
  if (r->object_size > bytes_max) {
    counters_.corruptions++;
    return Status::Corruption(key + " is " + std::to_string(r->object_size) +
                              " bytes, over the limit of " + std::to_string(bytes_max) +
                              " for its kind");
  }
  counters_.l2_get_bytes += r->bytes->size();
  return r;
}

Status StoreImpl::Init() {
  WMBT_RETURN_IF_ERROR(layout::ValidateL2Prefix(options_.l2_prefix));
  const int level = options_.block_compress_level;
  if (level != 0 && (level < limits::kZstdLevelMin || level > limits::kZstdLevelMax)) {
    return Status::InvalidArgument("block_compress_level " + std::to_string(level) +
                                   " is not a zstd level from " +
                                   std::to_string(limits::kZstdLevelMin) + " to " +
                                   std::to_string(limits::kZstdLevelMax) + " (or 0: off)");
  }
  WMBT_RETURN_IF_ERROR(OpenPlanes());
  bool l1_was_empty = false;
  WMBT_RETURN_IF_ERROR(LoadFromL1(&l1_was_empty));
  MaybeForgetAbandonedPuts();  // reloaded puts keep their put time
  auto report = Refresh();
  if (!report.ok()) {
    return report.status().WithContext("reconciling the index with L2 (" + l2_->Describe() +
                                       ")");
  }
  {
    gc::GcOptions gc_options;
    gc_options.l2_prefix = options_.l2_prefix;
    gc_options.grace_us = options_.gc_grace_us;
    gc_options.list_lag_us = options_.l2_list_lag_us;
    gc_options.deletes_per_pass_max = options_.gc_deletes_per_pass;
    gc_options.cache_heads = true;  // a pass every interval: re-read only changed heads
    // With the store's own threads, background passes run on a GC thread and read heads and
    // delete orphans several at a time on GC I/O threads of their own (on the upload workers they
    // would queue saves' uploads behind a pass's); with an injected executor (tests, the
    // simulator) a pass is one of its tasks and does its I/O on its own thread.
    const bool own_threads = options_.executor == nullptr && options_.clock == nullptr;
    if (own_threads && evict_configured_ && options_.background_gc) {
      gc_thread_ = NewThreadPoolExecutor(1, "wmbt-gc");
      gc_io_ = NewThreadPoolExecutor(kGcIoThreads, "wmbt-gc-io");
      gc_options.executor = gc_io_.get();
    }
    // Kept: blobs a put of ours awaits a publish for, and blobs a chain in our L0 names — its
    // head may not be listed yet (a listing that lags), and a crash between the delete and the
    // collector's re-check (R3) would leave that head naming a deleted blob.
    // Buggify: a blob kept although nothing here needs it (deleting less is always safe).
    gc_options.keep = [this](const std::string& ns, const ContentHash& hash) {
      return PendingBlob(ns, hash) || ledger_.IsReferenced(ns, hash) || Buggify("gc.keep");
    };
    // A store closing ends a pass under way early (a stop of wombatkvd waited out whole passes,
    // minutes of deletes against S3); what was deleted is still re-checked.
    gc_options.stop = [this] { return evict_stopped_.load(std::memory_order_relaxed); };
    // A shared L2 (S3, or a directory other processes publish to): the bytes a pass keeps for
    // its re-check (R3) are also written to the data directory before its deletes, so that a
    // crash between the deletes and the re-check is finished by the next open's first pass. The
    // data directory's own L2 needs none: every head in it is this process's, and `keep` spares
    // the blobs they name.
    const bool leftovers = HasGcLeftovers();
    gc_options.hold_dir = GcHoldDir();
    if (!gc_options.hold_dir.empty()) gc_options.hold_fs = fs_;
    gc_ = std::make_unique<gc::OrphanCollector>(l2_, clock_, std::move(gc_options));
    // The first background pass waits one interval: a store just opened has evicted nothing yet
    // — unless an earlier process left a pass unfinished.
    next_gc_us_ = clock_->NowMicros() + (leftovers ? 0 : options_.gc_interval_ms * 1000);
    if (leftovers && !(evict_configured_ && options_.background_gc)) {
      Log(LogLevel::kWarn, "orphan GC: " + GcHoldDir() +
                               " holds blobs an earlier pass deleted and did not re-check (the "
                               "process ended mid-pass); the next orphan-GC pass re-checks them "
                               "and puts back what a chain names, but passes run only with a "
                               "namespace budget or TTL (WMBT_KV_NAMESPACE_MAX_BYTES, "
                               "WMBT_KV_NAMESPACE_TTL): set one, or run `wombatkv audit` to find "
                               "chains that name a missing blob");
    }
  }
  std::string seat;
  if (options_.object_store && options_.eviction_lease_ms > 0 && !options_.data_dir.empty()) {
    auto marked = DataDirSeat(fs_, clock_, random_, options_.data_dir);
    if (marked.ok()) {
      seat = std::move(marked).value();
    } else {  // the lease still works, under the host's name and the directory's path alone
      Log(LogLevel::kWarn, "eviction lease: " + marked.status().ToString() +
                               "; this store's lease is named by its host and data directory "
                               "only");
    }
  }
  evict_lease_holder_ = EvictLeaseHolder(options_.data_dir, seat);
  evict_stopped_ = false;
  if (evict_configured_ && options_.eviction_interval_ms > 0 && options_.executor == nullptr &&
      options_.clock == nullptr) {
    // With its own threads and the real clock the store also has its own timer: one thread that
    // starts a pass every interval. With an injected executor or clock (tests, the simulator)
    // passes are started by operations instead.
    evict_thread_ = NewThreadPoolExecutor(1, "wmbt-evict");
    evict_thread_->Submit([this] {
      TimerLoop(options_.eviction_interval_ms, [this] {
        if (!pass_queued_.exchange(true)) BackgroundPass();  // here, not on an upload worker
      });
    });
  }
  next_refresh_us_ = clock_->NowMicros() + options_.refresh_interval_ms * 1000;
  if (options_.refresh_interval_ms > 0 && options_.executor == nullptr &&
      options_.clock == nullptr) {
    refresh_thread_ = NewThreadPoolExecutor(1, "wmbt-refresh");
    refresh_thread_->Submit(
        [this] { TimerLoop(options_.refresh_interval_ms, [this] { AutoRefresh(); }); });
  }
  if (l1_was_empty && report->chains_added > 0) {
    const size_t n = report->chains_added;
    Log(LogLevel::kWarn, "L1 was empty or rebuilt: index rebuilt from L2 (" + std::to_string(n) +
                             (n == 1 ? " chain)" : " chains)"));
  } else if (const std::string changes = ChangesText(*report); !changes.empty()) {
    Log(LogLevel::kInfo, "reconciled with L2: " + changes);
  }
  return Status::Ok();
}

Status StoreImpl::OpenPlanes() {
  const std::string& dir = options_.data_dir;
  if (dir.empty() && (!options_.object_store || !options_.meta_store)) {
    return Status::InvalidArgument(
        "no data directory: set WMBT_KV_DATA_DIR (or inject both L1 and L2 planes)");
  }
  if (!dir.empty()) {
    if (Status made = fs_->CreateDirs(dir); !made.ok()) {
      // A path that cannot exist (under /proc, through a file) is the caller's to fix, not a miss.
      if (made.IsNotFound()) {
        return Status::InvalidArgument("data directory " + dir + " cannot be created: " +
                                       made.message() + "; choose another path");
      }
      return made.WithContext("creating data directory " + dir);
    }
    // The program's name too: a data directory held by wombatkvd is reached through it.
    const std::string me = DataDirOwnerNote();
    auto lock = fs_->LockFile(dir + "/LOCK", me);
    if (lock.status().code() == Code::kPermissionDenied) {
      return Status::PermissionDenied("cannot write data directory " + dir + ": " +
                                      lock.status().message() +
                                      "; run as a user who may write it, or point "
                                      "WMBT_KV_DATA_DIR elsewhere");
    }
    if (!lock.ok() && lock.status().message().ends_with(" by " + me)) {
      return Status::FailedPrecondition(
          "data directory " + dir + " is already open in this process (" + me +
          "): close the store that holds it first (wmbt_kv_free, after releasing its borrows), "
          "or use another data directory");
    }
    if (!lock.ok() && NoteIsStale(lock.status().message())) {
      return Status::FailedPrecondition(
          "data directory " + dir + " is held by a process that wrote no owner note (" +
          lock.status().message() + ", but that process is no longer running: its note is " +
          "stale); find the holder with `fuser -v " + dir + "/LOCK` and stop it, or use another " +
          "data directory (WMBT_KV_DATA_DIR, --data-dir)");
    }
    if (!lock.ok()) {
      const bool daemon = HeldByProgram(lock.status().message(), "wombatkvd");
      return Status::FailedPrecondition(
          "data directory " + dir + " is in use: " + lock.status().message() +
          (daemon ? "; reach its store through that wombatkvd (WMBT_KV_REMOTE_PREFIX or "
                    "WMBT_KV_TCP_ADDR; wombatkv --remote-prefix or --tcp-addr), or use another "
                    "data directory (WMBT_KV_DATA_DIR, --data-dir)"
                  : "; stop that process or use another data directory (WMBT_KV_DATA_DIR, "
                    "--data-dir)"));
    }
    dir_lock_ = std::move(lock).value();
  }
  if (options_.object_store) {
    l2_ = options_.object_store;
  } else {
    // This process owns the data directory (LOCK above), so it journals its L2.
    FsJournalOptions journal;
    journal.packed_object_bytes_max =
        layout::PackedObjectBytesFor(options_.l2_packed_object_bytes_max);
    // A block of exactly the packing bound still fits (its blob is the envelope header longer).
    journal.journaled_object_bytes_max =
        std::max(journal.journaled_object_bytes_max, journal.packed_object_bytes_max);
    journal.clock = clock_;
    journal.warn = [this](const std::string& m) { Log(LogLevel::kWarn, "L2: " + m); };
    journal.failed = [this](const Status& s) {
      Log(LogLevel::kError, "L2 takes no more writes until the store is reopened: " + s.ToString() +
                                " (reads go on)");
    };
    journal.read_buffers = PoolReadBuffers();
    auto l2 = OpenJournaledFsObjectStore(dir + "/l2", fs_, journal);
    if (!l2.ok()) return l2.status().WithContext("opening L2 in " + dir);
    owned_l2_ = std::move(l2).value();
    l2_ = owned_l2_.get();
  }
  WMBT_RETURN_IF_ERROR(OpenDiskCache());
  if (options_.meta_store) {
    l1_ = options_.meta_store;
    return Status::Ok();
  }
  l1_dir_ = dir + "/l1";
  return OpenL1Dir();
}

Status StoreImpl::OpenL1Dir() {
  auto meta = OpenRocksDbMetaStore(l1_dir_);
  if (!meta.ok() && meta.status().code() == Code::kCorruption) {
    Log(LogLevel::kWarn, "L1 at " + l1_dir_ + " is corrupt (" + meta.status().message() +
                             "); deleting it and rebuilding the index from L2");
    WMBT_RETURN_IF_ERROR(fs_->DeleteTree(l1_dir_));
    meta = OpenRocksDbMetaStore(l1_dir_);
  }
  if (!meta.ok()) return meta.status();
  owned_l1_ = std::move(meta).value();
  l1_ = owned_l1_.get();
  return Status::Ok();
}

Status StoreImpl::WipeL1() {
  if (l1_dir_.empty()) return l1_->DeletePrefix("");
  l1_ = nullptr;
  owned_l1_.reset();  // closed before its files go
  WMBT_RETURN_IF_ERROR(fs_->DeleteTree(l1_dir_));
  return OpenL1Dir();
}

Status StoreImpl::LoadFromL1(bool* l1_was_empty) {
  auto format = l1_->Get(meta_records::kFormatKey);
  bool wipe = false;
  if (format.ok() && *format != meta_records::kFormatValue) {
    Log(LogLevel::kWarn, "L1 has an unknown format (" + *format + "); rebuilding from L2");
    wipe = true;
  } else if (!format.ok() && !format.status().IsNotFound()) {
    Log(LogLevel::kWarn, "L1 format marker unreadable (" + format.status().ToString() +
                             "); rebuilding from L2");
    wipe = true;
  }
  *l1_was_empty = !format.ok() || wipe;

  size_t heads = 0;
  Status bad;
  // Last uses recorded by the previous process ("U" records; a chain without one was last used
  // when it was published, as far as this process can know).
  std::map<std::tuple<std::string, Fingerprint, ChainId>, uint32_t> used;
  if (!wipe) {
    Status scan = l1_->Scan(meta_records::kUsePrefix, [&](std::string_view k, std::string_view v) {
      if (auto u = meta_records::DecodeUse(k, v); u.ok()) {
        used[{u->ns, u->fp, u->chain_id}] = u->tick;
      }
      return true;  // a bad use record only costs LRU accuracy
    });
    if (!scan.ok()) bad = scan;
  }
  if (!wipe && bad.ok()) {
    std::unique_lock<std::shared_mutex> g(index_mu_);
    MetaWriteBatch ignored;  // nothing is unreferenced while chains are only added
    Status scan = l1_->Scan(meta_records::kHeadPrefix, [&](std::string_view k, std::string_view v) {
      auto rec = meta_records::DecodeHeadRecord(k, v);
      if (!rec.ok()) {
        bad = rec.status();
        return false;
      }
      const auto& h = rec->head;
      ChainInfo info{h.chain_id, h.version, index_.EtagDigest(rec->etag), h.tip(),
                     static_cast<uint32_t>(h.entries.size())};
      uint32_t tick = TickOf(h.published_us);
      if (auto it = used.find({h.ns, h.fp, h.chain_id}); it != used.end()) {
        tick = std::max(tick, it->second);
      }
      InstallChainLocked(h.ns, h.fp, info, h.entries, tick, h.published_us, &ignored);
      ++heads;
      return true;
    });
    if (bad.ok() && !scan.ok()) bad = scan;
  }
  if (!bad.ok()) {
    Log(LogLevel::kWarn, "L1 is corrupt (" + bad.ToString() + "); rebuilding the index from L2");
    std::unique_lock<std::shared_mutex> g(index_mu_);
    std::vector<std::tuple<std::string, Fingerprint, ChainId>> loaded;
    index_.ForEachChain([&](std::string_view ns, const Fingerprint& fp, const ChainInfo& info) {
      loaded.emplace_back(std::string(ns), fp, info.chain_id);
    });
    MetaWriteBatch ignored;  // L1 is wiped below
    for (const auto& [ns, fp, id] : loaded) DropChainLocked(ns, fp, id, &ignored);
    wipe = true;
    *l1_was_empty = true;
  }
  if (wipe) WMBT_RETURN_IF_ERROR(WipeL1());
  // Blocks put but not published before the last stop stay pending: invisible to lookups (G4),
  // readable by content hash if their upload reached L2, and publishable by a later process.
  size_t pending = 0;
  Status bad_pending;
  std::vector<std::string> bad_pending_keys;  // deleted with the batch below
  Status pending_scan = l1_->Scan(meta_records::kPendingPrefix,
                                 [&](std::string_view k, std::string_view v) {
                                   auto e = meta_records::DecodePending(k, v);
                                   if (!e.ok()) {
                                     bad_pending = e.status();
                                     bad_pending_keys.emplace_back(k);
                                     return true;
                                   }
                                   const uint32_t ns_id = NamespaceId(e->ns);
                                   std::lock_guard<std::mutex> g(pending_mu_);
                                   AddPendingLocked(PendingKey{ns_id, e->fp, e->key},
                                                    PendingBlock{e->record.parent, e->record.hash,
                                                                 e->record.length,
                                                                 e->record.put_us,
                                                                 /*in_l1=*/true});
                                   ++pending;
                                   return true;
                                 });
  if (!pending_scan.ok()) {
    // Pending records are only a convenience (L2 holds the blobs; nothing published depends on
    // them): a corrupt one must not keep the store from opening. Forget them all.
    Log(LogLevel::kWarn, "L1 pending records are unreadable (" + pending_scan.ToString() +
                             "); forgetting every unpublished put");
    {
      std::lock_guard<std::mutex> g(pending_mu_);
      pending_.clear();
      pending_refs_.clear();
      pending_hashes_.clear();
    }
    pending = 0;
    WMBT_RETURN_IF_ERROR(l1_->DeletePrefix(meta_records::kPendingPrefix));
  }
  if (!bad_pending.ok() && pending_scan.ok()) {
    Log(LogLevel::kWarn, "dropping " + std::to_string(bad_pending_keys.size()) +
                             " unreadable pending record(s) from L1: " + bad_pending.ToString());
  }
  if (pending > 0) {
    Log(LogLevel::kInfo, std::to_string(pending) +
                             " blocks were put but not published before the last stop; they stay "
                             "invisible until a chain naming them is published");
  }
  MetaWriteBatch b;
  b.Put(std::string(meta_records::kFormatKey), std::string(meta_records::kFormatValue));
  if (pending_scan.ok()) {
    for (std::string& k : bad_pending_keys) b.Delete(std::move(k));
  }
  // Blobs the previous process stopped referencing and had not seen deleted ("O" records): still
  // orphans in L2 as far as anyone knows, unless a head names them again.
  Status orphan_scan = l1_->Scan(meta_records::kOrphanPrefix,
                                 [&](std::string_view k, std::string_view v) {
                                   auto o = meta_records::DecodeOrphan(k, v);
                                   if (!o.ok() ||
                                       !ledger_.UnrefLoaded(o->ns, {o->hash, o->bytes,
                                                                    o->since_us})) {
                                     b.Delete(std::string(k));
                                   }
                                   return true;
                                 });
  if (!orphan_scan.ok()) {
    // As pending records: a convenience (the collector finds orphans in L2 anyway). Dropped all,
    // so that the next open does not meet the same damage, and say so once.
    Log(LogLevel::kWarn, "L1 orphan records are unreadable (" + orphan_scan.ToString() +
                             "); dropping them: unreferenced bytes are counted from now on only");
    WMBT_RETURN_IF_ERROR(l1_->DeletePrefix(meta_records::kOrphanPrefix));
  }
  return l1_->Write(b, /*sync=*/true);
}

Result<std::optional<std::pair<std::string, layout::ChainHead>>> StoreImpl::ReadHead(
    std::string_view ns, const Fingerprint& fp, const ChainId& chain_id) {
  const std::string key = layout::ChainKey(options_.l2_prefix, ns, fp, chain_id);
  auto obj = L2Read(key, limits::kHeadObjectBytesMax);
  if (!obj.ok()) {
    if (obj.status().IsNotFound()) return std::optional<std::pair<std::string, layout::ChainHead>>();
    return obj.status();
  }
  auto head = layout::DecodeChainHead(obj->bytes->view(), key);
  if (!head.ok()) {
    counters_.corruptions++;
    return head.status();
  }
  if (head->ns != ns || head->fp != fp || head->chain_id != chain_id) {
    counters_.corruptions++;
    return Status::Corruption("chain head " + key + " describes another chain");
  }
  return std::optional<std::pair<std::string, layout::ChainHead>>(
      std::make_pair(obj->etag, std::move(head).value()));
}

Status StoreImpl::ApplyHead(const layout::ChainHead& head, const std::string& etag,
                            const std::string& encoded) {
  MetaWriteBatch b;
  WMBT_RETURN_IF_ERROR(InstallHead(head, etag, encoded, &b));
  return RecordInstalledHead(head.ns, b);
}

Status StoreImpl::RecordInstalledHead(std::string_view ns, const MetaWriteBatch& b) {
  Status written = l1_->Write(b, /*sync=*/false);
  MaybeScheduleEvictionFor(ns);
  return written;
}

Status StoreImpl::InstallHead(const layout::ChainHead& head, const std::string& etag,
                              const std::string& encoded, MetaWriteBatch* b) {
  if (etag.size() > UINT16_MAX) {  // L1 records store its length in 16 bits
    return Status::Corruption("L2 returned an ETag of " + std::to_string(etag.size()) +
                              " bytes for chain " + head.chain_id.ToHex());
  }
  // L0 first: it must reflect L2 even if the L1 write fails (L1 is repaired at the next open).
  ChainInfo info{head.chain_id, head.version, index_.EtagDigest(etag), head.tip(),
                 static_cast<uint32_t>(head.entries.size())};
  {
    std::unique_lock<std::shared_mutex> g(index_mu_);
    // A publish stamps its chain as used now (published_us is now); a head learned from L2 as
    // used when it was published.
    InstallChainLocked(head.ns, head.fp, info, head.entries, TickOf(head.published_us),
                       head.published_us, b);
  }
  b->Put(meta_records::HeadKey(head.ns, head.fp, head.chain_id),
         meta_records::EncodeHeadValue(etag, encoded));
  return Status::Ok();
}

Status StoreImpl::RemoveHeadLocally(std::string_view ns, const Fingerprint& fp,
                                    const ChainId& chain_id) {
  MetaWriteBatch b;
  {
    std::unique_lock<std::shared_mutex> g(index_mu_);
    DropChainLocked(ns, fp, chain_id, &b);
  }
  b.Delete(meta_records::HeadKey(ns, fp, chain_id));
  b.Delete(meta_records::UseKey(ns, fp, chain_id));
  return l1_->Write(b, /*sync=*/false);
}

Result<std::vector<std::string>> StoreImpl::ListNamespacesInL2() {
  std::vector<std::string> out;
  const std::string prefix = layout::NamespacesPrefix(options_.l2_prefix);
  std::string token;
  for (size_t pages = 0;; ++pages) {
    WMBT_CHECK(pages < (1u << 24));  // bounded: a listing always makes progress
    WMBT_ASSIGN_OR_RETURN(ListPage page, l2_->List(prefix, "/", token, 1000));
    for (const auto& dir : page.common_prefixes) {
      if (auto ns = layout::ParseNamespaceDir(options_.l2_prefix, dir)) out.push_back(*ns);
    }
    if (page.next_token.empty()) break;
    token = page.next_token;
  }
  return out;
}

Status StoreImpl::RefreshNamespace(const std::string& ns, RefreshReport* report) {
  using Id = std::tuple<Fingerprint, ChainId>;
  // Chains this process knows in `ns` that the last listing did not show (or showed, and were gone
  // when read).
  auto unlisted = [&](const ListedChains& listed) {
    std::vector<Id> out;
    std::shared_lock<std::shared_mutex> g(index_mu_);
    index_.ForEachChainIn(ns, [&](const Fingerprint& fp, const ChainInfo& info) {
      if (!listed.count({fp, info.chain_id})) out.emplace_back(fp, info.chain_id);
    });
    return out;
  };
  ListedChains listed;
  UnrecordedChanges unrecorded;
  const uint64_t listed_before = report->heads_listed;
  WMBT_RETURN_IF_ERROR(InstallListedHeads(ns, &listed, report, &unrecorded));
  std::vector<Id> gone = unlisted(listed);
  if (!gone.empty()) {
    // A chain usually leaves L2 because a longer one replaced it (a save compacts the head it
    // extends), and that one may have been written behind the listing, on a page already passed.
    // Removing the chain now would hide a prefix L2 names throughout, until the next refresh: list
    // once more, so that what replaced it is in L0 before it leaves.
    listed.clear();
    report->heads_listed = listed_before;  // the later listing's count stands
    WMBT_RETURN_IF_ERROR(InstallListedHeads(ns, &listed, report, &unrecorded));
    gone = unlisted(listed);
  }
  // L2 wins for what is still missing, once a HEAD under the chain's stripe confirms it is gone.
  for (const auto& [fp, chain_id] : gone) {
    std::unique_lock<std::mutex> stripe = LockChain(chain_id);
    auto head = l2_->Head(layout::ChainKey(options_.l2_prefix, ns, fp, chain_id));
    if (head.ok()) continue;  // published after the listing
    if (!head.status().IsNotFound()) return head.status();
    unrecorded.Add(RemoveHeadLocally(ns, fp, chain_id));
    ++report->chains_removed;
  }
  if (unrecorded.count > 0) {
    Log(LogLevel::kWarn,
        "refresh of namespace " + ns + ": L0 follows L2, but L1 could not record " +
            std::to_string(unrecorded.count) + " of the changes (the first: " +
            unrecorded.first.ToString() + "); the next refresh or open records them");
  }
  // Sidecars are not in L1: the accounting learns them from L2 here (docs/capacity.md).
  return ListSidecars(ns);
}

Status StoreImpl::InstallListedHeads(const std::string& ns, ListedChains* listed,
                                     RefreshReport* report, UnrecordedChanges* unrecorded) {
  const std::string prefix = layout::ChainsPrefix(options_.l2_prefix, ns);
  std::string token;
  for (size_t pages = 0;; ++pages) {
    WMBT_CHECK(pages < (1u << 24));
    if (closing_.load(std::memory_order_relaxed)) {
      return Status::Unavailable("refresh of namespace " + ns + " stopped: the store is closing");
    }
    WMBT_ASSIGN_OR_RETURN(ListPage page, l2_->List(prefix, "", token, 1000));
    std::vector<layout::ChainName> changed;
    for (const ObjectInfo& obj : page.objects) {
      auto name = layout::ParseChainKey(prefix, obj.key);
      if (!name) {
        Log(LogLevel::kWarn, "ignoring object outside the layout: " + obj.key);
        continue;
      }
      ++report->heads_listed;
      listed->emplace(name->fp, name->chain_id);
      std::optional<ChainInfo> known;
      {
        std::shared_lock<std::shared_mutex> g(index_mu_);
        known = index_.GetChain(ns, name->fp, name->chain_id);
      }
      if (!known || known->etag_digest != index_.EtagDigest(obj.etag)) changed.push_back(*name);
    }
    // Read the changed heads in parallel (a bootstrap reads every head: one round trip each would
    // make opening on S3 take minutes), then install them one by one under their stripes.
    using HeadRead = Result<std::optional<std::pair<std::string, layout::ChainHead>>>;
    // How often each stripe's chains changed in L0 before the reads (under the lock that changes
    // take, so a change not counted here is in L0 after its head was written to L2: see below).
    std::array<uint64_t, limits::kPublishStripes> changes_before;
    {
      std::shared_lock<std::shared_mutex> g(index_mu_);
      for (size_t s = 0; s < changes_before.size(); ++s) {
        changes_before[s] = head_changes_[s].load(std::memory_order_relaxed);
      }
    }
    std::vector<HeadRead> reads(changed.size(), Status::Internal("not read"));
    std::vector<Completion> read_done(changed.size());
    for (size_t i = 0; i < changed.size(); ++i) {
      executor_->Submit([this, &ns, &changed, &reads, &read_done, i] {
        reads[i] = ReadHead(ns, changed[i].fp, changed[i].chain_id);
        read_done[i].Set(Status::Ok());
      });
    }
    Status waited;
    for (const Completion& c : read_done) {  // every task is awaited: they reference this frame
      Status s = executor_->Await(c);
      if (waited.ok() && !s.ok()) waited = s;
    }
    WMBT_RETURN_IF_ERROR(waited);
    for (size_t i = 0; i < changed.size(); ++i) {
      const auto& [fp, chain_id] = changed[i];
      std::unique_lock<std::mutex> stripe = LockChain(chain_id);
      const size_t s = StripeOf(chain_id);
      std::optional<ChainInfo> now;
      bool moved = false;
      {
        std::shared_lock<std::shared_mutex> g(index_mu_);
        now = index_.GetChain(ns, fp, chain_id);
        moved = head_changes_[s].load(std::memory_order_relaxed) != changes_before[s];
      }
      HeadRead& current = reads[i];
      // This process changed a chain of the stripe since the reads began (a publish, a compacted
      // or evicted head): L0 may hold a head newer than the one read — or none, deleted since —
      // and versions cannot tell (they restart at 1 after a delete). So read again under the
      // stripe, where every change of this chain is in L0. Otherwise every change L0 has was
      // written to L2 before the read, which saw it or a newer head.
      // Buggify: read again anyway (a second read is never staler than the first).
      if (moved || Buggify("refresh.reread_head")) current = ReadHead(ns, fp, chain_id);
      if (!current.ok()) {
        if (current.status().code() != Code::kCorruption) return current.status();
        Log(LogLevel::kError, current.status().message() +
                                  " — the chain is ignored until it is published again");
        unrecorded->Add(RemoveHeadLocally(ns, fp, chain_id));
        ++changes_before[s];  // this refresh's own change
        continue;
      }
      if (!current->has_value()) {  // deleted since the listing: as if never listed
        listed->erase({fp, chain_id});
        continue;
      }
      const auto& [etag, head] = **current;
      if (now && now->etag_digest == index_.EtagDigest(etag)) continue;
      Status applied = ApplyHead(head, etag, layout::EncodeChainHead(head));
      if (applied.code() == Code::kCorruption) return applied;  // an ETag L1 cannot hold
      unrecorded->Add(applied);
      ++changes_before[s];
      ++(now ? report->chains_updated : report->chains_added);
    }
    if (page.next_token.empty()) break;
    token = page.next_token;
  }
  return Status::Ok();
}

Result<RefreshReport> StoreImpl::Refresh() {
  // What this call must load was published before it began: any refresh that starts after that
  // will do — the one this call leads, or one another caller leads meanwhile.
  std::unique_lock<std::mutex> lk(refresh_share_mu_);
  const uint64_t needed = refreshes_started_ + 1;
  for (;;) {
    if (refreshes_finished_ >= needed) return *refresh_last_;
    if (!refresh_running_) break;
    refresh_share_cv_.wait(lk);
  }
  refresh_running_ = true;
  const uint64_t mine = ++refreshes_started_;
  lk.unlock();
  // Whatever ends this refresh — a stray exception too (a server's handler edge catches them
  // and serves on) — must hand the waiters a result, or every later Refresh waits for ever.
  struct Finish {
    StoreImpl* store;
    uint64_t mine;
    Result<RefreshReport> report = Status::Internal("refresh ended by an exception");
    ~Finish() {
      std::lock_guard<std::mutex> g(store->refresh_share_mu_);
      store->refresh_running_ = false;
      store->refreshes_finished_ = mine;
      store->refresh_last_ = report;
      store->refresh_share_cv_.notify_all();
    }
  } finish{this, mine};
  finish.report = RefreshOnce();
  return finish.report;
}

Result<RefreshReport> StoreImpl::RefreshOnce() {
  std::lock_guard<std::mutex> g(refresh_mu_);
  const uint64_t began = std::max<uint64_t>(1, clock_->NowMicros());
  const RefreshingHere here(this);
  auto report = RefreshLocked();
  if (!report.ok()) {
    counters_.refresh_failures++;
    return report;
  }
  counters_.refreshes++;
  last_refresh_us_.store(began, std::memory_order_relaxed);
  return report;
}

Result<RefreshReport> StoreImpl::RefreshLocked() {
  RefreshReport report;
  WMBT_ASSIGN_OR_RETURN(std::vector<std::string> namespaces, ListNamespacesInL2());
  std::set<std::string> in_l2(namespaces.begin(), namespaces.end());
  // Namespaces only this process knows (all their heads vanished from L2) are refreshed too.
  {
    std::shared_lock<std::shared_mutex> l(index_mu_);
    for (std::string& ns : index_.Namespaces()) in_l2.insert(std::move(ns));
  }
  for (const std::string& ns : in_l2) WMBT_RETURN_IF_ERROR(RefreshNamespace(ns, &report));
  return report;
}

}  // namespace wombatkv
