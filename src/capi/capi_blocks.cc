// Blocks through the 1.0 entry points (lookup, get, put-and-publish) and their _ex variants with
// an explicit fingerprint. Each entry point is a Status-returning implementation turned into the
// C return by the status table (status_map.h), inside Guarded.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "capi/capi_internal.h"
#include "store/engine_key_hash.h"

namespace wombatkv::capi {
namespace {

Status Lookup(wmbt_kv_handle* handle, const char* ns_arg, const char* fp_hex,
              const char* const* keys_hex, size_t count, size_t* out_matched) {
  WMBT_RETURN_IF_ERROR(CheckHandle(handle));
  WMBT_RETURN_IF_ERROR(CheckNotNull(out_matched, "out_matched_count"));
  WMBT_RETURN_IF_ERROR(CheckCount(count, limits::kLookupKeysMax, "block_count"));
  WMBT_ASSIGN_OR_RETURN(std::string_view ns, ParseNamespace(handle, ns_arg));
  WMBT_ASSIGN_OR_RETURN(Fingerprint fp, ParseFingerprint(handle, fp_hex));
  WMBT_ASSIGN_OR_RETURN(std::vector<BlockKey> keys, ParseKeys(keys_hex, count, "block_hashes_hex"));
  size_t matched = 0;
  if (!keys.empty()) {
    WMBT_ASSIGN_OR_RETURN(matched, handle->store->LookupPrefix(ns, fp, keys));
    if (matched > keys.size())
      return Status::Internal("lookup matched " + std::to_string(matched) + " of " +
                              std::to_string(keys.size()) + " keys");
  }
  *out_matched = matched;
  return Status::Ok();
}

// The payloads of `count` keys, lent by the store (none for count 0): OK = all present,
// NotFound = a miss, else an error.
Result<Borrow> Fetch(wmbt_kv_handle* handle, const char* ns_arg, const char* fp_hex,
                     const char* const* keys_hex, size_t count) {
  WMBT_RETURN_IF_ERROR(CheckCount(count, limits::kLookupKeysMax, "block_count"));
  WMBT_ASSIGN_OR_RETURN(std::string_view ns, ParseNamespace(handle, ns_arg));
  WMBT_ASSIGN_OR_RETURN(Fingerprint fp, ParseFingerprint(handle, fp_hex));
  WMBT_ASSIGN_OR_RETURN(std::vector<BlockKey> keys, ParseKeys(keys_hex, count, "block_hashes_hex"));
  if (keys.empty()) return Borrow{};
  WMBT_ASSIGN_OR_RETURN(Borrow blocks, handle->store->GetBlocks(ns, fp, keys));
  // Always on: a short or long answer would hand the engine the wrong block's bytes.
  if (blocks.size() != keys.size())
    return Status::Internal("get returned " + std::to_string(blocks.size()) + " payloads for " +
                            std::to_string(keys.size()) + " keys");
  return blocks;
}

// OK = all present (outputs set), NotFound = a miss (outputs untouched), else an error.
Status GetBlocks(wmbt_kv_handle* handle, const char* ns_arg, const char* fp_hex,
                 const char* const* keys_hex, size_t count, const uint8_t*** out_ptrs,
                 const size_t** out_lens, wmbt_kv_borrow** out_borrow) {
  WMBT_RETURN_IF_ERROR(CheckHandle(handle));
  WMBT_RETURN_IF_ERROR(CheckNotNull(out_ptrs, "out_payload_ptrs"));
  WMBT_RETURN_IF_ERROR(CheckNotNull(out_lens, "out_payload_lens"));
  WMBT_RETURN_IF_ERROR(CheckNotNull(out_borrow, "out_borrow"));
  auto borrow = std::make_unique<wmbt_kv_borrow>();
  borrow->store = handle->store;
  WMBT_ASSIGN_OR_RETURN(borrow->blocks, Fetch(handle, ns_arg, fp_hex, keys_hex, count));
  borrow->ptrs.reserve(borrow->blocks.size());
  borrow->lens.reserve(borrow->blocks.size());
  for (size_t i = 0; i < borrow->blocks.size(); ++i) {
    ByteView p = borrow->blocks.payload(i);
    borrow->ptrs.push_back(BorrowedBytes(p.data()));
    borrow->lens.push_back(p.size());
  }
  *out_ptrs = borrow->ptrs.data();
  *out_lens = borrow->lens.data();
  *out_borrow = borrow.release();
  return Status::Ok();
}

// The buffers' ranges [dsts[i], dsts[i] + caps[i]) do not overlap: overlapping ones would get
// bytes that depend on the order of the copies, or the transport (TCP receives in place).
Status CheckNoOverlap(uint8_t* const* dsts, const size_t* caps, size_t count) {
  std::vector<size_t> order;
  for (size_t i = 0; i < count; ++i) {
    if (caps[i] > 0) order.push_back(i);
  }
  auto at = [&](size_t i) { return reinterpret_cast<uintptr_t>(dsts[i]); };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return at(a) < at(b); });
  for (size_t k = 1; k < order.size(); ++k) {
    const size_t a = order[k - 1], b = order[k];
    if (at(b) - at(a) < caps[a]) {
      return Status::InvalidArgument("dsts[" + std::to_string(std::min(a, b)) + "] and dsts[" +
                                     std::to_string(std::max(a, b)) +
                                     "] overlap (given their dst_caps): give each block its own "
                                     "memory");
    }
  }
  return Status::Ok();
}

// As GetBlocks, copying block i into dsts[i] (room for caps[i] bytes). A block larger than its
// buffer is InvalidArgument before anything is copied, with every length in out_lens.
Status GetBlocksInto(wmbt_kv_handle* handle, const char* ns_arg, const char* fp_hex,
                     const char* const* keys_hex, size_t count, uint8_t* const* dsts,
                     const size_t* caps, size_t* out_lens) {
  WMBT_RETURN_IF_ERROR(CheckHandle(handle));
  WMBT_RETURN_IF_ERROR(CheckCount(count, limits::kLookupKeysMax, "block_count"));
  if (count > 0) {
    WMBT_RETURN_IF_ERROR(CheckNotNull(dsts, "dsts"));
    WMBT_RETURN_IF_ERROR(CheckNotNull(caps, "dst_caps"));
    WMBT_RETURN_IF_ERROR(CheckNotNull(out_lens, "out_lens"));
  }
  for (size_t i = 0; i < count; ++i) {
    if (dsts[i] == nullptr && caps[i] != 0)
      return Status::InvalidArgument("dsts[" + std::to_string(i) + "] is NULL with dst_caps[" +
                                     std::to_string(i) + "] = " + std::to_string(caps[i]));
  }
  WMBT_RETURN_IF_ERROR(CheckNoOverlap(dsts, caps, count));
  WMBT_ASSIGN_OR_RETURN(std::string_view ns, ParseNamespace(handle, ns_arg));
  WMBT_ASSIGN_OR_RETURN(Fingerprint fp, ParseFingerprint(handle, fp_hex));
  WMBT_ASSIGN_OR_RETURN(std::vector<BlockKey> keys, ParseKeys(keys_hex, count, "block_hashes_hex"));
  if (keys.empty()) return Status::Ok();
  std::vector<std::span<uint8_t>> buffers(count);
  for (size_t i = 0; i < count; ++i) buffers[i] = {dsts[i], caps[i]};
  // The store writes lengths here, not into out_lens, which only a success or a buffer too
  // small may touch.
  std::vector<size_t> lens(count, 0);
  Status st = handle->store->GetBlocksInto(ns, fp, keys, buffers, lens);
  size_t too_small = count;
  for (size_t i = 0; i < count && st.code() == Code::kInvalidArgument; ++i) {
    if (lens[i] > caps[i]) {
      too_small = i;
      break;
    }
  }
  if (!st.ok() && too_small == count) return st;
  std::copy(lens.begin(), lens.end(), out_lens);
  if (st.ok()) return st;
  return Status::InvalidArgument(
      "dst_caps[" + std::to_string(too_small) + "] = " + std::to_string(caps[too_small]) +
      " bytes is too small for block " + std::to_string(too_small) + " of " +
      std::to_string(lens[too_small]) +
      " bytes: out_lens holds every block's length; grow the buffers and call again");
}

// Stores the blocks as one chain in key order and publishes it (chain id = tip, last writer
// wins). Returns the sum of the payload lengths.
Result<int64_t> PutAndPublish(wmbt_kv_handle* handle, const char* ns_arg,
                              const char* const* keys_hex, const uint8_t* const* payloads,
                              const size_t* lens, size_t count) {
  WMBT_RETURN_IF_ERROR(CheckHandle(handle));
  // The namespace is checked with no blocks too, as lookup and put_blocks_ex check it.
  WMBT_ASSIGN_OR_RETURN(std::string_view ns, ParseNamespace(handle, ns_arg));
  if (count == 0) return int64_t{0};
  WMBT_RETURN_IF_ERROR(CheckCount(count, limits::kBatchBlocksMax, "block_count"));
  WMBT_RETURN_IF_ERROR(CheckNotNull(keys_hex, "block_hashes_hex"));
  WMBT_RETURN_IF_ERROR(CheckNotNull(payloads, "payloads"));
  WMBT_RETURN_IF_ERROR(CheckNotNull(lens, "lens"));
  const Fingerprint& fp = handle->config.fingerprint;
  WMBT_ASSIGN_OR_RETURN(std::vector<BlockKey> keys, ParseKeys(keys_hex, count, "block_hashes_hex"));
  // One chain holds a block once: a repeated key would make the parent links loop. Refused before
  // anything is stored.
  absl::flat_hash_map<BlockKey, size_t, EngineKeyHash> first_at;
  first_at.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    auto [at, fresh] = first_at.try_emplace(keys[i], i);
    if (!fresh) {
      return Status::InvalidArgument("block_hashes_hex[" + std::to_string(i) +
                                     "] repeats block_hashes_hex[" + std::to_string(at->second) +
                                     "]: a chain holds each block once");
    }
  }
  std::vector<BlockPut> blocks(count);
  int64_t total = 0;  // at most kBatchBlocksMax * kBlockBytesMax = 2^44: no overflow
  for (size_t i = 0; i < count; ++i) {
    std::string what = "payloads[" + std::to_string(i) + "]";
    WMBT_ASSIGN_OR_RETURN(blocks[i].payload,
                          ParsePayload(payloads[i], lens[i], limits::kBlockBytesMax, what));
    blocks[i].key = keys[i];
    blocks[i].parent = i == 0 ? BlockKey{} : keys[i - 1];
    total += static_cast<int64_t>(lens[i]);
  }
  WMBT_RETURN_IF_ERROR(handle->store->SaveChain(ns, fp, blocks).status());
  return total;
}

}  // namespace
}  // namespace wombatkv::capi

using wombatkv::capi::CallKind;
using wombatkv::capi::Finish;
using wombatkv::capi::Guarded;

extern "C" {

int32_t wmbt_kv_lookup_block_prefix(wmbt_kv_handle_t* handle, const char* namespace_,
                                    const char* const* block_hashes_hex, size_t block_count,
                                    size_t* out_matched_count, char* err_buf, size_t err_len) {
  return Guarded("wmbt_kv_lookup_block_prefix", int32_t{-1}, err_buf, err_len, [&] {
    return Finish(wombatkv::capi::Lookup(handle, namespace_, nullptr, block_hashes_hex,
                                         block_count, out_matched_count),
                  CallKind::kPlain);
  });
}

int32_t wmbt_kv_lookup_block_prefix_ex(wmbt_kv_handle_t* handle, const char* namespace_,
                                       const char* fingerprint_hex,
                                       const char* const* block_hashes_hex, size_t block_count,
                                       size_t* out_matched_count, char* err_buf, size_t err_len) {
  return Guarded("wmbt_kv_lookup_block_prefix_ex", int32_t{-1}, err_buf, err_len, [&] {
    return Finish(wombatkv::capi::Lookup(handle, namespace_, fingerprint_hex, block_hashes_hex,
                                         block_count, out_matched_count),
                  CallKind::kPlain);
  });
}

int32_t wmbt_kv_get_kv_blocks_borrowed(wmbt_kv_handle_t* handle, const char* namespace_,
                                       const char* const* block_hashes_hex, size_t block_count,
                                       const uint8_t*** out_payload_ptrs,
                                       const size_t** out_payload_lens,
                                       wmbt_kv_borrow_t** out_borrow) {
  return Guarded("wmbt_kv_get_kv_blocks_borrowed", int32_t{-1}, nullptr, 0, [&] {
    return Finish(wombatkv::capi::GetBlocks(handle, namespace_, nullptr, block_hashes_hex,
                                            block_count, out_payload_ptrs, out_payload_lens,
                                            out_borrow),
                  CallKind::kRead);
  });
}

int32_t wmbt_kv_get_kv_blocks_borrowed_ex(wmbt_kv_handle_t* handle, const char* namespace_,
                                          const char* fingerprint_hex,
                                          const char* const* block_hashes_hex, size_t block_count,
                                          const uint8_t*** out_payload_ptrs,
                                          const size_t** out_payload_lens,
                                          wmbt_kv_borrow_t** out_borrow, char* err_buf,
                                          size_t err_len) {
  return Guarded("wmbt_kv_get_kv_blocks_borrowed_ex", int32_t{-1}, err_buf, err_len, [&] {
    return Finish(wombatkv::capi::GetBlocks(handle, namespace_, fingerprint_hex, block_hashes_hex,
                                            block_count, out_payload_ptrs, out_payload_lens,
                                            out_borrow),
                  CallKind::kRead);
  });
}

int32_t wmbt_kv_get_kv_blocks_into(wmbt_kv_handle_t* handle, const char* namespace_,
                                   const char* fingerprint_hex, const char* const* block_hashes_hex,
                                   size_t block_count, uint8_t* const* dsts, const size_t* dst_caps,
                                   size_t* out_lens, char* err_buf, size_t err_len) {
  return Guarded("wmbt_kv_get_kv_blocks_into", int32_t{-1}, err_buf, err_len, [&] {
    return Finish(
        wombatkv::capi::GetBlocksInto(handle, namespace_, fingerprint_hex, block_hashes_hex,
                                      block_count, dsts, dst_caps, out_lens),
        CallKind::kRead);
  });
}

int64_t wmbt_kv_put_kv_blocks(wmbt_kv_handle_t* handle, const char* namespace_,
                              const char* const* block_hashes_hex, const uint8_t* const* payloads,
                              const size_t* lens, size_t block_count) {
  return Guarded("wmbt_kv_put_kv_blocks", int64_t{-1}, nullptr, 0, [&]() -> int64_t {
    auto r = wombatkv::capi::PutAndPublish(handle, namespace_, block_hashes_hex, payloads, lens,
                                           block_count);
    if (!r.ok()) return Finish(r.status(), CallKind::kPlain);
    return *r;
  });
}

}  // extern "C"
