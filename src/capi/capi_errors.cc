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
thread_local int32_t t_last_code = WMBT_KV_ERR_NONE;

// The header's WMBT_KV_ERR_* values are Code's: they never change.
static_assert(WMBT_KV_ERR_NOT_FOUND == static_cast<int>(Code::kNotFound));
static_assert(WMBT_KV_ERR_UNAVAILABLE == static_cast<int>(Code::kUnavailable));
static_assert(WMBT_KV_ERR_CONFLICT == static_cast<int>(Code::kConflict));
static_assert(WMBT_KV_ERR_INVALID_ARGUMENT == static_cast<int>(Code::kInvalidArgument));
static_assert(WMBT_KV_ERR_CORRUPTION == static_cast<int>(Code::kCorruption));
static_assert(WMBT_KV_ERR_RESOURCE_EXHAUSTED == static_cast<int>(Code::kResourceExhausted));
static_assert(WMBT_KV_ERR_FAILED_PRECONDITION == static_cast<int>(Code::kFailedPrecondition));
static_assert(WMBT_KV_ERR_INTERNAL == static_cast<int>(Code::kInternal));
static_assert(WMBT_KV_ERR_PERMISSION_DENIED == static_cast<int>(Code::kPermissionDenied));

// Length of the well-formed UTF-8 sequence of 2–4 bytes at in[0..n), or 0.
size_t Utf8SequenceAt(const unsigned char* in, size_t n) noexcept {
  const unsigned char c = in[0];
  size_t len;
  unsigned char lo = 0x80, hi = 0xbf;  // the second byte's range
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c == 0xe0) lo = 0xa0;  // overlong
    if (c == 0xed) hi = 0x9f;  // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (n < len || in[1] < lo || in[1] > hi) return 0;
  for (size_t i = 2; i < len; ++i) {
    if (in[i] < 0x80 || in[i] > 0xbf) return 0;
  }
  return len;
}

// Copies in[0..n) into out[0..room) as one line of valid UTF-8: control characters and bytes that
// are not well-formed UTF-8 (an engine's binary key echoed in a message) become \xNN. Never cuts
// a character or an escape. Returns the bytes written.
size_t CopyPrintable(char* out, size_t room, const char* in, size_t n) noexcept {
  static constexpr char kHex[] = "0123456789abcdef";
  const auto* u = reinterpret_cast<const unsigned char*>(in);
  size_t used = 0;
  for (size_t i = 0; i < n;) {
    const unsigned char c = u[i];
    size_t len = c >= 0x20 && c < 0x7f ? 1 : c >= 0x80 ? Utf8SequenceAt(u + i, n - i) : 0;
    if (len > 0) {
      if (room - used < len) break;
      std::memcpy(out + used, in + i, len);
      used += len;
      i += len;
      continue;
    }
    if (room - used < 4) break;
    out[used++] = '\\';
    out[used++] = 'x';
    out[used++] = kHex[c >> 4];
    out[used++] = kHex[c & 15];
    ++i;
  }
  return used;
}

void Format(Code code, const char* message, size_t message_len) noexcept {
  // An OK status has no error kind: an error without one is a bug of this layer.
  if (code == Code::kOk) code = Code::kInternal;
  t_last_code = static_cast<int32_t>(code);
  const std::string_view name = CodeName(code);
  int n = std::snprintf(t_last_error, sizeof t_last_error, "wombatkv: %s: %.*s: ", t_function,
                        static_cast<int>(name.size()), name.data());
  if (n < 0) n = 0;
  size_t used = static_cast<size_t>(n) < sizeof t_last_error ? static_cast<size_t>(n)
                                                              : sizeof t_last_error - 1;
  const size_t room = sizeof t_last_error - 1 - used;
  used += CopyPrintable(t_last_error + used, room, message, message_len);
  t_last_error[used] = '\0';
}

}  // namespace

void BeginCall(const char* fn) noexcept {
  t_last_error[0] = '\0';
  t_last_code = WMBT_KV_ERR_NONE;
  t_function = fn;
}

void EndCall(char* err_buf, size_t err_len) noexcept {
  if (err_buf != nullptr && err_len > 0) {
    size_t n = std::strlen(t_last_error);
    if (n > err_len - 1) {
      n = err_len - 1;
      // Not inside a character: back to the start of the one that does not fit.
      while (n > 0 && (static_cast<unsigned char>(t_last_error[n]) & 0xc0) == 0x80) --n;
    }
    std::memcpy(err_buf, t_last_error, n);
    err_buf[n] = '\0';
  }
}

void SetLastError(const Status& status) noexcept {
  Format(status.code(), status.message().data(), status.message().size());
}

void SetLastErrorRaw(Code code, const char* what) noexcept {
  char message[512];
  std::snprintf(message, sizeof message, "%s%s", code == Code::kInternal ? "internal error: " : "",
                what ? what : "(null)");
  Format(code, message, std::strlen(message));
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

extern "C" int32_t wmbt_kv_last_error_code(void) { return wombatkv::capi::t_last_code; }
