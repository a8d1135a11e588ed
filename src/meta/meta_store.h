// MetaStore: the L1 plane, a small ordered key-value store on local disk that keeps a copy of the
// index metadata so a restart does not need to list L2. Implementations: RocksDbMetaStore (the
// real one) and MemMetaStore (tests, simulator). The store engine encodes typed records on top
// (src/store/meta_records.h); this interface knows only bytes.
//
// Integrity: implementations append a CRC32C to every stored value and verify it on read; a
// mismatch is Corruption naming the key (hex), never the bad value.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wombatkv/status.h"

namespace wombatkv {

class FileSystem;

class MetaWriteBatch {
 public:
  void Put(std::string key, std::string value) {
    ops_.emplace_back(std::move(key), std::move(value));
  }
  void Delete(std::string key) { ops_.emplace_back(std::move(key), std::nullopt); }
  // Adds `other`'s operations after this batch's.
  void Append(MetaWriteBatch&& other) {
    if (ops_.empty()) {
      ops_ = std::move(other.ops_);
      return;
    }
    ops_.insert(ops_.end(), std::make_move_iterator(other.ops_.begin()),
                std::make_move_iterator(other.ops_.end()));
  }
  bool empty() const { return ops_.empty(); }
  size_t size() const { return ops_.size(); }
  const std::vector<std::pair<std::string, std::optional<std::string>>>& ops() const {
    return ops_;
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> ops_;
};

class MetaStore {
 public:
  virtual ~MetaStore() = default;

  // Applies the batch atomically. With sync=true, returns after it is on stable storage;
  // otherwise it survives a process crash but maybe not a machine crash.
  virtual Status Write(const MetaWriteBatch& batch, bool sync) = 0;

  // NotFound if absent; Corruption if the stored CRC does not match.
  virtual Result<std::string> Get(std::string_view key) = 0;

  // Calls fn(key, value) for every key starting with `prefix`, in key order, until fn returns
  // false. Corruption (and stops) at the first value whose CRC does not match.
  virtual Status Scan(std::string_view prefix,
                      const std::function<bool(std::string_view, std::string_view)>& fn) = 0;

  // Removes every key starting with `prefix`.
  virtual Status DeletePrefix(std::string_view prefix) = 0;
};

// Opens (creating if needed) a RocksDB database in `dir`. Errors name the directory and what to
// do; RocksDB statuses never escape this module.
Result<std::unique_ptr<MetaStore>> OpenRocksDbMetaStore(const std::string& dir);

std::unique_ptr<MetaStore> NewMemMetaStore();

}  // namespace wombatkv
