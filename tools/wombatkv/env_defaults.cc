// Global option defaults from the environment, through Config (the one parser of WMBT_KV_*).
#include "config/config.h"
#include "tools/wombatkv/context.h"

namespace wombatkv::cli {

Status LoadEnvironmentDefaults(GlobalOptions* opts) {
  auto config = Config::FromEnv();
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
