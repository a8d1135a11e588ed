#include "daemon/daemon_settings.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>

#include "base/read_text_file.h"
#include "config/unknown_settings.h"
#include "store/stats_fields.h"

namespace wombatkv {
namespace {

EnvLookup MapLookup(std::map<std::string, std::string> env) {
  return [env](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

TEST(DaemonSettings, DefaultsServeNothingUntilToldAndBoundEverything) {
  auto s = DaemonSettings::FromLookup(MapLookup({}));
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->tcp.empty());
  EXPECT_TRUE(s->tokens.empty());
  EXPECT_EQ(s->max_frame_bytes, wire::kDefaultMaxBodyBytes);
  EXPECT_GT(s->shutdown_timeout_ms, 0u);
  EXPECT_GT(s->idle_timeout_ms, 0u);
}

TEST(DaemonSettings, ReadsEveryVariable) {
  auto s = DaemonSettings::FromLookup(MapLookup({
      {"WMBT_KV_TCP", "127.0.0.1:7070,[::1]:0"},
      {"WMBT_KV_DAEMON_SHM_PREFIX", "engines"},
      {"WMBT_KV_AUTH_TOKENS", "alpha=ns1,ns2;beta"},
      {"WMBT_KV_DAEMON_HTTP", "127.0.0.1:9090"},
      {"WMBT_KV_MAX_FRAME_BYTES", "64M"},
      {"WMBT_KV_SHUTDOWN_TIMEOUT_MS", "1500"},
      {"WMBT_KV_IDLE_TIMEOUT_MS", "0"},
      {"WMBT_KV_DAEMON_WORKERS", "4"},
      {"WMBT_KV_TCP_POLL", "0"},
  }));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->tcp, (std::vector<std::string>{"127.0.0.1:7070", "[::1]:0"}));
  EXPECT_EQ(s->shm_prefix, "engines");
  ASSERT_EQ(s->tokens.size(), 2u);
  EXPECT_EQ(s->tokens[0].namespaces, (std::vector<std::string>{"ns1", "ns2"}));
  EXPECT_TRUE(s->tokens[1].namespaces.empty());
  EXPECT_EQ(s->http, "127.0.0.1:9090");
  EXPECT_EQ(s->max_frame_bytes, 64u << 20);
  EXPECT_EQ(s->shutdown_timeout_ms, 1500u);
  EXPECT_EQ(s->idle_timeout_ms, 0u);
  EXPECT_EQ(s->workers, 4u);
  EXPECT_FALSE(s->tcp_poll);
}

TEST(DaemonSettings, BadValuesNameTheVariableAndNeverEchoATokenGrant) {
  struct Case {
    const char* name;
    const char* value;
  } cases[] = {
      {"WMBT_KV_TCP", "7070"},          {"WMBT_KV_TCP", "a:1,,b:2"},
      {"WMBT_KV_DAEMON_SHM_PREFIX", "../x"}, {"WMBT_KV_DAEMON_HTTP", "nowhere"},
      {"WMBT_KV_MAX_FRAME_BYTES", "8G"}, {"WMBT_KV_MAX_FRAME_BYTES", "100"},
      {"WMBT_KV_SHUTDOWN_TIMEOUT_MS", "-1"}, {"WMBT_KV_IDLE_TIMEOUT_MS", "10s"},
      {"WMBT_KV_DAEMON_WORKERS", "0"},   {"WMBT_KV_TCP_POLL", "yes"},
  };
  for (const Case& c : cases) {
    DaemonSettings s;
    Status st = s.Set(c.name, c.value);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << c.name << "=" << c.value;
    EXPECT_NE(st.message().find(c.name), std::string::npos) << st.ToString();
  }
  DaemonSettings s;
  Status st = s.Set("WMBT_KV_AUTH_TOKENS", "sup3rsecret=bad/ns");
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.message().find("sup3rsecret"), std::string::npos) << st.ToString();
  EXPECT_EQ(s.Describe().find("sup3rsecret"), std::string::npos);
}

TEST(DaemonSettings, RepeatedTokensAccumulate) {
  DaemonSettings s;
  ASSERT_TRUE(s.Set("WMBT_KV_AUTH_TOKENS", "one").ok());
  ASSERT_TRUE(s.Set("WMBT_KV_AUTH_TOKENS", "two=ns").ok());
  EXPECT_EQ(s.tokens.size(), 2u);
  EXPECT_EQ(s.Describe().find("one"), std::string::npos) << "tokens are shown as a count";
}

// Each --auth-token flag is one value: a token limited in one and given again in another (here
// for every namespace) was granted what the last said, silently widening it.
TEST(DaemonSettings, ATokenGivenInTwoValuesIsRefused) {
  DaemonSettings s;
  ASSERT_TRUE(s.Set("WMBT_KV_AUTH_TOKENS", "t=ns-a").ok());
  const Status st = s.Set("WMBT_KV_AUTH_TOKENS", "t");
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("given twice"), std::string::npos) << st.ToString();
  EXPECT_EQ(st.message().find("t="), std::string::npos) << "the token is not echoed";
  ASSERT_EQ(s.tokens.size(), 1u);
  EXPECT_EQ(s.tokens[0].namespaces, std::vector<std::string>{"ns-a"});
}

TEST(DaemonSettings, DocsListEverySettingOnceAndSetAcceptsThem) {
  std::set<std::string_view> names;
  for (const SettingDoc& d : DaemonSettingDocs()) {
    EXPECT_TRUE(names.insert(d.name).second) << d.name;
    EXPECT_FALSE(d.meaning.empty());
    DaemonSettings s;
    EXPECT_EQ(s.Set(d.name, "").message().find("unknown"), std::string::npos) << d.name;
    EXPECT_NE(s.Describe().find(std::string(d.name) + "="), std::string::npos) << d.name;
  }
  for (const SettingDoc& d : AllSettings()) {
    EXPECT_EQ(names.count(d.name), 0u) << d.name << " is both a Config and a daemon setting";
  }
  // The list clients use to not warn about the daemon's variables is exactly these names.
  std::span<const std::string_view> known = DaemonSettingNames();
  EXPECT_EQ(std::set<std::string_view>(known.begin(), known.end()), names);
  EXPECT_EQ(known.size(), names.size());
}

TEST(DaemonSettings, ShmDataBytesAndRunDirParseAndNameThemselves) {
  DaemonSettings s;
  ASSERT_TRUE(s.Set("WMBT_KV_SHM_DATA_BYTES", "64M").ok());
  EXPECT_EQ(s.shm_data_bytes, 64ull << 20);
  Status bad = s.Set("WMBT_KV_SHM_DATA_BYTES", "1K");
  EXPECT_EQ(bad.code(), Code::kInvalidArgument);
  EXPECT_NE(bad.message().find("WMBT_KV_SHM_DATA_BYTES"), std::string::npos) << bad.message();
  // Not whole 64-byte units: refused here, where it once aborted the daemon at the first attach
  // (and the engine with it).
  EXPECT_EQ(s.Set("WMBT_KV_SHM_DATA_BYTES", "1500000").code(), Code::kInvalidArgument);

  Config c = Config::Defaults([](const char*) { return std::nullopt; });
  EXPECT_EQ(c.run_dir, "/tmp");
  ASSERT_TRUE(c.Set("WMBT_KV_RUN_DIR", "/run/user/1000").ok());
  EXPECT_EQ(c.run_dir, "/run/user/1000");
  Status relative = c.Set("WMBT_KV_RUN_DIR", "run");
  EXPECT_EQ(relative.code(), Code::kInvalidArgument);
  EXPECT_NE(relative.message().find("WMBT_KV_RUN_DIR"), std::string::npos) << relative.message();
}

// docs/configuration.md's table is written by hand: every setting of AllSettings() and
// DaemonSettingDocs() must have its row, and every WMBT_KV_* row must be one of them.
TEST(DaemonSettings, ConfigurationDocListsEverySettingAndNoOther) {
  const std::optional<std::string> text = ReadTextFile(WOMBATKV_CONFIGURATION_DOC);
  ASSERT_TRUE(text) << WOMBATKV_CONFIGURATION_DOC;
  const std::string& doc = *text;
  std::set<std::string> rows;
  const std::regex row(R"(\n\| `(WMBT_KV_[A-Z0-9_]+)` \|)");
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), row); it != std::sregex_iterator();
       ++it) {
    rows.insert((*it)[1]);
  }
  std::set<std::string> known;
  for (const auto* docs : {&AllSettings(), &DaemonSettingDocs()}) {
    for (const SettingDoc& d : *docs) {
      known.insert(std::string(d.name));
      EXPECT_EQ(rows.count(std::string(d.name)), 1u)
          << d.name << " has no row in docs/configuration.md";
    }
  }
  for (const std::string& r : rows) {
    EXPECT_EQ(known.count(r), 1u) << "docs/configuration.md documents " << r
                                  << ", which no settings table defines";
  }
}

TEST(DaemonSettings, TheClientTokenIsAConfigSecret) {
  Config c = Config::Defaults([](const char*) { return std::nullopt; });
  ASSERT_TRUE(c.Set("WMBT_KV_AUTH_TOKEN", "client-s3cret").ok());
  EXPECT_EQ(c.auth_token, "client-s3cret");
  EXPECT_EQ(c.Describe().find("client-s3cret"), std::string::npos);
  EXPECT_NE(c.Describe().find("WMBT_KV_AUTH_TOKEN=(set)"), std::string::npos);
}

// docs/wire.md states how many counters a Stats reply carries: the code's count (a reviewer found
// the doc 17 behind).
TEST(WireDoc, TheStatsReplysCounterCountIsTheCodes) {
  const std::optional<std::string> text = ReadTextFile(WOMBATKV_WIRE_DOC);
  ASSERT_TRUE(text) << WOMBATKV_WIRE_DOC;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(*text, m, std::regex(R"(\| 13 \| Stats \|[^\n]*`u64` × (\d+))")));
  EXPECT_EQ(std::stoul(m[1].str()), std::size(kStoreStatsFields));
}

}  // namespace
}  // namespace wombatkv
