// Sidecars ("raw tails"): bytes keyed by a chain tip, independent of the chain head (G7).
#include <string>

#include "capi/capi_internal.h"

namespace wombatkv::capi {
namespace {

Status PutRawTail(wmbt_kv_handle* handle, const char* ns_arg, const char* fp_hex,
                  const char* tip_hex, const uint8_t* bytes, size_t len) {
  WMBT_RETURN_IF_ERROR(CheckHandle(handle));
  WMBT_ASSIGN_OR_RETURN(std::string_view ns, ParseNamespace(handle, ns_arg));
  WMBT_ASSIGN_OR_RETURN(Fingerprint fp, ParseFingerprint(handle, fp_hex));
  WMBT_ASSIGN_OR_RETURN(BlockKey tip, ParseKey(tip_hex, "chain_tip_hash_hex"));
  WMBT_ASSIGN_OR_RETURN(ByteView payload,
                        ParsePayload(bytes, len, limits::kSidecarBytesMax, "bytes"));
  return handle->store->PutSidecar(ns, fp, tip, payload);
}

// OK = hit (outputs set), NotFound = miss (outputs untouched), else an error.
Status GetRawTail(wmbt_kv_handle* handle, const char* ns_arg, const char* fp_hex,
                  const char* tip_hex, const uint8_t** out_bytes, size_t* out_len,
                  wmbt_kv_borrow** out_borrow) {
  WMBT_RETURN_IF_ERROR(CheckHandle(handle));
  WMBT_RETURN_IF_ERROR(CheckNotNull(out_bytes, "out_bytes"));
  WMBT_RETURN_IF_ERROR(CheckNotNull(out_len, "out_len"));
  WMBT_RETURN_IF_ERROR(CheckNotNull(out_borrow, "out_borrow"));
  WMBT_ASSIGN_OR_RETURN(std::string_view ns, ParseNamespace(handle, ns_arg));
  WMBT_ASSIGN_OR_RETURN(Fingerprint fp, ParseFingerprint(handle, fp_hex));
  WMBT_ASSIGN_OR_RETURN(BlockKey tip, ParseKey(tip_hex, "chain_tip_hash_hex"));
  auto borrow = std::make_unique<wmbt_kv_borrow>();
  borrow->store = handle->store;
  WMBT_ASSIGN_OR_RETURN(borrow->single, handle->store->GetSidecar(ns, fp, tip));
  *out_bytes = BorrowedBytes(borrow->single.data);
  *out_len = borrow->single.size;
  *out_borrow = borrow.release();
  return Status::Ok();
}

}  // namespace
}  // namespace wombatkv::capi

using wombatkv::capi::CallKind;
using wombatkv::capi::Finish;
using wombatkv::capi::Guarded;

extern "C" {

int32_t wmbt_kv_put_raw_tail(wmbt_kv_handle_t* handle, const char* namespace_,
                             const char* chain_tip_hash_hex, const uint8_t* bytes, size_t len,
                             char* err_buf, size_t err_len) {
  return Guarded("wmbt_kv_put_raw_tail", int32_t{-1}, err_buf, err_len, [&] {
    return Finish(
        wombatkv::capi::PutRawTail(handle, namespace_, nullptr, chain_tip_hash_hex, bytes, len),
        CallKind::kPlain);
  });
}

int32_t wmbt_kv_put_raw_tail_ex(wmbt_kv_handle_t* handle, const char* namespace_,
                                const char* fingerprint_hex, const char* chain_tip_hash_hex,
                                const uint8_t* bytes, size_t len, char* err_buf, size_t err_len) {
  return Guarded("wmbt_kv_put_raw_tail_ex", int32_t{-1}, err_buf, err_len, [&] {
    return Finish(wombatkv::capi::PutRawTail(handle, namespace_, fingerprint_hex,
                                             chain_tip_hash_hex, bytes, len),
                  CallKind::kPlain);
  });
}

int32_t wmbt_kv_get_raw_tail_borrowed(wmbt_kv_handle_t* handle, const char* namespace_,
                                      const char* chain_tip_hash_hex, const uint8_t** out_bytes,
                                      size_t* out_len, wmbt_kv_borrow_t** out_borrow,
                                      char* err_buf, size_t err_len) {
  return Guarded("wmbt_kv_get_raw_tail_borrowed", int32_t{-1}, err_buf, err_len, [&] {
    return Finish(wombatkv::capi::GetRawTail(handle, namespace_, nullptr, chain_tip_hash_hex,
                                             out_bytes, out_len, out_borrow),
                  CallKind::kRead);
  });
}

int32_t wmbt_kv_get_raw_tail_borrowed_ex(wmbt_kv_handle_t* handle, const char* namespace_,
                                         const char* fingerprint_hex,
                                         const char* chain_tip_hash_hex,
                                         const uint8_t** out_bytes, size_t* out_len,
                                         wmbt_kv_borrow_t** out_borrow, char* err_buf,
                                         size_t err_len) {
  return Guarded("wmbt_kv_get_raw_tail_borrowed_ex", int32_t{-1}, err_buf, err_len, [&] {
    return Finish(wombatkv::capi::GetRawTail(handle, namespace_, fingerprint_hex,
                                             chain_tip_hash_hex, out_bytes, out_len, out_borrow),
                  CallKind::kRead);
  });
}

}  // extern "C"
