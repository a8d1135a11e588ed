// MemMetaStore: the L1 plane in memory (tests, simulator). A std::map under one mutex, storing the
// same CRC framing as RocksDbMetaStore so corruption handling is exercised by the same tests.
#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "base/check.h"
#include "base/crc32c.h"
#include "base/hex.h"
#include "meta/meta_store.h"
#include "meta/rocksdb_test_hooks.h"

namespace wombatkv {
namespace {

constexpr size_t kCrcBytes = 4;
constexpr size_t kErrorKeyBytesMax = 64;

uint32_t ValueCrc(std::string_view key, std::string_view value) {
  uint32_t crc = Crc32c(reinterpret_cast<const uint8_t*>(key.data()), key.size());
  return Crc32cAppend(crc, reinterpret_cast<const uint8_t*>(value.data()), value.size());
}

std::string Frame(std::string_view key, std::string_view value) {
  const uint32_t crc = ValueCrc(key, value);
  std::string out;
  out.reserve(value.size() + kCrcBytes);
  out.append(value);
  for (size_t i = 0; i < kCrcBytes; ++i) out.push_back(static_cast<char>(crc >> (8 * i)));
  return out;
}

std::string KeyHex(std::string_view key) {
  const size_t n = std::min(key.size(), kErrorKeyBytesMax);
  std::string out = HexEncode({reinterpret_cast<const uint8_t*>(key.data()), n});
  if (n < key.size()) out += "...(" + std::to_string(key.size()) + " bytes)";
  return out;
}

// Checks the CRC and strips it; Corruption names the key, never the value.
Status Unframe(std::string_view key, std::string_view stored, std::string_view* value) {
  if (stored.size() >= kCrcBytes) {
    *value = stored.substr(0, stored.size() - kCrcBytes);
    uint32_t want = 0;
    for (size_t i = 0; i < kCrcBytes; ++i) {
      want |= uint32_t{static_cast<uint8_t>(stored[value->size() + i])} << (8 * i);
    }
    if (ValueCrc(key, *value) == want) return Status::Ok();
  }
  return Status::Corruption("in-memory L1 value for key " + KeyHex(key) +
                            " fails its CRC32C check");
}

class MemMetaStore final : public MetaStore {
 public:
  Status Write(const MetaWriteBatch& batch, bool /*sync*/) override {
    // Frame outside the lock; apply under it so the batch is visible all at once.
    std::vector<std::pair<const std::string*, std::optional<std::string>>> framed;
    framed.reserve(batch.size());
    for (const auto& [key, value] : batch.ops()) {
      framed.emplace_back(&key, value ? std::optional(Frame(key, *value)) : std::nullopt);
    }
    std::lock_guard<std::mutex> g(mu_);
    for (auto& [key, stored] : framed) {
      if (stored) {
        map_.insert_or_assign(*key, std::move(*stored));
      } else {
        map_.erase(*key);
      }
    }
    return Status::Ok();
  }

  Result<std::string> Get(std::string_view key) override {
    std::lock_guard<std::mutex> g(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return Status::NotFound("L1 has no key " + KeyHex(key));
    std::string_view value;
    WMBT_RETURN_IF_ERROR(Unframe(key, it->second, &value));
    return std::string(value);
  }

  // Copies the range under the lock, then calls fn without it: fn may call back into the store,
  // and it sees a consistent snapshot, as with a RocksDB iterator.
  Status Scan(std::string_view prefix,
              const std::function<bool(std::string_view, std::string_view)>& fn) override {
    std::vector<std::pair<std::string, std::string>> snapshot;
    {
      std::lock_guard<std::mutex> g(mu_);
      for (auto it = map_.lower_bound(prefix);
           it != map_.end() && std::string_view(it->first).starts_with(prefix); ++it) {
        snapshot.emplace_back(it->first, it->second);
      }
    }
    for (const auto& [key, stored] : snapshot) {
      std::string_view value;
      WMBT_RETURN_IF_ERROR(Unframe(key, stored, &value));
      if (!fn(key, value)) break;
    }
    return Status::Ok();
  }

  Status DeletePrefix(std::string_view prefix) override {
    std::lock_guard<std::mutex> g(mu_);
    auto it = map_.lower_bound(prefix);
    while (it != map_.end() && std::string_view(it->first).starts_with(prefix)) {
      it = map_.erase(it);
    }
    return Status::Ok();
  }

  void WriteRaw(std::string_view key, std::string_view stored) {
    std::lock_guard<std::mutex> g(mu_);
    map_.insert_or_assign(std::string(key), std::string(stored));
  }

  Result<std::string> ReadRaw(std::string_view key) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return Status::NotFound("L1 has no key " + KeyHex(key));
    return it->second;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string, std::less<>> map_;  // key → value || CRC; GUARDED_BY(mu_)
};

MemMetaStore* AsMem(MetaStore* store) {
  auto* mem = dynamic_cast<MemMetaStore*>(store);
  WMBT_CHECK_MSG(mem != nullptr, "not a MemMetaStore");
  return mem;
}

}  // namespace

std::unique_ptr<MetaStore> NewMemMetaStore() { return std::make_unique<MemMetaStore>(); }

void WriteRawMemValueForTest(MetaStore* store, std::string_view key, std::string_view stored) {
  AsMem(store)->WriteRaw(key, stored);
}

Result<std::string> ReadRawMemValueForTest(MetaStore* store, std::string_view key) {
  return AsMem(store)->ReadRaw(key);
}

}  // namespace wombatkv
