// PackedView: the packed objects of a journaled local L2 (packed_index.h) as a process that does
// not own the root sees them — `wombatkv audit` or `gc` beside a running store, a second store
// object in tests. Built from the journal files and kept current by reading what they gained
// before each use (journal_scan.h), so an object the owner acknowledged is visible to a view
// refreshed after that. It starts from the owner's packed-index snapshot (packed_snapshot.h) when
// there is a usable one, reading only the files after it.
//
// Thread-safe.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "object/journal_scan.h"
#include "object/packed_index.h"

namespace wombatkv {

class PackedView {
 public:
  PackedView(FileSystem* fs, std::string root) : fs_(fs), root_(root), scanner_(fs, root) {}

  // Reads the journal records written since the last call.
  Status Refresh();
  // Whether the root has journal files (as of the last Refresh): then the owner keeps them, and
  // other processes must not write objects into the root.
  bool journaled() const;
  bool Find(std::string_view key, PackedEntry* e) const;
  void ListInto(std::string_view prefix, bool group, std::string_view token, size_t limit,
                std::vector<ListEntry>* out, bool* more) const;

 private:
  FileSystem* const fs_;
  const std::string root_;
  mutable std::mutex mu_;
  JournalScanner scanner_;
  PackedIndex index_;
  bool tried_snapshot_ = false;  // the owner's snapshot is tried at the first Refresh only
};

// Where byte `offset` of object `key` of the local L2 at `root` is stored: (path, offset in that
// file) — the object's file, or the journal file holding its packed record. For tests and tools
// that must look at (or damage) the stored bytes themselves. NotFound if the object is absent.
Result<std::pair<std::string, uint64_t>> LocateStoredByte(FileSystem* fs, const std::string& root,
                                                          std::string_view key, uint64_t offset);

}  // namespace wombatkv
