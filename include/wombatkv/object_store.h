// ObjectStore: the narrow interface to the L2 plane, WombatKV's source of truth.
//
// Implementations: FsObjectStore (a local directory, the embedded default), MemObjectStore (in
// memory; stricter than real stores, for tests and the simulator) and S3ObjectStore. One
// conformance suite (src/object/object_store_conformance.h) runs against every one of them.
//
// Keys are '/'-separated relative names of [A-Za-z0-9._-] segments, none "." or "..", no empty
// segment, at most 1024 bytes: anything else is InvalidArgument (names never become paths
// unchecked). An ETag is an opaque version string: any change of content changes it.
//
// Thread-safety: all methods may be called concurrently from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "wombatkv/buffer.h"
#include "wombatkv/status.h"

namespace wombatkv {

class Clock;
class FileSystem;

enum class PutMode : uint8_t {
  kOverwrite,  // unconditional (last writer wins)
  kIfAbsent,   // create only: Conflict if the key exists (S3 If-None-Match: *)
  kIfMatch,    // replace only if the current ETag equals if_match: else Conflict (S3 If-Match)
};

struct PutOptions {
  PutMode mode = PutMode::kOverwrite;
  std::string if_match;  // with kIfMatch
  // false: the put may return before the object is durable, once it is ordered before every
  // later durable put of this store object: if a crash keeps a durable put that this one
  // returned before, or a later put that went through the journal, it keeps this one too (and,
  // with a durable put after it returning, this one is durable). A later deferred put too large
  // for the journal is a file made durable on its own and may outlive this one in a crash (no
  // caller relies on more: a head, written durably, vouches for its blobs; a review, session
  // 60). Readers of this process see the object at once (Get/Head wait for it as needed).
  // For writes whose durability a later write vouches for, e.g. blobs before the head naming
  // them. Backends without ordered durability (S3, memory, a plain local directory) make every
  // put durable on return and ignore it.
  bool durable_on_return = true;
  // Optional: keeps the bytes of every part of 16 KiB or more alive and unchanged for as long as
  // it is held (smaller parts, such as a header on the stack, are always copied). A store that
  // writes later (the journaled local directory: when its next round is written) may then keep
  // those parts by reference instead of copying them; others ignore it.
  std::shared_ptr<const void> value_owner;
};

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  std::string etag;
  // When the current version was written, µs since the Unix epoch, by the store's clock (the
  // file's mtime, S3's LastModified); 0 when the backend does not say. Informational: orphan GC
  // ages blobs by it (docs/layout.md §7), nothing orders writes by it.
  uint64_t modified_us = 0;
};

struct ObjectData {
  std::shared_ptr<Buffer> bytes;  // the requested range
  std::string etag;
  uint64_t object_size = 0;  // size of the whole object
};

struct ListPage {
  std::vector<ObjectInfo> objects;           // in key order
  std::vector<std::string> common_prefixes;  // with a delimiter: "dir/" groups, in order
  std::string next_token;                    // empty when the listing is complete
};

inline constexpr uint64_t kToEnd = std::numeric_limits<uint64_t>::max();

// A local directory's journal (docs/layout.md, "journal files"): its group commits.
struct JournalCounters {
  uint64_t syncs = 0;               // fdatasyncs of journal files (one per round)
  uint64_t records_synced = 0;      // records they made durable (per sync: the group commit)
  uint64_t sync_micros = 0;         // time spent in them
  uint64_t preallocations = 0;      // zero-fills of journal space, each on a round's path
  uint64_t preallocate_micros = 0;  // time spent in them
};

// What a store did under the hood since it was opened, for metrics: a remote store's requests
// (all 0 for stores without a network: a local directory, memory) and a local directory's
// journal (all 0 for any other store).
struct ObjectStoreCounters {
  uint64_t attempts = 0;   // requests sent, retries included
  uint64_t retries = 0;    // attempts after a transient failure (throttling, 5xx, timeouts, resets)
  uint64_t throttled = 0;  // answers that asked us to slow down (503 SlowDown, 429)
  JournalCounters journal;
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // Where the objects live, for messages ("file:///var/x", "s3://bucket"); never secrets.
  virtual std::string Describe() const = 0;

  // Stores the concatenation of `parts` under `key` atomically (readers see all or nothing) and
  // durably (on return the object survives a crash). Returns the new ETag.
  // Conflict: the condition of `options` did not hold (nothing was written).
  virtual Result<std::string> Put(std::string_view key, const std::vector<ByteView>& parts,
                                  const PutOptions& options) = 0;

  // Put with a completion: calls `done` exactly once with what Put would return — before
  // returning, or later on another thread (a store that commits durable puts in groups: the
  // journaled local directory, whose syncing thread then completes everyone's put in turn).
  // `parts` are read only during the call. `done` must be short and must not wait for this
  // store's durable writes (its thread may be the one that syncs them). Decorators that override
  // Put get this default, which calls their Put.
  using PutDone = std::function<void(Result<std::string>)>;
  virtual void PutAsync(std::string_view key, const std::vector<ByteView>& parts,
                        const PutOptions& options, PutDone done) {
    done(Put(key, parts, options));
  }

  // Reads [offset, offset+length) clipped to the object. NotFound if absent; InvalidArgument if
  // offset > object size.
  virtual Result<ObjectData> Get(std::string_view key, uint64_t offset = 0,
                                 uint64_t length = kToEnd) = 0;

  // NotFound if absent.
  virtual Result<ObjectInfo> Head(std::string_view key) = 0;

  // Removes `key`. OK if it was already absent (as S3).
  virtual Status Delete(std::string_view key) = 0;

  // Keys starting with `prefix`, in lexicographic order, at most `max_keys` (<= 1000) per page,
  // continuing after `token` (from a previous page's next_token; empty to start). With a
  // non-empty `delimiter` (only "/" is supported), keys that contain it after the prefix are
  // grouped into common_prefixes (each listed once, counted against max_keys).
  virtual Result<ListPage> List(std::string_view prefix, std::string_view delimiter,
                                std::string_view token, size_t max_keys) = 0;

  // Counters since open; cheap (relaxed atomics), callable at any time.
  virtual ObjectStoreCounters Counters() const { return {}; }

  // OK while the store can take writes; otherwise the sticky failure that stops it until it is
  // opened again (a local directory whose journal could not write or sync, or whose checkpoint
  // failed). A remote store's transient errors do not count: they are reported per call.
  virtual Status Health() const { return Status::Ok(); }
  // A remote store: OK while its last request was answered; Unavailable, saying for how long and
  // why, while requests fail as against a server that is down, unreachable or refusing this
  // client (credentials, a missing bucket). A local store: OK.
  virtual Status Reachability() const { return Status::Ok(); }
  // Whether kIfAbsent and kIfMatch are atomic (a compare-and-swap on the server). False only for
  // an S3 server found at open not to honour conditional writes: there they are emulated, a HEAD
  // then an unconditional PUT, and the last writer wins. The store then refuses compare-and-swap
  // publishes rather than let them lose an update silently.
  virtual bool HonoursConditionalWrites() const { return true; }
};

// Forwards every call to a target store (not owned). Decorators — fault injection, tracing,
// scratch stores in tests — derive from it and override only what they change (after LevelDB's
// EnvWrapper). REQUIRES: a target is set before the first call.
class ObjectStoreWrapper : public ObjectStore {
 public:
  explicit ObjectStoreWrapper(ObjectStore* target = nullptr) : target_(target) {}

  std::string Describe() const override { return target_->Describe(); }
  Result<std::string> Put(std::string_view key, const std::vector<ByteView>& parts,
                          const PutOptions& options) override {
    return target_->Put(key, parts, options);
  }
  Result<ObjectData> Get(std::string_view key, uint64_t offset, uint64_t length) override {
    return target_->Get(key, offset, length);
  }
  Result<ObjectInfo> Head(std::string_view key) override { return target_->Head(key); }
  ObjectStoreCounters Counters() const override { return target_->Counters(); }
  Status Health() const override { return target_->Health(); }
  Status Reachability() const override { return target_->Reachability(); }
  bool HonoursConditionalWrites() const override { return target_->HonoursConditionalWrites(); }
  Status Delete(std::string_view key) override { return target_->Delete(key); }
  Result<ListPage> List(std::string_view prefix, std::string_view delimiter,
                        std::string_view token, size_t max_keys) override {
    return target_->List(prefix, delimiter, token, max_keys);
  }

 protected:
  ObjectStore* target() const { return target_; }
  void set_target(ObjectStore* target) { target_ = target; }

 private:
  ObjectStore* target_;
};

// Checks an object key against the rules above.
Status ValidateObjectKey(std::string_view key);

// A local directory. Objects are files under `root` (created if needed); conditional writes are
// serialised with an advisory lock so that several processes sharing the directory see atomic
// CAS. Writes fsync the file and its directory before returning. Unlike S3, a key cannot be both
// an object and a directory of other keys ("a" and "a/b"): such a Put fails with
// FailedPrecondition; a segment longer than the file system allows (255 bytes) is
// InvalidArgument. The store's own files (the lock "<root>/.~lock", temporaries) contain '~', so
// they are never keys and never listed.
std::unique_ptr<ObjectStore> NewFsObjectStore(std::string root, FileSystem* fs);

// The local directory of a data directory's owner: as NewFsObjectStore, with small objects
// (<= journaled_object_bytes_max) made durable through a write-ahead journal in the root, so
// that one shared fdatasync commits many puts and deletes in order (docs/architecture.md,
// "Durability on the local-directory L2"; format: docs/layout.md). Objects of at most
// packed_object_bytes_max (and journaled_object_bytes_max) are packed: their journal record is
// their only copy, no file is created for them, and the journal files holding live ones are kept
// (and compacted) for as long as they are needed. Opening replays the journal left by a crash.
// The caller must be the only process that writes to the root (it takes "<root>/.~journal.lock";
// FailedPrecondition if another process holds it); other processes may read it, packed objects
// included, and delete file objects from it (orphan GC) through NewFsObjectStore, whose other
// writes refuse such a root. `fs` must support AppendFile and SyncFileSystem.
struct FsJournalOptions {
  uint64_t journaled_object_bytes_max = 1u << 20;
  uint64_t journal_file_bytes = 64u << 20;  // then a checkpoint starts the next file
  uint64_t packed_object_bytes_max = 64u << 10;
  // Deferred puts (durable_on_return = false) write the journal's batch to its file, unsynced,
  // once this much waits, and start its write-back: the sync of a later durable put then finds
  // it written and on its way to the disk. 0 = they leave it all to that sync.
  uint64_t write_behind_bytes = 1u << 20;
  // Index entries a compaction looks at per hold of the store's name lock while it gathers a
  // journal file's live packed objects: every L2 operation takes that lock, so it is never held
  // for a walk of the whole index (millions of objects). At least 1.
  size_t compact_scan_chunk = 4096;
  Clock* clock = nullptr;  // packed objects' modification times; null: the real clock
  // Told what went wrong that the store recovers from by itself (a packed-index snapshot set
  // aside at open, or not written); null: nobody is told.
  std::function<void(const std::string&)> warn;
  // Told once, when the store stops taking writes until it is reopened (its journal could not
  // write or sync, or a checkpoint failed: Health() is that error from then on); null: nobody.
  std::function<void(const Status&)> failed;
  // Where object reads land (FileSystem::ReadBuffers, for ReadFileInto); null: fresh buffers.
  std::function<std::shared_ptr<Buffer>(size_t)> read_buffers;
};
Result<std::unique_ptr<ObjectStore>> OpenJournaledFsObjectStore(std::string root, FileSystem* fs,
                                                                FsJournalOptions options = {});

// In memory. Honours every condition exactly; ETags are unique per write. Modification times
// come from `clock` (WallMicros; null = the real clock), so a test can age objects.
std::unique_ptr<ObjectStore> NewMemObjectStore(Clock* clock = nullptr);

}  // namespace wombatkv
