// Shared pieces of the C ABI implementation (include/wombatkv.h): the handle and borrow structs,
// the per-thread last error, the one exception-catching wrapper every entry point runs in, and
// argument parsing with the ABI's rules (exact hex, NULL checks, bounded counts).
//
// Every exported function has the shape
//   int32_t wmbt_kv_x(..., char* err_buf, size_t err_len) {
//     return Guarded("wmbt_kv_x", int32_t{-1}, err_buf, err_len, [&]() -> int32_t { ... });
//   }
// Inside the body, a failure is `return Fail(status)` (sets last_error, converts to -1/NULL) and
// a Store result is turned into the C return by `Finish(status, kind)` (status_map.h).
//
// Thread-safety: the last error is thread-local; handles and borrows are documented in the
// public header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/limits.h"
#include "capi/status_map.h"
#include "config/config.h"
#include "wombatkv.h"
#include "wombatkv/store.h"

namespace wombatkv::capi {
// Which copy of the process this is: 0 until it forks; each fork() gives the child the next value
// (a pthread_atfork handler, registered by the first call). A handle or borrow remembers the value
// it was made under, and works only there (capi_handle.cc: a forked child refuses them).
uint64_t ForkGeneration() noexcept;
}  // namespace wombatkv::capi

// One open store. Immutable after open, so any number of threads may share it (Store is
// thread-safe).
struct wmbt_kv_handle {
  wombatkv::Config config;
  std::shared_ptr<wombatkv::Store> store;
  uint64_t fork_generation = wombatkv::capi::ForkGeneration();
  int opener_pid = 0;  // for the message a forked child gets
};

// Lent bytes. Holds the store (declared first, so destroyed last) so that the bytes and any pins
// stay valid even if the handle is freed before the borrow is released.
// A buffer the engine fills and then hands to the store (zero-copy put).
struct wmbt_kv_payload {
  std::shared_ptr<wombatkv::Buffer> buffer;
};

struct wmbt_kv_borrow {
  std::shared_ptr<wombatkv::Store> store;
  uint64_t fork_generation = wombatkv::capi::ForkGeneration();
  wombatkv::Borrow blocks;      // get_kv_blocks
  wombatkv::BufferSlice single; // raw tail, content-hash get
  std::vector<const uint8_t*> ptrs;
  std::vector<size_t> lens;
};

namespace wombatkv::capi {

// A pointer handed to the engine for borrowed bytes: never NULL, also for an empty payload, so
// that every mode answers alike (a transport may represent empty bytes without an address).
inline const uint8_t* BorrowedBytes(const uint8_t* p) {
  static constexpr uint8_t kEmpty = 0;
  return p != nullptr ? p : &kEmpty;
}

// ---- Per-thread last error (capi_errors.cc). None of these allocate or throw. ----

// Starts a call: clears the last error and remembers the function name for messages.
void BeginCall(const char* fn) noexcept;
// Copies the last error ("" if none) into err_buf, truncated and NUL-terminated. Ends the call.
void EndCall(char* err_buf, size_t err_len) noexcept;
// Sets the last error to "wombatkv: <fn>: <CODE>: <message>".
void SetLastError(const Status& status) noexcept;
// For catch blocks, without allocating: "wombatkv: <fn>: <CODE>: <what>", with
// "internal error: " before <what> when `code` is kInternal.
void SetLastErrorRaw(Code code, const char* what) noexcept;
bool HasLastError() noexcept;
const char* LastError() noexcept;

// Converts to the error value of any C return type: -1 for integers, NULL for pointers.
struct ErrorValue {
  template <typename R>
  constexpr operator R() const {  // NOLINT(google-explicit-constructor)
    if constexpr (std::is_pointer_v<R>) {
      return nullptr;
    } else {
      return static_cast<R>(-1);
    }
  }
};

// Records `status` (REQUIRES: not OK) as the last error; returns the error value.
inline ErrorValue Fail(const Status& status) {
  SetLastError(status);
  return {};
}

// The C return for a Store result (status_map.h); records the status if that return is -1.
int32_t Finish(const Status& status, CallKind kind) noexcept;

// Runs `body` as the C entry point `fn`: clears the last error first, never lets an exception
// out (std::bad_alloc → RESOURCE_EXHAUSTED, anything else → INTERNAL "internal error"), and
// copies the outcome into err_buf. Returns body()'s value, or `error_value` if it threw.
template <typename R, typename Body>
R Guarded(const char* fn, R error_value, char* err_buf, size_t err_len, Body&& body) noexcept {
  BeginCall(fn);
  R result = error_value;
  try {
    result = body();
  } catch (const std::bad_alloc&) {
    SetLastErrorRaw(Code::kResourceExhausted, "out of memory");
    result = error_value;
  } catch (const std::exception& e) {
    SetLastErrorRaw(Code::kInternal, e.what());
    result = error_value;
  } catch (...) {
    SetLastErrorRaw(Code::kInternal, "unknown exception");
    result = error_value;
  }
  // Invariant of the ABI: an error return always explains itself. (Unsigned returns, the CRCs,
  // have no value reserved for errors.)
  if constexpr (std::is_pointer_v<R> || std::is_signed_v<R>) {
    if (result == error_value && !HasLastError())
      SetLastErrorRaw(Code::kInternal, "failed without a message (a bug in the C ABI layer)");
  }
  EndCall(err_buf, err_len);
  return result;
}

// ---- Arguments (capi_args.cc) ----

// InvalidArgument "<what> is NULL" unless p is non-NULL.
Status CheckNotNull(const void* p, const char* what);
// The handle must be non-NULL, open, and opened by this process (not inherited through fork).
Status CheckHandle(const wmbt_kv_handle* handle);
// ResourceExhausted/InvalidArgument naming `what` if count > max. Checked before any array is
// read, so a garbage count never walks off an array.
Status CheckCount(size_t count, size_t max, const char* what);
// A block key, chain id or tip: exactly 64 hex digits. `what` names the argument in errors
// (e.g. "block_hashes_hex[3]").
Result<BlockKey> ParseKey(const char* hex, std::string_view what);
// keys[0..count) as block keys; REQUIRES: count checked with CheckCount. NULL array with
// count > 0 is an error.
Result<std::vector<BlockKey>> ParseKeys(const char* const* keys, size_t count, const char* what);
// 24 hex digits; NULL = the handle's default fingerprint.
Result<Fingerprint> ParseFingerprint(const wmbt_kv_handle* handle, const char* hex);
// 40 hex digits.
Result<ContentHash> ParseContentHash(const char* hex, std::string_view what);
// NULL or "" = the handle's default namespace; otherwise validated.
Result<std::string_view> ParseNamespace(const wmbt_kv_handle* handle, const char* ns);
// A payload pointer/length pair: NULL only with length 0, at most `max` bytes.
Result<ByteView> ParsePayload(const uint8_t* data, size_t len, uint64_t max, std::string_view what);

// Opens an embedded store with `config` (capi_handle.cc).
Result<std::unique_ptr<wmbt_kv_handle>> OpenEmbedded(const Config& config);

}  // namespace wombatkv::capi
