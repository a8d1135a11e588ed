// FsObjectStore: objects are files under a root directory, at their key's relative path.
//
// Invariants:
//   1. An object's bytes are never modified in place: every version is a new file (temporary +
//      rename, or temporary + link for if-absent), so a reader sees one whole version.
//   2. Replacements (overwrite, if-match) and deletions happen only while holding the flock on
//      "<root>/.~lock", shared by every thread and process using the root. If-absent creation is
//      atomic by itself (link(2)) and takes no lock, so blob uploads run in parallel.
//   3. Names containing '~' (the lock, temporaries: env.h) or otherwise not valid key segments
//      are not objects: List skips them and no key can name them.
//   4. A Put returns after the object's content was synced before it got its name, and a sync of
//      its directory started after that (DirSyncGroup: concurrent Puts into one directory share
//      that sync). Get and Head of an object whose name is not durable yet wait until it is, so
//      this process never acts on a name a crash could take back (see dir_sync_group.h).
//
// ETag = "<inode>-<mtime_ns>-<size>" in lowercase hex, from one stat of the file: cheap, and
// unique enough. By (1) and (2) the versions of a key are a sequence of files, each created while
// its predecessor still existed, so a version never shares its predecessor's inode; and
// WriteFileAtomic makes each replacement's mtime_ns greater than its predecessor's, even within
// one coarse clock tick (env.h). So while a key exists its ETags never recur, and a stale
// if-match always fails. Residual case: a Delete followed, within the same clock tick, by a
// re-creation that reuses the freed inode with the same size repeats the deleted version's ETag;
// an if-match holding that ETag would then succeed. Content hashes would close it at the cost of
// reading whole objects on Head.
#include <algorithm>
#include <charconv>
#include <queue>

#include "object/dir_sync_group.h"
#include "object/object_key.h"
#include "wombatkv/env.h"

namespace wombatkv {
namespace {

constexpr int kPutAttemptsMax = 8;  // a concurrent Delete may remove the parent directory we made
constexpr int kWalkDepthMax = kObjectKeyBytesMax / 2 + 1;  // a key has at most 512 segments

void AppendHex(std::string& out, uint64_t v) {
  char buf[16];
  auto r = std::to_chars(buf, buf + sizeof buf, v, 16);
  out.append(buf, r.ptr);
}

std::string EtagOf(const FileInfo& info) {
  std::string etag;
  AppendHex(etag, info.inode);
  etag += '-';
  AppendHex(etag, info.mtime_ns);
  etag += '-';
  AppendHex(etag, info.size);
  return etag;
}

std::string ParentOf(std::string_view key) {
  size_t slash = key.find_last_of('/');
  return slash == std::string_view::npos ? std::string() : std::string(key.substr(0, slash));
}

class FsObjectStore final : public ObjectStore {
 public:
  FsObjectStore(std::string root, FileSystem* fs) : fs_(fs), syncs_(fs) {
    while (root.size() > 1 && root.back() == '/') root.pop_back();
    root_ = root.empty() ? "." : root;
    base_ = root_ == "/" ? "/" : root_ + "/";
    lock_path_ = base_ + ".~lock";
    // Best effort: a failure here resurfaces, with its cause, at the first write.
    (void)fs_->CreateDirs(root_);
  }

  std::string Describe() const override { return "file://" + root_; }

  Result<std::string> Put(std::string_view key, const std::vector<ByteView>& parts,
                          const PutOptions& options) override {
    WMBT_RETURN_IF_ERROR(ValidateObjectKey(key));
    if (options.mode == PutMode::kIfMatch && options.if_match.empty()) {
      return Status::InvalidArgument("put " + std::string(key) + ": if-match with an empty etag");
    }
    const std::string path = PathOf(key);
    const std::string dir = PathOf(ParentOf(key));
    for (int attempt = 0; attempt < kPutAttemptsMax; ++attempt) {
      Status s = fs_->CreateDirs(dir);
      FileInfo written;
      if (s.ok()) {
        s = options.mode == PutMode::kIfAbsent ? Create(key, dir, path, parts, &written)
                                               : Replace(key, dir, path, parts, options, &written);
      }
      if (s.ok()) return EtagOf(written);
      if (!s.IsNotFound()) return s.WithContext("put " + std::string(key) + " in " + Describe());
    }
    return Status::Unavailable("put " + std::string(key) + " in " + Describe() +
                               ": its directory kept disappearing under concurrent deletes");
  }

  Result<ObjectData> Get(std::string_view key, uint64_t offset, uint64_t length) override {
    WMBT_RETURN_IF_ERROR(ValidateObjectKey(key));
    FileInfo info;
    const std::string path = PathOf(key);
    auto bytes = fs_->ReadFile(path, offset, length, &info);
    if (!bytes.ok()) return MissingOr(key, bytes.status());
    WMBT_RETURN_IF_ERROR(syncs_.AwaitDurable(PathOf(ParentOf(key)), path));
    if (offset > info.size) {
      return Status::InvalidArgument("get " + std::string(key) + ": offset " +
                                     std::to_string(offset) + " is past the object size " +
                                     std::to_string(info.size));
    }
    ObjectData out;
    out.bytes = std::move(bytes).value();
    out.etag = EtagOf(info);
    out.object_size = info.size;
    return out;
  }

  Result<ObjectInfo> Head(std::string_view key) override {
    WMBT_RETURN_IF_ERROR(ValidateObjectKey(key));
    const std::string path = PathOf(key);
    auto info = fs_->Stat(path);
    if (!info.ok()) return MissingOr(key, info.status());
    if (info->is_dir) return NotFound(key);
    WMBT_RETURN_IF_ERROR(syncs_.AwaitDurable(PathOf(ParentOf(key)), path));
    return ObjectInfo{std::string(key), info->size, EtagOf(*info), info->mtime_ns / 1000};
  }

  Status Delete(std::string_view key) override {
    WMBT_RETURN_IF_ERROR(ValidateObjectKey(key));
    auto lock = Lock();
    if (!lock.ok()) return lock.status().IsNotFound() ? Status::Ok() : lock.status();  // no root
    const std::string path = PathOf(key);
    auto info = fs_->Stat(path);
    if (!info.ok() && !info.status().IsNotFound()) return info.status();
    if (!info.ok() || info->is_dir) return Status::Ok();  // absent is fine (as S3)
    Status s = fs_->DeleteFile(path);
    if (!s.ok() && !s.IsNotFound()) return s.WithContext("delete " + std::string(key));
    // Best effort: drop directories this left empty, so deleted prefixes do not linger. Under the
    // lock no replacement races us; an if-absent Put that loses its directory retries.
    for (std::string dir = ParentOf(key); !dir.empty(); dir = ParentOf(dir)) {
      if (!fs_->DeleteFile(PathOf(dir)).ok()) break;
    }
    return Status::Ok();
  }

  Result<ListPage> List(std::string_view prefix, std::string_view delimiter,
                        std::string_view token, size_t max_keys) override {
    WMBT_ASSIGN_OR_RETURN(size_t page_size, CheckListArgs(prefix, delimiter, max_keys));
    // Only the directory named by the prefix's complete segments is read; the partial last
    // segment filters its entries.
    const size_t cut = prefix.find_last_of('/') + 1;  // 0 if none
    ListPageBuilder page(page_size);
    Walk walk{page, token, !delimiter.empty()};
    WMBT_RETURN_IF_ERROR(ListDir(walk, std::string(prefix.substr(0, cut)), prefix.substr(cut), 0));
    return std::move(page).Finish();
  }

 private:
  struct Walk {
    ListPageBuilder& page;
    std::string_view token;
    bool group;  // delimiter "/": directories at the top level become common prefixes
  };

  std::string PathOf(std::string_view rel) const {
    return rel.empty() ? root_ : base_ + std::string(rel);
  }

  Result<std::unique_ptr<FileLock>> Lock() { return fs_->LockFileBlocking(lock_path_); }

  // The content is written and synced outside any lock (blob uploads run in parallel); only the
  // directory sync is shared (invariant 4).
  Status Create(std::string_view key, const std::string& dir, const std::string& path,
                const std::vector<ByteView>& parts, FileInfo* written) {
    WMBT_ASSIGN_OR_RETURN(auto file, fs_->WriteTemp(path, parts, /*sync=*/true,
                                                    /*later_than_current=*/false));
    auto ticket = syncs_.Name(*file, dir, path, /*replace=*/false);
    if (ticket.ok()) {
      *written = file->info();
      return syncs_.Await(*ticket);
    }
    if (!ticket.status().IsConflict()) return ticket.status();
    auto info = fs_->Stat(path);
    if (info.ok() && info->is_dir) return DirectoryInTheWay(key);
    // The object that won may still await its directory sync here: a caller that takes this
    // Conflict as "the object exists" (a blob upload) must not act on it before it is durable.
    WMBT_RETURN_IF_ERROR(syncs_.AwaitDurable(dir, path));
    return Status::Conflict("object " + std::string(key) + " already exists");
  }

  Status Replace(std::string_view key, const std::string& dir, const std::string& path,
                 const std::vector<ByteView>& parts, const PutOptions& options,
                 FileInfo* written) {
    DirSyncGroup::Ticket ticket;
    {
      WMBT_ASSIGN_OR_RETURN(auto lock, Lock());
      auto current = fs_->Stat(path);
      if (!current.ok() && !current.status().IsNotFound()) return current.status();
      if (current.ok() && current->is_dir) return DirectoryInTheWay(key);
      if (options.mode == PutMode::kIfMatch) {
        if (!current.ok()) {
          return Status::Conflict("object " + std::string(key) + " does not exist (if-match " +
                                  options.if_match + ")");
        }
        std::string etag = EtagOf(*current);
        if (etag != options.if_match) {
          return Status::Conflict("object " + std::string(key) + " has etag " + etag + ", not " +
                                  options.if_match);
        }
      }
      WMBT_ASSIGN_OR_RETURN(auto file, fs_->WriteTemp(path, parts, /*sync=*/true,
                                                      /*later_than_current=*/true));
      WMBT_ASSIGN_OR_RETURN(ticket, syncs_.Name(*file, dir, path, /*replace=*/true));
      *written = file->info();
    }
    // Renamed under the lock; its directory sync, shared with other writers, needs no lock.
    return syncs_.Await(ticket);
  }

  // Lists directory `rel` ("" or ending in '/') into the walk: its entries whose names start
  // with `filter`, files as keys and directories recursively (or as common prefixes at depth 0).
  //
  // Order: a file sorts as its key, a directory as key + "/". Entries are taken in name order,
  // which differs only where a directory "d" precedes names "d-..." or "d...." ('-' and '.' sort
  // before '/'): directories therefore wait in a min-heap until the next name sorts after them.
  Status ListDir(Walk& walk, const std::string& rel, std::string_view filter, int depth) {
    if (depth > kWalkDepthMax) return Status::Internal("list: directory tree too deep at " + rel);
    auto names = fs_->ListDir(PathOf(rel));
    if (!names.ok()) return names.status().IsNotFound() ? Status::Ok() : names.status();
    // Names the token excludes whatever their type are dropped unread; the rest come out of a
    // min-heap, so a page costs O(entries + page * log entries), not a sort of the directory.
    std::vector<std::string> heap;
    for (std::string& n : *names) {
      if (!IsValidKeySegment(n) || !n.starts_with(filter)) continue;
      std::string key = rel + n;
      if (SkippedByToken(key, walk.token) && SubtreeSkippedByToken(key + "/", walk.token)) continue;
      heap.push_back(std::move(n));
    }
    std::make_heap(heap.begin(), heap.end(), std::greater<>());

    std::priority_queue<std::string, std::vector<std::string>, std::greater<>> dirs;
    auto flush_dirs_before = [&](const std::string* bound) -> Status {
      while (!dirs.empty() && !walk.page.full() && (bound == nullptr || dirs.top() < *bound)) {
        std::string dir = dirs.top();
        dirs.pop();
        WMBT_RETURN_IF_ERROR(VisitDir(walk, dir, depth));
      }
      return Status::Ok();
    };
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      const std::string key = rel + heap.back();
      heap.pop_back();
      WMBT_RETURN_IF_ERROR(flush_dirs_before(&key));
      if (walk.page.full()) return Status::Ok();
      auto info = fs_->Stat(PathOf(key));
      if (!info.ok()) {
        if (info.status().IsNotFound()) continue;  // deleted while we list
        return info.status();
      }
      const std::string as_dir = key + "/";
      if (info->is_dir) {
        if (!SubtreeSkippedByToken(as_dir, walk.token)) dirs.push(as_dir);
      } else if (!SkippedByToken(key, walk.token)) {
        if (!walk.page.AddObject({key, info->size, EtagOf(*info), info->mtime_ns / 1000})) {
          return Status::Ok();
        }
      }
    }
    return flush_dirs_before(nullptr);
  }

  Status VisitDir(Walk& walk, const std::string& dir, int depth) {
    if (!(walk.group && depth == 0)) return ListDir(walk, dir, "", depth + 1);
    if (SkippedByToken(dir, walk.token)) return Status::Ok();
    WMBT_ASSIGN_OR_RETURN(bool nonempty, HasObject(dir, depth + 1));
    if (nonempty) walk.page.AddPrefix(dir);
    return Status::Ok();
  }

  // Whether any object lives under directory `rel`: a common prefix is listed only if it groups
  // at least one key (empty directories and leftover temporaries do not count).
  Result<bool> HasObject(const std::string& rel, int depth) {
    if (depth > kWalkDepthMax) return Status::Internal("list: directory tree too deep at " + rel);
    auto names = fs_->ListDir(PathOf(rel));
    if (!names.ok()) {
      if (names.status().IsNotFound()) return false;
      return names.status();
    }
    for (const std::string& n : *names) {
      if (!IsValidKeySegment(n)) continue;
      auto info = fs_->Stat(PathOf(rel + n));
      if (!info.ok()) {
        if (info.status().IsNotFound()) continue;
        return info.status();
      }
      if (!info->is_dir) return true;
      WMBT_ASSIGN_OR_RETURN(bool found, HasObject(rel + n + "/", depth + 1));
      if (found) return true;
    }
    return false;
  }

  Status MissingOr(std::string_view key, const Status& s) {
    if (s.IsNotFound()) return NotFound(key);
    // A directory (a prefix of other keys) at the key's path is not an object.
    auto info = fs_->Stat(PathOf(key));
    if (info.ok() && info->is_dir) return NotFound(key);
    return s.WithContext(std::string(key));
  }

  Status NotFound(std::string_view key) const {
    return Status::NotFound("object " + std::string(key) + " not found in " + Describe());
  }

  Status DirectoryInTheWay(std::string_view key) const {
    return Status::FailedPrecondition(
        "object " + std::string(key) + " cannot be stored in " + Describe() +
        ": other keys live under it as a directory (a local store cannot hold both)");
  }

  FileSystem* fs_;
  DirSyncGroup syncs_;
  std::string root_;
  std::string base_;  // root_ with a trailing '/'
  std::string lock_path_;
};

}  // namespace

std::unique_ptr<ObjectStore> NewFsObjectStore(std::string root, FileSystem* fs) {
  return std::make_unique<FsObjectStore>(std::move(root), fs);
}

}  // namespace wombatkv
