#include "object/packed_view.h"

#include <optional>

#include "object/journal.h"
#include "object/packed_snapshot.h"

namespace wombatkv {

Status PackedView::Refresh() {
  std::lock_guard<std::mutex> g(mu_);
  // Best effort: without it, damage in the newest batch hides the records after it for a while.
  auto checkpoint = ReadJournalCheckpoint(fs_, root_ + "/" + std::string(kJournalCheckpointMarker));
  if (checkpoint.ok()) scanner_.set_known_synced(*checkpoint);
  std::optional<PackedSnapshotHeader> snapshot;
  if (!tried_snapshot_ && checkpoint.ok()) {
    // As an open does (journal_replay.h): the owner's snapshot, then the files after it. Once
    // per view: later scans resume, or start over from the oldest file.
    tried_snapshot_ = true;
    auto files = ListJournalFiles(fs_, root_);
    std::string set_aside;
    if (files.ok() && !files->empty()) {
      snapshot = LoadPackedSnapshot(fs_, root_, *checkpoint, *files, &index_, &set_aside);
    }
    if (snapshot) scanner_.StartAt(snapshot->through_lsn + 1);
  }
  auto apply = [this](const ScannedRecord& r) {
    index_.Apply(r);
    return Status::Ok();
  };
  // Starting over (the file being read was deleted) drops the snapshot's entries too.
  auto restart = [&] {
    index_.Clear();
    snapshot.reset();
  };
  Status s = scanner_.Scan(apply, restart);
  if (snapshot &&
      (!s.ok() ||
       !PackedSnapshotDisagreement(*snapshot, index_, scanner_.files(), scanner_.last_lsn())
            .empty())) {
    // Unchecked or disagreeing: read every file instead (now, or at the next Refresh).
    index_.Clear();
    scanner_.Reset();
    if (s.ok()) s = scanner_.Scan(apply, restart);
  }
  return s;
}

bool PackedView::journaled() const {
  std::lock_guard<std::mutex> g(mu_);
  return !scanner_.files().empty();
}

bool PackedView::Find(std::string_view key, PackedEntry* e) const {
  std::lock_guard<std::mutex> g(mu_);
  const PackedEntry* found = index_.Find(key);
  if (found) *e = *found;
  return found != nullptr;
}

void PackedView::ListInto(std::string_view prefix, bool group, std::string_view token,
                          size_t limit, std::vector<ListEntry>* out, bool* more) const {
  std::lock_guard<std::mutex> g(mu_);
  index_.ListInto(prefix, group, token, limit, out, more);
}

Result<std::pair<std::string, uint64_t>> LocateStoredByte(FileSystem* fs, const std::string& root,
                                                          std::string_view key, uint64_t offset) {
  PackedView view(fs, root);
  WMBT_RETURN_IF_ERROR(view.Refresh());
  PackedEntry e;
  if (view.Find(key, &e)) {
    if (offset >= e.size) return Status::InvalidArgument("offset past the object");
    return std::make_pair(root + "/" + JournalFileName(e.segment),
                          e.offset + (e.record_bytes - e.size) + offset);
  }
  const std::string path = root + "/" + std::string(key);
  auto info = fs->Stat(path);
  if (!info.ok()) return info.status();
  if (offset >= info->size) return Status::InvalidArgument("offset past the object");
  return std::make_pair(path, offset);
}

}  // namespace wombatkv
