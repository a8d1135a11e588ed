// --fresh: wiping a data directory, carefully. A directory is wiped only if it looks like a
// WombatKV data directory — every entry is one the store creates (LOCK, l1/, l2/) — and only while
// holding its LOCK, so a directory another process is using is never pulled from under it.
#pragma once

#include <string>

#include "wombatkv/env.h"
#include "wombatkv/status.h"

namespace wombatkv::workload {

// Deletes the store state under `dir` (l1/, l2/). OK if `dir` is missing or empty.
// FailedPrecondition: another process owns `dir`, or `dir` holds anything the store does not
// create (named in the message, nothing deleted).
Status WipeDataDir(FileSystem* fs, const std::string& dir);

}  // namespace wombatkv::workload
