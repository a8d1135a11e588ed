// OpenStoreFromConfig: the one way a Config becomes an open Store. The C ABI's embedded handles
// (src/capi) and the daemon (src/daemon) both call it, so the two cannot drift apart in how they
// pick L2, size the cache or route log lines.
//
// Steps: OpenL2FromConfig (S3 when WMBT_KV_BUCKET is set, opened and probed; else null = the
// local directory under the data directory), StoreOptions from the Config, then Store::Open.
// The returned Store owns the S3 L2 (destroyed after the store).
//
// Thread-safety: a function; the Store it returns is thread-safe.
#pragma once

#include <memory>
#include <string>

#include "config/config.h"
#include "wombatkv/store.h"

namespace wombatkv {

struct StoreSetup {
  // Receives every store log line at or above the Config's log level, and the L2 warnings.
  // Null = stderr as "<program> [<level>] <line>".
  LogSink log;
  // Names the process in the default stderr lines ("wombatkv", "wombatkvd").
  std::string program = "wombatkv";
  // StoreOptions::payload_allocator (wombatkvd's shared-memory arenas); kept alive by the store.
  std::shared_ptr<PayloadAllocator> payload_allocator;
  // StoreOptions::get_bytes_max (0: the store's default).
  uint64_t get_bytes_max = 0;
};

// A sink that writes lines at or above `threshold` to stderr as "<program> [<level>] <line>",
// each led by the UTC time ("2026-12-06T07:35:12.123Z ") when `clock` is given.
LogSink StderrLogSink(Config::LogLevel threshold, std::string program, Clock* clock = nullptr);

// Whether stderr is a stream into the systemd journal (JOURNAL_STREAM names its device and
// inode), which stamps each line itself.
bool StderrGoesToJournal();

// The store's log level for a Config::LogLevel.
LogLevel ToStoreLogLevel(Config::LogLevel level);

// Errors: those of OpenL2FromConfig (prefixed "opening the S3 L2: ") and of Store::Open, e.g.
// FailedPrecondition naming the process that owns the data directory.
Result<std::shared_ptr<Store>> OpenStoreFromConfig(const Config& config,
                                                   const StoreSetup& setup = {});

}  // namespace wombatkv
