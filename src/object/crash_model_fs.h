// CrashModelFs (tests only): a FileSystem decorator that models a machine crash — what the disk
// holds afterwards is only what was made durable, plus any subset of what was not.
//
// It tracks, for every file under the root, its durable state, updated by the calls that make
// things durable (env.h's contract): a name created or removed becomes durable at the next
// SyncDir of its directory (with the content synced at WriteTemp, or "some bytes" if the content
// was never synced); WriteFileAtomic/CreateFileExclusive with sync are durable at once;
// SyncFileSystem makes everything durable; an AppendFile is durable up to its last Sync, and its
// name (given by NewAppendFile or AppendFile::Rename) at the next SyncDir of its directory.
//
// Crash() makes every later call fail (the process is "dead": the store is then destroyed);
// Restart() lets calls through again as a new process on the same machine would.
// ApplyCrash(rng) rewrites the real directory to one state a crash may leave: each file not
// durable in its current state gets, at random, its durable state, its current state, or (if its
// content was never synced) its name with other bytes; each journal-like append file is cut at a
// random point at or after its synced length, sometimes with a hole (zeros) in its unsynced part
// before the cut, sometimes with garbage after, and sometimes back under its durable name (or
// gone, if it had none) when its name is not durable yet. Revive() then lets
// calls through again, with everything on disk durable.
//
// I/O errors:
//   - FailNext(op) makes the next call of that kind fail with an I/O error, doing nothing.
//   - InjectWritebackError() models a failed write-back: every file whose current state is not
//     durable stays at its durable state (a later sync does not write it, as Linux marks such
//     pages clean; ApplyCrash always restores it) until it is written again. As Linux's syncfs,
//     the error is reported once to each sync handle opened before it (OpenSyncHandle), never to
//     a later-opened one nor to SyncFileSystem (a fresh descriptor each time).
#pragma once

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "wombatkv/env.h"

namespace wombatkv {

class CrashModelFs final : public FileSystemWrapper {
 public:
  CrashModelFs(FileSystem* target, std::string root)
      : FileSystemWrapper(target), root_(std::move(root)) {
    Snapshot();
  }

  void Crash() {
    std::lock_guard<std::mutex> g(mu_);
    crashed_ = true;
  }

  // The process dies (Crash) the moment a sync handle reports a write-back error: nothing the
  // store does about the error reaches the file system.
  void CrashWhenAWritebackErrorIsReported() {
    std::lock_guard<std::mutex> g(mu_);
    crash_on_report_ = true;
  }

  // The write-back that the next sync through a sync handle waits for fails
  // (InjectWritebackError at its start): a failure during that very sync.
  void FailNextHandleSyncWithAWritebackError() {
    std::lock_guard<std::mutex> g(mu_);
    writeback_error_at_next_sync_ = true;
  }

  // A new process after Crash, the machine still up: calls pass again; the page cache (files
  // whose write-back failed included) is as the dead process left it.
  void Restart() {
    std::lock_guard<std::mutex> g(mu_);
    crashed_ = false;
    crash_on_report_ = false;
  }

  void ApplyCrash(Random& rng) {
    std::lock_guard<std::mutex> g(mu_);
    std::map<std::string, std::string> now;
    ReadTree(root_, now);
    for (auto& [path, bytes] : now) {
      auto a = appends_.find(path);
      if (a != appends_.end()) {
        // A journal: the synced prefix survives, then a random part of the rest, maybe garbage.
        const size_t keep = a->second + rng.Uniform(bytes.size() - a->second + 1);
        std::string cut = bytes.substr(0, keep);
        if (keep > a->second && rng.Uniform(2) == 0) {
          // The pages of an unsynced write reach the disk in any order: a hole inside it, with
          // what follows intact (small ones too, so that they land inside a record).
          const size_t from = a->second + rng.Uniform(keep - a->second);
          const size_t len = 1 + rng.Uniform(std::min<size_t>(rng.Uniform(2) ? 4096 : 16, keep - from));
          std::fill(cut.begin() + from, cut.begin() + from + len, '\0');
        }
        if (rng.Uniform(2) == 0) {
          for (uint64_t i = rng.Uniform(64); i > 0; --i) cut.push_back(static_cast<char>(rng.Next64()));
        }
        auto u = unnamed_.find(path);
        if (u != unnamed_.end() && rng.Uniform(2) == 0) {
          (void)target()->DeleteFile(path);
          if (!u->second.before.empty()) Write(u->second.before, cut);
          continue;
        }
        Write(path, cut);
        continue;
      }
      if (IsTemporary(path)) continue;
      auto d = durable_.find(path);
      if (lost_.count(path) != 0) {
        RestoreDurable(path, d == durable_.end() ? nullptr : &d->second, rng);
        continue;
      }
      const bool durable_same = d != durable_.end() && d->second.known && d->second.bytes == bytes;
      if (durable_same) continue;
      // Candidates: keep the current state, or go back to the durable one, or (content never
      // synced) keep the name with other bytes.
      const uint64_t pick = rng.Uniform(3);
      if (pick == 0) continue;
      if (pick == 1 || synced_content_.count(path) != 0) {
        RestoreDurable(path, d == durable_.end() ? nullptr : &d->second, rng);
      } else {
        Write(path, Garble(bytes, rng));
      }
    }
    // Files durably present but gone now (deleted, deletion not synced) may come back.
    for (auto& [path, state] : durable_) {
      if (now.count(path) != 0 || (lost_.count(path) == 0 && rng.Uniform(2) == 0)) continue;
      RestoreDurable(path, &state, rng);
    }
  }

  void Revive() {
    std::lock_guard<std::mutex> g(mu_);
    crashed_ = false;
    crash_on_report_ = false;
    lost_.clear();
    Snapshot();
  }

  enum class Op { kWriteTemp, kCommit, kAppendSync, kSyncFileSystem, kDeleteFile };
  void FailNext(Op op) {
    std::lock_guard<std::mutex> g(mu_);
    ++fail_next_[op];
  }

  void InjectWritebackError() {
    std::lock_guard<std::mutex> g(mu_);
    ++writeback_errors_;
    std::map<std::string, std::string> now;
    ReadTree(root_, now);
    for (auto& [path, bytes] : now) {
      if (appends_.count(path) != 0) continue;  // a journal: its own fdatasync reports errors
      auto d = durable_.find(path);
      if (d == durable_.end() || !d->second.known || d->second.bytes != bytes) lost_.insert(path);
    }
    // Names not yet durable are lost too: a deletion not yet synced may be undone.
    for (auto& [dir, events] : pending_) {
      for (const Event& e : events) lost_.insert(e.path);
    }
  }

  // The paths whose write-back failed and that were not written since.
  std::set<std::string> lost() {
    std::lock_guard<std::mutex> g(mu_);
    return lost_;
  }

  Result<std::unique_ptr<FileSystemSyncHandle>> OpenSyncHandle(const std::string& path) override {
    WMBT_RETURN_IF_ERROR(Alive());
    class Handle final : public FileSystemSyncHandle {
     public:
      Handle(CrashModelFs* fs, std::string path, uint64_t seen)
          : fs_(fs), path_(std::move(path)), seen_(seen) {}
      Status Sync() override {
        bool inject = false;
        {
          std::lock_guard<std::mutex> g(fs_->mu_);
          std::swap(inject, fs_->writeback_error_at_next_sync_);
        }
        if (inject) fs_->InjectWritebackError();
        WMBT_RETURN_IF_ERROR(fs_->SyncFileSystem(path_));
        std::lock_guard<std::mutex> g(fs_->mu_);
        if (seen_ == fs_->writeback_errors_) return Status::Ok();
        seen_ = fs_->writeback_errors_;
        if (fs_->crash_on_report_) fs_->crashed_ = true;
        return Status::Internal("syncfs " + path_ + ": Input/output error (injected write-back error)");
      }

     private:
      CrashModelFs* fs_;
      std::string path_;
      uint64_t seen_;
    };
    std::lock_guard<std::mutex> g(mu_);
    return std::unique_ptr<FileSystemSyncHandle>(new Handle(this, path, writeback_errors_));
  }

  Result<std::unique_ptr<PendingFile>> WriteTemp(const std::string& path,
                                                 const std::vector<ByteView>& parts, bool sync,
                                                 bool later_than_current) override {
    WMBT_RETURN_IF_ERROR(Alive());
    WMBT_RETURN_IF_ERROR(Injected(Op::kWriteTemp, "write", path));
    auto file = target()->WriteTemp(path, parts, sync, later_than_current);
    if (!file.ok()) return file.status();
    return std::unique_ptr<PendingFile>(
        new Pending(this, std::move(file).value(), path, Concat(parts), sync));
  }

  Status WriteFileAtomic(const std::string& path, const std::vector<ByteView>& parts, bool sync,
                         FileInfo* written) override {
    WMBT_RETURN_IF_ERROR(Alive());
    const uint64_t before = EventSeq();
    Status s = target()->WriteFileAtomic(path, parts, sync, written);
    if (s.ok()) Named(path, Concat(parts), sync, /*dir_synced=*/sync, before);
    return s;
  }

  Status CreateFileExclusive(const std::string& path, const std::vector<ByteView>& parts,
                             bool sync, FileInfo* written) override {
    WMBT_RETURN_IF_ERROR(Alive());
    const uint64_t before = EventSeq();
    Status s = target()->CreateFileExclusive(path, parts, sync, written);
    if (s.ok()) Named(path, Concat(parts), sync, /*dir_synced=*/sync, before);
    return s;
  }

  // Durable afterwards: every name change in `dir` made before the call began, in the order made.
  // Syncs of one directory may overlap (the store's journal, its directory-sync group and its
  // checkpoint thread each sync the root): each applies only the events queued before it began,
  // oldest first, and takes them off the queue, so a slow sync finishing last cannot put an older
  // state back over a newer one that a later sync already made durable.
  Status SyncDir(const std::string& dir) override {
    WMBT_RETURN_IF_ERROR(Alive());
    std::shared_lock<std::shared_mutex> barrier(sync_mu_);
    uint64_t upto, snapshot;
    {
      std::lock_guard<std::mutex> g(mu_);
      upto = event_seq_;
      snapshot = snapshots_;
    }
    Status s = target()->SyncDir(dir);
    std::lock_guard<std::mutex> g(mu_);
    // A SyncFileSystem that ran meanwhile made these names durable with what they hold: nothing
    // older may override that. A failed sync leaves its events queued for the next one.
    if (snapshot != snapshots_ || !s.ok()) return s;
    ApplyPendingLocked(dir, upto);
    std::erase_if(unnamed_,
                  [&](const auto& u) { return u.second.seq <= upto && DirOf(u.first) == dir; });
    return s;
  }

  // Durable afterwards: what the files held when the call began (not what they hold when it
  // returns: names and bytes written meanwhile may or may not have been written back).
  Status SyncFileSystem(const std::string& path) override {
    WMBT_RETURN_IF_ERROR(Alive());
    WMBT_RETURN_IF_ERROR(Injected(Op::kSyncFileSystem, "syncfs", path));
    // No directory sync overlaps it, so neither can make older state override what it recorded.
    std::unique_lock<std::shared_mutex> barrier(sync_mu_);
    std::map<std::string, std::string> before;
    std::map<std::string, size_t> pending_before;
    std::map<std::string, uint64_t> appended_before;
    std::set<std::string> lost_before;
    uint64_t upto;
    {
      std::lock_guard<std::mutex> g(mu_);
      upto = event_seq_;
      ReadTree(root_, before);
      lost_before = lost_;
      for (const auto& [dir, events] : pending_) pending_before[dir] = events.size();
      appended_before = appended_;
    }
    Status s = target()->SyncFileSystem(path);
    if (!s.ok()) return s;
    std::lock_guard<std::mutex> g(mu_);
    ++snapshots_;
    // Files whose write-back failed keep their durable state (or absence).
    std::map<std::string, State> kept;
    for (const std::string& p : lost_before) {
      if (auto d = durable_.find(p); d != durable_.end()) kept.insert(*d);
    }
    durable_ = std::move(kept);
    for (auto& [p, bytes] : before) {
      if (appends_.count(p) == 0 && lost_before.count(p) == 0) {
        durable_[p] = State{true, true, bytes};
      }
    }
    for (auto& [p, synced] : appends_) {
      auto a = appended_before.find(p);
      if (a != appended_before.end()) synced = std::max<uint64_t>(synced, a->second);
    }
    std::erase_if(unnamed_, [&](const auto& u) { return u.second.seq <= upto; });
    for (const auto& [dir, n] : pending_before) {
      auto& events = pending_[dir];
      events.erase(events.begin(), events.begin() + static_cast<std::ptrdiff_t>(std::min(n, events.size())));
    }
    return s;
  }

  Status DeleteFile(const std::string& path) override {
    WMBT_RETURN_IF_ERROR(Alive());
    WMBT_RETURN_IF_ERROR(Injected(Op::kDeleteFile, "unlink", path));
    Status s = target()->DeleteFile(path);
    std::lock_guard<std::mutex> g(mu_);
    if (s.ok()) lost_.erase(path);
    if (s.ok()) unnamed_.erase(path);
    if (s.ok() && appends_.erase(path) == 0) {
      pending_[DirOf(path)].push_back({path, State{}, ++event_seq_});
    }
    return s;
  }

  Result<std::unique_ptr<AppendFile>> NewAppendFile(const std::string& path) override {
    WMBT_RETURN_IF_ERROR(Alive());
    auto file = target()->NewAppendFile(path);
    if (!file.ok()) return file.status();
    std::lock_guard<std::mutex> g(mu_);
    appends_[path] = 0;
    unnamed_[path] = Unnamed{"", ++event_seq_};
    return std::unique_ptr<AppendFile>(new Appender(this, std::move(file).value(), path));
  }

  Result<std::shared_ptr<Buffer>> ReadFile(const std::string& path, uint64_t offset,
                                           uint64_t length, FileInfo* info) override {
    WMBT_RETURN_IF_ERROR(Alive());
    return target()->ReadFile(path, offset, length, info);
  }
  Result<FileInfo> Stat(const std::string& path) override {
    WMBT_RETURN_IF_ERROR(Alive());
    return target()->Stat(path);
  }
  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    WMBT_RETURN_IF_ERROR(Alive());
    return target()->ListDir(path);
  }

 private:
  struct State {
    bool exists = false;
    bool known = true;  // false: the name is durable, its bytes are not
    std::string bytes;
  };
  struct Event {
    std::string path;
    State state;
    uint64_t seq = 0;  // order of the name changes, across directories
  };

  class Pending final : public PendingFile {
   public:
    Pending(CrashModelFs* fs, std::unique_ptr<PendingFile> inner, std::string path,
            std::string bytes, bool synced)
        : fs_(fs), inner_(std::move(inner)), path_(std::move(path)), bytes_(std::move(bytes)),
          synced_(synced) {}
    const FileInfo& info() const override { return inner_->info(); }
    Status Commit(bool replace) override {
      WMBT_RETURN_IF_ERROR(fs_->Alive());
      WMBT_RETURN_IF_ERROR(fs_->Injected(Op::kCommit, "rename", path_));
      Status s = inner_->Commit(replace);
      if (s.ok()) fs_->Named(path_, bytes_, synced_, /*dir_synced=*/false);
      return s;
    }

   private:
    CrashModelFs* fs_;
    std::unique_ptr<PendingFile> inner_;
    std::string path_, bytes_;
    bool synced_;
  };

  class Appender final : public AppendFile {
   public:
    Appender(CrashModelFs* fs, std::unique_ptr<AppendFile> inner, std::string path)
        : fs_(fs), inner_(std::move(inner)), path_(std::move(path)) {}
    Status Append(const std::vector<ByteView>& parts) override {
      WMBT_RETURN_IF_ERROR(fs_->Alive());
      WMBT_RETURN_IF_ERROR(inner_->Append(parts));
      for (ByteView p : parts) written_ += p.size();
      std::lock_guard<std::mutex> g(fs_->mu_);
      fs_->appended_[path_] = written_;
      return Status::Ok();
    }
    Status Sync() override {
      WMBT_RETURN_IF_ERROR(fs_->Alive());
      WMBT_RETURN_IF_ERROR(fs_->Injected(Op::kAppendSync, "fdatasync", path_));
      WMBT_RETURN_IF_ERROR(inner_->Sync());
      std::lock_guard<std::mutex> g(fs_->mu_);
      auto it = fs_->appends_.find(path_);
      if (it != fs_->appends_.end()) it->second = written_;
      return Status::Ok();
    }
    Status Preallocate(uint64_t bytes) override {
      WMBT_RETURN_IF_ERROR(fs_->Alive());
      return inner_->Preallocate(bytes);
    }
    Status StartWriteback() override {  // durability is Sync's alone: nothing to record
      WMBT_RETURN_IF_ERROR(fs_->Alive());
      return inner_->StartWriteback();
    }
    Status Trim() override {  // only zeros past what was appended go: nothing to record
      WMBT_RETURN_IF_ERROR(fs_->Alive());
      return inner_->Trim();
    }
    Status Rename(const std::string& to) override {
      WMBT_RETURN_IF_ERROR(fs_->Alive());
      WMBT_RETURN_IF_ERROR(inner_->Rename(to));
      std::lock_guard<std::mutex> g(fs_->mu_);
      fs_->Moved(fs_->appends_, path_, to);
      fs_->Moved(fs_->appended_, path_, to);
      auto u = fs_->unnamed_.find(path_);
      std::string before = path_;
      if (u != fs_->unnamed_.end()) {
        before = u->second.before;
        fs_->unnamed_.erase(u);
      }
      fs_->unnamed_[to] = Unnamed{std::move(before), ++fs_->event_seq_};
      path_ = to;
      return Status::Ok();
    }

   private:
    CrashModelFs* fs_;
    std::unique_ptr<AppendFile> inner_;
    std::string path_;
    uint64_t written_ = 0;
  };

  Status Alive() {
    std::lock_guard<std::mutex> g(mu_);
    return crashed_ ? Status::Unavailable("crashed (CrashModelFs)") : Status::Ok();
  }

  // An I/O error if FailNext(op) asked for one.
  Status Injected(Op op, std::string_view what, const std::string& path) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = fail_next_.find(op);
    if (it == fail_next_.end() || it->second == 0) return Status::Ok();
    --it->second;
    return Status::Internal(std::string(what) + " " + path + ": Input/output error (injected)");
  }

  uint64_t EventSeq() {
    std::lock_guard<std::mutex> g(mu_);
    return event_seq_;
  }

  // `dir_synced`: its directory was synced after it was named, so were the changes queued up to
  // `queued_before` (the last event's seq when the call that named it began).
  void Named(const std::string& path, std::string bytes, bool content_synced, bool dir_synced,
             uint64_t queued_before = 0) {
    std::lock_guard<std::mutex> g(mu_);
    lost_.erase(path);  // written again: a later write-back may succeed
    if (content_synced) {
      synced_content_.insert(path);
    } else {
      synced_content_.erase(path);
    }
    State st{true, content_synced, std::move(bytes)};
    if (dir_synced) {
      ApplyPendingLocked(DirOf(path), queued_before);
      durable_[path] = st;
    } else {
      pending_[DirOf(path)].push_back({path, std::move(st), ++event_seq_});
    }
  }

  // REQUIRES: mu_ held. Makes the events of `dir` up to `upto` durable, in order.
  void ApplyPendingLocked(const std::string& dir, uint64_t upto) {
    auto& p = pending_[dir];
    size_t n = 0;
    for (; n < p.size() && p[n].seq <= upto; ++n) durable_[p[n].path] = p[n].state;
    p.erase(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(n));
  }

  // REQUIRES: mu_ held. `map[from]`, if any, becomes `map[to]`.
  static void Moved(std::map<std::string, uint64_t>& map, const std::string& from,
                    const std::string& to) {
    auto it = map.find(from);
    if (it == map.end()) return;
    map[to] = it->second;
    map.erase(from);
  }

  // REQUIRES: mu_ held. Everything on disk now is durable.
  void Snapshot() {
    ++snapshots_;
    unnamed_.clear();
    std::map<std::string, std::string> now;
    ReadTree(root_, now);
    durable_.clear();
    pending_.clear();
    synced_content_.clear();
    for (auto& [path, bytes] : now) {
      auto a = appends_.find(path);
      if (a != appends_.end()) {
        a->second = bytes.size();
        continue;
      }
      durable_[path] = State{true, true, bytes};
    }
  }

  void RestoreDurable(const std::string& path, const State* st, Random& rng) {
    if (st == nullptr || !st->exists) {
      (void)target()->DeleteFile(path);
      return;
    }
    std::string bytes = st->bytes;
    if (!st->known) bytes = Garble(bytes, rng);
    Write(path, bytes);
  }

  static std::string Garble(const std::string& bytes, Random& rng) {
    std::string out = bytes.substr(0, rng.Uniform(bytes.size() + 1));
    if (!out.empty()) out[rng.Uniform(out.size())] ^= 0x5a;
    return out;
  }

  void Write(const std::string& path, const std::string& bytes) {
    (void)target()->CreateDirs(DirOf(path));
    (void)target()->WriteFileAtomic(path, {AsBytes(bytes)}, /*sync=*/false);
  }

  static bool IsTemporary(const std::string& path) { return path.ends_with('~'); }

  static std::string DirOf(const std::string& path) { return path.substr(0, path.find_last_of('/')); }

  static std::string Concat(const std::vector<ByteView>& parts) {
    std::string s;
    for (ByteView p : parts) s.append(reinterpret_cast<const char*>(p.data()), p.size());
    return s;
  }

  void ReadTree(const std::string& dir, std::map<std::string, std::string>& out) {
    auto names = target()->ListDir(dir);
    if (!names.ok()) return;
    for (const std::string& n : *names) {
      const std::string path = dir + "/" + n;
      auto info = target()->Stat(path);
      if (!info.ok()) continue;
      if (info->is_dir) {
        ReadTree(path, out);
      } else if (!n.ends_with(".lock") && n.find(".lock~") == std::string::npos) {
        auto bytes = target()->ReadFile(path, 0, kToEndOfFile, nullptr);
        if (bytes.ok()) out[path] = std::string(reinterpret_cast<const char*>((*bytes)->data()), (*bytes)->size());
      }
    }
  }

  static constexpr uint64_t kToEndOfFile = ~uint64_t{0};

  const std::string root_;
  std::shared_mutex sync_mu_;  // SyncDir (shared) against SyncFileSystem (exclusive)
  std::mutex mu_;
  bool crashed_ = false;
  bool crash_on_report_ = false;
  bool writeback_error_at_next_sync_ = false;
  uint64_t snapshots_ = 0;  // Snapshot() calls so far
  uint64_t event_seq_ = 0;  // the last Event's seq
  std::map<std::string, State> durable_;                 // absent from the map: durably absent
  std::map<std::string, std::vector<Event>> pending_;    // by directory, until its SyncDir
  std::set<std::string> synced_content_;                 // the current file's bytes were synced
  std::map<std::string, uint64_t> appends_;              // append files: synced length
  std::map<std::string, uint64_t> appended_;             // append files: written length
  struct Unnamed {
    std::string before;  // the durable name ("" if none)
    uint64_t seq = 0;    // as an Event's
  };
  std::map<std::string, Unnamed> unnamed_;  // append files whose name is not durable yet
  std::map<Op, int> fail_next_;                          // FailNext: calls still to fail
  uint64_t writeback_errors_ = 0;                        // InjectWritebackError() calls
  std::set<std::string> lost_;                           // write-back failed, not written since
};

}  // namespace wombatkv
