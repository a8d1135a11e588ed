// Environment variables that look like WombatKV settings but are none ("WMBT_KV_DATADIR"): each
// is ignored, so a program warns about it at start-up rather than run silently with the default
// (a typo in WMBT_KV_DATA_DIR put the store under ~/.wombatkv).
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wombatkv {

struct UnknownSetting {
  std::string name;  // "WMBT_KV_DATADIR"
  // The settings it most likely means (at most 4), or none if none is close.
  std::vector<std::string_view> suggestions;
};

// Names of the daemon's settings (wombatkvd reads them, clients ignore them): known here so that a
// client sharing the daemon's environment does not warn about them. daemon_settings_test checks
// the list against DaemonSettingDocs().
std::span<const std::string_view> DaemonSettingNames();

// The names among `names` that start with WMBT_KV_ and are neither in AllSettings() nor in
// DaemonSettingNames(), in the order given, each with its suggestions: the known names that hold
// its words whole ("WMBT_KV_SHM_PREFIX" → WMBT_KV_DAEMON_SHM_PREFIX: a name guessed short), or
// else the known name nearest to it within 3 single-character edits (a typo).
std::vector<UnknownSetting> FindUnknownSettings(std::span<const std::string> names);

// The WMBT_KV_* names in this process's environment.
std::vector<std::string> SettingNamesInEnvironment();

// "WMBT_KV_DATADIR is not a WombatKV setting and is ignored (did you mean WMBT_KV_DATA_DIR?)";
// several suggestions are joined with "or".
std::string DescribeUnknownSetting(const UnknownSetting& u);
// Its " (did you mean ...?)" part; empty without suggestions.
std::string DidYouMean(const UnknownSetting& u);

// Calls warn(DescribeUnknownSetting(u)) for each unknown setting of this process's environment.
void WarnAboutUnknownSettings(const std::function<void(const std::string&)>& warn);

}  // namespace wombatkv
