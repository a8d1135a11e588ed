// FsObjectStore: objects are files under a root directory, at their key's relative path.
//
// Invariants:
//   1. An object's bytes are never modified in place: every version is a new file (temporary +
//      rename, or temporary + link for if-absent), so a reader sees one whole version.
//   2. Replacements (overwrite, if-match) and deletions happen only while holding the flock on
//      "<root>/.~lock", shared by every thread and process using the root. If-absent creation is
//      atomic by itself (link(2)) and takes no lock, so blob uploads run in parallel.
//   3. Names containing '~' (the lock, temporaries: env.h) or otherwise not valid key segments
//      are not objects: List skips them and no key can name them.
//   4. Un-journaled: a Put returns after the object's content was synced before it got its name,
//      and a sync of its directory started after that (DirSyncGroup: concurrent Puts into one
//      directory share that sync). Get and Head of an object whose name is not durable yet wait
//      until it is, so this process never acts on a name a crash could take back.
//   5. Journaled (OpenJournaledFsObjectStore, the data directory's owner): objects up to the
//      threshold get their name only after their journal record is synced, and Get/Head of a
//      version still in flight wait for that (J1-J3 below; docs/architecture.md, "Durability on
//      the local-directory L2"). Such a root is written by its owner only (RefuseIfJournaled-
//      Elsewhere); the owner takes the flock for none of its writes.
//   6. Packed (journaled mode, objects <= FsJournalOptions::packed_object_bytes_max): no file;
//      the object's kPutPacked record is its only copy and packed_ says where it is. A key is
//      packed or a file, never both once its version is applied: applying a packed version
//      unlinks the file of its predecessor, and applying a file version drops the packed entry.
//      Journal files are deleted oldest first, only once checkpointed with no live packed record
//      (CollectSegments), so the files left are a contiguous run of LSNs; compaction copies the
//      oldest file's live records forward to let it go. A plain store of the root reads packed
//      objects through a PackedView and writes none of them.
//
// ETag = "<inode>-<mtime_ns>-<size>" in lowercase hex, from one stat of the file: cheap, and
// unique enough. By (1) and (2) the versions of a key are a sequence of files, each created while
// its predecessor still existed, so a version never shares its predecessor's inode; and
// WriteFileAtomic makes each replacement's mtime_ns greater than its predecessor's, even within
// one coarse clock tick (env.h). So while a key exists its ETags never recur, and a stale
// if-match always fails. Residual case: a Delete followed, within the same clock tick, by a
// re-creation that reuses the freed inode with the same size repeats the deleted version's ETag;
// an if-match holding that ETag would then succeed. Content hashes would close it at the cost of
// reading whole objects on Head. Packed objects have ETags of their own form (PackedEtag).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <optional>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "base/check.h"
#include "object/dir_sync_group.h"
#include "object/journal.h"
#include "object/journal_replay.h"
#include "object/object_key.h"
#include "object/packed_index.h"
#include "object/packed_snapshot.h"
#include "object/packed_view.h"
#include "wombatkv/env.h"

namespace wombatkv {
namespace {

constexpr int kPutAttemptsMax = 8;  // a concurrent Delete may remove the parent directory we made
constexpr int kWalkDepthMax = kObjectKeyBytesMax / 2 + 1;  // a key has at most 512 segments
// Deferred puts (durable_on_return = false) wait for a journal sync anyway once this much is
// waiting to be named (batched, or written behind and not synced), so memory, temporary files
// and the unsynced tail of the journal stay bounded without any later put.
constexpr size_t kDeferredBytesMax = 8u << 20;
constexpr size_t kDeferredNamesMax = 1024;
// A read whose object moved under it (packed <-> file, or a compaction) looks again this often.
constexpr int kReadAttemptsMax = 4;
// J6 remembers at most this many empty paths (then forgets them all).
constexpr size_t kEmptyPathsMax = 1u << 16;

// Hashes std::string and std::string_view alike (lookups by a view allocate nothing).
struct PathHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
// Journal files are compacted once those checkpointed hold more than this many times the live
// packed bytes (plus this many journal files of slack).
constexpr uint64_t kKeptBytesPerLiveByte = 2;
constexpr uint64_t kKeptSlackFiles = 2;
// A checkpoint writes the packed-index snapshot once the journal retired since the last one is
// at least this many times its size.
constexpr uint64_t kSnapshotEveryBytesPerByte = 4;
// ... taking this many entries of the index at a time under the name lock.
constexpr size_t kSnapshotChunkEntries = 256;

std::string EtagOf(const FileInfo& info) {
  return HexEtag("", info.inode, info.mtime_ns, info.size);
}

std::string ParentOf(std::string_view key) {
  size_t slash = key.find_last_of('/');
  return slash == std::string_view::npos ? std::string() : std::string(key.substr(0, slash));
}

class FsObjectStore final : public ObjectStore {
 public:
  // `journaled`: OpenJournal follows, and the store reads its own index of packed objects;
  // else it reads them through a view of the journal files its owner keeps.
  FsObjectStore(std::string root, FileSystem* fs, bool journaled) : fs_(fs), syncs_(fs) {
    while (root.size() > 1 && root.back() == '/') root.pop_back();
    root_ = root.empty() ? "." : root;
    base_ = root_ == "/" ? "/" : root_ + "/";
    lock_path_ = base_ + ".~lock";
    owner_lock_path_ = base_ + ".~journal.lock";
    rewrite_marker_path_ = base_ + std::string(kJournalRewriteMarker);
    checkpoint_marker_path_ = base_ + std::string(kJournalCheckpointMarker);
    snapshot_path_ = base_ + std::string(kPackedSnapshotName);
    if (!journaled) view_ = std::make_unique<PackedView>(fs_, root_);
    // Best effort: a failure here resurfaces, with its cause, at the first write.
    (void)fs_->CreateDirs(root_);
  }

  ~FsObjectStore() override {
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
    if (s.ok()) {
      s = sync_handle_->Sync();
      if (!s.ok()) MarkForRewrite();
    }
    if (s.ok() && !checkpoint_failed_) {
      s = WriteCheckpointMarker(journal_->appended_lsn());
      if (s.ok()) {
        {
          std::lock_guard<std::mutex> g(name_mu_);
          segments_[journal_->file_first_lsn()].checkpointed = true;
        }
        (void)CollectSegments();  // what stays is collected at the next open
      }
    }
  }

  // Becomes the journaling owner of the root: takes the owner lock, replays what a crash left
  // in the journal, makes the result durable and starts a new journal file.
  Status OpenJournal(const FsJournalOptions& options) {
    jopts_ = options;
    WMBT_RETURN_IF_ERROR(fs_->CreateDirs(root_).WithContext("creating " + Describe()));
    auto lock = fs_->LockFile(owner_lock_path_, "pid " + std::to_string(getpid()));
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
    WMBT_ASSIGN_OR_RETURN(auto replay, ReplayJournal(fs_, root_, replay_options, &packed_));
    // Replayed files, and files named before the crash whose bytes were already right, become
    // durable before the checkpoint says so.
    WMBT_RETURN_IF_ERROR(sync_handle_->Sync().WithContext("recovering " + Describe()));
    // LSNs never go back while the checkpoint marker stands, even with every journal file gone
    // (a record at or below the marker would be taken for applied).
    const uint64_t last_lsn = std::max(replay.last_lsn, replay_options.applied_through);
    WMBT_RETURN_IF_ERROR(WriteCheckpointMarker(last_lsn).WithContext("recovering " + Describe()));
    // Last: while a journal file that needs it is left, so is the marker.
    if (rewrite) {
      Status s = fs_->DeleteFile(rewrite_marker_path_);
      if (!s.ok() && !s.IsNotFound()) return s.WithContext("recovering " + Describe());
    }
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
      Warn("packed-index snapshot of " + Describe() + " set aside, every journal file read: " +
           replay.snapshot_set_aside);
    }
    // A new snapshot when the journal read after the one used (if any) makes it due.
    snapshot_bytes_ = replay.snapshot_bytes;
    for (const JournalSegment& seg : replay.segments) {
      if (seg.first_lsn > replay.snapshot_through) retired_since_snapshot_ += seg.bytes;
    }
    if (replay.snapshot_through != last_lsn && SnapshotDue()) WriteIndexSnapshot(last_lsn);
    checkpoints_ = NewThreadPoolExecutor(1, "wmbt-l2-ckpt", /*nice=*/5);
    WMBT_ASSIGN_OR_RETURN(
        journal_,
        Journal::Create(fs_, root_, last_lsn + 1, jopts_.journal_file_bytes,
                        [this](const std::string& path, uint64_t last, uint64_t bytes) {
                          Retired(path, last, bytes);
                        }));
    // A failure sticks in broken_, which every caller's SyncThrough then returns.
    journal_->SetOnSynced([this] { (void)ApplySynced(); });
    // Big rounds' PutAsync completions run on the first thread while the leader syncs the next
    // round (Journal::SetCompletionExecutor); a stream of rounds for them is led by the second
    // thread, not by the threads that put.
    completions_ = NewThreadPoolExecutor(1, "wmbt-l2-done");
    syncer_ = NewThreadPoolExecutor(1, "wmbt-l2-sync");
    journal_->SetCompletionExecutor(completions_.get());
    journal_->SetSyncExecutor(syncer_.get());
    segments_[journal_->file_first_lsn()] = Segment{journal_->file_path(), 0, false};
    WMBT_RETURN_IF_ERROR(CollectSegments().WithContext("recovering " + Describe()));
    return Status::Ok();
  }

  std::string Describe() const override { return "file://" + root_; }

  Result<std::string> Put(std::string_view key, const std::vector<ByteView>& parts,
                          const PutOptions& options) override {
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

  // A durable put small enough to be packed completes from the journal (Journal::
  // AwaitSyncedThen): decided (condition checked, record appended) here, acknowledged by the
  // round that syncs it. Everything else completes here, as Put.
  void PutAsync(std::string_view key, const std::vector<ByteView>& parts,
                const PutOptions& options, PutDone done) override {
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
    journal_->AwaitSyncedThen(
        lsn, [this, lsn, key = std::string(key), etag = std::move(etag).value(),
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

  // The un-journaled way: content synced, named, directory synced (invariant 4).
  Status WriteDirect(std::string_view key, const std::string& dir, const std::string& path,
                     const std::vector<ByteView>& parts, const PutOptions& options,
                     FileInfo* written) {
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

  Result<ObjectData> Get(std::string_view key, uint64_t offset, uint64_t length) override {
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
        auto got = ReadPacked(fs_, SegmentPath(e.segment), key, e, offset, length);
        if (!got.status().IsNotFound()) return got;
      } else {
        bytes = fs_->ReadFile(path, offset, length, &info);
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

  Result<ObjectInfo> Head(std::string_view key) override {
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

  Status Delete(std::string_view key) override {
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

  Result<ListPage> List(std::string_view prefix, std::string_view delimiter,
                        std::string_view token, size_t max_keys) override {
    WMBT_ASSIGN_OR_RETURN(size_t page_size, CheckListArgs(prefix, delimiter, max_keys));
    if (journal_) {
      std::lock_guard<std::mutex> g(name_mu_);
      WMBT_RETURN_IF_ERROR(broken_);  // see AwaitJournaled
    }
    // Only the directory named by the prefix's complete segments is read; the partial last
    // segment filters its entries.
    const size_t cut = prefix.find_last_of('/') + 1;  // 0 if none
    // Packed objects before and after the walk: a key that moves between the forms meanwhile
    // is in one of the three.
    bool packed_more = false;
    auto packed_now = [&]() -> Result<std::vector<ListEntry>> {
      std::vector<ListEntry> out;
      bool more = false;
      if (journal_) {
        std::lock_guard<std::mutex> g(name_mu_);
        packed_.ListInto(prefix, !delimiter.empty(), token, page_size, &out, &more);
      } else {
        WMBT_RETURN_IF_ERROR(view_->Refresh());
        view_->ListInto(prefix, !delimiter.empty(), token, page_size, &out, &more);
      }
      packed_more = packed_more || more;
      return out;
    };
    WMBT_ASSIGN_OR_RETURN(std::vector<ListEntry> before, packed_now());
    ListPageBuilder page(page_size);
    Walk walk{page, token, !delimiter.empty()};
    WMBT_RETURN_IF_ERROR(ListDir(walk, std::string(prefix.substr(0, cut)), prefix.substr(cut), 0));
    WMBT_ASSIGN_OR_RETURN(std::vector<ListEntry> after, packed_now());
    if (before.empty() && after.empty()) return std::move(page).Finish();
    ListPage files = std::move(page).Finish();
    const bool files_more = !files.next_token.empty();
    return MergeListings(EntriesOf(std::move(files)), files_more,
                         UnionListings(std::move(before), std::move(after)), packed_more,
                         page_size);
  }

 private:
  struct Walk {
    ListPageBuilder& page;
    std::string_view token;
    bool group;  // delimiter "/": directories at the top level become common prefixes
  };

  std::string PathOf(std::string_view rel) const {
    return rel.empty() ? root_ : base_ + std::string(rel);
  }

  std::string SegmentPath(uint64_t segment) const { return base_ + JournalFileName(segment); }

  // The key's packed entry (e->lsn == 0 if it is not packed), and a count of the moves of
  // objects so far, for Moved.
  Result<uint64_t> FindPacked(std::string_view key, PackedEntry* e) {
    if (journal_) {
      std::lock_guard<std::mutex> g(name_mu_);
      if (const PackedEntry* found = packed_.Find(key)) *e = *found;
      return moves_;
    }
    WMBT_RETURN_IF_ERROR(view_->Refresh());
    view_->Find(key, e);
    return 0;
  }

  // J6: a put that may create the key's file or its parent directories, from its start to its
  // end (journaled mode only).
  class FileFormPut {
   public:
    FileFormPut(FsObjectStore* store, std::string_view key) : store_(store) {
      std::lock_guard<std::mutex> g(store_->name_mu_);
      for (std::string k(key); !k.empty(); k = ParentOf(k)) {
        store_->empty_paths_.erase(store_->PathOf(k));
      }
      ++store_->file_form_puts_;
      ++store_->file_form_puts_open_;
    }
    ~FileFormPut() {
      std::lock_guard<std::mutex> g(store_->name_mu_);
      --store_->file_form_puts_open_;
    }
    FileFormPut(const FileFormPut&) = delete;
    FileFormPut& operator=(const FileFormPut&) = delete;

   private:
    FsObjectStore* const store_;
  };

  // Under name_mu_: whether J6 knows `path` empty: it, or its parent directory (nothing is
  // under a directory that is not there).
  bool KnownEmptyLocked(const std::string& path) const {
    if (!journal_) return false;
    if (empty_paths_.contains(path)) return true;
    const std::string_view parent = ParentPath(path);
    return !parent.empty() && empty_paths_.contains(parent);
  }
  // The directory `path` is in, if it is below the root (else empty).
  std::string_view ParentPath(std::string_view path) const {
    const size_t slash = path.rfind('/');
    if (slash == path.npos || slash + 1 <= base_.size()) return {};
    return path.substr(0, slash);
  }
  // Under name_mu_, after a stat under it found `path` empty: looks at its parent directory once.
  // When that is not there either (every object under it is packed, as small blobs and heads
  // are), J6 remembers the directory, and puts of new keys beside `path` need no stat at all.
  void FoundEmptyBesideLocked(const std::string& path) {
    const std::string_view parent = ParentPath(path);
    if (!journal_ || parent.empty() || dirs_seen_.contains(parent)) return;
    auto info = fs_->Stat(std::string(parent));
    if (info.status().IsNotFound()) return FoundEmptyLocked(std::string(parent));
    if (dirs_seen_.size() >= kEmptyPathsMax) dirs_seen_.clear();
    dirs_seen_.emplace(parent);  // there (or unknown): a stat per path, as before
  }
  // Under name_mu_, by a stat made under it too (Head checks that no file-form put started
  // during its unlocked one): that stat found `path` empty. Remembered only if no file-form put
  // runs now, nor a version of the path is in flight.
  void FoundEmptyLocked(const std::string& path) {
    if (!journal_ || file_form_puts_open_ > 0 || inflight_.contains(path)) return;
    if (empty_paths_.size() >= kEmptyPathsMax) empty_paths_.clear();
    empty_paths_.insert(path);
  }

  // Whether an object may have moved since FindPacked returned `moves` on the `attempt`th
  // look: then a read that found it gone looks again. A plain store cannot tell: it looks once
  // more.
  bool Moved(uint64_t moves, int attempt) {
    if (!journal_) return attempt == 0;
    std::lock_guard<std::mutex> g(name_mu_);
    return moves_ != moves;
  }

  // A plain store must not write into a root whose journal its owner keeps: the journal holds
  // versions (packed ones, and the records replay brings back) that would override the write.
  Status RefuseIfJournalKept(std::string_view key) {
    WMBT_RETURN_IF_ERROR(view_->Refresh());
    if (!view_->journaled()) return Status::Ok();
    return Status::FailedPrecondition(
        "put " + std::string(key) + " in " + Describe() +
        ": the directory keeps a journal of its owner (the store of the data directory); write "
        "through a store open on it");
  }

  static std::vector<ListEntry> EntriesOf(ListPage page) {
    std::vector<ListEntry> out;
    out.reserve(page.objects.size() + page.common_prefixes.size());
    size_t i = 0, j = 0;
    while (i < page.objects.size() || j < page.common_prefixes.size()) {
      if (j == page.common_prefixes.size() ||
          (i < page.objects.size() && page.objects[i].key < page.common_prefixes[j])) {
        std::string name = page.objects[i].key;
        out.push_back(ListEntry{std::move(name), false, std::move(page.objects[i++])});
      } else {
        out.push_back(ListEntry{std::move(page.common_prefixes[j++]), true, {}});
      }
    }
    return out;
  }

  Result<std::unique_ptr<FileLock>> Lock() { return fs_->LockFileBlocking(lock_path_); }

  // ---- The journal (journaled mode only; see docs/architecture.md) ----
  //
  // A journaled put writes its bytes to an unnamed temporary file (no sync), then, under
  // name_mu_, checks its condition against the key's newest version (an in-flight one first),
  // appends its record and queues its naming. The temporary file gets its name only once the
  // journal is synced up to the record (ApplySynced, by whichever thread gets there first):
  // so any name on disk is vouched for by a durable record, and with it by every earlier record
  // (journal.h). A put with durable_on_return waits for that; a deferred one returns at once.
  //
  // Invariants (under name_mu_):
  //   J1. LSN order = the order in which versions of a key were decided (condition checked and
  //       record appended in one critical section), and actions_ is in LSN order.
  //   J2. inflight_[path] is the newest appended but not yet applied version of the path.
  //   J3. Actions are applied (rename/unlink) in LSN order, only when synced_lsn >= their LSN.
  //   J4. While a put too large for the journal writes its file directly, inflight_[path] is a
  //       `direct` reservation: no journaled version of the path is in flight meanwhile, and none
  //       is decided until its kExternal record is appended (BeforeDirectPut, AfterDirectPut).
  //   J5. Once broken_ is set, every later call fails with it, reads included: the directory may
  //       then contradict the journal (a version not named, a write-back that failed), and only
  //       a reopen, which replays the journal, makes them agree again.
  //   J6. empty_paths_ holds only paths with no file and no directory. An entry is added after a
  //       stat found the path empty with no file-form put running or started since, nor a
  //       version of the path in flight; every file-form put (JournaledPut, a direct put) drops
  //       its key's path and its ancestors' before it may create any of them (FileFormPut).
  //       Only the owner creates files in its root (plain stores' puts are refused), so a known
  //       empty path needs no stat; nor does a path whose parent directory is known empty.

  struct InFlight {
    uint64_t lsn = 0;
    bool deleted = false;
    std::string etag;
    bool direct = false;  // J4 (lsn 0)
    bool file = false;    // a version with a file (else packed or deleted)
  };
  struct Action {
    uint64_t lsn = 0;
    std::string key;
    std::unique_ptr<PendingFile> file;  // a version with a file, to name
    bool packed = false;                // a packed version (else, without a file: a delete)
    bool remove_file = false;           // packed or delete: the predecessor has a file
    uint64_t batch_offset = 0;          // packed: for Journal::Locate
    PackedEntry entry;                  // packed: all but where it is
  };
  struct Version {
    bool exists = false;
    std::string etag;
    uint64_t lsn = 0;   // > 0 while in flight
    bool file = false;  // it has a file (named, or in flight)
  };

  // The key's newest version, once no direct put of it is running (J4); broken_ if set (J5).
  // `file_form`: for a version that will be a file, which a directory at the path (keys under
  // it, beside a packed or in-flight version) leaves no room for: FailedPrecondition then, before
  // anything is decided (its rename would fail after its record is durable).
  // REQUIRES: `lock` holds name_mu_ (released while waiting).
  Result<Version> CurrentLocked(std::unique_lock<std::mutex>& lock, std::string_view key,
                                const std::string& path, bool file_form) {
    auto it = inflight_.find(path);
    while (it != inflight_.end() && it->second.direct) {
      direct_done_.wait(lock);
      it = inflight_.find(path);
    }
    WMBT_RETURN_IF_ERROR(broken_);
    const PackedEntry* packed = it == inflight_.end() ? packed_.Find(key) : nullptr;
    if (it != inflight_.end() || packed) {
      Version v = packed ? Version{true, PackedEtag(*packed), 0, false}
                         : Version{!it->second.deleted, it->second.etag, it->second.lsn,
                                   it->second.file};
      // A packed version may have a file beside it: a large put over it that a crash cut after
      // its file was named, before its record was durable. The packed version stands; the file
      // goes with the next version (remove_file).
      if (file_form || (packed && !KnownEmptyLocked(path))) {
        auto info = fs_->Stat(path);
        if (info.ok() && info->is_dir && file_form) return DirectoryInTheWay(key);
        if (info.ok() && !info->is_dir && packed) v.file = true;
        if (info.status().IsNotFound()) FoundEmptyLocked(path);
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

  // Under name_mu_: whether a put of `key` with `options` may replace `current`. OK: it may;
  // Conflict: it may not (the message says why); `*exists` set for an if-absent put that found
  // the key (a Conflict the caller finishes itself: see FinishPut).
  static Status CheckCondition(std::string_view key, const Version& current,
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
      return Status::Conflict("object " + std::string(key) + " has etag " + current.etag +
                              ", not " + options.if_match);
    }
    return Status::Ok();
  }

  // After a journaled put was decided (lsn > 0, the record appended) or found its key existing
  // (exists, lsn: the in-flight winner's or 0). With `sync_later`, a decided put that must be
  // synced is not: its LSN goes there instead, for the caller to await (PutAsync).
  Result<std::string> FinishPut(std::string_view key, const std::string& path,
                                const PutOptions& options, bool exists, uint64_t lsn,
                                bool sync_now, std::string etag, uint64_t* sync_later = nullptr) {
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

  // Whether a deferred put must sync anyway (bounded memory and temporaries). Under name_mu_.
  bool DeferredBacklogFull() const {
    return actions_.size() >= kDeferredNamesMax || journal_->unsynced_bytes() >= kDeferredBytesMax;
  }

  // A packed put: the record is the object (invariant 6); no file is written.
  Result<std::string> PackedPut(std::string_view key, const std::string& path,
                                const std::vector<ByteView>& parts, size_t bytes,
                                const PutOptions& options, uint64_t* sync_later = nullptr) {
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
    return FinishPut(key, path, options, exists, entry.lsn, sync_now, std::move(etag),
                     sync_later);
  }

  Result<std::string> JournaledPut(std::string_view key, const std::string& dir,
                                   const std::string& path, const std::vector<ByteView>& parts,
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

  Status JournaledDelete(std::string_view key) {
    const std::string path = PathOf(key);
    uint64_t lsn = 0;
    {
      std::unique_lock<std::mutex> lock(name_mu_);
      auto current = CurrentLocked(lock, key, path, /*file_form=*/false);
      if (!current.ok()) {
        WMBT_RETURN_IF_ERROR(broken_);  // whatever its code
        // A directory at the path is not an object: absent, as for the plain store.
        return current.status().code() == Code::kFailedPrecondition ? Status::Ok()
                                                                    : current.status();
      }
      if (!current->exists) return Status::Ok();
      lsn = journal_->Append(JournalOp::kDelete, key, {});
      inflight_[path] = InFlight{lsn, true, {}, false, false};
      Action a{lsn, std::string(key), nullptr, /*packed=*/false, current->file};
      actions_.push_back(std::move(a));
    }
    return SyncThrough(lsn).WithContext("delete " + std::string(key));
  }

  // Before reading `path`: if a journaled version of it is in flight, waits until it is applied
  // (a put: named; then it is durable) — or answers NotFound at once for an in-flight delete.
  // Fails once the store is broken (J5): checked under the same lock as the in-flight version,
  // so a read never serves the predecessor of a version whose apply failed.
  Status AwaitJournaled(std::string_view key, const std::string& path) {
    if (!journal_) return Status::Ok();
    uint64_t lsn = 0;
    {
      std::lock_guard<std::mutex> g(name_mu_);
      WMBT_RETURN_IF_ERROR(broken_);
      auto it = inflight_.find(path);
      if (it == inflight_.end()) return Status::Ok();
      // A direct put not yet returned: the file on disk is its predecessor or it, both durable.
      if (it->second.direct) return Status::Ok();
      if (it->second.deleted) return NotFound(key);
      lsn = it->second.lsn;
    }
    return SyncThrough(lsn);
  }

  // An object too large for the journal goes the un-journaled way (content, name, directory
  // synced). For a durable put every record appended so far is synced first, so that its name
  // never reaches the disk before a record it was ordered after. Then its in-flight predecessors
  // are applied and the key is reserved (J4): its condition is checked against the newest
  // version, and no journaled put or delete of the key is decided (so none is applied over it,
  // nor wins the same condition) until AfterDirectPut. On OK, AfterDirectPut must follow.
  // A packed current version is checked here (the file writes below see no file) and then
  // replaced unconditionally: `options` becomes an overwrite.
  Status BeforeDirectPut(std::string_view key, const std::string& path, PutOptions* options) {
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

  // Ends BeforeDirectPut's reservation. After a put that wrote its file: a kExternal record, in
  // the same critical section, so that replay never puts an earlier journaled version of the key
  // back over the file, and every later version of the key gets a later LSN.
  //
  // The file supersedes a packed predecessor (invariant 6), whose entry goes only once the
  // record is durable, as every change of the index (the packed-index snapshot relies on it):
  // then the put waits for that sync, keeping the key reserved (reads serve the predecessor
  // meanwhile: the put has not returned).
  Status AfterDirectPut(std::string_view key, const std::string& path, bool written,
                        const PutOptions& options) {
    uint64_t lsn = 0;
    bool over_packed = false;
    {
      std::lock_guard<std::mutex> g(name_mu_);
      if (written) {
        lsn = journal_->Append(JournalOp::kExternal, key, {});
        over_packed = packed_.Find(key) != nullptr;
      }
      if (!over_packed) inflight_.erase(path);
    }
    Status s;
    if (over_packed) {
      s = SyncThrough(lsn);
      std::lock_guard<std::mutex> g(name_mu_);
      if (s.ok() && packed_.Erase(key)) ++moves_;
      inflight_.erase(path);
    }
    direct_done_.notify_all();
    if (!s.ok() || over_packed) return s;
    return written && options.durable_on_return ? SyncThrough(lsn) : Status::Ok();
  }

  Status SyncThrough(uint64_t lsn) {
    WMBT_RETURN_IF_ERROR(journal_->AwaitSynced(lsn));
    // The round's leader applied it already (Journal::SetOnSynced), unless the store broke:
    // then ApplySynced reports why.
    // (lsn 0 asks for nothing new, and still reports a broken store, as the slow path does.)
    if (lsn > 0 && applied_through_.load(std::memory_order_acquire) >= lsn) return Status::Ok();
    return ApplySynced();
  }

  // Names (or unlinks) every queued version whose record is durable, in LSN order (J3).
  Status ApplySynced() {
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
        BreakLocked(s.WithContext("applying the journaled version of " + a.key + " in " +
                                  Describe() + "; reopen the store to recover it"));
      }
    }
    // Locate is needed only for records still to apply.
    journal_->ForgetThrough(actions_.empty() ? synced : std::min(synced, actions_.front().lsn - 1));
    if (broken_.ok()) applied_through_.store(synced, std::memory_order_release);
    return broken_;
  }

  // The journal's leader, at a file that got no more records (and a new file begun).
  void Retired(const std::string& path, uint64_t last_lsn, uint64_t bytes) {
    {
      std::lock_guard<std::mutex> g(name_mu_);
      uint64_t first = 0;
      if (ParseJournalFileName(path.substr(base_.size()), &first)) segments_[first].bytes = bytes;
      retired_since_snapshot_ += bytes;
      segments_[last_lsn + 1] = Segment{SegmentPath(last_lsn + 1), 0, false};
    }
    checkpoints_->Submit([this, path, last_lsn] { Checkpoint(path, last_lsn); });
  }

  // Background, for a journal file that got no more records: once the versions it vouches for
  // are named and the file system has written everything back, the file is checkpointed — no
  // longer needed for its files, only for its live packed records, if any (CollectSegments).
  // One checkpoint thread takes the files in order; after a failure none is checkpointed or
  // deleted any more, so the journal files left on disk are always a contiguous run of LSNs,
  // replayed in order at the next open. Deleting a later file while an older one stays would
  // let the older file's records be replayed over newer versions (an acknowledged write rolled
  // back).
  //
  // The sync goes through sync_handle_, opened before this process wrote anything here, so a
  // write-back error of any file named since is reported (a descriptor opened now would miss
  // one that happened before). Such a file may never reach the disk, and what this store reads
  // of it may differ from its record, so a failure also stops the store (J5): the journal files
  // stay, and reopening replays them.
  void Checkpoint(const std::string& journal_path, uint64_t last_lsn) {
    if (checkpoint_failed_) return;
    Status s = SyncThrough(last_lsn);
    if (s.ok()) s = sync_handle_->Sync();
    if (s.ok()) s = WriteCheckpointMarker(last_lsn);
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

  void CheckpointFailed(const Status& s) {
    checkpoint_failed_ = true;
    MarkForRewrite();
    std::lock_guard<std::mutex> g(name_mu_);
    BreakLocked(s.WithContext("in " + Describe() +
                              " (the journal files are kept; reopen the store to recover)"));
  }

  // Under name_mu_: the first failure sticks, and SyncThrough takes the lock (to return it) from
  // then on.
  void BreakLocked(Status s) {
    if (!broken_.ok()) return;
    broken_ = std::move(s);
    applied_through_.store(0, std::memory_order_release);
  }

  // Whether the checkpoint thread should write a snapshot now: the journal retired since the
  // last one is at least kSnapshotEveryBytesPerByte times its size (a large index is not written
  // again for every journal file; an open reads at most that much journal more).
  bool SnapshotDue() {
    std::lock_guard<std::mutex> g(name_mu_);
    return retired_since_snapshot_ >= kSnapshotEveryBytesPerByte * snapshot_bytes_;
  }

  // Writes the packed-index snapshot (packed_snapshot.h) through `through` (C), every record up to
  // which is applied, so that an open reads only the journal files after it. Best effort: the
  // snapshot on disk, old or new, is checked against the journal when an open loads it. Journal
  // files are deleted without waiting for it: oldest first, so a snapshot whose next file is
  // gone covers no file left either, and the open reads every file (journal_replay.h).
  //
  // The entries are taken kSnapshotChunkEntries at a time under name_mu_, released in between
  // (puts do not wait for a large index). A key set or dropped meanwhile is in it in one state
  // or the other: every change after C is a record after C, which the open reads over it. A key
  // untouched after C has one state all along.
  void WriteIndexSnapshot(uint64_t through) {
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
      Warn("writing the packed-index snapshot of " + Describe() + " failed (the next open reads "
           "more of the journal): " + s.ToString());
      return;
    }
    std::lock_guard<std::mutex> g(name_mu_);
    snapshot_bytes_ = bytes.size();
    retired_since_snapshot_ = 0;
  }

  void Warn(const std::string& message) const {
    if (jopts_.warn) jopts_.warn(message);
  }

  // Deletes the oldest journal files while they are checkpointed and hold no live packed
  // record (invariant 6).
  Status CollectSegments() {
    while (true) {
      std::string path;
      {
        std::lock_guard<std::mutex> g(name_mu_);
        if (segments_.empty()) return Status::Ok();
        auto oldest = segments_.begin();
        if (!oldest->second.checkpointed || packed_.LiveRecords(oldest->first) > 0) {
          return Status::Ok();
        }
        path = oldest->second.path;
        segments_.erase(oldest);
      }
      // Readers holding an entry of this file looked it up before its records moved; they find
      // it gone and look again (Moved). Each deletion is durable before the next: a crash must
      // not keep an older file without a newer one (a gap in the LSNs).
      Status s = fs_->DeleteFile(path);
      if (s.ok() || s.IsNotFound()) s = fs_->SyncDir(root_);
      if (!s.ok()) return s.WithContext("deleting journal file " + path);
    }
  }

  // While the checkpointed journal files hold far more than their live packed records, copies
  // the live records of the oldest forward (same ETag and time: the versions do not change) so
  // that it can go.
  Status Compact() {
    while (true) {
      uint64_t oldest = 0;
      std::string path;
      std::vector<std::pair<std::string, PackedEntry>> live;
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
        live = packed_.EntriesIn(oldest);
      }
      uint64_t last = 0;
      for (const auto& [key, e] : live) {
        bool damaged = false;
        auto record = ReadPackedRecord(fs_, path, key, e, &damaged);
        if (!record.ok()) return record.status().WithContext("compacting the journal");
        const ByteView value = (*record)->view().subspan(e.record_bytes - e.size -
                                                         kPackedValuePrefixBytes);
        std::lock_guard<std::mutex> g(name_mu_);
        const PackedEntry* now = packed_.Find(key);
        // Skipped if a newer version came meanwhile (it makes this one dead).
        if (!now || now->lsn != e.lsn || inflight_.count(PathOf(key))) continue;
        Action a{0, key, nullptr, /*packed=*/true, /*remove_file=*/false};
        a.entry = e;
        a.lsn = a.entry.lsn = journal_->Append(JournalOp::kPutPacked, key, {value},
                                                &a.batch_offset, damaged);
        inflight_[PathOf(key)] = InFlight{a.lsn, false, PackedEtag(e), false, false};
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

  Status WriteCheckpointMarker(uint64_t lsn) {
    const std::string text = std::to_string(lsn) + "\n";
    return fs_->WriteFileAtomic(checkpoint_marker_path_, {AsBytes(text)}, /*sync=*/true);
  }

  // After a failed sync through sync_handle_ (or a failed checkpoint): files named since the last
  // good sync may hold bytes that only the page cache has, which a reopen would read as right
  // and not write again — even after a mere restart of the process, as the cache outlives it.
  // The marker makes the next open write every journaled object again (new files, new ETags)
  // before its sync. Best effort: if even this write fails, the journal files are still kept.
  void MarkForRewrite() {
    (void)fs_->WriteFileAtomic(rewrite_marker_path_,
                               {AsBytes("rewrite the journaled objects at the next open\n")},
                               /*sync=*/true);
  }

  // A plain store must not write into a root that a journaling owner holds: the owner's journal
  // would replay over it, and the owner decides conditions without the flock. Deletes stay
  // allowed (orphan GC; a deleted object the owner's replay brings back is an orphan again).
  Status RefuseIfJournaledElsewhere(std::string_view key) {
    if (!fs_->Stat(owner_lock_path_).ok()) return Status::Ok();  // never journaled
    // Probes of plain stores take turns, so that one never mistakes another probe for an owner.
    auto probe_turn = fs_->LockFileBlocking(owner_lock_path_ + "~probe");
    if (!probe_turn.ok()) return probe_turn.status();
    auto owner = fs_->LockFile(owner_lock_path_, "probe by pid " + std::to_string(getpid()));
    if (owner.ok()) return Status::Ok();
    return Status::FailedPrecondition("put " + std::string(key) + " in " + Describe() +
                                      ": the directory is owned by a journaling process (" +
                                      owner.status().message() + "); write through it");
  }

  Status RemoveFile(std::string_view key, const std::string& path) {
    Status s = fs_->DeleteFile(path);
    if (!s.ok() && !s.IsNotFound()) return s.WithContext("delete " + std::string(key));
    RemoveEmptyParents(key);
    return Status::Ok();
  }

  // Best effort: drop directories a delete left empty, so deleted prefixes do not linger. A
  // put that loses its directory this way retries.
  void RemoveEmptyParents(std::string_view key) {
    for (std::string dir = ParentOf(key); !dir.empty(); dir = ParentOf(dir)) {
      if (!fs_->DeleteFile(PathOf(dir)).ok()) break;
    }
  }

  // The content is written and synced outside any lock (blob uploads run in parallel); only the
  // directory sync is shared (invariant 4).
  Status Create(std::string_view key, const std::string& dir, const std::string& path,
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

  Status Replace(std::string_view key, const std::string& dir, const std::string& path,
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

  // Lists directory `rel` ("" or ending in '/') into the walk: its entries whose names start
  // with `filter`, files as keys and directories recursively (or as common prefixes at depth 0).
  //
  // Order: a file sorts as its key, a directory as key + "/". Entries are taken in name order,
  // which differs only where a directory "d" precedes names "d-..." or "d...." ('-' and '.' sort
  // before '/'): directories therefore wait in a min-heap until the next name sorts after them.
  Status ListDir(Walk& walk, const std::string& rel, std::string_view filter, int depth) {
    if (depth > kWalkDepthMax) return Status::Internal("list: directory tree too deep at " + rel);
    auto names = fs_->ListDir(PathOf(rel));
    if (!names.ok()) return names.status().IsNotFound() ? Status::Ok() : names.status();
    // Names the token excludes whatever their type are dropped unread; the rest come out of a
    // min-heap, so a page costs O(entries + page * log entries), not a sort of the directory.
    std::vector<std::string> heap;
    for (std::string& n : *names) {
      if (!IsValidKeySegment(n) || !n.starts_with(filter)) continue;
      std::string key = rel + n;
      if (SkippedByToken(key, walk.token) && SubtreeSkippedByToken(key + "/", walk.token)) continue;
      heap.push_back(std::move(n));
    }
    std::make_heap(heap.begin(), heap.end(), std::greater<>());

    std::priority_queue<std::string, std::vector<std::string>, std::greater<>> dirs;
    auto flush_dirs_before = [&](const std::string* bound) -> Status {
      while (!dirs.empty() && !walk.page.full() && (bound == nullptr || dirs.top() < *bound)) {
        std::string dir = dirs.top();
        dirs.pop();
        WMBT_RETURN_IF_ERROR(VisitDir(walk, dir, depth));
      }
      return Status::Ok();
    };
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      const std::string key = rel + heap.back();
      heap.pop_back();
      WMBT_RETURN_IF_ERROR(flush_dirs_before(&key));
      if (walk.page.full()) return Status::Ok();
      auto info = fs_->Stat(PathOf(key));
      if (!info.ok()) {
        if (info.status().IsNotFound()) continue;  // deleted while we list
        return info.status();
      }
      const std::string as_dir = key + "/";
      if (info->is_dir) {
        if (!SubtreeSkippedByToken(as_dir, walk.token)) dirs.push(as_dir);
      } else if (!SkippedByToken(key, walk.token)) {
        if (!walk.page.AddObject({key, info->size, EtagOf(*info), info->mtime_ns / 1000})) {
          return Status::Ok();
        }
      }
    }
    return flush_dirs_before(nullptr);
  }

  Status VisitDir(Walk& walk, const std::string& dir, int depth) {
    if (!(walk.group && depth == 0)) return ListDir(walk, dir, "", depth + 1);
    if (SkippedByToken(dir, walk.token)) return Status::Ok();
    WMBT_ASSIGN_OR_RETURN(bool nonempty, HasObject(dir, depth + 1));
    if (nonempty) walk.page.AddPrefix(dir);
    return Status::Ok();
  }

  // Whether any object lives under directory `rel`: a common prefix is listed only if it groups
  // at least one key (empty directories and leftover temporaries do not count).
  Result<bool> HasObject(const std::string& rel, int depth) {
    if (depth > kWalkDepthMax) return Status::Internal("list: directory tree too deep at " + rel);
    auto names = fs_->ListDir(PathOf(rel));
    if (!names.ok()) {
      if (names.status().IsNotFound()) return false;
      return names.status();
    }
    for (const std::string& n : *names) {
      if (!IsValidKeySegment(n)) continue;
      auto info = fs_->Stat(PathOf(rel + n));
      if (!info.ok()) {
        if (info.status().IsNotFound()) continue;
        return info.status();
      }
      if (!info->is_dir) return true;
      WMBT_ASSIGN_OR_RETURN(bool found, HasObject(rel + n + "/", depth + 1));
      if (found) return true;
    }
    return false;
  }

  Status MissingOr(std::string_view key, const Status& s) {
    if (s.IsNotFound()) return NotFound(key);
    // A directory (a prefix of other keys) at the key's path is not an object.
    auto info = fs_->Stat(PathOf(key));
    if (info.ok() && info->is_dir) return NotFound(key);
    return s.WithContext(std::string(key));
  }

  Status NotFound(std::string_view key) const {
    return Status::NotFound("object " + std::string(key) + " not found in " + Describe());
  }

  Status DirectoryInTheWay(std::string_view key) const {
    return Status::FailedPrecondition(
        "object " + std::string(key) + " cannot be stored in " + Describe() +
        ": other keys live under it as a directory (a local store cannot hold both)");
  }

  FileSystem* fs_;
  DirSyncGroup syncs_;
  std::string root_;
  std::string base_;  // root_ with a trailing '/'
  std::string lock_path_;
  std::string owner_lock_path_;
  std::string rewrite_marker_path_;

  // Journaled mode only (journal_ set by OpenJournal).
  FsJournalOptions jopts_;
  Clock* clock_ = nullptr;
  std::string checkpoint_marker_path_;
  std::string snapshot_path_;
  std::unique_ptr<FileLock> owner_lock_;
  std::unique_ptr<FileSystemSyncHandle> sync_handle_;  // opened before the first write
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<Executor> checkpoints_;  // one thread: retired journal files, in order
  std::unique_ptr<Executor> completions_;  // one thread: PutAsync's completions, in order
  std::unique_ptr<Executor> syncer_;       // one thread: leads rounds while completions wait
  std::mutex name_mu_;
  std::unordered_map<std::string, InFlight> inflight_;  // by path (J2)
  std::deque<Action> actions_;                          // in LSN order (J1, J3)
  std::condition_variable direct_done_;                 // a direct reservation ended (J4)
  Status broken_;  // sticky: an apply or a checkpoint failed (J5)
  // Every action up to this LSN is applied, and broken_ is OK (0 once it is not).
  std::atomic<uint64_t> applied_through_{0};
  // Packed objects (invariant 6), the journal files and how far they are checkpointed.
  struct Segment {
    std::string path;
    uint64_t bytes = 0;  // known once retired
    bool checkpointed = false;
  };
  PackedIndex packed_;
  std::map<uint64_t, Segment> segments_;  // by first LSN
  // The size of the packed-index snapshot last written, and the journal bytes retired since.
  uint64_t snapshot_bytes_ = 0;
  uint64_t retired_since_snapshot_ = 0;
  uint64_t moves_ = 0;  // objects moved (packed entry set or dropped), for readers' retries
  // Journaled mode (J6): paths a stat found empty — no file, no directory — while no file-form
  // put could change that. Only this process creates files and directories in a journaled root,
  // and only in a file-form put (FileFormPut), which drops the key's path and its ancestors
  // first; so an entry stays true until then, and saves a failing stat per new blob and head.
  std::unordered_set<std::string, PathHash, std::equal_to<>> empty_paths_;
  // Directories FoundEmptyBesideLocked looked at and found there: not looked at again.
  std::unordered_set<std::string, PathHash, std::equal_to<>> dirs_seen_;
  uint64_t file_form_puts_ = 0;       // started so far
  uint32_t file_form_puts_open_ = 0;  // started, not ended
  // A plain store's view of the packed objects of a journaled root (null in journaled mode).
  std::unique_ptr<PackedView> view_;
  // Set by the checkpoint thread (and read by the destructor after draining it): a journal file
  // could not be retired, so no later one may be either.
  bool checkpoint_failed_ = false;
};

}  // namespace

std::unique_ptr<ObjectStore> NewFsObjectStore(std::string root, FileSystem* fs) {
  return std::make_unique<FsObjectStore>(std::move(root), fs, /*journaled=*/false);
}

Result<std::unique_ptr<ObjectStore>> OpenJournaledFsObjectStore(std::string root, FileSystem* fs,
                                                                FsJournalOptions options) {
  auto store = std::make_unique<FsObjectStore>(std::move(root), fs, /*journaled=*/true);
  WMBT_RETURN_IF_ERROR(store->OpenJournal(options));
  return std::unique_ptr<ObjectStore>(std::move(store));
}

}  // namespace wombatkv
