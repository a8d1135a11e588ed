#include "object/dir_sync_group.h"

#include <condition_variable>

#include "base/check.h"

namespace wombatkv {

struct DirSyncGroup::Round {
  bool done = false;
  Status status;
  std::vector<std::string> paths;  // names to drop from `pending` once synced
};

struct DirSyncGroup::Dir {
  std::string path;
  std::shared_ptr<Round> open = std::make_shared<Round>();  // names join it (invariant 1)
  bool syncing = false;                                      // a closed round's sync is running
  std::condition_variable cv;                                // a round of this directory finished
  std::unordered_map<std::string, std::shared_ptr<Round>> pending;  // invariant 3
};

DirSyncGroup::DirSyncGroup(FileSystem* fs) : fs_(fs) {}
DirSyncGroup::~DirSyncGroup() = default;

DirSyncGroup::Dir& DirSyncGroup::DirFor(const std::string& dir) {
  auto& slot = dirs_[dir];
  if (!slot) {
    slot = std::make_unique<Dir>();
    slot->path = dir;
  }
  return *slot;
}

Result<DirSyncGroup::Ticket> DirSyncGroup::Name(PendingFile& file, const std::string& dir,
                                                const std::string& path, bool replace) {
  std::lock_guard<std::mutex> g(mu_);
  Dir& d = DirFor(dir);
  // Under mu_: a reader that sees the new name finds it pending (invariant 3).
  WMBT_RETURN_IF_ERROR(file.Commit(replace));
  d.open->paths.push_back(path);
  d.pending[path] = d.open;
  return Ticket{&d, d.open};
}

Status DirSyncGroup::Await(const Ticket& ticket) {
  std::unique_lock<std::mutex> lock(mu_);
  return Wait(*ticket.dir, ticket.round, lock);
}

Status DirSyncGroup::AwaitDurable(const std::string& dir, const std::string& path) {
  std::unique_lock<std::mutex> lock(mu_);
  auto d = dirs_.find(dir);
  if (d == dirs_.end()) return Status::Ok();
  auto p = d->second->pending.find(path);
  if (p == d->second->pending.end()) return Status::Ok();
  std::shared_ptr<Round> round = p->second;  // erased from `pending` when it finishes
  return Wait(*d->second, round, lock);
}

Status DirSyncGroup::Wait(Dir& d, const std::shared_ptr<Round>& round,
                          std::unique_lock<std::mutex>& lock) {
  while (!round->done) {
    if (d.syncing || d.open != round) {
      d.cv.wait(lock);  // the previous round's sync, or ours led by another member
      continue;
    }
    // Lead: close the round (later names join a new one), sync outside the lock.
    d.syncing = true;
    d.open = std::make_shared<Round>();
    lock.unlock();
    Status s = fs_->SyncDir(d.path);
    lock.lock();
    WMBT_CHECK(d.syncing);
    d.syncing = false;
    round->status = s.ok() ? s : s.WithContext("syncing directory " + d.path);
    round->done = true;
    // A failed round's names stay pending with its error: a later reader must not take a name
    // whose directory entry may never reach the disk for durable (until a new Name of the path
    // joins a round of its own).
    if (s.ok()) {
      for (const std::string& path : round->paths) {
        auto it = d.pending.find(path);
        if (it != d.pending.end() && it->second == round) d.pending.erase(it);
      }
    }
    round->paths.clear();
    d.cv.notify_all();
  }
  return round->status;
}

}  // namespace wombatkv
