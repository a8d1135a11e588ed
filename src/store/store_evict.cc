// Capacity: exact L2 accounting (the ledger kept in step with L0), use stamps, and the evictor
// that holds namespaces to their budgets and TTLs by trimming chains from the tip. The rules and
// their reasons are in docs/capacity.md; the guarantee is SPEC G10.
#include <algorithm>
#include <cstdio>
#include <queue>
#include <set>

#include "base/check.h"
#include "base/human_units.h"
#include "layout/envelope.h"
#include "layout/object_keys.h"
#include "store/meta_records.h"
#include "store/store_impl.h"

namespace wombatkv {
namespace {

constexpr uint64_t kUseEpochMicros = 1577836800ull * 1000000;  // 2020-01-01T00:00:00Z
// Writes of a trimmed head's full version back, for a put that landed meanwhile (TrimChain).
constexpr int kRestoreAttempts = 3;
constexpr uint64_t kMicrosPerTick = 1000000;                    // use stamps are seconds
// Unreferenced blobs: at most this many existence probes (HEAD) per pass, each blob probed at
// most once per interval.
constexpr size_t kOrphanProbesPerPass = 16;
constexpr uint64_t kOrphanProbeIntervalMicros = 300ull * 1000000;
// PersistUse writes one slice of the chains per pass (RadixIndex::ChainSlice), all at close.
constexpr size_t kUseSlices = RadixIndex::kChainSlices;

std::string ShortId(const BlockKey& k) { return k.ToHex().substr(0, 16) + "…"; }

std::string SecondsText(uint64_t s) {
  char buf[48];
  if (s < 120) {
    std::snprintf(buf, sizeof buf, "%llus", static_cast<unsigned long long>(s));
  } else if (s < 2 * 3600) {
    std::snprintf(buf, sizeof buf, "%llum", static_cast<unsigned long long>(s / 60));
  } else if (s < 2 * 86400) {
    std::snprintf(buf, sizeof buf, "%lluh%02llum", static_cast<unsigned long long>(s / 3600),
                  static_cast<unsigned long long>(s % 3600 / 60));
  } else {
    std::snprintf(buf, sizeof buf, "%llud%02lluh", static_cast<unsigned long long>(s / 86400),
                  static_cast<unsigned long long>(s % 86400 / 3600));
  }
  return buf;
}

}  // namespace

// What one trim of one chain is to do, planned under L0's shared lock and checked again under
// the chain's stripe before anything is written.
struct StoreImpl::TrimPlan {
  ChainInfo chain;              // the head as planned (version and ETag digest: the CAS base)
  std::vector<ChainEntry> cut;  // the tail to remove, tip first
  uint32_t cut_used = 0;        // newest use stamp in the cut: carried to the new tip (I7)
  std::string why;
  bool held = false;               // the cut stopped at a block in flight or borrowed (G10)
  uint32_t tip_used = UINT32_MAX;  // the chain's tip stamp when planned
};

// ------------------------------------------------------------------------------ use stamps

uint32_t StoreImpl::TickOf(uint64_t wall_us) {
  if (wall_us <= kUseEpochMicros) return 1;
  const uint64_t t = (wall_us - kUseEpochMicros) / kMicrosPerTick + 1;
  return t > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(t);
}

uint64_t StoreImpl::MicrosOfTick(uint32_t tick) {
  return kUseEpochMicros + uint64_t{tick > 0 ? tick - 1 : 0} * kMicrosPerTick;
}

uint32_t StoreImpl::RefreshUseTick() {
  const uint32_t t = TickOf(clock_->WallMicros());
  uint32_t cur = use_tick_.load(std::memory_order_relaxed);
  // Monotonic: a wall clock stepping back never makes new uses look older than old ones.
  while (cur < t && !use_tick_.compare_exchange_weak(cur, t, std::memory_order_relaxed)) {
  }
  return std::max(cur, t);
}

uint64_t StoreImpl::NextPublishMicros() {
  // Never before the latest use this store has seen (the start of its second): a wall clock that
  // ran ahead raised the use clock, and a publish stamped back in time would be older than every
  // use since — under a TTL, evicted by the next pass.
  const uint64_t now =
      std::max(clock_->WallMicros(), MicrosOfTick(use_tick_.load(std::memory_order_relaxed)));
  uint64_t last = last_publish_us_.load(std::memory_order_relaxed);
  uint64_t next;
  do {
    next = std::max(now, last + 1);
  } while (!last_publish_us_.compare_exchange_weak(last, next, std::memory_order_relaxed));
  return next;
}

// ------------------------------------------------------------------- L0 and the ledger in step

void StoreImpl::RecordOrphans(std::string_view ns, const UsageLedger::Changes& changes,
                              MetaWriteBatch* batch) {
  for (const auto& u : changes.unreferenced) {
    batch->Put(meta_records::OrphanKey(ns, u.hash),
               meta_records::EncodeOrphan(u.bytes, u.since_us));
  }
  for (const auto& h : changes.rereferenced) batch->Delete(meta_records::OrphanKey(ns, h));
}

uint64_t StoreImpl::InstallChainLocked(std::string_view ns, const Fingerprint& fp,
                                       const ChainInfo& info, std::span<const ChainEntry> entries,
                                       uint32_t used, uint64_t order, MetaWriteBatch* batch,
                                       bool trim) {
  if (!trim && used < cold_scan_tick_.load(std::memory_order_relaxed)) {
    cold_installs_.fetch_add(1, std::memory_order_relaxed);  // ColdSet C2
  }
  // The chain it replaces, if any: nodes of its path may keep its bytes (ReassignStaleLocked).
  const DepartingChain replaced = DepartingLocked(ns, fp, info.chain_id);
  index_.PutChain(ns, fp, info, entries, used, order);
  CountHeadChange(info.chain_id);
  UsageLedger::Changes changes;
  ledger_.ChainSet(ns, fp, info.chain_id, entries, order, clock_->WallMicros(), &changes);
  ReassignStaleLocked(ns, fp, replaced, changes);
  RecordOrphans(ns, changes, batch);
  uint64_t bytes = 0;
  for (const auto& u : changes.unreferenced) bytes += u.bytes;
  return bytes;
}

std::vector<ChainEntry> StoreImpl::OwnEntriesLocked(std::string_view ns, const Fingerprint& fp,
                                                    const ChainId& chain_id) const {
  std::vector<ChainEntry> entries = index_.ChainEntries(ns, fp, chain_id);
  for (uint32_t i = 0; i < entries.size(); ++i) {
    if (auto own = ledger_.OwnEntry(ns, fp, chain_id, i)) {
      entries[i].hash = own->meta.hash;
      entries[i].length = own->meta.length;
    }
  }
  return entries;
}

// RadixIndex I8: a node names the bytes of the newest chain through it. A node on a departed
// chain's old path may still have that chain's meta: its order (it was the newest there; a
// restart would give the node the newest remaining chain's bytes), or bytes no head of the
// namespace names any more (the ledger unreferenced them: served until a restart, and gone from
// L2 once orphan GC runs — bug 17, docs/testing.md). Such nodes take the newest remaining
// chain's meta.
StoreImpl::DepartingChain StoreImpl::DepartingLocked(std::string_view ns, const Fingerprint& fp,
                                                     const ChainId& chain_id) const {
  DepartingChain d;
  for (const ChainEntry& e : index_.ChainEntries(ns, fp, chain_id)) d.path.push_back(e.key);
  d.order = ledger_.ChainOrder(ns, fp, chain_id).value_or(0);
  return d;
}

void StoreImpl::ReassignStaleLocked(std::string_view ns, const Fingerprint& fp,
                                    const DepartingChain& departed,
                                    const UsageLedger::Changes& changes) {
  if (departed.path.empty()) return;
  auto stale = [&](const ContentHash& h) {
    return std::ranges::any_of(changes.unreferenced,
                               [&](const UsageLedger::UnrefBlob& u) { return u.hash == h; });
  };
  const size_t changed = index_.ReassignStaleMeta(
      ns, fp, departed.path, departed.order, stale,
      [&](const ChainId& id, uint32_t position) { return ledger_.OwnEntry(ns, fp, id, position); });
  counters_.l0_blocks_reassigned.fetch_add(changed, std::memory_order_relaxed);
}

uint64_t StoreImpl::ColdGeneration() const {
  std::shared_lock<std::shared_mutex> g(index_mu_);
  return index_.tips_exposed() + cold_installs_.load(std::memory_order_relaxed);
}

uint64_t StoreImpl::DropChainLocked(std::string_view ns, const Fingerprint& fp,
                                    const ChainId& chain_id, MetaWriteBatch* batch) {
  CountHeadChange(chain_id);  // also when absent: a refresh counts its own calls
  const DepartingChain departing = DepartingLocked(ns, fp, chain_id);
  if (!index_.RemoveChain(ns, fp, chain_id)) return 0;
  UsageLedger::Changes changes;
  ledger_.ChainRemoved(ns, fp, chain_id, clock_->WallMicros(), &changes);
  ReassignStaleLocked(ns, fp, departing, changes);
  RecordOrphans(ns, changes, batch);
  uint64_t bytes = 0;
  for (const auto& u : changes.unreferenced) bytes += u.bytes;
  return bytes;
}

// ---------------------------------------------------------------- pending puts (G10)

void StoreImpl::AddPendingLocked(const PendingKey& key, const PendingBlock& block) {
  auto [it, inserted] = pending_.try_emplace(key, block);
  if (!inserted) {
    const bool in_l1 = it->second.in_l1 || block.in_l1;  // a record written earlier stays
    ReleasePendingRefsLocked(key, it->second);
    // The replaced put's upload is nobody's now (a publish that collected it, holding a claim,
    // consumes it itself): its slot goes at the next check, unless a put names the bytes again.
    const CacheKey old_ck{key.ns_id, it->second.hash};
    if (it->second.hash != block.hash && !pending_hashes_.count(old_ck) &&
        !publishing_.count(key)) {
      replaced_uploads_.push_back(old_ck);
    }
    it->second = block;
    it->second.in_l1 = in_l1;
  }
  auto hold = [&](const BlockKey& k) {
    PendingRef& r = pending_refs_[PendingKey{key.ns_id, key.fp, k}];
    ++r.count;
    r.newest_put_us = std::max(r.newest_put_us, block.put_us);
  };
  hold(key.key);
  if (!block.parent.IsZero()) hold(block.parent);
  ++pending_hashes_[CacheKey{key.ns_id, block.hash}];
}

void StoreImpl::ReleasePendingRefsLocked(const PendingKey& key, const PendingBlock& block) {
  auto release = [&](const BlockKey& k) {
    auto it = pending_refs_.find(PendingKey{key.ns_id, key.fp, k});
    WMBT_CHECK(it != pending_refs_.end() && it->second.count > 0);
    // The newest put time stays while others still hold the key: at worst the key is protected
    // a little longer, never less.
    if (--it->second.count == 0) pending_refs_.erase(it);
  };
  release(key.key);
  if (!block.parent.IsZero()) release(block.parent);
  auto h = pending_hashes_.find(CacheKey{key.ns_id, block.hash});
  WMBT_CHECK(h != pending_hashes_.end() && h->second > 0);
  if (--h->second == 0) pending_hashes_.erase(h);
}

void StoreImpl::ErasePendingLocked(const PendingKey& key) {
  auto it = pending_.find(key);
  if (it == pending_.end()) return;
  ReleasePendingRefsLocked(key, it->second);
  pending_.erase(it);
}

bool StoreImpl::InFlightLocked(uint32_t ns_id, const Fingerprint& fp, const BlockKey& key,
                               uint64_t now_us) const {
  auto it = pending_refs_.find(PendingKey{ns_id, fp, key});
  if (it == pending_refs_.end()) return false;
  // A wall clock that stepped back (now before the put) counts as within the grace.
  return now_us < it->second.newest_put_us + options_.publish_grace_seconds * 1000000;
}

// ---------------------------------------------------------------------------- accounting

uint64_t StoreImpl::ReferencedBytesLocked(std::string_view ns) const {
  const UsageLedger::Totals t = ledger_.NamespaceTotals(
      ns, [&](const Fingerprint& fp, const BlockKey& tip) { return index_.HasKey(ns, fp, tip); });
  return t.blob_bytes + t.head_bytes + t.sidecar_bytes;
}

Status StoreImpl::ListSidecars(const std::string& ns) {
  const std::string prefix = layout::NamespaceRoot(options_.l2_prefix, ns) + "sidecar/";
  const uint64_t token = ledger_.BeginSidecarListing();
  std::vector<UsageLedger::ListedSidecar> listed;
  std::string next;
  for (size_t pages = 0;; ++pages) {
    WMBT_CHECK(pages < (1u << 24));
    WMBT_ASSIGN_OR_RETURN(ListPage page, l2_->List(prefix, "", next, limits::kListPageKeysMax));
    for (const ObjectInfo& obj : page.objects) {
      // Same shape as a chain key: "<24-hex fingerprint>/<64-hex tip>".
      auto name = layout::ParseChainKey(prefix, obj.key);
      if (!name) continue;  // outside the layout: the audit reports it
      listed.push_back({name->fp, name->chain_id, obj.size});
    }
    if (page.next_token.empty()) break;
    next = page.next_token;
  }
  ledger_.ReplaceSidecars(ns, token, listed);
  return Status::Ok();
}

std::vector<NamespaceUsage> StoreImpl::Usage(std::string_view only, bool by_fingerprint) {
  std::vector<std::string> names;
  if (only.empty()) {
    names = ledger_.Namespaces();
  } else if (ValidateNamespace(only).ok()) {
    names.emplace_back(only);
  }
  std::vector<NamespaceUsage> out;
  for (const std::string& ns : names) {
    NamespaceUsage u;
    u.ns = ns;
    u.budget_bytes = NamespaceSetting(options_.namespace_bytes_max, ns);
    u.ttl_seconds = NamespaceSetting(options_.namespace_ttl_seconds, ns);
    if (disk_cache_) {
      const DiskCacheUsage d = disk_cache_->NamespaceUsage(ns);
      u.disk_cache_files = d.files;
      u.disk_cache_bytes = d.bytes;
    }
    UsageLedger::Totals t;
    std::map<Fingerprint, UsageLedger::Totals> per_fp;
    {
      std::shared_lock<std::shared_mutex> g(index_mu_);
      auto indexed = [&](const Fingerprint& fp, const BlockKey& tip) {
        return index_.HasKey(ns, fp, tip);
      };
      t = ledger_.NamespaceTotals(ns, indexed);
      if (by_fingerprint) per_fp = ledger_.FingerprintTotals(ns, indexed);
    }
    u.chains = t.chains;
    u.head_bytes = t.head_bytes;
    u.blobs = t.blobs;
    u.blob_bytes = t.blob_bytes;
    u.sidecars = t.sidecars;
    u.sidecar_bytes = t.sidecar_bytes;
    u.stray_sidecars = t.stray_sidecars;
    u.stray_sidecar_bytes = t.stray_sidecar_bytes;
    u.unreferenced_blobs = t.unreferenced_blobs;
    u.unreferenced_bytes = t.unreferenced_bytes;
    if (only.empty() && u.chains == 0 && u.sidecars + u.stray_sidecars == 0 &&
        u.unreferenced_blobs == 0) {
      continue;  // a namespace this store once knew and that holds nothing now
    }
    for (const auto& [fp, ft] : per_fp) {
      FingerprintUsage f;
      f.fp = fp;
      f.chains = ft.chains;
      f.head_bytes = ft.head_bytes;
      f.blobs = ft.blobs;
      f.blob_bytes = ft.blob_bytes;
      f.sidecars = ft.sidecars;
      f.sidecar_bytes = ft.sidecar_bytes;
      f.stray_sidecars = ft.stray_sidecars;
      f.stray_sidecar_bytes = ft.stray_sidecar_bytes;
      u.fingerprints.push_back(f);
    }
    out.push_back(std::move(u));
  }
  return out;
}

// ---------------------------------------------------------------------------- scheduling

void StoreImpl::MaybeScheduleEviction(bool urgent) {
  if (!evict_configured_ || options_.eviction_interval_ms == 0 ||
      evict_stopped_.load(std::memory_order_relaxed)) {
    return;
  }
  const uint64_t now = clock_->NowMicros();
  // A pass that could not get under a limit is not retried on every publish, only per interval.
  if (urgent && last_pass_stuck_.load(std::memory_order_relaxed)) urgent = false;
  // Buggify: a pass before its interval (Evict() may come at any moment anyway).
  if (!urgent && now < next_pass_us_.load(std::memory_order_relaxed) && !Buggify("evict.early")) {
    return;
  }
  if (pass_queued_.exchange(true)) return;
  next_pass_us_.store(now + options_.eviction_interval_ms * 1000, std::memory_order_relaxed);
  executor_->Submit([this] { BackgroundPass(); });
}

void StoreImpl::MaybeScheduleEvictionFor(std::string_view ns) {
  if (!evict_configured_ || evict_stopped_.load(std::memory_order_relaxed)) return;
  const uint64_t budget = NamespaceSetting(options_.namespace_bytes_max, ns);
  MaybeScheduleEviction(budget > 0 && ledger_.QuickBytes(ns) > budget);
}

void StoreImpl::BackgroundPass() {
  if (evict_stopped_.load()) {
    pass_queued_ = false;
    return;
  }
  RefreshLeasedNamespaces();
  const EvictionReport r = EvictPass();
  // Eviction only stops referencing blobs; GC deletes them, on a thread of its own.
  MaybeScheduleGc();
  next_pass_us_.store(clock_->NowMicros() + options_.eviction_interval_ms * 1000,
                      std::memory_order_relaxed);
  pass_queued_ = false;
  // More to do and progress made: go on at once (each pass is bounded, so others get turns).
  if (r.work_left && r.chains > 0) MaybeScheduleEviction(/*urgent=*/true);
}

void StoreImpl::TimerLoop(uint64_t interval_ms, const std::function<void()>& work) {
  std::unique_lock<std::mutex> lock(evict_wait_mu_);
  while (!evict_stopped_.load()) {
    clock_->WaitFor(evict_wait_cv_, lock, interval_ms * 1000);
    if (evict_stopped_.load()) break;
    lock.unlock();
    work();
    lock.lock();
  }
}

Result<EvictionReport> StoreImpl::Evict() {
  RefreshLeasedNamespaces();
  return EvictPass();
}

// ---------------------------------------------------------------------------- the pass

EvictionReport StoreImpl::EvictPass() {
  std::lock_guard<std::mutex> pass(evict_mu_);
  EvictionReport report;
  counters_.evict_passes++;
  const uint32_t tick = RefreshUseTick();
  const uint64_t now_us = clock_->WallMicros();
  ProbeUnreferenced(now_us, &report);
  PersistUse(/*all=*/false);
  EvictBudget work{std::max<size_t>(1, options_.eviction_heads_per_pass),
                   std::max<size_t>(1, options_.eviction_blocks_per_pass)};
  bool stuck = false;
  for (const std::string& ns : ledger_.Namespaces()) {
    if (work.heads_left == 0 || work.blocks_left == 0) {
      report.work_left = true;
      break;
    }
    const uint64_t chains_before = report.chains;
    const bool over = EvictNamespace(ns, tick, now_us, &work, &report);
    // Still over the budget yet nothing evicted: what is left is in flight or borrowed. Publishes
    // then stop starting passes at once; the interval's pass tries again.
    if (over && report.chains == chains_before) stuck = true;
  }
  last_pass_stuck_ = stuck;
  if (report.chains > 0 || report.orphans_gone > 0) {
    Log(LogLevel::kInfo,
        "eviction pass: " + std::to_string(report.chains) + " chains trimmed (" +
            std::to_string(report.heads_deleted) + " heads deleted), " +
            std::to_string(report.blocks) + " blocks, " + HumanBytes(report.bytes) +
            " no longer referenced, " + HumanBytes(report.freed_bytes) + " deleted from L2" +
            (report.orphans_gone ? " (" + std::to_string(report.orphans_gone) +
                                       " orphans collected by GC since unreferenced)"
                                 : std::string()) +
            (report.skipped_in_flight
                 ? "; " + std::to_string(report.skipped_in_flight) + " trims stopped at a block in "
                                                                        "flight or borrowed"
                 : std::string()) +
            (report.work_left ? "; more next pass" : ""));
  }
  return report;
}

bool StoreImpl::HoldsEvictLease(const std::string& ns) {
  if (!options_.object_store || options_.eviction_lease_ms == 0) return true;  // our own L2
  auto& lease = evict_leases_[ns];
  if (!lease) {
    lease = std::make_unique<EvictLease>(l2_, clock_, layout::EvictLeaseKey(options_.l2_prefix, ns),
                                         evict_lease_holder_, options_.eviction_lease_ms * 1000);
  }
  const std::string before = lease->other_holder();
  const bool held = lease->Hold();
  if (!held && !lease->other_holder().empty() && lease->other_holder() != before) {
    Log(LogLevel::kInfo, "eviction in namespace " + ns + " is left to " + lease->other_holder() +
                             ", which holds its eviction lease");
  }
  return held;
}

bool StoreImpl::EvictLeaseRunning(const std::string& ns) const {
  auto it = evict_leases_.find(ns);
  return it == evict_leases_.end() || it->second->Running();  // no lease: our own L2, or off
}

bool StoreImpl::EvictNamespace(const std::string& ns, uint32_t tick, uint64_t now_us,
                               EvictBudget* work, EvictionReport* report) {
  const uint64_t budget = NamespaceSetting(options_.namespace_bytes_max, ns);
  const uint64_t ttl = NamespaceSetting(options_.namespace_ttl_seconds, ns);
  if (budget == 0 && ttl == 0) return false;
  // Stamps below the cutoff are older than the TTL (0: no TTL, nothing is below it).
  const uint32_t cutoff = (ttl == 0 || ttl >= tick) ? 0 : static_cast<uint32_t>(tick - ttl);
  auto excess_now = [&]() -> uint64_t {
    if (budget == 0) return 0;
    std::shared_lock<std::shared_mutex> g(index_mu_);
    const uint64_t used = ReferencedBytesLocked(ns);
    return used > budget ? used - budget : 0;
  };
  uint64_t excess = excess_now();
  if (excess == 0 && cutoff == 0) return false;
  // Another host holds the namespace's eviction lease: it evicts, this store only accounts (and
  // reports the namespace over, so that publishes do not hurry passes that would wait too).
  if (!HoldsEvictLease(ns)) {
    counters_.evict_lease_waits++;
    return excess > 0;
  }
  const uint32_t ns_id = NamespaceId(ns);

  // Candidates: chains whose tip is a tip of the tree (I5), least recently used first. Popping
  // one trims its tail while the tail is no newer than the next candidate (and still needed):
  // LRU order at block granularity, one head write per run of cold blocks. A pass can rewrite
  // only heads_left heads; the coldest candidates a scan found are kept for the next passes
  // while they still answer for the namespace (cold_set.h, C1-C4), so a pass visits every chain
  // only when they do not.
  ColdSet& cold = cold_sets_[ns];
  // Raised before the generation is read: an install after it, stamped older, changes it.
  if (cold_scan_tick_.load(std::memory_order_relaxed) < tick) cold_scan_tick_ = tick;
  const ColdSet::Scan scan{ColdGeneration(), tick, excess > 0, cutoff};
  bool scanned = false;
  auto scan_all = [&] {
    std::vector<EvictCandidate>& found = evict_candidates_;  // reused scratch
    found.clear();
    {
      std::shared_lock<std::shared_mutex> g(index_mu_);
      index_.ForEachTrimmableChain(ns, [&](const Fingerprint& fp, const ChainId& id,
                                           uint32_t used) {
        if (excess > 0 || used < cutoff) found.push_back(EvictCandidate{used, fp, id});
      });
    }
    cold.Fill(found, std::max(4 * work->heads_left + 16, found.size() / 8), scan);
    scanned = true;
  };
  if (!cold.Answers(scan)) scan_all();
  std::set<ChainId> replanned;  // each chain is re-read and re-planned at most once per pass
  // Candidates stopped by a block in flight or borrowed: tried again by the next pass.
  std::vector<EvictCandidate> retry;
  auto give_back = [&] {
    for (const EvictCandidate& c : retry) cold.Push(c);
  };
  for (;;) {
    while (!cold.Empty()) {
      // The lease may run out while the pass writes heads (each can take retries' time): the
      // next pass renews it first.
      if (work->heads_left == 0 || work->blocks_left == 0 || !EvictLeaseRunning(ns)) {
        report->work_left = true;
        give_back();
        return excess > 0;
      }
      const EvictCandidate c = cold.Top();
      if (excess == 0 && c.used >= cutoff) break;  // ordered: nothing older is left
      cold.Pop();
      const uint32_t next_used = cold.NextUsed();

      std::optional<TrimPlan> planned = PlanTrim(
          ns, ns_id, c, TrimBounds{next_used, cutoff, excess, work->blocks_left}, now_us);
      if (!planned) continue;  // the chain is gone
      TrimPlan& plan = *planned;
      if (plan.held) {
        report->skipped_in_flight++;
        counters_.evict_skipped_in_flight++;
      }
      if (plan.cut.empty()) {
        if (plan.held) {
          retry.push_back(c);  // back in the set when this pass is over: may be free by then
        } else if (plan.tip_used < cold.beyond()) {
          cold.Push(EvictCandidate{plan.tip_used, c.fp, c.chain_id});  // newer now, still within
        }
        continue;
      }
      if (cutoff != 0 && plan.cut_used < cutoff) {
        plan.why = "unused for " + SecondsText(tick - plan.cut_used) + ", over the TTL of " +
                   SecondsText(ttl);
      } else {
        plan.why = "namespace over its budget of " + HumanBytes(budget) + " by " +
                   HumanBytes(excess) +
                   " (least recently used: " + SecondsText(tick - std::min(tick, plan.cut_used)) +
                   " ago)";
      }
      const uint64_t unreferenced_before = report->bytes;
      const Trimmed outcome = TrimChain(ns, ns_id, c.fp, plan, now_us, report);
      work->heads_left--;
      if (outcome == Trimmed::kConflict) {
        // The head changed under us and TrimChain installed what L2 has. Another host's evictor
        // may have trimmed it (hosts sharing a namespace see the same least recently used chains
        // first): count again, so this pass evicts only what is still over the budget, not that
        // host's share a second time.
        excess = excess_now();
      }
      if (outcome == Trimmed::kConflict && replanned.insert(c.chain_id).second) {
        // Plan it again from its new state.
        std::shared_lock<std::shared_mutex> g(index_mu_);
        auto tail = index_.TrimmableTail(ns, c.fp, c.chain_id, 1);
        if (!tail.empty()) cold.Push(EvictCandidate{tail[0].used, c.fp, c.chain_id});
        continue;
      }
      if (outcome != Trimmed::kDone) continue;
      work->blocks_left -= std::min(work->blocks_left, plan.cut.size());
      // What the trim stopped referencing comes off the excess. Counting the namespace again
      // walks its sidecars (a sidecar counts while its tip is indexed): only when the excess
      // would reach zero, to see what publishes added meanwhile — not after every trim.
      const uint64_t trimmed = report->bytes - unreferenced_before;
      excess = trimmed < excess ? excess - trimmed : excess_now();
      if (!plan.held && plan.cut.size() < plan.chain.length) {
        std::shared_lock<std::shared_mutex> g(index_mu_);
        auto tail = index_.TrimmableTail(ns, c.fp, c.chain_id, 1);
        if (!tail.empty()) cold.Push(EvictCandidate{tail[0].used, c.fp, c.chain_id});
      }
    }
    // The set ran out with work left: chains it does not hold (left out, used or published since
    // its scan) may still be candidates. One fresh scan per pass looks for them.
    if (scanned || !cold.Empty() || (excess == 0 && cutoff == 0)) break;
    scan_all();
  }
  // Work left: candidates this pass did not reach (held ones are tried again, but do not count).
  if (excess > 0) report->work_left = report->work_left || !cold.Empty() || cold.left_out();
  give_back();
  return excess > 0;
}

std::optional<StoreImpl::TrimPlan> StoreImpl::PlanTrim(const std::string& ns, uint32_t ns_id,
                                                       const EvictCandidate& c,
                                                       const TrimBounds& bounds, uint64_t now_us) {
  TrimPlan plan;
  std::shared_lock<std::shared_mutex> g(index_mu_);
  auto info = index_.GetChain(ns, c.fp, c.chain_id);
  if (!info) return std::nullopt;
  plan.chain = *info;
  const auto tail = index_.TrimmableTail(ns, c.fp, c.chain_id, bounds.blocks_max);
  if (!tail.empty()) plan.tip_used = tail[0].used;
  std::vector<bool> in_flight(tail.size());
  {
    std::lock_guard<std::mutex> p(pending_mu_);
    const bool publishing = publishing_chains_.contains(c.chain_id);  // G10: all of it held
    for (size_t i = 0; i < tail.size(); ++i) {
      in_flight[i] = publishing || InFlightLocked(ns_id, c.fp, tail[i].entry.key, now_us);
    }
  }
  uint32_t run = 0;  // I7: a tail's use is the newest stamp from the tip down to it
  uint64_t freed = 0;
  for (size_t i = 0; i < tail.size(); ++i) {
    run = std::max(run, tail[i].used);
    const bool old = run < bounds.cutoff;
    if (!old && !(bounds.excess > freed && run <= bounds.next_used)) break;
    if (in_flight[i] || cache_.InUse(CacheKey{ns_id, tail[i].entry.hash})) {
      plan.held = true;
      break;
    }
    plan.cut.push_back(tail[i].entry);
    plan.cut_used = run;
    freed += ledger_.BytesFreedIfDropped(ns, tail[i].entry.hash, 1) +
             (layout::ChainHeadBytes(0, 1) - layout::ChainHeadBytes(0, 0));
  }
  return plan;
}

StoreImpl::Trimmed StoreImpl::TrimChain(const std::string& ns, uint32_t ns_id,
                                        const Fingerprint& fp, const TrimPlan& plan,
                                        uint64_t now_us, EvictionReport* report) {
  const ChainId& chain_id = plan.chain.chain_id;
  const std::string key = layout::ChainKey(options_.l2_prefix, ns, fp, chain_id);
  std::unique_lock<std::mutex> stripe = LockChain(chain_id);
  auto conflict = [&](const std::string& what) {
    report->conflicts++;
    counters_.evict_conflicts++;
    Log(LogLevel::kDebug, "eviction of chain " + ShortId(chain_id) + ": " + what + "; re-planned");
    return Trimmed::kConflict;
  };
  auto in_flight = [&] {
    std::lock_guard<std::mutex> p(pending_mu_);
    if (publishing_chains_.contains(chain_id)) return true;
    for (const ChainEntry& e : plan.cut) {
      if (InFlightLocked(ns_id, fp, e.key, now_us)) return true;
    }
    return false;
  };

  // Under the stripe no publish of this chain runs: check the plan still describes it.
  std::vector<ChainEntry> entries;
  uint32_t chain_used = 0;
  {
    std::shared_lock<std::shared_mutex> g(index_mu_);
    auto now = index_.GetChain(ns, fp, chain_id);
    if (!now || now->version != plan.chain.version || now->etag_digest != plan.chain.etag_digest) {
      return conflict("its head changed since the pass planned");
    }
    entries = index_.ChainEntries(ns, fp, chain_id);
    chain_used = index_.ChainUsed(ns, fp, chain_id).value_or(0);
  }
  if (plan.cut.size() > entries.size() ||
      !std::equal(plan.cut.begin(), plan.cut.end(), entries.rbegin())) {
    return conflict("its tail changed since the pass planned");
  }
  // G10: a put that arrived since the plan keeps the chain it extends.
  if (in_flight()) {
    report->skipped_in_flight++;
    counters_.evict_skipped_in_flight++;
    return Trimmed::kInFlight;
  }

  const size_t keep = entries.size() - plan.cut.size();
  layout::ChainHead head;
  head.ns = ns;
  head.fp = fp;
  head.chain_id = chain_id;
  head.version = plan.chain.version + 1;
  // A trimmed head carries its chain's last use as its time, so a restart that finds no "U"
  // record still orders it by use (docs/capacity.md) — or its publish time if later (a use
  // stamp is whole seconds): never older than the head it replaces, whose bytes it keeps as
  // the newest publish where they were (RadixIndex I8; an older time would leave its nodes to
  // be reassigned, a walk of the whole scope).
  head.published_us = MicrosOfTick(chain_used);
  // Buggify: the conditional write answered Conflict before it was sent, as when another host
  // replaced the head an instant earlier: nothing was written, and the chain is re-read.
  if (Buggify("evict.conflict")) {
    (void)SyncHeadFromL2(ns, fp, chain_id);
    return conflict("buggify: its conditional write was answered Conflict");
  }
  // The base of the conditional write: the head planned against, by the ETag L2 gives for it
  // (L0 keeps a digest only). The ObjectStore has no conditional delete either, so a trim to
  // nothing deletes only after this read. (Another host replacing the head between the read and
  // the delete loses that head, as with compaction — docs/capacity.md.)
  // Read whole: the trimmed head keeps the blobs this head names. L0 keeps one hash per block,
  // the newest publish's, and another chain may have published a block of this one with other
  // bytes since (bug 13, docs/testing.md).
  auto base = ReadHead(ns, fp, chain_id);
  if (!base.ok()) return Trimmed::kFailed;
  if (!*base || index_.EtagDigest((*base)->first) != plan.chain.etag_digest) {
    (void)SyncHeadFromL2(ns, fp, chain_id);
    return conflict("its head changed in L2");
  }
  std::vector<ChainEntry>& named = (*base)->second.entries;
  if (!std::ranges::equal(named, entries, [](const ChainEntry& a, const ChainEntry& b) {
        return a.key == b.key;
      })) {
    (void)SyncHeadFromL2(ns, fp, chain_id);
    return conflict("its head names other blocks than L0 has");
  }
  const std::string base_etag = (*base)->first;
  head.published_us = std::max(head.published_us, (*base)->second.published_us);
  entries = std::move(named);
  head.entries.assign(entries.begin(), entries.begin() + static_cast<ptrdiff_t>(keep));
  std::string encoded;
  std::string etag;
  if (keep > 0) {
    encoded = layout::EncodeChainHead(head);
    counters_.l2_puts++;
    auto put = l2_->Put(key, {AsBytes(encoded)}, PutOptions{PutMode::kIfMatch, base_etag});
    if (!put.ok()) {
      if (!put.status().IsConflict()) {
        counters_.l2_errors++;
        Log(LogLevel::kWarn, "eviction could not rewrite " + key + ": " + put.status().ToString());
        // The write may have been applied with its answer lost: learn what L2 holds, so L0 does
        // not keep serving a head L2 no longer has (if L2 cannot say, the next refresh does).
        (void)SyncHeadFromL2(ns, fp, chain_id);
        return Trimmed::kFailed;
      }
      (void)SyncHeadFromL2(ns, fp, chain_id);  // learn the new head; the next plan starts there
      return conflict("another writer replaced its head");
    }
    counters_.l2_put_bytes += encoded.size();
    etag = *put;
  } else {
    if (Status d = l2_->Delete(key); !d.ok()) {
      counters_.l2_errors++;
      Log(LogLevel::kWarn, "eviction could not delete " + key + ": " + d.ToString());
      (void)SyncHeadFromL2(ns, fp, chain_id);  // as above: the delete may have happened
      return Trimmed::kFailed;
    }
  }

  // Committed in L2. Now L0, atomically with a last G10 check: a put that arrived while the head
  // was being written keeps the chain — L0 never loses it, and L2 gets it back below.
  MetaWriteBatch batch;
  bool restore = false;
  uint64_t unreferenced = 0;
  {
    std::unique_lock<std::shared_mutex> g(index_mu_);
    restore = in_flight();
    if (!restore) {
      unreferenced =
          keep > 0 ? InstallChainLocked(ns, fp,
                                        ChainInfo{chain_id, head.version, index_.EtagDigest(etag),
                                                  head.tip(), static_cast<uint32_t>(keep)},
                                        head.entries, plan.cut_used, head.published_us, &batch,
                                        /*trim=*/true)
                   : DropChainLocked(ns, fp, chain_id, &batch);
    }
  }
  if (restore) {
    head.entries = entries;
    head.version += 1;
    const std::string full = layout::EncodeChainHead(head);
    PutOptions opts = keep > 0 ? PutOptions{PutMode::kIfMatch, etag}
                               : PutOptions{PutMode::kIfAbsent, {}};
    // Tried again on an error that leaves the head as it was (or unknown: a retry of a put that
    // was applied meets a Conflict, and L0 then follows L2, which has it): given up, the trim
    // would stand and the put's publish fail, which G10 says cannot happen.
    Result<std::string> back = Status::Internal("not written");
    for (int attempt = 0; attempt < kRestoreAttempts; ++attempt) {
      counters_.l2_puts++;
      back = l2_->Put(key, {AsBytes(full)}, opts);
      if (back.ok() || back.status().IsConflict()) break;
    }
    if (back.ok()) {
      if (Status s = ApplyHead(head, *back, full); !s.ok()) {
        Log(LogLevel::kWarn, "restored " + key + " but could not record it in L1: " + s.ToString());
      }
    } else {
      // Someone else wrote the head meanwhile: theirs stands (L2 wins), L0 follows it.
      Log(LogLevel::kWarn, "eviction could not restore " + key + " for a put in flight: " +
                               back.status().ToString());
      (void)SyncHeadFromL2(ns, fp, chain_id);
    }
    report->skipped_in_flight++;
    counters_.evict_skipped_in_flight++;
    return Trimmed::kInFlight;
  }
  if (keep > 0) {
    batch.Put(meta_records::HeadKey(ns, fp, chain_id),
              meta_records::EncodeHeadValue(etag, encoded));
  } else {
    batch.Delete(meta_records::HeadKey(ns, fp, chain_id));
    batch.Delete(meta_records::UseKey(ns, fp, chain_id));
  }
  if (Status s = l1_->Write(batch, /*sync=*/false); !s.ok()) {
    Log(LogLevel::kWarn, "evicted from " + key + " but could not record it in L1: " + s.ToString());
  }
  const uint64_t head_freed = layout::ChainHeadBytes(ns.size(), entries.size()) -
                              (keep > 0 ? layout::ChainHeadBytes(ns.size(), keep) : 0);

  // Sidecars go with their tip: each cut key no chain of the scope still holds.
  uint64_t sidecar_freed = 0;
  size_t sidecars = 0;
  for (const ChainEntry& e : plan.cut) {
    {
      std::shared_lock<std::shared_mutex> g(index_mu_);
      if (index_.HasKey(ns, fp, e.key)) continue;
    }
    const uint64_t bytes = ledger_.SidecarBytes(ns, fp, e.key);
    if (bytes == 0) continue;
    const std::string sidecar = layout::SidecarKey(options_.l2_prefix, ns, fp, e.key);
    if (Status d = l2_->Delete(sidecar); !d.ok()) {
      counters_.l2_errors++;
      Log(LogLevel::kWarn, "eviction could not delete sidecar " + sidecar + ": " + d.ToString() +
                               " (it stays, counted as a stray sidecar)");
      continue;
    }
    ledger_.SidecarDeleted(ns, fp, e.key);
    sidecar_freed += bytes;
    ++sidecars;
  }

  const uint64_t bytes = unreferenced + head_freed + sidecar_freed;
  const uint64_t freed = head_freed + sidecar_freed;  // blobs are freed when GC deletes them
  report->chains++;
  report->heads_deleted += keep == 0;
  report->blocks += plan.cut.size();
  report->bytes += bytes;
  report->freed_bytes += freed;
  counters_.evict_chains++;
  counters_.evict_heads_deleted += keep == 0;
  counters_.evict_blocks += plan.cut.size();
  counters_.evict_bytes += bytes;
  counters_.evict_freed_bytes += freed;
  Log(LogLevel::kInfo,
      "evicted " + std::to_string(plan.cut.size()) + " blocks from the tip of chain " +
          ShortId(chain_id) + " (namespace " + ns + ", fingerprint " + fp.ToHex() + "): " +
          plan.why + "; " +
          (keep > 0 ? "head now " + std::to_string(keep) + " of " + std::to_string(entries.size()) +
                          " blocks"
                    : std::string("head deleted")) +
          "; " + HumanBytes(unreferenced) + " of blobs unreferenced (left to orphan GC), " +
          HumanBytes(head_freed) + " of head" +
          (sidecars ? " and " + std::to_string(sidecars) + " sidecars (" +
                          HumanBytes(sidecar_freed) + ")"
                    : std::string()) +
          " deleted");
  return Trimmed::kDone;
}

void StoreImpl::ProbeUnreferenced(uint64_t now_us, EvictionReport* report) {
  // Blobs this store stopped referencing stay in L2 until orphan GC (mark-sweep over all heads,
  // with a grace period) deletes them; only then are their bytes freed. A HEAD tells.
  MetaWriteBatch batch;
  for (const auto& [ns, blob] :
       ledger_.DueForProbe(now_us, kOrphanProbeIntervalMicros, kOrphanProbesPerPass)) {
    auto head = l2_->Head(layout::BlobKey(options_.l2_prefix, ns, blob.hash));
    if (head.ok()) continue;
    if (!head.status().IsNotFound()) {
      counters_.l2_errors++;
      continue;
    }
    const uint64_t freed = ledger_.UnrefDeleted(ns, blob.hash);
    if (freed == 0) continue;
    batch.Delete(meta_records::OrphanKey(ns, blob.hash));
    report->orphans_gone++;
    report->freed_bytes += freed;
    counters_.evict_freed_bytes += freed;
  }
  if (batch.empty()) return;
  if (Status s = l1_->Write(batch, /*sync=*/false); !s.ok()) {
    Log(LogLevel::kWarn, "could not drop collected orphans from L1: " + s.ToString());
  }
}

void StoreImpl::PersistUse(bool all) {
  // Chains are sliced by id; a pass writes the use of one slice's chains used since that slice was
  // last written (at most one slice per second), so every use reaches L1 within kUseSlices
  // passes a second or more apart, and all of them at close.
  std::array<bool, kUseSlices> chosen{};
  std::unique_lock<std::mutex> pass(evict_mu_, std::defer_lock);
  if (all) pass.lock();  // a pass calls this with evict_mu_ already held
  const uint32_t tick = use_tick_.load(std::memory_order_relaxed);
  if (all) {
    chosen.fill(true);
  } else {
    // At most one slice per tick: passes run back to back under pressure.
    if (tick == use_slice_tick_) return;
    use_slice_tick_ = tick;
    chosen[use_sweeps_++ % kUseSlices] = true;
  }
  MetaWriteBatch batch;
  for (size_t slice = 0; slice < kUseSlices; ++slice) {
    if (!chosen[slice]) continue;
    // One slice under the lock at a time: L0's writers (publishes) wait for a slice, not all.
    std::shared_lock<std::shared_mutex> g(index_mu_);
    index_.ForEachChainUse(slice, [&](std::string_view ns, const Fingerprint& fp,
                                      const ChainId& id, uint32_t used) {
      if (used >= use_swept_tick_[slice]) {
        batch.Put(meta_records::UseKey(ns, fp, id), meta_records::EncodeUse(used));
      }
    });
  }
  for (size_t i = 0; i < kUseSlices; ++i) {
    if (chosen[i]) use_swept_tick_[i] = tick;
  }
  if (batch.empty()) return;
  if (Status s = l1_->Write(batch, /*sync=*/false); !s.ok()) {
    Log(LogLevel::kWarn, "could not record chain uses in L1: " + s.ToString());
  }
}

}  // namespace wombatkv
