#include "config/unknown_settings.h"

#include <algorithm>
#include <array>

#include "base/nearest_words.h"
#include "config/config.h"

extern char** environ;

namespace wombatkv {
namespace {

constexpr std::string_view kPrefix = "WMBT_KV_";
constexpr size_t kSuggestEditsMax = 3;
constexpr size_t kSuggestionsMax = 4;

// Whether the words of `name` (after WMBT_KV_) appear whole, in order, within those of `known`.
bool HoldsWordsOf(std::string_view known, std::string_view name) {
  const std::string k = "_" + std::string(known.substr(kPrefix.size())) + "_";
  const std::string n = "_" + std::string(name.substr(kPrefix.size())) + "_";
  return n.size() > 2 && k.find(n) != std::string::npos;
}

constexpr std::array<std::string_view, 12> kDaemonSettingNames = {
    "WMBT_KV_TCP",
    "WMBT_KV_DAEMON_SHM_PREFIX",
    "WMBT_KV_DAEMON_HTTP",
    "WMBT_KV_AUTH_TOKENS",
    "WMBT_KV_MAX_FRAME_BYTES",
    "WMBT_KV_SHUTDOWN_TIMEOUT_MS",
    "WMBT_KV_IDLE_TIMEOUT_MS",
    "WMBT_KV_DAEMON_WORKERS",
    "WMBT_KV_SHM_DATA_BYTES",
    "WMBT_KV_SHM_ARENA_BYTES",
    "WMBT_KV_SHM_ARENAS",
    "WMBT_KV_TCP_POLL",
};

}  // namespace

std::span<const std::string_view> DaemonSettingNames() { return kDaemonSettingNames; }

std::vector<UnknownSetting> FindUnknownSettings(std::span<const std::string> names) {
  std::vector<std::string_view> known;
  for (const SettingDoc& d : AllSettings()) known.push_back(d.name);
  known.insert(known.end(), kDaemonSettingNames.begin(), kDaemonSettingNames.end());
  std::vector<UnknownSetting> out;
  for (const std::string& name : names) {
    if (!name.starts_with(kPrefix)) continue;
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    UnknownSetting u{name, {}};
    for (std::string_view k : known) {
      if (HoldsWordsOf(k, name) && u.suggestions.size() < kSuggestionsMax)
        u.suggestions.push_back(k);
    }
    if (u.suggestions.empty()) {  // no name holds its words: a typo? the nearest name
      if (auto k = NearestWord(name, known, kSuggestEditsMax)) u.suggestions = {*k};
    }
    out.push_back(std::move(u));
  }
  return out;
}

std::vector<std::string> SettingNamesInEnvironment() {
  std::vector<std::string> names;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry = *e;
    if (!entry.starts_with(kPrefix)) continue;
    names.emplace_back(entry.substr(0, entry.find('=')));
  }
  return names;
}

std::string DidYouMean(const UnknownSetting& u) {
  std::string out;
  for (size_t i = 0; i < u.suggestions.size(); ++i) {
    out += (i == 0 ? " (did you mean " : " or ") + std::string(u.suggestions[i]);
  }
  if (!u.suggestions.empty()) out += "?)";
  return out;
}

std::string DescribeUnknownSetting(const UnknownSetting& u) {
  return u.name + " is not a WombatKV setting and is ignored" + DidYouMean(u) +
         "; docs/configuration.md lists every setting";
}

void WarnAboutUnknownSettings(const std::function<void(const std::string&)>& warn) {
  const std::vector<std::string> names = SettingNamesInEnvironment();
  for (const UnknownSetting& u : FindUnknownSettings(names)) warn(DescribeUnknownSetting(u));
}

}  // namespace wombatkv
