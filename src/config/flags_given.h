// Which settings a command line gives as flags: those are then not read from the environment
// (Config::Without), so a flag wins even over a variable whose value would not parse.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace wombatkv {

// The setting names (second) whose flags (first: "--data-dir", "-n") appear in argv[1..]:
// as the whole argument, or for a long flag as "--flag=VALUE". The scan stops at "--".
std::set<std::string> SettingsGivenAsFlags(
    int argc, char** argv, const std::vector<std::pair<std::string, std::string>>& flags);

}  // namespace wombatkv
