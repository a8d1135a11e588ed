// CompactEtag: a chain head's ETag in 20 bytes, for L0's chain records (one per chain, so their
// size is what short chains pay per block: docs/layout.md).
//
// ETags are opaque strings, but those our object stores hand out have a few shapes, each packed:
//   kHex     even-length lowercase hex, bare or quoted (S3: an MD5, 32 digits) → nibbles
//   kGroups  a short [g-z] prefix, then canonical hex numbers joined by '-'
//            (the local L2: "<inode>-<mtime>-<size>", "p<id>-<mtime>-<size>") → LEB128 varints
//   kRaw     anything of at most 18 bytes (the in-memory store's "mem-<n>")
// Encode checks that the packed form decodes to the very same string, so any other ETag — or one
// of these shapes too long for 20 bytes — is refused, and the caller holds it out of line
// (Spilled: an index the caller gives meaning to).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wombatkv {

class CompactEtag {
 public:
  static constexpr size_t kBytes = 20;

  // The packed ETag, or nullopt if it fits no form.
  static std::optional<CompactEtag> Encode(std::string_view etag);
  static CompactEtag Spilled(uint32_t index);

  bool spilled() const { return b_[0] == kSpilledForm; }
  uint32_t spill_index() const;
  // REQUIRES: !spilled().
  std::string Decode() const;

 private:
  static constexpr uint8_t kSpilledForm = 3;
  std::array<uint8_t, kBytes> b_{};  // form, then the form's bytes
};
static_assert(sizeof(CompactEtag) == CompactEtag::kBytes);

}  // namespace wombatkv
