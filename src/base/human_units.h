// Numbers for people: byte counts in binary units, for log lines and CLI summaries.
#pragma once

#include <cstdint>
#include <string>

namespace wombatkv {

// "512 B", "1.5 KiB", "2.0 MiB", ... up to TiB (one decimal above bytes).
std::string HumanBytes(uint64_t bytes);

}  // namespace wombatkv
