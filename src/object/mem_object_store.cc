// MemObjectStore: a std::map under one mutex. Every write gets a fresh ETag from a process-wide
// counter, so even rewriting identical bytes changes the ETag (stricter than S3's content MD5).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>

#include "object/object_key.h"
#include "wombatkv/env.h"

namespace wombatkv {
namespace {

struct MemObject {
  std::shared_ptr<const Buffer> bytes;
  std::string etag;
  uint64_t modified_us = 0;
};

std::string NextEtag() {
  static std::atomic<uint64_t> counter{0};
  return "mem-" + std::to_string(counter.fetch_add(1, std::memory_order_relaxed) + 1);
}

class MemObjectStore final : public ObjectStore {
 public:
  explicit MemObjectStore(Clock* clock) : clock_(clock ? clock : RealClock()) {}
  std::string Describe() const override { return "mem://"; }

  Result<std::string> Put(std::string_view key, const std::vector<ByteView>& parts,
                          const PutOptions& options) override {
    WMBT_RETURN_IF_ERROR(ValidateObjectKey(key));
    if (options.mode == PutMode::kIfMatch && options.if_match.empty()) {
      return Status::InvalidArgument("put " + std::string(key) + ": if-match with an empty etag");
    }
    size_t size = 0;
    for (ByteView p : parts) size += p.size();
    auto bytes = Buffer::Allocate(size);
    size_t at = 0;
    for (ByteView p : parts) {
      if (!p.empty()) std::memcpy(bytes->data() + at, p.data(), p.size());
      at += p.size();
    }

    std::lock_guard<std::mutex> g(mu_);
    auto it = objects_.find(key);
    switch (options.mode) {
      case PutMode::kOverwrite:
        break;
      case PutMode::kIfAbsent:
        if (it != objects_.end()) {
          return Status::Conflict("object " + std::string(key) + " already exists in mem://");
        }
        break;
      case PutMode::kIfMatch:
        if (it == objects_.end()) {
          return Status::Conflict("object " + std::string(key) + " does not exist (if-match " +
                                  options.if_match + ")");
        }
        if (it->second.etag != options.if_match) {
          return Status::Conflict("object " + std::string(key) + " has etag " + it->second.etag +
                                  ", not " + options.if_match);
        }
        break;
    }
    MemObject obj{std::move(bytes), NextEtag(), clock_->WallMicros()};
    std::string etag = obj.etag;
    if (it == objects_.end()) {
      objects_.emplace(std::string(key), std::move(obj));
    } else {
      it->second = std::move(obj);
    }
    return etag;
  }

  Result<ObjectData> Get(std::string_view key, uint64_t offset, uint64_t length) override {
    WMBT_RETURN_IF_ERROR(ValidateObjectKey(key));
    MemObject obj;
    {
      std::lock_guard<std::mutex> g(mu_);
      auto it = objects_.find(key);
      if (it == objects_.end()) return NotFound(key);
      obj = it->second;
    }
    const uint64_t size = obj.bytes->size();
    if (offset > size) {
      return Status::InvalidArgument("get " + std::string(key) + ": offset " +
                                     std::to_string(offset) + " is past the object size " +
                                     std::to_string(size));
    }
    const uint64_t n = std::min(length, size - offset);
    // A copy: callers own what they get, and can never write into the stored object.
    ObjectData out;
    out.bytes = Buffer::CopyOf(ByteView(obj.bytes->data() + offset, n));
    out.etag = obj.etag;
    out.object_size = size;
    return out;
  }

  Result<ObjectInfo> Head(std::string_view key) override {
    WMBT_RETURN_IF_ERROR(ValidateObjectKey(key));
    std::lock_guard<std::mutex> g(mu_);
    auto it = objects_.find(key);
    if (it == objects_.end()) return NotFound(key);
    return ObjectInfo{std::string(key), it->second.bytes->size(), it->second.etag,
                      it->second.modified_us};
  }

  Status Delete(std::string_view key) override {
    WMBT_RETURN_IF_ERROR(ValidateObjectKey(key));
    std::lock_guard<std::mutex> g(mu_);
    auto it = objects_.find(key);
    if (it != objects_.end()) objects_.erase(it);
    return Status::Ok();
  }

  Result<ListPage> List(std::string_view prefix, std::string_view delimiter,
                        std::string_view token, size_t max_keys) override {
    WMBT_ASSIGN_OR_RETURN(size_t page_size, CheckListArgs(prefix, delimiter, max_keys));
    const bool group = !delimiter.empty();
    ListPageBuilder page(page_size);
    std::lock_guard<std::mutex> g(mu_);
    auto it = objects_.lower_bound(prefix);
    if (!token.empty()) {
      // First key not SkippedByToken: after the token, or past everything inside it if the token
      // is a common prefix ('0' is the character after '/').
      auto after = token.back() == '/'
                       ? objects_.lower_bound(std::string(token.substr(0, token.size() - 1)) + '0')
                       : objects_.upper_bound(token);
      if (it != objects_.end() && (after == objects_.end() || after->first > it->first)) {
        it = after;
      }
    }
    while (it != objects_.end() && it->first.starts_with(prefix)) {
      const std::string& key = it->first;
      size_t slash = group ? key.find('/', prefix.size()) : std::string::npos;
      if (slash == std::string::npos) {
        if (!page.AddObject(
                {key, it->second.bytes->size(), it->second.etag, it->second.modified_us})) {
          break;
        }
        ++it;
        continue;
      }
      std::string common = key.substr(0, slash + 1);
      if (!SkippedByToken(common, token) && !page.AddPrefix(common)) break;
      it = objects_.lower_bound(common.substr(0, common.size() - 1) + '0');
    }
    return std::move(page).Finish();
  }

 private:
  static Status NotFound(std::string_view key) {
    return Status::NotFound("object " + std::string(key) + " not found in mem://");
  }

  Clock* const clock_;
  std::mutex mu_;
  std::map<std::string, MemObject, std::less<>> objects_;
};

}  // namespace

std::unique_ptr<ObjectStore> NewMemObjectStore(Clock* clock) {
  return std::make_unique<MemObjectStore>(clock);
}

}  // namespace wombatkv
