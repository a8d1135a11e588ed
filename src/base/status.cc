#include "wombatkv/status.h"

#include <cstdio>
#include <cstdlib>

namespace wombatkv {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kNotFound: return "NOT_FOUND";
    case Code::kUnavailable: return "UNAVAILABLE";
    case Code::kConflict: return "CONFLICT";
    case Code::kInvalidArgument: return "INVALID_ARGUMENT";
    case Code::kCorruption: return "CORRUPTION";
    case Code::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case Code::kFailedPrecondition: return "FAILED_PRECONDITION";
    case Code::kInternal: return "INTERNAL";
    case Code::kPermissionDenied: return "PERMISSION_DENIED";
  }
  return "UNKNOWN";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(CodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  return Status(code_, std::move(m));
}

void DieOnOkStatusInResult() {
  std::fprintf(stderr, "wombatkv: BUG: Result constructed from an OK Status\n");
  std::abort();
}

}  // namespace wombatkv
