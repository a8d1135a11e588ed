// The per-thread last error and the Store→C return mapping. The error text lives in a fixed
// thread-local buffer: setting it never allocates, so it also works while handling bad_alloc.
#include <cstdio>
#include <cstring>

#include "capi/capi_internal.h"

namespace wombatkv::capi {
namespace {

constexpr size_t kLastErrorBytesMax = 2048;  // longer messages are truncated
thread_local char t_last_error[kLastErrorBytesMax];
thread_local const char* t_function = "wmbt_kv";

void Format(const char* code_name, const char* message, size_t message_len) noexcept {
  int n = std::snprintf(t_last_error, sizeof t_last_error, "wombatkv: %s: %s: ", t_function,
                        code_name);
  if (n < 0) n = 0;
  size_t used = static_cast<size_t>(n) < sizeof t_last_error ? static_cast<size_t>(n)
                                                              : sizeof t_last_error - 1;
  size_t room = sizeof t_last_error - 1 - used;
  size_t copy = message_len < room ? message_len : room;
  std::memcpy(t_last_error + used, message, copy);
  t_last_error[used + copy] = '\0';
}

}  // namespace

void BeginCall(const char* fn) noexcept {
  t_last_error[0] = '\0';
  t_function = fn;
}

void EndCall(char* err_buf, size_t err_len) noexcept {
  if (err_buf != nullptr && err_len > 0) {
    size_t n = std::strlen(t_last_error);
    if (n > err_len - 1) n = err_len - 1;
    std::memcpy(err_buf, t_last_error, n);
    err_buf[n] = '\0';
  }
}

void SetLastError(const Status& status) noexcept {
  std::string_view name = CodeName(status.code());
  char code_name[32];
  size_t n = name.size() < sizeof code_name - 1 ? name.size() : sizeof code_name - 1;
  std::memcpy(code_name, name.data(), n);
  code_name[n] = '\0';
  Format(code_name, status.message().data(), status.message().size());
}

void SetLastErrorRaw(const char* code_name, const char* what) noexcept {
  char message[512];
  bool internal = std::strcmp(code_name, "INTERNAL") == 0;
  std::snprintf(message, sizeof message, "%s%s", internal ? "internal error: " : "",
                what ? what : "(null)");
  Format(code_name, message, std::strlen(message));
}

bool HasLastError() noexcept { return t_last_error[0] != '\0'; }

const char* LastError() noexcept { return t_last_error; }

int32_t Finish(const Status& status, CallKind kind) noexcept {
  int32_t r = CReturnFor(status.code(), kind);
  if (r == -1) SetLastError(status.ok() ? Status::Internal("OK mapped to an error") : status);
  return r;
}

}  // namespace wombatkv::capi

extern "C" const char* wmbt_kv_last_error(void) { return wombatkv::capi::LastError(); }
