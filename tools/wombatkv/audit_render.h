// How `audit`, `du` and `gc` show their reports: JSON objects (stable field names, exact byte
// counts) and human table rows (sizes rounded for reading). docs/cli.md lists the fields.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "audit/audit.h"
#include "audit/repair.h"
#include "gc/orphan_gc.h"

namespace wombatkv::cli {

// "1h", "90s", "2d 3h": a duration for people.
std::string HumanDuration(uint64_t micros);

nlohmann::json UsageJson(const audit::UsageRow& row);
nlohmann::json CountsJson(const audit::UsageCounts& c);
nlohmann::json OrphanJson(const gc::OrphanBlob& o, uint64_t grace_us);
nlohmann::json GcJson(const gc::GcReport& r, uint64_t grace_us, bool dry_run);
nlohmann::json RepairJson(const audit::RepairReport& r, uint64_t grace_us);

// The `du` table: one header and one row per usage row (namespace rows show "*" as fingerprint).
std::vector<std::string> UsageHeader();
std::vector<std::string> UsageCells(const audit::UsageRow& row, bool l1_checked);

}  // namespace wombatkv::cli
