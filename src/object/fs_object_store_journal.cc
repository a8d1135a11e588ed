// FsObjectStore's write-ahead journal (journaled mode only; docs/architecture.md,
// "Durability on the local-directory L2"), its packed objects and its checkpoints.
// Invariants J1-J6: fs_object_store_impl.h.
#include "object/fs_object_store_impl.h"

namespace wombatkv::fs_internal {
namespace {

constexpr std::string_view kRewriteMarkerText = "rewrite the journaled objects at the next open\n";

}  // namespace

Status FsObjectStore::OpenJournal(const FsJournalOptions& options) {
  jopts_ = options;
  WMBT_RETURN_IF_ERROR(fs_->CreateDirs(root_).WithContext("creating " + Describe()));
  auto lock = fs_->LockFile(owner_lock_path_, "pid " + std::to_string(getpid()));
  if (lock.status().code() == Code::kPermissionDenied) {
    return lock.status().WithContext("this user may not write the local L2 " + Describe());
  }
  if (!lock.ok()) {
    return lock.status().WithContext("the local L2 " + Describe() +
                                     " is journaled by another process; stop it first");
  }
  owner_lock_ = std::move(lock).value();
  // Opened before this process writes anything into the root, so that every write-back error
  // of what it writes is reported to the syncs that retire journal files (FileSystemSyncHandle).
  WMBT_ASSIGN_OR_RETURN(sync_handle_, fs_->OpenSyncHandle(root_));
  clock_ = options.clock ? options.clock : RealClock();
  auto marker = fs_->Stat(rewrite_marker_path_);
  const bool rewrite = !marker.status().IsNotFound();  // an error reading it: rewrite too
  ReplayOptions replay_options;
  replay_options.rewrite_same_bytes = rewrite;
  WMBT_ASSIGN_OR_RETURN(replay_options.applied_through,
                        ReadJournalCheckpoint(fs_, checkpoint_marker_path_));
  replay_options.cut = fs_->Stat(failed_marker_path_).ok();
  if (replay_options.cut) {
    WMBT_ASSIGN_OR_RETURN(replay_options.cut_after,
                          ReadJournalCheckpoint(fs_, failed_marker_path_));
  }
  WMBT_ASSIGN_OR_RETURN(auto replay, ReplayJournal(fs_, root_, replay_options, &packed_));
  if (replay_options.cut) {
    WMBT_RETURN_IF_ERROR(DropUnsyncedTail(replay).WithContext("recovering " + Describe()));
  }
  WMBT_RETURN_IF_ERROR(CheckSyncedRecordsRead(replay, replay_options.applied_through));
  // Replayed files, and files named before the crash whose bytes were already right, become
  // durable before the checkpoint says so.
  if (Status s = SyncRoot(); !s.ok()) return s.WithContext("recovering " + Describe());
  // LSNs never go back while the checkpoint marker stands, even with every journal file gone
  // (a record at or below the marker would be taken for applied).
  const uint64_t last_lsn = std::max(replay.last_lsn, replay_options.applied_through);
  WMBT_RETURN_IF_ERROR(WriteCheckpointMarker(last_lsn).WithContext("recovering " + Describe()));
  // Last: while a journal file that needs it is left, so is the marker.
  WMBT_RETURN_IF_ERROR(ClearRewriteMarker().WithContext("recovering " + Describe()));
  ReserveFailedMarkerSpace();
  for (const JournalSegment& seg : replay.segments) {
    segments_[seg.first_lsn] = Segment{seg.path, seg.bytes, /*checkpointed=*/true};
  }
  // A newest file without a record (a crash right after it was begun) goes: the new journal
  // file continues the LSNs, perhaps under the same name.
  if (!segments_.empty() && segments_.rbegin()->second.bytes == 0) {
    Status s = fs_->DeleteFile(segments_.rbegin()->second.path);
    if (!s.ok() && !s.IsNotFound()) return s.WithContext("recovering " + Describe());
    segments_.erase(std::prev(segments_.end()));
  }
  if (!replay.snapshot_set_aside.empty()) {
    Warn("packed-index snapshot of " + Describe() +
         " set aside, every journal file read: " + replay.snapshot_set_aside);
  }
  // A new snapshot when the journal read after the one used (if any) makes it due.
  snapshot_bytes_ = replay.snapshot_bytes;
  snapshot_through_ = replay.snapshot_through;
  for (const JournalSegment& seg : replay.segments) {
    if (seg.first_lsn > replay.snapshot_through) retired_since_snapshot_ += seg.bytes;
  }
  if (replay.snapshot_through != last_lsn && SnapshotDue()) WriteIndexSnapshot(last_lsn);
  checkpoints_ = NewThreadPoolExecutor(1, "wmbt-l2-ckpt", /*nice=*/5);
  WMBT_ASSIGN_OR_RETURN(
      journal_, Journal::Create(fs_, root_, last_lsn + 1, jopts_.journal_file_bytes,
                                [this](const std::string& path, uint64_t last, uint64_t bytes) {
                                  Retired(path, last, bytes);
                                },
                                clock_));
  // A failure sticks in broken_, which every caller's SyncThrough then returns.
  journal_->SetOnSynced([this] { (void)ApplySynced(); });
  journal_->SetOnFailed([this](const Status& s) {
    maybe_unhealthy_.store(true, std::memory_order_release);
    MarkJournalFailed();
    if (jopts_.failed) jopts_.failed(s);
  });
  // Big rounds' PutAsync completions run on the first thread while the leader syncs the next
  // round (Journal::SetCompletionExecutor); a stream of rounds for them is led by the second
  // thread, not by the threads that put.
  completions_ = NewThreadPoolExecutor(1, "wmbt-l2-done");
  syncer_ = NewThreadPoolExecutor(1, "wmbt-l2-sync");
  journal_->SetCompletionExecutor(completions_.get());
  journal_->SetSyncExecutor(syncer_.get());
  // The next journal file is made on the checkpoint thread, which drains before the journal goes.
  journal_->SetNextFileExecutor(checkpoints_.get());
  segments_[journal_->file_first_lsn()] = Segment{journal_->file_path(), 0, false};
  WMBT_RETURN_IF_ERROR(CollectSegments().WithContext("recovering " + Describe()));
  return Status::Ok();
}

Result<FsObjectStore::Version> FsObjectStore::CurrentLocked(std::unique_lock<std::mutex>& lock,
                                                            std::string_view key,
                                                            const std::string& path,
                                                            bool file_form) {
  auto it = inflight_.find(path);
  while (it != inflight_.end() && it->second.direct) {
    direct_done_.wait(lock);
    it = inflight_.find(path);
  }
  WMBT_RETURN_IF_ERROR(broken_);
  const PackedEntry* packed = it == inflight_.end() ? packed_.Find(key) : nullptr;
  if (it != inflight_.end() || packed) {
    Version v =
        packed ? Version{true, PackedEtag(*packed), 0, false}
               : Version{!it->second.deleted, it->second.etag, it->second.lsn, it->second.file};
    // A packed version may have a file beside it (FileBesidePackedLocked). The packed version
    // stands; the file goes with the next version (remove_file).
    if (file_form) {
      auto info = fs_->Stat(path);
      if (info.ok() && info->is_dir) return DirectoryInTheWay(key);
      if (info.ok() && packed) v.file = true;
      if (info.status().IsNotFound()) FoundEmptyLocked(path);
    } else if (packed) {
      v.file = FileBesidePackedLocked(path);
    }
    return v;
  }
  if (KnownEmptyLocked(path)) return Version{};
  auto info = fs_->Stat(path);
  if (!info.ok()) {
    if (!info.status().IsNotFound()) return info.status();
    FoundEmptyLocked(path);
    FoundEmptyBesideLocked(path);
    return Version{};
  }
  if (info->is_dir) return DirectoryInTheWay(key);
  return Version{true, EtagOf(*info), 0, true};
}

Status FsObjectStore::CheckCondition(std::string_view key, const Version& current,
                                     const PutOptions& options, bool* exists) {
  if (options.mode == PutMode::kIfAbsent && current.exists) {
    *exists = true;
    return Status::Conflict("object " + std::string(key) + " already exists");
  }
  if (options.mode == PutMode::kIfMatch && !current.exists) {
    return Status::Conflict("object " + std::string(key) + " does not exist (if-match " +
                            options.if_match + ")");
  }
  if (options.mode == PutMode::kIfMatch && current.etag != options.if_match) {
    return Status::Conflict("object " + std::string(key) + " has etag " + current.etag + ", not " +
                            options.if_match);
  }
  return Status::Ok();
}

Result<std::string> FsObjectStore::FinishPut(std::string_view key, const std::string& path,
                                             const PutOptions& options, bool exists, uint64_t lsn,
                                             bool sync_now, std::string etag,
                                             uint64_t* sync_later) {
  if (exists) {
    // The caller may act on "it exists" as on a durable object, so it waits for the winner
    // (in flight here, or named by the un-journaled path). A deferred caller need not: the
    // winner's record precedes every record the caller appends later (J1), so the caller's
    // next durable put covers it, and until then Get/Head here wait for it.
    if (options.durable_on_return) {
      if (lsn > 0) WMBT_RETURN_IF_ERROR(SyncThrough(lsn));
      WMBT_RETURN_IF_ERROR(syncs_.AwaitDurable(PathOf(ParentOf(key)), path));
    }
    return Status::Conflict("object " + std::string(key) + " already exists");
  }
  if (sync_now && sync_later) {
    *sync_later = lsn;
  } else if (sync_now) {
    WMBT_RETURN_IF_ERROR(SyncThrough(lsn));
  } else if (jopts_.write_behind_bytes > 0) {
    // Deferred: once a bulk of records waits, write them now (no sync) so that the disk works
    // while the caller goes on, and the durable put that follows finds them on their way.
    WMBT_RETURN_IF_ERROR(journal_->WriteBehind(jopts_.write_behind_bytes));
  }
  return etag;
}

bool FsObjectStore::DeferredBacklogFull() const {
  return actions_.size() >= kDeferredNamesMax || journal_->unsynced_bytes() >= kDeferredBytesMax;
}

Result<std::string> FsObjectStore::PackedPut(std::string_view key, const std::string& path,
                                             const std::vector<ByteView>& parts, size_t bytes,
                                             const PutOptions& options, uint64_t* sync_later) {
  PackedEntry entry;
  entry.size = static_cast<uint32_t>(bytes);
  entry.modified_us = clock_->WallMicros();
  entry.record_bytes = static_cast<uint32_t>(kJournalRecordHeaderBytes + key.size() +
                                             kPackedValuePrefixBytes + bytes);
  std::vector<ByteView> value;
  value.reserve(parts.size() + 1);
  std::array<uint8_t, kPackedValuePrefixBytes> prefix;
  value.push_back(ByteView(prefix.data(), prefix.size()));
  value.insert(value.end(), parts.begin(), parts.end());
  bool exists = false;
  bool sync_now = options.durable_on_return;
  std::string etag;
  {
    std::unique_lock<std::mutex> lock(name_mu_);
    WMBT_ASSIGN_OR_RETURN(Version current, CurrentLocked(lock, key, path, /*file_form=*/false));
    Status allowed = CheckCondition(key, current, options, &exists);
    if (exists) {
      entry.lsn = current.lsn;
    } else {
      WMBT_RETURN_IF_ERROR(allowed);
      // Every append happens under name_mu_, so the next LSN is known: it is the etag id.
      entry.lsn = entry.etag_id = journal_->appended_lsn() + 1;
      prefix = EncodePackedPrefix(entry.etag_id, entry.modified_us);
      Action a{entry.lsn, std::string(key), nullptr, /*packed=*/true, current.file};
      WMBT_CHECK(journal_->Append(JournalOp::kPutPacked, key, value, &a.batch_offset,
                                  /*value_damaged=*/false, options.value_owner) == entry.lsn);
      a.entry = entry;
      etag = PackedEtag(entry);
      inflight_[path] = InFlight{entry.lsn, false, etag, false, false};
      actions_.push_back(std::move(a));
      sync_now = sync_now || DeferredBacklogFull();
    }
  }
  return FinishPut(key, path, options, exists, entry.lsn, sync_now, std::move(etag), sync_later);
}

Result<std::string> FsObjectStore::JournaledPut(std::string_view key, const std::string& dir,
                                                const std::string& path,
                                                const std::vector<ByteView>& parts,
                                                const PutOptions& options) {
  std::unique_ptr<PendingFile> file;
  for (int attempt = 0; attempt < kPutAttemptsMax && !file; ++attempt) {
    Status s = fs_->CreateDirs(dir);
    if (s.ok()) {
      auto written = fs_->WriteTemp(path, parts, /*sync=*/false,
                                    /*later_than_current=*/options.mode != PutMode::kIfAbsent);
      if (written.ok()) {
        file = std::move(written).value();
        break;
      }
      s = written.status();
    }
    if (!s.IsNotFound()) return s;  // NotFound: a delete removed the directory; again
  }
  if (!file) return Status::Unavailable("its directory kept disappearing under concurrent deletes");
  std::string etag = EtagOf(file->info());
  uint64_t lsn = 0;
  bool exists = false;
  bool sync_now = options.durable_on_return;
  {
    std::unique_lock<std::mutex> lock(name_mu_);
    WMBT_ASSIGN_OR_RETURN(Version current, CurrentLocked(lock, key, path, /*file_form=*/true));
    Status allowed = CheckCondition(key, current, options, &exists);
    if (exists) {
      lsn = current.lsn;
    } else {
      WMBT_RETURN_IF_ERROR(allowed);
      lsn = journal_->Append(JournalOp::kPut, key, parts, nullptr, /*value_damaged=*/false,
                             options.value_owner);
      inflight_[path] = InFlight{lsn, false, etag, false, true};
      Action a{lsn, std::string(key), std::move(file)};
      actions_.push_back(std::move(a));
      sync_now = sync_now || DeferredBacklogFull();
    }
  }
  return FinishPut(key, path, options, exists, lsn, sync_now, std::move(etag));
}

bool FsObjectStore::FileBesidePackedLocked(const std::string& path) {
  if (KnownEmptyLocked(path)) return false;
  auto info = fs_->Stat(path);
  if (info.status().IsNotFound()) FoundEmptyLocked(path);
  return info.ok() && !info->is_dir;
}

Status FsObjectStore::JournaledDelete(std::string_view key) {
  const std::string path = PathOf(key);
  uint64_t lsn = 0;
  {
    std::unique_lock<std::mutex> lock(name_mu_);
    auto current = CurrentLocked(lock, key, path, /*file_form=*/false);
    if (!current.ok()) {
      WMBT_RETURN_IF_ERROR(broken_);  // whatever its code
      // A directory at the path is not an object: absent, as for the plain store.
      return current.status().code() == Code::kFailedPrecondition ? Status::Ok() : current.status();
    }
    if (!current->exists) return Status::Ok();
    lsn = journal_->Append(JournalOp::kDelete, key, {});
    inflight_[path] = InFlight{lsn, true, {}, false, false};
    Action a{lsn, std::string(key), nullptr, /*packed=*/false, current->file};
    actions_.push_back(std::move(a));
  }
  return SyncThrough(lsn).WithContext("delete " + std::string(key));
}

Status FsObjectStore::AwaitJournaled(std::string_view key, const std::string& path) {
  if (!journal_) return Status::Ok();
  uint64_t lsn = 0;
  {
    std::unique_lock<std::mutex> lock(name_mu_);
    for (;;) {
      WMBT_RETURN_IF_ERROR(broken_);
      auto it = inflight_.find(path);
      if (it == inflight_.end()) return Status::Ok();
      if (!it->second.direct) {
        if (it->second.deleted) return NotFound(key);
        lsn = it->second.lsn;
        break;
      }
      // A direct put in progress (J4): its file may be in place before its kExternal record is
      // appended, and the record replay goes by may be a delete. A reader acting on the file
      // now (a Head that lets a publish reuse the blob) would be ordered before that record, so
      // its own durable write would not cover it. Wait until the put is recorded.
      direct_done_.wait(lock);
    }
  }
  return SyncThrough(lsn);
}

Status FsObjectStore::BeforeDirectPut(std::string_view key, const std::string& path,
                                      PutOptions* options) {
  if (options->durable_on_return) WMBT_RETURN_IF_ERROR(SyncThrough(journal_->appended_lsn()));
  std::unique_lock<std::mutex> lock(name_mu_);
  while (true) {
    WMBT_RETURN_IF_ERROR(broken_);
    auto it = inflight_.find(path);
    if (it == inflight_.end()) break;
    if (it->second.direct) {  // another large put of the key: one at a time
      direct_done_.wait(lock);
      continue;
    }
    const uint64_t lsn = it->second.lsn;
    lock.unlock();
    WMBT_RETURN_IF_ERROR(SyncThrough(lsn));
    lock.lock();
  }
  if (const PackedEntry* e = packed_.Find(key)) {
    // Applied, so durable: a Conflict here may be acted on at once.
    bool exists = false;
    WMBT_RETURN_IF_ERROR(
        CheckCondition(key, Version{true, PackedEtag(*e), 0, false}, *options, &exists));
    options->mode = PutMode::kOverwrite;
    options->if_match.clear();
  }
  InFlight reserved;
  reserved.direct = true;
  inflight_[path] = std::move(reserved);
  return Status::Ok();
}

Status FsObjectStore::AfterDirectPut(std::string_view key, const std::string& path, bool written,
                                     const PutOptions& options) {
  uint64_t lsn = 0;
  bool over_packed = false;
  {
    std::lock_guard<std::mutex> g(name_mu_);
    if (written) {
      lsn = journal_->Append(JournalOp::kExternal, key, {});
      over_packed = packed_.Find(key) != nullptr;
      // The packed version goes once the record is synced, applied in LSN order as every
      // version is (J3) — not later on this thread: a checkpoint's index snapshot taken between
      // the sync and that erase named the packed version while its journal no longer held the
      // record that replaces it, so a reopen served the old bytes (a review, session 57).
      if (over_packed) {
        actions_.push_back(Action{lsn, std::string(key), nullptr, /*packed=*/false,
                                  /*remove_file=*/false});
      }
    }
    if (!over_packed) inflight_.erase(path);
  }
  Status s;
  if (over_packed) {
    s = SyncThrough(lsn);  // applies the action above
    std::lock_guard<std::mutex> g(name_mu_);
    inflight_.erase(path);
  }
  direct_done_.notify_all();
  if (!s.ok() || over_packed) return s;
  return written && options.durable_on_return ? SyncThrough(lsn) : Status::Ok();
}

Status FsObjectStore::SyncThrough(uint64_t lsn) {
  WMBT_RETURN_IF_ERROR(journal_->AwaitSynced(lsn));
  // The round's leader applied it already (Journal::SetOnSynced), unless the store broke:
  // then ApplySynced reports why.
  // (lsn 0 asks for nothing new, and still reports a broken store, as the slow path does.)
  if (lsn > 0 && applied_through_.load(std::memory_order_acquire) >= lsn) return Status::Ok();
  return ApplySynced();
}

Status FsObjectStore::ApplySynced() {
  std::lock_guard<std::mutex> g(name_mu_);
  const uint64_t synced = journal_->synced_lsn();
  while (!actions_.empty() && actions_.front().lsn <= synced) {
    Action a = std::move(actions_.front());
    actions_.pop_front();
    const std::string path = PathOf(a.key);
    Status s;
    if (a.file) {
      s = a.file->Commit(/*replace=*/true);
      if (packed_.Erase(a.key)) ++moves_;
    } else {
      if (a.packed) {
        const Journal::Location at = journal_->Locate(a.lsn, a.batch_offset);
        a.entry.segment = at.file_first_lsn;
        a.entry.offset = at.offset;
        packed_.Set(a.key, a.entry);
      } else {
        packed_.Erase(a.key);
      }
      ++moves_;
      if (a.remove_file) s = RemoveFile(a.key, path);
    }
    auto it = inflight_.find(path);
    if (it != inflight_.end() && it->second.lsn == a.lsn) inflight_.erase(it);
    if (!s.ok()) {
      // The record is durable; the next open replays it. Until then this store would serve
      // what the journal contradicts, so it stops (J5).
      BreakLocked(s.WithContext("applying the journaled version of " + a.key + " in " + Describe() +
                                "; reopen the store to recover it"));
    }
  }
  // Locate is needed only for records still to apply.
  journal_->ForgetThrough(actions_.empty() ? synced : std::min(synced, actions_.front().lsn - 1));
  if (broken_.ok()) applied_through_.store(synced, std::memory_order_release);
  return broken_;
}

void FsObjectStore::Retired(const std::string& path, uint64_t last_lsn, uint64_t bytes) {
  {
    std::lock_guard<std::mutex> g(name_mu_);
    uint64_t first = 0;
    if (ParseJournalFileName(path.substr(base_.size()), &first)) segments_[first].bytes = bytes;
    retired_since_snapshot_ += bytes;
    segments_[last_lsn + 1] = Segment{SegmentPath(last_lsn + 1), 0, false};
  }
  checkpoints_->Submit([this, path, last_lsn] { Checkpoint(path, last_lsn); });
}

void FsObjectStore::Checkpoint(const std::string& journal_path, uint64_t last_lsn) {
  if (checkpoint_failed_) return;
  Status s = SyncThrough(last_lsn);
  if (s.ok()) s = SyncRoot();
  if (s.ok()) s = WriteCheckpointMarker(last_lsn);
  if (s.ok()) s = ClearRewriteMarker();
  if (s.ok() && SnapshotDue()) WriteIndexSnapshot(last_lsn);
  if (s.ok()) {
    {
      std::lock_guard<std::mutex> g(name_mu_);
      for (auto& [first, seg] : segments_) {
        if (first > last_lsn) break;
        seg.checkpointed = true;
      }
    }
    s = CollectSegments();
  }
  if (s.ok()) s = Compact();
  if (s.ok()) return;
  CheckpointFailed(s.WithContext("checkpoint of " + journal_path));
}

void FsObjectStore::CheckpointFailed(const Status& s) {
  checkpoint_failed_ = true;
  MarkForRewrite();
  const Status broken = s.WithContext("in " + Describe() +
                                      " (the journal files are kept; reopen the store to recover)");
  bool first = false;
  {
    std::lock_guard<std::mutex> g(name_mu_);
    first = broken_.ok();
    BreakLocked(broken);
  }
  if (first && jopts_.failed) jopts_.failed(broken);
}

void FsObjectStore::BreakLocked(Status s) {
  if (!broken_.ok()) return;
  broken_ = std::move(s);
  maybe_unhealthy_.store(true, std::memory_order_release);
  applied_through_.store(0, std::memory_order_release);
}

ObjectStoreCounters FsObjectStore::Counters() const {
  ObjectStoreCounters c;
  if (journal_) c.journal = journal_->stats();
  return c;
}

Status FsObjectStore::Health() const {
  if (!maybe_unhealthy_.load(std::memory_order_acquire)) return Status::Ok();
  if (journal_) WMBT_RETURN_IF_ERROR(journal_->error());
  std::lock_guard<std::mutex> g(name_mu_);
  return broken_;
}

bool FsObjectStore::SnapshotDue() {
  std::lock_guard<std::mutex> g(name_mu_);
  return retired_since_snapshot_ >= kSnapshotEveryBytesPerByte * snapshot_bytes_;
}

void FsObjectStore::WriteIndexSnapshot(uint64_t through) {
  PackedSnapshotHeader header;
  header.through_lsn = through;
  {
    std::lock_guard<std::mutex> g(name_mu_);
    for (const auto& [first, seg] : segments_) {
      if (first > through) break;
      header.file_bytes[first] = seg.bytes;
    }
  }
  PackedSnapshotWriter writer(header);
  std::string last;  // the last key taken
  for (bool more = true; more;) {
    std::lock_guard<std::mutex> g(name_mu_);
    more = packed_.ForEachAfter(last, kSnapshotChunkEntries,
                                [&](std::string_view key, const PackedEntry& e) {
                                  writer.Add(key, e);
                                  last = key;
                                });
  }
  // Read last: every version applied so far is synced (ApplySynced; at open, all of them).
  const uint64_t synced = journal_ ? std::max(through, journal_->synced_lsn()) : through;
  const std::string bytes = writer.Finish(synced);
  Status s = fs_->WriteFileAtomic(snapshot_path_, {AsBytes(bytes)}, /*sync=*/true);
  if (!s.ok()) {
    Warn("writing the packed-index snapshot of " + Describe() +
         " failed (the next open reads "
         "more of the journal): " +
         s.ToString());
    return;
  }
  std::lock_guard<std::mutex> g(name_mu_);
  snapshot_bytes_ = bytes.size();
  retired_since_snapshot_ = 0;
  snapshot_through_ = through;
}

void FsObjectStore::Warn(const std::string& message) const {
  if (jopts_.warn) jopts_.warn(message);
}

Status FsObjectStore::CollectSegments() {
  while (true) {
    std::string path;
    bool outdates_snapshot = false;
    {
      std::lock_guard<std::mutex> g(name_mu_);
      if (segments_.empty()) return Status::Ok();
      auto oldest = segments_.begin();
      if (!oldest->second.checkpointed || packed_.LiveRecords(oldest->first) > 0) {
        return Status::Ok();
      }
      path = oldest->second.path;
      outdates_snapshot = snapshot_through_ != 0 && oldest->first == snapshot_through_ + 1;
      if (outdates_snapshot) {
        snapshot_through_ = 0;
        snapshot_bytes_ = 0;  // due again at the next checkpoint
      }
      segments_.erase(oldest);
    }
    // Once the file at C + 1 goes, so has every file before it: the snapshot names only dead
    // entries, and the next open would read every file left either way.
    if (outdates_snapshot) {
      Status s = fs_->DeleteFile(snapshot_path_);
      if (!s.ok() && !s.IsNotFound()) return s.WithContext("deleting " + snapshot_path_);
    }
    // Readers holding an entry of this file looked it up before its records moved; they find
    // it gone and look again (Moved). Each deletion is durable before the next: a crash must
    // not keep an older file without a newer one (a gap in the LSNs).
    Status s = fs_->DeleteFile(path);
    if (s.ok() || s.IsNotFound()) s = fs_->SyncDir(root_);
    if (!s.ok()) return s.WithContext("deleting journal file " + path);
  }
}

Status FsObjectStore::Compact() {
  while (true) {
    uint64_t oldest = 0;
    std::string path;
    std::vector<std::pair<std::string, PackedEntry>> live;
    uint64_t live_records = 0;
    {
      std::lock_guard<std::mutex> g(name_mu_);
      uint64_t kept = 0;
      for (const auto& [first, seg] : segments_) {
        if (seg.checkpointed) kept += seg.bytes;
      }
      const uint64_t allowed = kKeptBytesPerLiveByte * packed_.live_bytes() +
                               kKeptSlackFiles * jopts_.journal_file_bytes;
      if (segments_.empty() || kept <= allowed || !segments_.begin()->second.checkpointed) {
        return Status::Ok();
      }
      oldest = segments_.begin()->first;
      path = segments_.begin()->second.path;
      live_records = packed_.LiveRecords(oldest);
    }
    // Its live records, gathered a chunk of the index at a time (compact_scan_chunk). No record
    // enters a checkpointed file, so the walk misses none still live; one that dies meanwhile is
    // skipped below, as is one a newer version replaces.
    std::string after;
    for (bool more = live_records > 0; more && live.size() < live_records;) {
      std::lock_guard<std::mutex> g(name_mu_);
      std::string_view last_key;
      more = packed_.ForEachAfter(after, std::max<size_t>(jopts_.compact_scan_chunk, 1),
                                  [&](std::string_view key, const PackedEntry& e) {
                                    if (e.segment == oldest) live.emplace_back(key, e);
                                    last_key = key;
                                  });
      after.assign(last_key);
    }
    uint64_t last = 0;
    for (const auto& [key, e] : live) {
      bool damaged = false;
      auto record = ReadPackedRecord(fs_, path, key, e, &damaged);
      if (!record.ok()) return record.status().WithContext("compacting the journal");
      const ByteView value =
          (*record)->view().subspan(e.record_bytes - e.size - kPackedValuePrefixBytes);
      std::lock_guard<std::mutex> g(name_mu_);
      const PackedEntry* now = packed_.Find(key);
      // Skipped if a newer version came meanwhile (it makes this one dead).
      const std::string object_path = PathOf(key);
      if (!now || now->lsn != e.lsn || inflight_.count(object_path)) continue;
      // The copy is the key's next version: a file beside the packed one goes with it, as with
      // any next version. Left there, a delete decided while the copy is in flight (which sees
      // a version without a file) would leave it, and a read would then find its bytes — those
      // of a put never acknowledged (a review, session 60).
      Action a{0, key, nullptr, /*packed=*/true,
               /*remove_file=*/FileBesidePackedLocked(object_path)};
      a.entry = e;
      a.lsn = a.entry.lsn =
          journal_->Append(JournalOp::kPutPacked, key, {value}, &a.batch_offset, damaged);
      inflight_[object_path] = InFlight{a.lsn, false, PackedEtag(e), false, false};
      actions_.push_back(std::move(a));
      last = actions_.back().lsn;
    }
    if (last > 0) WMBT_RETURN_IF_ERROR(SyncThrough(last));
    WMBT_RETURN_IF_ERROR(CollectSegments());
    std::lock_guard<std::mutex> g(name_mu_);
    // Not gone: a record is still live there (a reader's retry will not spin: stop here).
    if (!segments_.empty() && segments_.begin()->first == oldest) return Status::Ok();
  }
}

Status FsObjectStore::CheckSyncedRecordsRead(const JournalReplayResult& replay,
                                             uint64_t checkpoint) const {
  // The newest file holds the records up to the checkpoint it begins at or before, all synced;
  // if they end earlier, a record there is damaged beyond reading (its header), and the ones
  // after it with it. Going on would begin the next file past the checkpoint, leaving a gap that
  // the next open refuses (JournalScanner): refused now, before anything more is written.
  if (replay.segments.empty() || replay.last_lsn >= checkpoint ||
      replay.segments.back().first_lsn > checkpoint) {
    return Status::Ok();
  }
  const JournalSegment& newest = replay.segments.back();
  return Status::Corruption(
      "journal of " + Describe() + " is damaged: " + newest.path + " was synced through LSN " +
      std::to_string(checkpoint) + " (the checkpoint), but its records cannot be read past LSN " +
      std::to_string(replay.last_lsn) + " (a damaged record at byte " +
      std::to_string(newest.bytes) + "). Writes acknowledged after LSN " +
      std::to_string(replay.last_lsn) + " may be lost: move the .~journal-* files out of " + root_ +
      " to open the store with what the directory holds, then run `wombatkv audit`");
}

void FsObjectStore::ReserveFailedMarkerSpace() {
  if (fs_->Stat(failed_reserve_path_).ok()) return;
  const std::string zeros(kJournalFailedMarkerReserveBytes, '\0');
  Status s = fs_->WriteFileAtomic(failed_reserve_path_, {AsBytes(zeros)}, /*sync=*/true);
  if (!s.ok()) {
    Warn("could not set aside space for the failed-journal marker of " + Describe() + ": " +
         s.ToString() + "; on a full disk the marker may then not be written");
  }
}

void FsObjectStore::MarkJournalFailed() {
  const std::string text = std::to_string(journal_->synced_lsn()) + "\n";
  Status s = fs_->WriteFileAtomic(failed_marker_path_, {AsBytes(text)}, /*sync=*/true);
  if (s.code() == Code::kResourceExhausted && fs_->DeleteFile(failed_reserve_path_).ok()) {
    // The disk is full (the likeliest reason the journal failed too): the reserve makes room.
    // Synced first, so that a file system that reuses freed blocks only after a commit has.
    (void)fs_->SyncDir(root_);
    s = fs_->WriteFileAtomic(failed_marker_path_, {AsBytes(text)}, /*sync=*/true);
  }
  if (!s.ok()) {
    Warn("could not record where the failed journal of " + Describe() + " ends: " + s.ToString() +
         "; restart the machine, not only the store, before reopening");
  }
}

Status FsObjectStore::DropUnsyncedTail(const JournalReplayResult& replay) {
  // The journal ended at the failed marker's LSN; the newest file may hold records after it that
  // only the page cache has. Its prefix is written again (synced), so that no later open reads
  // them, then the marker goes — durably, before the new journal file takes the next LSNs, which
  // a stale marker would cut off.
  if (!replay.segments.empty()) {
    const JournalSegment& newest = replay.segments.back();
    std::shared_ptr<Buffer> prefix;
    if (newest.bytes > 0) {
      WMBT_ASSIGN_OR_RETURN(prefix, fs_->ReadFile(newest.path, 0, newest.bytes));
    }
    const ByteView bytes = prefix ? prefix->view() : ByteView{};
    WMBT_RETURN_IF_ERROR(fs_->WriteFileAtomic(newest.path, {bytes}, /*sync=*/true));
  }
  Warn("the journal of " + Describe() + " had failed; it was read up to the last record synced " +
       "before the failure (LSN " + std::to_string(replay.last_lsn) + ")");
  WMBT_RETURN_IF_ERROR(fs_->DeleteFile(failed_marker_path_));
  return fs_->SyncDir(root_);
}

Status FsObjectStore::WriteCheckpointMarker(uint64_t lsn) {
  const std::string text = std::to_string(lsn) + "\n";
  return fs_->WriteFileAtomic(checkpoint_marker_path_, {AsBytes(text)}, /*sync=*/true);
}

Status FsObjectStore::SyncRoot() {
  WMBT_RETURN_IF_ERROR(fs_->WriteFileAtomic(rewrite_marker_path_, {AsBytes(kRewriteMarkerText)},
                                            /*sync=*/false));
  Status s = sync_handle_->Sync();
  // The error is now seen: the next open's sync would not report it again. The marker, synced
  // now, makes that open write the cached bytes again.
  if (!s.ok()) MarkForRewrite();
  return s;
}

Status FsObjectStore::ClearRewriteMarker() {
  Status s = fs_->DeleteFile(rewrite_marker_path_);
  return s.IsNotFound() ? Status::Ok() : s;
}

void FsObjectStore::MarkForRewrite() {
  (void)fs_->WriteFileAtomic(rewrite_marker_path_, {AsBytes(kRewriteMarkerText)},
                             /*sync=*/true);
}

Status FsObjectStore::RefuseIfJournaledElsewhere(std::string_view key) {
  if (!fs_->Stat(owner_lock_path_).ok()) return Status::Ok();  // never journaled
  // Probes of plain stores take turns, so that one never mistakes another probe for an owner.
  auto probe_turn = fs_->LockFileBlocking(owner_lock_path_ + "~probe");
  if (!probe_turn.ok()) return probe_turn.status();
  auto owner = fs_->LockFile(owner_lock_path_, "probe by pid " + std::to_string(getpid()));
  if (owner.ok()) return Status::Ok();
  if (owner.status().code() == Code::kPermissionDenied) {
    return owner.status().WithContext("put " + std::string(key) + " in " + Describe() +
                                      ": cannot tell whether a journaling process owns it");
  }
  return Status::FailedPrecondition("put " + std::string(key) + " in " + Describe() +
                                    ": the directory is owned by a journaling process (" +
                                    owner.status().message() + "); write through it");
}

}  // namespace wombatkv::fs_internal
