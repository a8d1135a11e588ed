// The native entry points (1.1, 1.2): fingerprints, explicit chains, CAS publish, content-hash get,
// refresh and stats.
#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/hex.h"
#include "capi/capi_internal.h"
#include "store/stats_fields.h"

namespace wombatkv::capi {
namespace {

// `extra_count` pairs of (name, value), checked before any is read.
Status FingerprintDigest(const char* model_id, const char* tokenizer_id, const char* kv_dtype,
                         uint32_t tp, uint32_t pp, const char* lora,
                         const char* const* extra_names, const char* const* extra_values,
                         size_t extra_count, char* out_hex) {
  WMBT_RETURN_IF_ERROR(CheckNotNull(model_id, "model_id"));
  WMBT_RETURN_IF_ERROR(CheckNotNull(tokenizer_id, "tokenizer_id"));
  WMBT_RETURN_IF_ERROR(CheckNotNull(kv_dtype, "kv_dtype"));
  WMBT_RETURN_IF_ERROR(CheckNotNull(out_hex, "out_hex"));
  if (tp == 0 || pp == 0)
    return Status::InvalidArgument("tp and pp must be at least 1, got tp=" + std::to_string(tp) +
                                   " pp=" + std::to_string(pp));
  FingerprintSpec spec;
  spec.model_id = model_id;
  spec.tokenizer_id = tokenizer_id;
  spec.kv_dtype = kv_dtype;
  spec.tensor_parallel = tp;
  spec.pipeline_parallel = pp;
  spec.lora = lora ? lora : "";
  if (extra_count > limits::kFingerprintExtrasMax)
    return Status::InvalidArgument("extra_count " + std::to_string(extra_count) +
                                   " is over the limit of " +
                                   std::to_string(limits::kFingerprintExtrasMax) + " extras");
  if (extra_count > 0) {
    WMBT_RETURN_IF_ERROR(CheckNotNull(extra_names, "extra_names"));
    WMBT_RETURN_IF_ERROR(CheckNotNull(extra_values, "extra_values"));
  }
  for (size_t i = 0; i < extra_count; ++i) {
    const std::string at = "[" + std::to_string(i) + "]";
    WMBT_RETURN_IF_ERROR(CheckNotNull(extra_names[i], ("extra_names" + at).c_str()));
    WMBT_RETURN_IF_ERROR(CheckNotNull(extra_values[i], ("extra_values" + at).c_str()));
    if (*extra_names[i] == '\0') return Status::InvalidArgument("extra_names" + at + " is empty");
    if (!spec.extras.emplace(extra_names[i], extra_values[i]).second)
      return Status::InvalidArgument("extra_names" + at + " \"" + extra_names[i] +
                                     "\" is given twice");
  }
  Fingerprint fp = spec.Digest();
  HexEncodeTo(fp.bytes, out_hex);
  out_hex[Fingerprint::kHexSize] = '\0';
  return Status::Ok();
}

// Payloads come either as (pointer, length) pairs that the store copies, or as `owned` buffers it
// keeps (zero copy).
Status PutBlocksEx(wmbt_kv_handle* handle, const char* ns_arg, const char* fp_hex,
                   const char* const* keys_hex, const char* const* parents_hex,
                   const uint8_t* const* payloads, const size_t* lens,
                   wmbt_kv_payload* const* owned, size_t count, char* out_hashes) {
  WMBT_RETURN_IF_ERROR(CheckHandle(handle));
  WMBT_ASSIGN_OR_RETURN(std::string_view ns, ParseNamespace(handle, ns_arg));
  WMBT_ASSIGN_OR_RETURN(Fingerprint fp, ParseFingerprint(handle, fp_hex));
  if (count == 0) return Status::Ok();
  WMBT_RETURN_IF_ERROR(CheckCount(count, limits::kBatchBlocksMax, "count"));
  WMBT_RETURN_IF_ERROR(CheckNotNull(keys_hex, "keys_hex"));
  if (owned == nullptr) {
    WMBT_RETURN_IF_ERROR(CheckNotNull(payloads, "payloads"));
    WMBT_RETURN_IF_ERROR(CheckNotNull(lens, "lens"));
  }
  WMBT_ASSIGN_OR_RETURN(std::vector<BlockKey> keys, ParseKeys(keys_hex, count, "keys_hex"));
  std::vector<BlockPut> blocks(count);
  for (size_t i = 0; i < count; ++i) {
    blocks[i].key = keys[i];
    if (parents_hex == nullptr) {
      blocks[i].parent = i == 0 ? BlockKey{} : keys[i - 1];
    } else if (parents_hex[i] != nullptr) {
      WMBT_ASSIGN_OR_RETURN(blocks[i].parent,
                            ParseKey(parents_hex[i], "parent_keys_hex[" + std::to_string(i) + "]"));
    }  // else: a root (zero parent)
    if (owned != nullptr) {
      if (owned[i] == nullptr) {
        return Status::InvalidArgument("payloads[" + std::to_string(i) + "] is NULL");
      }
      const auto& buf = owned[i]->buffer;
      blocks[i].owned = BufferSlice{buf, buf->data(), buf->size()};
      continue;
    }
    WMBT_ASSIGN_OR_RETURN(blocks[i].payload,
                          ParsePayload(payloads[i], lens[i], limits::kBlockBytesMax,
                                       "payloads[" + std::to_string(i) + "]"));
  }
  WMBT_ASSIGN_OR_RETURN(std::vector<ContentHash> hashes, handle->store->PutBlocks(ns, fp, blocks));
  if (hashes.size() != count)
    return Status::Internal("put returned " + std::to_string(hashes.size()) + " hashes for " +
                            std::to_string(count) + " blocks");
  if (out_hashes != nullptr) {
    for (size_t i = 0; i < count; ++i) {
      char* slot = out_hashes + i * WMBT_KV_CONTENT_HASH_HEX_BUF;
      HexEncodeTo(hashes[i].bytes, slot);
      slot[ContentHash::kHexSize] = '\0';
    }
  }
  return Status::Ok();
}

// OK = published, Conflict = CAS lost (current state written to the outputs), else an error.
Status PublishChain(wmbt_kv_handle* handle, const char* ns_arg, const char* fp_hex,
                    const char* chain_id_hex, const char* tip_hex, int64_t expected_version,
                    uint64_t* out_version, char* out_current_tip_hex,
                    uint64_t* out_current_version) {
  WMBT_RETURN_IF_ERROR(CheckHandle(handle));
  WMBT_ASSIGN_OR_RETURN(std::string_view ns, ParseNamespace(handle, ns_arg));
  WMBT_ASSIGN_OR_RETURN(Fingerprint fp, ParseFingerprint(handle, fp_hex));
  WMBT_ASSIGN_OR_RETURN(BlockKey tip, ParseKey(tip_hex, "tip_hex"));
  ChainId chain_id = tip;
  if (chain_id_hex != nullptr) {
    WMBT_ASSIGN_OR_RETURN(chain_id, ParseKey(chain_id_hex, "chain_id_hex"));
  }
  std::optional<uint64_t> expected;
  if (expected_version >= 0) expected = static_cast<uint64_t>(expected_version);
  ChainState current;
  auto version = handle->store->PublishChain(ns, fp, chain_id, tip, expected, &current);
  if (!version.ok()) {
    if (version.status().IsConflict()) {
      if (out_current_tip_hex != nullptr) {
        HexEncodeTo(current.tip.bytes, out_current_tip_hex);
        out_current_tip_hex[BlockKey::kHexSize] = '\0';
      }
      if (out_current_version != nullptr) *out_current_version = current.version;
    }
    return version.status();
  }
  if (out_version != nullptr) *out_version = *version;
  return Status::Ok();
}

// OK = hit (outputs set), NotFound = miss (outputs untouched), else an error.
Status GetByContentHash(wmbt_kv_handle* handle, const char* ns_arg, const char* hash_hex,
                        const uint8_t** out_bytes, size_t* out_len, wmbt_kv_borrow** out_borrow) {
  WMBT_RETURN_IF_ERROR(CheckHandle(handle));
  WMBT_RETURN_IF_ERROR(CheckNotNull(out_bytes, "out_bytes"));
  WMBT_RETURN_IF_ERROR(CheckNotNull(out_len, "out_len"));
  WMBT_RETURN_IF_ERROR(CheckNotNull(out_borrow, "out_borrow"));
  WMBT_ASSIGN_OR_RETURN(std::string_view ns, ParseNamespace(handle, ns_arg));
  WMBT_ASSIGN_OR_RETURN(ContentHash hash, ParseContentHash(hash_hex, "content_hash_hex"));
  auto borrow = std::make_unique<wmbt_kv_borrow>();
  borrow->store = handle->store;
  WMBT_ASSIGN_OR_RETURN(borrow->single, handle->store->GetByContentHash(ns, hash));
  *out_bytes = BorrowedBytes(borrow->single.data);
  *out_len = borrow->single.size;
  *out_borrow = borrow.release();
  return Status::Ok();
}

Status Refresh(wmbt_kv_handle* handle) {
  WMBT_RETURN_IF_ERROR(CheckHandle(handle));
  return handle->store->Refresh().status();
}

Result<std::string> StatsJson(Store& store) {
  // Through a daemon it cannot reach: Unavailable, not zeros that look like a restart.
  WMBT_ASSIGN_OR_RETURN(const StoreStats s, store.TryStats());
  nlohmann::ordered_json j;
  j["abi_version"] = WMBT_KV_ABI_VERSION;
  j["l2"] = store.DescribeL2();
  for (const StoreStatsField& f : kStoreStatsFields) j[f.name] = s.*f.member;
  // A path that is not UTF-8 must not make dump() throw.
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

// Room a retry's JSON gets beyond what the refused call needed: the counters it holds grow in
// between (every one may gain digits), and the retry must not be refused again.
constexpr size_t kStatsRetryHeadroomBytes = 1024;

Status StatsToBuffer(wmbt_kv_handle* handle, char* buf, size_t buf_len, size_t* out_needed) {
  WMBT_RETURN_IF_ERROR(CheckHandle(handle));
  WMBT_ASSIGN_OR_RETURN(const std::string json, StatsJson(*handle->store));
  const size_t needed = json.size() + 1;
  const bool fits = buf != nullptr && buf_len >= needed;
  const size_t retry = needed + kStatsRetryHeadroomBytes;
  if (out_needed != nullptr) *out_needed = fits ? needed : retry;
  if (!fits)
    return Status::ResourceExhausted(
        "buf holds " + std::to_string(buf == nullptr ? 0 : buf_len) + " bytes; the stats JSON is " +
        std::to_string(needed) + " with its NUL now: retry with *out_needed (" +
        std::to_string(retry) + "), which leaves room for the counters to grow meanwhile");
  std::memcpy(buf, json.c_str(), needed);
  return Status::Ok();
}

}  // namespace
}  // namespace wombatkv::capi

using wombatkv::capi::CallKind;
using wombatkv::capi::Finish;
using wombatkv::capi::Guarded;

extern "C" {

int32_t wmbt_kv_fingerprint_digest(const char* model_id, const char* tokenizer_id,
                                   const char* kv_dtype, uint32_t tp, uint32_t pp,
                                   const char* lora, char* out_hex) {
  return Guarded("wmbt_kv_fingerprint_digest", int32_t{-1}, nullptr, 0, [&] {
    return Finish(wombatkv::capi::FingerprintDigest(model_id, tokenizer_id, kv_dtype, tp, pp, lora,
                                                    nullptr, nullptr, 0, out_hex),
                  CallKind::kPlain);
  });
}

int32_t wmbt_kv_fingerprint_digest_extras(const char* model_id, const char* tokenizer_id,
                                          const char* kv_dtype, uint32_t tp, uint32_t pp,
                                          const char* lora, const char* const* extra_names,
                                          const char* const* extra_values, size_t extra_count,
                                          char* out_hex) {
  return Guarded("wmbt_kv_fingerprint_digest_extras", int32_t{-1}, nullptr, 0, [&] {
    return Finish(wombatkv::capi::FingerprintDigest(model_id, tokenizer_id, kv_dtype, tp, pp, lora,
                                                    extra_names, extra_values, extra_count,
                                                    out_hex),
                  CallKind::kPlain);
  });
}

int32_t wmbt_kv_put_blocks_ex(wmbt_kv_handle_t* handle, const char* namespace_,
                              const char* fingerprint_hex, const char* const* keys_hex,
                              const char* const* parent_keys_hex, const uint8_t* const* payloads,
                              const size_t* lens, size_t count, char* out_hashes, char* err_buf,
                              size_t err_len) {
  return Guarded("wmbt_kv_put_blocks_ex", int32_t{-1}, err_buf, err_len, [&] {
    return Finish(wombatkv::capi::PutBlocksEx(handle, namespace_, fingerprint_hex, keys_hex,
                                              parent_keys_hex, payloads, lens, nullptr, count,
                                              out_hashes),
                  CallKind::kPlain);
  });
}

wmbt_kv_payload_t* wmbt_kv_payload_alloc(size_t len, uint8_t** out_data) {
  using wombatkv::capi::Fail;
  return Guarded("wmbt_kv_payload_alloc", static_cast<wmbt_kv_payload_t*>(nullptr), nullptr, 0,
                 [&]() -> wmbt_kv_payload_t* {
                   if (out_data == nullptr) {
                     return Fail(wombatkv::Status::InvalidArgument("out_data is NULL"));
                   }
                   if (len > wombatkv::limits::kBlockBytesMax) {
                     return Fail(wombatkv::Status::InvalidArgument(
                         "len " + std::to_string(len) + " is over the block limit of " +
                         std::to_string(wombatkv::limits::kBlockBytesMax) + " bytes"));
                   }
                   auto p = std::make_unique<wmbt_kv_payload>();
                   p->buffer = wombatkv::Buffer::Allocate(len);
                   *out_data = p->buffer->data();
                   return p.release();
                 });
}

void wmbt_kv_payload_free(wmbt_kv_payload_t* payload) {
  // Cannot fail, so it leaves the last error alone, as wmbt_kv_release_borrow does (a cleanup
  // path between a failed call and the read of its error).
  delete payload;  // NULL is a no-op
}

int32_t wmbt_kv_put_blocks_owned(wmbt_kv_handle_t* handle, const char* namespace_,
                                 const char* fingerprint_hex, const char* const* keys_hex,
                                 const char* const* parent_keys_hex,
                                 wmbt_kv_payload_t* const* payloads, size_t count,
                                 char* out_hashes, char* err_buf, size_t err_len) {
  // Ownership passes whatever happens (the store keeps its own references to what it stored),
  // except over the count limit: then not even the array is read, and the caller keeps them. A
  // payload named twice (two blocks with the same bytes) is released once.
  struct Release {
    wmbt_kv_payload_t* const* p;
    size_t n;
    ~Release() {
      if (p == nullptr || n > wombatkv::limits::kBatchBlocksMax) return;
      try {
        std::vector<wmbt_kv_payload_t*> owned(p, p + n);  // the only allocation: before any delete
        std::sort(owned.begin(), owned.end());
        owned.erase(std::unique(owned.begin(), owned.end()), owned.end());
        for (wmbt_kv_payload_t* x : owned) delete x;
      } catch (...) {
        // No memory for the copy (a destructor must not throw: that would end the process): a
        // quadratic pass that allocates nothing.
        for (size_t i = 0; i < n; ++i) {
          bool earlier = false;
          for (size_t j = 0; j < i && !earlier; ++j) earlier = p[j] == p[i];
          if (!earlier) delete p[i];
        }
      }
    }
  } release{payloads, count};
  return Guarded("wmbt_kv_put_blocks_owned", int32_t{-1}, err_buf, err_len, [&] {
    if (payloads == nullptr && count > 0) {
      return Finish(wombatkv::Status::InvalidArgument("payloads is NULL"), CallKind::kPlain);
    }
    return Finish(wombatkv::capi::PutBlocksEx(handle, namespace_, fingerprint_hex, keys_hex,
                                              parent_keys_hex, nullptr, nullptr, payloads, count,
                                              out_hashes),
                  CallKind::kPlain);
  });
}

int32_t wmbt_kv_publish_chain(wmbt_kv_handle_t* handle, const char* namespace_,
                              const char* fingerprint_hex, const char* chain_id_hex,
                              const char* tip_hex, int64_t expected_version, uint64_t* out_version,
                              char* out_current_tip_hex, uint64_t* out_current_version,
                              char* err_buf, size_t err_len) {
  return Guarded("wmbt_kv_publish_chain", int32_t{-1}, err_buf, err_len, [&] {
    return Finish(wombatkv::capi::PublishChain(handle, namespace_, fingerprint_hex, chain_id_hex,
                                               tip_hex, expected_version, out_version,
                                               out_current_tip_hex, out_current_version),
                  CallKind::kPublish);
  });
}

int32_t wmbt_kv_get_by_content_hash_borrowed(wmbt_kv_handle_t* handle, const char* namespace_,
                                             const char* content_hash_hex,
                                             const uint8_t** out_bytes, size_t* out_len,
                                             wmbt_kv_borrow_t** out_borrow, char* err_buf,
                                             size_t err_len) {
  return Guarded("wmbt_kv_get_by_content_hash_borrowed", int32_t{-1}, err_buf, err_len, [&] {
    return Finish(wombatkv::capi::GetByContentHash(handle, namespace_, content_hash_hex,
                                                   out_bytes, out_len, out_borrow),
                  CallKind::kRead);
  });
}

int32_t wmbt_kv_refresh(wmbt_kv_handle_t* handle, char* err_buf, size_t err_len) {
  return Guarded("wmbt_kv_refresh", int32_t{-1}, err_buf, err_len, [&] {
    return Finish(wombatkv::capi::Refresh(handle), CallKind::kPlain);
  });
}

int32_t wmbt_kv_stats_json(wmbt_kv_handle_t* handle, char* buf, size_t buf_len,
                           size_t* out_needed) {
  return Guarded("wmbt_kv_stats_json", int32_t{-1}, nullptr, 0, [&] {
    return Finish(wombatkv::capi::StatsToBuffer(handle, buf, buf_len, out_needed),
                  CallKind::kPlain);
  });
}

}  // extern "C"
