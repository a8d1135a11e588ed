// The summary of a wombatkv-workload run: human text (for the README quick start) or one JSON
// document (--json). docs/workload.md explains every line.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

#include "tools/workload/workload.h"
#include "wombatkv/store.h"

namespace wombatkv::workload {

struct RunInfo {
  Shape shape;
  std::string ns;
  Fingerprint fp;
  std::string data_dir;
  std::string l2;
  bool fresh = false;
  // The store's state when the run started and when it ended (counters are per process).
  StoreStats at_start;
  StoreStats at_end;
};

void PrintSummary(std::FILE* out, const RunInfo& info, const WorkloadResult& result);
nlohmann::json SummaryJson(const RunInfo& info, const WorkloadResult& result);

}  // namespace wombatkv::workload
