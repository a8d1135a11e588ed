#include "object/journal_replay.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "object/journal.h"
#include "object/object_key.h"
#include "wombatkv/object_store.h"

namespace wombatkv {
namespace {

struct LastOp {
  JournalOp op;
  ByteView value;
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

}  // namespace

Result<JournalReplayResult> ReplayJournal(FileSystem* fs, const std::string& root,
                                          bool rewrite_same_bytes) {
  JournalReplayResult out;
  auto names = fs->ListDir(root);
  if (!names.ok()) return names.status().IsNotFound() ? Result<JournalReplayResult>(out) : names.status();
  std::vector<std::pair<uint64_t, std::string>> files;
  for (const std::string& n : *names) {
    uint64_t first = 0;
    if (ParseJournalFileName(n, &first)) files.emplace_back(first, root + "/" + n);
  }
  std::sort(files.begin(), files.end());
  for (auto& f : files) out.journal_paths.push_back(f.second);

  // The buffers stay alive while `last` points into them.
  std::vector<std::shared_ptr<Buffer>> contents;
  std::map<std::string, LastOp> last;  // key -> its last record in the prefix
  uint64_t expected = files.empty() ? 0 : files.front().first;
  for (const auto& [first, path] : files) {
    // Files start only after their predecessor was synced whole (journal.h), and are retired
    // oldest first (fs_object_store.cc, Checkpoint): so a file that does not continue the
    // sequence means an earlier one lost records it had synced. Replaying past the gap could
    // apply old versions over newer ones; stopping silently would drop acknowledged writes.
    if (first != expected) {
      return Status::Corruption(
          "journal of the local L2 in " + root + " is damaged: records end at LSN " +
          std::to_string(expected - 1) + " but the next file starts at LSN " +
          std::to_string(first) + " (" + path + "). Writes acknowledged after LSN " +
          std::to_string(expected - 1) + " may be lost: move the .~journal-* files out of " +
          root + " to open the store with what the directory holds, then run `wombatkv audit`");
    }
    WMBT_ASSIGN_OR_RETURN(auto bytes, fs->ReadFile(path, 0, kToEnd));
    ByteView rest(bytes->data(), bytes->size());
    while (true) {
      auto rec = DecodeJournalRecord(rest, expected);
      if (!rec.ok()) break;  // the end of this file's records (zeros, torn, stale)
      last[std::string(rec->key)] = LastOp{rec->op, rec->value};
      rest = rest.subspan(rec->encoded_bytes);
      out.last_lsn = expected++;
      ++out.records;
    }
    contents.push_back(std::move(bytes));
    // The next file must start right after this one's last record; if this one was cut short,
    // the next one (if any) fails that test.
  }

  for (const auto& [key, op] : last) {
    // Keys were validated when journaled; a record that names something else is not ours.
    if (!ValidateObjectKey(key).ok()) {
      return Status::Corruption("journal in " + root + " names an invalid key: " + key);
    }
    const std::string path = root + "/" + key;
    // A key later used as a directory (put a, delete a, put a/b): its last record here is
    // superseded by what that directory holds, which its own records replay.
    if (auto st = fs->Stat(path); st.ok() && st->is_dir) continue;
    if (op.op == JournalOp::kPut) {
      if (!rewrite_same_bytes && SameBytes(fs, path, op.value)) continue;
      WMBT_RETURN_IF_ERROR(fs->CreateDirs(ParentOf(path)));
      WMBT_RETURN_IF_ERROR(
          fs->WriteFileAtomic(path, {op.value}, /*sync=*/false).WithContext("replaying journal"));
      ++out.files_written;
    } else if (op.op == JournalOp::kDelete) {
      Status s = fs->DeleteFile(path);
      if (s.ok()) {
        ++out.files_deleted;
      } else if (!s.IsNotFound()) {
        return s.WithContext("replaying journal");
      }
    }
  }
  return out;
}

}  // namespace wombatkv
