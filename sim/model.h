// The reference model: what the SPEC's guarantees say must (and must not) be observable, built
// only from what the simulator asked for and what each call answered — never from the store's
// own state. Operations in doubt (an error that may hide an applied write, or a crash in the
// middle) are recorded as such, so a checker allows either outcome for them (RocksDB's
// ExpectedState).
//
//   lower bound  LowerBound(host, scope, keys): what a lookup on that host must at least find —
//                the host's own acknowledged publishes (G1) and, after its last successful
//                Refresh or Open, everything that was in L2 at that moment (G3, G11).
//                A get may start in the middle of a chain: StretchLowerBound counts keys that
//                follow each other in such a chain from wherever keys[0] sits in it (the
//                workload's keys each have one parent, so the store's start is that one).
//   upper bound  UpperBound(scope, keys): what a lookup on any host may at most find — the
//                longest prefix of `keys` that some chain head written to L2 in this (namespace,
//                fingerprint) named (G4, G8): a publish that never wrote its head (crashed before
//                it, refused with Conflict or FailedPrecondition, failed before L2 applied it) is
//                never found. StretchUpperBound is the same for a get starting mid-chain.
//   bytes        every payload the workload put, per (scope, key), and per content hash (G9).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "index/radix_index.h"
#include "sim/swarm.h"
#include "wombatkv/object_store.h"
#include "wombatkv/types.h"

namespace wombatkv::sim {

inline constexpr const char* kL2Prefix = "kv";

// (namespace, fingerprint): the scope blocks, lookups and chains live in.
struct Scope {
  int ns = 0;
  int fp = 0;
  auto operator<=>(const Scope&) const = default;
};
std::string NsName(int ns);
Fingerprint FpOf(int fp);
std::string ScopeName(const Scope& s);
std::string ShortKey(const BlockKey& k);

struct ChainRef {
  Scope scope;
  ChainId id;
  auto operator<=>(const ChainRef&) const = default;
};

// Deterministic payloads: the bytes of (scope, key, variant) never depend on the run, so a
// checker can tell exactly which put a returned payload came from. Different scopes give
// different bytes for the same key (the G8 case: same tokens, another model).
std::vector<uint8_t> PayloadBytes(const SwarmConfig& cfg, const Scope& s, const BlockKey& key,
                                  uint32_t variant);
std::vector<uint8_t> SidecarBytes(const Scope& s, const BlockKey& tip, uint32_t gen);

// A chain head as the bucket holds it right now.
struct HeadTruth {
  uint64_t version = 0;
  std::vector<ChainEntry> entries;
  uint64_t published_us = 0;
};
using L2Heads = std::map<ChainRef, HeadTruth>;
// Reads every head of the bucket (no faults). Undecodable heads (the simulator's corrupt-head
// fault) are skipped.
L2Heads ReadL2Heads(ObjectStore* truth, const SwarmConfig& cfg);
std::vector<BlockKey> KeysOf(const std::vector<ChainEntry>& entries);

class Model {
 public:
  // `evictable`: the evict-gc scenario, where chains may become shorter (a prefix) or vanish, so
  // nothing a host once saw stays a lower bound — except right after its own publish (G1/G10),
  // which the publish checker verifies directly. set_evictable(false) once eviction has stopped.
  Model(int hosts, bool evictable)
      : known_(static_cast<size_t>(hosts)),
        pending_(static_cast<size_t>(hosts)),
        maybe_pending_(static_cast<size_t>(hosts)),
        evictable_(evictable) {}
  void set_evictable(bool on) { evictable_ = on; }
  bool evictable() const { return evictable_; }
  // Whether `keys` is a prefix of some publish attempted for chain `c` (what eviction may leave).
  bool PrefixOfAttempt(const ChainRef& c, const std::vector<BlockKey>& keys) const;
  // A head was deleted from L2 (eviction, compaction): the chain's versions start again at 1, so
  // earlier acknowledged versions no longer bound the next one (G6 holds per head lifetime).
  void OnHeadDeleted(const ChainRef& c) { max_acked_version_.erase(c); }
  // The simulator flipped a byte of the chain's head in L2: the store ignores the chain until it
  // is published again (G9), so nothing acknowledged for it is owed any more — nor for chains
  // whose keys are a prefix of `keys` (the damaged head's): their own heads may have been deleted
  // as redundant (compaction) — and a publish over the damage starts its versions again.
  void OnHeadCorrupted(const ChainRef& c, const std::vector<BlockKey>& keys);
  bool HeadCorrupted(const ChainRef& c) const { return corrupted_heads_.count(c) > 0; }
  // Evict-gc: when a blob was last put (any host). A put older than the GC grace that was never
  // published is abandoned (docs/layout.md §7 R1): another host's GC may delete its blob.
  void OnPutAt(int ns, const ContentHash& hash, uint64_t wall_us) { put_us_[{ns, hash}] = wall_us; }
  uint64_t LastPutUs(int ns, const ContentHash& hash) const {
    auto it = put_us_.find({ns, hash});
    return it == put_us_.end() ? 0 : it->second;
  }

  // --- puts ---
  void OnPut(const Scope& s, const BlockKey& key, uint32_t variant, const ContentHash& hash,
             const std::vector<uint8_t>& bytes);
  // The bytes put under this hash in namespace `ns`, if any put returned it.
  const std::vector<uint8_t>* BytesOf(int ns, const ContentHash& hash) const;
  // Every hash the workload's puts of (scope, key) produced.
  std::vector<ContentHash> HashesOf(const Scope& s, const BlockKey& key) const;
  std::vector<std::pair<int, ContentHash>> AllHashes() const;
  // Payload bytes allowed for (scope, key): any variant ever put there.
  bool PayloadAllowed(const SwarmConfig& cfg, const Scope& s, const BlockKey& key,
                      ByteView bytes) const;

  // Per host: the put of a key it acknowledged that no publish has taken yet. A publish of that
  // key as its tip must take this put, not a block of the key already indexed (CollectChain walks
  // the pending puts first). Forgotten whenever it is in doubt: a put that failed, a crash or
  // restart (unsynced L1 records), a publish that took it.
  struct PendingPut {
    ContentHash hash;
    BlockKey parent;
    uint64_t put_us = 0;  // simulated wall clock
  };
  void OnPutAcked(int host, const Scope& s, const BlockKey& key, const PendingPut& put) {
    pending_[static_cast<size_t>(host)][{s, key}] = put;
  }
  void OnPutInDoubt(int host, const Scope& s, const BlockKey& key) {
    pending_[static_cast<size_t>(host)].erase({s, key});
  }
  // A head this host wrote: the puts it published (same bytes, same parent) are taken.
  void OnPublishedBy(int host, const Scope& s, const std::vector<ChainEntry>& entries);
  const PendingPut* PendingOf(int host, const Scope& s, const BlockKey& key) const {
    const auto& m = pending_[static_cast<size_t>(host)];
    auto it = m.find({s, key});
    return it == m.end() ? nullptr : &it->second;
  }
  void ForgetPending(int host) { pending_[static_cast<size_t>(host)].clear(); }
  // Every put a host attempted (acknowledged or not, before a crash or not) of a key with these
  // bytes that no publish of that host has taken since: what its store may still hold pending,
  // an over-approximation of PendingOf that survives doubt.
  void OnPutAttempted(int host, const Scope& s, const BlockKey& key, const ContentHash& hash) {
    maybe_pending_[static_cast<size_t>(host)].insert({s, key, hash});
  }
  bool MaybePending(int host, const Scope& s, const BlockKey& key, const ContentHash& hash) const {
    return maybe_pending_[static_cast<size_t>(host)].count({s, key, hash}) > 0;
  }

  // --- publishes ---
  void OnPublishAttempt(const ChainRef& c, const std::vector<BlockKey>& keys);
  void OnPublishAcked(int host, const ChainRef& c, const std::vector<BlockKey>& keys,
                      uint64_t version);
  // Any failure: the host's view of this chain is no longer known (it may have re-read L2).
  void OnPublishFailed(int host, const ChainRef& c);
  void OnSynced(int host, const L2Heads& heads);          // a successful Refresh or Open
  void OnRefreshFailed(int host, const L2Heads& heads);   // partially applied
  // A refresh the host ran by itself inside a call: it knows `settled` (the heads it must have
  // listed), and keeps what it knew of any other chain whose head `after` the call still has the
  // same keys (a refresh re-checks a chain it did not list before dropping it).
  void OnAutoRefreshed(int host, const L2Heads& settled, const L2Heads& after);
  void OnCrash(int host) {
    known_[static_cast<size_t>(host)].clear();
    ForgetPending(host);
  }

  size_t LowerBound(int host, const Scope& s, const std::vector<BlockKey>& keys) const;
  size_t StretchLowerBound(int host, const Scope& s, const std::vector<BlockKey>& keys) const;
  // A chain head was written to L2 (SimBucket::on_head_written: a publish, a save, an eviction
  // trim; applied, whatever the writer was told).
  void OnHeadWritten(const ChainRef& c, std::vector<BlockKey> keys);
  size_t UpperBound(const Scope& s, const std::vector<BlockKey>& keys) const;
  size_t StretchUpperBound(const Scope& s, const std::vector<BlockKey>& keys) const;

  struct Ack {
    std::vector<BlockKey> keys;
    uint64_t version = 0;
    int host = 0;
    bool superseded = false;  // a later publish of the same chain was attempted
  };
  const std::map<ChainRef, Ack>& acks() const { return acks_; }
  uint64_t MaxAckedVersion(const ChainRef& c) const;

  // --- sidecars (keyed by scope and tip) ---
  void OnSidecarAttempt(const ChainRef& at, uint32_t gen);
  void OnSidecarAcked(const ChainRef& at, uint32_t gen);
  bool SidecarAllowed(const ChainRef& at, ByteView bytes) const;
  // The acknowledged generation if no later put of this sidecar was attempted.
  std::optional<uint32_t> SidecarSettled(const ChainRef& at) const;
  std::vector<ChainRef> Sidecars() const;

 private:
  std::map<std::tuple<Scope, BlockKey>, std::map<uint32_t, ContentHash>> puts_;
  std::map<std::pair<int, ContentHash>, std::vector<uint8_t>> bytes_;
  // Per scope: the keys of every head ever written to L2, never forgotten. A host's L0 may lag
  // L2 for as long as it does not refresh, so a head replaced (last writer wins), trimmed by
  // eviction, compacted away or damaged since may still be what a host serves; each of those
  // only adds a record here (a trimmed head is a prefix of the one it trims).
  std::map<Scope, std::set<std::vector<BlockKey>>> written_heads_;
  std::map<ChainRef, Ack> acks_;
  std::map<ChainRef, std::set<std::vector<BlockKey>>> attempts_;
  std::map<std::pair<int, ContentHash>, uint64_t> put_us_;
  std::map<ChainRef, uint64_t> max_acked_version_;
  std::set<ChainRef> corrupted_heads_;  // ever damaged by the simulator
  // Per host: chains whose content this host's L0 is known to hold.
  std::vector<std::map<ChainRef, std::vector<BlockKey>>> known_;
  std::vector<std::map<std::pair<Scope, BlockKey>, PendingPut>> pending_;
  std::vector<std::set<std::tuple<Scope, BlockKey, ContentHash>>> maybe_pending_;
  bool evictable_ = false;
  struct SidecarState {
    std::set<uint32_t> attempted;
    std::optional<uint32_t> acked;
    bool superseded = false;
  };
  std::map<ChainRef, SidecarState> sidecars_;
};

}  // namespace wombatkv::sim

namespace wombatkv::sim {
// One head as the bucket holds it right now (nullopt if absent or undecodable).
std::optional<HeadTruth> ReadL2Head(ObjectStore* truth, const ChainRef& c);
}  // namespace wombatkv::sim
