#include "transport/tcp/payload_crc_memo.h"

#include "base/crc32c.h"

namespace wombatkv::tcp {

uint32_t PayloadCrcMemo::PayloadCrc(const BufferSlice& slice) {
  if (!slice.owner) return Crc32c(slice.data, slice.size);  // invariant 2
  auto it = entries_.find(slice.data);
  if (it != entries_.end()) {
    const Entry& e = it->second;
    // Invariant 1: the very Buffer we checksummed, still alive (lock() fails once it died).
    if (e.size == slice.size && e.owner.lock() == slice.owner) {
      ++hits_;
      return e.crc;
    }
  } else if (entries_.size() >= kEntriesMax) {
    entries_.clear();  // invariant 3
  }
  const uint32_t crc = Crc32c(slice.data, slice.size);
  entries_[slice.data] = Entry{slice.owner, slice.size, crc};
  return crc;
}

}  // namespace wombatkv::tcp
