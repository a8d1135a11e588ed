// BLAKE3 (unkeyed) over Debian's official C implementation.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace wombatkv {

// Full 32-byte BLAKE3 digest.
std::array<uint8_t, 32> Blake3(std::span<const uint8_t> in);

// Incremental hashing, for payloads that arrive in pieces.
class Blake3Hasher {
 public:
  Blake3Hasher();
  void Update(std::span<const uint8_t> in);
  // Writes out.size() bytes of output (any length up to 64).
  void Finalize(std::span<uint8_t> out) const;

 private:
  alignas(8) unsigned char state_[1920];  // >= sizeof(blake3_hasher), checked in the .cc
};

}  // namespace wombatkv
