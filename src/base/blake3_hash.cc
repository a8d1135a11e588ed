#include "base/blake3_hash.h"

#include <blake3.h>

namespace wombatkv {

static_assert(sizeof(blake3_hasher) <= 1920, "Blake3Hasher::state_ too small");

Blake3Hasher::Blake3Hasher() { blake3_hasher_init(reinterpret_cast<blake3_hasher*>(state_)); }

void Blake3Hasher::Update(std::span<const uint8_t> in) {
  blake3_hasher_update(reinterpret_cast<blake3_hasher*>(state_), in.data(), in.size());
}

void Blake3Hasher::Finalize(std::span<uint8_t> out) const {
  blake3_hasher_finalize(reinterpret_cast<const blake3_hasher*>(state_), out.data(), out.size());
}

std::array<uint8_t, 32> Blake3(std::span<const uint8_t> in) {
  Blake3Hasher h;
  h.Update(in);
  std::array<uint8_t, 32> out;
  h.Finalize(out);
  return out;
}

}  // namespace wombatkv
