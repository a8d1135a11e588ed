#include "wire/codec.h"

#include <algorithm>

#include "base/limits.h"
#include "store/stats_fields.h"
#include "wire/field_io.h"

namespace wombatkv::wire {
namespace {

constexpr uint8_t kCodeMax = static_cast<uint8_t>(Code::kPermissionDenied);
constexpr size_t kChainStateMinBytes = 2 + Fingerprint::kSize + 2 * BlockKey::kSize + 8 + 4;
constexpr size_t kChainBlockBytes = BlockKey::kSize + ContentHash::kSize + 4;

std::string_view Clamp16(std::string_view s) {
  return s.substr(0, std::min<size_t>(s.size(), UINT16_MAX));
}

Message Build(Op op, bool response, FieldWriter& w) {
  Message m;
  m.op = static_cast<uint16_t>(op);
  m.flags = response ? kFlagResponse : 0;
  m.fields = w.Take();
  return m;
}

// A writer that already holds an OK status.
FieldWriter OkFields() {
  FieldWriter w;
  w.U8(0);
  w.U32(0);
  return w;
}

void WriteStatus(FieldWriter& w, const Status& s) {
  w.U8(static_cast<uint8_t>(s.code()));
  w.U32(static_cast<uint32_t>(s.message().size()));
  w.Raw(s.message().data(), s.message().size());
}

Status CheckHeader(const Message& m, Op op, bool response, std::string_view what) {
  if (m.op != static_cast<uint16_t>(op)) {
    return Status::InvalidArgument(std::string(what) + ": message has op " + OpName(m.op));
  }
  if ((m.flags & ~kFlagResponse) != 0) {
    return Status::InvalidArgument(std::string(what) + ": flags " + std::to_string(m.flags) +
                                   " set unknown bits (only bit 0, response, is defined)");
  }
  if (((m.flags & kFlagResponse) != 0) != response) {
    return Status::InvalidArgument(std::string(what) + (response ? ": the message is a request"
                                                                 : ": the message is a response"));
  }
  return Status::Ok();
}

Status CheckPayloads(const Message& m, size_t want, std::string_view what) {
  if (m.payloads.size() == want) return Status::Ok();
  return Status::InvalidArgument(std::string(what) + ": " + std::to_string(m.payloads.size()) +
                                 " payloads where " + std::to_string(want) + " belong");
}

// Reads a status. On a malformed one returns false with the reader's error set.
bool ReadStatus(FieldReader& r, Status* out) {
  uint8_t code = 0;
  uint32_t len = 0;
  if (!r.U8("status.code", &code) || !r.U32("status.message", &len)) return false;
  if (code > kCodeMax) return r.Fail("unknown status code " + std::to_string(code));
  std::string msg;
  if (!r.Bytes("status.message", len, &msg)) return false;
  if (code == 0 && len != 0) return r.Fail("an OK status carries a message");
  *out = code == 0 ? Status::Ok() : Status(static_cast<Code>(code), std::move(msg));
  return true;
}

// Starts decoding a request that carries no payloads: checks the header and that none came.
Status BeginRequest(const Message& m, Op op, std::string_view what) {
  WMBT_RETURN_IF_ERROR(CheckHeader(m, op, /*response=*/false, what));
  return CheckPayloads(m, 0, what);
}

// Starts decoding a response: checks the header and reads the status. Returns OK when the
// response is OK and its fields follow (and, unless `has_payloads`, that it carries no payloads);
// otherwise the decode error or the response's own status (checked to carry nothing else).
Status BeginResponse(const Message& m, Op op, std::string_view what, FieldReader& r,
                     bool has_payloads = false) {
  WMBT_RETURN_IF_ERROR(CheckHeader(m, op, /*response=*/true, what));
  Status remote;
  if (!ReadStatus(r, &remote)) return r.Finish();
  if (remote.ok()) return has_payloads ? Status::Ok() : CheckPayloads(m, 0, what);
  WMBT_RETURN_IF_ERROR(r.Finish());
  WMBT_RETURN_IF_ERROR(CheckPayloads(m, 0, what));
  return remote;
}

template <typename T>
Result<T> Done(FieldReader& r, T value) {
  WMBT_RETURN_IF_ERROR(r.Finish());
  return value;
}

void WriteChainState(FieldWriter& w, const ChainState& c) {
  w.Str16(Clamp16(c.ns));
  w.Id(c.fp);
  w.Id(c.chain_id);
  w.Id(c.tip);
  w.U64(c.version);
  w.U32(c.length);
}

bool ReadChainState(FieldReader& r, ChainState* c) {
  return r.Str16("chain.ns", &c->ns, limits::kNamespaceBytesMax) && r.Id("chain.fp", &c->fp) &&
         r.Id("chain.chain_id", &c->chain_id) && r.Id("chain.tip", &c->tip) &&
         r.U64("chain.version", &c->version) && r.U32("chain.length", &c->length);
}

void WriteKeys(FieldWriter& w, const std::vector<BlockKey>& keys) {
  w.U32(static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) w.Id(k);
}

bool ReadKeys(FieldReader& r, std::vector<BlockKey>* keys) {
  uint32_t n = 0;
  if (!r.Count("keys", &n, limits::kLookupKeysMax, BlockKey::kSize)) return false;
  keys->resize(n);
  for (auto& k : *keys) r.Id("keys", &k);
  return r.ok();
}

bool ReadNs(FieldReader& r, std::string* ns) {
  return r.Str16("ns", ns, limits::kNamespaceBytesMax);
}

// NamespaceUsage / FingerprintUsage / EvictionReport counters in wire order (append only).
constexpr uint64_t NamespaceUsage::*kUsageFields[] = {
    &NamespaceUsage::chains,
    &NamespaceUsage::head_bytes,
    &NamespaceUsage::blobs,
    &NamespaceUsage::blob_bytes,
    &NamespaceUsage::sidecars,
    &NamespaceUsage::sidecar_bytes,
    &NamespaceUsage::stray_sidecars,
    &NamespaceUsage::stray_sidecar_bytes,
    &NamespaceUsage::unreferenced_blobs,
    &NamespaceUsage::unreferenced_bytes,
    &NamespaceUsage::budget_bytes,
    &NamespaceUsage::ttl_seconds,
    &NamespaceUsage::disk_cache_files,
    &NamespaceUsage::disk_cache_bytes,
};
constexpr uint64_t FingerprintUsage::*kFingerprintUsageFields[] = {
    &FingerprintUsage::chains,         &FingerprintUsage::head_bytes,
    &FingerprintUsage::blobs,          &FingerprintUsage::blob_bytes,
    &FingerprintUsage::sidecars,       &FingerprintUsage::sidecar_bytes,
    &FingerprintUsage::stray_sidecars, &FingerprintUsage::stray_sidecar_bytes,
};
constexpr uint64_t EvictionReport::*kEvictionFields[] = {
    &EvictionReport::chains,    &EvictionReport::heads_deleted, &EvictionReport::blocks,
    &EvictionReport::bytes,     &EvictionReport::freed_bytes,   &EvictionReport::skipped_in_flight,
    &EvictionReport::conflicts, &EvictionReport::orphans_gone,
};
// These structs mix strings, vectors and a bool with their counters, so a new field cannot be
// caught by counting: their sizes are pinned instead (x86-64/arm64 LP64). When one trips, put the
// new field on the wire (append to its table) and update the size.
static_assert(sizeof(void*) != 8 || sizeof(FingerprintUsage) == 12 + 4 + 8 * 8,
              "FingerprintUsage changed: update kFingerprintUsageFields and the wire docs");
static_assert(sizeof(void*) != 8 || sizeof(NamespaceUsage) == 32 + 14 * 8 + 24,
              "NamespaceUsage changed: update kUsageFields and the wire docs");
static_assert(sizeof(void*) != 8 || sizeof(EvictionReport) == 8 * 8 + 8,
              "EvictionReport changed: update kEvictionFields and the wire docs");
constexpr size_t kFingerprintUsageBytes =
    Fingerprint::kSize + 8 * std::size(kFingerprintUsageFields);
constexpr size_t kNamespaceUsageMinBytes = 2 + 8 * std::size(kUsageFields) + 4;

}  // namespace

std::string OpName(uint16_t op) {
  static constexpr const char* kNames[] = {
      nullptr,        "Hello",        "Ping",      "PutBlocks",
      "PublishChain", "LookupPrefix", "GetBlocks", "GetByContentHash",
      "PutSidecar",   "GetSidecar",   "Refresh",   "ListChains",
      "GetChain",     "Stats",        "Usage",     "Evict",
      "SaveChain"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == kOpMax + 1);
  if (op >= 1 && op <= kOpMax) return kNames[op];
  return "op " + std::to_string(op);
}

bool AwaitsDiskSync(uint16_t op) {
  switch (static_cast<Op>(op)) {
    case Op::kSaveChain:
    case Op::kPublishChain:
    case Op::kPutSidecar:
    case Op::kRefresh:
    case Op::kEvict:
      return true;
    default:
      return false;
  }
}

Message EncodeStatusResponse(Op op, const Status& status) {
  FieldWriter w;
  WriteStatus(w, status);
  return Build(op, true, w);
}

Status ResponseStatus(const Message& response) {
  // The common case without naming the message (every answer the daemon counts comes here).
  const std::vector<uint8_t>& f = response.fields;
  if (f.size() >= 5 && f[0] == 0 && f[1] == 0 && f[2] == 0 && f[3] == 0 && f[4] == 0)
    return Status::Ok();
  const std::string what = OpName(response.op) + " response";
  FieldReader r(what, response.fields);
  Status s;
  if (!ReadStatus(r, &s)) return r.Finish();
  return s;
}

// ---- Hello
Message HelloRequest::Encode() const {
  FieldWriter w;
  w.U32(protocol_version);
  w.Str16(std::string_view(client_name).substr(0, limits::kClientNameBytesMax));
  w.Str16(Clamp16(token));
  return Build(Op::kHello, false, w);
}
Result<HelloRequest> HelloRequest::Decode(const Message& m) {
  WMBT_RETURN_IF_ERROR(BeginRequest(m, Op::kHello, "HelloRequest"));
  FieldReader r("HelloRequest", m.fields);
  HelloRequest v;
  // Refuses what Encode never writes (a longer name it cuts, a token no client may hold), so
  // every accepted Hello has exactly one encoding.
  r.U32("protocol_version", &v.protocol_version) &&
      r.Str16("client_name", &v.client_name, limits::kClientNameBytesMax) &&
      r.Str16("token", &v.token, limits::kAuthTokenBytesMax);
  return Done(r, std::move(v));
}
Message HelloResponse::Encode() const {
  FieldWriter w = OkFields();
  w.Str16(Clamp16(server_version));
  w.U32(max_frame_bytes);
  return Build(Op::kHello, true, w);
}
Result<HelloResponse> HelloResponse::Decode(const Message& m) {
  FieldReader r("HelloResponse", m.fields);
  WMBT_RETURN_IF_ERROR(BeginResponse(m, Op::kHello, "HelloResponse", r));
  HelloResponse v;
  r.Str16("server_version", &v.server_version) && r.U32("max_frame_bytes", &v.max_frame_bytes);
  return Done(r, std::move(v));
}

// ---- Ping
Message PingRequest::Encode() const {
  FieldWriter w;
  return Build(Op::kPing, false, w);
}
Result<PingRequest> PingRequest::Decode(const Message& m) {
  WMBT_RETURN_IF_ERROR(BeginRequest(m, Op::kPing, "PingRequest"));
  FieldReader r("PingRequest", m.fields);
  return Done(r, PingRequest{});
}
Message PingResponse::Encode() const {
  FieldWriter w = OkFields();
  return Build(Op::kPing, true, w);
}
Result<PingResponse> PingResponse::Decode(const Message& m) {
  FieldReader r("PingResponse", m.fields);
  WMBT_RETURN_IF_ERROR(BeginResponse(m, Op::kPing, "PingResponse", r));
  return Done(r, PingResponse{});
}

// ---- PutBlocks (and SaveChain, whose request has the same layout)
namespace {
Message EncodeBlockPuts(Op op, const PutBlocksRequest& req) {
  FieldWriter w;
  w.Str16(Clamp16(req.ns));
  w.Id(req.fp);
  w.U32(static_cast<uint32_t>(req.blocks.size()));
  for (const auto& b : req.blocks) {
    w.Id(b.key);
    w.Id(b.parent);
  }
  Message m = Build(op, false, w);
  m.payloads.reserve(req.blocks.size());
  for (const auto& b : req.blocks) m.payloads.push_back(b.payload);
  return m;
}
Result<PutBlocksRequest> DecodeBlockPuts(Op op, const Message& m, const std::string& what) {
  WMBT_RETURN_IF_ERROR(CheckHeader(m, op, false, what));
  FieldReader r(what, m.fields);
  PutBlocksRequest v;
  uint32_t n = 0;
  if (ReadNs(r, &v.ns) && r.Id("fp", &v.fp) &&
      r.Count("blocks", &n, limits::kBatchBlocksMax, 2 * BlockKey::kSize)) {
    v.blocks.resize(n);
    for (auto& b : v.blocks) r.Id("blocks.key", &b.key) && r.Id("blocks.parent", &b.parent);
  }
  WMBT_RETURN_IF_ERROR(r.Finish());
  if (m.payloads.size() != v.blocks.size()) {
    return Status::InvalidArgument(what + ": " + std::to_string(m.payloads.size()) +
                                   " payloads for " + std::to_string(v.blocks.size()) + " blocks");
  }
  for (size_t i = 0; i < v.blocks.size(); ++i) v.blocks[i].payload = m.payloads[i];
  return v;
}
}  // namespace

Message PutBlocksRequest::Encode() const { return EncodeBlockPuts(Op::kPutBlocks, *this); }
Result<PutBlocksRequest> PutBlocksRequest::Decode(const Message& m) {
  return DecodeBlockPuts(Op::kPutBlocks, m, "PutBlocksRequest");
}
Message PutBlocksResponse::Encode() const {
  FieldWriter w = OkFields();
  w.U32(static_cast<uint32_t>(hashes.size()));
  for (const auto& h : hashes) w.Id(h);
  return Build(Op::kPutBlocks, true, w);
}
Result<PutBlocksResponse> PutBlocksResponse::Decode(const Message& m) {
  FieldReader r("PutBlocksResponse", m.fields);
  WMBT_RETURN_IF_ERROR(BeginResponse(m, Op::kPutBlocks, "PutBlocksResponse", r));
  PutBlocksResponse v;
  uint32_t n = 0;
  if (r.Count("hashes", &n, limits::kBatchBlocksMax, ContentHash::kSize)) {
    v.hashes.resize(n);
    for (auto& h : v.hashes) r.Id("hashes", &h);
  }
  return Done(r, std::move(v));
}

// ---- SaveChain
Message SaveChainRequest::Encode() const { return EncodeBlockPuts(Op::kSaveChain, put); }
Result<SaveChainRequest> SaveChainRequest::Decode(const Message& m) {
  WMBT_ASSIGN_OR_RETURN(PutBlocksRequest put, DecodeBlockPuts(Op::kSaveChain, m, "SaveChainRequest"));
  return SaveChainRequest{std::move(put)};
}
Message SaveChainResponse::Encode() const {
  FieldWriter w = OkFields();
  w.U64(version);
  return Build(Op::kSaveChain, true, w);
}
Result<SaveChainResponse> SaveChainResponse::Decode(const Message& m) {
  FieldReader r("SaveChainResponse", m.fields);
  WMBT_RETURN_IF_ERROR(BeginResponse(m, Op::kSaveChain, "SaveChainResponse", r));
  SaveChainResponse v;
  r.U64("version", &v.version);
  return Done(r, std::move(v));
}

// ---- PublishChain
Message PublishChainRequest::Encode() const {
  FieldWriter w;
  w.Str16(Clamp16(ns));
  w.Id(fp);
  w.Id(chain_id);
  w.Id(tip);
  w.U8(expected_version.has_value() ? 1 : 0);
  if (expected_version) w.U64(*expected_version);
  return Build(Op::kPublishChain, false, w);
}
Result<PublishChainRequest> PublishChainRequest::Decode(const Message& m) {
  WMBT_RETURN_IF_ERROR(BeginRequest(m, Op::kPublishChain, "PublishChainRequest"));
  FieldReader r("PublishChainRequest", m.fields);
  PublishChainRequest v;
  bool has_expected = false;
  if (ReadNs(r, &v.ns) && r.Id("fp", &v.fp) && r.Id("chain_id", &v.chain_id) &&
      r.Id("tip", &v.tip) && r.Presence("expected_version", &has_expected) && has_expected) {
    uint64_t e = 0;
    if (r.U64("expected_version", &e)) v.expected_version = e;
  }
  return Done(r, std::move(v));
}
Message PublishChainResponse::Encode() const {
  FieldWriter w = OkFields();
  w.U64(version);
  return Build(Op::kPublishChain, true, w);
}
Message PublishChainResponse::EncodeConflict(const Status& conflict, const ChainState& current) {
  FieldWriter w;
  WriteStatus(w, conflict);
  WriteChainState(w, current);
  return Build(Op::kPublishChain, true, w);
}
Result<PublishChainResponse> PublishChainResponse::Decode(const Message& m, ChainState* current) {
  constexpr std::string_view kWhat = "PublishChainResponse";
  WMBT_RETURN_IF_ERROR(CheckHeader(m, Op::kPublishChain, true, kWhat));
  WMBT_RETURN_IF_ERROR(CheckPayloads(m, 0, kWhat));
  FieldReader r(kWhat, m.fields);
  Status remote;
  if (!ReadStatus(r, &remote)) return r.Finish();
  if (remote.code() == Code::kConflict && r.left() > 0) {
    ChainState c;
    ReadChainState(r, &c);
    WMBT_RETURN_IF_ERROR(r.Finish());
    if (current) *current = std::move(c);
    return remote;
  }
  if (!remote.ok()) {
    WMBT_RETURN_IF_ERROR(r.Finish());
    return remote;
  }
  PublishChainResponse v;
  r.U64("version", &v.version);
  return Done(r, v);
}

// ---- LookupPrefix
Message LookupPrefixRequest::Encode() const {
  FieldWriter w;
  w.Str16(Clamp16(ns));
  w.Id(fp);
  WriteKeys(w, keys);
  return Build(Op::kLookupPrefix, false, w);
}
Result<LookupPrefixRequest> LookupPrefixRequest::Decode(const Message& m) {
  WMBT_RETURN_IF_ERROR(BeginRequest(m, Op::kLookupPrefix, "LookupPrefixRequest"));
  FieldReader r("LookupPrefixRequest", m.fields);
  LookupPrefixRequest v;
  ReadNs(r, &v.ns) && r.Id("fp", &v.fp) && ReadKeys(r, &v.keys);
  return Done(r, std::move(v));
}
Message LookupPrefixResponse::Encode() const {
  FieldWriter w = OkFields();
  w.U64(matched);
  return Build(Op::kLookupPrefix, true, w);
}
Result<LookupPrefixResponse> LookupPrefixResponse::Decode(const Message& m) {
  FieldReader r("LookupPrefixResponse", m.fields);
  WMBT_RETURN_IF_ERROR(BeginResponse(m, Op::kLookupPrefix, "LookupPrefixResponse", r));
  LookupPrefixResponse v;
  r.U64("matched", &v.matched);
  return Done(r, v);
}

// ---- GetBlocks
Message GetBlocksRequest::Encode() const {
  FieldWriter w;
  w.Str16(Clamp16(ns));
  w.Id(fp);
  WriteKeys(w, keys);
  return Build(Op::kGetBlocks, false, w);
}
Result<GetBlocksRequest> GetBlocksRequest::Decode(const Message& m) {
  WMBT_RETURN_IF_ERROR(BeginRequest(m, Op::kGetBlocks, "GetBlocksRequest"));
  FieldReader r("GetBlocksRequest", m.fields);
  GetBlocksRequest v;
  ReadNs(r, &v.ns) && r.Id("fp", &v.fp) && ReadKeys(r, &v.keys);
  return Done(r, std::move(v));
}
Message GetBlocksResponse::Encode() const {
  FieldWriter w = OkFields();
  w.U32(static_cast<uint32_t>(payloads.size()));
  Message m = Build(Op::kGetBlocks, true, w);
  m.payloads = payloads;
  return m;
}
Result<GetBlocksResponse> GetBlocksResponse::Decode(const Message& m) {
  FieldReader r("GetBlocksResponse", m.fields);
  WMBT_RETURN_IF_ERROR(
      BeginResponse(m, Op::kGetBlocks, "GetBlocksResponse", r, /*has_payloads=*/true));
  uint32_t n = 0;
  r.Count("blocks", &n, limits::kLookupKeysMax, 0);
  WMBT_RETURN_IF_ERROR(r.Finish());
  WMBT_RETURN_IF_ERROR(CheckPayloads(m, n, "GetBlocksResponse"));
  GetBlocksResponse v;
  v.payloads = m.payloads;
  return v;
}

// ---- GetByContentHash
Message GetByContentHashRequest::Encode() const {
  FieldWriter w;
  w.Str16(Clamp16(ns));
  w.Id(hash);
  return Build(Op::kGetByContentHash, false, w);
}
Result<GetByContentHashRequest> GetByContentHashRequest::Decode(const Message& m) {
  constexpr std::string_view kWhat = "GetByContentHashRequest";
  WMBT_RETURN_IF_ERROR(BeginRequest(m, Op::kGetByContentHash, kWhat));
  FieldReader r(kWhat, m.fields);
  GetByContentHashRequest v;
  ReadNs(r, &v.ns) && r.Id("hash", &v.hash);
  return Done(r, std::move(v));
}
Message GetByContentHashResponse::Encode() const {
  FieldWriter w = OkFields();
  Message m = Build(Op::kGetByContentHash, true, w);
  m.payloads = {payload};
  return m;
}
Result<GetByContentHashResponse> GetByContentHashResponse::Decode(const Message& m) {
  constexpr std::string_view kWhat = "GetByContentHashResponse";
  FieldReader r(kWhat, m.fields);
  WMBT_RETURN_IF_ERROR(BeginResponse(m, Op::kGetByContentHash, kWhat, r, /*has_payloads=*/true));
  WMBT_RETURN_IF_ERROR(r.Finish());
  WMBT_RETURN_IF_ERROR(CheckPayloads(m, 1, kWhat));
  return GetByContentHashResponse{m.payloads[0]};
}

// ---- PutSidecar
Message PutSidecarRequest::Encode() const {
  FieldWriter w;
  w.Str16(Clamp16(ns));
  w.Id(fp);
  w.Id(tip);
  Message m = Build(Op::kPutSidecar, false, w);
  m.payloads = {bytes};
  return m;
}
Result<PutSidecarRequest> PutSidecarRequest::Decode(const Message& m) {
  WMBT_RETURN_IF_ERROR(CheckHeader(m, Op::kPutSidecar, false, "PutSidecarRequest"));
  FieldReader r("PutSidecarRequest", m.fields);
  PutSidecarRequest v;
  ReadNs(r, &v.ns) && r.Id("fp", &v.fp) && r.Id("tip", &v.tip);
  WMBT_RETURN_IF_ERROR(r.Finish());
  WMBT_RETURN_IF_ERROR(CheckPayloads(m, 1, "PutSidecarRequest"));
  v.bytes = m.payloads[0];
  return v;
}
Message PutSidecarResponse::Encode() const {
  FieldWriter w = OkFields();
  return Build(Op::kPutSidecar, true, w);
}
Result<PutSidecarResponse> PutSidecarResponse::Decode(const Message& m) {
  FieldReader r("PutSidecarResponse", m.fields);
  WMBT_RETURN_IF_ERROR(BeginResponse(m, Op::kPutSidecar, "PutSidecarResponse", r));
  return Done(r, PutSidecarResponse{});
}

// ---- GetSidecar
Message GetSidecarRequest::Encode() const {
  FieldWriter w;
  w.Str16(Clamp16(ns));
  w.Id(fp);
  w.Id(tip);
  return Build(Op::kGetSidecar, false, w);
}
Result<GetSidecarRequest> GetSidecarRequest::Decode(const Message& m) {
  WMBT_RETURN_IF_ERROR(BeginRequest(m, Op::kGetSidecar, "GetSidecarRequest"));
  FieldReader r("GetSidecarRequest", m.fields);
  GetSidecarRequest v;
  ReadNs(r, &v.ns) && r.Id("fp", &v.fp) && r.Id("tip", &v.tip);
  return Done(r, std::move(v));
}
Message GetSidecarResponse::Encode() const {
  FieldWriter w = OkFields();
  Message m = Build(Op::kGetSidecar, true, w);
  m.payloads = {bytes};
  return m;
}
Result<GetSidecarResponse> GetSidecarResponse::Decode(const Message& m) {
  FieldReader r("GetSidecarResponse", m.fields);
  WMBT_RETURN_IF_ERROR(
      BeginResponse(m, Op::kGetSidecar, "GetSidecarResponse", r, /*has_payloads=*/true));
  WMBT_RETURN_IF_ERROR(r.Finish());
  WMBT_RETURN_IF_ERROR(CheckPayloads(m, 1, "GetSidecarResponse"));
  return GetSidecarResponse{m.payloads[0]};
}

// ---- Refresh
Message RefreshRequest::Encode() const {
  FieldWriter w;
  return Build(Op::kRefresh, false, w);
}
Result<RefreshRequest> RefreshRequest::Decode(const Message& m) {
  WMBT_RETURN_IF_ERROR(BeginRequest(m, Op::kRefresh, "RefreshRequest"));
  FieldReader r("RefreshRequest", m.fields);
  return Done(r, RefreshRequest{});
}
Message RefreshResponse::Encode() const {
  FieldWriter w = OkFields();
  w.U64(report.chains_added);
  w.U64(report.chains_updated);
  w.U64(report.chains_removed);
  w.U64(report.heads_listed);
  return Build(Op::kRefresh, true, w);
}
Result<RefreshResponse> RefreshResponse::Decode(const Message& m) {
  FieldReader r("RefreshResponse", m.fields);
  WMBT_RETURN_IF_ERROR(BeginResponse(m, Op::kRefresh, "RefreshResponse", r));
  uint64_t added = 0, updated = 0, removed = 0, listed = 0;
  r.U64("chains_added", &added) && r.U64("chains_updated", &updated) &&
      r.U64("chains_removed", &removed) && r.U64("heads_listed", &listed);
  RefreshResponse v;
  v.report.chains_added = static_cast<size_t>(added);
  v.report.chains_updated = static_cast<size_t>(updated);
  v.report.chains_removed = static_cast<size_t>(removed);
  v.report.heads_listed = static_cast<size_t>(listed);
  return Done(r, v);
}

// ---- ListChains
Message ListChainsRequest::Encode() const {
  FieldWriter w;
  w.Str16(Clamp16(ns));
  return Build(Op::kListChains, false, w);
}
Result<ListChainsRequest> ListChainsRequest::Decode(const Message& m) {
  WMBT_RETURN_IF_ERROR(BeginRequest(m, Op::kListChains, "ListChainsRequest"));
  FieldReader r("ListChainsRequest", m.fields);
  ListChainsRequest v;
  ReadNs(r, &v.ns);
  return Done(r, std::move(v));
}
Message ListChainsResponse::Encode() const {
  FieldWriter w = OkFields();
  w.U32(static_cast<uint32_t>(chains.size()));
  for (const auto& c : chains) WriteChainState(w, c);
  return Build(Op::kListChains, true, w);
}
Result<ListChainsResponse> ListChainsResponse::Decode(const Message& m) {
  FieldReader r("ListChainsResponse", m.fields);
  WMBT_RETURN_IF_ERROR(BeginResponse(m, Op::kListChains, "ListChainsResponse", r));
  ListChainsResponse v;
  uint32_t n = 0;
  if (r.Count("chains", &n, UINT32_MAX, kChainStateMinBytes)) {
    v.chains.resize(n);
    for (auto& c : v.chains) {
      if (!ReadChainState(r, &c)) break;
    }
  }
  return Done(r, std::move(v));
}

// ---- GetChain
Message GetChainRequest::Encode() const {
  FieldWriter w;
  w.Str16(Clamp16(ns));
  w.Id(fp);
  w.Id(chain_id);
  return Build(Op::kGetChain, false, w);
}
Result<GetChainRequest> GetChainRequest::Decode(const Message& m) {
  WMBT_RETURN_IF_ERROR(BeginRequest(m, Op::kGetChain, "GetChainRequest"));
  FieldReader r("GetChainRequest", m.fields);
  GetChainRequest v;
  ReadNs(r, &v.ns) && r.Id("fp", &v.fp) && r.Id("chain_id", &v.chain_id);
  return Done(r, std::move(v));
}
Message GetChainResponse::Encode() const {
  FieldWriter w = OkFields();
  w.U32(static_cast<uint32_t>(blocks.size()));
  for (const auto& b : blocks) {
    w.Id(b.key);
    w.Id(b.hash);
    w.U32(b.length);
  }
  return Build(Op::kGetChain, true, w);
}
Result<GetChainResponse> GetChainResponse::Decode(const Message& m) {
  FieldReader r("GetChainResponse", m.fields);
  WMBT_RETURN_IF_ERROR(BeginResponse(m, Op::kGetChain, "GetChainResponse", r));
  GetChainResponse v;
  uint32_t n = 0;
  if (r.Count("blocks", &n, limits::kChainBlocksMax, kChainBlockBytes)) {
    v.blocks.resize(n);
    for (auto& b : v.blocks) {
      r.Id("blocks.key", &b.key) && r.Id("blocks.hash", &b.hash) &&
          r.U32("blocks.length", &b.length);
    }
  }
  return Done(r, std::move(v));
}

// ---- Stats
Message StatsRequest::Encode() const {
  FieldWriter w;
  return Build(Op::kStats, false, w);
}
Result<StatsRequest> StatsRequest::Decode(const Message& m) {
  WMBT_RETURN_IF_ERROR(BeginRequest(m, Op::kStats, "StatsRequest"));
  FieldReader r("StatsRequest", m.fields);
  return Done(r, StatsRequest{});
}
Message StatsResponse::Encode() const {
  FieldWriter w = OkFields();
  for (const StoreStatsField& f : kStoreStatsFields) w.U64(stats.*f.member);  // append only
  w.Str16(Clamp16(l2));
  return Build(Op::kStats, true, w);
}
Result<StatsResponse> StatsResponse::Decode(const Message& m) {
  FieldReader r("StatsResponse", m.fields);
  WMBT_RETURN_IF_ERROR(BeginResponse(m, Op::kStats, "StatsResponse", r));
  StatsResponse v;
  for (const StoreStatsField& f : kStoreStatsFields) r.U64("stats", &(v.stats.*f.member));
  r.Str16("l2", &v.l2);
  return Done(r, std::move(v));
}

// ---- Usage
Message UsageRequest::Encode() const {
  FieldWriter w;
  w.Str16(Clamp16(ns));
  w.U8(by_fingerprint ? 1 : 0);
  return Build(Op::kUsage, false, w);
}
Result<UsageRequest> UsageRequest::Decode(const Message& m) {
  WMBT_RETURN_IF_ERROR(BeginRequest(m, Op::kUsage, "UsageRequest"));
  FieldReader r("UsageRequest", m.fields);
  UsageRequest v;
  ReadNs(r, &v.ns) && r.Presence("by_fingerprint", &v.by_fingerprint);
  return Done(r, std::move(v));
}
Message UsageResponse::Encode() const {
  FieldWriter w = OkFields();
  w.U32(static_cast<uint32_t>(namespaces.size()));
  for (const auto& u : namespaces) {
    w.Str16(Clamp16(u.ns));
    for (auto f : kUsageFields) w.U64(u.*f);
    w.U32(static_cast<uint32_t>(u.fingerprints.size()));
    for (const auto& fu : u.fingerprints) {
      w.Id(fu.fp);
      for (auto f : kFingerprintUsageFields) w.U64(fu.*f);
    }
  }
  return Build(Op::kUsage, true, w);
}
Result<UsageResponse> UsageResponse::Decode(const Message& m) {
  FieldReader r("UsageResponse", m.fields);
  WMBT_RETURN_IF_ERROR(BeginResponse(m, Op::kUsage, "UsageResponse", r));
  UsageResponse v;
  uint32_t n = 0;
  if (r.Count("namespaces", &n, UINT32_MAX, kNamespaceUsageMinBytes)) {
    v.namespaces.resize(n);
    for (auto& u : v.namespaces) {
      if (!r.Str16("namespaces.ns", &u.ns, limits::kNamespaceBytesMax)) break;
      for (auto f : kUsageFields) r.U64("namespaces.counters", &(u.*f));
      uint32_t fps = 0;
      if (!r.Count("namespaces.fingerprints", &fps, UINT32_MAX, kFingerprintUsageBytes)) break;
      u.fingerprints.resize(fps);
      for (auto& fu : u.fingerprints) {
        r.Id("fingerprints.fp", &fu.fp);
        for (auto f : kFingerprintUsageFields) r.U64("fingerprints.counters", &(fu.*f));
      }
    }
  }
  return Done(r, std::move(v));
}

// ---- Evict
Message EvictRequest::Encode() const {
  FieldWriter w;
  return Build(Op::kEvict, false, w);
}
Result<EvictRequest> EvictRequest::Decode(const Message& m) {
  WMBT_RETURN_IF_ERROR(BeginRequest(m, Op::kEvict, "EvictRequest"));
  FieldReader r("EvictRequest", m.fields);
  return Done(r, EvictRequest{});
}
Message EvictResponse::Encode() const {
  FieldWriter w = OkFields();
  for (auto f : kEvictionFields) w.U64(report.*f);
  w.U8(report.work_left ? 1 : 0);
  return Build(Op::kEvict, true, w);
}
Result<EvictResponse> EvictResponse::Decode(const Message& m) {
  FieldReader r("EvictResponse", m.fields);
  WMBT_RETURN_IF_ERROR(BeginResponse(m, Op::kEvict, "EvictResponse", r));
  EvictResponse v;
  for (auto f : kEvictionFields) r.U64("report", &(v.report.*f));
  r.Presence("work_left", &v.report.work_left);
  return Done(r, v);
}

}  // namespace wombatkv::wire
