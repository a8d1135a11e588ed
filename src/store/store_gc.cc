// Orphan GC as part of the store's background work. Eviction (store_evict.cc) only stops
// referencing blobs; the collector (gc/orphan_gc.h, rules R1–R5) is what deletes them, and only a
// delete frees bytes: the ledger's unreferenced count falls here, for the blobs deleted.
#include "base/check.h"
#include "store/meta_records.h"
#include "store/store_impl.h"

namespace wombatkv {

bool StoreImpl::HasGcLeftovers() {
  const std::string dir = GcHoldDir();
  return !dir.empty() && gc::HoldFiles::Count(fs_, dir) > 0;
}

bool StoreImpl::PendingBlob(const std::string& ns, const ContentHash& hash) {
  const auto ns_id = FindNamespaceId(ns);
  if (!ns_id) return false;  // this store never put anything in it
  const CacheKey ck{*ns_id, hash};
  std::lock_guard<std::mutex> g(pending_mu_);
  return pending_hashes_.count(ck) > 0 || publishing_blobs_.count(ck) > 0;
}

void StoreImpl::MaybeScheduleGc() {
  if (!options_.background_gc || evict_stopped_.load(std::memory_order_relaxed)) return;
  const uint64_t now = clock_->NowMicros();
  // Buggify: a pass before its interval (CollectOrphans may come at any moment anyway).
  if (now < next_gc_us_.load(std::memory_order_relaxed) && !Buggify("gc.early")) return;
  if (gc_queued_.exchange(true)) return;
  next_gc_us_.store(now + options_.gc_interval_ms * 1000, std::memory_order_relaxed);
  Executor* on = gc_thread_ ? gc_thread_.get() : executor_;
  on->Submit([this] {
    // Errors are logged and counted by the pass; the next interval tries again.
    if (!evict_stopped_.load()) (void)GcPass();
    gc_queued_ = false;
  });
}

Result<OrphanGcReport> StoreImpl::CollectOrphans() { return GcPass(); }

Result<OrphanGcReport> StoreImpl::GcPass() {
  // Only gc_mu_ is held across the pass's L2 I/O: publishes, reads and eviction go on meanwhile
  // (R3/R4 are what make that safe), and the ledger and L1 are touched after the I/O.
  std::lock_guard<std::mutex> pass(gc_mu_);
  WMBT_CHECK(gc_ != nullptr);
  counters_.gc_passes++;
  const uint64_t started_us = clock_->NowMicros();
  auto run = gc_->RunPass();
  const uint64_t took_us = clock_->NowMicros() - started_us;
  const uint64_t took_ms = took_us / 1000;
  counters_.gc_pass_micros += took_us;
  if (!run.ok()) {
    counters_.l2_errors++;
    Log(LogLevel::kWarn, "orphan GC pass failed: " + run.status().ToString() +
                             " (retried at the next pass; nothing unsafe was deleted)");
    return run.status().WithContext("orphan GC");
  }
  const gc::GcReport& r = *run;
  counters_.gc_blobs_deleted += r.deleted;
  counters_.gc_bytes_freed += r.freed_bytes;
  counters_.gc_delete_failures += r.delete_failures;
  counters_.gc_heads_read += r.heads;
  counters_.gc_heads_unchanged += r.heads_unchanged;
  counters_.gc_blobs_recovered += r.recovered;

  // Blobs this store had unreferenced leave the ledger's unreferenced count; their L1 orphan
  // records go. (Blobs of other hosts are not on the ledger: UnrefDeleted returns 0.)
  MetaWriteBatch batch;
  uint64_t ledger_freed = 0;
  for (const gc::OrphanBlob& o : r.removed) {
    const uint64_t freed = ledger_.UnrefDeleted(o.ns, o.hash);
    if (freed == 0) continue;
    ledger_freed += freed;
    batch.Delete(meta_records::OrphanKey(o.ns, o.hash));
  }
  counters_.evict_freed_bytes += ledger_freed;
  if (!batch.empty()) {
    if (Status s = l1_->Write(batch, /*sync=*/false); !s.ok()) {
      Log(LogLevel::kWarn, "could not drop collected orphans from L1: " + s.ToString() +
                               " (the next open probes them again)");
    }
  }
  for (const std::string& p : r.problems) Log(LogLevel::kWarn, "orphan GC: " + p);
  if (r.recovered > 0) {
    Log(LogLevel::kWarn, "orphan GC: re-checked " + std::to_string(r.recovered) +
                             " blobs an earlier process deleted and ended before re-checking (" +
                             GcHoldDir() + "); what a chain names was put back");
  }
  if (r.deleted + r.restored + r.delete_failures > 0) {
    Log(LogLevel::kInfo,
        "orphan GC: " + std::to_string(r.deleted) + " blobs deleted (" +
            std::to_string(r.freed_bytes) + " bytes freed), " + std::to_string(r.restored) +
            " put back for a new head, " + std::to_string(r.delete_failures) +
            " deletes failed (retried); " + std::to_string(r.orphans) + " orphans found, " +
            std::to_string(r.heads) + " heads read (" + std::to_string(r.heads_unchanged) +
            " unchanged since the last pass, not read), pass took " + std::to_string(took_ms) +
            " ms");
  }
  OrphanGcReport out;
  out.orphans = r.orphans;
  out.orphan_bytes = r.orphan_bytes;
  out.expired = r.expired;
  out.deleted = r.deleted;
  out.freed_bytes = r.freed_bytes;
  out.restored = r.restored;
  out.delete_failures = r.delete_failures;
  out.kept_in_flight = r.kept;
  out.namespaces_skipped = r.namespaces_skipped;
  out.retry_backlog = gc_->retry_backlog();
  return out;
}

}  // namespace wombatkv
