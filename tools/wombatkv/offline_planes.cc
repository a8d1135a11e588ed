#include "tools/wombatkv/offline_planes.h"

#include "layout/envelope.h"
#include "store/data_dir_owner.h"
#include "tools/wombatkv/exit_codes.h"

namespace wombatkv::cli {

int OpenOfflinePlanes(Context& ctx, bool want_l1, bool writes, OfflinePlanes* out) {
  const std::string& dir = ctx.opts.data_dir;
  FileSystem* fs = PosixFileSystem();
  int code = kExitOk;
  bool disk_full = false;
  out->l2 = ctx.OpenConfiguredS3(&code);
  if (code != kExitOk) return code;
  if (!out->l2) {
    // With no store running on it, this process owns the L2 journal for the command: packed
    // objects can then be deleted (gc, --repair) like files. Beside a running store, a plain
    // view: it reads everything, and deletes files only (packed ones are that store's to delete).
    // Not created if missing: an audit of nothing finds nothing, and leaves nothing behind.
    const std::string root = dir + "/l2";
    if (fs->Stat(root).ok()) {
      FsJournalOptions journal;
      journal.packed_object_bytes_max =
          layout::PackedObjectBytesFor(ctx.opts.config.l2_packed_bytes);
      auto owned = OpenJournaledFsObjectStore(root, fs, journal);
      if (owned.ok()) {
        out->fs_l2 = std::move(owned).value();
      } else if (!writes && owned.status().code() == Code::kResourceExhausted) {
        // Owning the journal means recovering it, which writes: on a full disk a command that
        // only reads (du, audit) reads beside the journal instead, as beside a running store.
        ctx.out.Note("the disk is full (" + owned.status().message() + "): reading " + root +
                     " without taking over its journal");
        disk_full = true;
      } else if (!writes && owned.status().code() == Code::kPermissionDenied) {
        // A command that only reads needs no write access: it reads beside the journal.
        ctx.out.Note("this user may not write " + root + " (" + owned.status().message() +
                     "): reading it without taking over its journal");
      } else if (owned.status().code() != Code::kFailedPrecondition) {
        return ctx.out.Error("open the local L2 in " + root, owned.status());
      }
    }
    if (!out->fs_l2) out->fs_l2 = NewFsObjectStore(root, fs);
    out->l2 = out->fs_l2.get();
  }
  if (!want_l1) return kExitOk;
  auto dir_info = fs->Stat(dir);
  if (!dir_info.ok() || !dir_info->is_dir) {
    out->l1_note = "no data directory at " + dir;
    return kExitOk;
  }
  // Noted as a wombatkv command's: another one waits for it (--lock-wait).
  auto lock = fs->LockFile(dir + "/LOCK", DataDirOwnerNote());
  if (!lock.ok()) {
    if (!writes && lock.status().code() == Code::kPermissionDenied) {
      out->l1_note = "this user may not write " + dir + " (" + lock.status().message() +
                     "), so its L1 was not opened; only L2 was checked";
      return kExitOk;
    }
    if (lock.status().code() != Code::kFailedPrecondition) {
      return ctx.out.Error("lock data directory " + dir, lock.status());
    }
    out->owner = lock.status().message();
    out->l1_note = "data directory " + dir + " is in use (" + out->owner +
                   "): its L1 belongs to that process, which reconciles it with L2 itself; "
                   "only L2 was checked";
    return kExitOk;
  }
  out->lock = std::move(lock).value();
  auto l1_info = fs->Stat(dir + "/l1");
  if (!l1_info.ok() || !l1_info->is_dir) {
    out->l1_note = "no L1 at " + dir + "/l1 (a store builds it from L2 when it first opens)";
    return kExitOk;
  }
  // RocksDB writes as it opens (a failed attempt on a full disk leaves a new empty MANIFEST).
  if (disk_full) {
    out->l1_note = "L1 at " + dir + "/l1 not read: the disk is full";
    return kExitOk;
  }
  auto l1 = OpenRocksDbMetaStore(dir + "/l1");
  if (!l1.ok() && l1.status().code() == Code::kResourceExhausted) {
    out->l1_note =
        "L1 at " + dir + "/l1 not read: the disk is full (" + l1.status().message() + ")";
    return kExitOk;
  }
  if (!l1.ok() && l1.status().code() != Code::kCorruption) {
    // Not damage (a permission, an I/O error): a store would not open either, and must not lose
    // this L1's unpublished puts to a rebuild (--repair deletes what it finds unopenable).
    return ctx.out.Error("open L1 at " + dir + "/l1", l1.status(),
                         "fix what the error names and run again; nothing was changed");
  }
  if (!l1.ok()) {
    // A store deletes and rebuilds such an L1 at open; the audit reports it and carries on.
    out->l1_note = "L1 at " + dir + "/l1 cannot be opened (" + l1.status().message() +
                   "); the next store open rebuilds it from L2";
    out->l1_unopenable = true;
    return kExitOk;
  }
  out->owned_l1 = std::move(l1).value();
  out->l1 = out->owned_l1.get();
  return kExitOk;
}

}  // namespace wombatkv::cli
