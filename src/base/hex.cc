#include "base/hex.h"

#include <array>

namespace wombatkv {
namespace {
constexpr char kDigits[] = "0123456789abcdef";

// Each byte's value as a hex digit (either case), or -1.
constexpr std::array<int8_t, 256> kNibbles = [] {
  std::array<int8_t, 256> t{};
  t.fill(-1);
  for (int c = 0; c < 10; ++c) t['0' + c] = static_cast<int8_t>(c);
  for (int c = 0; c < 6; ++c) {
    t['a' + c] = static_cast<int8_t>(10 + c);
    t['A' + c] = static_cast<int8_t>(10 + c);
  }
  return t;
}();
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
  // One branch at the end (every C ABI call decodes its keys): a -1 anywhere sets the sign.
  int bad = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = kNibbles[static_cast<uint8_t>(hex[2 * i])];
    const int lo = kNibbles[static_cast<uint8_t>(hex[2 * i + 1])];
    bad |= hi | lo;
    out[i] = static_cast<uint8_t>((hi << 4) | lo);
  }
  return bad >= 0;
}

}  // namespace wombatkv
