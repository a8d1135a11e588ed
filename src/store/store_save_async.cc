// The completion-based save and publish (Store::SaveChainAsync, PublishChainAsync without a
// compare-and-swap), for a server whose threads should not wait out a sync (docs/daemon.md,
// "Completions").
//
// Everything up to the chain head's write runs in the caller's thread, as SaveChain: the blocks'
// puts, the durability barrier (their blobs are written to L2 first, not yet durable), the base
// version from L0. The head write is L2's PutAsync: on a journaled local directory the record is
// appended at once and the put completes when a sync covers it, on the thread that leads the
// journal's rounds, which then completes every save of the round in turn — no thread per save
// waiting, no wake-up per save. The completion installs the head in L0 and hands its L1 record
// to WriteL1Then, which writes the records of all the round's completions in one L1 write when
// the round is through (base/defer_scope.h); then each completion forgets its pending blocks and
// answers, and a compaction of redundant heads (which may wait for L2) is queued on the executor.
// The chain stays marked (below) until then, so no other publish of it writes L1 in between. An
// orphan record (store_evict.cc) of a blob another chain took up meanwhile may land after that
// chain's: the next open drops orphan records of referenced blobs.
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

#include "base/defer_scope.h"
#include "layout/object_keys.h"
#include "store/store_impl.h"

namespace wombatkv {
namespace {

// The L1 writes of the completions one journal round runs on this thread, gathered until the
// round's scope closes (WriteL1Then). One store gathers at a time on a thread.
struct L1Round {
  const StoreImpl* store = nullptr;
  const DeferScope* scope = nullptr;
  MetaWriteBatch batch;
  std::vector<std::function<void(Status)>> then;
};
thread_local L1Round* gathering = nullptr;

}  // namespace

void StoreImpl::WriteL1Then(MetaWriteBatch b, std::function<void(Status)> then) {
  if (gathering == nullptr) {
    auto round = std::make_shared<L1Round>();
    round->store = this;
    round->scope = DeferScope::Innermost();
    if (DeferScope::Defer([this, round] {
          gathering = nullptr;
          const Status written = l1_->Write(round->batch, /*sync=*/false);
          for (auto& fn : round->then) fn(written);
        })) {
      gathering = round.get();
    }
  }
  // Only into the round of this store and of the innermost scope (not an outer one's).
  if (gathering != nullptr && gathering->store == this &&
      gathering->scope == DeferScope::Innermost()) {
    gathering->batch.Append(std::move(b));
    gathering->then.push_back(std::move(then));
    return;
  }
  // Not inside a round's completions (or another store's round is gathering on this thread).
  then(l1_->Write(b, /*sync=*/false));
}

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
  auto plan = PreparePublish(ns, fp, chain_id, tip);
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
    auto base = WriteBase(ns, fp, chain_id);
    if (!base.ok()) {  // a damaged head or an L2 error: the blocking path deals with both
      stripe.unlock();
      return blocking();
    }
    head->version = VersionOf(*base) + 1;
    head->published_us = NextPublishMicros();
    opts =
        *base ? PutOptions{PutMode::kIfMatch, (*base)->etag} : PutOptions{PutMode::kIfAbsent, {}};
    std::lock_guard<std::mutex> g(async_mu_);
    async_chains_.insert(chain_id);
  }
  AsyncBegan();  // ended by the completion
  auto encoded = std::make_shared<const std::string>(layout::EncodeChainHead(*head));
  const std::string key = layout::ChainKey(options_.l2_prefix, ns, fp, chain_id);
  counters_.l2_puts++;
  const uint32_t ns_id = plan->ns_id;
  const IndexedPrefix indexed = plan->indexed;
  // Whether the completion runs inside PutAsync on this (the caller's) thread: only there may
  // the blocking path run.
  auto in_call = std::make_shared<std::atomic<bool>>(true);
  const std::thread::id caller = std::this_thread::get_id();
  l2_->PutAsync(
      key, {AsBytes(*encoded)}, opts,
      [this, head, encoded, key, ns_id, indexed, in_call, caller, claim = plan->claim,
       done = std::move(done)](Result<std::string> put) mutable {
        auto unmark = [this, head] {
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
          claim.reset();  // before AsyncEnded: the store may be destroyed from then on
          return AsyncEnded();
        }
        // Committed: as in PublishChain, what follows only updates caches of the head.
        counters_.l2_put_bytes += encoded->size();
        // A completion thread that falls behind: the chain's mark must hold publishers off
        // meanwhile.
        if (Buggify("save.completion_late")) clock_->SleepMicros(2000);
        // The chain stays marked until its L1 record is written, so that no other publish of it
        // writes a newer record first.
        auto finish = [this, head, key, ns_id, indexed, unmark, claim = std::move(claim),
                       done = std::move(done)](Status recorded) mutable {
          if (!recorded.ok()) {
            Log(LogLevel::kWarn,
                "published " + key + " but could not record it locally: " + recorded.ToString());
          }
          MaybeScheduleEvictionFor(head->ns);
          counters_.publishes++;
          unmark();
          if (Status s = ForgetPublished(head->ns, ns_id, head->fp, head->entries); !s.ok()) {
            Log(LogLevel::kWarn,
                "published " + key + " but could not clear its pending records: " + s.ToString());
          }
          // Reads L2, and compaction deletes heads in it (a durable write): neither in the
          // completion's thread. Compaction is queued before the answer, so a caller that drains
          // the executor after it finds it done.
          auto answer = [this, head, key, ns_id, indexed, claim = std::move(claim),
                         done = std::move(done)]() mutable {
            Status prefix = RecheckIndexedPrefix(head->ns, head->fp, ns_id, head->chain_id,
                                                 head->entries, indexed);
            if (prefix.ok() && head->chain_id == head->tip() && head->entries.size() > 1) {
              executor_->Submit(
                  [this, head] { CompactRedundantHeads(head->ns, head->fp, head->entries); });
            }
            claim.reset();  // before AsyncEnded: the store may be destroyed from then on
            if (prefix.ok()) {
              done(head->version);
            } else {
              done(prefix.WithContext("published chain head " + key));
            }
            AsyncEnded();
          };
          if (indexed.length == 0) return answer();
          executor_->Submit(std::move(answer));
        };
        MetaWriteBatch record;
        if (Status s = InstallHead(*head, *put, *encoded, &record); !s.ok()) {
          return finish(s.WithContext("installing it in L0"));
        }
        WriteL1Then(std::move(record), std::move(finish));
      });
  in_call->store(false);
}

}  // namespace wombatkv
