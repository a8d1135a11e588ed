// SettingFlags: a command-line flag for each Config setting (SPEC §9: every new WMBT_KV_* setting
// is also a flag of wombatkvd and wombatkv), shared by both tools so that a setting has the same
// flag, help and parsing in each.
//
// A setting's flag is its variable without "WMBT_KV_", in lower case, '_' -> '-':
// WMBT_KV_S3_PREFIX -> --s3-prefix. Its help is its row of the configuration table (meaning and
// default, config/config.h AllSettings()) and names the variable. A flag given is applied with
// Config::Set after the environment was read, so it parses exactly as the variable does and
// overrides it. Secret settings (S3 keys, the client's auth token) get no flag: a command line is
// visible to every local user (ps); they stay variables.
//
// Thread-safety: none needed (a tool's main thread).
#pragma once

#include <CLI/CLI.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "wombatkv/status.h"

namespace wombatkv::cli {

// "WMBT_KV_S3_PREFIX" -> "--s3-prefix".
std::string SettingFlagName(std::string_view setting);

class SettingFlags {
 public:
  // Adds to `app`, under `group` in its help, a flag for every setting of AllSettings() that is
  // not secret and not in `skip` (settings the tool has a flag of its own for, or ignores).
  SettingFlags(CLI::App& app, const std::set<std::string_view>& skip, const std::string& group);
  SettingFlags(const SettingFlags&) = delete;  // the App holds pointers into flags_
  SettingFlags& operator=(const SettingFlags&) = delete;

  // Applies the flags given on the command line to `config`. On a value that does not parse,
  // returns Config::Set's error and sets `*flag` to the flag's name.
  Status ApplyTo(Config* config, std::string* flag) const;
  // Adds to `settings` the name of each setting a flag was given for.
  void AddGiven(std::set<std::string>* settings) const;

 private:
  struct Flag {
    std::string_view setting;
    std::string name;
    std::string value;
    CLI::Option* option = nullptr;
  };
  std::vector<Flag> flags_;  // reserved up front: CLI11 keeps a pointer to each `value`
};

}  // namespace wombatkv::cli
