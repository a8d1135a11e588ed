#include "config/flags_given.h"

#include <string_view>

namespace wombatkv {

std::set<std::string> SettingsGivenAsFlags(
    int argc, char** argv, const std::vector<std::pair<std::string, std::string>>& flags) {
  std::set<std::string> given;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;  // positional arguments follow
    for (const auto& [flag, setting] : flags) {
      if (arg == flag || (flag.starts_with("--") && arg.starts_with(flag + "="))) {
        given.insert(setting);
      }
    }
  }
  return given;
}

}  // namespace wombatkv
