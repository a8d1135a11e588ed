// PackedIndex: where the packed objects of a journaled local L2 live (docs/layout.md, "Packed
// objects"). An object of at most FsJournalOptions::packed_object_bytes_max has no file: its
// kPutPacked journal record is its only copy, and the journal file holding the record (a
// "segment") is kept while any such record in it is live — the newest version of its key.
//
// The owner (FsObjectStore in journaled mode) keeps one, updated as versions are applied; other
// processes reading the root build a read-only one from the journal files (packed_view.h). Both
// feed it journal records in LSN order: a kPutPacked record makes its key packed at that record,
// any other record of the key (a file version, a delete) makes it not packed.
//
// Not thread-safe: the owner guards it with its name lock.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "base/sorted_blocks.h"
#include "object/journal_scan.h"
#include "wombatkv/object_store.h"

namespace wombatkv {

struct PackedEntry {
  uint64_t segment = 0;  // the journal file (its first LSN)
  uint64_t offset = 0;   // of the record in it
  uint64_t lsn = 0;      // of the record
  uint32_t record_bytes = 0;
  uint32_t size = 0;     // of the object
  uint64_t etag_id = 0;  // the LSN of the put that wrote this version (copies keep it)
  uint64_t modified_us = 0;
};

// "p<etag id>-<modified µs>-<size>" in lowercase hex: never the form of a file's ETag
// ("<inode>-<mtime ns>-<size>" has no letter p), so a version moving between a file and a record
// always changes its ETag. The etag id is an LSN, unique while journal files remain; the time
// keeps it unique across an empty journal restarting its LSNs at 1.
std::string PackedEtag(const PackedEntry& e);

// One entry of a List page: a key or, with a delimiter, a common prefix.
struct ListEntry {
  std::string name;
  bool is_prefix = false;
  ObjectInfo info;  // for a key
};

class PackedIndex {
 public:
  PackedIndex() = default;
  // order_ points into entries_: a copy would point into the original. Moves keep the nodes.
  PackedIndex(const PackedIndex&) = delete;
  PackedIndex& operator=(const PackedIndex&) = delete;
  PackedIndex(PackedIndex&&) = default;
  PackedIndex& operator=(PackedIndex&&) = default;

  const PackedEntry* Find(std::string_view key) const;
  // Makes `e` the key's entry.
  void Set(std::string_view key, const PackedEntry& e);
  // Returns whether the key had an entry.
  bool Erase(std::string_view key);
  void Clear();
  // A journal record read back in LSN order (replay, a reader's scan), as described above.
  void Apply(const ScannedRecord& r);

  size_t size() const { return entries_.size(); }
  uint64_t live_bytes() const { return live_bytes_; }  // record bytes of every entry
  uint64_t LiveRecords(uint64_t segment) const;
  // Calls fn(key, entry) for every entry, in key order.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const Entry* e : order_) fn(std::string_view(e->first), e->second);
  }
  // As ForEach, for at most `limit` entries after key `after` ("": from the first; keys are
  // never empty). Returns whether entries remain beyond them.
  template <typename Fn>
  bool ForEachAfter(std::string_view after, size_t limit, Fn&& fn) const {
    auto it = after.empty() ? order_.begin() : order_.UpperBound(after);
    for (; it != order_.end() && limit > 0; ++it, --limit) {
      fn(std::string_view((*it)->first), (*it)->second);
    }
    return it != order_.end();
  }

  // Up to `limit` entries of a listing of `prefix` (the rules of object_key.h: after `token`;
  // with `group`, keys with a '/' after the prefix as common prefixes), in order. Sets *more if
  // entries beyond them exist.
  void ListInto(std::string_view prefix, bool group, std::string_view token, size_t limit,
                std::vector<ListEntry>* out, bool* more) const;

 private:
  struct SegmentUse {
    uint64_t records = 0;
  };
  void Unuse(const PackedEntry& e);

  // Every entry by its key: the lookups of each put and read. Node-based, so order_ may point
  // at the entries; absl's, whose probe for a key not held (every new key's) reads one group of
  // control bytes, not a bucket and the node before it (BENCHMARKS.md, "Session 35").
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
  };
  using Entries = absl::node_hash_map<std::string, PackedEntry, KeyHash, std::equal_to<>>;
  using Entry = Entries::value_type;
  Entries entries_;
  // The same entries in key order, for listings and snapshots. Not a std::map: inserting a new
  // blob key into an ordered map of a million missed the cache on every level, 6.5 µs on the
  // journal's sync thread for each new key (base/sorted_blocks.h).
  SortedBlocks<Entry> order_;
  std::unordered_map<uint64_t, SegmentUse> use_;
  uint64_t live_bytes_ = 0;
};

// Reads [offset, offset + length) (clipped) of packed object `key` whose record is `e` in journal
// file `path`. NotFound if the file is gone (the owner moved the record: look it up again);
// Corruption if the record does not read back or its value fails its checksum.
// The record is read into a buffer of `buffers` (null: a fresh one).
Result<ObjectData> ReadPacked(FileSystem* fs, const std::string& path, std::string_view key,
                              const PackedEntry& e, uint64_t offset, uint64_t length,
                              const FileSystem::ReadBuffers& buffers = {});

// Reads the whole record of `e` (header, key, value), checked like ReadPacked; `damaged` (may be
// null) is set instead of failing when only the value is bad.
Result<std::shared_ptr<Buffer>> ReadPackedRecord(FileSystem* fs, const std::string& path,
                                                 std::string_view key, const PackedEntry& e,
                                                 bool* damaged,
                                                 const FileSystem::ReadBuffers& buffers = {});

// The union of two listings of the packed objects taken before and after a directory walk (each
// in order), so that a key moving between a file and a packed record during the walk is listed in
// one form or the other; on a name in both, `after`'s entry.
std::vector<ListEntry> UnionListings(std::vector<ListEntry> before, std::vector<ListEntry> after);

// Merges a listing's entries from the directory and from a PackedIndex (each in order, disjoint
// in keys, possibly sharing common prefixes) into one page of at most `page_size`. `*_more`:
// whether that source had entries beyond those given.
ListPage MergeListings(std::vector<ListEntry> dir, bool dir_more, std::vector<ListEntry> packed,
                       bool packed_more, size_t page_size);

}  // namespace wombatkv
