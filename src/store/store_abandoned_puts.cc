// Abandoned puts (docs/capacity.md, "Abandoned puts"): a put left unpublished for longer than both
// graces — eviction no longer protects what it names (the publish grace, G10) and any host's
// orphan GC may delete its blob (the GC grace, docs/layout.md §7 R1) — is forgotten: its pending
// entry, its L1 record and its upload slot go. Without this, an engine killed between its puts and
// their publish would grow the store's memory and L1 for ever, and keep this store's own orphan
// GC from ever collecting those blobs. A publish naming a forgotten block fails with
// FailedPrecondition ("put it again"), as one naming a block never put does.
//
// Races, and what settles them:
//   - a publish that collected a block before it was forgotten: its claim (PublishClaim, taken
//     under pending_mu_ with the collection) keeps the block, and so its blob from this store's
//     orphan GC, until the publish is done;
//   - a put of the same key or bytes: puts hold forget_mu_ shared until their blocks are pending,
//     a pass holds it exclusively, so a put's L1 record and upload slot are never the ones a pass
//     removes;
//   - an upload still running, or being retried by a publisher, when its block is forgotten: its
//     slot (and the pin on its payload) is dropped by a later pass (forget_leftovers_).
#include <algorithm>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "base/check.h"
#include "store/meta_records.h"
#include "store/store_impl.h"

namespace wombatkv {

StoreImpl::PublishClaim::PublishClaim(StoreImpl* store, std::vector<Claimed> claimed)
    : store_(store), claimed_(std::move(claimed)) {
  for (const Claimed& c : claimed_) ++store_->publishing_[c.key];
}

StoreImpl::PublishClaim::~PublishClaim() {
  std::lock_guard<std::mutex> g(store_->pending_mu_);
  for (const Claimed& c : claimed_) {
    auto it = store_->publishing_.find(c.key);
    if (--it->second > 0) continue;
    store_->publishing_.erase(it);
    // A put replaced by other bytes while claimed (AddPendingLocked left its upload to the
    // publish), and the publish failed: its upload is nobody's now. (A publish that succeeded
    // forgot its puts: none is pending under the key, unless put again since.)
    auto now = store_->pending_.find(c.key);
    const CacheKey ck{c.key.ns_id, c.hash};
    if (now != store_->pending_.end() && now->second.hash != c.hash &&
        !store_->pending_hashes_.count(ck)) {
      store_->replaced_uploads_.push_back(ck);
    }
  }
  for (const CacheKey& ck : blobs_) {
    auto it = store_->publishing_blobs_.find(ck);
    if (--it->second == 0) store_->publishing_blobs_.erase(it);
  }
  if (chain_) {
    auto it = store_->publishing_chains_.find(*chain_);
    if (--it->second == 0) store_->publishing_chains_.erase(it);
  }
}

void StoreImpl::PublishClaim::HoldChain(const ChainId& chain_id) {
  WMBT_CHECK(!chain_);
  chain_ = chain_id;
  std::lock_guard<std::mutex> g(store_->pending_mu_);
  ++store_->publishing_chains_[chain_id];
}

void StoreImpl::PublishClaim::KeepBlobs(std::vector<CacheKey> blobs) {
  WMBT_CHECK(blobs_.empty());
  blobs_ = std::move(blobs);
  std::lock_guard<std::mutex> g(store_->pending_mu_);
  for (const CacheKey& ck : blobs_) ++store_->publishing_blobs_[ck];
}

uint64_t StoreImpl::AbandonedAfterUs() const {
  constexpr uint64_t kSecondsMax = UINT64_MAX / 1'000'000;  // a grace of "for ever" saturates
  return std::max(std::min(options_.publish_grace_seconds, kSecondsMax) * 1'000'000,
                  options_.gc_grace_us);
}

void StoreImpl::MaybeForgetAbandonedPuts() {
  const uint64_t now = clock_->WallMicros();
  // A tenth of the age that makes a put abandoned, between a second and a minute: a put is
  // forgotten at most that late, and a pass (a scan of the pending puts) runs at most that often.
  const uint64_t period = std::clamp<uint64_t>(AbandonedAfterUs() / 10, 1'000'000, 60'000'000);
  uint64_t due = next_abandoned_check_us_.load(std::memory_order_relaxed);
  // Not due yet — unless the wall clock stepped back by more than a period since it was set.
  if (now < due && due - now <= period) return;
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
  std::unique_lock<std::shared_mutex> no_puts(forget_mu_);
  MetaWriteBatch forget;
  std::vector<CacheKey> unneeded = std::move(forget_leftovers_);  // blobs no pending put names
  forget_leftovers_.clear();
  size_t forgotten = 0;
  {
    std::lock_guard<std::mutex> g(pending_mu_);
    for (auto it = pending_.begin(); it != pending_.end();) {
      const auto& [key, block] = *it;
      // A wall clock that stepped back (now before the put) keeps the put.
      if (now_us < block.put_us || now_us - block.put_us <= after || publishing_.count(key)) {
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
    // Uploads of puts replaced by other bytes of their key (AddPendingLocked).
    unneeded.insert(unneeded.end(), replaced_uploads_.begin(), replaced_uploads_.end());
    replaced_uploads_.clear();
    // A leftover whose bytes a later put named again is that put's now.
    std::erase_if(unneeded, [&](const CacheKey& ck) { return pending_hashes_.count(ck) > 0; });
  }
  if (!unneeded.empty()) {
    // In key order, not the hash table's (seeded per process): retiring an upload unpins its
    // payload in the RAM cache, which makes it the most recent entry there, so this order is the
    // cache's eviction order — and a run must not depend on where the process was loaded.
    std::sort(unneeded.begin(), unneeded.end(), [](const CacheKey& a, const CacheKey& b) {
      return std::tie(a.ns_id, a.hash) < std::tie(b.ns_id, b.hash);
    });
    // A finished upload's slot goes; a failed one is retired first (its pin on the payload is
    // released once). One still running, or being retried by a publisher, is left to a later
    // pass. A publish that had collected the block holds a claim, so none is under way here.
    std::lock_guard<std::mutex> g(upload_mu_);
    for (const CacheKey& ck : unneeded) {
      auto it = uploads_.find(ck);
      if (it == uploads_.end()) continue;
      if (it->second->done.done() &&
          (it->second->done.status().ok() || RetireFailedUpload(ck, *it->second))) {
        uploads_.erase(it);
      } else {
        forget_leftovers_.push_back(ck);
      }
    }
  }
  if (forgotten == 0) return Status::Ok();
  counters_.pending_blocks_forgotten += forgotten;
  Log(LogLevel::kInfo, std::to_string(forgotten) + " blocks put more than " +
                           std::to_string(after / 1'000'000) +
                           " s ago and never published were forgotten (a publish naming them "
                           "now fails: put them again)");
  return forget.empty() ? Status::Ok() : l1_->Write(forget, /*sync=*/false);
}

}  // namespace wombatkv
