// Journal: the write-ahead log in front of FsObjectStore's directory form, with group commit.
//
// Records (journal_record.h) are appended to an in-memory batch under a mutex, which gives them
// their LSNs in call order. AwaitSynced(n) returns once every record up to n is on stable storage
// and the owner's hook (SetOnSynced) has run for it: one caller at a time (the leader) writes the
// whole batch gathered so far to the current file and fdatasyncs it; callers arriving meanwhile
// wait for it, each on its own Baton (base/futex.h): the leader runs the owner's hook, wakes
// exactly those its round covered, and hands the lead to the first it did not. So concurrent
// writers share one flush, and a record is durable only if every record before it is (one file,
// written in order; a file is synced before any record reaches the next: the journal on disk is
// always a prefix of the appended sequence).
//
// Rounds do not overlap: a leader's sync ends before the next one starts. Tried (session 12):
// up to 4 or 8 syncs in flight on the file, each round writing while earlier ones synced. On this
// project's test machine that doubled the syncs and slowed durable puts by 10-20%, although
// independent fdatasyncs of one file do overlap there (BENCHMARKS.md, "Session 12").
//
// Each batch written starts with a sync mark (journal_record.h, kSyncMark) saying up to which LSN
// the records before it were durable.
//
// Files are "<dir>/.~journal-<first lsn, 16 hex digits>" (the '~' keeps them out of listings
// and keys). When the current file has grown past `file_bytes_target`, the leader, right after a
// sync, starts the next file and passes the finished one to `on_retired` (checkpoint: see
// FsObjectStore). Files are zero-filled ahead of the write position (AppendFile::Preallocate), so
// the fdatasync of a small batch persists data only; a bulk batch (64 KiB or more, and a small
// one right after it) is written past the zeros instead, its sync committing the new size.
//
// AwaitSyncedThen is the same wait with a callback instead of a sleeping thread: behind a leader
// that stays for callbacks it queues and returns; with no leader the caller leads one round and,
// if callbacks still wait, hands the lead to a sync executor that leads while anything waits
// (the daemon's saves: docs/daemon.md, "Completions").
//
// A failed write or sync is sticky: every later AwaitSynced returns it (what reached the disk is
// unknown; reopening the store recovers from the journal prefix that did).
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/futex.h"
#include "object/journal_record.h"
#include "wombatkv/env.h"
#include "wombatkv/object_store.h"

namespace wombatkv {

inline constexpr std::string_view kJournalFilePrefix = ".~journal-";
// Written (synced) when a sync that would retire journal files failed: the next open then writes
// every journaled object again instead of trusting bytes it reads (they may be only cached).
inline constexpr std::string_view kJournalRewriteMarker = ".~journal.rewrite";

// Written (synced) when the journal failed (a write or sync error: sticky until a restart), with
// the LSN (decimal) through which its records were synced. What it wrote after may show in the
// page cache and yet never reach the disk (a failed write-back leaves its pages clean), so the
// next open ends the journal there and rewrites that file without them before it goes on.
inline constexpr std::string_view kJournalFailedMarker = ".~journal.failed";
// Space set aside for the failed marker (zeros, written at open): a journal that fails because
// the disk is full deletes it to make room for the marker, which it could not write otherwise.
inline constexpr std::string_view kJournalFailedMarkerReserve = ".~journal.failed.reserve";
inline constexpr size_t kJournalFailedMarkerReserveBytes = 64 << 10;

// The checkpoint (FsObjectStore): every journal record up to the LSN it holds (decimal) was
// applied and synced.
inline constexpr std::string_view kJournalCheckpointMarker = ".~journal.checkpoint";
// The next journal file while it is made ahead (Journal::SetNextFileExecutor): zeros only, never
// read; a crash may leave it, and Journal::Create deletes it.
inline constexpr std::string_view kJournalNextFileName = ".~journal.next";
// Its LSN; 0 if there is none.
Result<uint64_t> ReadJournalCheckpoint(FileSystem* fs, const std::string& path);

// The journal file name for first LSN `lsn` ("" if `name` is not one: then *lsn is untouched).
std::string JournalFileName(uint64_t lsn);
bool ParseJournalFileName(std::string_view name, uint64_t* lsn);

class Journal {
 public:
  // Called by the leader, without locks held, with a file that holds records up to `last_lsn`
  // (all synced) in its first `bytes`, and will get no more.
  using RetiredFn =
      std::function<void(const std::string& path, uint64_t last_lsn, uint64_t bytes)>;

  // Starts a new journal file in `dir` whose first record will have LSN `next_lsn`; its name
  // is durable on return. With `clock`, stats() times the syncs and zero-fills.
  static Result<std::unique_ptr<Journal>> Create(FileSystem* fs, std::string dir,
                                                 uint64_t next_lsn, uint64_t file_bytes_target,
                                                 RetiredFn on_retired, Clock* clock = nullptr);
  ~Journal();

  // Encodes a record into the batch and returns its LSN. No I/O. `batch_offset` (optional)
  // receives where the record starts in its batch, for Locate. `value_damaged`: see
  // EncodeJournalRecord. With `value_owner`, which keeps the value's bytes alive and unchanged,
  // the parts of the value of at least kValueBytesHeldMin are not copied: the batch holds them
  // (and the owner) until it is written. The value's checksum is computed before the lock.
  static constexpr size_t kValueBytesHeldMin = 16 << 10;
  uint64_t Append(JournalOp op, std::string_view key, const std::vector<ByteView>& value,
                  uint64_t* batch_offset = nullptr, bool value_damaged = false,
                  std::shared_ptr<const void> value_owner = nullptr);

  // Where a synced record landed: the file (by its first LSN) and the offset in it. REQUIRES:
  // `lsn` is synced, not yet forgotten, and `batch_offset` is what Append gave for it.
  struct Location {
    uint64_t file_first_lsn = 0;
    uint64_t offset = 0;
  };
  Location Locate(uint64_t lsn, uint64_t batch_offset) const;
  // Drops what Locate needs for records up to `lsn`.
  void ForgetThrough(uint64_t lsn);

  // Returns once every record with LSN <= `lsn` is durable (leading a round if needed).
  // REQUIRES: not called from a callback of AwaitSyncedThen (checked).
  Status AwaitSynced(uint64_t lsn);

  // Calls `done` once every record with LSN <= `lsn` is durable (OK) or the journal failed (its
  // error): at once when that is already so; else, when a leader that stays for callbacks is
  // running, later on that leader's thread; else this thread leads (as AwaitSynced would) until
  // nothing waits any more — running `done` and every callback queued meanwhile — or, if the
  // running leader is one that leaves (a blocking caller's), it waits as AwaitSynced and then
  // calls `done`. So a caller that finds a leader returns at once, and one leader syncs round
  // after round for everyone without a wake-up per caller (the daemon's saves: docs/daemon.md,
  // "Completions").
  // `done` runs on the leader's thread (or the completion executor: SetCompletionExecutor),
  // after the owner's hook (SetOnSynced), in no promised order among callbacks (but see
  // SetCompletionExecutor) and with none with respect to the blocked callers the same round
  // covered. It must be short and must not wait for this journal (AwaitSynced checks).
  void AwaitSyncedThen(uint64_t lsn, std::function<void(Status)> done);

  // Called by a leader, without the journal's lock, after a successful round and before any
  // caller learns that the round's records are durable (AwaitSynced, AwaitSyncedThen): the owner
  // acts on the newly durable records once, in one thread, instead of every woken caller
  // contending for the owner's lock to find them done. A caller arriving while it runs waits.
  // REQUIRES: set before the first AwaitSynced.
  void SetOnSynced(std::function<void()> fn) { on_synced_ = std::move(fn); }
  // Called once, without locks held, by the round that makes the journal fail (error() set from
  // then on), with that error. Set before the first append.
  void SetOnFailed(std::function<void(const Status&)> fn) { on_failed_ = std::move(fn); }

  // Where AwaitSyncedThen's callbacks run: a round's, in one task, while the leader goes on to
  // the next round (its sync then overlaps with the callbacks' work) — when the round has more
  // than kInlineCallbacksMax of them. A leader runs a smaller round's itself before it goes on
  // (or hands the lead over), and a leader about to leave its last round's, as every leader
  // does with no executor (the default); but not while a task given earlier has not finished:
  // a leader never overtakes callbacks queued there. `executor` must outlive the callbacks it
  // is given. REQUIRES: set before the first AwaitSyncedThen.
  void SetCompletionExecutor(Executor* executor) { completions_ = executor; }
  // A round with at most this many callbacks runs them on its leader before the next sync rather
  // than paying a thread hop (two context switches and a futex wake on the path every save waits
  // on; BENCHMARKS.md, "Session 22"). A bigger round is worth the hop, and its callbacks would
  // hold the next sync back longer.
  static constexpr size_t kInlineCallbacksMax = 8;
  // A thread to hand a staying lead to: with it, a caller's thread leads at most one round for
  // callbacks (a server's event loop or worker is not held), and the executor's thread leads the
  // rounds after it while anything waits. Without (the default), the caller's thread stays.
  // A caller of AwaitSyncedThen that must not block (base/must_not_block.h: a server's event
  // loop running a save) leads no round at all, nor waits behind a leader that leaves: the
  // executor's thread does either for it, and the call returns at once.
  // `executor` must outlive every round: see AwaitIdle. REQUIRES: set before the first call.
  void SetSyncExecutor(Executor* executor) { syncer_ = executor; }
  // Where the next journal file is made ahead: created as kJournalNextFileName in `dir` and
  // zero-filled (its first step, synced) once the current file is half full, then renamed by
  // the round that retires the current file, which otherwise creates and zero-fills it on the
  // path of every caller waiting for that round (BENCHMARKS.md, "Session 45"). That round makes
  // it itself when none is ready, or when the rename fails (then none is made ahead any more).
  // `executor` must run every task it is given before the journal is destroyed (the destructor
  // waits for them). REQUIRES: set before the first append.
  void SetNextFileExecutor(Executor* executor);
  // What the rounds did so far: for a store's counters (ObjectStoreCounters, /metrics), so that
  // a slow save can be told apart from a slow disk.
  JournalCounters stats() const;
  // OK, or the sticky failure of a write or sync (every later round returns it).
  Status error() const;
  // Returns once no round runs or is handed over (no thread leads, syncing_ clear): before the
  // executors above go. REQUIRES: nobody appends or waits any more.
  void AwaitIdle();

  // If at least `min_bytes` (> 0) are batched and no round is running, writes the batch to the
  // file without syncing it and starts its write-back (AppendFile::StartWriteback), so that the
  // round that syncs it later has less to write and to wait for. Returns the journal's error, if
  // any (then it writes nothing). Meant for appenders that do not wait for durability themselves
  // (deferred puts); they bound what waits for a sync by unsynced_bytes().
  Status WriteBehind(size_t min_bytes);

  uint64_t appended_lsn() const;
  // The last record on stable storage. For the hook: AwaitSynced may not have returned yet for
  // the newest of them (it returns once the hook has run for the round that synced them).
  uint64_t synced_lsn() const;
  // Bytes appended but not yet durable: batched, or written by WriteBehind and not yet synced.
  size_t unsynced_bytes() const;
  // The file records go to now. REQUIRES: no AwaitSynced running (e.g. at close).
  const std::string& file_path() const { return file_path_; }
  // The first LSN of that file (its name). REQUIRES: as file_path.
  uint64_t file_first_lsn() const { return file_first_lsn_; }

 private:
  Journal(FileSystem* fs, std::string dir, uint64_t file_bytes_target, RetiredFn on_retired,
          Clock* clock);
  Status OpenFile(uint64_t first_lsn);             // leader only
  // A batch written to the file: by a round of AwaitSynced (written and synced) or of
  // WriteBehind (written only).
  struct Round {
    uint64_t first_lsn = 0, last_lsn = 0;
    Location start;  // of the batch
  };
  // Encoded records waiting for a round: bytes, with the large values held by reference where
  // their owner allowed it (Append). size() counts both: offsets are as written to the file.
  class Batch {
   public:
    size_t size() const { return bytes_.size() + held_bytes_; }
    bool empty() const { return size() == 0; }
    std::string& bytes() { return bytes_; }  // to encode into, at the end
    void Hold(ByteView value, std::shared_ptr<const void> owner);
    // The batch in file order, for one gathered write.
    void AppendParts(std::vector<ByteView>* parts) const;
    // Empty again, keeping the buffer; the held values' owners are released.
    void Clear();

   private:
    struct Held {
      size_t at;  // the value goes before bytes_[at]
      ByteView value;
      std::shared_ptr<const void> owner;
    };
    std::string bytes_;
    std::vector<Held> held_;
    size_t held_bytes_ = 0;
  };
  // Under mu_: makes `s` the journal's sticky error and drops the batch nobody will write.
  void Fail(const Status& s);
  // `s` as error() reports it: where, and what the store's owner must do.
  Status Failed(const Status& s) const;
  // Under mu_: takes the batch (records written_+1 .. appended_) and encodes its sync mark.
  Batch TakeBatchLocked(Round* round, std::string* mark);
  // AwaitSynced; a caller handed the lead leads as for callbacks if `for_callbacks`.
  Status AwaitSyncedAs(uint64_t lsn, bool for_callbacks);
  // Under mu_ (released meanwhile): rounds until `lsn` is durable or the journal failed, then
  // releases what they covered; with `stay_for_callbacks`, leads on while callbacks or blocked
  // callers wait (or hands that over to the sync executor). Returns the journal's error.
  // REQUIRES: syncing_ set by this thread.
  Status LeadLocked(std::unique_lock<std::mutex>& lock, uint64_t lsn, bool stay_for_callbacks);
  // The sync executor's thread leads for callbacks from now on. REQUIRES: syncing_ and
  // async_lead_ set (the lead is this caller's to hand), mu_ not held.
  void SubmitLead();
  // Under mu_ (released meanwhile): writes and syncs everything appended so far.
  void SyncRoundLocked(std::unique_lock<std::mutex>& lock);
  struct Waiter;
  struct Callback {
    uint64_t lsn = 0;
    std::function<void(Status)> done;
  };
  // What a finished round (or WriteBehind) releases: covered waiters and callbacks, the waiter
  // to hand the lead to, and whether the leader stays instead.
  struct Covered {
    Status result;
    std::vector<Waiter*> waiters;
    std::vector<Callback> callbacks;
    Waiter* next = nullptr;
    bool stay = false;
  };
  // Under mu_: takes what the rounds so far covered and decides who leads next (syncing_,
  // async_lead_).
  Covered TakeCoveredLocked(bool stay_for_callbacks);
  // Without mu_: runs the callbacks, then wakes the waiters and hands over the lead.
  void RunCovered(Covered& covered);
  // Leader only: writes a batch; `*round` gets where it went.
  Status Write(const std::string& mark, const Batch& batch, Round* round);
  // Leader only, right after a sync: starts the next file once this one is full.
  Status RetireFileIfFull(uint64_t last_lsn);
  // Leader only: gives next_executor_ the making of the next file, unless one is ready or
  // being made.
  void MakeNextFileAhead();
  // On next_executor_: kJournalNextFileName, created over any file by that name and zero-filled.
  Result<std::unique_ptr<AppendFile>> MakeNextFile();
  // The file made ahead, or null if none is ready.
  std::unique_ptr<AppendFile> TakeNextFile();
  std::string NextFilePath() const { return dir_ + "/" + std::string(kJournalNextFileName); }
  // Leader only: file.Preallocate(bytes), timed and counted.
  Status Preallocate(AppendFile& file, uint64_t bytes);
  uint64_t NowMicros() const { return clock_ ? clock_->NowMicros() : 0; }

  FileSystem* const fs_;
  const std::string dir_;
  const uint64_t file_bytes_target_;
  const RetiredFn on_retired_;
  std::function<void()> on_synced_;
  std::function<void(const Status&)> on_failed_;
  std::atomic<bool> failure_reported_{false};
  // Tells on_failed_ (once) what Fail(s) will record; the caller holds no lock.
  void ReportFailure(const Status& s);
  Executor* completions_ = nullptr;
  Executor* syncer_ = nullptr;
  Clock* const clock_;
  // stats(): written by the leader, read by anyone.
  std::atomic<uint64_t> syncs_{0}, records_synced_{0}, sync_micros_{0};
  std::atomic<uint64_t> preallocations_{0}, preallocate_micros_{0};
  std::atomic<uint32_t> handed_off_{0};  // tasks given to completions_, not finished

  // A thread in AwaitSynced while another leads a round; lives on that thread's stack.
  // Released once: covered (result set) or handed the lead. A Baton (base/futex.h), not a
  // mutex and condition variable (the woken waiter often slept again on the mutex its releaser
  // held) nor std::binary_semaphore (libstdc++'s yields the core a few times before it sleeps:
  // with more waiters than cores, half the context switches of a durable-put load).
  struct Waiter {
    uint64_t lsn = 0;
    bool lead = false;
    Status result;
    Baton released;
  };

  mutable std::mutex mu_;
  std::vector<Waiter*> waiters_;  // not yet released, in arrival order
  std::vector<Callback> callbacks_;  // AwaitSyncedThen's, not yet run; only while async_lead_
  Batch batch_;                 // encoded records after the last round's
  uint64_t appended_ = 0;       // LSN of the last appended record
  uint64_t written_ = 0;        // LSN of the last record written to the file
  size_t written_unsynced_bytes_ = 0;  // bytes WriteBehind wrote since the last sync
  uint64_t synced_ = 0;         // LSN of the last durable record
  // LSN through which callers are told records are durable: synced_ once the owner's hook has
  // run for it (SetOnSynced). A caller arriving while the hook runs waits for its end.
  uint64_t visible_ = 0;
  bool syncing_ = false;        // a leader is writing/syncing (or a WriteBehind writing)
  bool async_lead_ = false;     // that leader stays until no callback or caller waits
  int leaders_ = 0;             // threads leading a round or running its release (AwaitIdle)
  std::condition_variable idle_cv_;  // leaders_ fell to 0
  Status error_;                // sticky
  std::deque<Round> rounds_;    // written rounds not yet forgotten, in LSN order

  // The leader's: only the thread with syncing_ set touches these.
  std::unique_ptr<AppendFile> file_;
  std::string file_path_;
  uint64_t file_first_lsn_ = 0;
  uint64_t file_bytes_ = 0;        // written to the current file
  uint64_t preallocated_ = 0;      // the current file's zero-filled (or written) length
  bool last_round_bulk_ = false;   // the last round wrote a bulk batch (no zeros ahead)
  Batch spare_;                    // the previous batch's buffer, reused

  bool next_asked_ = false;  // MakeNextFileAhead ran since the current file began

  // The next file, made ahead (SetNextFileExecutor).
  Executor* next_executor_ = nullptr;  // null: none is made ahead
  std::mutex next_mu_;
  std::condition_variable next_cv_;        // next_making_ fell
  std::unique_ptr<AppendFile> next_file_;  // ready to be renamed
  bool next_making_ = false;               // a task of next_executor_ is making it
};

}  // namespace wombatkv
