#include "base/quoted.h"

namespace wombatkv {

std::string Quoted(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  constexpr size_t kShownMax = 80;
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < kShownMax; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  out += s.size() > kShownMax ? "...\"" : "\"";
  return out;
}

}  // namespace wombatkv
