#include "config/unknown_settings.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "config/config.h"

namespace wombatkv {
namespace {

TEST(UnknownSettings, ATypoIsFoundWithTheSettingItMeans) {
  const std::vector<std::string> names = {
      "WMBT_KV_DATADIR", "WMBT_KV_DATA_DIR",  "PATH",
      "WMBT_KV_TCP",     "WMBT_KV_NAMESPAEC", "WMBT_KV_WHATEVER_ELSE_ENTIRELY"};
  auto unknown = FindUnknownSettings(names);
  ASSERT_EQ(unknown.size(), 3u);
  EXPECT_EQ(unknown[0].name, "WMBT_KV_DATADIR");
  EXPECT_EQ(unknown[0].suggestions, std::vector<std::string_view>{"WMBT_KV_DATA_DIR"});
  EXPECT_EQ(unknown[1].name, "WMBT_KV_NAMESPAEC");
  EXPECT_EQ(unknown[1].suggestions, std::vector<std::string_view>{"WMBT_KV_NAMESPACE"});
  EXPECT_TRUE(unknown[2].suggestions.empty());  // nothing close
  EXPECT_EQ(DescribeUnknownSetting(unknown[0]),
            "WMBT_KV_DATADIR is not a WombatKV setting and is ignored (did you mean "
            "WMBT_KV_DATA_DIR?); docs/configuration.md lists every setting");
  EXPECT_EQ(DescribeUnknownSetting(unknown[2]).find("did you mean"), std::string::npos);
}

// A name guessed short gets the settings that hold its words, not the nearest spelling
// (WMBT_KV_SHM_PREFIX is one edit from nothing useful and three from WMBT_KV_S3_PREFIX).
TEST(UnknownSettings, AShortGuessIsOfferedTheSettingsThatHoldItsWords) {
  const std::vector<std::string> names = {"WMBT_KV_SHM_PREFIX", "WMBT_KV_HTTP"};
  auto unknown = FindUnknownSettings(names);
  ASSERT_EQ(unknown.size(), 2u);
  EXPECT_EQ(unknown[0].suggestions, std::vector<std::string_view>{"WMBT_KV_DAEMON_SHM_PREFIX"});
  EXPECT_EQ(DescribeUnknownSetting(unknown[1]),
            "WMBT_KV_HTTP is not a WombatKV setting and is ignored (did you mean "
            "WMBT_KV_HTTP_ADDR or WMBT_KV_DAEMON_HTTP?); docs/configuration.md lists every "
            "setting");
}

TEST(UnknownSettings, EverySettingIsKnown) {
  std::vector<std::string> names;
  for (const SettingDoc& d : AllSettings()) names.emplace_back(d.name);
  for (std::string_view d : DaemonSettingNames()) names.emplace_back(d);
  EXPECT_TRUE(FindUnknownSettings(names).empty());
}

TEST(UnknownSettings, TheEnvironmentIsRead) {
  ::setenv("WMBT_KV_UNKNOWN_SETTINGS_TEST", "1", 1);
  auto names = SettingNamesInEnvironment();
  ::unsetenv("WMBT_KV_UNKNOWN_SETTINGS_TEST");
  EXPECT_NE(std::find(names.begin(), names.end(), "WMBT_KV_UNKNOWN_SETTINGS_TEST"), names.end());
  for (const std::string& n : names) EXPECT_TRUE(n.starts_with("WMBT_KV_")) << n;
}

}  // namespace
}  // namespace wombatkv
