#include "tools/wombatkv/setting_flags.h"

#include <algorithm>
#include <cctype>

#include "base/setting_text.h"

namespace wombatkv::cli {

std::string SettingFlagName(std::string_view setting) {
  constexpr std::string_view kPrefix = "WMBT_KV_";
  if (setting.starts_with(kPrefix)) setting.remove_prefix(kPrefix.size());
  std::string flag = "--";
  for (char c : setting) {
    flag += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return flag;
}

SettingFlags::SettingFlags(CLI::App& app, const std::set<std::string_view>& skip,
                           const std::string& group) {
  flags_.reserve(AllSettings().size());
  for (const SettingDoc& doc : AllSettings()) {
    if (doc.secret || skip.count(doc.name) > 0) continue;
    Flag& f = flags_.emplace_back(Flag{doc.name, SettingFlagName(doc.name), "", nullptr});
    const std::string help = std::string(doc.meaning) +
                             " Default: " + std::string(doc.default_value) + ". [env " +
                             std::string(doc.name) + "]";
    f.option = app.add_option(f.name, f.value, help)->type_name("VALUE")->group(group);
  }
}

void SettingFlags::AddGiven(std::set<std::string>* settings) const {
  for (const Flag& f : flags_) {
    if (f.option->count() > 0) settings->emplace(f.setting);
  }
}

Status SettingFlags::ApplyTo(Config* config, std::string* flag) const {
  for (const Flag& f : flags_) {
    if (f.option->count() == 0) continue;
    if (Status s = config->Set(f.setting, f.value); !s.ok()) {
      *flag = f.name;
      return SettingGivenAs(s, f.setting, "");  // printed after "--flag: "
    }
  }
  return Status::Ok();
}

}  // namespace wombatkv::cli
