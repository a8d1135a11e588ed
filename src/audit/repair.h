// Repair: fixes what an audit found and what can be fixed without losing anything a reader could
// still use (`wombatkv audit --repair`). Each object is checked again right before it is touched,
// so a report that went stale in between does no harm.
//
//   head_unreadable, head_names_another_chain
//       The head is deleted if it is still unreadable (or still names another chain) when
//       re-read. No reader serves such a head (refresh drops its chain), and while it exists
//       orphan GC cannot know what it references (R2 in gc/orphan_gc.h). Its blobs become
//       orphans and go after the grace period.
//   blob_corrupt, sidecar_corrupt
//       The object is deleted if it still fails its check when re-read. Its bytes are never
//       served (G9); deleting it lets the next put of the same block (or the next sidecar put)
//       write good bytes, which an existing object of the right size would prevent.
//   l1_unreadable, l1_stale, l1_missing_head
//       L1 head records are rebuilt from L2: every "H" record is dropped and one is written per
//       readable head; undecodable "P" records are dropped; the format marker is written (synced).
//       Other L1 records are left alone.
//   expired orphans (not a violation)
//       One orphan GC pass with the grace period (gc/orphan_gc.h: safe with concurrent publishers).
//   stray_key, blob_missing
//       Not repairable here: a stray may be someone else's object; a missing blob's bytes are
//       gone (the chain's writer must put the block again and republish).
//
// Thread-safety: reentrant. REQUIRES: no Store has `l1` open (L1 has one owner: the caller holds
// the data directory's LOCK); L2 may be shared with running stores.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "audit/audit.h"
#include "gc/orphan_gc.h"

namespace wombatkv::audit {

struct RepairOptions {
  std::string l2_prefix = "kv";
  uint64_t grace_us = 3600ull * 1000000;  // for the orphan GC pass
  uint64_t list_lag_us = 0;               // its re-check waits this out (gc::GcOptions)
  bool collect_orphans = true;
  Executor* executor = nullptr;           // parallel head reads (not owned)
  // The GC pass's hold directory (gc::GcOptions::hold_dir; empty: none).
  FileSystem* hold_fs = nullptr;
  std::string hold_dir;
};

struct RepairAction {
  std::string action;  // "delete_head", "delete_blob", "delete_sidecar", "rebuild_l1", "skip"
  std::string key;
  std::string detail;  // what was done, or why not
  bool ok = true;      // false: it failed (detail says why)
};

struct RepairReport {
  std::vector<RepairAction> actions;
  bool l1_rebuilt = false;
  uint64_t l1_heads_written = 0;
  uint64_t l1_records_dropped = 0;  // "H" records replaced or removed, bad "P" records
  bool gc_ran = false;
  gc::GcReport gc;
  size_t failures() const;
};

// `l1` may be null (nothing of L1 is repaired). Errors: L2 or L1 failed in a way that stops the
// repair; actions already taken are lost from the result but each left the stores consistent.
Result<RepairReport> Repair(ObjectStore* l2, MetaStore* l1, Clock* clock, const AuditReport& found,
                            const RepairOptions& options);

}  // namespace wombatkv::audit
