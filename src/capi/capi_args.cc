// Argument checks with the ABI's rules. Every error names the argument (and index) at fault.
#include <cstring>
#include <string>

#include "capi/capi_internal.h"

namespace wombatkv::capi {
namespace {

// Hex arguments are read up to this many characters: enough to report "too long" without
// walking an unterminated buffer to the end of memory.
constexpr size_t kHexScanCharsMax = 256;

template <typename T>
Result<T> ParseHex(const char* hex, std::string_view what) {
  if (hex == nullptr) return Status::InvalidArgument(std::string(what) + " is NULL");
  return T::FromHex(std::string_view(hex, strnlen(hex, kHexScanCharsMax)), what);
}

}  // namespace

Status CheckNotNull(const void* p, const char* what) {
  if (p != nullptr) return Status::Ok();
  return Status::InvalidArgument(std::string(what) + " is NULL");
}

Status CheckHandle(const wmbt_kv_handle* handle) {
  if (handle == nullptr) return Status::InvalidArgument("handle is NULL");
  if (!handle->store) return Status::FailedPrecondition("handle has no open store");
  if (handle->fork_generation != ForkGeneration()) {
    return Status::FailedPrecondition(
        "this handle was opened by process " + std::to_string(handle->opener_pid) +
        ", and this process is a fork of it: a handle cannot cross fork() (its store, socket and "
        "shared memory stay the parent's); open a new handle in this process");
  }
  return Status::Ok();
}

Status CheckCount(size_t count, size_t max, const char* what) {
  if (count <= max) return Status::Ok();
  return Status::InvalidArgument(std::string(what) + " = " + std::to_string(count) +
                                 " exceeds the limit of " + std::to_string(max) +
                                 " per call; split the batch");
}

Result<BlockKey> ParseKey(const char* hex, std::string_view what) {
  return ParseHex<BlockKey>(hex, what);
}

Result<std::vector<BlockKey>> ParseKeys(const char* const* keys, size_t count, const char* what) {
  std::vector<BlockKey> out;
  if (count == 0) return out;
  WMBT_RETURN_IF_ERROR(CheckNotNull(keys, what));
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    auto key = ParseKey(keys[i], what);
    if (!key.ok()) {  // again, for an error naming the index (no name built per good key)
      return ParseKey(keys[i], std::string(what) + "[" + std::to_string(i) + "]").status();
    }
    out.push_back(*key);
  }
  return out;
}

Result<Fingerprint> ParseFingerprint(const wmbt_kv_handle* handle, const char* hex) {
  if (hex == nullptr) return handle->config.fingerprint;
  return ParseHex<Fingerprint>(hex, "fingerprint_hex");
}

Result<ContentHash> ParseContentHash(const char* hex, std::string_view what) {
  return ParseHex<ContentHash>(hex, what);
}

Result<std::string_view> ParseNamespace(const wmbt_kv_handle* handle, const char* ns) {
  if (ns == nullptr || ns[0] == '\0') return std::string_view(handle->config.ns);
  std::string_view v(ns, strnlen(ns, limits::kNamespaceBytesMax + 1));
  WMBT_RETURN_IF_ERROR(ValidateNamespace(v));
  return v;
}

Result<ByteView> ParsePayload(const uint8_t* data, size_t len, uint64_t max,
                              std::string_view what) {
  if (len > max)
    return Status::InvalidArgument(std::string(what) + " is " + std::to_string(len) +
                                   " bytes, more than the limit of " + std::to_string(max));
  if (len == 0) return ByteView();
  if (data == nullptr)
    return Status::InvalidArgument(std::string(what) + " is NULL with length " +
                                   std::to_string(len));
  return ByteView(data, len);
}

}  // namespace wombatkv::capi
