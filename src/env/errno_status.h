// Status from an errno, for the POSIX implementations of the environment.
#pragma once

#include <string>
#include <string_view>

#include "wombatkv/status.h"

namespace wombatkv {

// strerror_r's text for `err`.
std::string ErrnoText(int err);

// "<op> <path>: <text>", its code chosen by what the caller does next (status.h): NotFound for
// a missing path, ResourceExhausted for a full disk, Unavailable for a transient error, ...
Status ErrnoStatus(int err, std::string_view op, const std::string& path);

}  // namespace wombatkv
