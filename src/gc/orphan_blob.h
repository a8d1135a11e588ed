// An orphan: a blob in L2 that no chain head names (docs/layout.md §7).
#pragma once

#include <cstdint>
#include <string>

#include "wombatkv/types.h"

namespace wombatkv::gc {

struct OrphanBlob {
  std::string ns;
  std::string key;
  ContentHash hash;
  uint64_t bytes = 0;      // object size in L2 (envelope included)
  uint64_t age_us = 0;     // meaningful when age_known
  bool age_known = false;  // false: L2 reports no modification time (and no earlier sighting)
};

}  // namespace wombatkv::gc
