// FsObjectStore (fs_object_store_impl.h, which states its invariants): construction, the
// ObjectStore calls, and the un-journaled way of writing files.
#include "object/fs_object_store_impl.h"
#include "object/journal_record.h"

namespace wombatkv::fs_internal {

FsObjectStore::FsObjectStore(std::string root, FileSystem* fs, bool journaled)
    : fs_(fs), syncs_(fs) {
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  root_ = root.empty() ? "." : root;
  base_ = root_ == "/" ? "/" : root_ + "/";
  lock_path_ = base_ + ".~lock";
  owner_lock_path_ = base_ + ".~journal.lock";
  rewrite_marker_path_ = base_ + std::string(kJournalRewriteMarker);
  checkpoint_marker_path_ = base_ + std::string(kJournalCheckpointMarker);
  failed_marker_path_ = base_ + std::string(kJournalFailedMarker);
  failed_reserve_path_ = base_ + std::string(kJournalFailedMarkerReserve);
  snapshot_path_ = base_ + std::string(kPackedSnapshotName);
  if (!journaled) view_ = std::make_unique<PackedView>(fs_, root_);
  // Best effort: a failure here resurfaces, with its cause, at the first write.
  (void)fs_->CreateDirs(root_);
}

FsObjectStore::~FsObjectStore() {
  if (!journal_) return;
  // Names every deferred put; what fails stays in the journal for the next open.
  Status s = SyncThrough(journal_->appended_lsn());
  journal_->AwaitIdle();  // no leader left to hand callbacks or a lead to the executors
  completions_.reset();   // runs what is queued
  syncer_.reset();
  checkpoints_->Drain();
  checkpoints_.reset();
  // A clean close checkpoints the last file too, so the next open applies nothing (and does
  // not rewrite a file damaged since, which a reader must find damaged: G9).
  if (s.ok() && !checkpoint_failed_) {
    s = SyncRoot();
    if (s.ok()) s = WriteCheckpointMarker(journal_->appended_lsn());
    if (s.ok()) s = ClearRewriteMarker();
    if (s.ok()) {
      {
        std::lock_guard<std::mutex> g(name_mu_);
        segments_[journal_->file_first_lsn()].checkpointed = true;
      }
      (void)CollectSegments();  // what stays is collected at the next open
    }
  }
}

Result<std::string> FsObjectStore::Put(std::string_view key, const std::vector<ByteView>& parts,
                                       const PutOptions& options) {
  WMBT_RETURN_IF_ERROR(ValidateObjectKey(key));
  if (options.mode == PutMode::kIfMatch && options.if_match.empty()) {
    return Status::InvalidArgument("put " + std::string(key) + ": if-match with an empty etag");
  }
  const std::string path = PathOf(key);
  const std::string dir = PathOf(ParentOf(key));
  if (journal_) {
    size_t bytes = 0;
    for (ByteView p : parts) bytes += p.size();
    const bool direct_put = bytes > jopts_.journaled_object_bytes_max;
    const bool packed = !direct_put && bytes <= jopts_.packed_object_bytes_max;
    std::optional<FileFormPut> file_form;
    if (!packed) file_form.emplace(this, key);
    if (!direct_put) {
      auto etag = packed ? PackedPut(key, path, parts, bytes, options)
                         : JournaledPut(key, dir, path, parts, options);
      if (etag.ok() || etag.status().IsConflict()) return etag;
      return etag.status().WithContext("put " + std::string(key) + " in " + Describe());
    }
    PutOptions direct = options;
    WMBT_RETURN_IF_ERROR(BeforeDirectPut(key, path, &direct));
    FileInfo written;
    Status s = WriteDirect(key, dir, path, parts, direct, &written);
    WMBT_RETURN_IF_ERROR(AfterDirectPut(key, path, s.ok(), options));
    WMBT_RETURN_IF_ERROR(s);
    return EtagOf(written);
  }
  WMBT_RETURN_IF_ERROR(RefuseIfJournaledElsewhere(key));
  WMBT_RETURN_IF_ERROR(RefuseIfJournalKept(key));
  FileInfo written;
  WMBT_RETURN_IF_ERROR(WriteDirect(key, dir, path, parts, options, &written));
  return EtagOf(written);
}

void FsObjectStore::PutAsync(std::string_view key, const std::vector<ByteView>& parts,
                             const PutOptions& options, PutDone done) {
  size_t bytes = 0;
  for (ByteView p : parts) bytes += p.size();
  if (!journal_ || !options.durable_on_return || bytes > jopts_.packed_object_bytes_max ||
      bytes > jopts_.journaled_object_bytes_max || !ValidateObjectKey(key).ok() ||
      (options.mode == PutMode::kIfMatch && options.if_match.empty())) {
    done(Put(key, parts, options));
    return;
  }
  uint64_t lsn = 0;
  auto etag = PackedPut(key, PathOf(key), parts, bytes, options, &lsn);
  if (!etag.ok() && !etag.status().IsConflict()) {
    etag = etag.status().WithContext("put " + std::string(key) + " in " + Describe());
  }
  if (!etag.ok() || lsn == 0) {
    done(std::move(etag));
    return;
  }
  journal_->AwaitSyncedThen(lsn, [this, lsn, key = std::string(key), etag = std::move(etag).value(),
                                  done = std::move(done)](Status s) mutable {
    // The round's hook applied it already, unless the store broke meanwhile.
    if (s.ok() && applied_through_.load(std::memory_order_acquire) < lsn) s = ApplySynced();
    if (!s.ok()) {
      done(s.WithContext("put " + key + " in " + Describe()));
      return;
    }
    done(std::move(etag));
  });
}

Status FsObjectStore::WriteDirect(std::string_view key, const std::string& dir,
                                  const std::string& path, const std::vector<ByteView>& parts,
                                  const PutOptions& options, FileInfo* written) {
  for (int attempt = 0; attempt < kPutAttemptsMax; ++attempt) {
    Status s = fs_->CreateDirs(dir);
    if (s.ok()) {
      s = options.mode == PutMode::kIfAbsent ? Create(key, dir, path, parts, written)
                                             : Replace(key, dir, path, parts, options, written);
    }
    if (s.ok()) return s;
    if (!s.IsNotFound()) return s.WithContext("put " + std::string(key) + " in " + Describe());
  }
  return Status::Unavailable("put " + std::string(key) + " in " + Describe() +
                             ": its directory kept disappearing under concurrent deletes");
}

Result<ObjectData> FsObjectStore::Get(std::string_view key, uint64_t offset, uint64_t length) {
  WMBT_RETURN_IF_ERROR(ValidateObjectKey(key));
  FileInfo info;
  const std::string path = PathOf(key);
  WMBT_RETURN_IF_ERROR(AwaitJournaled(key, path));
  Result<std::shared_ptr<Buffer>> bytes = Status::NotFound("");
  // The object may move between a packed record and a file, or between journal files, while
  // it is read: a read that finds it gone looks again if it moved.
  for (int attempt = 0; attempt < kReadAttemptsMax; ++attempt) {
    PackedEntry e;
    WMBT_ASSIGN_OR_RETURN(uint64_t moves, FindPacked(key, &e));
    if (e.lsn > 0) {
      auto got =
          ReadPacked(fs_, SegmentPath(e.segment), key, e, offset, length, jopts_.read_buffers);
      if (!got.status().IsNotFound()) return got;
    } else {
      bytes = fs_->ReadFileInto(path, offset, length, jopts_.read_buffers, &info);
      if (!bytes.status().IsNotFound()) break;
    }
    if (!Moved(moves, attempt)) break;
  }
  if (!bytes.ok()) return MissingOr(key, bytes.status());
  WMBT_RETURN_IF_ERROR(syncs_.AwaitDurable(PathOf(ParentOf(key)), path));
  if (offset > info.size) {
    return Status::InvalidArgument("get " + std::string(key) + ": offset " +
                                   std::to_string(offset) + " is past the object size " +
                                   std::to_string(info.size));
  }
  ObjectData out;
  out.bytes = std::move(bytes).value();
  out.etag = EtagOf(info);
  out.object_size = info.size;
  return out;
}

Result<ObjectInfo> FsObjectStore::Head(std::string_view key) {
  WMBT_RETURN_IF_ERROR(ValidateObjectKey(key));
  const std::string path = PathOf(key);
  WMBT_RETURN_IF_ERROR(AwaitJournaled(key, path));
  Result<FileInfo> info = Status::NotFound("");
  for (int attempt = 0; attempt < kReadAttemptsMax; ++attempt) {
    PackedEntry e;
    WMBT_ASSIGN_OR_RETURN(uint64_t moves, FindPacked(key, &e));
    if (e.lsn > 0) return ObjectInfo{std::string(key), e.size, PackedEtag(e), e.modified_us};
    uint64_t puts_before = 0;
    bool known_empty = false, remember = false;
    if (journal_) {
      std::lock_guard<std::mutex> g(name_mu_);
      known_empty = KnownEmptyLocked(path);
      puts_before = file_form_puts_;
      remember = file_form_puts_open_ == 0 && !inflight_.contains(path);
    }
    // Known empty is a failed stat: the object may have moved into the packed form since
    // FindPacked, and is looked for again then.
    info = known_empty ? Result<FileInfo>(Status::NotFound("")) : fs_->Stat(path);
    if (remember && !known_empty && info.status().IsNotFound()) {
      std::lock_guard<std::mutex> g(name_mu_);
      if (file_form_puts_ == puts_before) FoundEmptyLocked(path);
    }
    if (!info.status().IsNotFound() || !Moved(moves, attempt)) break;
  }
  if (!info.ok()) return MissingOr(key, info.status());
  if (info->is_dir) return NotFound(key);
  WMBT_RETURN_IF_ERROR(syncs_.AwaitDurable(PathOf(ParentOf(key)), path));
  return ObjectInfo{std::string(key), info->size, EtagOf(*info), info->mtime_ns / 1000};
}

Status FsObjectStore::Delete(std::string_view key) {
  WMBT_RETURN_IF_ERROR(ValidateObjectKey(key));
  if (journal_) return JournaledDelete(key);
  WMBT_RETURN_IF_ERROR(view_->Refresh());
  PackedEntry packed;
  if (view_->Find(key, &packed)) {
    return Status::FailedPrecondition(
        "delete " + std::string(key) + " in " + Describe() +
        ": the object is packed in the journal of the process that owns the directory; delete "
        "it through that process (a store open on the data directory)");
  }
  auto lock = Lock();
  if (!lock.ok()) return lock.status().IsNotFound() ? Status::Ok() : lock.status();  // no root
  const std::string path = PathOf(key);
  auto info = fs_->Stat(path);
  if (!info.ok() && !info.status().IsNotFound()) return info.status();
  if (!info.ok() || info->is_dir) return Status::Ok();  // absent is fine (as S3)
  Status s = fs_->DeleteFile(path);
  if (!s.ok() && !s.IsNotFound()) return s.WithContext("delete " + std::string(key));
  // Under the lock no replacement races us (RemoveEmptyParents).
  RemoveEmptyParents(key);
  return Status::Ok();
}

std::string FsObjectStore::PathOf(std::string_view rel) const {
  return rel.empty() ? root_ : base_ + std::string(rel);
}

Result<uint64_t> FsObjectStore::FindPacked(std::string_view key, PackedEntry* e) {
  if (journal_) {
    std::lock_guard<std::mutex> g(name_mu_);
    if (const PackedEntry* found = packed_.Find(key)) *e = *found;
    return moves_;
  }
  WMBT_RETURN_IF_ERROR(view_->Refresh());
  view_->Find(key, e);
  return 0;
}

bool FsObjectStore::KnownEmptyLocked(const std::string& path) const {
  if (!journal_) return false;
  if (empty_paths_.contains(path)) return true;
  const std::string_view parent = ParentPath(path);
  return !parent.empty() && empty_paths_.contains(parent);
}

std::string_view FsObjectStore::ParentPath(std::string_view path) const {
  const size_t slash = path.rfind('/');
  if (slash == path.npos || slash + 1 <= base_.size()) return {};
  return path.substr(0, slash);
}

void FsObjectStore::FoundEmptyBesideLocked(const std::string& path) {
  const std::string_view parent = ParentPath(path);
  if (!journal_ || parent.empty() || dirs_seen_.contains(parent)) return;
  auto info = fs_->Stat(std::string(parent));
  if (info.status().IsNotFound()) return FoundEmptyLocked(std::string(parent));
  if (dirs_seen_.size() >= kEmptyPathsMax) dirs_seen_.clear();
  dirs_seen_.emplace(parent);  // there (or unknown): a stat per path, as before
}

void FsObjectStore::FoundEmptyLocked(const std::string& path) {
  if (!journal_ || file_form_puts_open_ > 0 || inflight_.contains(path)) return;
  if (empty_paths_.size() >= kEmptyPathsMax) empty_paths_.clear();
  empty_paths_.insert(path);
}

bool FsObjectStore::Moved(uint64_t moves, int attempt) {
  if (!journal_) return attempt == 0;
  std::lock_guard<std::mutex> g(name_mu_);
  return moves_ != moves;
}

Status FsObjectStore::RefuseIfJournalKept(std::string_view key) {
  WMBT_RETURN_IF_ERROR(view_->Refresh());
  if (!view_->journaled()) return Status::Ok();
  return Status::FailedPrecondition(
      "put " + std::string(key) + " in " + Describe() +
      ": the directory keeps a journal of its owner (the store of the data directory); write "
      "through a store open on it");
}

Status FsObjectStore::RemoveFile(std::string_view key, const std::string& path) {
  Status s = fs_->DeleteFile(path);
  if (!s.ok() && !s.IsNotFound()) return s.WithContext("delete " + std::string(key));
  RemoveEmptyParents(key);
  return Status::Ok();
}

void FsObjectStore::RemoveEmptyParents(std::string_view key) {
  for (std::string dir = ParentOf(key); !dir.empty(); dir = ParentOf(dir)) {
    if (!fs_->DeleteFile(PathOf(dir)).ok()) break;
  }
}

Status FsObjectStore::Create(std::string_view key, const std::string& dir, const std::string& path,
                             const std::vector<ByteView>& parts, FileInfo* written) {
  WMBT_ASSIGN_OR_RETURN(auto file, fs_->WriteTemp(path, parts, /*sync=*/true,
                                                  /*later_than_current=*/false));
  auto ticket = syncs_.Name(*file, dir, path, /*replace=*/false);
  if (ticket.ok()) {
    *written = file->info();
    return syncs_.Await(*ticket);
  }
  if (!ticket.status().IsConflict()) return ticket.status();
  auto info = fs_->Stat(path);
  if (info.ok() && info->is_dir) return DirectoryInTheWay(key);
  // The object that won may still await its directory sync here: a caller that takes this
  // Conflict as "the object exists" (a blob upload) must not act on it before it is durable.
  WMBT_RETURN_IF_ERROR(syncs_.AwaitDurable(dir, path));
  return Status::Conflict("object " + std::string(key) + " already exists");
}

Status FsObjectStore::Replace(std::string_view key, const std::string& dir, const std::string& path,
                              const std::vector<ByteView>& parts, const PutOptions& options,
                              FileInfo* written) {
  DirSyncGroup::Ticket ticket;
  {
    WMBT_ASSIGN_OR_RETURN(auto lock, Lock());
    auto current = fs_->Stat(path);
    if (!current.ok() && !current.status().IsNotFound()) return current.status();
    if (current.ok() && current->is_dir) return DirectoryInTheWay(key);
    if (options.mode == PutMode::kIfMatch) {
      if (!current.ok()) {
        return Status::Conflict("object " + std::string(key) + " does not exist (if-match " +
                                options.if_match + ")");
      }
      std::string etag = EtagOf(*current);
      if (etag != options.if_match) {
        return Status::Conflict("object " + std::string(key) + " has etag " + etag + ", not " +
                                options.if_match);
      }
    }
    WMBT_ASSIGN_OR_RETURN(auto file, fs_->WriteTemp(path, parts, /*sync=*/true,
                                                    /*later_than_current=*/true));
    WMBT_ASSIGN_OR_RETURN(ticket, syncs_.Name(*file, dir, path, /*replace=*/true));
    *written = file->info();
  }
  // Renamed under the lock; its directory sync, shared with other writers, needs no lock.
  return syncs_.Await(ticket);
}

Status FsObjectStore::MissingOr(std::string_view key, const Status& s) {
  if (s.IsNotFound()) return NotFound(key);
  // A directory (a prefix of other keys) at the key's path is not an object.
  auto info = fs_->Stat(PathOf(key));
  if (info.ok() && info->is_dir) return NotFound(key);
  return s.WithContext(std::string(key));
}

Status FsObjectStore::NotFound(std::string_view key) const {
  return Status::NotFound("object " + std::string(key) + " not found in " + Describe());
}

Status FsObjectStore::DirectoryInTheWay(std::string_view key) const {
  return Status::FailedPrecondition(
      "object " + std::string(key) + " cannot be stored in " + Describe() +
      ": other keys live under it as a directory (a local store cannot hold both)");
}

}  // namespace wombatkv::fs_internal

namespace wombatkv {

std::unique_ptr<ObjectStore> NewFsObjectStore(std::string root, FileSystem* fs) {
  return std::make_unique<fs_internal::FsObjectStore>(std::move(root), fs, /*journaled=*/false);
}

Result<std::unique_ptr<ObjectStore>> OpenJournaledFsObjectStore(std::string root, FileSystem* fs,
                                                                FsJournalOptions options) {
  // A journal record carries at most kJournalValueBytesMax; larger objects must go direct. A
  // packed record's value is the object after a kPackedValuePrefixBytes prefix.
  constexpr uint64_t kPackedMax = kJournalValueBytesMax - kPackedValuePrefixBytes;
  if (options.journaled_object_bytes_max > kJournalValueBytesMax ||
      options.packed_object_bytes_max > kPackedMax) {
    return Status::InvalidArgument(
        "FsJournalOptions: journaled_object_bytes_max " +
        std::to_string(options.journaled_object_bytes_max) + " may be at most " +
        std::to_string(kJournalValueBytesMax) + " and packed_object_bytes_max " +
        std::to_string(options.packed_object_bytes_max) + " at most " + std::to_string(kPackedMax) +
        " (a journal record's largest value)");
  }
  auto store =
      std::make_unique<fs_internal::FsObjectStore>(std::move(root), fs, /*journaled=*/true);
  WMBT_RETURN_IF_ERROR(store->OpenJournal(options));
  return std::unique_ptr<ObjectStore>(std::move(store));
}

}  // namespace wombatkv
