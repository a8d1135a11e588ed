// The write path: PutBlocks (hash, cache, L1 pending record, background upload), PublishChain
// (wait for durability, write the head, L1, L0) and sidecar puts.
#include <algorithm>
#include <unordered_set>

#include "base/check.h"
#include "base/limits.h"
#include "base/store_args.h"
#include "env/parallel_for.h"
#include "layout/blob_object.h"
#include "layout/block_codec.h"
#include "layout/envelope.h"
#include "layout/object_keys.h"
#include "store/meta_records.h"
#include "store/put_copy.h"
#include "store/store_impl.h"
#include "store/store_test_hooks.h"

namespace wombatkv {
namespace {
using limits::kPublishAttemptsMax;

std::string ShortHex(const BlockKey& k) { return k.ToHex().substr(0, 16) + "…"; }
}  // namespace

Result<std::vector<ContentHash>> StoreImpl::PutBlocks(std::string_view ns, const Fingerprint& fp,
                                                      std::span<const BlockPut> blocks) {
  return PutBlocksImpl(ns, fp, blocks, /*save=*/false, nullptr);
}

Result<uint64_t> StoreImpl::SaveChain(std::string_view ns, const Fingerprint& fp,
                                      std::span<const BlockPut> blocks) {
  std::shared_ptr<Upload> deferred;
  WMBT_ASSIGN_OR_RETURN(std::vector<ContentHash> hashes,
                        PutBlocksImpl(ns, fp, blocks, /*save=*/true, &deferred));
  const BlockKey& tip = blocks.back().key;
  Result<uint64_t> version = PublishChain(ns, fp, tip, tip, std::nullopt, nullptr);
  // The publish runs the deferred upload unless it failed before its durability barrier.
  if (deferred && !deferred->started.load()) {
    SubmitUpload(CacheKey{NamespaceId(ns), hashes.back()}, deferred);
  }
  return version;
}

Result<std::vector<ContentHash>> StoreImpl::PutBlocksImpl(std::string_view ns,
                                                          const Fingerprint& fp,
                                                          std::span<const BlockPut> blocks,
                                                          bool save,
                                                          std::shared_ptr<Upload>* deferred) {
  WMBT_RETURN_IF_ERROR(CheckPutBlocksArgs(ns, blocks));
  // An L2 that takes no more writes until reopened (Health) would fail every upload: say so now,
  // rather than accept blocks that can never be published.
  WMBT_RETURN_IF_ERROR(l2_->Health());
  const uint32_t ns_id = NamespaceId(ns);
  const uint64_t now_us = clock_->WallMicros();
  std::vector<ContentHash> hashes;
  hashes.reserve(blocks.size());
  MetaWriteBatch batch;
  // A large put has the CPUs to itself: its uploads, and any others submitted meanwhile, wait
  // until it returns (upload_gate.h). A save does not close the gate: its publish follows at once
  // (its uploads may still park behind another thread's large put; its publish releases them).
  const bool gated = !save && (IsLargePut(blocks) || Buggify("put.gate_small"));
  const GatedPut gated_put(gated ? &upload_gate_ : nullptr);
  // Hash the bytes we keep (put_copy.h): copies into recycled buffers, shared with the helper
  // thread, or the caller's handed-over buffers.
  CopiedBlocks copied = CopyAndHashBlocks(
      blocks, CopyTarget{payload_pool_, options_.payload_allocator, ns}, copy_helper_.get());
  counters_.put_blocks_helped += copied.helped;
  // Held until the blocks are pending: a put of keys or bytes being forgotten as abandoned comes
  // wholly before or after that (its L1 records, its upload slot).
  std::shared_lock<std::shared_mutex> no_forgetting(forget_mu_);
  for (size_t i = 0; i < blocks.size(); ++i) {
    const BlockPut& b = blocks[i];
    BufferSlice slice = std::move(copied.payloads[i]);
    const ContentHash hash = copied.hashes[i];
    const uint64_t length = slice.size;
    hashes.push_back(hash);
    const CacheKey ck{ns_id, hash};
    // Pinned until its upload is durable (C1): the upload reads these bytes.
    BufferSlice cached = cache_.Insert(ck, std::move(slice), /*pin=*/true);
    const bool defer = save && i + 1 == blocks.size();
    auto up = StartUpload(ck, std::string(ns), std::move(cached), defer);
    if (defer) *deferred = std::move(up);
    if (!save) {
      batch.Put(meta_records::PendingKey(ns, fp, b.key),
                meta_records::EncodePending({b.parent, hash, static_cast<uint32_t>(length), now_us}));
    }
    counters_.puts++;
    counters_.put_bytes += length;
  }
  // Written through before returning (not fsynced: unpublished blocks need no durability). A
  // save writes none: its publish follows at once, and a put never published needs no record.
  const Status recorded = save ? Status::Ok() : l1_->Write(batch, /*sync=*/false);
  {
    // Pending even when L1 refused them (the put then fails): their uploads have started and
    // hold the payloads pinned, which only forgetting an abandoned put (or a publish) releases.
    std::lock_guard<std::mutex> g(pending_mu_);
    for (size_t i = 0; i < blocks.size(); ++i) {
      AddPendingLocked(PendingKey{ns_id, fp, blocks[i].key},
                       PendingBlock{blocks[i].parent, hashes[i],
                                    static_cast<uint32_t>(blocks[i].bytes().size()), now_us,
                                    /*in_l1=*/!save && recorded.ok()});
    }
  }
  no_forgetting.unlock();
  WMBT_RETURN_IF_ERROR(recorded);
  MaybeScheduleEviction(/*urgent=*/false);
  MaybeScheduleRefresh();
  MaybeForgetAbandonedPuts();
  return hashes;
}

std::shared_ptr<StoreImpl::Upload> StoreImpl::StartUpload(const CacheKey& ck, std::string ns,
                                                          BufferSlice payload, bool defer) {
  std::shared_ptr<Upload> up;
  {
    std::lock_guard<std::mutex> g(upload_mu_);
    auto& slot = uploads_[ck];
    // A finished upload is not trusted for a new put: orphan GC (this store's or another host's)
    // may have deleted the blob since, once no put awaited it. The new upload costs a HEAD when
    // the blob is still there (and is then re-checked after the publish, R4).
    const bool finished_ok = slot && slot->done.done() && slot->done.status().ok();
    if (slot && !finished_ok && !RetireFailedUpload(ck, *slot)) {
      cache_.Unpin(ck);  // the live upload holds its own pin
      return nullptr;
    }
    slot = std::make_shared<Upload>();
    slot->ns = std::move(ns);
    slot->bytes = payload.size;
    slot->payload = std::move(payload);
    up = slot;
  }
  if (!defer) SubmitUpload(ck, up);
  return up;
}

void StoreImpl::SubmitUpload(const CacheKey& ck, const std::shared_ptr<Upload>& up) {
  upload_gate_.Submit(CacheKeyHash{}(ck), up->bytes, [this, ck, up] {
    if (!up->started.exchange(true)) RunUpload(ck, up);  // else a publisher ran it
  });
}

void StoreImpl::RunUpload(const CacheKey& ck, const std::shared_ptr<Upload>& up) {
  Status s = UploadBlob(up->ns, ck.hash, up->payload, &up->reused);
  if (s.ok() && Buggify("upload.lost_ok")) s = Status::Unavailable("buggify: answer lost");
  if (std::string note; !s.ok() && upload_warnings_.Take(clock_->NowMicros(), &note)) {
    Log(LogLevel::kWarn, "uploading blob " + ck.hash.ToHex() + " of namespace " + up->ns +
                             " to L2 failed: " + s.ToString() +
                             "; its bytes stay in RAM and the publish that needs them tries again" +
                             note);
  }
  // Write-through to the disk cache once L2 has the blob (a get after the RAM cache let it go
  // is then served locally); queued, so the publish awaiting this upload does not wait for it.
  if (s.ok()) FillDiskCacheLater(up->ns, ck.hash, up->payload);
  if (s.ok()) {
    // Kept only to retry a failed upload — or, for a blob found already in L2, for the
    // publisher's re-check (R4): orphan GC may delete it before the head names it, and the RAM
    // cache may have dropped the bytes by then. Held until a publish consumes the upload.
    if (!up->reused) DropUploadPayload(*up);
    up->durable_us.store(clock_->WallMicros(), std::memory_order_relaxed);
    cache_.Unpin(ck);  // durable: evictable from RAM now
  }
  up->done.Set(std::move(s));
}

Status StoreImpl::UploadBlob(const std::string& ns, const ContentHash& hash,
                             const BufferSlice& slice, bool* reused) {
  const ByteView payload = slice.view();
  const std::string key = layout::BlobKey(options_.l2_prefix, ns, hash);
  // Compressed here, off the put's path, when first about to be sent (not for a blob found
  // already there); raw when that saves too little.
  bool encoded = false;
  BufferSlice packed;
  ByteView stored = payload;
  layout::EnvelopeHeader header{};
  auto encode = [&] {
    if (encoded) return;
    encoded = true;
    if (options_.block_compress_level > 0) {
      packed = layout::CompressIfWorthIt(payload, options_.block_compress_level);
      if (packed.owner) stored = packed.view();
    }
    header = layout::EncodeEnvelopeHeader(
        layout::EnvelopeKind::kBlob,
        {packed.owner ? layout::Codec::kZstd : layout::Codec::kRaw, payload.size(), stored.size(),
         hash});
  };
  // Content addressed: an existing blob with this name holds these bytes — unless it is damaged
  // (a size or header that does not fit, layout::BlobObjectFits): then it is replaced, since any
  // writer of this name writes these bytes. A large blob is looked for first, so that one already
  // there is not sent again; a small one is put at once (if absent), which costs a round trip or
  // a name lookup less when it is new, and is looked at when the put finds it there.
  auto put_blob = [&](bool replace) -> Status {
    encode();
    // Not durable on return: PublishChain's head put (durable) is ordered after it, so the head
    // is never durable without this blob (ObjectStore::PutOptions).
    auto put = l2_->Put(key, {ByteView(header.bytes, sizeof header.bytes), stored},
                        PutOptions{replace ? PutMode::kOverwrite : PutMode::kIfAbsent, {},
                                   /*durable_on_return=*/false,
                                   packed.owner ? packed.owner : slice.owner});
    if (put.status().IsConflict()) return put.status();
    counters_.l2_puts++;
    if (!put.ok()) return put.status();
    counters_.l2_put_bytes += layout::kEnvelopeHeaderBytes + stored.size();
    if (packed.owner) {
      counters_.l2_blobs_compressed++;
      counters_.l2_compress_saved_bytes += payload.size() - stored.size();
    }
    return put.status();
  };
  // Whether the blob found there stands for this put; an error (NotFound: collected since) is
  // left to the next put to meet.
  auto found_fits = [&]() -> Result<bool> {
    WMBT_ASSIGN_OR_RETURN(ObjectInfo head, l2_->Head(key));
    return layout::BlobObjectFits(*l2_, key, head.size, payload.size(), hash);
  };
  bool damaged = false;  // found and not fitting: every later attempt replaces it
  Status last;
  for (uint32_t attempt = 0; attempt < limits::kUploadRetriesMax; ++attempt) {
    if (attempt > 0) {
      clock_->SleepMicros(limits::kRetryBackoffMicros
                          << std::min(attempt, limits::kRetryBackoffDoublingsMax));
    }
    if (attempt == 0 && payload.size() >= limits::kBlobBytesLookedForFirst) {
      auto fits = found_fits();
      if (fits.ok() && *fits) {
        if (reused) *reused = true;
        return Status::Ok();
      }
      damaged = fits.ok();
    }
    last = put_blob(damaged);
    if (last.IsConflict()) {
      // There (another writer, or our own earlier attempt whose answer was lost): these bytes,
      // unless damaged. Gone again since (collected): the next attempt puts it.
      auto fits = found_fits();
      if (fits.ok() && *fits) {
        if (reused) *reused = true;
        return Status::Ok();
      }
      damaged = fits.ok();
      last = damaged ? put_blob(/*replace=*/true) : fits.status();
    }
    if (last.ok()) return last;
    counters_.l2_errors++;
    if (last.code() != Code::kUnavailable && !last.IsNotFound()) break;
  }
  return last.WithContext("uploading blob " + key);
}

void StoreImpl::DropUploadPayload(Upload& up) {
  // Under upload_mu_: BlobsNotWrittenHere copies the payload of whatever upload of the hash the
  // table holds, which may be a newer one still running.
  std::lock_guard<std::mutex> g(upload_mu_);
  up.payload = BufferSlice{};
}

bool StoreImpl::RetireFailedUpload(const CacheKey& ck, Upload& old) {
  if (!old.done.done() || old.done.status().ok()) return false;
  // try_lock: a publisher retrying it holds retry_mu and then takes upload_mu_ (held here).
  std::unique_lock<std::mutex> retry(old.retry_mu, std::try_to_lock);
  if (!retry.owns_lock() || old.retried_ok || old.superseded) return false;
  old.superseded = true;
  old.payload = BufferSlice{};
  cache_.Unpin(ck);  // its pin; the new upload holds its own
  return true;
}

Status StoreImpl::EnsureDurable(std::string_view ns, const CacheKey& ck) {
  // Bounded: each pass either finishes or follows a newer upload that replaced a failed one.
  for (int pass = 0; pass < 4; ++pass) {
    std::shared_ptr<Upload> up;
    {
      std::lock_guard<std::mutex> g(upload_mu_);
      auto it = uploads_.find(ck);
      if (it != uploads_.end()) up = it->second;
    }
    if (!up) break;
    // Not started yet (queued behind other work, parked in the upload gate, or deferred by
    // SaveChain): run it here rather than wait for a thread to pick it up.
    if (!up->started.exchange(true)) RunUpload(ck, up);
    WMBT_RETURN_IF_ERROR(executor_->Await(up->done));
    Status s = up->done.status();
    if (s.ok()) return s;
    // The background upload failed; the payload is still pinned in RAM: try once more here.
    std::lock_guard<std::mutex> retry(up->retry_mu);
    if (up->retried_ok) return Status::Ok();  // another publisher's retry made it durable
    if (up->superseded) continue;             // a later put of these bytes uploads them anew
    WMBT_RETURN_IF_ERROR(UploadBlob(std::string(ns), ck.hash, up->payload, &up->reused));
    up->durable_us.store(clock_->WallMicros(), std::memory_order_relaxed);
    up->retried_ok = true;
    if (!up->reused) DropUploadPayload(*up);  // as in RunUpload: R4 may need it
    cache_.Unpin(ck);
    std::lock_guard<std::mutex> g(upload_mu_);
    auto it = uploads_.find(ck);
    if (it != uploads_.end() && it->second == up) uploads_.erase(it);  // not a newer upload
    return Status::Ok();
  }
  // Put by another publish that already consumed the upload, or learned from L2: check L2.
  auto head = l2_->Head(layout::BlobKey(options_.l2_prefix, ns, ck.hash));
  if (head.ok()) return Status::Ok();
  if (head.status().IsNotFound()) {
    return Status::FailedPrecondition("blob " + ck.hash.ToHex() +
                                      " is not in L2 and not being uploaded: put the block again");
  }
  return head.status();
}

Result<std::vector<ChainEntry>> StoreImpl::CollectChain(std::string_view ns, uint32_t ns_id,
                                                        const Fingerprint& fp, const BlockKey& tip,
                                                        IndexedPrefix* indexed,
                                                        std::shared_ptr<PublishClaim>* claim) {
  // Walk from the tip through blocks put in this process; the first key that is not pending must
  // already be indexed (a published prefix), or be the root's zero parent.
  std::vector<ChainEntry> reversed;
  std::unordered_set<BlockKey, EngineKeyHash> seen;  // parent links put by callers may loop
  BlockKey cur = tip;
  {
    std::lock_guard<std::mutex> g(pending_mu_);
    while (!cur.IsZero()) {
      auto it = pending_.find(PendingKey{ns_id, fp, cur});
      if (it == pending_.end()) break;
      if (!seen.insert(cur).second) {
        return Status::FailedPrecondition("the parent links from tip " + ShortHex(tip) +
                                          " form a cycle at block " + cur.ToHex() +
                                          ": put these blocks again with their real parents");
      }
      if (reversed.size() >= limits::kChainBlocksMax) {
        return Status::InvalidArgument("chain from tip " + ShortHex(tip) + " is longer than " +
                                       std::to_string(limits::kChainBlocksMax) + " blocks");
      }
      reversed.push_back(ChainEntry{cur, it->second.hash, it->second.length});
      cur = it->second.parent;
    }
    // Claimed while still under the lock: no forgetting in between (store_abandoned_puts.cc).
    std::vector<PublishClaim::Claimed> claimed;
    for (const ChainEntry& e : reversed) claimed.push_back({PendingKey{ns_id, fp, e.key}, e.hash});
    *claim = std::make_shared<PublishClaim>(this, std::move(claimed));
  }
  std::vector<ChainEntry> entries;
  if (!cur.IsZero()) {
    {
      std::shared_lock<std::shared_mutex> g(index_mu_);
      entries = index_.PathTo(ns, fp, cur);
      // The usual witness: the chain the prefix was published as (a chain's id is its tip's key
      // when an engine extends its own saves). Its head in L2 is read before the head write and
      // looked up after it (store_indexed_prefix.cc).
      const std::optional<ChainInfo> as_chain = index_.GetChain(ns, fp, cur);
      if (as_chain && as_chain->tip == cur && as_chain->length == entries.size()) {
        indexed->witness = cur;
      }
    }
    if (!indexed->witness && !entries.empty()) {  // a fork from the middle of a chain
      std::lock_guard<std::mutex> g(fork_hints_mu_);
      auto hint = fork_hints_.find(ForkPoint{PendingKey{ns_id, fp, cur}, entries.size()});
      if (hint != fork_hints_.end()) indexed->witness = hint->second;
    }
    if (entries.empty()) {
      const std::string which =
          cur == tip ? "the tip itself" : "an ancestor of tip " + ShortHex(tip);
      return Status::FailedPrecondition(
          "block " + cur.ToHex() + " (" + which +
          ") is neither put-and-unpublished nor in a published chain of namespace " +
          std::string(ns) + " with this fingerprint: put it (and its ancestors) again");
    }
    std::vector<CacheKey> blobs;
    for (const ChainEntry& e : entries) blobs.push_back(CacheKey{ns_id, e.hash});
    (*claim)->KeepBlobs(std::move(blobs));  // from this store's orphan GC, at least
  }
  if (entries.size() + reversed.size() > limits::kChainBlocksMax) {
    return Status::InvalidArgument("chain longer than " +
                                   std::to_string(limits::kChainBlocksMax) + " blocks");
  }
  indexed->length = entries.size();
  entries.insert(entries.end(), reversed.rbegin(), reversed.rend());
  return entries;
}

std::optional<ChainInfo> StoreImpl::IndexedHead(std::string_view ns, const Fingerprint& fp,
                                                const ChainId& chain_id) {
  std::shared_lock<std::shared_mutex> g(index_mu_);
  return index_.GetChain(ns, fp, chain_id);
}

Result<std::optional<StoreImpl::HeadBase>> StoreImpl::WriteBase(std::string_view ns,
                                                                const Fingerprint& fp,
                                                                const ChainId& chain_id) {
  std::optional<ChainInfo> indexed = IndexedHead(ns, fp, chain_id);
  if (!indexed) return std::optional<HeadBase>();
  WMBT_ASSIGN_OR_RETURN(
      std::optional<std::string> etag,
      L2EtagIfDigest(layout::ChainKey(options_.l2_prefix, ns, fp, chain_id), indexed->etag_digest));
  if (etag) return std::optional<HeadBase>(HeadBase{*indexed, std::move(*etag)});
  return SyncHeadFromL2(ns, fp, chain_id);  // L0 lags: another host changed or removed the head
}

Result<std::optional<std::string>> StoreImpl::L2EtagIfDigest(const std::string& key,
                                                             uint64_t etag_digest) {
  auto now = l2_->Head(key);
  if (now.ok()) {
    if (index_.EtagDigest(now->etag) != etag_digest) return std::optional<std::string>();
    return std::optional<std::string>(std::move(now->etag));
  }
  if (now.status().IsNotFound()) return std::optional<std::string>();
  counters_.l2_errors++;
  return now.status().WithContext("looking up chain head " + key);
}

Result<std::optional<StoreImpl::HeadBase>> StoreImpl::SyncHeadFromL2(std::string_view ns,
                                                                     const Fingerprint& fp,
                                                                     const ChainId& chain_id) {
  // L0 follows L2 even when L1 cannot record it, as after a publish: the caller (a publish that
  // lost a race, an eviction) goes on from what L2 holds, and the next open or refresh repairs L1.
  auto unrecorded = [&](const Status& s) {
    Log(LogLevel::kWarn, "learned chain " + chain_id.ToHex() +
                             "'s head from L2 but could not record it in L1: " + s.ToString());
  };
  WMBT_ASSIGN_OR_RETURN(auto now, ReadHead(ns, fp, chain_id));
  if (!now) {
    if (Status s = RemoveHeadLocally(ns, fp, chain_id); !s.ok()) unrecorded(s);
    return std::optional<HeadBase>();
  }
  auto& [etag, head] = *now;
  MetaWriteBatch b;
  WMBT_RETURN_IF_ERROR(InstallHead(head, etag, layout::EncodeChainHead(head), &b));
  if (Status s = RecordInstalledHead(head.ns, b); !s.ok()) unrecorded(s);
  return std::optional<HeadBase>(HeadBase{ChainInfo{chain_id, head.version, index_.EtagDigest(etag),
                                                    head.tip(), uint32_t(head.entries.size())},
                                          std::move(etag)});
}

Status StoreImpl::StaleConflict(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id,
                                const ChainInfo* base, uint64_t expected_version,
                                ChainState* current) {
  counters_.publish_conflicts++;
  const uint64_t version = base ? base->version : 0;
  if (current) {
    *current =
        ChainState{std::string(ns),        fp, chain_id, base ? base->tip : BlockKey{}, version,
                   base ? base->length : 0};
  }
  return Status::Conflict("chain " + chain_id.ToHex() + " is at version " +
                          std::to_string(version) + ", expected " +
                          std::to_string(expected_version) + ": rebase on its tip");
}

Result<StoreImpl::PublishPlan> StoreImpl::PreparePublish(std::string_view ns, const Fingerprint& fp,
                                                         const ChainId& chain_id,
                                                         const BlockKey& tip) {
  PublishPlan plan;
  plan.ns_id = NamespaceId(ns);
  WMBT_ASSIGN_OR_RETURN(plan.entries,
                        CollectChain(ns, plan.ns_id, fp, tip, &plan.indexed, &plan.claim));
  plan.claim->HoldChain(chain_id);
  const size_t indexed = plan.indexed.length;

  // The durability barrier: every blob of the chain is in L2 before the head names it. The
  // indexed prefix was published before, so its blobs are while a head names them (checked
  // below, and again after the head write: store_indexed_prefix.cc). Uploads of this chain's new
  // blocks parked behind another put (upload_gate.h) start now, in parallel, rather than one by
  // one here.
  std::vector<uint64_t> gate_ids;
  for (size_t i = indexed; i < plan.entries.size(); ++i) {
    gate_ids.push_back(CacheKeyHash{}(CacheKey{plan.ns_id, plan.entries[i].hash}));
  }
  upload_gate_.Release(gate_ids);
  for (size_t i = indexed; i < plan.entries.size(); ++i) {
    if (test_hooks::publish_skips_durability_barrier.load(std::memory_order_relaxed)) break;
    WMBT_RETURN_IF_ERROR(EnsureDurable(ns, CacheKey{plan.ns_id, plan.entries[i].hash}));
  }
  WMBT_RETURN_IF_ERROR(
      CheckIndexedPrefix(ns, fp, plan.ns_id, chain_id, plan.entries, &plan.indexed));
  // Buggify: a check for abandoned puts and an orphan GC pass land between the durability
  // barrier and the head write, as they may from another thread. The claim keeps this chain's
  // pending blocks, and so their blobs, until the head names them.
  if (Buggify("publish.collect_inside")) {
    (void)ForgetAbandonedPuts(clock_->WallMicros());  // a failed L1 write: reopen forgets them
    (void)GcPass();                                   // a failed pass logs and counts itself
  }
  // R4: bytes of reused blobs, in case GC deletes one before the head names it.
  plan.reused = BlobsNotWrittenHere(plan.ns_id, plan.entries, indexed, &plan.copies);
  return plan;
}

Result<uint64_t> StoreImpl::PublishChain(std::string_view ns, const Fingerprint& fp,
                                         const ChainId& chain_id, const BlockKey& tip,
                                         std::optional<uint64_t> expected_version,
                                         ChainState* current) {
  WMBT_RETURN_IF_ERROR(ValidateNamespace(ns));
  if (chain_id.IsZero() || tip.IsZero()) {
    return Status::InvalidArgument("PublishChain: chain id and tip must not be the zero key");
  }
  if (expected_version && !l2_->HonoursConditionalWrites()) {
    // Emulated, a compare-and-swap would be a HEAD then a PUT: two writers could both succeed.
    return Status::FailedPrecondition(
        "PublishChain with an expected version: " + l2_->Describe() +
        " does not honour conditional writes (see the warning at open), so a compare-and-swap "
        "cannot be made atomic; publish without an expected version (last writer wins) or use "
        "an S3 server that supports If-Match and If-None-Match (docs/s3.md)");
  }
  if (expected_version) {
    // A stale compare-and-swap fails fast, before waiting for any upload.
    std::unique_lock<std::mutex> stripe = LockChain(chain_id);
    if (VersionOf(IndexedHead(ns, fp, chain_id)) != *expected_version) {
      // L0 may lag other hosts.
      WMBT_ASSIGN_OR_RETURN(std::optional<HeadBase> now, SyncHeadFromL2(ns, fp, chain_id));
      if (VersionOf(now) != *expected_version) {
        return StaleConflict(ns, fp, chain_id, now ? &now->chain : nullptr, *expected_version,
                             current);
      }
    }
  }
  WMBT_ASSIGN_OR_RETURN(PublishPlan plan, PreparePublish(ns, fp, chain_id, tip));
  const uint32_t ns_id = plan.ns_id;

  layout::ChainHead head;
  head.ns = std::string(ns);
  head.fp = fp;
  head.chain_id = chain_id;
  head.entries = std::move(plan.entries);
  const std::string key = layout::ChainKey(options_.l2_prefix, ns, fp, chain_id);

  std::unique_lock<std::mutex> stripe = LockChain(chain_id);
  std::optional<HeadBase> base;
  // Takes the head L2 has as the base of the next write.
  auto learn = [&](Result<std::optional<HeadBase>> now) -> Status {
    if (!now.ok() && now.status().code() == Code::kCorruption && !expected_version) {
      // A damaged head must not block its chain forever: last writer wins over it (its version
      // is unknown, so numbering restarts). A CAS caller gets the Corruption instead.
      Log(LogLevel::kWarn, now.status().message() + "; replacing it");
      WMBT_ASSIGN_OR_RETURN(ObjectInfo damaged, l2_->Head(key));
      base = HeadBase{ChainInfo{chain_id, 0, 0, BlockKey{}, 0}, damaged.etag};
      return Status::Ok();
    }
    WMBT_ASSIGN_OR_RETURN(base, std::move(now));
    return Status::Ok();
  };
  // Optimistic: start from what L0 knows and let the conditional write tell us if it is stale.
  if (!Buggify("publish.stale_base")) {  // else as if L0 had not seen the chain yet
    WMBT_RETURN_IF_ERROR(learn(WriteBase(ns, fp, chain_id)));
  }
  bool confirmed = false;  // base was read from L2 (not just L0) since the last write attempt
  for (uint32_t attempt = 0; attempt < kPublishAttemptsMax; ++attempt) {
    if (expected_version && VersionOf(base) != *expected_version) {
      if (confirmed) {
        return StaleConflict(ns, fp, chain_id, base ? &base->chain : nullptr, *expected_version,
                             current);
      }
      WMBT_ASSIGN_OR_RETURN(base, SyncHeadFromL2(ns, fp, chain_id));
      confirmed = true;
      continue;
    }
    head.version = VersionOf(base) + 1;
    head.published_us = NextPublishMicros();
    const std::string encoded = layout::EncodeChainHead(head);
    PutOptions opts = base ? PutOptions{PutMode::kIfMatch, base->etag}
                           : PutOptions{PutMode::kIfAbsent, {}};
    counters_.l2_puts++;
    auto put = l2_->Put(key, {AsBytes(encoded)}, opts);
    if (put.ok()) {
      // Committed: the head is in L2. What follows only updates caches of it, so a failure there
      // is logged (open and refresh repair L1 from L2), never reported as a failed publish.
      counters_.l2_put_bytes += encoded.size();
      if (Status s = ApplyHead(head, *put, encoded); !s.ok()) {
        Log(LogLevel::kWarn, "published " + key + " but could not record it in L1: " +
                                 s.ToString());
      }
      counters_.publishes++;
      stripe.unlock();  // the rest touches other chains' stripes
      if (Status s = ForgetPublished(ns, ns_id, fp, head.entries); !s.ok()) {
        Log(LogLevel::kWarn, "published " + key + " but could not clear its pending records: " +
                                 s.ToString());
      }
      // Before compaction, which may delete the witness.
      WMBT_RETURN_IF_ERROR(RecheckIndexedPrefix(ns, fp, ns_id, chain_id, head.entries, plan.indexed)
                               .WithContext("published chain head " + key));
      if (chain_id == tip) CompactRedundantHeads(ns, fp, head.entries);
      WMBT_RETURN_IF_ERROR(ReverifyReusedBlobs(ns, ns_id, plan.reused, plan.copies)
                               .WithContext("published chain head " + key));
      return head.version;
    }
    if (!put.status().IsConflict()) {
      counters_.l2_errors++;
      return put.status().WithContext("publishing chain head " + key);
    }
    // Someone else changed the head since we looked: learn the current one, then retry (LWW) or
    // report the conflict (CAS) on the next pass.
    WMBT_RETURN_IF_ERROR(learn(SyncHeadFromL2(ns, fp, chain_id)));
    confirmed = true;
  }
  return Status::Unavailable("publishing chain head " + key + ": lost " +
                             std::to_string(kPublishAttemptsMax) + " races in a row; retry");
}

std::vector<ContentHash> StoreImpl::BlobsNotWrittenHere(uint32_t ns_id,
                                                        const std::vector<ChainEntry>& entries,
                                                        size_t from, ReusedCopies* copies) {
  // Called after the durability barrier: every upload of these entries has finished. An entry
  // with no upload in this table was put by an earlier process (reloaded pending record) or by an
  // earlier publish here; either way this publish cannot vouch for it.
  // An upload made durable long ago (a put whose publish came much later) may have been collected
  // as an orphan since: only one well inside the grace is vouched for.
  const uint64_t now_us = clock_->WallMicros();
  auto young = [&](const Upload& up) {
    const uint64_t at = up.durable_us.load(std::memory_order_relaxed);
    return at > 0 && now_us >= at && now_us - at < options_.gc_grace_us / 2;
  };
  std::vector<ContentHash> out;
  std::lock_guard<std::mutex> g(upload_mu_);
  for (size_t i = from; i < entries.size(); ++i) {
    auto it = uploads_.find(CacheKey{ns_id, entries[i].hash});
    if (it != uploads_.end() && it->second->done.done() && it->second->done.status().ok() &&
        !it->second->reused && young(*it->second)) {
      continue;  // this process created the object moments ago: younger than any GC grace
    }
    if (it != uploads_.end() && it->second->payload.owner) {
      copies->emplace(entries[i].hash, it->second->payload);
    }
    out.push_back(entries[i].hash);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Status StoreImpl::ReverifyReusedBlobs(std::string_view ns, uint32_t ns_id,
                                      const std::vector<ContentHash>& hashes,
                                      const ReusedCopies& copies) {
  // R4 (gc/orphan_gc.h): an orphan collector may have deleted a blob between our finding it in L2
  // and our head naming it, after its own re-check of the heads. Only a check after the head
  // write can see that; the bytes usually still sit in the RAM cache.
  // One HEAD each: in parallel when the first took a round trip's time (S3), else one after the
  // other (a local L2 answers from memory; tasks would cost more than they save).
  std::vector<Result<ObjectInfo>> heads(hashes.size(), Status::Internal("not asked"));
  auto head_of = [&](size_t i) {
    heads[i] = l2_->Head(layout::BlobKey(options_.l2_prefix, ns, hashes[i]));
  };
  if (!hashes.empty()) {
    const uint64_t start_us = clock_->NowMicros();
    head_of(0);
    const bool remote = clock_->NowMicros() - start_us >= kRoundTripUs;
    WMBT_RETURN_IF_ERROR(ParallelFor(executor_, hashes.size() - 1, remote ? kParallelHeads : 0,
                                     [&](size_t i) { head_of(i + 1); }));
  }
  for (size_t i = 0; i < hashes.size(); ++i) {
    const ContentHash& hash = hashes[i];
    const std::string key = layout::BlobKey(options_.l2_prefix, ns, hash);
    const Result<ObjectInfo>& head = heads[i];
    if (head.ok()) continue;
    if (!head.status().IsNotFound()) return head.status().WithContext("re-checking blob " + key);
    std::optional<BufferSlice> bytes = cache_.Lookup(CacheKey{ns_id, hash});
    if (!bytes) {
      if (auto c = copies.find(hash); c != copies.end()) bytes = c->second;
    }
    if (!bytes) {
      return Status::FailedPrecondition(
          "blob " + hash.ToHex() + " was deleted from L2 (by orphan GC) while this publish "
          "relied on it, and its bytes are no longer in memory: put the block again and publish "
          "again");
    }
    Log(LogLevel::kWarn, "blob " + key + " was deleted by orphan GC during a publish naming it; "
                         "uploading it again");
    WMBT_RETURN_IF_ERROR(UploadBlob(std::string(ns), hash, *bytes));
  }
  return Status::Ok();
}

Status StoreImpl::ForgetPublished(std::string_view ns, uint32_t ns_id, const Fingerprint& fp,
                                  const std::vector<ChainEntry>& entries) {
  // The put this head published matches the key, its bytes and its parent: the key may have been
  // put again with other bytes or another parent (a publish through its indexed block, or a put
  // racing this publish), and that put still waits for a publish of its own.
  auto published = [&](size_t i, const PendingBlock& block) {
    const BlockKey parent = i ? entries[i - 1].key : BlockKey{};
    return block.hash == entries[i].hash && block.parent == parent;
  };
  // A put's L1 record shares its key with the put it replaces, and is written before the put is
  // pending: deleting a published put's record may delete a newer put's. Puts write their records
  // under forget_mu_ shared, so the deletes are decided and written under it held exclusively.
  // A save writes no records (in_l1 false) and needs no lock.
  bool any_in_l1 = false;
  {
    std::lock_guard<std::mutex> g(pending_mu_);
    for (size_t i = 0; i < entries.size() && !any_in_l1; ++i) {
      auto it = pending_.find(PendingKey{ns_id, fp, entries[i].key});
      any_in_l1 = it != pending_.end() && it->second.in_l1 && published(i, it->second);
    }
  }
  std::unique_lock<std::shared_mutex> no_puts(forget_mu_, std::defer_lock);
  if (any_in_l1) no_puts.lock();
  MetaWriteBatch done;
  {
    std::lock_guard<std::mutex> g(pending_mu_);
    for (size_t i = 0; i < entries.size(); ++i) {
      const PendingKey key{ns_id, fp, entries[i].key};
      auto it = pending_.find(key);
      if (it == pending_.end() || !published(i, it->second)) continue;
      if (it->second.in_l1) {
        // Put (again) since the first look: left pending, as if it came after this publish.
        if (!no_puts.owns_lock()) continue;
        done.Delete(meta_records::PendingKey(ns, fp, entries[i].key));
      }
      ErasePendingLocked(key);
    }
  }
  {
    std::lock_guard<std::mutex> g(upload_mu_);
    for (const ChainEntry& e : entries) {
      auto it = uploads_.find(CacheKey{ns_id, e.hash});
      if (it != uploads_.end() && it->second->done.done() && it->second->done.status().ok()) {
        uploads_.erase(it);
      }
    }
  }
  return done.empty() ? Status::Ok() : l1_->Write(done, /*sync=*/false);
}

void StoreImpl::CompactRedundantHeads(std::string_view ns, const Fingerprint& fp,
                                      const std::vector<ChainEntry>& entries) {
  // A head named by its own tip whose entries are a strict prefix of this chain adds nothing a
  // lookup could not find here: delete it so heads stay linear in distinct blocks (docs/layout.md).
  for (size_t i = 0; i + 1 < entries.size(); ++i) {
    const ChainId& older = entries[i].key;
    std::vector<ChainEntry> old_entries;
    {
      std::shared_lock<std::shared_mutex> g(index_mu_);
      auto info = index_.GetChain(ns, fp, older);
      if (!info || info->tip != older || info->length != i + 1) continue;
      old_entries = OwnEntriesLocked(ns, fp, older);
    }
    // Its own bytes, not L0's (which are the newest publish's, I8): a head naming other bytes
    // for a key than this chain is no prefix of it.
    if (!std::equal(old_entries.begin(), old_entries.end(), entries.begin())) continue;
    Status s = DeleteRedundantHead(ns, fp, older, old_entries);
    if (!s.ok()) {
      Log(LogLevel::kWarn, "compacting redundant head " + older.ToHex() + ": " + s.ToString());
      continue;
    }
    counters_.heads_compacted++;
  }
}

Status StoreImpl::DeleteRedundantHead(std::string_view ns, const Fingerprint& fp,
                                      const ChainId& chain_id,
                                      std::span<const ChainEntry> expected) {
  std::unique_lock<std::mutex> stripe = LockChain(chain_id);
  // Re-read under the chain's stripe: if anyone re-published it since we looked, it is no longer
  // the redundant head we meant to delete. (Another host could still replace it between this
  // read and the delete; that head names the same prefix by construction — its id is its tip key
  // — so the longer chain still serves every lookup it could.)
  WMBT_ASSIGN_OR_RETURN(auto now, ReadHead(ns, fp, chain_id));
  if (!now) return RemoveHeadLocally(ns, fp, chain_id);
  if (!std::ranges::equal(now->second.entries, expected)) {
    return Status::Conflict("head changed since it was found redundant");
  }
  WMBT_RETURN_IF_ERROR(l2_->Delete(layout::ChainKey(options_.l2_prefix, ns, fp, chain_id)));
  return RemoveHeadLocally(ns, fp, chain_id);
}

Status StoreImpl::PutSidecar(std::string_view ns, const Fingerprint& fp, const BlockKey& tip,
                             ByteView bytes) {
  WMBT_RETURN_IF_ERROR(CheckPutSidecarArgs(ns, bytes.size()));
  // The bytes written are the bytes hashed: a private copy, hashed as it is made (as PutBlocks
  // does, store/put_copy.h). The caller's may change meanwhile — a shared-memory client's
  // request area, which the daemon reads in place and the client can rewrite at any moment —
  // and hashing them and then writing them would store a sidecar that fails its own check.
  const std::shared_ptr<Buffer> copy = Buffer::Allocate(bytes.size());
  const ContentHash hash = CopyAndHashPayload(bytes, copy->data());
  bytes = copy->view();
  const auto header = layout::EncodeSidecarHeader(ns, fp, tip, bytes.size(), hash);
  const std::string key = layout::SidecarKey(options_.l2_prefix, ns, fp, tip);
  counters_.l2_puts++;
  auto put = l2_->Put(key, {ByteView(header.bytes, sizeof header.bytes), bytes}, PutOptions{});
  if (!put.ok()) {
    counters_.l2_errors++;
    return put.status().WithContext("writing sidecar " + key);
  }
  counters_.l2_put_bytes += sizeof header.bytes + bytes.size();
  ledger_.SidecarPut(ns, fp, tip, sizeof header.bytes + bytes.size());
  MaybeScheduleEvictionFor(ns);
  return Status::Ok();
}

}  // namespace wombatkv
