// Hex encoding and strict decoding.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace wombatkv {

// Lowercase hex of `in`.
std::string HexEncode(std::span<const uint8_t> in);
void HexEncodeTo(std::span<const uint8_t> in, char* out);  // writes 2*in.size() chars, no NUL

// Decodes exactly out.size()*2 hex digits (either case). Returns false on wrong length or any
// non-hex character; `out` is then unspecified.
bool HexDecode(std::string_view hex, std::span<uint8_t> out);

}  // namespace wombatkv
