// Status and Result<T>: how every WombatKV operation reports success or failure.
//
// No exceptions cross any WombatKV interface. A Status is OK (cheap: no allocation) or carries a
// Code chosen by what the caller should do next, plus a human-readable message naming what was
// wrong. Result<T> is a value or a non-OK Status.
//
// Thread-safety: values; safe to copy between threads, not to mutate concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace wombatkv {

// Few codes, each chosen by what the caller will do. Their mapping to C ABI return values is one
// table (src/capi/status_map.h), to CLI exit codes another (tools/wombatkv/exit_codes.h), each
// pinned by a test.
enum class Code : uint8_t {
  kOk = 0,
  kNotFound = 1,            // a miss: normal and quiet; the caller recomputes
  kUnavailable = 2,         // transient: retry this call
  kConflict = 3,            // lost a race (CAS, existing object): retry higher up
  kInvalidArgument = 4,     // the request is malformed: fix the caller
  kCorruption = 5,          // stored or transmitted bytes fail their check: never served
  kResourceExhausted = 6,   // a limit or budget was hit
  kFailedPrecondition = 7,  // the system is not in a state to do this (e.g. directory owned)
  kInternal = 8,            // a bug or an unexpected failure
  kPermissionDenied = 9,    // the caller is not allowed to: fix its credentials (auth token)
};

std::string_view CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
  static Status Conflict(std::string m) { return {Code::kConflict, std::move(m)}; }
  static Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status Corruption(std::string m) { return {Code::kCorruption, std::move(m)}; }
  static Status ResourceExhausted(std::string m) {
    return {Code::kResourceExhausted, std::move(m)};
  }
  static Status FailedPrecondition(std::string m) {
    return {Code::kFailedPrecondition, std::move(m)};
  }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }
  static Status PermissionDenied(std::string m) {
    return {Code::kPermissionDenied, std::move(m)};
  }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsConflict() const { return code_ == Code::kConflict; }

  // "CODE: message", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is prefixed with `context: `.
  Status WithContext(std::string_view context) const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// A value of T, or a non-OK Status. Constructing a Result from an OK Status is a bug (checked).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status);                      // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<1>(v_);
  }
  // REQUIRES: ok().
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

[[noreturn]] void DieOnOkStatusInResult();

template <typename T>
Result<T>::Result(Status status) : v_(std::move(status)) {
  if (std::get<1>(v_).ok()) DieOnOkStatusInResult();
}

}  // namespace wombatkv

// Propagation helpers for the core (kept short on purpose).
#define WMBT_RETURN_IF_ERROR(expr)              \
  do {                                          \
    ::wombatkv::Status wmbt_status_ = (expr);   \
    if (!wmbt_status_.ok()) return wmbt_status_; \
  } while (0)

#define WMBT_CONCAT_INNER(a, b) a##b
#define WMBT_CONCAT(a, b) WMBT_CONCAT_INNER(a, b)
#define WMBT_ASSIGN_OR_RETURN(lhs, expr) \
  WMBT_ASSIGN_OR_RETURN_IMPL(WMBT_CONCAT(wmbt_result_, __LINE__), lhs, expr)
#define WMBT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()
