#include "tools/wombatkv/audit_render.h"

#include "tools/wombatkv/output.h"

namespace wombatkv::cli {

std::string HumanDuration(uint64_t micros) {
  uint64_t s = micros / 1000000;
  if (micros > 0 && s == 0) return std::to_string(micros / 1000) + "ms";
  static constexpr std::pair<uint64_t, const char*> kUnits[] = {
      {86400, "d"}, {3600, "h"}, {60, "m"}, {1, "s"}};
  std::string out;
  int parts = 0;
  for (const auto& [unit, name] : kUnits) {
    if (s < unit || parts == 2) continue;
    if (!out.empty()) out += ' ';
    out += std::to_string(s / unit) + name;
    s %= unit;
    ++parts;
  }
  return out.empty() ? "0s" : out;
}

nlohmann::json CountsJson(const audit::UsageCounts& c) {
  return {{"l1", {{"heads", c.l1_heads},
                  {"head_bytes", c.l1_head_bytes},
                  {"blocks", c.l1_blocks},
                  {"pending", c.l1_pending},
                  {"pending_payload_bytes", c.l1_pending_payload_bytes}}},
          {"l2", {{"heads", c.heads},
                  {"head_bytes", c.head_bytes},
                  {"head_entries", c.head_entries},
                  {"blobs", c.blobs},
                  {"blob_bytes", c.blob_bytes},
                  {"payload_bytes", c.payload_bytes},
                  {"orphans", c.orphans},
                  {"orphan_bytes", c.orphan_bytes},
                  {"sidecars", c.sidecars},
                  {"sidecar_bytes", c.sidecar_bytes},
                  {"strays", c.strays},
                  {"stray_bytes", c.stray_bytes}}}};
}

nlohmann::json UsageJson(const audit::UsageRow& row) {
  nlohmann::json j = CountsJson(row.counts);
  j["namespace"] = row.ns;
  j["fingerprint"] = row.fp ? nlohmann::json(row.fp->ToHex()) : nlohmann::json(nullptr);
  return j;
}

nlohmann::json OrphanJson(const gc::OrphanBlob& o, uint64_t grace_us) {
  return {{"namespace", o.ns},
          {"key", o.key},
          {"content_hash", o.hash.ToHex()},
          {"bytes", o.bytes},
          {"age_seconds", o.age_known ? nlohmann::json(o.age_us / 1000000) : nullptr},
          {"expired", o.age_known && o.age_us >= grace_us}};
}

nlohmann::json GcJson(const gc::GcReport& r, uint64_t grace_us, bool dry_run) {
  nlohmann::json removed = nlohmann::json::array();
  for (const gc::OrphanBlob& o : r.removed) removed.push_back(OrphanJson(o, grace_us));
  return {{"dry_run", dry_run},
          {"grace_seconds", grace_us / 1000000},
          {"namespaces", r.namespaces},
          {"heads", r.heads},
          {"blobs", r.blobs},
          {"orphans", r.orphans},
          {"orphan_bytes", r.orphan_bytes},
          {"expired", r.expired},
          {"expired_bytes", r.expired_bytes},
          {"deleted", r.deleted},
          {"freed_bytes", r.freed_bytes},
          {"restored", r.restored},
          {"named_late", r.named_late},
          {"recovered", r.recovered},
          {"delete_failures", r.delete_failures},
          {"namespaces_skipped", r.namespaces_skipped},
          {"list_lag_waited_ms", r.list_lag_waited_us / 1000},
          {"problems", r.problems},
          {dry_run ? "would_delete" : "deleted_orphans", removed}};
}

nlohmann::json RepairJson(const audit::RepairReport& r, uint64_t grace_us) {
  nlohmann::json actions = nlohmann::json::array();
  for (const audit::RepairAction& a : r.actions) {
    actions.push_back({{"action", a.action}, {"key", a.key}, {"detail", a.detail}, {"ok", a.ok}});
  }
  nlohmann::json j = {{"actions", actions},
                      {"l1_rebuilt", r.l1_rebuilt},
                      {"l1_heads_written", r.l1_heads_written},
                      {"l1_records_dropped", r.l1_records_dropped},
                      {"failures", r.failures()}};
  if (r.gc_ran) j["gc"] = GcJson(r.gc, grace_us, false);
  return j;
}

std::vector<std::string> UsageHeader() {
  return {"NAMESPACE", "FINGERPRINT", "L1_HEADS", "L1_BLOCKS", "L1_PENDING", "HEADS", "HEAD_BYTES",
          "BLOBS",     "BLOB_BYTES",  "ORPHANS",  "ORPHAN_BYTES", "SIDECARS", "SIDECAR_BYTES",
          "STRAYS"};
}

std::vector<std::string> UsageCells(const audit::UsageRow& row, bool l1_checked) {
  const audit::UsageCounts& c = row.counts;
  const bool ns_row = !row.fp;
  auto l1 = [&](uint64_t v) { return l1_checked ? std::to_string(v) : std::string("-"); };
  auto ns_only = [&](std::string v) { return ns_row ? v : std::string(""); };
  return {row.ns.empty() ? std::string("(outside)") : row.ns,
          ns_row ? std::string("*") : row.fp->ToHex(),
          l1(c.l1_heads),
          l1(c.l1_blocks),
          l1(c.l1_pending),
          std::to_string(c.heads),
          HumanBytes(c.head_bytes),
          std::to_string(c.blobs),
          HumanBytes(c.blob_bytes),
          ns_only(std::to_string(c.orphans)),
          ns_only(HumanBytes(c.orphan_bytes)),
          std::to_string(c.sidecars),
          HumanBytes(c.sidecar_bytes),
          ns_only(std::to_string(c.strays))};
}

}  // namespace wombatkv::cli
