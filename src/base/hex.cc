#include "base/hex.h"

namespace wombatkv {
namespace {
constexpr char kDigits[] = "0123456789abcdef";

int Nibble(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

void HexEncodeTo(std::span<const uint8_t> in, char* out) {
  for (size_t i = 0; i < in.size(); ++i) {
    out[2 * i] = kDigits[in[i] >> 4];
    out[2 * i + 1] = kDigits[in[i] & 0xf];
  }
}

std::string HexEncode(std::span<const uint8_t> in) {
  std::string out(in.size() * 2, '\0');
  HexEncodeTo(in, out.data());
  return out;
}

bool HexDecode(std::string_view hex, std::span<uint8_t> out) {
  if (hex.size() != out.size() * 2) return false;
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = Nibble(hex[2 * i]);
    int lo = Nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>((hi << 4) | lo);
  }
  return true;
}

}  // namespace wombatkv
