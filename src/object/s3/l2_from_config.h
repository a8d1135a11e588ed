// OpenL2FromConfig: which L2 plane a Config selects, opened and probed. Tools, the C ABI and the
// daemon call it before Store::Open and pass the result as StoreOptions::object_store.
//
// With WMBT_KV_BUCKET unset it returns null: the store then uses its default, the local directory
// under the data directory. With a bucket it returns an S3ObjectStore that has passed its start-up
// probe (bucket reachable, credentials valid, conditional writes checked).
//
// Every S3 setting (WMBT_KV_S3_*, WMBT_KV_LOCAL_DEV) is a Config field, parsed and documented
// with the others (src/config/config.cc, docs/configuration.md).
// Thread-safety: a function; the returned store is thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "config/config.h"
#include "object/s3/s3_object_store.h"

namespace wombatkv {

struct L2Env {
  Clock* clock = nullptr;    // null = RealClock(); must outlive the store
  Random* random = nullptr;  // null = system-seeded, owned by the store
  // Receives warnings (e.g. conditional writes unsupported); null = stderr.
  std::function<void(const std::string&)> warn;
};

// The S3Options a Config describes (no I/O). InvalidArgument for a bad extra setting.
Result<S3Options> S3OptionsFromConfig(const Config& config, const L2Env& env);

// Null when no bucket is configured; else an S3 store that passed Probe(). Errors: those of
// S3ObjectStore::Open and Probe (FailedPrecondition for credentials/bucket, Unavailable when the
// endpoint cannot be reached).
Result<std::unique_ptr<S3ObjectStore>> OpenL2FromConfig(const Config& config,
                                                        const L2Env& env = {});

}  // namespace wombatkv
