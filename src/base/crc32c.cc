// Placeholder portable CRC32C; the hardware (SSE4.2, three-stream) path replaces it.
#include "base/crc32c.h"

#include <array>

namespace wombatkv {
namespace {
std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
const std::array<uint32_t, 256> kTable = MakeTable();
}  // namespace

uint32_t Crc32cAppendPortable(uint32_t crc, const uint8_t* data, size_t n) {
  uint32_t c = ~crc;
  for (size_t i = 0; i < n; ++i) c = kTable[(c ^ data[i]) & 0xff] ^ (c >> 8);
  return ~c;
}
uint32_t Crc32cAppend(uint32_t crc, const uint8_t* data, size_t n) {
  return Crc32cAppendPortable(crc, data, n);
}
bool Crc32cHardwareAvailable() { return false; }
}  // namespace wombatkv
