#include "gc/orphan_gc.h"

#include <algorithm>

#include "base/check.h"
#include "base/limits.h"
#include "env/parallel_for.h"
#include "layout/envelope.h"
#include "layout/object_keys.h"

namespace wombatkv::gc {
namespace {

void AddReferences(const HeadRead& read, HashSet* refs) {
  if (!read.head) return;
  for (const ChainEntry& e : read.head->entries) refs->insert(e.hash);
}

bool OlderFirst(const OrphanBlob& a, const OrphanBlob& b) {
  if (a.age_us != b.age_us) return a.age_us > b.age_us;
  return a.key < b.key;
}

}  // namespace

std::vector<OrphanBlob> FindOrphans(const NamespaceListing& listing, const HashSet& referenced,
                                    uint64_t now_us) {
  std::vector<OrphanBlob> out;
  for (const ListedBlob& b : listing.blobs) {
    if (referenced.count(b.hash)) continue;
    OrphanBlob o{listing.ns, b.info.key, b.hash, b.info.size, 0, false};
    if (b.info.modified_us > 0) {
      o.age_known = true;
      o.age_us = now_us > b.info.modified_us ? now_us - b.info.modified_us : 0;
    }
    out.push_back(std::move(o));
  }
  return out;
}

OrphanCollector::OrphanCollector(ObjectStore* l2, Clock* clock, GcOptions options)
    : l2_(l2), clock_(clock), options_(std::move(options)) {
  WMBT_CHECK(l2_ != nullptr && clock_ != nullptr);
  if (!options_.hold_dir.empty()) {
    WMBT_CHECK(options_.hold_fs != nullptr);
    holds_ = std::make_unique<HoldFiles>(options_.hold_fs, options_.hold_dir);
  }
}

OrphanCollector::~OrphanCollector() {
  if (holds_) holds_->Close();
}

Status OrphanCollector::TakeLeftovers(GcReport* report) {
  if (!holds_ || leftovers_taken_) return Status::Ok();
  WMBT_ASSIGN_OR_RETURN(std::vector<HoldFiles::Leftover> leftovers,
                        holds_->TakeLeftovers(&report->problems));
  leftovers_taken_ = true;
  // Re-checked at the end of this pass as this pass's own deletes are, against every head of
  // their namespace (none has been read for them).
  std::map<std::string, std::vector<Held>> by_ns;
  uint64_t bytes = 0;
  std::set<std::string> other_prefix;
  for (HoldFiles::Leftover& l : leftovers) {
    const OrphanBlob& o = l.blob.orphan;
    if (o.key != layout::BlobKey(options_.l2_prefix, o.ns, o.hash)) {
      // Re-checked against this prefix's heads, it would look unnamed whatever names it.
      if (other_prefix.insert(l.file->path()).second) {
        report->problems.push_back(
            "the hold file " + l.file->path() + " holds blobs of another L2 prefix (" + o.key +
            "): kept, not re-checked (run the collector with that prefix to re-check them)");
        other_prefix_holds_.push_back(l.file);
      }
      continue;
    }
    const bool intact =
        layout::DecodeVerified(layout::EnvelopeKind::kBlob, l.blob.object, o.hash, o.key).ok();
    bytes += l.blob.object->size();
    std::string ns = o.ns;
    Held held{std::move(l.blob), std::move(l.file), intact};
    held.leftover = true;
    by_ns[ns].push_back(std::move(held));
    report->recovered++;
  }
  for (auto& [ns, held] : by_ns) {
    deferred_.push_back(Deferred{ns, std::make_shared<KnownHeads>(), std::move(held)});
  }
  deferred_bytes_ += bytes;
  return Status::Ok();
}

void OrphanCollector::RetryRestores(GcReport* report) {
  std::vector<Held> still;
  for (Held& h : unrestored_) {
    auto put =
        l2_->Put(h.blob.orphan.key, {h.blob.object->view()}, PutOptions{PutMode::kIfAbsent, {}});
    if (put.ok()) {
      report->restored++;
    } else if (!put.status().IsConflict()) {
      still.push_back(std::move(h));
    }
  }
  unrestored_ = std::move(still);
}

Result<GcReport> OrphanCollector::RunPass(const ScanProgressFn& progress) {
  GcReport report;
  RetryRestores(&report);
  WMBT_CHECK(deferred_.empty());
  if (Status s = TakeLeftovers(&report); !s.ok()) return s;
  pass_roots_.clear();
  Status scanned;
  if (!options_.only_ns.empty()) {
    WMBT_RETURN_IF_ERROR(ValidateNamespace(options_.only_ns));
    auto listing = ListNamespace(l2_, options_.l2_prefix, options_.only_ns, progress);
    scanned = listing.ok() ? CollectNamespace(*listing, &report) : listing.status();
  } else {
    scanned = ScanL2(
        l2_, options_.l2_prefix,
        [&](NamespaceListing&& listing) -> Status {
          if (!listing.ns_valid) return Status::Ok();  // strays only: never ours to delete
          return CollectNamespace(listing, &report);
        },
        nullptr, progress);
  }
  // The candidates of the namespaces listed, even if a later one failed (as without a lag).
  const Status deleted = DeleteConfirmed(&report);
  // R3: every delete made is re-checked, whatever failed after it.
  const Status rechecked = RecheckDeferred(&report);
  WMBT_RETURN_IF_ERROR(scanned);
  WMBT_RETURN_IF_ERROR(deleted);
  WMBT_RETURN_IF_ERROR(rechecked);
  if (options_.only_ns.empty() && !(options_.stop && options_.stop())) {
    // A whole scan: heads of namespaces that are gone leave the cache.
    std::erase_if(head_cache_, [&](const auto& entry) {
      auto it = pass_roots_.upper_bound(entry.first);
      return it == pass_roots_.begin() || !entry.first.starts_with(*std::prev(it));
    });
  }
  std::sort(report.removed.begin(), report.removed.end(), OlderFirst);
  return report;
}

Status OrphanCollector::CollectNamespace(const NamespaceListing& listing, GcReport* report) {
  if (options_.stop && options_.stop()) return Status::Ok();
  const std::string& ns = listing.ns;
  ++report->namespaces;
  report->blobs += listing.blobs.size();
  HashSet refs;
  // Head key → ETag read (R3 re-reads only changes).
  auto known = std::make_shared<KnownHeads>();
  // With cache_heads, a head listed with the ETag it had when an earlier pass read it names the
  // same blobs: only the others are read.
  const std::string root = layout::NamespaceRoot(options_.l2_prefix, ns);
  pass_roots_.insert(root);
  std::map<std::string, CachedHead> cached;  // this namespace's heads, as of this pass
  std::vector<ListedHead> to_read;
  for (const ListedHead& h : listing.heads) {
    auto it = options_.cache_heads ? head_cache_.find(h.info.key) : head_cache_.end();
    if (it == head_cache_.end() || it->second.etag != h.info.etag) {
      to_read.push_back(h);
      continue;
    }
    (*known)[h.info.key] = it->second.etag;
    refs.insert(it->second.hashes.begin(), it->second.hashes.end());
    cached.insert(head_cache_.extract(it));
    report->heads_unchanged++;
  }
  WMBT_ASSIGN_OR_RETURN(std::vector<HeadRead> reads,
                        ReadHeads(l2_, ns, to_read, options_.executor));
  report->heads += reads.size();
  const HeadRead* unreadable = nullptr;
  const ListedHead* unreadable_at = nullptr;
  for (size_t i = 0; i < reads.size(); ++i) {
    const HeadRead& r = reads[i];
    if (r.state == HeadRead::State::kGone) continue;
    (*known)[to_read[i].info.key] = r.etag;
    if (r.state == HeadRead::State::kUnreadable && !unreadable) {
      unreadable = &r;
      unreadable_at = &to_read[i];
    }
    AddReferences(r, &refs);
    if (options_.cache_heads && r.head) {
      CachedHead& c = cached[to_read[i].info.key];
      c.etag = r.etag;
      for (const ChainEntry& e : r.head->entries) c.hashes.push_back(e.hash);
    }
  }
  if (options_.cache_heads) {  // heads no longer listed leave the cache
    head_cache_.erase(head_cache_.lower_bound(root), head_cache_.lower_bound(root + '~'));
    head_cache_.merge(cached);
  }

  const uint64_t now_us = clock_->WallMicros();
  std::vector<OrphanBlob> orphans = FindOrphans(listing, refs, now_us);
  // R1 without modification times: age since this collector first saw the blob unreferenced.
  // Sightings of this namespace are replaced by this pass's (a blob referenced again starts over).
  std::map<std::string, uint64_t> seen;
  for (OrphanBlob& o : orphans) {
    if (o.age_known) continue;
    auto it = first_seen_.find(o.key);
    const uint64_t first = it == first_seen_.end() ? now_us : it->second;
    seen[o.key] = first;
    o.age_us = now_us - std::min(now_us, first);
  }
  first_seen_.erase(first_seen_.lower_bound(root), first_seen_.lower_bound(root + '~'));
  first_seen_.merge(seen);

  std::vector<OrphanBlob> expired;
  for (const OrphanBlob& o : orphans) {
    report->orphans++;
    report->orphan_bytes += o.bytes;
    // An object of unknown age seen for the first time has age 0: it waits a grace period.
    if (o.age_us >= options_.grace_us) expired.push_back(o);
  }
  std::sort(expired.begin(), expired.end(), OlderFirst);
  // Failed deletes of earlier passes that are not candidates any more (referenced, or gone) are
  // done with; the others are retried below (R5).
  if (!failed_.empty()) {
    std::unordered_set<std::string> candidates;
    for (const OrphanBlob& o : expired) candidates.insert(o.key);
    for (auto it = failed_.begin(); it != failed_.end();) {
      const bool done_with = it->starts_with(root) && !candidates.count(*it);
      it = done_with ? failed_.erase(it) : std::next(it);
    }
  }
  for (const OrphanBlob& o : expired) {
    report->expired++;
    report->expired_bytes += o.bytes;
  }
  if (unreadable) {
    // R2: a head we cannot read may name any of these blobs.
    report->namespaces_skipped++;
    report->problems.push_back("namespace " + ns + ": chain head " + unreadable_at->info.key +
                               " cannot be read (" + unreadable->error.message() +
                               "), so what it references is unknown: no blob of this namespace "
                               "is deleted; run `wombatkv audit --repair`");
    return Status::Ok();
  }
  if (options_.dry_run) {
    report->removed.insert(report->removed.end(), expired.begin(), expired.end());
    return Status::Ok();
  }
  if (expired.empty()) return Status::Ok();
  if (options_.list_lag_us == 0) return DeleteExpired(ns, known, expired, report);
  // R1 with a lagging listing: deleted only once a listing made after the lag shows no head
  // naming them (DeleteConfirmed), together with the other namespaces' candidates.
  candidates_count_ += expired.size();
  candidates_.push_back(Candidates{ns, known, std::move(expired)});
  if (candidates_count_ >= kCandidatesMax) return DeleteConfirmed(report);
  return Status::Ok();
}

Status OrphanCollector::DeleteConfirmed(GcReport* report) {
  if (candidates_.empty()) return Status::Ok();
  std::vector<Candidates> all = std::move(candidates_);
  candidates_.clear();
  candidates_count_ = 0;
  if (options_.stop && options_.stop()) return Status::Ok();
  WaitListLag(report);
  for (Candidates& c : all) {
    if (options_.stop && options_.stop()) break;
    HashSet refs;
    bool unreadable = false;
    if (Status s = ReadChangedHeads(c.ns, c.known.get(), &refs, &unreadable); !s.ok()) {
      return s.WithContext("listing the chain heads of namespace " + c.ns +
                           " again before deleting its orphans (none was deleted)");
    }
    if (unreadable) {  // R2, for a head that appeared (or changed) since the first listing
      report->namespaces_skipped++;
      report->problems.push_back("namespace " + c.ns +
                                 ": a chain head listed late cannot be read, so what it "
                                 "references is unknown: no blob of this namespace is deleted; "
                                 "run `wombatkv audit --repair`");
      continue;
    }
    std::erase_if(c.expired, [&](const OrphanBlob& o) {
      if (!refs.count(o.hash)) return false;
      report->named_late++;
      return true;
    });
    WMBT_RETURN_IF_ERROR(DeleteExpired(c.ns, c.known, c.expired, report));
  }
  return Status::Ok();
}

void OrphanCollector::WaitListLag(GcReport* report) {
  if (options_.list_lag_us == 0) return;
  if (options_.on_list_lag_wait) options_.on_list_lag_wait(options_.list_lag_us);
  clock_->SleepMicros(options_.list_lag_us);
  report->list_lag_waited_us += options_.list_lag_us;
}

Status OrphanCollector::DeleteExpired(const std::string& ns,
                                      const std::shared_ptr<KnownHeads>& known,
                                      const std::vector<OrphanBlob>& expired, GcReport* report) {
  // Candidates go in chunks (TakeChunk): read whole, kept in the hold directory if there is one,
  // deleted — each read and delete on its own task when there is an executor — then handled in
  // order on this thread. `keep` and `stop` are asked as each chunk is formed; a chunk ends where
  // the batch's bytes would pass batch_bytes_max, and every delete of a batch is done before its
  // re-check (R3).
  std::vector<Held> batch;
  uint64_t batch_bytes = 0;
  size_t next = 0;
  bool bound_reached = false;
  const size_t width = options_.executor ? kParallelDeletes : 1;
  while (next < expired.size() && !bound_reached) {
    if (options_.stop && options_.stop()) break;
    std::vector<const OrphanBlob*> chunk;
    uint64_t chunk_bytes = 0;
    while (next < expired.size() && chunk.size() < width &&
           (chunk.empty() || batch_bytes + chunk_bytes < options_.batch_bytes_max)) {
      const uint64_t attempted = report->deleted + report->restored + report->delete_failures;
      if (options_.deletes_per_pass_max > 0 &&
          attempted + batch.size() + chunk.size() >= options_.deletes_per_pass_max) {
        bound_reached = true;
        break;
      }
      const OrphanBlob& o = expired[next++];
      if (options_.keep && options_.keep(ns, o.hash)) {
        report->kept++;
        continue;
      }
      if (failed_.erase(o.key)) report->retried++;
      chunk.push_back(&o);
      chunk_bytes += o.bytes;
    }
    std::vector<Taken> taken(chunk.size());
    std::shared_ptr<HoldFiles::File> hold;
    // Not taken on error: what was not read, or not deleted, counts as failed below.
    const Status took = TakeChunk(chunk, &taken, &hold);
    for (size_t i = 0; i < chunk.size(); ++i) {
      const OrphanBlob& o = *chunk[i];
      Taken& t = taken[i];
      if (!t.object.ok()) {
        if (t.object.status().IsNotFound()) continue;  // deleted by someone else meanwhile
        report->delete_failures++;
        failed_.insert(o.key);
        report->problems.push_back("reading " + o.key + " before deleting it: " +
                                   t.object.status().ToString() + " (retried at the next pass)");
        continue;
      }
      if (t.oversized) {
        // Larger than any blob: the bytes we could hold would not restore it whole (R3).
        report->problems.push_back(o.key + " is " + std::to_string(t.object->object_size) +
                                   " bytes, more than a blob can be: not deleted; see `wombatkv "
                                   "audit`");
        continue;
      }
      if (!t.deleted.ok()) {
        report->delete_failures++;
        failed_.insert(o.key);
        report->problems.push_back("deleting " + o.key + ": " + t.deleted.ToString() +
                                   " (retried at the next pass)");
      }
      batch_bytes += t.object->bytes->size();
      batch.push_back(
          Held{HeldBlob{o, std::move(t.object->bytes)}, hold, t.intact, !t.deleted.ok()});
    }
    if (!took.ok()) {
      (void)Defer(ns, known, &batch, batch_bytes, /*now=*/false, report);  // re-checked anyway
      return took;
    }
    if (deferred_bytes_ + batch_bytes >= options_.batch_bytes_max) {
      WMBT_RETURN_IF_ERROR(Defer(ns, known, &batch, batch_bytes, /*now=*/true, report));
      batch_bytes = 0;
    }
  }
  return Defer(ns, known, &batch, batch_bytes, /*now=*/false, report);
}

Status OrphanCollector::Defer(const std::string& ns, const std::shared_ptr<KnownHeads>& known,
                              std::vector<Held>* held, uint64_t bytes, bool now, GcReport* report) {
  if (!held->empty()) {
    deferred_.push_back(Deferred{ns, known, std::move(*held)});
    deferred_bytes_ += bytes;
    held->clear();
  }
  if (now || deferred_bytes_ >= options_.batch_bytes_max) return RecheckDeferred(report);
  return Status::Ok();
}

Status OrphanCollector::RecheckDeferred(GcReport* report) {
  if (deferred_.empty()) return Status::Ok();
  // A head written before the deletes but not yet listed would escape the re-check (and its
  // publisher's R4 check ran before the deletes): wait until every such head is listed.
  WaitListLag(report);
  std::vector<Deferred> batches = std::move(deferred_);
  deferred_.clear();
  deferred_bytes_ = 0;
  Status first;
  for (Deferred& d : batches) {
    Status s = RecheckAndRestore(d.ns, d.known.get(), &d.held, report);
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}

OrphanCollector::Taken OrphanCollector::Read(const OrphanBlob& o) const {
  Taken t;
  // R3: keep the bytes until the re-check has shown that no new head names the blob.
  t.object = l2_->Get(o.key, 0, layout::kEnvelopeHeaderBytes + limits::kBlockBytesMax + 1);
  if (!t.object.ok()) return t;
  t.oversized = t.object->bytes->size() != t.object->object_size;
  if (t.oversized) return t;
  t.intact =
      layout::DecodeVerified(layout::EnvelopeKind::kBlob, t.object->bytes, o.hash, o.key).ok();
  return t;
}

Status OrphanCollector::TakeChunk(const std::vector<const OrphanBlob*>& chunk,
                                  std::vector<Taken>* taken,
                                  std::shared_ptr<HoldFiles::File>* hold) {
  // Each phase on the executor's tasks when there is one (two round trips per blob, which
  // against S3 made a pass of a few thousand orphans take minutes one at a time).
  auto each = [&](const std::function<void(size_t)>& fn) -> Status {
    if (!options_.executor) {
      for (size_t i = 0; i < chunk.size(); ++i) fn(i);
      return Status::Ok();
    }
    return ParallelFor(options_.executor, chunk.size(), kParallelDeletes - 1, fn);
  };
  WMBT_RETURN_IF_ERROR(each([&](size_t i) { (*taken)[i] = Read(*chunk[i]); }));
  if (holds_) {
    // On disk before the first delete: a crash from here on leaves them to the next collector.
    std::vector<HeldBlob> blobs;
    for (size_t i = 0; i < chunk.size(); ++i) {
      if ((*taken)[i].to_delete()) blobs.push_back(HeldBlob{*chunk[i], (*taken)[i].object->bytes});
    }
    if (!blobs.empty()) {
      std::vector<const HeldBlob*> refs;
      for (const HeldBlob& b : blobs) refs.push_back(&b);
      auto written = holds_->Write(refs);
      if (!written.ok()) {
        const Status kept =
            written.status().WithContext("keeping the bytes of orphans to delete in " +
                                         holds_->dir() + " (nothing is deleted until they can be)");
        for (Taken& t : *taken) t.deleted = kept;
        return kept;
      }
      *hold = std::move(written).value();
    }
  }
  return each([&](size_t i) {
    Taken& t = (*taken)[i];
    if (t.to_delete()) t.deleted = l2_->Delete(chunk[i]->key);
  });
}

Status OrphanCollector::ReadChangedHeads(const std::string& ns, KnownHeads* known, HashSet* refs,
                                         bool* unreadable) {
  WMBT_ASSIGN_OR_RETURN(std::vector<ListedHead> heads, ListHeads(l2_, options_.l2_prefix, ns));
  std::vector<ListedHead> changed;
  for (ListedHead& h : heads) {
    auto it = known->find(h.info.key);
    if (it == known->end() || it->second != h.info.etag) changed.push_back(std::move(h));
  }
  WMBT_ASSIGN_OR_RETURN(std::vector<HeadRead> reads,
                        ReadHeads(l2_, ns, changed, options_.executor));
  for (size_t i = 0; i < reads.size(); ++i) {
    const HeadRead& r = reads[i];
    if (r.state == HeadRead::State::kGone) continue;
    if (r.state == HeadRead::State::kUnreadable) *unreadable = true;
    (*known)[changed[i].info.key] = r.etag;
    AddReferences(r, refs);
  }
  return Status::Ok();
}

Status OrphanCollector::RecheckAndRestore(const std::string& ns, KnownHeads* known,
                                          std::vector<Held>* held, GcReport* report) {
  if (held->empty()) return Status::Ok();
  HashSet refs;
  bool unreadable = false;
  const Status failed = ReadChangedHeads(ns, known, &refs, &unreadable);
  // The re-check failed or found a head it cannot read: keep them all.
  const bool restore_all = !failed.ok() || unreadable;
  for (Held& h : *held) {
    const OrphanBlob& o = h.blob.orphan;
    if (!restore_all && !refs.count(o.hash)) {
      if (h.delete_failed) continue;  // counted as a failure; retried at the next pass
      // A leftover still in L2 was never deleted: a later pass collects it as any orphan.
      if (h.leftover && !l2_->Head(o.key).status().IsNotFound()) continue;
      report->deleted++;
      report->freed_bytes += o.bytes;
      report->removed.push_back(o);
      continue;
    }
    if (!h.intact) {
      report->problems.push_back(o.key +
                                 " was corrupt when deleted and a new chain head "
                                 "names it: not put back (its publisher re-uploads it, R4; "
                                 "run `wombatkv audit`)");
      continue;
    }
    // Conflict: the publisher (R4) or another writer put it back first; same name, same bytes.
    // A head names it: worth a few tries now (bytes kept for a later pass die with the process
    // unless they are in a hold directory).
    auto put = l2_->Put(o.key, {h.blob.object->view()}, PutOptions{PutMode::kIfAbsent, {}});
    for (uint64_t backoff_us = 50'000; backoff_us <= 400'000 &&
                                       put.status().code() == Code::kUnavailable;
         backoff_us *= 2) {
      clock_->SleepMicros(backoff_us);
      put = l2_->Put(o.key, {h.blob.object->view()}, PutOptions{PutMode::kIfAbsent, {}});
    }
    if (h.delete_failed && put.status().IsConflict()) continue;  // the delete was not applied
    if (put.ok() || put.status().IsConflict()) {
      report->restored++;
    } else {
      report->problems.push_back("restoring " + o.key +
                                 " (a chain head published during this pass may name it): " +
                                 put.status().ToString() + "; retried at the next pass");
      unrestored_.push_back(std::move(h));
    }
  }
  held->clear();
  if (!failed.ok()) {
    return failed.WithContext("re-checking the chain heads of namespace " + ns +
                              " after deleting orphans (they were put back)");
  }
  return Status::Ok();
}

}  // namespace wombatkv::gc
