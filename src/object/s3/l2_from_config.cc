// OpenL2FromConfig: Config → S3Options → a probed S3ObjectStore.
#include "object/s3/l2_from_config.h"

#include <cstdio>
#include <initializer_list>
#include <utility>

namespace wombatkv {
namespace {

// The enum value a word of Config names. Config::Set accepts only these words, so a miss is a
// mismatch between the two tables: InvalidArgument naming the setting.
template <typename E>
Result<E> Choice(const char* name, const std::string& word,
                 std::initializer_list<std::pair<std::string_view, E>> words) {
  for (const auto& [w, e] : words) {
    if (w == word) return e;
  }
  return Status::InvalidArgument(std::string(name) + "=" + word + ": not a value this build knows");
}

}  // namespace

Result<S3Options> S3OptionsFromConfig(const Config& config, const L2Env& env) {
  S3Options o;
  o.endpoint = config.s3_endpoint;
  o.bucket = config.s3_bucket;
  o.region = config.s3_region;
  o.access_key = config.s3_access_key;
  o.secret_key = config.s3_secret_key;
  o.clock = env.clock;
  o.random = env.random;
  o.allow_dev_credentials = config.local_dev;
  o.create_bucket = config.s3_create_bucket;
  WMBT_ASSIGN_OR_RETURN(o.addressing,
                        Choice<S3Addressing>("WMBT_KV_S3_ADDRESSING", config.s3_addressing,
                                             {{"auto", S3Addressing::kAuto},
                                              {"path", S3Addressing::kPath},
                                              {"virtual", S3Addressing::kVirtualHosted}}));
  WMBT_ASSIGN_OR_RETURN(
      o.payload_signing,
      Choice<S3PayloadSigning>("WMBT_KV_S3_PAYLOAD_SIGNING", config.s3_payload_signing,
                               {{"auto", S3PayloadSigning::kAuto},
                                {"signed", S3PayloadSigning::kSigned},
                                {"unsigned", S3PayloadSigning::kUnsigned}}));
  o.ca_file = config.s3_ca_file;
  o.requests_inflight_max = config.s3_concurrency;
  o.connect_timeout_ms = config.s3_connect_timeout_ms;
  o.request_timeout_ms = config.s3_request_timeout_ms;
  o.retries_max = config.s3_retries;
  return o;
}

Result<std::unique_ptr<S3ObjectStore>> OpenL2FromConfig(const Config& config, const L2Env& env) {
  if (config.s3_bucket.empty() && !config.s3_named.empty()) {
    return Status::FailedPrecondition(
        config.s3_named.front() +
        " is set but WMBT_KV_BUCKET is not, and without a bucket the "
        "blocks would go to the local directory instead of S3: set WMBT_KV_BUCKET (--bucket) to "
        "the bucket's name, or unset the S3 settings to keep them on local disk");
  }
  if (config.s3_bucket.empty()) return std::unique_ptr<S3ObjectStore>();
  if (!config.bad_aws_fallback.empty()) {
    return Status::InvalidArgument(config.bad_aws_fallback +
                                   "; set the WMBT_KV_S3_* variable it stands in for, or fix it");
  }
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
