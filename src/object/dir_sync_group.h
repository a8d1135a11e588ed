// DirSyncGroup: group commit of directory entries, for FsObjectStore.
//
// A durable local write is: content synced, then named (link/rename), then the directory synced.
// The last step is what concurrent writers can share: one SyncDir covers every name created in
// the directory before it started. Writers name their files through this group and then wait for
// the next sync of the directory; at most one sync per directory runs at a time, and the writers
// that arrive meanwhile form the next round, synced once when the running one returns. One writer
// alone pays exactly what it did without the group (one SyncDir).
//
// Invariants:
//   1. A name joins the open round of its directory in the same critical section as the
//      link/rename that creates it. A round is closed when its sync starts, so that sync started
//      after every link/rename of the round: it covers them all (env.h: PendingFile::Commit).
//   2. At most one SyncDir per directory is in flight. A round is synced by the first of its
//      waiters that finds the previous round done; every member gets that sync's status.
//   3. A name stays pending until its round's sync has returned OK. A reader that has seen a
//      file calls AwaitDurable afterwards, so nothing in this process acts on a name — serves
//      it, or writes a chain head naming it — that a crash could still take back.
//
// A failed sync fails every member of its round, every reader waiting on it then, and every
// reader of those names later: they stay pending with the round's error (the entries stay on
// disk, but may not survive a crash) until a new Name of the same path starts them afresh.
//
// Across processes sharing a root, (3) does not hold: another process may see a name between its
// link and the end of its round (as it could between link and fsync before group commit).
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "wombatkv/env.h"
#include "wombatkv/status.h"

namespace wombatkv {

class DirSyncGroup {
 public:
  struct Round;
  struct Dir;
  // A name in flight: the round whose directory sync will make it durable.
  struct Ticket {
    Dir* dir = nullptr;
    std::shared_ptr<Round> round;
  };

  explicit DirSyncGroup(FileSystem* fs);
  ~DirSyncGroup();
  DirSyncGroup(const DirSyncGroup&) = delete;
  DirSyncGroup& operator=(const DirSyncGroup&) = delete;

  // Names `file` at `path` (PendingFile::Commit(replace)), `dir` being the directory that holds
  // `path`, and returns its ticket. The name is visible at once and durable after Await. Errors
  // are Commit's (Conflict: `path` exists and `replace` is false); nothing is pending then.
  Result<Ticket> Name(PendingFile& file, const std::string& dir, const std::string& path,
                      bool replace);

  // Returns once the ticket's directory sync has returned, with its status (shared by the round).
  Status Await(const Ticket& ticket);

  // If a name this group committed at `path` is not yet durable, waits for its round and returns
  // that round's status; OK at once otherwise. Call it after observing the file.
  Status AwaitDurable(const std::string& dir, const std::string& path);

 private:
  Dir& DirFor(const std::string& dir);  // REQUIRES: mu_ held
  Status Wait(Dir& dir, const std::shared_ptr<Round>& round, std::unique_lock<std::mutex>& lock);

  FileSystem* fs_;
  std::mutex mu_;
  // Never erased: one entry per directory written (namespaces × fingerprints × kinds).
  std::unordered_map<std::string, std::unique_ptr<Dir>> dirs_;
};

}  // namespace wombatkv
