// OpenL2FromConfig: Config → S3Options → a probed S3ObjectStore.
#include "object/s3/l2_from_config.h"

#include <cstdio>
#include <cstdlib>
#include <optional>

namespace wombatkv {
namespace {

std::optional<std::string> ProcessEnv(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

Status ParseU32(const EnvLookup& lookup, const char* name, uint32_t min, uint32_t max,
                uint32_t* out) {
  auto v = lookup(name);
  if (!v || v->empty()) return Status::Ok();
  char* end = nullptr;
  unsigned long long n = std::strtoull(v->c_str(), &end, 10);
  if (end == v->c_str() || *end != '\0' || n < min || n > max) {
    return Status::InvalidArgument(std::string(name) + "=" + *v + ": expected an integer from " +
                                   std::to_string(min) + " to " + std::to_string(max));
  }
  *out = static_cast<uint32_t>(n);
  return Status::Ok();
}

Result<bool> ParseFlag(const EnvLookup& lookup, const char* name) {
  auto v = lookup(name);
  if (!v || v->empty() || *v == "0" || *v == "false") return false;
  if (*v == "1" || *v == "true") return true;
  return Status::InvalidArgument(std::string(name) + "=" + *v + ": expected 0 or 1");
}

}  // namespace

Result<S3Options> S3OptionsFromConfig(const Config& config, const L2Env& env) {
  const EnvLookup lookup = env.lookup ? env.lookup : EnvLookup(ProcessEnv);
  S3Options o;
  o.endpoint = config.s3_endpoint;
  o.bucket = config.s3_bucket;
  o.region = config.s3_region;
  o.access_key = config.s3_access_key;
  o.secret_key = config.s3_secret_key;
  o.clock = env.clock;
  o.random = env.random;
  WMBT_ASSIGN_OR_RETURN(o.allow_dev_credentials, ParseFlag(lookup, "WMBT_KV_LOCAL_DEV"));
  WMBT_ASSIGN_OR_RETURN(o.create_bucket, ParseFlag(lookup, "WMBT_KV_S3_CREATE_BUCKET"));
  if (auto a = lookup("WMBT_KV_S3_ADDRESSING"); a && !a->empty()) {
    if (*a == "auto") o.addressing = S3Addressing::kAuto;
    else if (*a == "path") o.addressing = S3Addressing::kPath;
    else if (*a == "virtual") o.addressing = S3Addressing::kVirtualHosted;
    else {
      return Status::InvalidArgument("WMBT_KV_S3_ADDRESSING=" + *a +
                                     ": expected auto, path or virtual");
    }
  }
  uint32_t concurrency = static_cast<uint32_t>(o.requests_inflight_max);
  WMBT_RETURN_IF_ERROR(ParseU32(lookup, "WMBT_KV_S3_CONCURRENCY", 1, 1024, &concurrency));
  o.requests_inflight_max = concurrency;
  WMBT_RETURN_IF_ERROR(
      ParseU32(lookup, "WMBT_KV_S3_CONNECT_TIMEOUT_MS", 1, 600000, &o.connect_timeout_ms));
  WMBT_RETURN_IF_ERROR(
      ParseU32(lookup, "WMBT_KV_S3_REQUEST_TIMEOUT_MS", 1, 3600000, &o.request_timeout_ms));
  WMBT_RETURN_IF_ERROR(ParseU32(lookup, "WMBT_KV_S3_RETRIES", 0, 20, &o.retries_max));
  return o;
}

Result<std::unique_ptr<S3ObjectStore>> OpenL2FromConfig(const Config& config, const L2Env& env) {
  if (config.s3_bucket.empty()) return std::unique_ptr<S3ObjectStore>();
  WMBT_ASSIGN_OR_RETURN(S3Options options, S3OptionsFromConfig(config, env));
  WMBT_ASSIGN_OR_RETURN(std::unique_ptr<S3ObjectStore> store, S3ObjectStore::Open(options));
  std::string warning;
  // The probe key sits next to the namespaces ("<prefix>/.wombatkv-probe-..."), never inside one.
  WMBT_RETURN_IF_ERROR(store->Probe(config.l2_prefix + "/", &warning));
  if (!warning.empty()) {
    if (env.warn) env.warn(warning);
    else std::fprintf(stderr, "wombatkv: warning: %s\n", warning.c_str());
  }
  return store;
}

}  // namespace wombatkv
