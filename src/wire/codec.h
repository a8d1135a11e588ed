// Codec: the `fields` layout of every op's request and response (docs/wire.md has the table).
//
// Each op has a request struct and a response struct. Encode() builds a Message with `op` set
// (and kFlagResponse for responses; the id is left 0 for the Channel / Service to set); Decode()
// reads one back. Layout rules:
//   - integers little-endian; strings u16-length-prefixed; BlockKey 32 raw bytes, ContentHash 20,
//     Fingerprint 12; an optional value is a presence byte (0 or 1) then the value if 1;
//   - bulk bytes (block payloads, sidecars) travel in Message::payloads, never in fields;
//   - every response begins with a status: u8 Code, u32 message length, message bytes. A non-OK
//     response has no other fields and no payloads — with one exception: a PublishChain Conflict
//     carries the chain's current state after the status, so a client can rebase (G6).
//
// Decoding is strict and total: for any Message, Decode returns a value or InvalidArgument naming
// what was wrong ("HelloRequest: truncated field token", "trailing bytes", "count 70000 over the
// limit 65536", "2 payloads for 3 blocks"), never reads out of bounds. A response Decode returns
// the response's own status when it is not OK (so a daemon's NotFound arrives as NotFound).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "wire/message.h"
#include "wombatkv/buffer.h"
#include "wombatkv/status.h"
#include "wombatkv/store.h"
#include "wombatkv/types.h"

namespace wombatkv::wire {

// Stable values: they are on the wire. Keep every value < ServiceMetrics::kOps (32).
enum class Op : uint16_t {
  kHello = 1,
  kPing = 2,
  kPutBlocks = 3,
  kPublishChain = 4,
  kLookupPrefix = 5,
  kGetBlocks = 6,
  kGetByContentHash = 7,
  kPutSidecar = 8,
  kGetSidecar = 9,
  kRefresh = 10,
  kListChains = 11,
  kGetChain = 12,
  kStats = 13,
  kUsage = 14,
  kEvict = 15,
  kSaveChain = 16,
};
inline constexpr uint16_t kOpMax = 16;

// "Hello", "PutBlocks", ... or "op 77" for an unknown value.
std::string OpName(uint16_t op);

// Whether the answer to `op` waits for a disk sync when the store is durable (SPEC G3): save,
// publish, sidecar put, refresh, evict. Clients wait for these differently (docs/shm.md,
// "Wake-ups"; docs/daemon.md, "Spinning"): hundreds of µs, where a get takes a few.
bool AwaitsDiskSync(uint16_t op);

// The version of the op layouts below (the envelope has its own, frame.h kVersion).
inline constexpr uint32_t kProtocolVersion = 1;

// A response carrying only `status` (REQUIRES: !status.ok() or an op whose OK response has no
// fields, e.g. Ping, PutSidecar). How the Service answers every failed request.
Message EncodeStatusResponse(Op op, const Status& status);
// The status at the start of any response's fields, or InvalidArgument if even that is malformed.
// For transports and tests that only need to know whether a call failed.
Status ResponseStatus(const Message& response);

// ---- Hello: first message of a session; authenticates it when the listener requires a token.
// Encode cuts a client name longer than limits::kClientNameBytesMax; Decode refuses a longer name,
// or a token over limits::kAuthTokenBytesMax, as InvalidArgument naming the field.
struct HelloRequest {
  uint32_t protocol_version = kProtocolVersion;
  std::string client_name;  // for logs: "vllm-worker-3", "wombatkv-cli"
  std::string token;        // secret; empty when none
  Message Encode() const;
  static Result<HelloRequest> Decode(const Message& m);
};
struct HelloResponse {
  std::string server_version;  // "wombatkvd 0.1.0"
  uint32_t max_frame_bytes = 0;
  Message Encode() const;
  static Result<HelloResponse> Decode(const Message& m);
};

// ---- Ping: liveness; no fields either way.
struct PingRequest {
  Message Encode() const;
  static Result<PingRequest> Decode(const Message& m);
};
struct PingResponse {
  Message Encode() const;
  static Result<PingResponse> Decode(const Message& m);
};

// ---- PutBlocks: payloads[i] is blocks[i]'s payload (one payload per block, in order).
struct PutBlocksRequest {
  struct Block {
    BlockKey key;
    BlockKey parent;
    BufferSlice payload;  // may be non-owning (owner null) while the request is being sent
  };
  std::string ns;
  Fingerprint fp;
  std::vector<Block> blocks;  // 1 .. limits::kBatchBlocksMax
  Message Encode() const;
  static Result<PutBlocksRequest> Decode(const Message& m);
};
struct PutBlocksResponse {
  std::vector<ContentHash> hashes;
  Message Encode() const;
  static Result<PutBlocksResponse> Decode(const Message& m);
};

// ---- SaveChain: PutBlocks, then PublishChain of the chain they form (chain id = tip = the last
// block, last writer wins), in one round trip (Store::SaveChain). The request is laid out as
// PutBlocks'; the response carries the new version.
struct SaveChainRequest {
  PutBlocksRequest put;
  Message Encode() const;
  static Result<SaveChainRequest> Decode(const Message& m);
};
struct SaveChainResponse {
  uint64_t version = 0;
  Message Encode() const;
  static Result<SaveChainResponse> Decode(const Message& m);
};

// ---- PublishChain
struct PublishChainRequest {
  std::string ns;
  Fingerprint fp;
  ChainId chain_id;
  BlockKey tip;
  std::optional<uint64_t> expected_version;
  Message Encode() const;
  static Result<PublishChainRequest> Decode(const Message& m);
};
struct PublishChainResponse {
  uint64_t version = 0;
  Message Encode() const;
  // The Conflict response of a compare-and-swap publish, carrying the chain's current state.
  static Message EncodeConflict(const Status& conflict, const ChainState& current);
  // On a Conflict that carries the current state, fills `*current` (if non-null) and returns the
  // Conflict status, as Store::PublishChain does.
  static Result<PublishChainResponse> Decode(const Message& m, ChainState* current = nullptr);
};

// ---- LookupPrefix
struct LookupPrefixRequest {
  std::string ns;
  Fingerprint fp;
  std::vector<BlockKey> keys;  // <= limits::kLookupKeysMax
  Message Encode() const;
  static Result<LookupPrefixRequest> Decode(const Message& m);
};
struct LookupPrefixResponse {
  uint64_t matched = 0;
  Message Encode() const;
  static Result<LookupPrefixResponse> Decode(const Message& m);
};

// ---- GetBlocks: the response's payloads are the blocks' bytes, in key order.
struct GetBlocksRequest {
  std::string ns;
  Fingerprint fp;
  std::vector<BlockKey> keys;  // <= limits::kLookupKeysMax
  Message Encode() const;
  static Result<GetBlocksRequest> Decode(const Message& m);
};
struct GetBlocksResponse {
  std::vector<BufferSlice> payloads;  // they keep their bytes (and cache pins) alive
  Message Encode() const;
  static Result<GetBlocksResponse> Decode(const Message& m);
};

// ---- GetByContentHash: the response carries the payload as its one payload.
struct GetByContentHashRequest {
  std::string ns;
  ContentHash hash;
  Message Encode() const;
  static Result<GetByContentHashRequest> Decode(const Message& m);
};
struct GetByContentHashResponse {
  BufferSlice payload;
  Message Encode() const;
  static Result<GetByContentHashResponse> Decode(const Message& m);
};

// ---- PutSidecar: the sidecar bytes are the request's one payload.
struct PutSidecarRequest {
  std::string ns;
  Fingerprint fp;
  BlockKey tip;
  BufferSlice bytes;  // may be non-owning while the request is being sent
  Message Encode() const;
  static Result<PutSidecarRequest> Decode(const Message& m);
};
struct PutSidecarResponse {
  Message Encode() const;
  static Result<PutSidecarResponse> Decode(const Message& m);
};

// ---- GetSidecar: the response carries the sidecar as its one payload.
struct GetSidecarRequest {
  std::string ns;
  Fingerprint fp;
  BlockKey tip;
  Message Encode() const;
  static Result<GetSidecarRequest> Decode(const Message& m);
};
struct GetSidecarResponse {
  BufferSlice bytes;
  Message Encode() const;
  static Result<GetSidecarResponse> Decode(const Message& m);
};

// ---- Refresh
struct RefreshRequest {
  Message Encode() const;
  static Result<RefreshRequest> Decode(const Message& m);
};
struct RefreshResponse {
  RefreshReport report;
  Message Encode() const;
  static Result<RefreshResponse> Decode(const Message& m);
};

// ---- ListChains: empty ns = every namespace (the Service narrows it to the session's grant).
struct ListChainsRequest {
  std::string ns;
  Message Encode() const;
  static Result<ListChainsRequest> Decode(const Message& m);
};
struct ListChainsResponse {
  std::vector<ChainState> chains;
  Message Encode() const;
  static Result<ListChainsResponse> Decode(const Message& m);
};

// ---- GetChain
struct GetChainRequest {
  std::string ns;
  Fingerprint fp;
  ChainId chain_id;
  Message Encode() const;
  static Result<GetChainRequest> Decode(const Message& m);
};
struct GetChainResponse {
  std::vector<ChainBlock> blocks;  // <= limits::kChainBlocksMax
  Message Encode() const;
  static Result<GetChainResponse> Decode(const Message& m);
};

// ---- Stats: the StoreStats counters as fixed u64 fields in declaration order, then DescribeL2.
struct StatsRequest {
  Message Encode() const;
  static Result<StatsRequest> Decode(const Message& m);
};
struct StatsResponse {
  StoreStats stats;
  std::string l2;  // the daemon store's DescribeL2()
  Message Encode() const;
  static Result<StatsResponse> Decode(const Message& m);
};

// ---- Usage: L2 usage per namespace (Store::Usage); empty ns = every namespace (the Service
// narrows it to the session's grant).
struct UsageRequest {
  std::string ns;
  bool by_fingerprint = false;
  Message Encode() const;
  static Result<UsageRequest> Decode(const Message& m);
};
struct UsageResponse {
  std::vector<NamespaceUsage> namespaces;
  Message Encode() const;
  static Result<UsageResponse> Decode(const Message& m);
};

// ---- Evict: one eviction pass on the daemon (Store::Evict); needs an all-namespace token.
struct EvictRequest {
  Message Encode() const;
  static Result<EvictRequest> Decode(const Message& m);
};
struct EvictResponse {
  EvictionReport report;
  Message Encode() const;
  static Result<EvictResponse> Decode(const Message& m);
};

}  // namespace wombatkv::wire
