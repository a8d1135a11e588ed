// Text helpers shared by the tables of WMBT_KV_* settings (config/config.cc for the store and its
// clients, daemon/daemon_settings.cc for wombatkvd): both parse a number the same way, fail with
// one message shape, and read the process environment through the same lookup.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "wombatkv/status.h"

namespace wombatkv {

// A decimal integer that fits in 64 bits: digits only (no sign, space or suffix), at least one.
std::optional<uint64_t> ParseUint(std::string_view text);

// A switch: "1" or "true" sets `out`, "0" or "false" clears it; anything else is InvalidSetting
// naming `name` ("0 or 1") and leaves `out` alone.
Status SetSwitch(std::string_view name, bool& out, std::string_view value);

// InvalidArgument: NAME="VALUE" is not valid: expected EXPECTED. The value is cut to 120 characters
// ("..." marks the cut) so a pasted blob cannot flood a log; a secret is never echoed.
Status InvalidSetting(std::string_view name, std::string_view value, std::string_view expected,
                      bool secret = false);

// An InvalidSetting of `name` for a value that did not come from the variable (a flag, a
// function's argument): `NAME="v" is not valid: ...` reads `<given_as> "v" is not valid: ...
// (setting NAME)` (no `<given_as> ` when it is empty). Any other status is returned as it is.
Status SettingGivenAs(const Status& s, std::string_view name, std::string_view given_as);

// The process environment (getenv): the value of `name`, nullopt when unset. Not safe against a
// concurrent setenv (a POSIX rule, not ours).
std::optional<std::string> ProcessEnv(const char* name);

}  // namespace wombatkv
