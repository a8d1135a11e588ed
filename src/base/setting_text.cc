#include "base/setting_text.h"

#include <charconv>
#include <cstdlib>

namespace wombatkv {

std::optional<uint64_t> ParseUint(std::string_view text) {
  uint64_t v = 0;
  if (text.empty()) return std::nullopt;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

Status InvalidSetting(std::string_view name, std::string_view value, std::string_view expected,
                      bool secret) {
  constexpr size_t kShownMax = 120;
  std::string shown = secret ? std::string("(secret value hidden)")
                             : "\"" + std::string(value.substr(0, kShownMax)) +
                                   (value.size() > kShownMax ? "...\"" : "\"");
  return Status::InvalidArgument(std::string(name) + "=" + shown + " is not valid: expected " +
                                 std::string(expected));
}

Status SetSwitch(std::string_view name, bool& out, std::string_view value) {
  if (value == "1" || value == "true") out = true;
  else if (value == "0" || value == "false") out = false;
  else return InvalidSetting(name, value, "0 or 1");
  return Status::Ok();
}

Status SettingGivenAs(const Status& s, std::string_view name, std::string_view given_as) {
  const std::string prefix = std::string(name) + "=";
  if (s.ok() || !s.message().starts_with(prefix)) return s;
  return Status(s.code(), (given_as.empty() ? "" : std::string(given_as) + " ") +
                              std::string(s.message().substr(prefix.size())) + " (setting " +
                              std::string(name) + ")");
}

std::optional<std::string> ProcessEnv(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

}  // namespace wombatkv
