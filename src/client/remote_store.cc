#include "client/remote_store.h"

#include "base/store_args.h"
#include "wire/codec.h"
#include "wire/frame.h"

namespace wombatkv {

RemoteStore::RemoteStore(std::unique_ptr<Channel> channel, LogSink log)
    : channel_(std::move(channel)), log_(std::move(log)) {}

RemoteStore::~RemoteStore() = default;

namespace {
// An answer that does not decode, though the daemon's status in it says OK (or is unreadable), is
// the daemon's fault or a version skew, not the caller's: INTERNAL, where the codec says
// INVALID_ARGUMENT (its word for a malformed request). A status the daemon sent passes as it is.
template <typename Decoded>
Decoded Answer(const wire::Message& response, Decoded decoded) {
  if (decoded.ok() || decoded.status().code() != Code::kInvalidArgument) return decoded;
  const Status sent = wire::ResponseStatus(response);
  if (sent.code() == Code::kInvalidArgument && sent.message() == decoded.status().message()) {
    return decoded;  // the daemon's own refusal
  }
  return Status::Internal(
      "the daemon's answer could not be read (a client and daemon of "
      "different versions, or a bug): " +
      decoded.status().message());
}
}  // namespace

template <typename Response>
Result<Response> RemoteStore::Call(wire::Message request) const {
  WMBT_ASSIGN_OR_RETURN(wire::Message response, channel_->Call(std::move(request)));
  return Answer(response, Response::Decode(response));
}

void RemoteStore::Log(LogLevel level, const std::string& line) const {
  if (log_) log_(level, line);
}

namespace {
wire::PutBlocksRequest PutRequestOf(std::string_view ns, const Fingerprint& fp,
                                    std::span<const BlockPut> blocks) {
  wire::PutBlocksRequest req;
  req.ns = std::string(ns);
  req.fp = fp;
  req.blocks.resize(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) {
    const BlockPut& b = blocks[i];
    req.blocks[i].key = b.key;
    req.blocks[i].parent = b.parent;
    // The caller's own memory, not copied: valid until this call returns (channel.h).
    req.blocks[i].payload =
        b.owned.owner ? b.owned : BufferSlice{nullptr, b.payload.data(), b.payload.size()};
  }
  return req;
}
}  // namespace

Result<uint64_t> RemoteStore::SaveChain(std::string_view ns, const Fingerprint& fp,
                                        std::span<const BlockPut> blocks) {
  if (daemon_lacks_save_.load(std::memory_order_relaxed)) return Store::SaveChain(ns, fp, blocks);
  WMBT_RETURN_IF_ERROR(CheckPutBlocksArgs(ns, blocks));
  wire::SaveChainRequest req{PutRequestOf(ns, fp, blocks)};
  auto resp = Call<wire::SaveChainResponse>(req.Encode());
  if (resp.ok()) return resp->version;
  if (resp.status().code() == Code::kInvalidArgument &&
      resp.status().message().starts_with("unknown op")) {
    Log(LogLevel::kInfo, "the daemon does not know SaveChain (" + resp.status().message() +
                             "): saving with PutBlocks + PublishChain");
    daemon_lacks_save_ = true;
    return Store::SaveChain(ns, fp, blocks);
  }
  return resp.status();
}

Result<std::vector<ContentHash>> RemoteStore::PutBlocks(std::string_view ns, const Fingerprint& fp,
                                                        std::span<const BlockPut> blocks) {
  // Checked here too, before the transport reads (copies) the bytes.
  WMBT_RETURN_IF_ERROR(CheckPutBlocksArgs(ns, blocks));
  wire::PutBlocksRequest req = PutRequestOf(ns, fp, blocks);
  WMBT_ASSIGN_OR_RETURN(auto resp, Call<wire::PutBlocksResponse>(req.Encode()));
  if (resp.hashes.size() != blocks.size()) {
    return Status::Internal("daemon answered a PutBlocks of " + std::to_string(blocks.size()) +
                            " blocks with " + std::to_string(resp.hashes.size()) + " hashes");
  }
  return std::move(resp.hashes);
}

Result<uint64_t> RemoteStore::PublishChain(std::string_view ns, const Fingerprint& fp,
                                           const ChainId& chain_id, const BlockKey& tip,
                                           std::optional<uint64_t> expected_version,
                                           ChainState* current) {
  WMBT_RETURN_IF_ERROR(ValidateNamespace(ns));
  wire::PublishChainRequest req{std::string(ns), fp, chain_id, tip, expected_version};
  WMBT_ASSIGN_OR_RETURN(wire::Message response, channel_->Call(req.Encode()));
  WMBT_ASSIGN_OR_RETURN(auto resp,
                        Answer(response, wire::PublishChainResponse::Decode(response, current)));
  return resp.version;
}

Result<size_t> RemoteStore::LookupPrefix(std::string_view ns, const Fingerprint& fp,
                                         std::span<const BlockKey> keys) {
  WMBT_RETURN_IF_ERROR(CheckKeysArgs("lookup", ns, keys.size()));
  wire::LookupPrefixRequest req{std::string(ns), fp, {keys.begin(), keys.end()}};
  WMBT_ASSIGN_OR_RETURN(auto resp, Call<wire::LookupPrefixResponse>(req.Encode()));
  if (resp.matched > keys.size()) {
    return Status::Internal("daemon matched " + std::to_string(resp.matched) + " of " +
                            std::to_string(keys.size()) + " lookup keys");
  }
  return static_cast<size_t>(resp.matched);
}

namespace {
Status CheckAnswerCount(size_t payloads, size_t keys) {
  if (payloads == keys) return Status::Ok();
  return Status::Internal("daemon answered a get of " + std::to_string(keys) + " keys with " +
                          std::to_string(payloads) + " payloads");
}
}  // namespace

// One answer carries at most wire::kMaxPayloadsPerMessage blocks: a get of more keys (the
// embedded store takes up to limits::kLookupKeysMax) is made of several calls, all or nothing as
// one — a miss in any is the get's miss.
Result<Borrow> RemoteStore::GetBlocks(std::string_view ns, const Fingerprint& fp,
                                      std::span<const BlockKey> keys) {
  WMBT_RETURN_IF_ERROR(CheckKeysArgs("get", ns, keys.size()));
  std::vector<BufferSlice> payloads;
  // Once at least: an empty get is asked too (the daemon checks the namespace's grant).
  for (size_t at = 0; at == 0 || at < keys.size(); at += wire::kMaxPayloadsPerMessage) {
    const auto part =
        keys.subspan(at, std::min<size_t>(keys.size() - at, wire::kMaxPayloadsPerMessage));
    wire::GetBlocksRequest req{std::string(ns), fp, {part.begin(), part.end()}};
    WMBT_ASSIGN_OR_RETURN(auto resp, Call<wire::GetBlocksResponse>(req.Encode()));
    WMBT_RETURN_IF_ERROR(CheckAnswerCount(resp.payloads.size(), part.size()));
    if (part.size() == keys.size()) return Borrow(std::move(resp.payloads));
    payloads.insert(payloads.end(), std::make_move_iterator(resp.payloads.begin()),
                    std::make_move_iterator(resp.payloads.end()));
  }
  return Borrow(std::move(payloads));
}

Status RemoteStore::GetBlocksInto(std::string_view ns, const Fingerprint& fp,
                                  std::span<const BlockKey> keys,
                                  std::span<const std::span<uint8_t>> dsts,
                                  std::span<size_t> lens) {
  WMBT_RETURN_IF_ERROR(CheckKeysArgs("get", ns, keys.size()));
  if (keys.size() > wire::kMaxPayloadsPerMessage) {  // several answers (GetBlocks), then copies
    WMBT_ASSIGN_OR_RETURN(Borrow all, GetBlocks(ns, fp, keys));
    return CopyBlocksInto(all.slices(), dsts, lens);
  }
  wire::GetBlocksRequest req{std::string(ns), fp, {keys.begin(), keys.end()}};
  WMBT_ASSIGN_OR_RETURN(wire::Message response, channel_->CallInto(req.Encode(), dsts));
  WMBT_ASSIGN_OR_RETURN(auto resp, Answer(response, wire::GetBlocksResponse::Decode(response)));
  WMBT_RETURN_IF_ERROR(CheckAnswerCount(resp.payloads.size(), keys.size()));
  return CopyBlocksInto(resp.payloads, dsts, lens);
}

Result<BufferSlice> RemoteStore::GetByContentHash(std::string_view ns, const ContentHash& hash) {
  WMBT_RETURN_IF_ERROR(ValidateNamespace(ns));
  wire::GetByContentHashRequest req{std::string(ns), hash};
  WMBT_ASSIGN_OR_RETURN(auto resp, Call<wire::GetByContentHashResponse>(req.Encode()));
  return std::move(resp.payload);
}

Status RemoteStore::PutSidecar(std::string_view ns, const Fingerprint& fp, const BlockKey& tip,
                               ByteView bytes) {
  WMBT_RETURN_IF_ERROR(CheckPutSidecarArgs(ns, bytes.size()));
  wire::PutSidecarRequest req{std::string(ns), fp, tip,
                              BufferSlice{nullptr, bytes.data(), bytes.size()}};
  return Call<wire::PutSidecarResponse>(req.Encode()).status();
}

Result<BufferSlice> RemoteStore::GetSidecar(std::string_view ns, const Fingerprint& fp,
                                            const BlockKey& tip) {
  WMBT_RETURN_IF_ERROR(ValidateNamespace(ns));
  wire::GetSidecarRequest req{std::string(ns), fp, tip};
  WMBT_ASSIGN_OR_RETURN(auto resp, Call<wire::GetSidecarResponse>(req.Encode()));
  return std::move(resp.bytes);
}

Result<RefreshReport> RemoteStore::Refresh() {
  WMBT_ASSIGN_OR_RETURN(auto resp, Call<wire::RefreshResponse>(wire::RefreshRequest{}.Encode()));
  return resp.report;
}

Result<std::vector<ChainState>> RemoteStore::ListChains(std::string_view ns) {
  if (!ns.empty()) WMBT_RETURN_IF_ERROR(ValidateNamespace(ns));
  WMBT_ASSIGN_OR_RETURN(
      auto resp, Call<wire::ListChainsResponse>(wire::ListChainsRequest{std::string(ns)}.Encode()));
  return std::move(resp.chains);
}

Result<std::vector<ChainBlock>> RemoteStore::GetChain(std::string_view ns, const Fingerprint& fp,
                                                      const ChainId& chain_id) {
  WMBT_RETURN_IF_ERROR(ValidateNamespace(ns));
  wire::GetChainRequest req{std::string(ns), fp, chain_id};
  WMBT_ASSIGN_OR_RETURN(auto resp, Call<wire::GetChainResponse>(req.Encode()));
  return std::move(resp.blocks);
}

StoreStats RemoteStore::Stats() {
  auto stats = TryStats();
  if (!stats.ok()) {
    Log(LogLevel::kWarn, "Stats via " + channel_->Describe() +
                             " failed (reporting zeros): " + stats.status().ToString());
    return {};
  }
  return *stats;
}

Result<StoreStats> RemoteStore::TryStats() {
  WMBT_ASSIGN_OR_RETURN(auto resp, Call<wire::StatsResponse>(wire::StatsRequest{}.Encode()));
  {
    std::lock_guard lock(l2_mu_);
    if (!l2_) l2_ = resp.l2;
  }
  return resp.stats;
}

std::vector<NamespaceUsage> RemoteStore::Usage(std::string_view ns, bool by_fingerprint) {
  if (!ns.empty() && !ValidateNamespace(ns).ok()) return {};
  auto resp =
      Call<wire::UsageResponse>(wire::UsageRequest{std::string(ns), by_fingerprint}.Encode());
  if (!resp.ok()) {
    Log(LogLevel::kWarn, "Usage via " + channel_->Describe() +
                             " failed (reporting nothing): " + resp.status().ToString());
    return {};
  }
  return std::move(resp->namespaces);
}

Result<EvictionReport> RemoteStore::Evict() {
  WMBT_ASSIGN_OR_RETURN(auto resp, Call<wire::EvictResponse>(wire::EvictRequest{}.Encode()));
  return resp.report;
}

std::string RemoteStore::DescribeL2() const {
  std::string l2;
  {
    std::lock_guard lock(l2_mu_);
    if (l2_) l2 = *l2_;
  }
  if (l2.empty()) {
    auto resp = Call<wire::StatsResponse>(wire::StatsRequest{}.Encode());
    if (!resp.ok())
      return "daemon " + channel_->Describe() + " (L2 unknown: " + resp.status().ToString() + ")";
    l2 = resp->l2;
    std::lock_guard lock(l2_mu_);
    l2_ = l2;
  }
  return "daemon " + channel_->Describe() + " (L2 " + l2 + ")";
}

Status RemoteStore::Ping() {
  return Call<wire::PingResponse>(wire::PingRequest{}.Encode()).status();
}

}  // namespace wombatkv
