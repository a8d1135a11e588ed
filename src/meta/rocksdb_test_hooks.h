// Test-only hooks that reach under the MetaStore CRC framing, so tests can plant stored bytes the
// store never wrote (bit flips, a value moved under another key) and check they are refused.
// Never called by production code.
//
// Stored value format (both implementations): caller value || CRC32C(key || value), 4 bytes LE.
//
// Thread-safety: the RocksDB hooks open `dir` themselves, so no MetaStore may have it open (they
// fail with FailedPrecondition if one does). The MemMetaStore hooks lock the store's mutex.
#pragma once

#include <string>
#include <string_view>

#include "wombatkv/status.h"

namespace wombatkv {

class MetaStore;

// Writes `stored` verbatim (no CRC added) under `key` in the RocksDB database in `dir` (synced).
Status WriteRawRocksDbValueForTest(const std::string& dir, std::string_view key,
                                   std::string_view stored);
// Reads the stored bytes (value and CRC) under `key`. NotFound if absent.
Result<std::string> ReadRawRocksDbValueForTest(const std::string& dir, std::string_view key);

// As above for a store made by NewMemMetaStore(). REQUIRES: `store` came from NewMemMetaStore().
void WriteRawMemValueForTest(MetaStore* store, std::string_view key, std::string_view stored);
Result<std::string> ReadRawMemValueForTest(MetaStore* store, std::string_view key);

}  // namespace wombatkv
