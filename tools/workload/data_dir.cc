#include "tools/workload/data_dir.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace wombatkv::workload {

Status WipeDataDir(FileSystem* fs, const std::string& dir) {
  // cache/: the disk cache in front of an S3 L2 (not wiped with one: --fresh is refused then).
  // gc-held*/: orphan GC's hold files (bytes of blobs of the L2 wiped with them).
  // SEAT: the directory's mark in eviction leases (kept: it names the directory, not its data).
  static constexpr std::array<std::string_view, 7> kStoreEntries = {
      "LOCK", "SEAT", "l1", "l2", "cache", "gc-held", "gc-held-cli"};
  auto names = fs->ListDir(dir);
  if (!names.ok()) {
    if (names.status().IsNotFound()) return Status::Ok();
    return names.status().WithContext(dir);
  }
  std::sort(names->begin(), names->end());
  for (const std::string& name : *names) {
    if (std::find(kStoreEntries.begin(), kStoreEntries.end(), name) == kStoreEntries.end()) {
      return Status::FailedPrecondition(
          dir + " does not look like a WombatKV data directory (it holds \"" + name +
          "\"; a data directory holds only LOCK, SEAT, l1/, l2/, cache/ and gc-held*/), so --fresh "
          "will "
          "not wipe "
          "it");
    }
  }
  if (names->empty()) return Status::Ok();
  auto lock = fs->LockFile(dir + "/LOCK", "wombatkv-workload --fresh, pid " +
                                              std::to_string(getpid()));
  if (!lock.ok()) return lock.status();
  for (std::string_view sub : {"l1", "l2", "cache", "gc-held", "gc-held-cli"}) {
    if (Status s = fs->DeleteTree(dir + "/" + std::string(sub)); !s.ok()) {
      return s.WithContext("wiping " + dir);
    }
  }
  return Status::Ok();
}

}  // namespace wombatkv::workload
