#include "tools/wombatkv/setting_flags.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "base/read_text_file.h"

namespace wombatkv::cli {
namespace {

// Parses `args` (without the program name) into an App carrying the flags.
void Parse(CLI::App& app, std::vector<std::string> args) {
  std::vector<const char*> argv = {"tool"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
}

// A Config read from `env` only (the process environment is not touched).
Config FromEnv(const std::map<std::string, std::string>& env) {
  auto c = Config::FromLookup([&](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return *c;
}

TEST(SettingFlags, FlagNamesFollowTheVariableNames) {
  EXPECT_EQ(SettingFlagName("WMBT_KV_S3_PREFIX"), "--s3-prefix");
  EXPECT_EQ(SettingFlagName("WMBT_KV_S3_CONNECT_TIMEOUT_MS"), "--s3-connect-timeout-ms");
  EXPECT_EQ(SettingFlagName("WMBT_KV_BUCKET"), "--bucket");
}

TEST(SettingFlags, EverySettingButSecretsAndSkippedOnesHasAFlag) {
  CLI::App app;
  const SettingFlags flags(app, {"WMBT_KV_DATA_DIR"}, "Store settings");
  size_t expected = 0;
  for (const SettingDoc& doc : AllSettings()) {
    const std::string name = SettingFlagName(doc.name);
    const bool wanted = !doc.secret && doc.name != "WMBT_KV_DATA_DIR";
    EXPECT_EQ(app.get_option_no_throw(name) != nullptr, wanted) << name;
    if (!wanted) continue;
    ++expected;
    const CLI::Option* option = app.get_option_no_throw(name);
    ASSERT_NE(option, nullptr) << name;
    // The help names the variable and its default, as the configuration table does.
    EXPECT_NE(option->get_description().find("[env " + std::string(doc.name) + "]"),
              std::string::npos)
        << option->get_description();
    EXPECT_NE(option->get_description().find(std::string(doc.default_value)), std::string::npos)
        << option->get_description();
  }
  EXPECT_GT(expected, 20u);
  // Secrets never become flags: a command line is visible to every local user.
  for (const char* secret : {"--s3-access-key", "--s3-secret-key", "--auth-token"}) {
    EXPECT_EQ(app.get_option_no_throw(secret), nullptr) << secret;
  }
}

// docs/configuration.md's flag column names each setting's flag: a setting the table says has
// no flag ("—") must be one no tool offers (a secret, or the unsupported HTTP transport).
TEST(SettingFlags, TheConfigurationTableNamesEveryFlag) {
  const std::optional<std::string> text = ReadTextFile(WOMBATKV_CONFIGURATION_DOC);
  ASSERT_TRUE(text) << WOMBATKV_CONFIGURATION_DOC;
  const std::string& doc = *text;
  std::map<std::string, std::string> column;  // setting -> its flag column
  const std::regex row(R"(\n\| `(WMBT_KV_[A-Z0-9_]+)` \| ([^|]*) \|)");
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), row); it != std::sregex_iterator();
       ++it) {
    column[(*it)[1]] = (*it)[2];
  }
  for (const SettingDoc& d : AllSettings()) {
    const std::string name(d.name);
    ASSERT_EQ(column.count(name), 1u) << name << " has no row";
    if (d.secret || name == "WMBT_KV_HTTP_ADDR") {
      EXPECT_EQ(column[name], "—") << name;
    } else {
      EXPECT_NE(column[name].find(SettingFlagName(name)), std::string::npos)
          << name << "'s row names no " << SettingFlagName(name) << ": " << column[name];
    }
  }
}

TEST(SettingFlags, AFlagOverridesItsVariableAndOthersKeepTheirs) {
  CLI::App app;
  const SettingFlags flags(app, {}, "Store settings");
  Parse(app, {"--s3-prefix", "from-flag", "--upload-threads", "3"});
  Config c = FromEnv({{"WMBT_KV_S3_PREFIX", "from-env"}, {"WMBT_KV_GC_GRACE", "2h"}});
  std::string failed;
  ASSERT_TRUE(flags.ApplyTo(&c, &failed).ok());
  EXPECT_EQ(c.l2_prefix, "from-flag");
  EXPECT_EQ(c.upload_threads, 3u);
  EXPECT_EQ(c.gc_grace_us, uint64_t{2} * 3600 * 1000 * 1000);  // no flag given: the variable's
  EXPECT_TRUE(failed.empty());
}

TEST(SettingFlags, ABadValueIsTheVariablesErrorNamingTheFlag) {
  CLI::App app;
  const SettingFlags flags(app, {}, "Store settings");
  Parse(app, {"--upload-threads", "999"});
  Config c = FromEnv({});
  const size_t before = c.upload_threads;
  std::string failed;
  Status s = flags.ApplyTo(&c, &failed);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_EQ(failed, "--upload-threads");
  // The flag's value, not the variable's (which is not set), and which setting it is.
  EXPECT_TRUE(s.message().starts_with("\"999\" is not valid: expected")) << s.ToString();
  EXPECT_TRUE(s.message().ends_with(" (setting WMBT_KV_UPLOAD_THREADS)")) << s.ToString();
  EXPECT_EQ(c.upload_threads, before);
}

}  // namespace
}  // namespace wombatkv::cli
