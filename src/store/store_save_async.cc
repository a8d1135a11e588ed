// The completion-based save and publish (Store::SaveChainAsync, PublishChainAsync without a
// compare-and-swap), for a server whose threads should not wait out a sync (docs/daemon.md,
// "Completions").
//
// Everything up to the chain head's write runs in the caller's thread, as SaveChain: the blocks'
// puts, the durability barrier (their blobs are written to L2 first, not yet durable), the base
// version from L0. The head write is L2's PutAsync: on a journaled local directory the record is
// appended at once and the put completes when a sync covers it, on the thread that leads the
// journal's rounds, which then completes every save of the round in turn — no thread per save
// waiting, no wake-up per save. The completion installs the head (L0, L1), forgets the pending
// blocks and answers; a compaction of redundant heads (which may wait for L2) is queued on the
// executor.
//
// The chain's publish stripe is not held across the head write (the completion runs on another
// thread, and must not wait for a lock whose holder may wait for the journal). Instead the chain
// is marked in async_chains_ from before its base is read until its head is installed, and
// LockChain — how every reader or writer of a head takes the stripe — waits for the mark to go.
// So a publish of the same chain sees the new head in L0, as under the stripe.
//
// Where the completion would have to block, the save falls back to PublishChain in the caller's
// thread: blobs found in L2 rather than written here (R4's re-check follows the head write),
// a head write that conflicts (another writer: PublishChain re-reads and retries).
#include <atomic>
#include <thread>

#include "layout/object_keys.h"
#include "store/store_impl.h"

namespace wombatkv {

std::unique_lock<std::mutex> StoreImpl::LockChain(const ChainId& chain_id) {
  std::unique_lock<std::mutex> stripe(StripeFor(chain_id));
  std::unique_lock<std::mutex> g(async_mu_);
  async_cv_.wait(g, [&] { return !async_chains_.contains(chain_id); });
  return stripe;
}

void StoreImpl::AsyncBegan() {
  std::lock_guard<std::mutex> g(async_mu_);
  ++async_pending_;
}

void StoreImpl::AsyncEnded() {
  std::lock_guard<std::mutex> g(async_mu_);
  --async_pending_;
  async_cv_.notify_all();
}

void StoreImpl::SaveChainAsync(std::string_view ns, const Fingerprint& fp,
                               std::span<const BlockPut> blocks, SaveDone done) {
  // The destructor waits for this call as for its completion: the caller may still be here
  // when the completion has answered on another thread.
  const AsyncCall call(this);
  std::shared_ptr<Upload> deferred;
  auto hashes = PutBlocksImpl(ns, fp, blocks, /*save=*/true, &deferred);
  if (!hashes.ok()) {
    done(hashes.status());
    return;
  }
  const BlockKey tip = blocks.back().key;
  PublishAsync(ns, fp, tip, tip, std::move(done));
  // The publish runs the deferred upload unless it failed before its durability barrier.
  if (deferred && !deferred->started.load()) {
    SubmitUpload(CacheKey{NamespaceId(ns), hashes->back()}, deferred);
  }
}

void StoreImpl::PublishChainAsync(std::string_view ns, const Fingerprint& fp,
                                  const ChainId& chain_id, const BlockKey& tip,
                                  std::optional<uint64_t> expected_version, PublishDone done) {
  if (expected_version) {  // a compare-and-swap re-reads and decides under the stripe: blocking
    Store::PublishChainAsync(ns, fp, chain_id, tip, expected_version, std::move(done));
    return;
  }
  const AsyncCall call(this);
  PublishAsync(ns, fp, chain_id, tip,
               [done = std::move(done)](Result<uint64_t> v) { done(std::move(v), ChainState{}); });
}

void StoreImpl::PublishAsync(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id,
                             const BlockKey& tip, SaveDone done) {
  auto blocking = [&] { done(PublishChain(ns, fp, chain_id, tip, std::nullopt, nullptr)); };
  if (!ValidateNamespace(ns).ok() || chain_id.IsZero() || tip.IsZero()) return blocking();
  auto plan = PreparePublish(ns, fp, tip);
  if (!plan.ok()) return done(plan.status());
  if (!plan->reused.empty()) return blocking();

  auto head = std::make_shared<layout::ChainHead>();
  head->ns = std::string(ns);
  head->fp = fp;
  head->chain_id = chain_id;
  head->entries = std::move(plan->entries);
  PutOptions opts;
  {
    std::unique_lock<std::mutex> stripe = LockChain(chain_id);
    const std::optional<ChainInfo> base = IndexedHead(ns, fp, chain_id);
    head->version = VersionOf(base) + 1;
    head->published_us = clock_->WallMicros();
    opts = base ? PutOptions{PutMode::kIfMatch, base->etag} : PutOptions{PutMode::kIfAbsent, {}};
    std::lock_guard<std::mutex> g(async_mu_);
    async_chains_.insert(chain_id);
  }
  AsyncBegan();  // ended by the completion
  auto encoded = std::make_shared<const std::string>(layout::EncodeChainHead(*head));
  const std::string key = layout::ChainKey(options_.l2_prefix, ns, fp, chain_id);
  counters_.l2_puts++;
  const uint32_t ns_id = plan->ns_id;
  // Whether the completion runs inside PutAsync on this (the caller's) thread: only there may
  // the blocking path run.
  auto in_call = std::make_shared<std::atomic<bool>>(true);
  const std::thread::id caller = std::this_thread::get_id();
  l2_->PutAsync(key, {AsBytes(*encoded)}, opts,
                [this, head, encoded, key, ns_id, in_call, caller,
                 done = std::move(done)](Result<std::string> put) {
    auto unmark = [&] {
      std::lock_guard<std::mutex> g(async_mu_);
      async_chains_.erase(head->chain_id);
      async_cv_.notify_all();
    };
    if (!put.ok()) {
      unmark();
      if (put.status().IsConflict() && in_call->load() &&
          std::this_thread::get_id() == caller) {
        // Another writer changed the head (conditions are checked when the record is appended,
        // before PutAsync returns): retry the blocking way, which re-reads it.
        done(PublishChain(head->ns, head->fp, head->chain_id, head->tip(), std::nullopt,
                          nullptr));
      } else {
        counters_.l2_errors++;
        done(put.status().WithContext("publishing chain head " + key));
      }
      return AsyncEnded();
    }
    // Committed: as in PublishChain, what follows only updates caches of the head.
    counters_.l2_put_bytes += encoded->size();
    // A completion thread that falls behind: the chain's mark must hold publishers off meanwhile.
    if (Buggify("save.completion_late")) clock_->SleepMicros(2000);
    if (Status s = ApplyHead(*head, *put, *encoded); !s.ok()) {
      Log(LogLevel::kWarn, "published " + key + " but could not record it in L1: " +
                               s.ToString());
    }
    counters_.publishes++;
    unmark();
    if (Status s = ForgetPublished(head->ns, ns_id, head->fp, head->entries); !s.ok()) {
      Log(LogLevel::kWarn, "published " + key + " but could not clear its pending records: " +
                               s.ToString());
    }
    // May delete heads in L2 (a durable write): not in the completion's thread. Queued before
    // the answer, so a caller that drains the executor after it finds it done.
    if (head->chain_id == head->tip() && head->entries.size() > 1) {
      executor_->Submit([this, head] { CompactRedundantHeads(head->ns, head->fp, head->entries); });
    }
    done(head->version);
    AsyncEnded();
  });
  in_call->store(false);
}

}  // namespace wombatkv
