#include "base/setting_text.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace wombatkv {
namespace {

TEST(ParseUint, AcceptsDigitsUpToTheLargestU64) {
  EXPECT_EQ(ParseUint("0"), 0u);
  EXPECT_EQ(ParseUint("007"), 7u);
  EXPECT_EQ(ParseUint("18446744073709551615"), UINT64_MAX);
}

TEST(ParseUint, RefusesAnythingButDigits) {
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "1k", "0x10", "18446744073709551616"})
    EXPECT_FALSE(ParseUint(bad).has_value()) << "\"" << bad << "\"";
}

TEST(InvalidSetting, NamesTheSettingTheValueAndTheExpectedForm) {
  Status st = InvalidSetting("WMBT_KV_X", "lots", "a byte count");
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_EQ(st.message(), "WMBT_KV_X=\"lots\" is not valid: expected a byte count");
}

TEST(InvalidSetting, CutsALongValueAndHidesASecret) {
  const std::string long_value(500, 'v');
  EXPECT_EQ(InvalidSetting("N", long_value, "e").message(),
            "N=\"" + std::string(120, 'v') + "...\" is not valid: expected e");
  Status secret = InvalidSetting("N", "hunter2", "e", /*secret=*/true);
  EXPECT_EQ(secret.message().find("hunter2"), std::string::npos);
  EXPECT_NE(secret.message().find("(secret value hidden)"), std::string::npos);
}

TEST(ProcessEnv, ReadsTheEnvironment) {
  ASSERT_EQ(setenv("WMBT_KV_SETTING_TEXT_TEST", "on", 1), 0);
  EXPECT_EQ(ProcessEnv("WMBT_KV_SETTING_TEXT_TEST"), "on");
  ASSERT_EQ(unsetenv("WMBT_KV_SETTING_TEXT_TEST"), 0);
  EXPECT_FALSE(ProcessEnv("WMBT_KV_SETTING_TEXT_TEST").has_value());
}

}  // namespace
}  // namespace wombatkv
