// DiskCache: the local disk plane — payloads of a remote L2 (S3) kept as files under one
// directory, bounded in bytes, least recently used first out (a hit or a fill is a use). It is a
// cache: L2 is the truth, nothing is fsynced, and any file may be lost or torn by a crash.
//
// Files: <dir>/<namespace>/<hh>/<40-hex content hash>, hh = the hash's first two hex digits
// (256 shard directories per namespace keep directories small). A file is the payload framed
// by a 40-byte header (docs/layout.md §9):
//   0  4  magic "WKC1"        4  4  CRC32C of the payload     8  8  payload length
//   16 20 BLAKE3-20 content hash (must equal the file's name)  36 4  CRC32C of bytes [0, 36)
//   40 n  payload
// The payload was checked against its BLAKE3 hash before it was written (an L2 read is verified
// by the store, an upload's bytes are those it hashed); a read checks the CRCs, the length and
// the name, which catches torn and flipped files at CRC32C cost (~10× cheaper than BLAKE3).
//
// Invariants:
//   D1. A payload is returned only from a file whose header CRC, name, length and payload CRC
//       all hold; a file that fails is deleted and counted (dropped), never served.
//   D2. bytes() == the sum of the sizes of the files indexed (ready, or being written);
//       bytes() <= budget at all times: room is made (evicting least recently used ready files,
//       at most kEvictionsPerFillMax per fill) before a fill counts, or the fill is skipped.
//       Files being deleted are counted apart (deleting_bytes) until their unlink returns.
//   D3. A key has at most one entry: a fill of a key being written or deleted is skipped, so
//       an unlink never removes a newer file of the same name.
//   D4. After Open, the index equals what is on disk: sizes from stat, no file read; leftover
//       temporary files of a crashed fill and files too short to be valid are deleted.
//
// Thread-safety: every method may be called from any thread. One mutex guards the index; it is
// never held across file I/O.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "wombatkv/buffer.h"
#include "wombatkv/env.h"
#include "wombatkv/status.h"
#include "wombatkv/types.h"

namespace wombatkv {

inline constexpr size_t kDiskCacheHeaderBytes = 40;

struct DiskCacheOptions {
  std::string dir;         // created if missing
  uint64_t bytes_max = 0;  // the budget (D2); > 0
  FileSystem* fs = nullptr;
  // Warnings (a failed write or delete, a dropped file); may be empty.
  std::function<void(const std::string&)> warn;
  // Where reads land (FileSystem::ReadFileInto); may be empty: fresh buffers.
  FileSystem::ReadBuffers read_buffers;
};

struct DiskCacheStats {
  uint64_t bytes = 0;  // D2: indexed files, including those being written
  uint64_t files = 0;
  uint64_t deleting_bytes = 0;
  uint64_t budget_bytes = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;
  uint64_t fills = 0;          // files written
  uint64_t fill_failures = 0;  // writes that failed (the file system is full, say)
  uint64_t fills_skipped = 0;  // no room within the eviction bound, or larger than the budget
  uint64_t dropped = 0;        // files that failed their check (D1), deleted
  uint64_t delete_failures = 0;  // unlinks that failed: the file stays indexed and counted (D2)
};

// What one namespace's cache files hold.
struct DiskCacheUsage {
  uint64_t files = 0;
  uint64_t bytes = 0;
};

class DiskCache {
 public:
  static constexpr size_t kEvictionsPerFillMax = 256;

  // Creates the directory and indexes what it holds (D4): one ListDir per directory and one Stat
  // per file. Use order starts as the files' modification order (a file's last fill). If what
  // is there exceeds the budget (it was lowered), the oldest files are deleted now.
  static Result<std::unique_ptr<DiskCache>> Open(DiskCacheOptions options);

  // The verified payload (D1), or nullopt: not cached, being written, or dropped just now. A hit
  // is a use. The slice points into the buffer read (no copy).
  std::optional<BufferSlice> Lookup(std::string_view ns, const ContentHash& hash);

  // Writes the payload's file unless the key is already indexed (then it only counts as a use).
  // REQUIRES: HashPayload(payload) == hash — the caller verified it. Evicts first (D2). The
  // write is not synced. Errors are counted and logged, not returned: a cache fill is optional.
  void Fill(std::string_view ns, const ContentHash& hash, ByteView payload);

  // Whether the key is indexed and ready (tests).
  bool Contains(std::string_view ns, const ContentHash& hash) const;

  DiskCacheStats Stats() const;
  DiskCacheUsage NamespaceUsage(std::string_view ns) const;
  const std::string& dir() const { return options_.dir; }

  // The file of a key (tests, du).
  static std::string PathOf(const std::string& dir, std::string_view ns, const ContentHash& hash);
  // Size of a cache file for a payload of `payload_bytes`.
  static uint64_t FileBytes(uint64_t payload_bytes) {
    return kDiskCacheHeaderBytes + payload_bytes;
  }

  // Walks a cache directory without opening a cache (no deletes, no writes): per namespace, the
  // files that look like cache files and their sizes. For `wombatkv du`. NotFound if `dir` is
  // absent.
  static Result<std::map<std::string, DiskCacheUsage>> Scan(FileSystem* fs,
                                                            const std::string& dir);

 private:
  struct Key {
    std::string ns;
    ContentHash hash;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return static_cast<size_t>(k.hash.Prefix64() ^ std::hash<std::string>()(k.ns));
    }
  };
  enum class State : uint8_t { kWriting, kReady, kDeleting };
  struct Entry {
    uint64_t bytes = 0;
    uint64_t generation = 0;  // tells a re-created entry from the one a reader saw
    State state = State::kWriting;
    std::list<Key>::iterator lru;  // in lru_ only while kReady (front = most recent)
  };
  struct Victim {
    Key key;
    uint64_t bytes;
  };

  explicit DiskCache(DiskCacheOptions options) : options_(std::move(options)) {}
  Status Index();  // D4, at Open
  // Adds a ready entry (Open) / a writing one (Fill). REQUIRES: mu_ held.
  Entry& AddLocked(const Key& key, uint64_t bytes, State state);
  // Takes the entry out of the index and its counts. REQUIRES: mu_ held.
  void EraseLocked(std::unordered_map<Key, Entry, KeyHash>::iterator it);
  // Ready → deleting: out of the use order and the counts, into deleting_bytes. REQUIRES: mu_.
  void MarkDeletingLocked(std::unordered_map<Key, Entry, KeyHash>::iterator it);
  // Marks least recently used ready entries for deletion until `incoming` more bytes fit in the
  // budget; at most `max` of them. Returns false (and marks none) if they would not make room.
  // REQUIRES: mu_ held.
  bool MakeRoomLocked(uint64_t incoming, size_t max, std::vector<Victim>* victims);
  // False if an unlink failed (that victim stays indexed and counted).
  bool DeleteVictims(const std::vector<Victim>& victims);
  // Removes a file that failed its check, if the entry is still the one that was read (D1).
  void Drop(const Key& key, uint64_t generation, const std::string& why);
  // REQUIRES: mu_ held. After an unlink: erased if `deleted`, else back to ready (still counted).
  void FinishDeleteLocked(const Key& key, bool deleted);
  void UnmarkDeletingLocked(std::unordered_map<Key, Entry, KeyHash>::iterator it);
  // Never called with mu_ held: the sink is the user's callback.
  void Warn(const std::string& message) const {
    if (options_.warn) options_.warn(message);
  }
  // For repeated failures: the first one and every 1000th, with the count so far.
  void WarnEvery(uint64_t count, const std::string& message) const {
    if (count == 1 || count % 1000 == 0) {
      Warn(message + " (" + std::to_string(count) + " so far)");
    }
  }

  const DiskCacheOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<Key, Entry, KeyHash> map_;             // GUARDED_BY(mu_)
  std::list<Key> lru_;                                      // GUARDED_BY(mu_)
  std::unordered_map<std::string, DiskCacheUsage> per_ns_;  // GUARDED_BY(mu_)
  DiskCacheStats stats_;                                    // GUARDED_BY(mu_)
  uint64_t next_generation_ = 1;                            // GUARDED_BY(mu_)
  // Shard directories known to exist (one CreateDirs each, not one per fill).
  std::unordered_set<std::string> made_dirs_;  // GUARDED_BY(mu_)
};

// Parses a cache file read whole (D1): the payload slice, or Corruption naming what failed.
Result<BufferSlice> DecodeDiskCacheFile(std::shared_ptr<const Buffer> file,
                                        const ContentHash& expected);
// The 40-byte header of a cache file holding `payload`.
std::array<uint8_t, kDiskCacheHeaderBytes> EncodeDiskCacheHeader(const ContentHash& hash,
                                                                  ByteView payload);

}  // namespace wombatkv
