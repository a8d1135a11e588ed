// Abandoned puts (docs/capacity.md, "Abandoned puts"): a put left unpublished for longer than both
// graces — eviction no longer protects what it names (the publish grace, G10) and any host's
// orphan GC may delete its blob (the GC grace, docs/layout.md §7 R1) — is forgotten: its pending
// entry, its L1 record and its upload slot go. Without this, an engine killed between its puts and
// their publish would grow the store's memory and L1 for ever, and keep this store's own orphan
// GC from ever collecting those blobs. A publish naming a forgotten block fails with
// FailedPrecondition ("put it again"), as one naming a block never put does.
#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "store/meta_records.h"
#include "store/store_impl.h"

namespace wombatkv {

uint64_t StoreImpl::AbandonedAfterUs() const {
  constexpr uint64_t kSecondsMax = UINT64_MAX / 1'000'000;  // a grace of "for ever" saturates
  return std::max(std::min(options_.publish_grace_seconds, kSecondsMax) * 1'000'000,
                  options_.gc_grace_us);
}

void StoreImpl::MaybeForgetAbandonedPuts() {
  const uint64_t now = clock_->WallMicros();
  uint64_t due = next_abandoned_check_us_.load(std::memory_order_relaxed);
  if (now < due) return;
  // One caller per period; the period is a fraction of the age that makes a put abandoned, so
  // one is forgotten at most about a tenth of that age late (and at least every minute).
  const uint64_t period = std::clamp<uint64_t>(AbandonedAfterUs() / 10, 1, 60'000'000);
  if (!next_abandoned_check_us_.compare_exchange_strong(due, now + period)) return;
  if (Status s = ForgetAbandonedPuts(now); !s.ok()) {
    Log(LogLevel::kWarn, "forgetting puts never published: " + s.ToString() +
                             " (their L1 records stay; tried again later)");
  }
}

Status StoreImpl::ForgetAbandonedPuts(uint64_t now_us) {
  const uint64_t after = AbandonedAfterUs();
  std::unordered_map<uint32_t, std::string> ns_names;
  {
    std::lock_guard<std::mutex> g(ns_mu_);
    for (const auto& [name, id] : ns_ids_) ns_names.emplace(id, name);
  }
  MetaWriteBatch forget;
  std::vector<CacheKey> unneeded;  // blobs no pending put names any more
  size_t forgotten = 0;
  {
    std::lock_guard<std::mutex> g(pending_mu_);
    for (auto it = pending_.begin(); it != pending_.end();) {
      const auto& [key, block] = *it;
      // A wall clock that stepped back (now before the put) keeps the put.
      if (now_us < block.put_us || now_us - block.put_us <= after) {
        ++it;
        continue;
      }
      if (block.in_l1)
        forget.Delete(meta_records::PendingKey(ns_names[key.ns_id], key.fp, key.key));
      const CacheKey ck{key.ns_id, block.hash};
      ReleasePendingRefsLocked(key, block);
      if (!pending_hashes_.count(ck)) unneeded.push_back(ck);
      it = pending_.erase(it);
      ++forgotten;
    }
  }
  if (forgotten == 0) return Status::Ok();
  {
    // A finished upload's slot goes; a failed one is retired first (its pin on the payload is
    // released once). One still running, or being retried by a publisher, stays. A publish that
    // collected the block before it was forgotten finds no slot and checks L2 for the blob.
    std::lock_guard<std::mutex> g(upload_mu_);
    for (const CacheKey& ck : unneeded) {
      auto it = uploads_.find(ck);
      if (it == uploads_.end() || !it->second->done.done()) continue;
      if (it->second->done.status().ok() || RetireFailedUpload(ck, *it->second)) uploads_.erase(it);
    }
  }
  Log(LogLevel::kInfo, std::to_string(forgotten) + " blocks put more than " +
                           std::to_string(after / 1'000'000) +
                           " s ago and never published were forgotten (a publish naming them "
                           "now fails: put them again)");
  return forget.empty() ? Status::Ok() : l1_->Write(forget, /*sync=*/false);
}

}  // namespace wombatkv
