// Audit: checks the invariants of docs/layout.md across L2 (the object store) and, when given,
// L1 (the metadata store), and measures what each plane holds. `wombatkv audit` and `wombatkv du`
// print its report; repair.h fixes what can be fixed safely.
//
// What is checked (docs/layout.md §8):
//   - every key under "<prefix>/" is a blob, chain head or sidecar of a valid namespace (§1);
//   - every head decodes (framing, limits, CRC) and describes the chain its key names (§3);
//   - every blob a head names exists; in a full audit it decodes and hashes to its name and its
//     length is the head's (§2); a quick audit compares the listed size with 48 + length, and
//     for a smaller one reads the blob's header (a compressed blob's, or a raw one cut short);
//   - in a full audit every sidecar decodes and hashes to the hash in its header (§2);
//   - L1 agrees with L2 (§4): every readable head has an "H" record with the same ETag, and no
//     "H" record names a head L2 does not have; every L1 record passes its CRC and decodes;
//   - orphans (blobs no head names, §7) are listed with their age. They are not violations.
// The audit only reads. A missing blob is confirmed with a HEAD before it is reported, so a
// publisher that uploads and publishes while the listing runs is not reported.
//
// Thread-safety: RunAudit is reentrant; progress callbacks run on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gc/orphan_gc.h"
#include "meta/meta_store.h"
#include "wombatkv/env.h"
#include "wombatkv/object_store.h"
#include "wombatkv/status.h"
#include "wombatkv/types.h"

namespace wombatkv::audit {

enum class ViolationKind : uint8_t {
  kStrayKey,               // a key under the prefix that the layout does not define
  kHeadUnreadable,         // a chain head that does not decode: its chain is lost to readers
  kHeadNamesAnotherChain,  // a head whose contents name another namespace/fingerprint/chain
  kBlobMissing,            // a head names a blob that is not in L2
  kBlobCorrupt,            // a named blob fails its envelope, hash, name or length check
  kSidecarCorrupt,         // a sidecar fails its envelope or hash check
  kL1Unreadable,           // an L1 record fails its CRC or does not decode
  kL1Stale,                // an L1 head record that L2 does not have, or has another version of
  kL1MissingHead,          // a readable L2 head with no L1 record
};
inline constexpr ViolationKind kAllViolationKinds[] = {
    ViolationKind::kStrayKey,       ViolationKind::kHeadUnreadable,
    ViolationKind::kHeadNamesAnotherChain, ViolationKind::kBlobMissing,
    ViolationKind::kBlobCorrupt,    ViolationKind::kSidecarCorrupt,
    ViolationKind::kL1Unreadable,   ViolationKind::kL1Stale,
    ViolationKind::kL1MissingHead,
};

// "stray_key", "head_unreadable", ... (stable: the JSON report uses them).
std::string_view KindName(ViolationKind kind);
// Whether `audit --repair` fixes it (repair.h says how). Missing blobs and stray keys are not:
// the bytes are gone / the key may be someone else's.
bool Repairable(ViolationKind kind);

struct Violation {
  ViolationKind kind;
  std::string ns;      // empty when the key lies outside any namespace
  std::string key;     // L2 key, or for L1 records "L1:H/<ns>/<fp>/<chain>" and the like
  std::string detail;  // what is wrong, in words
};

// Bytes and counts of one scope (one namespace, or one fingerprint in it), per plane.
struct UsageCounts {
  // L1 (read only when the audit has it). L0 is loaded from these head records at open.
  uint64_t l1_heads = 0, l1_head_bytes = 0;  // "H" records (value bytes)
  uint64_t l1_blocks = 0;                    // entries of those heads: L0 nodes once loaded
  uint64_t l1_pending = 0, l1_pending_payload_bytes = 0;  // "P" records, payload they describe
  // L2 (object sizes as stored, envelopes included)
  uint64_t heads = 0, head_bytes = 0, head_entries = 0;
  // Fingerprint rows: the blobs its heads name (distinct within the row). payload_bytes: bytes
  // after the envelope headers as stored (zstd blobs count compressed); in fingerprint rows, the
  // block lengths its heads give.
  uint64_t blobs = 0, blob_bytes = 0, payload_bytes = 0;
  uint64_t orphans = 0, orphan_bytes = 0;                 // namespace rows only
  uint64_t sidecars = 0, sidecar_bytes = 0;
  uint64_t strays = 0, stray_bytes = 0;                   // namespace rows only
  void Add(const UsageCounts& o);
};

struct UsageRow {
  std::string ns;  // empty: keys directly under "<prefix>/"
  std::optional<Fingerprint> fp;  // nullopt: the namespace as a whole
  UsageCounts counts;
};

struct AuditOptions {
  std::string l2_prefix = "kv";
  // Blobs: existence and listed size only (no reads of blobs or sidecars).
  bool quick = false;
  // Orphans at least this old are "expired" (what GC and --repair delete).
  uint64_t grace_us = 3600ull * 1000000;
  // Parallel reads (not owned); null = one at a time.
  Executor* executor = nullptr;
  // Blob verification reads at most this many bytes at once (at least one blob).
  uint64_t read_window_bytes = 256ull << 20;
};

struct AuditProgress {
  std::string_view phase;  // "listing", "verifying", "l1"
  uint64_t done = 0;       // keys listed, blobs verified, records read
  uint64_t total = 0;      // 0 when unknown (listing)
};
using AuditProgressFn = std::function<void(const AuditProgress&)>;

struct AuditReport {
  std::vector<Violation> violations;
  std::vector<gc::OrphanBlob> orphans;  // every orphan, oldest first
  uint64_t expired_orphans = 0, expired_orphan_bytes = 0;
  // Namespace rows, each followed by its fingerprint rows (by fingerprint), namespaces by name.
  std::vector<UsageRow> usage;
  UsageCounts total;  // the sum of the namespace rows
  bool l1_checked = false;
  uint64_t keys_listed = 0, heads_read = 0, blobs_verified = 0, sidecars_verified = 0;
  uint64_t bytes_read = 0;

  size_t CountOf(ViolationKind kind) const;
  size_t RepairableCount() const;
};

// Audits everything under "<prefix>/". `l1` may be null (not checked: l1_checked = false).
// Errors: the L2 listing or a read failed other than NotFound (the audit is then incomplete).
Result<AuditReport> RunAudit(ObjectStore* l2, MetaStore* l1, Clock* clock,
                             const AuditOptions& options, const AuditProgressFn& progress = {});

}  // namespace wombatkv::audit
