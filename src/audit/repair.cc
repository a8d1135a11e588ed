#include "audit/repair.h"

#include <algorithm>

#include "base/limits.h"
#include "layout/envelope.h"
#include "layout/object_keys.h"
#include "store/meta_records.h"

namespace wombatkv::audit {
namespace {

constexpr uint64_t kEnvelope = layout::kEnvelopeHeaderBytes;
constexpr size_t kL1BatchRecords = 1024;  // records per L1 write batch while rebuilding

// Deletes `key` if `still_bad` (a fresh re-check) says so.
RepairAction DeleteIfStillBad(ObjectStore* l2, const std::string& action, const std::string& key,
                              const std::function<Result<bool>()>& still_bad) {
  RepairAction a{action, key, "", true};
  auto bad = still_bad();
  if (!bad.ok()) {
    a.ok = false;
    a.detail = "re-checking before delete: " + bad.status().ToString();
    return a;
  }
  if (!*bad) {
    a.action = "skip";
    a.detail =
        "fine (or gone) when checked again; left as is (audit again to see whether it "
        "still stands: a sound blob whose length a chain head contradicts is the head's "
        "problem)";
    return a;
  }
  if (Status s = l2->Delete(key); !s.ok()) {
    a.ok = false;
    a.detail = "delete failed: " + s.ToString();
    return a;
  }
  a.detail = "deleted";
  return a;
}

// Is the head at `key` still unreadable or naming another chain?
Result<bool> HeadStillBad(ObjectStore* l2, const std::string& prefix, const Violation& v) {
  auto name = layout::ParseChainKey(layout::ChainsPrefix(prefix, v.ns), v.key);
  if (!name) return Status::InvalidArgument(v.key + " is not a chain head key");
  gc::ListedHead listed{ObjectInfo{v.key, 0, "", 0}, name->fp, name->chain_id};
  WMBT_ASSIGN_OR_RETURN(auto reads, gc::ReadHeads(l2, v.ns, {listed}, nullptr));
  return reads[0].state == gc::HeadRead::State::kUnreadable ||
         reads[0].state == gc::HeadRead::State::kOtherChain;
}

Result<bool> BlobStillBad(ObjectStore* l2, const std::string& prefix, const Violation& v) {
  auto hash = layout::ParseBlobKey(layout::BlobsPrefix(prefix, v.ns), v.key);
  if (!hash) return Status::InvalidArgument(v.key + " is not a blob key");
  auto obj = l2->Get(v.key, 0, kEnvelope + limits::kBlockBytesMax + 1);
  if (!obj.ok()) {
    if (obj.status().IsNotFound()) return false;
    return obj.status();
  }
  // Only what fails the blob's own checks goes: a blob that is sound but disagrees with a head
  // on its length is the head's problem, and its bytes are good.
  auto ok = layout::DecodeVerified(layout::EnvelopeKind::kBlob, obj->bytes, *hash, v.key);
  if (ok.ok()) return false;
  if (ok.status().code() != Code::kCorruption) return ok.status();
  return true;
}

Result<bool> SidecarStillBad(ObjectStore* l2, std::string_view l2_prefix, const Violation& v) {
  auto name = layout::ParseSidecarKey(layout::SidecarsPrefix(l2_prefix, v.ns), v.key);
  if (!name) return false;  // not a sidecar key: left alone
  auto obj = l2->Get(v.key, 0, kEnvelope + limits::kSidecarBytesMax + 1);
  if (!obj.ok()) {
    if (obj.status().IsNotFound()) return false;
    return obj.status();
  }
  return !layout::DecodeSidecar(obj->bytes, v.ns, name->fp, name->tip, v.key).ok();
}

Status RebuildL1(ObjectStore* l2, MetaStore* l1, const RepairOptions& options,
                 RepairReport* report) {
  // Read L2 first: if it fails, L1 is left as it was.
  std::vector<std::pair<std::string, std::string>> records;  // key, value
  WMBT_ASSIGN_OR_RETURN(std::vector<std::string> namespaces,
                        gc::ListNamespaces(l2, options.l2_prefix));
  for (const std::string& ns : namespaces) {
    WMBT_ASSIGN_OR_RETURN(std::vector<gc::ListedHead> heads,
                          gc::ListHeads(l2, options.l2_prefix, ns));
    WMBT_ASSIGN_OR_RETURN(std::vector<gc::HeadRead> reads,
                          gc::ReadHeads(l2, ns, heads, options.executor));
    for (const gc::HeadRead& r : reads) {
      if (r.state != gc::HeadRead::State::kOk) continue;
      records.emplace_back(meta_records::HeadKey(ns, r.head->fp, r.head->chain_id),
                           meta_records::EncodeHeadValue(r.etag, layout::EncodeChainHead(*r.head)));
    }
  }
  uint64_t dropped = 0;
  // Counted for the report only: a record whose CRC fails ends the count, not the rebuild.
  Status counted = l1->Scan(meta_records::kHeadPrefix, [&](std::string_view, std::string_view) {
    ++dropped;
    return true;
  });
  if (!counted.ok()) ++dropped;
  WMBT_RETURN_IF_ERROR(l1->DeletePrefix(meta_records::kHeadPrefix));
  MetaWriteBatch batch;
  for (auto& [k, v] : records) {
    batch.Put(std::move(k), std::move(v));
    if (batch.size() >= kL1BatchRecords) {
      WMBT_RETURN_IF_ERROR(l1->Write(batch, /*sync=*/false));
      batch = MetaWriteBatch();
    }
  }
  // Pending records that do not decode are dropped, as the store would at open.
  MetaWriteBatch bad_pending;
  Status scan = l1->Scan(meta_records::kPendingPrefix, [&](std::string_view k, std::string_view v) {
    if (!meta_records::DecodePending(k, v).ok()) bad_pending.Delete(std::string(k));
    return true;
  });
  if (!scan.ok()) {
    WMBT_RETURN_IF_ERROR(l1->DeletePrefix(meta_records::kPendingPrefix));
    report->actions.push_back(RepairAction{"rebuild_l1", "L1 P",
                                           "pending records unreadable (" + scan.message() +
                                               "): all dropped; those puts must be made again",
                                           true});
  }
  dropped += bad_pending.size();
  for (const auto& [k, v] : bad_pending.ops()) batch.Delete(k);
  batch.Put(std::string(meta_records::kFormatKey), std::string(meta_records::kFormatValue));
  WMBT_RETURN_IF_ERROR(l1->Write(batch, /*sync=*/true));
  report->l1_rebuilt = true;
  report->l1_heads_written = records.size();
  report->l1_records_dropped = dropped;
  report->actions.push_back(RepairAction{
      "rebuild_l1", "L1",
      "dropped " + std::to_string(dropped) + " records, wrote " + std::to_string(records.size()) +
          " head records from L2",
      true});
  return Status::Ok();
}

}  // namespace

size_t RepairReport::failures() const {
  return static_cast<size_t>(std::count_if(actions.begin(), actions.end(),
                                           [](const RepairAction& a) { return !a.ok; })) +
         gc.delete_failures;
}

Result<RepairReport> Repair(ObjectStore* l2, MetaStore* l1, Clock* clock, const AuditReport& found,
                            const RepairOptions& options) {
  RepairReport report;
  bool l1_bad = false;
  for (const Violation& v : found.violations) {
    switch (v.kind) {
      case ViolationKind::kHeadUnreadable:
      case ViolationKind::kHeadNamesAnotherChain:
        report.actions.push_back(DeleteIfStillBad(
            l2, "delete_head", v.key, [&] { return HeadStillBad(l2, options.l2_prefix, v); }));
        break;
      case ViolationKind::kBlobCorrupt:
        report.actions.push_back(DeleteIfStillBad(
            l2, "delete_blob", v.key, [&] { return BlobStillBad(l2, options.l2_prefix, v); }));
        break;
      case ViolationKind::kSidecarCorrupt:
        report.actions.push_back(DeleteIfStillBad(l2, "delete_sidecar", v.key, [&] {
          return SidecarStillBad(l2, options.l2_prefix, v);
        }));
        break;
      case ViolationKind::kL1Unreadable:
      case ViolationKind::kL1Stale:
      case ViolationKind::kL1MissingHead:
        l1_bad = true;
        break;
      case ViolationKind::kStrayKey:
      case ViolationKind::kBlobMissing:
        break;
    }
  }
  // After the head deletions, so L1 does not get records of heads that just went.
  if (l1_bad && l1) WMBT_RETURN_IF_ERROR(RebuildL1(l2, l1, options, &report));
  if (options.collect_orphans) {
    gc::GcOptions gc_options;
    gc_options.l2_prefix = options.l2_prefix;
    gc_options.grace_us = options.grace_us;
    gc_options.list_lag_us = options.list_lag_us;
    gc_options.executor = options.executor;
    gc_options.hold_fs = options.hold_fs;
    gc_options.hold_dir = options.hold_dir;
    gc::OrphanCollector collector(l2, clock, gc_options);
    WMBT_ASSIGN_OR_RETURN(report.gc, collector.RunPass());
    report.gc_ran = true;
  }
  return report;
}

}  // namespace wombatkv::audit
