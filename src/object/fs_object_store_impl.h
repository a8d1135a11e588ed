// FsObjectStore, the local-directory L2: the class shared by its three source files —
// fs_object_store.cc (reads, writes, deletes of files), fs_object_store_journal.cc (the
// write-ahead journal and packed objects) and fs_object_store_list.cc (List). Only those
// include it; everyone else uses NewFsObjectStore / OpenJournaledFsObjectStore (env.h).
//
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
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
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

namespace wombatkv::fs_internal {

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

inline std::string EtagOf(const FileInfo& info) {
  return HexEtag("", info.inode, info.mtime_ns, info.size);
}

inline std::string ParentOf(std::string_view key) {
  size_t slash = key.find_last_of('/');
  return slash == std::string_view::npos ? std::string() : std::string(key.substr(0, slash));
}

class FsObjectStore final : public ObjectStore {
 public:
  // `journaled`: OpenJournal follows, and the store reads its own index of packed objects;
  // else it reads them through a view of the journal files its owner keeps.
  FsObjectStore(std::string root, FileSystem* fs, bool journaled);

  ~FsObjectStore() override;

  // Becomes the journaling owner of the root: takes the owner lock, replays what a crash left
  // in the journal, makes the result durable and starts a new journal file.
  Status OpenJournal(const FsJournalOptions& options);

  std::string Describe() const override { return "file://" + root_; }
  // The journal's group commits (zeros without a journal).
  ObjectStoreCounters Counters() const override;
  // The journal's sticky error, else broken_ (J5).
  Status Health() const override;

  Result<std::string> Put(std::string_view key, const std::vector<ByteView>& parts,
                          const PutOptions& options) override;

  // A durable put small enough to be packed completes from the journal (Journal::
  // AwaitSyncedThen): decided (condition checked, record appended) here, acknowledged by the
  // round that syncs it. Everything else completes here, as Put.
  void PutAsync(std::string_view key, const std::vector<ByteView>& parts, const PutOptions& options,
                PutDone done) override;

  // The un-journaled way: content synced, named, directory synced (invariant 4).
  Status WriteDirect(std::string_view key, const std::string& dir, const std::string& path,
                     const std::vector<ByteView>& parts, const PutOptions& options,
                     FileInfo* written);

  Result<ObjectData> Get(std::string_view key, uint64_t offset, uint64_t length) override;

  Result<ObjectInfo> Head(std::string_view key) override;

  Status Delete(std::string_view key) override;

  Result<ListPage> List(std::string_view prefix, std::string_view delimiter, std::string_view token,
                        size_t max_keys) override;

 private:
  struct Walk {
    ListPageBuilder& page;
    std::string_view token;
    bool group;  // delimiter "/": directories at the top level become common prefixes
  };

  std::string PathOf(std::string_view rel) const;

  std::string SegmentPath(uint64_t segment) const { return base_ + JournalFileName(segment); }

  // The key's packed entry (e->lsn == 0 if it is not packed), and a count of the moves of
  // objects so far, for Moved.
  Result<uint64_t> FindPacked(std::string_view key, PackedEntry* e);

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
  bool KnownEmptyLocked(const std::string& path) const;
  // The directory `path` is in, if it is below the root (else empty).
  std::string_view ParentPath(std::string_view path) const;
  // Under name_mu_, after a stat under it found `path` empty: looks at its parent directory once.
  // When that is not there either (every object under it is packed, as small blobs and heads
  // are), J6 remembers the directory, and puts of new keys beside `path` need no stat at all.
  void FoundEmptyBesideLocked(const std::string& path);
  // Under name_mu_, by a stat made under it too (Head checks that no file-form put started
  // during its unlocked one): that stat found `path` empty. Remembered only if no file-form put
  // runs now, nor a version of the path is in flight.
  void FoundEmptyLocked(const std::string& path);
  // Under name_mu_: whether a file sits at `path` beside its packed version — a large put over
  // it that a crash cut after the file was named, before its record was durable. The next
  // version of the key (a put, a delete, or compaction's copy of the packed one) removes it.
  bool FileBesidePackedLocked(const std::string& path);

  // Whether an object may have moved since FindPacked returned `moves` on the `attempt`th
  // look: then a read that found it gone looks again. A plain store cannot tell: it looks once
  // more.
  bool Moved(uint64_t moves, int attempt);

  // A plain store must not write into a root whose journal its owner keeps: the journal holds
  // versions (packed ones, and the records replay brings back) that would override the write.
  Status RefuseIfJournalKept(std::string_view key);

  static std::vector<ListEntry> EntriesOf(ListPage page);

  Result<std::unique_ptr<FileLock>> Lock() { return fs_->LockFileBlocking(lock_path_); }

  // ---- The journal (journaled mode only: fs_object_store_journal.cc; docs/architecture.md) ----
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
                                const std::string& path, bool file_form);

  // Under name_mu_: whether a put of `key` with `options` may replace `current`. OK: it may;
  // Conflict: it may not (the message says why); `*exists` set for an if-absent put that found
  // the key (a Conflict the caller finishes itself: see FinishPut).
  static Status CheckCondition(std::string_view key, const Version& current,
                               const PutOptions& options, bool* exists);

  // After a journaled put was decided (lsn > 0, the record appended) or found its key existing
  // (exists, lsn: the in-flight winner's or 0). With `sync_later`, a decided put that must be
  // synced is not: its LSN goes there instead, for the caller to await (PutAsync).
  Result<std::string> FinishPut(std::string_view key, const std::string& path,
                                const PutOptions& options, bool exists, uint64_t lsn, bool sync_now,
                                std::string etag, uint64_t* sync_later = nullptr);

  // Whether a deferred put must sync anyway (bounded memory and temporaries). Under name_mu_.
  bool DeferredBacklogFull() const;

  // A packed put: the record is the object (invariant 6); no file is written.
  Result<std::string> PackedPut(std::string_view key, const std::string& path,
                                const std::vector<ByteView>& parts, size_t bytes,
                                const PutOptions& options, uint64_t* sync_later = nullptr);

  Result<std::string> JournaledPut(std::string_view key, const std::string& dir,
                                   const std::string& path, const std::vector<ByteView>& parts,
                                   const PutOptions& options);

  Status JournaledDelete(std::string_view key);

  // Before reading `path`: if a journaled version of it is in flight, waits until it is applied
  // (a put: named; then it is durable) — or answers NotFound at once for an in-flight delete.
  // Fails once the store is broken (J5): checked under the same lock as the in-flight version,
  // so a read never serves the predecessor of a version whose apply failed.
  Status AwaitJournaled(std::string_view key, const std::string& path);

  // An object too large for the journal goes the un-journaled way (content, name, directory
  // synced). For a durable put every record appended so far is synced first, so that its name
  // never reaches the disk before a record it was ordered after. Then its in-flight predecessors
  // are applied and the key is reserved (J4): its condition is checked against the newest
  // version, and no journaled put or delete of the key is decided (so none is applied over it,
  // nor wins the same condition) until AfterDirectPut. On OK, AfterDirectPut must follow.
  // A packed current version is checked here (the file writes below see no file) and then
  // replaced unconditionally: `options` becomes an overwrite.
  Status BeforeDirectPut(std::string_view key, const std::string& path, PutOptions* options);

  // Ends BeforeDirectPut's reservation. After a put that wrote its file: a kExternal record, in
  // the same critical section, so that replay never puts an earlier journaled version of the key
  // back over the file, and every later version of the key gets a later LSN.
  //
  // The file supersedes a packed predecessor (invariant 6), whose entry goes only once the
  // record is durable, as every change of the index (the packed-index snapshot relies on it):
  // then the put waits for that sync, keeping the key reserved (reads serve the predecessor
  // meanwhile: the put has not returned).
  Status AfterDirectPut(std::string_view key, const std::string& path, bool written,
                        const PutOptions& options);

  Status SyncThrough(uint64_t lsn);

  // Names (or unlinks) every queued version whose record is durable, in LSN order (J3).
  Status ApplySynced();

  // The journal's leader, at a file that got no more records (and a new file begun).
  void Retired(const std::string& path, uint64_t last_lsn, uint64_t bytes);

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
  void Checkpoint(const std::string& journal_path, uint64_t last_lsn);

  void CheckpointFailed(const Status& s);

  // Under name_mu_: the first failure sticks, and SyncThrough takes the lock (to return it) from
  // then on.
  void BreakLocked(Status s);

  // Whether the checkpoint thread should write a snapshot now: the journal retired since the
  // last one is at least kSnapshotEveryBytesPerByte times its size (a large index is not written
  // again for every journal file; an open reads at most that much journal more).
  bool SnapshotDue();

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
  void WriteIndexSnapshot(uint64_t through);

  void Warn(const std::string& message) const;

  // Deletes the oldest journal files while they are checkpointed and hold no live packed
  // record (invariant 6).
  Status CollectSegments();

  // While the checkpointed journal files hold far more than their live packed records, copies
  // the live records of the oldest forward (same ETag and time: the versions do not change) so
  // that it can go.
  Status Compact();

  Status WriteCheckpointMarker(uint64_t lsn);
  // Corruption when the newest journal file's records, all synced up to `checkpoint`, end
  // before it (a damaged record header).
  Status CheckSyncedRecordsRead(const JournalReplayResult& replay, uint64_t checkpoint) const;
  // At open: kJournalFailedMarkerReserve's space, unless it is there (best effort, warned).
  void ReserveFailedMarkerSpace();
  // The journal failed: writes kJournalFailedMarker with its synced LSN (best effort, warned;
  // on a full disk the reserve is deleted to make room first).
  void MarkJournalFailed();
  // At open after a failure (the marker present, the replay cut there): rewrites the newest
  // journal file without what followed the cut, then deletes the marker (durably).
  Status DropUnsyncedTail(const JournalReplayResult& replay);

  // After a failed sync through sync_handle_ (or a failed checkpoint): files named since the last
  // good sync may hold bytes that only the page cache has, which a reopen would read as right
  // and not write again — even after a mere restart of the process, as the cache outlives it.
  // The marker makes the next open write every journaled object again (new files, new ETags)
  // before its sync. Best effort: if even this write fails, the journal files are still kept.
  void MarkForRewrite();

  // The sync through sync_handle_ (open, checkpoint, close), with the rewrite marker standing
  // from before it until ClearRewriteMarker, after the checkpoint marker that relies on it: a
  // process that dies after the sync reported a write-back error (the kernel reports it once),
  // before it wrote the marker, would leave cached bytes that the next open reads as right. Not
  // synced: only a restart that keeps the page cache needs it; after a machine crash the open
  // reads what the disk holds, and replay writes what differs.
  Status SyncRoot();
  // After the checkpoint marker: the sync it rests on succeeded (a marker left by a failure
  // stays: nothing checkpoints after one).
  Status ClearRewriteMarker();

  // A plain store must not write into a root that a journaling owner holds: the owner's journal
  // would replay over it, and the owner decides conditions without the flock. Deletes stay
  // allowed (orphan GC; a deleted object the owner's replay brings back is an orphan again).
  Status RefuseIfJournaledElsewhere(std::string_view key);

  Status RemoveFile(std::string_view key, const std::string& path);

  // Best effort: drop directories a delete left empty, so deleted prefixes do not linger. A
  // put that loses its directory this way retries.
  void RemoveEmptyParents(std::string_view key);

  // The content is written and synced outside any lock (blob uploads run in parallel); only the
  // directory sync is shared (invariant 4).
  Status Create(std::string_view key, const std::string& dir, const std::string& path,
                const std::vector<ByteView>& parts, FileInfo* written);

  Status Replace(std::string_view key, const std::string& dir, const std::string& path,
                 const std::vector<ByteView>& parts, const PutOptions& options, FileInfo* written);

  // Lists directory `rel` ("" or ending in '/') into the walk: its entries whose names start
  // with `filter`, files as keys and directories recursively (or as common prefixes at depth 0).
  //
  // Order: a file sorts as its key, a directory as key + "/". Entries are taken in name order,
  // which differs only where a directory "d" precedes names "d-..." or "d...." ('-' and '.' sort
  // before '/'): directories therefore wait in a min-heap until the next name sorts after them.
  Status ListDir(Walk& walk, const std::string& rel, std::string_view filter, int depth);

  Status VisitDir(Walk& walk, const std::string& dir, int depth);

  // Whether any object lives under directory `rel`: a common prefix is listed only if it groups
  // at least one key (empty directories and leftover temporaries do not count).
  Result<bool> HasObject(const std::string& rel, int depth);

  Status MissingOr(std::string_view key, const Status& s);

  Status NotFound(std::string_view key) const;

  Status DirectoryInTheWay(std::string_view key) const;

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
  std::string failed_marker_path_;   // kJournalFailedMarker
  std::string failed_reserve_path_;  // kJournalFailedMarkerReserve
  std::string snapshot_path_;
  std::unique_ptr<FileLock> owner_lock_;
  std::unique_ptr<FileSystemSyncHandle> sync_handle_;  // opened before the first write
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<Executor> checkpoints_;  // one thread: retired journal files, in order
  std::unique_ptr<Executor> completions_;  // one thread: PutAsync's completions, in order
  std::unique_ptr<Executor> syncer_;       // one thread: leads rounds while completions wait
  mutable std::mutex name_mu_;
  std::unordered_map<std::string, InFlight> inflight_;  // by path (J2)
  std::deque<Action> actions_;                          // in LSN order (J1, J3)
  std::condition_variable direct_done_;                 // a direct reservation ended (J4)
  Status broken_;  // sticky: an apply or a checkpoint failed (J5)
  // Set (once, for good) when broken_ is set or the journal fails: Health() is a load until then,
  // cheap enough for every put to ask.
  std::atomic<bool> maybe_unhealthy_{false};
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
  // The LSN C the snapshot on disk reflects (0: none). Collecting the journal file at C + 1
  // deletes the snapshot first: its entries in collected files would otherwise disagree with the
  // journal at the next open, which then warns of what is no damage.
  uint64_t snapshot_through_ = 0;
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

}  // namespace wombatkv::fs_internal
