#include "base/hex.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

namespace wombatkv {
namespace {

TEST(HexEncode, WritesTwoLowercaseDigitsPerByte) {
  const std::vector<uint8_t> in = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xcd, 0xef, 0xff};
  EXPECT_EQ(HexEncode(in), "00017f80abcdefff");
  EXPECT_EQ(HexEncode({}), "");
}

TEST(HexEncode, ToBufferWritesExactlyTwiceTheInputSizeAndNoTerminator) {
  const std::vector<uint8_t> in = {0xde, 0xad};
  std::array<char, 6> out;
  out.fill('#');
  HexEncodeTo(in, out.data());
  EXPECT_EQ(std::string(out.data(), out.size()), "dead##");
}

TEST(HexDecode, AcceptsEitherCase) {
  std::array<uint8_t, 4> out{};
  ASSERT_TRUE(HexDecode("DEADbeef", out));
  EXPECT_EQ(out, (std::array<uint8_t, 4>{0xde, 0xad, 0xbe, 0xef}));
  ASSERT_TRUE(HexDecode("0aF9", std::span<uint8_t>(out.data(), 2)));
  EXPECT_EQ(out[0], 0x0a);
  EXPECT_EQ(out[1], 0xf9);
}

TEST(HexDecode, RoundTripsEveryByteValue) {
  std::vector<uint8_t> all(256);
  for (int i = 0; i < 256; ++i) all[i] = static_cast<uint8_t>(i);
  std::vector<uint8_t> back(256);
  ASSERT_TRUE(HexDecode(HexEncode(all), back));
  EXPECT_EQ(back, all);
}

TEST(HexDecode, RejectsWrongLength) {
  std::array<uint8_t, 2> out{};
  EXPECT_FALSE(HexDecode("", out));
  EXPECT_FALSE(HexDecode("abc", out));
  EXPECT_FALSE(HexDecode("abcde", out));
  EXPECT_FALSE(HexDecode("abcdef", out));
  EXPECT_TRUE(HexDecode("abcd", out));
  EXPECT_TRUE(HexDecode("", std::span<uint8_t>()));
}

TEST(HexDecode, RejectsEveryNonHexCharacterInEitherNibble) {
  // Exhaustive over all 256 char values, in the high and in the low nibble position.
  const std::string hex_digits = "0123456789abcdefABCDEF";
  for (int c = 0; c < 256; ++c) {
    const char ch = static_cast<char>(c);
    const bool is_hex = hex_digits.find(ch) != std::string::npos;
    std::array<uint8_t, 1> out{};
    EXPECT_EQ(HexDecode(std::string{ch, '0'}, out), is_hex) << "char " << c << " high";
    EXPECT_EQ(HexDecode(std::string{'0', ch}, out), is_hex) << "char " << c << " low";
  }
}

}  // namespace
}  // namespace wombatkv
