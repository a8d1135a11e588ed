// Fuzzes configuration parsing: Config::FromLookup over a fake environment (EnvLookup), Config::Set,
// and ParseByteSize. The environment is not a network input, but it is text a user or a deployment
// template supplies, and the daemon (issue 4) will take the same settings from its command line.
//
// The first input byte picks the mode. Properties:
//   env       FromLookup never crashes; with no AWS_* fallback variables it succeeds iff applying
//             every set WMBT_KV_* variable with Set() in table order succeeds, and then both give
//             the same Describe(). Secret values (S3 keys, also through the AWS_* fallbacks) never
//             appear in Describe() or in any error message.
//   set       Set() on any name/value never crashes; an unknown name is InvalidArgument; a setting
//             agrees with the validator the store applies to the same value (namespace, fingerprint,
//             L2 prefix); a value Set() accepts shows up unchanged in Describe() (non-secrets).
//   bytesize  ParseByteSize agrees with an independent implementation (digits, optional K/M/G/T
//             with optional B or iB in any case, overflow rejected).
#include <cstdint>
#include <map>
#include <string>

#include "config/config.h"
#include "fuzz_util.h"
#include "layout/object_keys.h"

using namespace wombatkv;

namespace {

// Marks secret values; stripped from every non-secret value so a match can only be a leak.
constexpr std::string_view kSentinel = "\xffSECRET";

bool IsSecretVar(std::string_view name) {
  return name == "WMBT_KV_S3_ACCESS_KEY" || name == "WMBT_KV_S3_SECRET_KEY" ||
         name == "AWS_ACCESS_KEY_ID" || name == "AWS_SECRET_ACCESS_KEY";
}

std::string NonSecret(std::string v) {
  std::erase(v, '\xff');
  return v;
}

std::vector<std::string> VarNames() {
  std::vector<std::string> names;
  for (const SettingDoc& d : AllSettings()) names.emplace_back(d.name);
  for (const char* n : {"HOME", "AWS_ENDPOINT_URL", "AWS_REGION", "AWS_ACCESS_KEY_ID",
                        "AWS_SECRET_ACCESS_KEY", "AWS_CA_BUNDLE"})
    names.emplace_back(n);
  return names;
}

bool HasSentinel(std::string_view s) { return s.find(kSentinel) != std::string_view::npos; }

std::optional<uint64_t> OracleByteSize(std::string_view t) {
  size_t d = 0;
  while (d < t.size() && t[d] >= '0' && t[d] <= '9') ++d;
  if (d == 0) return std::nullopt;
  unsigned __int128 n = 0;
  for (size_t i = 0; i < d; ++i) {
    n = n * 10 + static_cast<unsigned>(t[i] - '0');
    if (n > UINT64_MAX) return std::nullopt;
  }
  std::string s = fuzz::Lower(t.substr(d));
  unsigned shift = 0;
  if (!s.empty()) {
    const std::string_view units = "kmgt";
    const size_t u = units.find(s[0]);
    if (u == std::string_view::npos) return std::nullopt;
    std::string_view rest = std::string_view(s).substr(1);
    if (!(rest.empty() || rest == "b" || rest == "ib")) return std::nullopt;
    shift = 10 * static_cast<unsigned>(u + 1);
  }
  n <<= shift;
  if (n > UINT64_MAX) return std::nullopt;
  return static_cast<uint64_t>(n);
}

void EnvMode(FuzzedDataProvider& in) {
  static const std::vector<std::string> names = VarNames();
  std::map<std::string, std::string> env;
  const size_t count = in.ConsumeIntegralInRange<size_t>(0, 8);
  for (size_t i = 0; i < count && in.remaining_bytes() > 0; ++i) {
    std::string name = in.ConsumeIntegralInRange<uint8_t>(0, 15) == 0
                           ? NonSecret(in.ConsumeRandomLengthString(24))
                           : names[in.ConsumeIntegralInRange<size_t>(0, names.size() - 1)];
    std::string value = NonSecret(in.ConsumeRandomLengthString(300));
    if (IsSecretVar(name) && !value.empty()) value = std::string(kSentinel) + value;
    env[name] = value;
  }
  EnvLookup lookup = [&env](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  auto c = Config::FromLookup(lookup);
  if (c.ok()) {
    FUZZ_CHECK(!HasSentinel(c->Describe()));
  } else {
    FUZZ_CHECK(c.status().code() == Code::kInvalidArgument);
    FUZZ_CHECK(!HasSentinel(c.status().message()));
  }

  bool aws = false;
  for (const auto& [name, value] : env) aws = aws || (name.starts_with("AWS_") && !value.empty());
  if (aws) return;
  Config d = Config::Defaults(lookup);
  bool all_ok = true;
  for (const SettingDoc& s : AllSettings()) {
    auto v = lookup(std::string(s.name).c_str());
    if (!v || v->empty()) continue;
    Status st = d.Set(s.name, *v);
    FUZZ_CHECK(!HasSentinel(st.message()));
    if (!st.ok()) {
      all_ok = false;
      break;
    }
  }
  FUZZ_CHECK(c.ok() == all_ok);
  if (c.ok()) FUZZ_CHECK(c->Describe() == d.Describe());
}

void SetMode(FuzzedDataProvider& in) {
  static const std::vector<std::string> names = VarNames();
  const bool known = in.ConsumeIntegralInRange<uint8_t>(0, 7) != 0;
  const std::string name = known ? names[in.ConsumeIntegralInRange<size_t>(0, names.size() - 1)]
                                 : NonSecret(in.ConsumeRandomLengthString(32));
  std::string value = NonSecret(in.ConsumeRemainingBytesAsString());
  if (IsSecretVar(name) && !value.empty()) value = std::string(kSentinel) + value;
  Config c = Config::Defaults([](const char*) { return std::optional<std::string>(); });
  Status st = c.Set(name, value);
  FUZZ_CHECK(!HasSentinel(st.message()));
  FUZZ_CHECK(!HasSentinel(c.Describe()));
  bool is_setting = false;
  for (const SettingDoc& s : AllSettings()) is_setting = is_setting || s.name == name;
  if (!is_setting) FUZZ_CHECK(!st.ok() && st.code() == Code::kInvalidArgument);
  if (!st.ok()) FUZZ_CHECK(st.code() == Code::kInvalidArgument);

  if (name == "WMBT_KV_NAMESPACE") FUZZ_CHECK(st.ok() == ValidateNamespace(value).ok());
  if (name == "WMBT_KV_FINGERPRINT") FUZZ_CHECK(st.ok() == Fingerprint::FromHex(value).ok());
  // The store opens its L2 with layout::ValidateL2Prefix: a prefix the configuration accepts must
  // be one the store accepts.
  if (name == "WMBT_KV_S3_PREFIX") FUZZ_CHECK(st.ok() == layout::ValidateL2Prefix(value).ok());
  if (st.ok() && !IsSecretVar(name) && !value.empty() && value.find('\n') == std::string::npos) {
    // Describe shows the setting as a value Set accepts and that means the same: setting the
    // described text on fresh defaults describes identically. (Durations and sizes are shown
    // normalised, e.g. "1h" as "3600s", so the text itself may differ from `value`.)
    const std::string all = c.Describe();
    const size_t at = all.find(name + "=");
    FUZZ_CHECK(at != std::string::npos);
    const size_t begin = at + name.size() + 1;
    const std::string shown = all.substr(begin, all.find('\n', begin) - begin);
    Config again = Config::Defaults([](const char*) { return std::optional<std::string>(); });
    FUZZ_CHECK(again.Set(name, shown).ok());
    FUZZ_CHECK(again.Describe() == all);
  }
}

void ByteSizeMode(FuzzedDataProvider& in) {
  const std::string text = in.ConsumeRemainingBytesAsString();
  FUZZ_CHECK(ParseByteSize(text) == OracleByteSize(text));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  switch (in.ConsumeIntegral<uint8_t>() % 3) {
    case 0: EnvMode(in); break;
    case 1: SetMode(in); break;
    default: ByteSizeMode(in); break;
  }
  return 0;
}
