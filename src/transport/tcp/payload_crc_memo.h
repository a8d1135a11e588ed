// PayloadCrcMemo: remembers the CRC32C of large response payloads, so a block served again and
// again from the daemon's RAM cache is not read in full once more only to checksum its frame
// (wire::PayloadCrcSource). Measured on the development VM before it: the server's CRC pass was
// the largest user-space cost of a 64 KiB get (~7% of all CPU at eight clients).
//
// Invariants:
//   1. An answer is remembered per slice (data pointer and size) together with a weak reference
//      to the Buffer holding it, and reused only while that same Buffer is alive: a freed
//      buffer's address taken by another one never matches (its weak reference has expired).
//   2. REQUIRES of callers: the bytes of a live Buffer never change. True of every response
//      payload (cache entries are content-addressed and written once before anyone sees them;
//      disk and L2 reads are fresh buffers). A slice without an owner is never remembered.
//   3. At most kEntriesMax entries: a full memo forgets everything and starts again (entries are
//      small, and the working set of a hot cache refills it within one pass).
//
// Thread-safety: none; each event loop has its own (worker threads compute their CRCs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "wire/frame.h"
#include "wombatkv/buffer.h"

namespace wombatkv::tcp {

class PayloadCrcMemo final : public wire::PayloadCrcSource {
 public:
  static constexpr size_t kEntriesMax = 4096;

  uint32_t PayloadCrc(const BufferSlice& slice) override;

  size_t size() const { return entries_.size(); }
  uint64_t hits() const { return hits_; }

 private:
  struct Entry {
    std::weak_ptr<const Buffer> owner;
    size_t size = 0;
    uint32_t crc = 0;
  };
  std::unordered_map<const uint8_t*, Entry> entries_;
  uint64_t hits_ = 0;
};

}  // namespace wombatkv::tcp
