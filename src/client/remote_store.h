// RemoteStore: the Store interface served by a wombatkvd daemon. Every method is one request /
// response exchange over a Channel (tcp://, shm://, or the in-process loopback used by tests); the
// daemon runs the real Store (src/daemon/service.h), so the guarantees of SPEC §5 are the daemon's.
//
// Copies: PutBlocks sends payloads as non-owning views of the caller's memory (or the caller's
// `owned` slices); the transport copies them once onto the wire / into shared memory. GetBlocks
// returns a Borrow over the response's payload slices (no copy beyond the transport's).
//
// Errors: the daemon's status as it sent it (a miss is NotFound, a lost CAS is Conflict with
// `*current` filled); Unavailable when the channel cannot reach the daemon; InvalidArgument for
// a malformed response. Arguments the daemon would refuse anyway (bad namespace, empty or oversized
// batch, too many keys) are refused here first, with the same codes as the embedded Store.
// Usage() and Stats() cannot report errors through the interface: they return empty / zeros and
// log through `log` (when given).
//
// Thread-safety: as Store — any number of threads at once (calls are pipelined on the channel).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "client/channel.h"
#include "wombatkv/store.h"

namespace wombatkv {

class RemoteStore final : public Store {
 public:
  explicit RemoteStore(std::unique_ptr<Channel> channel, LogSink log = nullptr);
  ~RemoteStore() override;

  Result<std::vector<ContentHash>> PutBlocks(std::string_view ns, const Fingerprint& fp,
                                             std::span<const BlockPut> blocks) override;
  // One SaveChain request; against a daemon that does not know the op (an older one), PutBlocks
  // then PublishChain, as Store's default.
  Result<uint64_t> SaveChain(std::string_view ns, const Fingerprint& fp,
                             std::span<const BlockPut> blocks) override;
  Result<uint64_t> PublishChain(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id,
                                const BlockKey& tip,
                                std::optional<uint64_t> expected_version = std::nullopt,
                                ChainState* current = nullptr) override;
  Result<size_t> LookupPrefix(std::string_view ns, const Fingerprint& fp,
                              std::span<const BlockKey> keys) override;
  Result<Borrow> GetBlocks(std::string_view ns, const Fingerprint& fp,
                           std::span<const BlockKey> keys) override;
  // Over TCP the payloads are received straight into dsts (Channel::CallInto).
  Status GetBlocksInto(std::string_view ns, const Fingerprint& fp, std::span<const BlockKey> keys,
                       std::span<const std::span<uint8_t>> dsts, std::span<size_t> lens) override;
  Result<BufferSlice> GetByContentHash(std::string_view ns, const ContentHash& hash) override;
  Status PutSidecar(std::string_view ns, const Fingerprint& fp, const BlockKey& tip,
                    ByteView bytes) override;
  Result<BufferSlice> GetSidecar(std::string_view ns, const Fingerprint& fp,
                                 const BlockKey& tip) override;
  Result<RefreshReport> Refresh() override;
  Result<std::vector<ChainState>> ListChains(std::string_view ns) override;
  Result<std::vector<ChainBlock>> GetChain(std::string_view ns, const Fingerprint& fp,
                                           const ChainId& chain_id) override;
  StoreStats Stats() override;
  Result<StoreStats> TryStats() override;
  // As ListChains: empty (and logged) when the daemon cannot be asked.
  std::vector<NamespaceUsage> Usage(std::string_view ns, bool by_fingerprint) override;
  // PermissionDenied unless the session's token grants every namespace.
  Result<EvictionReport> Evict() override;
  // "daemon <channel> (L2 <the daemon's DescribeL2()>)"; the daemon's part is fetched (with a
  // Stats call) the first time and kept.
  std::string DescribeL2() const override;

  // Liveness check: one Ping round trip.
  Status Ping();
  Channel& channel() { return *channel_; }

 private:
  template <typename Response>
  Result<Response> Call(wire::Message request) const;
  void Log(LogLevel level, const std::string& line) const;

  std::unique_ptr<Channel> channel_;
  LogSink log_;
  std::atomic<bool> daemon_lacks_save_{false};
  mutable std::mutex l2_mu_;
  mutable std::optional<std::string> l2_;  // the daemon's DescribeL2(), once known
};

}  // namespace wombatkv
