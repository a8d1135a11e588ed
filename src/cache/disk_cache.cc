#include "cache/disk_cache.h"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "base/check.h"
#include "base/crc32c.h"
#include "base/endian.h"

namespace wombatkv {
namespace {

constexpr uint8_t kMagic[4] = {'W', 'K', 'C', '1'};
constexpr size_t kHeaderCrcOffset = 36;

bool IsLowerHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// A cache file name: the 40 lowercase hex digits of its hash, in the shard of its first two.
std::optional<ContentHash> HashOfName(std::string_view shard, std::string_view name) {
  if (name.size() != ContentHash::kHexSize || !IsLowerHex(name) || name.substr(0, 2) != shard) {
    return std::nullopt;
  }
  auto hash = ContentHash::FromHex(name);
  if (!hash.ok()) return std::nullopt;
  return *hash;
}

bool IsShard(std::string_view name) { return name.size() == 2 && IsLowerHex(name); }

// A temporary file of an interrupted WriteFileAtomic (FileSystem: ".tmp." in the name, '~' last).
bool IsTempName(std::string_view name) {
  return name.find(".tmp.") != std::string_view::npos && name.ends_with('~');
}

// Calls `on_file(ns, shard_dir, name, hash)` for every entry of every shard directory of every
// namespace directory under `dir` (hash null when the name is not a cache file's), and
// `on_shard(shard_dir)` for each shard. Entries that are not namespaces or shards are skipped.
template <typename OnShard, typename OnFile>
Status WalkCacheDir(FileSystem* fs, const std::string& dir, OnShard on_shard, OnFile on_file) {
  WMBT_ASSIGN_OR_RETURN(std::vector<std::string> namespaces, fs->ListDir(dir));
  for (const std::string& ns : namespaces) {
    if (!ValidateNamespace(ns).ok()) continue;  // not ours: left alone
    auto shards = fs->ListDir(dir + "/" + ns);
    if (!shards.ok()) continue;  // a file, or gone
    for (const std::string& shard : *shards) {
      if (!IsShard(shard)) continue;
      const std::string shard_dir = dir + "/" + ns + "/" + shard;
      auto names = fs->ListDir(shard_dir);
      if (!names.ok()) continue;
      on_shard(shard_dir);
      for (const std::string& name : *names) {
        const std::optional<ContentHash> hash = HashOfName(shard, name);
        on_file(ns, shard_dir, name, hash ? &*hash : nullptr);
      }
    }
  }
  return Status::Ok();
}

}  // namespace

std::array<uint8_t, kDiskCacheHeaderBytes> EncodeDiskCacheHeader(const ContentHash& hash,
                                                                  ByteView payload) {
  std::array<uint8_t, kDiskCacheHeaderBytes> h{};
  std::memcpy(h.data(), kMagic, 4);
  StoreLe32(h.data() + 4, Crc32c(payload.data(), payload.size()));
  StoreLe64(h.data() + 8, payload.size());
  std::memcpy(h.data() + 16, hash.data(), ContentHash::kSize);
  StoreLe32(h.data() + kHeaderCrcOffset, Crc32c(h.data(), kHeaderCrcOffset));
  return h;
}

Result<BufferSlice> DecodeDiskCacheFile(std::shared_ptr<const Buffer> file,
                                        const ContentHash& expected) {
  const uint8_t* p = file->data();
  const size_t size = file->size();
  if (size < kDiskCacheHeaderBytes) {
    return Status::Corruption("cache file is " + std::to_string(size) + " bytes, shorter than " +
                              "its header");
  }
  if (std::memcmp(p, kMagic, 4) != 0) return Status::Corruption("cache file has a bad magic");
  if (LoadLe32(p + kHeaderCrcOffset) != Crc32c(p, kHeaderCrcOffset)) {
    return Status::Corruption("cache file header fails its CRC");
  }
  if (std::memcmp(p + 16, expected.data(), ContentHash::kSize) != 0) {
    return Status::Corruption("cache file holds another hash than its name");
  }
  const uint64_t length = LoadLe64(p + 8);
  if (length != size - kDiskCacheHeaderBytes) {
    return Status::Corruption("cache file is " + std::to_string(size) + " bytes, its header " +
                              "says " + std::to_string(kDiskCacheHeaderBytes + length) +
                              " (torn)");
  }
  const uint8_t* payload = p + kDiskCacheHeaderBytes;
  if (Crc32c(payload, length) != LoadLe32(p + 4)) {
    return Status::Corruption("cache file payload fails its CRC");
  }
  return BufferSlice{std::move(file), payload, static_cast<size_t>(length)};
}

std::string DiskCache::PathOf(const std::string& dir, std::string_view ns,
                              const ContentHash& hash) {
  const std::string hex = hash.ToHex();
  return dir + "/" + std::string(ns) + "/" + hex.substr(0, 2) + "/" + hex;
}

Result<std::unique_ptr<DiskCache>> DiskCache::Open(DiskCacheOptions options) {
  WMBT_CHECK(options.fs != nullptr && options.bytes_max > 0);
  std::unique_ptr<DiskCache> cache(new DiskCache(std::move(options)));
  WMBT_RETURN_IF_ERROR(cache->Index());
  return cache;
}

Status DiskCache::Index() {
  FileSystem* fs = options_.fs;
  const std::string& dir = options_.dir;
  WMBT_RETURN_IF_ERROR(fs->CreateDirs(dir).WithContext("creating the disk cache " + dir));
  struct Found {
    uint64_t mtime_ns;
    Key key;
    uint64_t bytes;
  };
  std::vector<Found> found;
  // No other thread can reach the cache before Open returns: made_dirs_ is filled unlocked.
  WMBT_RETURN_IF_ERROR(WalkCacheDir(
      fs, dir, [&](const std::string& shard_dir) { made_dirs_.insert(shard_dir); },
      [&](const std::string& ns, const std::string& shard_dir, const std::string& name,
          const ContentHash* hash) {
        const std::string path = shard_dir + "/" + name;
        if (!hash) {
          // A fill that a crash interrupted leaves its temporary file: no one will name it.
          if (IsTempName(name)) (void)fs->DeleteFile(path);
          return;
        }
        auto info = fs->Stat(path);
        if (!info.ok() || info->is_dir) return;
        if (info->size < kDiskCacheHeaderBytes) {  // torn at creation: cannot be valid
          (void)fs->DeleteFile(path);
          return;
        }
        found.push_back(Found{info->mtime_ns, Key{ns, *hash}, info->size});
      }));
  // Oldest fill first, so the newest ends at the front of the use order. Files of one mtime (a
  // file system stamps writes in a row alike) go by name, not by the directory's order: that order
  // depends on the names of temporary files long gone, and the same files must make the same order.
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    return std::tie(a.mtime_ns, a.key.ns, a.key.hash) < std::tie(b.mtime_ns, b.key.ns, b.key.hash);
  });
  std::vector<Victim> victims;
  {
    std::lock_guard<std::mutex> g(mu_);
    stats_.budget_bytes = options_.bytes_max;
    for (const Found& f : found) AddLocked(f.key, f.bytes, State::kReady);
    // A budget lowered since the files were written: trim now, all of it (not bounded per fill).
    if (stats_.bytes > options_.bytes_max) {
      WMBT_CHECK(MakeRoomLocked(0, map_.size(), &victims));
    }
  }
  (void)DeleteVictims(victims);  // a failed unlink keeps its file counted; trimmed later
  return Status::Ok();
}

DiskCache::Entry& DiskCache::AddLocked(const Key& key, uint64_t bytes, State state) {
  auto [it, inserted] = map_.try_emplace(key);
  WMBT_CHECK(inserted);  // D3
  Entry& e = it->second;
  e.bytes = bytes;
  e.state = state;
  e.generation = next_generation_++;
  if (state == State::kReady) {
    lru_.push_front(key);
    e.lru = lru_.begin();
  }
  stats_.bytes += bytes;
  stats_.files++;
  DiskCacheUsage& u = per_ns_[key.ns];
  u.files++;
  u.bytes += bytes;
  return e;
}

void DiskCache::EraseLocked(std::unordered_map<Key, Entry, KeyHash>::iterator it) {
  Entry& e = it->second;
  if (e.state == State::kReady) lru_.erase(e.lru);
  if (e.state == State::kDeleting) {
    stats_.deleting_bytes -= e.bytes;
  } else {
    stats_.bytes -= e.bytes;
    stats_.files--;
    DiskCacheUsage& u = per_ns_[it->first.ns];
    u.files--;
    u.bytes -= e.bytes;
  }
  map_.erase(it);
}

void DiskCache::MarkDeletingLocked(std::unordered_map<Key, Entry, KeyHash>::iterator it) {
  Entry& e = it->second;
  WMBT_CHECK(e.state == State::kReady);
  lru_.erase(e.lru);
  e.state = State::kDeleting;  // D3: stays indexed until its unlink returned
  stats_.bytes -= e.bytes;
  stats_.files--;
  stats_.deleting_bytes += e.bytes;
  DiskCacheUsage& u = per_ns_[it->first.ns];
  u.files--;
  u.bytes -= e.bytes;
}

void DiskCache::UnmarkDeletingLocked(std::unordered_map<Key, Entry, KeyHash>::iterator it) {
  // The unlink failed, so the file is still there: it stays indexed and counted (D2), as the
  // coldest entry, and a later eviction tries again.
  Entry& e = it->second;
  WMBT_CHECK(e.state == State::kDeleting);
  e.state = State::kReady;
  lru_.push_back(it->first);
  e.lru = std::prev(lru_.end());
  stats_.deleting_bytes -= e.bytes;
  stats_.bytes += e.bytes;
  stats_.files++;
  DiskCacheUsage& u = per_ns_[it->first.ns];
  u.files++;
  u.bytes += e.bytes;
}

// Removes a deleting entry once its unlink returned: gone from the index when the file is gone,
// back to ready when it is still on disk.
void DiskCache::FinishDeleteLocked(const Key& key, bool deleted) {
  auto it = map_.find(key);
  if (it == map_.end() || it->second.state != State::kDeleting) return;
  if (deleted) {
    EraseLocked(it);
  } else {
    UnmarkDeletingLocked(it);
  }
}

bool DiskCache::MakeRoomLocked(uint64_t incoming, size_t max, std::vector<Victim>* victims) {
  if (stats_.bytes + incoming <= options_.bytes_max) return true;
  const uint64_t excess = stats_.bytes + incoming - options_.bytes_max;
  // Plan first, so a fill that cannot fit evicts nothing.
  uint64_t freed = 0;
  size_t n = 0;
  for (auto it = lru_.rbegin(); it != lru_.rend() && freed < excess && n < max; ++it, ++n) {
    freed += map_.at(*it).bytes;
  }
  if (freed < excess) return false;
  for (size_t i = 0; i < n; ++i) {
    const Key key = lru_.back();
    auto it = map_.find(key);
    MarkDeletingLocked(it);
    victims->push_back(Victim{key, it->second.bytes});
  }
  return true;
}

bool DiskCache::DeleteVictims(const std::vector<Victim>& victims) {
  if (victims.empty()) return true;
  std::vector<bool> deleted(victims.size());
  std::string failure;
  for (size_t i = 0; i < victims.size(); ++i) {
    const Victim& v = victims[i];
    Status s = options_.fs->DeleteFile(PathOf(options_.dir, v.key.ns, v.key.hash));
    deleted[i] = s.ok() || s.IsNotFound();
    if (!deleted[i]) failure = s.ToString();
  }
  uint64_t failures;
  {
    std::lock_guard<std::mutex> g(mu_);
    for (size_t i = 0; i < victims.size(); ++i) {
      FinishDeleteLocked(victims[i].key, deleted[i]);
      if (deleted[i]) stats_.evictions++;
    }
    failures = stats_.delete_failures += std::count(deleted.begin(), deleted.end(), false);
  }
  if (failure.empty()) return true;
  WarnEvery(failures, "disk cache: evicting: " + failure);
  return false;
}

std::optional<BufferSlice> DiskCache::Lookup(std::string_view ns, const ContentHash& hash) {
  Key key{std::string(ns), hash};
  uint64_t bytes, generation;
  {
    std::lock_guard<std::mutex> g(mu_);
    auto it = map_.find(key);
    if (it == map_.end() || it->second.state != State::kReady) {
      stats_.misses++;
      return std::nullopt;
    }
    Entry& e = it->second;
    lru_.splice(lru_.begin(), lru_, e.lru);  // a read is a use
    bytes = e.bytes;
    generation = e.generation;
  }
  // One byte more than indexed: a file that grew is caught as torn, not read short.
  FileInfo info;
  auto file = options_.fs->ReadFileInto(PathOf(options_.dir, ns, hash), 0, bytes + 1,
                                         options_.read_buffers, &info);
  if (!file.ok()) {
    if (file.status().IsNotFound()) {
      // Deleted under us (evicted meanwhile, or by hand): forget it if the index still has it.
      Drop(key, generation, std::string());
    } else {
      // Could not read it now (out of descriptors or memory, an I/O error): a miss. The file is
      // not known to be bad, so it stays; if it is unreadable for good, eviction removes it.
      std::lock_guard<std::mutex> g(mu_);
      stats_.misses++;
    }
    return std::nullopt;
  }
  auto payload = DecodeDiskCacheFile(std::move(file).value(), hash);
  if (!payload.ok()) {
    Drop(key, generation, payload.status().message());
    return std::nullopt;
  }
  std::lock_guard<std::mutex> g(mu_);
  stats_.hits++;
  return std::move(payload).value();
}

void DiskCache::Drop(const Key& key, uint64_t generation, const std::string& why) {
  {
    std::lock_guard<std::mutex> g(mu_);
    stats_.misses++;
    auto it = map_.find(key);
    if (it == map_.end() || it->second.generation != generation ||
        it->second.state != State::kReady) {
      return;  // already replaced or being removed by someone else
    }
    if (why.empty()) {  // the file is gone: only the index entry is left to remove
      EraseLocked(it);
      return;
    }
    stats_.dropped++;
    MarkDeletingLocked(it);
  }
  const std::string path = PathOf(options_.dir, key.ns, key.hash);
  Warn("disk cache: dropping " + path + ": " + why + " (read from L2 instead)");
  Status s = options_.fs->DeleteFile(path);
  const bool deleted = s.ok() || s.IsNotFound();
  uint64_t failures = 0;
  {
    std::lock_guard<std::mutex> g(mu_);
    FinishDeleteLocked(key, deleted);
    if (!deleted) failures = ++stats_.delete_failures;
  }
  if (!deleted) WarnEvery(failures, "disk cache: deleting " + path + ": " + s.ToString());
}

void DiskCache::Fill(std::string_view ns, const ContentHash& hash, ByteView payload) {
  Key key{std::string(ns), hash};
  const uint64_t bytes = FileBytes(payload.size());
  std::vector<Victim> victims;
  uint64_t generation;
  std::string shard_dir = options_.dir + "/" + key.ns + "/" + hash.ToHex().substr(0, 2);
  bool make_dir;
  {
    std::lock_guard<std::mutex> g(mu_);
    auto it = map_.find(key);
    if (it != map_.end()) {  // D3; a ready one counts as used
      if (it->second.state == State::kReady) lru_.splice(lru_.begin(), lru_, it->second.lru);
      return;
    }
    if (bytes > options_.bytes_max || !MakeRoomLocked(bytes, kEvictionsPerFillMax, &victims)) {
      stats_.fills_skipped++;
      return;
    }
    generation = AddLocked(key, bytes, State::kWriting).generation;
    make_dir = !made_dirs_.contains(shard_dir);
  }
  // Room first (D2: the files on disk never exceed what is counted), then the new file — unless
  // an unlink failed: then there is no room, and the fill is skipped (the budget holds).
  if (!DeleteVictims(victims)) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = map_.find(key);
    WMBT_CHECK(it != map_.end() && it->second.generation == generation);
    EraseLocked(it);
    stats_.fills_skipped++;
    return;
  }
  const auto header = EncodeDiskCacheHeader(hash, payload);
  auto write = [&] {
    return options_.fs->WriteFileAtomic(PathOf(options_.dir, ns, hash),
                                        {ByteView(header.data(), header.size()), payload},
                                        /*sync=*/false);
  };
  Status s = make_dir ? options_.fs->CreateDirs(shard_dir) : Status::Ok();
  if (s.ok()) s = write();
  if (s.IsNotFound() && !make_dir) {  // the directory was removed by hand since: make it again
    make_dir = true;
    s = options_.fs->CreateDirs(shard_dir);
    if (s.ok()) s = write();
  }
  std::unique_lock<std::mutex> g(mu_);
  auto it = map_.find(key);
  WMBT_CHECK(it != map_.end() && it->second.generation == generation &&
             it->second.state == State::kWriting);  // D3: nobody else touches a writing entry
  if (!s.ok()) {
    const uint64_t failures = ++stats_.fill_failures;
    EraseLocked(it);
    g.unlock();  // the log sink is the user's: never called under mu_
    WarnEvery(failures, "disk cache: writing " + shard_dir + ": " + s.ToString());
    return;
  }
  if (make_dir) made_dirs_.insert(shard_dir);
  Entry& e = it->second;
  e.state = State::kReady;
  lru_.push_front(key);
  e.lru = lru_.begin();
  stats_.fills++;
}

bool DiskCache::Contains(std::string_view ns, const ContentHash& hash) const {
  std::lock_guard<std::mutex> g(mu_);
  auto it = map_.find(Key{std::string(ns), hash});
  return it != map_.end() && it->second.state == State::kReady;
}

DiskCacheStats DiskCache::Stats() const {
  std::lock_guard<std::mutex> g(mu_);
  return stats_;
}

DiskCacheUsage DiskCache::NamespaceUsage(std::string_view ns) const {
  std::lock_guard<std::mutex> g(mu_);
  auto it = per_ns_.find(std::string(ns));
  return it == per_ns_.end() ? DiskCacheUsage{} : it->second;
}

Result<std::map<std::string, DiskCacheUsage>> DiskCache::Scan(FileSystem* fs,
                                                              const std::string& dir) {
  std::map<std::string, DiskCacheUsage> out;
  WMBT_RETURN_IF_ERROR(WalkCacheDir(
      fs, dir, [](const std::string&) {},
      [&](const std::string& ns, const std::string& shard_dir, const std::string& name,
          const ContentHash* hash) {
        if (!hash) return;
        auto info = fs->Stat(shard_dir + "/" + name);
        if (!info.ok() || info->is_dir) return;
        DiskCacheUsage& u = out[ns];
        u.files++;
        u.bytes += info->size;
      }));
  return out;
}

}  // namespace wombatkv
