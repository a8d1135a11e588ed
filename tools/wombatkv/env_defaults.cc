// Global option defaults from the environment, through Config (the one parser of WMBT_KV_*).
#include <string_view>
#include <utility>

#include "base/setting_text.h"
#include "config/config.h"
#include "config/flags_given.h"
#include "tools/wombatkv/context.h"
#include "tools/wombatkv/setting_flags.h"

namespace wombatkv::cli {

std::set<std::string> SettingsGivenAsFlags(int argc, char** argv) {
  // The global options that stand for a setting (main.cc); every other setting's flag is
  // SettingFlagName of it.
  std::vector<std::pair<std::string, std::string>> flags = {
      {"--data-dir", "WMBT_KV_DATA_DIR"},       {"-n", "WMBT_KV_NAMESPACE"},
      {"--namespace", "WMBT_KV_NAMESPACE"},     {"-f", "WMBT_KV_FINGERPRINT"},
      {"--fingerprint", "WMBT_KV_FINGERPRINT"}, {"--remote-prefix", "WMBT_KV_REMOTE_PREFIX"},
      {"--tcp-addr", "WMBT_KV_TCP_ADDR"}};
  for (const SettingDoc& doc : AllSettings()) {
    if (!doc.secret) flags.emplace_back(SettingFlagName(doc.name), std::string(doc.name));
  }
  return wombatkv::SettingsGivenAsFlags(argc, argv, flags);
}

Status LoadEnvironmentDefaults(GlobalOptions* opts, std::set<std::string> given) {
  auto config = Config::FromLookup(Config::Without(ProcessEnv, std::move(given)));
  if (!config.ok()) return config.status();
  opts->data_dir = config->data_dir;
  opts->ns = config->ns;
  opts->fingerprint_hex = config->fingerprint.ToHex();
  opts->remote_prefix = config->remote_prefix;
  opts->tcp_addr = config->tcp_addr;
  opts->config = *config;
  return Status::Ok();
}

}  // namespace wombatkv::cli
