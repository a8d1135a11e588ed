// SyncOrderRecorder (tests only): a FileSystem decorator that logs, in one global order, the steps
// that make a local write durable — temporary file written (and whether its content was synced),
// name committed, directory sync begun and ended — plus marks a test adds (e.g. "acknowledged"),
// so that a test can check the order that crash safety depends on (env.h, dir_sync_group.h).
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "object/journal_record.h"
#include "wombatkv/env.h"

namespace wombatkv {

struct SyncEvent {
  enum Kind {
    kTempWritten,
    kCommitBegin,
    kCommitEnd,
    kSyncDirBegin,
    kSyncDirEnd,
    kMark,
    kAppend,         // bytes appended to an AppendFile (a journal): path, data
    kAppendSyncEnd,  // its Sync returned: path, ok
  };
  Kind kind;
  std::string path;  // the destination path, the directory, or the mark's text
  bool ok = true;    // kTempWritten: content synced; kCommitEnd, kSyncDirEnd: succeeded
  std::string data;  // kAppend: the bytes
};

class SyncOrderRecorder : public FileSystemWrapper {
 public:
  using FileSystemWrapper::FileSystemWrapper;

  // Runs at the start of every SyncDir (before the real one); a non-OK status fails the sync
  // without running it. For tests that hold or fail a directory sync.
  std::function<Status(const std::string& dir)> before_sync_dir;

  Result<std::unique_ptr<PendingFile>> WriteTemp(const std::string& path,
                                                 const std::vector<ByteView>& parts, bool sync,
                                                 bool later_than_current) override {
    auto file = target()->WriteTemp(path, parts, sync, later_than_current);
    if (!file.ok()) return file.status();
    Log(SyncEvent::kTempWritten, path, sync);
    return std::unique_ptr<PendingFile>(new Pending(this, std::move(*file), path));
  }

  Status SyncDir(const std::string& dir) override {
    Log(SyncEvent::kSyncDirBegin, dir, true);
    Status s = before_sync_dir ? before_sync_dir(dir) : Status::Ok();
    if (s.ok()) s = target()->SyncDir(dir);
    Log(SyncEvent::kSyncDirEnd, dir, s.ok());
    return s;
  }

  Result<std::unique_ptr<AppendFile>> NewAppendFile(const std::string& path) override {
    auto file = target()->NewAppendFile(path);
    if (!file.ok()) return file.status();
    return std::unique_ptr<AppendFile>(new Appender(this, std::move(*file), path));
  }

  void Mark(const std::string& what) { Log(SyncEvent::kMark, what, true); }

  std::vector<SyncEvent> events() const {
    std::lock_guard<std::mutex> g(mu_);
    return events_;
  }

  size_t Count(SyncEvent::Kind kind) const {
    std::lock_guard<std::mutex> g(mu_);
    size_t n = 0;
    for (const SyncEvent& e : events_) n += e.kind == kind;
    return n;
  }

  // Index of the first mark `what`, or events.size().
  static bool HoldsRecordFor(const std::string& batch, const std::string& key) {
    ByteView rest = AsBytes(batch);
    while (rest.size() >= kJournalRecordHeaderBytes) {
      uint64_t lsn = 0;
      for (int b = 0; b < 8; ++b) lsn |= uint64_t{rest[4 + b]} << (8 * b);
      auto r = DecodeJournalRecord(rest, lsn);
      if (!r.ok()) return false;
      if (r->key == key) return true;
      rest = rest.subspan(r->encoded_bytes);
    }
    return false;
  }

  static size_t MarkIndex(const std::vector<SyncEvent>& events, const std::string& what) {
    for (size_t i = 0; i < events.size(); ++i) {
      if (events[i].kind == SyncEvent::kMark && events[i].path == what) return i;
    }
    return events.size();
  }

  // Whether, before index `limit`, a journal record for object `key` (journal_record.h) was
  // appended to a journal file and a Sync of that file then returned OK. Empty when it was;
  // otherwise what was missing.
  static std::string JournaledBefore(const std::vector<SyncEvent>& events, const std::string& key,
                                     size_t limit) {
    for (size_t i = 0; i < limit && i < events.size(); ++i) {
      if (events[i].kind != SyncEvent::kAppend || !HoldsRecordFor(events[i].data, key)) continue;
      for (size_t j = i + 1; j < limit && j < events.size(); ++j) {
        if (events[j].kind == SyncEvent::kAppendSyncEnd && events[j].path == events[i].path &&
            events[j].ok) {
          return "";
        }
      }
      return "the journal record of " + key + " was not synced in time";
    }
    return "no journal record of " + key + " was written in time";
  }

  // Whether, before index `limit`, `path` was made durable in `dir` by the rules: its content
  // synced before its name was committed, then a sync of `dir` that began after the commit ended
  // and succeeded. Empty `why` when it was; otherwise what was missing.
  static std::string DurableBefore(const std::vector<SyncEvent>& events, const std::string& path,
                                   const std::string& dir, size_t limit) {
    // The last successful commit of `path` before `limit` (a later name replaces earlier ones).
    size_t commit = limit;
    for (size_t i = 0; i < limit && i < events.size(); ++i) {
      if (events[i].kind == SyncEvent::kCommitEnd && events[i].path == path && events[i].ok) {
        commit = i;
      }
    }
    if (commit == limit) return path + " was never committed";
    bool content_synced = false;
    for (size_t i = 0; i < commit; ++i) {
      if (events[i].kind == SyncEvent::kTempWritten && events[i].path == path) {
        content_synced = events[i].ok;  // the latest temp written for this path
      }
    }
    if (!content_synced) return path + " was named before its content was synced";
    for (size_t i = commit + 1; i < limit && i < events.size(); ++i) {
      if (events[i].kind != SyncEvent::kSyncDirBegin || events[i].path != dir) continue;
      for (size_t j = i + 1; j < limit && j < events.size(); ++j) {
        if (events[j].kind == SyncEvent::kSyncDirEnd && events[j].path == dir) {
          if (events[j].ok) return "";
          break;
        }
      }
    }
    return "no sync of " + dir + " began after " + path + " was named and ended in time";
  }

 private:
  class Pending final : public PendingFile {
   public:
    Pending(SyncOrderRecorder* r, std::unique_ptr<PendingFile> inner, std::string path)
        : r_(r), inner_(std::move(inner)), path_(std::move(path)) {}
    const FileInfo& info() const override { return inner_->info(); }
    Status Commit(bool replace) override {
      r_->Log(SyncEvent::kCommitBegin, path_, true);
      Status s = inner_->Commit(replace);
      r_->Log(SyncEvent::kCommitEnd, path_, s.ok());
      return s;
    }

   private:
    SyncOrderRecorder* r_;
    std::unique_ptr<PendingFile> inner_;
    std::string path_;
  };

  class Appender final : public AppendFile {
   public:
    Appender(SyncOrderRecorder* r, std::unique_ptr<AppendFile> inner, std::string path)
        : r_(r), inner_(std::move(inner)), path_(std::move(path)) {}
    Status Append(const std::vector<ByteView>& parts) override {
      std::string data;
      for (ByteView p : parts) data.append(reinterpret_cast<const char*>(p.data()), p.size());
      Status s = inner_->Append(parts);
      if (s.ok()) r_->Log(SyncEvent::kAppend, path_, true, std::move(data));
      return s;
    }
    Status Sync() override {
      Status s = inner_->Sync();
      r_->Log(SyncEvent::kAppendSyncEnd, path_, s.ok());
      return s;
    }
    Status Preallocate(uint64_t bytes) override { return inner_->Preallocate(bytes); }
    Status StartWriteback() override { return inner_->StartWriteback(); }
    Status Rename(const std::string& to) override {
      WMBT_RETURN_IF_ERROR(inner_->Rename(to));
      path_ = to;
      return Status::Ok();
    }

   private:
    SyncOrderRecorder* r_;
    std::unique_ptr<AppendFile> inner_;
    std::string path_;
  };

  void Log(SyncEvent::Kind kind, const std::string& path, bool ok, std::string data = {}) {
    std::lock_guard<std::mutex> g(mu_);
    events_.push_back(SyncEvent{kind, path, ok, std::move(data)});
  }

  mutable std::mutex mu_;
  std::vector<SyncEvent> events_;
};

}  // namespace wombatkv
