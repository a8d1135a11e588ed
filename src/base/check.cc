#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace wombatkv {
void CheckFailed(const char* file, int line, const char* expr, const char* msg) {
  std::fprintf(stderr, "wombatkv: check failed at %s:%d: %s%s%s\n", file, line, expr,
               msg ? " — " : "", msg ? msg : "");
  std::abort();
}
}  // namespace wombatkv
