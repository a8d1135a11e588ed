#include "object/journal.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "base/check.h"
#include "base/defer_scope.h"
#include "base/must_not_block.h"
#include "wombatkv/object_store.h"

namespace wombatkv {
namespace {

// Zero-filled ahead of the write position in steps of this much: one fsync (size and
// allocation) per step, fdatasyncs of data only in between.
constexpr uint64_t kPreallocateStepBytes = 4u << 20;

// A batch of at least this much is bulk: it is written past the zero-filled length rather than
// over zeros, which would double its bytes on disk (its fdatasync commits the new size too,
// which is small next to its write). 64 KiB, not 256: a lone writer of 64 KiB blocks paid a
// 4 MiB zero-fill every ~60 saves on its own round (one save in 60 waited 5-13 ms); written
// past the zeros its saves ran +25-29% faster with 20-28% less daemon CPU and a p99 of 1.3-2 ms
// instead of 7-14 ms, each fdatasync ~30 µs longer (BENCHMARKS.md, "Session 32").
constexpr uint64_t kBulkBatchBytes = 64u << 10;

}  // namespace

std::string JournalFileName(uint64_t lsn) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(lsn));
  return std::string(kJournalFilePrefix) + buf;
}

Result<uint64_t> ReadJournalCheckpoint(FileSystem* fs, const std::string& path) {
  auto bytes = fs->ReadFile(path, 0, kToEnd);
  if (bytes.status().IsNotFound()) return uint64_t{0};
  if (!bytes.ok()) return bytes.status();
  uint64_t lsn = 0;
  std::string_view text = AsChars((*bytes)->view());
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  auto r = std::from_chars(text.data(), text.data() + text.size(), lsn);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) {
    return Status::Corruption("the journal checkpoint " + path + " holds \"" + std::string(text) +
                              "\", not an LSN: delete it (the next open then checks every "
                              "journaled object against its file)");
  }
  return lsn;
}

bool ParseJournalFileName(std::string_view name, uint64_t* lsn) {
  if (!name.starts_with(kJournalFilePrefix) || name.size() != kJournalFilePrefix.size() + 16) {
    return false;
  }
  const char* first = name.data() + kJournalFilePrefix.size();
  uint64_t v = 0;
  auto r = std::from_chars(first, first + 16, v, 16);
  if (r.ec != std::errc() || r.ptr != first + 16) return false;
  *lsn = v;
  return true;
}

Journal::Journal(FileSystem* fs, std::string dir, uint64_t file_bytes_target, RetiredFn on_retired,
                 Clock* clock)
    : fs_(fs),
      dir_(std::move(dir)),
      file_bytes_target_(file_bytes_target),
      on_retired_(std::move(on_retired)),
      clock_(clock) {}

Journal::~Journal() {
  // Nor the zeros past the current file's records: each open begins a file, and a file that is
  // not the newest is never appended to again (a review, session 60: 20 short sessions of a
  // store left 81 MB of journal files).
  if (file_ && error_.ok()) (void)file_->Trim();
  std::unique_lock<std::mutex> l(next_mu_);
  next_cv_.wait(l, [&] { return !next_making_; });
  if (next_file_) {  // a closed store leaves no 4 MiB of zeros behind
    next_file_.reset();
    (void)fs_->DeleteFile(NextFilePath());
  }
}

Result<std::unique_ptr<Journal>> Journal::Create(FileSystem* fs, std::string dir,
                                                 uint64_t next_lsn, uint64_t file_bytes_target,
                                                 RetiredFn on_retired, Clock* clock) {
  WMBT_CHECK(next_lsn > 0);
  std::unique_ptr<Journal> j(
      new Journal(fs, std::move(dir), file_bytes_target, std::move(on_retired), clock));
  j->appended_ = j->written_ = j->synced_ = j->visible_ = next_lsn - 1;
  Status gone = fs->DeleteFile(j->NextFilePath());  // a crash's leftover: no record, never read
  if (!gone.ok() && !gone.IsNotFound()) return gone;
  WMBT_RETURN_IF_ERROR(j->OpenFile(next_lsn));
  return j;
}

Status Journal::OpenFile(uint64_t first_lsn) {
  std::string path = dir_ + "/" + JournalFileName(first_lsn);
  std::unique_ptr<AppendFile> file = TakeNextFile();
  if (file && !file->Rename(path).ok()) {
    // Made here, as without one made ahead; and no more made ahead if this file system cannot
    // rename them.
    file.reset();
    (void)fs_->DeleteFile(NextFilePath());
    std::lock_guard<std::mutex> g(next_mu_);
    next_executor_ = nullptr;
  }
  const bool preallocate = !file;  // one made ahead was zero-filled then
  if (!file) {
    WMBT_ASSIGN_OR_RETURN(file, fs_->NewAppendFile(path));
  }
  // A file that cannot be made whole does not stay: it holds no record.
  auto discard = [&](Status st) {
    file.reset();
    (void)fs_->DeleteFile(path);
    return st;
  };
  if (preallocate) {
    if (Status st = Preallocate(*file, kPreallocateStepBytes); !st.ok()) return discard(st);
  }
  // The name must be durable before a sync of the content can acknowledge anything.
  if (Status st = fs_->SyncDir(dir_); !st.ok()) return discard(st);
  file_ = std::move(file);
  file_path_ = std::move(path);
  file_first_lsn_ = first_lsn;
  file_bytes_ = 0;
  preallocated_ = kPreallocateStepBytes;
  next_asked_ = false;
  return Status::Ok();
}

void Journal::SetNextFileExecutor(Executor* executor) {
  std::lock_guard<std::mutex> g(next_mu_);
  next_executor_ = executor;
}

void Journal::MakeNextFileAhead() {
  next_asked_ = true;
  Executor* executor;
  {
    std::lock_guard<std::mutex> g(next_mu_);
    if (!next_executor_ || next_file_ || next_making_) return;
    executor = next_executor_;
    next_making_ = true;
  }
  executor->Submit([this] {
    // A failure (a full disk) is left to the round that needs the file: it tries again, and
    // fails the journal with the error if that fails too.
    auto file = MakeNextFile();
    std::lock_guard<std::mutex> g(next_mu_);
    if (file.ok()) next_file_ = std::move(file).value();
    next_making_ = false;
    next_cv_.notify_all();
  });
}

Result<std::unique_ptr<AppendFile>> Journal::MakeNextFile() {
  const std::string path = NextFilePath();
  Status gone = fs_->DeleteFile(path);  // a crash's leftover, or a rename that failed
  if (!gone.ok() && !gone.IsNotFound()) return gone;
  WMBT_ASSIGN_OR_RETURN(auto file, fs_->NewAppendFile(path));
  Status s = file->Preallocate(kPreallocateStepBytes);  // off every round's path: not counted
  if (!s.ok()) {
    file.reset();
    (void)fs_->DeleteFile(path);
    return s;
  }
  return file;
}

std::unique_ptr<AppendFile> Journal::TakeNextFile() {
  std::lock_guard<std::mutex> g(next_mu_);
  return std::move(next_file_);
}

void Journal::Batch::Hold(ByteView value, std::shared_ptr<const void> owner) {
  held_.push_back(Held{bytes_.size(), value, std::move(owner)});
  held_bytes_ += value.size();
}

void Journal::Batch::AppendParts(std::vector<ByteView>* parts) const {
  size_t from = 0;
  for (const Held& h : held_) {
    parts->push_back(AsBytes(std::string_view(bytes_).substr(from, h.at - from)));
    parts->push_back(h.value);
    from = h.at;
  }
  parts->push_back(AsBytes(std::string_view(bytes_).substr(from)));
}

void Journal::Batch::Clear() {
  bytes_.clear();
  held_.clear();
  held_bytes_ = 0;
}

uint64_t Journal::Append(JournalOp op, std::string_view key, const std::vector<ByteView>& value,
                         uint64_t* batch_offset, bool value_damaged,
                         std::shared_ptr<const void> value_owner) {
  size_t value_bytes = 0;
  for (ByteView p : value) value_bytes += p.size();
  const uint32_t value_crc = ValueChecksum(value, value_damaged);  // outside the lock
  std::lock_guard<std::mutex> g(mu_);
  if (batch_offset) *batch_offset = batch_.size();
  std::string& out = batch_.bytes();
  EncodeJournalRecordHead(++appended_, op, key, value_bytes, value_crc, out);
  // A failed journal writes no more rounds: it would hold the values until it is destroyed.
  const bool hold = value_owner != nullptr && error_.ok();
  for (ByteView p : value) {
    if (hold && p.size() >= kValueBytesHeldMin) {
      batch_.Hold(p, value_owner);
    } else {
      out.append(reinterpret_cast<const char*>(p.data()), p.size());
    }
  }
  return appended_;
}

Journal::Location Journal::Locate(uint64_t lsn, uint64_t batch_offset) const {
  std::lock_guard<std::mutex> g(mu_);
  auto it = std::partition_point(rounds_.begin(), rounds_.end(),
                                 [&](const Round& r) { return r.last_lsn < lsn; });
  WMBT_CHECK(it != rounds_.end() && it->first_lsn <= lsn);
  return Location{it->start.file_first_lsn, it->start.offset + batch_offset};
}

void Journal::ForgetThrough(uint64_t lsn) {
  std::lock_guard<std::mutex> g(mu_);
  while (!rounds_.empty() && rounds_.front().last_lsn <= lsn) rounds_.pop_front();
}

uint64_t Journal::appended_lsn() const {
  std::lock_guard<std::mutex> g(mu_);
  return appended_;
}

uint64_t Journal::synced_lsn() const {
  std::lock_guard<std::mutex> g(mu_);
  return synced_;
}

size_t Journal::unsynced_bytes() const {
  std::lock_guard<std::mutex> g(mu_);
  return batch_.size() + written_unsynced_bytes_;
}

namespace {
// The journal whose leader runs completion callbacks on this thread right now (AwaitSyncedThen):
// such a callback must not wait for that journal — the thread that would sync it is its own.
thread_local const Journal* running_callbacks_of = nullptr;
// The journal whose lead this thread took over as its sync executor's (SetSyncExecutor).
thread_local const Journal* leading_for = nullptr;
}  // namespace

Status Journal::AwaitSynced(uint64_t lsn) {
  return AwaitSyncedAs(lsn, /*for_callbacks=*/false);
}

Status Journal::AwaitSyncedAs(uint64_t lsn, bool for_callbacks) {
  WMBT_CHECK_MSG(running_callbacks_of != this,
                 "a callback of Journal::AwaitSyncedThen waits for the same journal");
  std::unique_lock<std::mutex> lock(mu_);
  WMBT_CHECK(lsn <= appended_);
  if (visible_ >= lsn) return Status::Ok();
  if (!error_.ok()) return error_;
  if (syncing_) {
    // Wait for a round that covers `lsn` — or to be handed the lead. Only this thread is woken
    // for it: no herd re-taking mu_ after every round.
    Waiter self;
    self.lsn = lsn;
    waiters_.push_back(&self);
    lock.unlock();
    self.released.Wait();
    if (!self.lead) return self.result;
    lock.lock();
  }
  syncing_ = true;  // this thread leads; a handed-over lead finds it set already
  return LeadLocked(lock, lsn, for_callbacks);
}

void Journal::AwaitSyncedThen(uint64_t lsn, std::function<void(Status)> done) {
  std::unique_lock<std::mutex> lock(mu_);
  WMBT_CHECK(lsn <= appended_);
  if (visible_ >= lsn || !error_.ok()) {
    const Status s = visible_ >= lsn ? Status::Ok() : error_;
    lock.unlock();
    done(s);
    return;
  }
  if (syncing_ && async_lead_) {  // that leader stays until every callback is covered
    callbacks_.push_back(Callback{lsn, std::move(done)});
    return;
  }
  // A thread that must not wait out a sync (a server's event loop) leaves it to the sync
  // executor's: behind a leader that leaves, that thread waits as below (and leads for callbacks
  // if it is handed the lead); with no leader, it leads from the start.
  const bool elsewhere = syncer_ && MustNotBlock::Here();
  if (syncing_ && elsewhere) {
    lock.unlock();
    syncer_->Submit([this, lsn, done = std::move(done)]() mutable {
      leading_for = this;
      AwaitSyncedThen(lsn, std::move(done));
      leading_for = nullptr;
    });
    return;
  }
  if (syncing_) {
    // A leader that leaves once its own records are durable (a blocking caller, WriteBehind):
    // wait as a blocking caller would, and maybe be handed the lead — then lead as for
    // callbacks, so that those arriving next queue instead of waiting too.
    lock.unlock();
    done(AwaitSyncedAs(lsn, /*for_callbacks=*/true));
    return;
  }
  syncing_ = true;
  callbacks_.push_back(Callback{lsn, std::move(done)});
  if (elsewhere) {
    async_lead_ = true;
    lock.unlock();
    SubmitLead();
    return;
  }
  (void)LeadLocked(lock, lsn, /*stay_for_callbacks=*/true);
}

void Journal::SubmitLead() {
  syncer_->Submit([this] {
    leading_for = this;
    std::unique_lock<std::mutex> l(mu_);
    (void)LeadLocked(l, appended_, /*stay_for_callbacks=*/true);
    leading_for = nullptr;
  });
}

Status Journal::LeadLocked(std::unique_lock<std::mutex>& lock, uint64_t lsn,
                           bool stay_for_callbacks) {
  async_lead_ = stay_for_callbacks;
  ++leaders_;
  while (true) {
    do {
      SyncRoundLocked(lock);
    } while (synced_ < lsn && error_.ok());
    if (error_.ok() && on_synced_) {
      lock.unlock();
      on_synced_();
      lock.lock();
    }
    // Only now is the round durable for callers: one arriving while the hook ran waited for it.
    if (error_.ok()) visible_ = synced_;
    Covered covered = TakeCoveredLocked(stay_for_callbacks);
    // A caller's thread (a server's worker or event loop) leads one round, not a stream of them:
    // with a sync executor, that thread takes over the lead (syncing_ and async_lead_ stay set).
    const bool hand_over = covered.stay && syncer_ && leading_for != this;
    lock.unlock();
    // The callbacks first: the next leader's rounds then decide where theirs run after this
    // round's did (RunCovered).
    RunCovered(covered);
    if (hand_over) SubmitLead();
    lock.lock();
    if (!covered.stay || hand_over) {
      if (--leaders_ == 0) idle_cv_.notify_all();
      return covered.result;
    }
    lsn = appended_;  // one round covers everything appended so far
  }
}

void Journal::AwaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return !syncing_ && leaders_ == 0; });
}

void Journal::SyncRoundLocked(std::unique_lock<std::mutex>& lock) {
  // Take everything appended so far (later writers ride along).
  Round round;
  std::string mark;
  Batch batch = TakeBatchLocked(&round, &mark);
  lock.unlock();
  Status s = batch.empty() ? Status::Ok() : Write(mark, batch, &round);
  if (s.ok()) {
    const uint64_t start = NowMicros();
    s = file_->Sync();  // also covers what rounds of WriteBehind wrote
    syncs_.fetch_add(1, std::memory_order_relaxed);
    sync_micros_.fetch_add(NowMicros() - start, std::memory_order_relaxed);
  }
  // The round is durable once its sync succeeded, even if the next file cannot be made (a full
  // disk): synced_ must say so before the failure is reported, since the failed marker records
  // it and the next open cuts the journal there — below the next file's first LSN, it would
  // take that file for a gap.
  const bool synced = s.ok();
  if (synced) s = RetireFileIfFull(round.last_lsn);
  batch.Clear();  // releases held values, outside the lock
  lock.lock();
  spare_ = std::move(batch);
  if (synced) {
    records_synced_.fetch_add(round.last_lsn - synced_, std::memory_order_relaxed);
    written_ = synced_ = round.last_lsn;
    written_unsynced_bytes_ = 0;
    if (round.first_lsn <= round.last_lsn) rounds_.push_back(round);
  }
  if (s.ok()) return;
  lock.unlock();
  ReportFailure(s);  // may read synced_lsn()
  lock.lock();
  Fail(s);
}

Status Journal::WriteBehind(size_t min_bytes) {
  WMBT_CHECK(min_bytes > 0);
  std::unique_lock<std::mutex> lock(mu_);
  if (!error_.ok()) return error_;
  if (syncing_ || batch_.size() < min_bytes) return Status::Ok();
  syncing_ = true;
  ++leaders_;
  Round round;
  std::string mark;
  Batch batch = TakeBatchLocked(&round, &mark);
  lock.unlock();
  Status s = Write(mark, batch, &round);
  if (s.ok()) s = file_->StartWriteback();
  const size_t wrote = mark.size() + batch.size();
  batch.Clear();
  if (!s.ok()) ReportFailure(s);
  lock.lock();
  spare_ = std::move(batch);
  if (s.ok()) {
    written_ = round.last_lsn;
    written_unsynced_bytes_ += wrote;
    rounds_.push_back(round);
  } else {
    Fail(s);
  }
  Covered covered = TakeCoveredLocked(/*stay_for_callbacks=*/false);
  lock.unlock();
  RunCovered(covered);
  lock.lock();
  if (--leaders_ == 0) idle_cv_.notify_all();
  return covered.result;
}

Status Journal::Failed(const Status& s) const {
  // A full disk is the common cause, and a restart on a still-full disk cannot recover.
  return s.WithContext("journal " + file_path_ +
                       (s.code() == Code::kResourceExhausted
                            ? " (free space on its file system, then restart the store to recover)"
                            : " (restart the store to recover)"));
}

void Journal::ReportFailure(const Status& s) {
  if (on_failed_ && !failure_reported_.exchange(true)) on_failed_(Failed(s));
}

void Journal::Fail(const Status& s) {
  error_ = Failed(s);
  batch_.Clear();  // never written now: let go of the values it holds
}

Journal::Batch Journal::TakeBatchLocked(Round* round, std::string* mark) {
  Batch batch = std::move(batch_);
  batch_ = std::move(spare_);
  batch_.Clear();
  round->first_lsn = written_ + 1;
  round->last_lsn = appended_;
  if (!batch.empty()) EncodeSyncMark(round->first_lsn, synced_, *mark);
  return batch;
}

Journal::Covered Journal::TakeCoveredLocked(bool stay_for_callbacks) {
  // The waiters and callbacks the rounds so far covered (all of them after an error), and the
  // first waiter not covered (to be handed the lead).
  Covered out;
  out.result = error_;
  auto keep = waiters_.begin();
  for (Waiter* w : waiters_) {
    if (w->lsn <= visible_ || !error_.ok()) {
      out.waiters.push_back(w);
    } else if (!out.next) {
      out.next = w;
    } else {
      *keep++ = w;
    }
  }
  waiters_.erase(keep, waiters_.end());
  auto keep_cb = callbacks_.begin();
  for (Callback& c : callbacks_) {
    if (c.lsn <= visible_ || !error_.ok()) {
      out.callbacks.push_back(std::move(c));
    } else {
      *keep_cb++ = std::move(c);
    }
  }
  callbacks_.erase(keep_cb, callbacks_.end());
  // A leader that runs callbacks stays while anything waits (nobody else would sync callbacks),
  // covering blocked waiters with its next round instead of handing them the lead.
  out.stay = stay_for_callbacks && error_.ok() && (out.next || !callbacks_.empty());
  if (out.stay && out.next) {
    waiters_.insert(waiters_.begin(), out.next);
    out.next = nullptr;
  }
  WMBT_CHECK(out.stay || callbacks_.empty());  // callbacks only wait behind a leader that stays
  syncing_ = out.stay || out.next != nullptr;
  async_lead_ = out.stay;
  return out;
}

void Journal::RunCovered(Covered& covered) {
  auto run = [this](std::vector<Callback>& callbacks, const Status& result) {
    running_callbacks_of = this;
    {
      // What the callbacks defer runs once they are all through (base/defer_scope.h): the
      // store's L1 writes of a round's heads go in one write. What that in turn defers (the
      // wake-ups of the clients it answers: a shared-memory server hands them to a worker as
      // one batch) waits for all of it (D3).
      DeferScope after_round;
      DeferScope round;
      for (Callback& c : callbacks) c.done(result);
    }
    running_callbacks_of = nullptr;
  };
  // On the executor when a leader goes on to another round, which they then overlap, and the
  // round is big (SetCompletionExecutor); a leader about to leave runs them itself (a lone
  // caller's save: no hand-off to a thread), as it does a small round's. Behind anything given
  // to the executor before, in any case.
  const bool hand_off =
      !covered.callbacks.empty() && completions_ &&
      (handed_off_.load(std::memory_order_acquire) > 0 ||
       (covered.stay && covered.callbacks.size() > kInlineCallbacksMax));
  if (hand_off) {
    handed_off_.fetch_add(1, std::memory_order_relaxed);
    completions_->Submit([this, run, callbacks = std::move(covered.callbacks),
                          result = covered.result]() mutable {
      run(callbacks, result);
      handed_off_.fetch_sub(1, std::memory_order_release);
    });
  } else {
    run(covered.callbacks, covered.result);
  }
  for (Waiter* w : covered.waiters) {
    w->result = covered.result;
    w->released.Post();
  }
  if (covered.next) {
    covered.next->lead = true;
    covered.next->released.Post();
  }
}

Status Journal::Write(const std::string& mark, const Batch& batch, Round* round) {
  round->start = Location{file_first_lsn_, file_bytes_ + mark.size()};
  const uint64_t bytes = mark.size() + batch.size();
  // A small batch right after a bulk one is not zero-filled ahead either: when bulk rounds and
  // small ones alternate (a chain's blobs, then a head), the next bulk round would overwrite
  // the zeros.
  const bool bulk = bytes >= kBulkBatchBytes;
  if (file_bytes_ + bytes > preallocated_ && !bulk && !last_round_bulk_) {
    const uint64_t want = file_bytes_ + bytes + kPreallocateStepBytes;
    WMBT_RETURN_IF_ERROR(Preallocate(*file_, want));
    preallocated_ = want;
  }
  last_round_bulk_ = bulk;
  std::vector<ByteView> parts{AsBytes(mark)};
  batch.AppendParts(&parts);
  WMBT_RETURN_IF_ERROR(file_->Append(parts));
  file_bytes_ += bytes;
  preallocated_ = std::max(preallocated_, file_bytes_);
  // Half full: time to make the next file (not at once, so a short-lived store, e.g. the CLI's,
  // writes no 4 MiB of zeros it will not use).
  if (!next_asked_ && file_bytes_ >= file_bytes_target_ / 2) MakeNextFileAhead();
  return Status::Ok();
}

Status Journal::Preallocate(AppendFile& file, uint64_t bytes) {
  const uint64_t start = NowMicros();
  Status s = file.Preallocate(bytes);
  preallocations_.fetch_add(1, std::memory_order_relaxed);
  preallocate_micros_.fetch_add(NowMicros() - start, std::memory_order_relaxed);
  return s;
}

Status Journal::error() const {
  std::lock_guard<std::mutex> g(mu_);
  return error_;
}

JournalCounters Journal::stats() const {
  JournalCounters s;
  s.syncs = syncs_.load(std::memory_order_relaxed);
  s.records_synced = records_synced_.load(std::memory_order_relaxed);
  s.sync_micros = sync_micros_.load(std::memory_order_relaxed);
  s.preallocations = preallocations_.load(std::memory_order_relaxed);
  s.preallocate_micros = preallocate_micros_.load(std::memory_order_relaxed);
  return s;
}

Status Journal::RetireFileIfFull(uint64_t last_lsn) {
  if (file_bytes_ < file_bytes_target_) return Status::Ok();
  // Every record of this file is durable: the next ones go to a new file, so the journal on
  // disk stays a prefix (a crash can cut only the newest file).
  std::string retired = file_path_;
  const uint64_t bytes = file_bytes_;
  WMBT_RETURN_IF_ERROR(OpenFile(last_lsn + 1));
  if (on_retired_) on_retired_(retired, last_lsn, bytes);
  return Status::Ok();
}

}  // namespace wombatkv
