#include "object/journal_replay.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

#include "object/journal.h"
#include "object/object_key.h"
#include "object/packed_snapshot.h"
#include "wombatkv/object_store.h"

namespace wombatkv {
namespace {

// Where a key's last record is, to read it again when it is applied.
struct LastOp {
  JournalOp op;
  PackedEntry at;  // segment, offset, lsn, record_bytes
  bool value_ok;
};

std::string ParentOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

bool SameBytes(FileSystem* fs, const std::string& path, ByteView want) {
  FileInfo info;
  auto have = fs->ReadFile(path, 0, kToEnd, &info);
  if (!have.ok() || info.is_dir || (*have)->size() != want.size()) return false;
  return want.empty() || std::memcmp((*have)->data(), want.data(), want.size()) == 0;
}

// Brings the file of `key` in line with its last record `op`.
Status ApplyLast(FileSystem* fs, const std::string& root, const std::string& key,
                 const LastOp& op, const std::string& segment_path, const ReplayOptions& options,
                 JournalReplayResult* out) {
  // Keys were validated when journaled; a record that names something else is not ours.
  if (!ValidateObjectKey(key).ok()) {
    return Status::Corruption("journal in " + root + " names an invalid key: " + key);
  }
  const std::string path = root + "/" + key;
  auto st = fs->Stat(path);
  // A key later used as a directory (put a, delete a, put a/b): its last record here is
  // superseded by what that directory holds, which its own records replay.
  if (st.ok() && st->is_dir) return Status::Ok();
  switch (op.op) {
    case JournalOp::kPut: {
      if (!op.value_ok) {
        // Which bytes the file should hold is unknown: the one there (named from this record
        // when it was sound) stays; the scan counted the damage.
        return Status::Ok();
      }
      WMBT_ASSIGN_OR_RETURN(auto bytes, fs->ReadFile(segment_path, op.at.offset, op.at.record_bytes));
      WMBT_ASSIGN_OR_RETURN(auto rec, DecodeJournalRecord((*bytes).view(), op.at.lsn));
      if (!options.rewrite_same_bytes && st.ok() && SameBytes(fs, path, rec.value)) {
        return Status::Ok();
      }
      WMBT_RETURN_IF_ERROR(fs->CreateDirs(ParentOf(path)));
      WMBT_RETURN_IF_ERROR(
          fs->WriteFileAtomic(path, {rec.value}, /*sync=*/false).WithContext("replaying journal"));
      ++out->files_written;
      return Status::Ok();
    }
    case JournalOp::kDelete:
    case JournalOp::kPutPacked: {
      if (!st.ok()) return Status::Ok();
      Status s = fs->DeleteFile(path);
      if (s.ok()) {
        ++out->files_deleted;
      } else if (!s.IsNotFound()) {
        return s.WithContext("replaying journal");
      }
      return Status::Ok();
    }
    case JournalOp::kExternal:
    case JournalOp::kSyncMark:  // never passed on by the scanner
      return Status::Ok();
  }
  return Status::Ok();
}

// What a scan gathers besides the index.
struct ScanState {
  std::map<std::string, LastOp> last;  // key -> its last record after applied_through
  std::map<uint64_t, uint64_t> ends;   // segment -> end of its last record
  uint64_t last_lsn = 0;
  uint64_t records = 0;
  uint64_t damaged_records = 0;
};

// Reads the records of the journal files from the one starting at LSN `from` on (0: the oldest;
// with no such file, none) into `packed` and `state`.
Status ScanRecords(FileSystem* fs, const std::string& root, const ReplayOptions& options,
                   uint64_t from, bool from_exists, PackedIndex* packed, ScanState* state) {
  JournalScanner scanner(fs, root);
  scanner.set_known_synced(options.applied_through);
  if (options.cut) scanner.set_last_lsn_max(options.cut_after);
  if (from > 0) scanner.StartAt(from);
  if (from == 0 || from_exists) {
    WMBT_RETURN_IF_ERROR(scanner.Scan([&](const ScannedRecord& r) {
      packed->Apply(r);
      state->ends[r.segment] = r.offset + r.record.encoded_bytes;
      if (!r.record.value_ok) ++state->damaged_records;
      if (r.record.lsn > options.applied_through) {
        PackedEntry at;
        at.segment = r.segment;
        at.offset = r.offset;
        at.lsn = r.record.lsn;
        at.record_bytes = static_cast<uint32_t>(r.record.encoded_bytes);
        state->last[std::string(r.record.key)] = LastOp{r.record.op, at, r.record.value_ok};
      }
      return Status::Ok();
    }));
  }
  state->last_lsn = scanner.last_lsn();
  state->records = scanner.records();
  return Status::Ok();
}

}  // namespace

Result<JournalReplayResult> ReplayJournal(FileSystem* fs, const std::string& root,
                                          const ReplayOptions& options, PackedIndex* packed) {
  JournalReplayResult out;
  WMBT_ASSIGN_OR_RETURN(const JournalFileList files, ListJournalFiles(fs, root));
  std::optional<PackedSnapshotHeader> snapshot;
  if (options.use_snapshot) {
    snapshot = LoadPackedSnapshot(fs, root, options.applied_through, files, packed,
                                  &out.snapshot_set_aside);
  }
  ScanState state;
  Status s;
  if (snapshot) {
    const uint64_t from = snapshot->through_lsn + 1;
    const bool from_exists = std::any_of(files.begin(), files.end(),
                                         [&](const auto& f) { return f.first == from; });
    s = ScanRecords(fs, root, options, from, from_exists, packed, &state);
    std::string why =
        s.ok() ? PackedSnapshotDisagreement(*snapshot, *packed, files, state.last_lsn)
               : s.ToString();
    if (!why.empty()) {
      out.snapshot_set_aside = "the snapshot through LSN " + std::to_string(from - 1) + " " + why;
      snapshot.reset();
      packed->Clear();
      state = ScanState{};
    }
  }
  if (!snapshot) s = ScanRecords(fs, root, options, 0, false, packed, &state);
  WMBT_RETURN_IF_ERROR(s);
  out.last_lsn = state.last_lsn;
  out.records = state.records;
  out.damaged_records = state.damaged_records;
  if (snapshot) {
    out.snapshot_through = snapshot->through_lsn;
    out.snapshot_bytes = snapshot->encoded_bytes;
  }
  std::map<uint64_t, std::string> paths;
  for (const auto& [first, path] : files) {
    uint64_t bytes = state.ends[first];
    if (snapshot && first <= snapshot->through_lsn) bytes = snapshot->file_bytes[first];
    out.segments.push_back(JournalSegment{first, path, bytes});
    paths[first] = path;
  }
  for (const auto& [key, op] : state.last) {
    WMBT_RETURN_IF_ERROR(ApplyLast(fs, root, key, op, paths[op.at.segment], options, &out));
  }
  return out;
}

}  // namespace wombatkv
