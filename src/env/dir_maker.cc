#include "env/dir_maker.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "env/errno_status.h"

namespace wombatkv {
namespace {

std::string ParentOf(const std::string& dir) {
  const size_t slash = dir.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : dir.substr(0, slash);
}

// Whether `dir` is `path` or one of its ancestors.
bool OnPath(const std::string& dir, const std::string& path) {
  if (!path.starts_with(dir)) return false;
  return path.size() == dir.size() || path[dir.size()] == '/' || dir.ends_with('/');
}

}  // namespace

Status DirMaker::CreateDirs(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return AwaitDurable(path);
  for (size_t pos = 0; pos != std::string::npos;) {
    pos = path.find('/', pos + 1);
    const std::string part = path.substr(0, pos);
    if (part.empty() || part == "/") continue;
    WMBT_ASSIGN_OR_RETURN(const bool made, MakeOne(part));
    if (made) continue;
    if (::stat(part.c_str(), &st) != 0) return ErrnoStatus(errno, "stat", part);
    if (!S_ISDIR(st.st_mode)) {
      return Status::FailedPrecondition("create directory " + path + ": " + part +
                                        " exists and is not a directory");
    }
  }
  return AwaitDurable(path);
}

Result<bool> DirMaker::MakeOne(const std::string& dir) {
  MakingMap::iterator it;
  {
    // Registered before the directory exists: whoever finds it there finds this entry too.
    std::lock_guard<std::mutex> g(mu_);
    it = making_.emplace(dir, Making{});
    making_count_.fetch_add(1);
  }
  Status synced;
  const bool made = ::mkdir(dir.c_str(), 0755) == 0;
  const int err = errno;
  if (made) synced = sync_dir_(ParentOf(dir));  // the new entry must survive a crash
  {
    std::lock_guard<std::mutex> g(mu_);
    FinishLocked(it, synced);
  }
  WMBT_RETURN_IF_ERROR(synced);
  if (!made && err != EEXIST) return ErrnoStatus(err, "create directory", dir);
  return made;
}

void DirMaker::FinishLocked(MakingMap::iterator it, const Status& synced) {
  if (synced.ok()) {
    making_.erase(it);
    making_count_.fetch_sub(1);
  } else {
    it->second.busy = false;
  }
  done_.notify_all();
}

Status DirMaker::AwaitDurable(const std::string& path) {
  if (making_count_.load() == 0) return Status::Ok();
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    auto it = std::find_if(making_.begin(), making_.end(),
                           [&](const auto& entry) { return OnPath(entry.first, path); });
    if (it == making_.end()) return Status::Ok();
    if (it->second.busy) {
      done_.wait(lock);
      continue;
    }
    // Its maker's sync failed (M2): this caller syncs the parent again, as the maker would.
    it->second.busy = true;
    const std::string parent = ParentOf(it->first);
    lock.unlock();
    const Status synced = sync_dir_(parent);
    lock.lock();
    FinishLocked(it, synced);
    WMBT_RETURN_IF_ERROR(synced.WithContext("making " + path + " durable"));
  }
}

}  // namespace wombatkv
