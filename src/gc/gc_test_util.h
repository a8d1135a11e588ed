// Test helpers for orphan GC and the audit: a clock a test moves by hand, and a store on shared
// planes (an L2 and an L1 the test also reads and damages directly).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gc/hold_files.h"
#include "layout/object_keys.h"
#include "wombatkv/env.h"
#include "wombatkv/object_store.h"

namespace wombatkv::testing {

// Wall time starts at a plausible epoch and moves only by Advance (and by sleeps, so upload
// retries take no real time).
class ManualClock : public Clock {
 public:
  static constexpr uint64_t kStartMicros = 1'700'000'000'000'000ull;
  // `start_us`: the wall time at construction (a test on real files starts it at the real time,
  // so that file modification times and this clock agree).
  explicit ManualClock(uint64_t start_us = kStartMicros) : start_us_(start_us) {}
  uint64_t NowMicros() override { return now_; }
  uint64_t WallMicros() override { return start_us_ + now_; }
  void SleepMicros(uint64_t micros) override { now_ += micros; }
  bool WaitFor(std::condition_variable&, std::unique_lock<std::mutex>&, uint64_t micros) override {
    now_ += micros;
    return false;
  }
  void Advance(uint64_t micros) { now_ += micros; }

 private:
  const uint64_t start_us_;
  std::atomic<uint64_t> now_{0};
};

// A listing that lags: `hidden` is left out of every listing until the clock reaches `until_us`
// (as some S3-compatible servers list a new key late; GET and HEAD see it at once).
class LaggingListing final : public ObjectStoreWrapper {
 public:
  LaggingListing(ObjectStore* target, Clock* clock) : ObjectStoreWrapper(target), clock_(clock) {}
  std::string hidden;
  uint64_t until_us = 0;
  Result<ListPage> List(std::string_view prefix, std::string_view delimiter,
                        std::string_view token, size_t max_keys) override {
    WMBT_ASSIGN_OR_RETURN(ListPage page,
                          ObjectStoreWrapper::List(prefix, delimiter, token, max_keys));
    if (clock_->NowMicros() < until_us) {
      std::erase_if(page.objects, [&](const ObjectInfo& o) { return o.key == hidden; });
    }
    return page;
  }

 private:
  Clock* clock_;
};

// The blob of `payload` in namespace `ns` (L2 prefix "kv") as L2 holds it, as a collector keeps
// it before deleting it; nothing if it cannot be read.
inline std::optional<gc::HeldBlob> HeldBlobOf(ObjectStore* l2, const std::string& ns,
                                              std::span<const uint8_t> payload) {
  const ContentHash hash = HashPayload(payload);
  const std::string key = layout::BlobKey("kv", ns, hash);
  auto obj = l2->Get(key, 0, kToEnd);
  if (!obj.ok()) return std::nullopt;
  return gc::HeldBlob{gc::OrphanBlob{ns, key, hash, obj->object_size}, obj->bytes};
}

// What a collector that died after writing its hold file leaves: that file, with `blobs`, in
// `dir` (GcOptions::hold_dir). Its path, or empty if it could not be written.
inline std::string LeaveHoldFile(const std::string& dir, const std::vector<gc::HeldBlob>& blobs) {
  gc::HoldFiles holds(PosixFileSystem(), dir);
  std::vector<const gc::HeldBlob*> refs;
  for (const gc::HeldBlob& b : blobs) refs.push_back(&b);
  auto file = holds.Write(refs);
  holds.Close();  // the writer "dies": its file stays
  return file.ok() ? (*file)->path() : std::string();
}

inline constexpr uint64_t kMinuteUs = 60ull * 1000000;
inline constexpr uint64_t kHourUs = 60 * kMinuteUs;

}  // namespace wombatkv::testing
