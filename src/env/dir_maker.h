// DirMaker: makes directories whose entries survive a crash (FileSystem::CreateDirs on POSIX).
//
// A directory made by mkdir is on stable storage once its parent directory is synced. Without
// this class, a thread that needed a directory another thread was making found it there (stat,
// or mkdir's EEXIST) and went on at once: it wrote a file into it, synced the file and the
// directory and reported the file durable — while the maker's sync of the parent was still
// running, so a crash could take the directory back, and that file with it. (Journaling file
// systems commit the mkdir with the later syncs; POSIX promises nothing of the kind.)
//
//   M1. CreateDirs(path) returns OK only once every directory on `path` that this DirMaker made
//       is named in a synced parent: a caller that finds one still being made or synced waits
//       for its maker.
//   M2. A maker whose parent sync failed returns its error, and the directory is not taken for
//       durable: the next caller that needs it syncs the parent again (and returns that sync's
//       error if it fails too).
//
// Directories made by other processes are not tracked (a local L2 has one owner process).
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "wombatkv/status.h"

namespace wombatkv {

class DirMaker {
 public:
  // `sync_dir` makes a directory's entries durable (fsync of the directory).
  explicit DirMaker(std::function<Status(const std::string& dir)> sync_dir)
      : sync_dir_(std::move(sync_dir)) {}

  // mkdir -p `path`, each new directory's parent synced. FailedPrecondition when a component is
  // not a directory.
  Status CreateDirs(const std::string& path);

 private:
  struct Making {
    // Being made, or its parent being synced; false: its parent's last sync failed (M2).
    bool busy = true;
  };
  using MakingMap = std::multimap<std::string, Making>;

  // mkdir `dir`, registered first (M1); false with OK when it was there already.
  Result<bool> MakeOne(const std::string& dir);
  // Marks `it` done: forgotten when `synced` is OK, kept as failed otherwise (M2).
  void FinishLocked(MakingMap::iterator it, const Status& synced);
  // Waits until no directory on `path` is being made here; syncs again the parent of one whose
  // sync failed.
  Status AwaitDurable(const std::string& path);

  const std::function<Status(const std::string&)> sync_dir_;
  std::atomic<int> making_count_{0};  // entries in making_: the fast path skips mu_ at 0
  std::mutex mu_;
  std::condition_variable done_;  // an entry of making_ stopped being busy
  MakingMap making_;              // GUARDED_BY(mu_)
};

}  // namespace wombatkv
