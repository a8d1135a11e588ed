// OfflinePlanes: a data directory's L2 and L1 opened without a Store, for `audit`, `du` and `gc`,
// which look at the stored bytes themselves (a Store would reconcile L1 with L2 on open and hide
// exactly what the audit is looking for).
//
// L2 is S3 when WMBT_KV_BUCKET is set, else DIR/l2 (its journal owned for the command when no
// store has it open; else read beside that store). L1 is opened only when this process can take
// the data directory's LOCK — the owner lock a Store takes — and DIR/l1 exists. When another
// process (an engine, a daemon, the workload) owns the directory, L1 is that process's cache and
// is left alone: `owner` names it and the command works on L2 only, which is safe to share
// (orphan GC is built for concurrent publishers: docs/layout.md §7).
//
// Not thread-safe (one per command).
#pragma once

#include <memory>
#include <string>

#include "meta/meta_store.h"
#include "tools/wombatkv/context.h"
#include "wombatkv/env.h"
#include "wombatkv/object_store.h"

namespace wombatkv::cli {

struct OfflinePlanes {
  ObjectStore* l2 = nullptr;
  MetaStore* l1 = nullptr;      // null: not checked (l1_note says why)
  std::string l1_note;
  std::string owner;            // non-empty: another process owns the data directory
  bool l1_unopenable = false;   // DIR/l1 exists but RocksDB refuses it (l1_note says why)
  std::unique_ptr<FileLock> lock;
  std::unique_ptr<ObjectStore> fs_l2;
  std::unique_ptr<MetaStore> owned_l1;
};

// Opens the planes. With want_l1 = false the LOCK is not even tried (gc needs L2 only). A command
// that only reads (`writes` false: du, audit without --repair) still runs on a full disk: L2 is
// then read beside its journal (taking it over recovers it, which writes) and L1, which RocksDB
// cannot open without writing, is left out with a note. Returns an exit code: 0, or the reported
// failure to open L2 or L1.
int OpenOfflinePlanes(Context& ctx, bool want_l1, bool writes, OfflinePlanes* out);

}  // namespace wombatkv::cli
