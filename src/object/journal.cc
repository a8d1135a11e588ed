#include "object/journal.h"

#include <charconv>
#include <cstdio>

#include "base/check.h"

namespace wombatkv {
namespace {

// Zero-filled ahead of the write position in steps of this much: one fsync (size and
// allocation) per step, fdatasyncs of data only in between.
constexpr uint64_t kPreallocateStepBytes = 4u << 20;

}  // namespace

std::string JournalFileName(uint64_t lsn) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(lsn));
  return std::string(kJournalFilePrefix) + buf;
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

Journal::Journal(FileSystem* fs, std::string dir, uint64_t file_bytes_target, RetiredFn on_retired)
    : fs_(fs),
      dir_(std::move(dir)),
      file_bytes_target_(file_bytes_target),
      on_retired_(std::move(on_retired)) {}

Journal::~Journal() = default;

Result<std::unique_ptr<Journal>> Journal::Create(FileSystem* fs, std::string dir,
                                                 uint64_t next_lsn, uint64_t file_bytes_target,
                                                 RetiredFn on_retired) {
  WMBT_CHECK(next_lsn > 0);
  std::unique_ptr<Journal> j(new Journal(fs, std::move(dir), file_bytes_target, std::move(on_retired)));
  j->appended_ = j->synced_ = next_lsn - 1;
  WMBT_RETURN_IF_ERROR(j->OpenFile(next_lsn));
  return j;
}

Status Journal::OpenFile(uint64_t first_lsn) {
  std::string path = dir_ + "/" + JournalFileName(first_lsn);
  WMBT_ASSIGN_OR_RETURN(auto file, fs_->NewAppendFile(path));
  WMBT_RETURN_IF_ERROR(file->Preallocate(kPreallocateStepBytes));
  // The name must be durable before a sync of the content can acknowledge anything.
  WMBT_RETURN_IF_ERROR(fs_->SyncDir(dir_));
  file_ = std::move(file);
  file_path_ = std::move(path);
  file_bytes_ = 0;
  preallocated_ = kPreallocateStepBytes;
  return Status::Ok();
}

uint64_t Journal::Append(JournalOp op, std::string_view key, const std::vector<ByteView>& value) {
  std::lock_guard<std::mutex> g(mu_);
  EncodeJournalRecord(++appended_, op, key, value, batch_);
  return appended_;
}

uint64_t Journal::appended_lsn() const {
  std::lock_guard<std::mutex> g(mu_);
  return appended_;
}

uint64_t Journal::synced_lsn() const {
  std::lock_guard<std::mutex> g(mu_);
  return synced_;
}

size_t Journal::batched_bytes() const {
  std::lock_guard<std::mutex> g(mu_);
  return batch_.size();
}

Status Journal::AwaitSynced(uint64_t lsn) {
  std::unique_lock<std::mutex> lock(mu_);
  WMBT_CHECK(lsn <= appended_);
  while (true) {
    if (synced_ >= lsn) return Status::Ok();
    if (!error_.ok()) return error_;
    if (syncing_) {
      cv_.wait(lock);
      continue;
    }
    // Lead: take everything appended so far (more than `lsn`: later writers ride along).
    syncing_ = true;
    std::string batch = std::move(batch_);
    batch_ = std::move(spare_);
    batch_.clear();
    const uint64_t last = appended_;
    lock.unlock();
    Status s = WriteAndSync(batch, last);
    lock.lock();
    spare_ = std::move(batch);
    syncing_ = false;
    if (s.ok()) {
      synced_ = last;
    } else {
      error_ = s.WithContext("journal " + file_path_ + " (restart the store to recover)");
    }
    cv_.notify_all();
  }
}

Status Journal::WriteAndSync(std::string& batch, uint64_t last_lsn) {
  if (file_bytes_ + batch.size() > preallocated_) {
    const uint64_t want = file_bytes_ + batch.size() + kPreallocateStepBytes;
    WMBT_RETURN_IF_ERROR(file_->Preallocate(want));
    preallocated_ = want;
  }
  WMBT_RETURN_IF_ERROR(file_->Append({AsBytes(batch)}));
  WMBT_RETURN_IF_ERROR(file_->Sync());
  file_bytes_ += batch.size();
  if (file_bytes_ >= file_bytes_target_) {
    // Every record of this file is durable: the next ones go to a new file, so the journal on
    // disk stays a prefix (a crash can cut only the newest file).
    std::string retired = file_path_;
    WMBT_RETURN_IF_ERROR(OpenFile(last_lsn + 1));
    if (on_retired_) on_retired_(retired, last_lsn);
  }
  return Status::Ok();
}

}  // namespace wombatkv
