// Workloads: what the simulated engines do. They only choose operations; they never judge the
// answers (that is checkers.h) and never look at the store's internals.
//
//   writers   each host has at most one chain in progress: put its blocks (all of them again, as
//             engines that re-save whole chains do, or only the new ones), then publish it —
//             under its own tip (the C ABI's convention) or under a session id shared with other
//             writers (racing, last-writer-wins or compare-and-swap on the version they last saw).
//             Chains extend or branch off earlier chains, sometimes of another fingerprint
//             (same tokens, another model: the G8 case).
//   readers   lookup, get, get by content hash, get sidecar — sometimes probing with another
//             namespace or fingerprint than the keys were written under.
//   sidecars  put after (or without) the chain they belong to.
//   chaos     refresh, background tasks, crashes (between steps), restarts, byte flips in L2,
//             brown-outs.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "sim/model.h"
#include "sim/sim_planes.h"
#include "sim/swarm.h"

namespace wombatkv::sim {

enum class OpKind {
  kPut,
  kPublish,
  kSave,  // put and publish in one call (SaveChain): chain id = tip, last writer wins
  kPutSidecar,
  kLookup,
  kGet,
  kGetByHash,
  kGetSidecar,
  kRefresh,
  kRunTasks,
  kCrash,
  kRestart,
  kCorrupt,
  kCorruptHead,  // a byte flip in a stored chain head (G9 in the head plane)
  kBrownout,
};
const char* OpName(OpKind k);

struct Op {
  OpKind kind = OpKind::kRefresh;
  int host = 0;
  Scope scope;                     // where the call is made (a probe may differ from `owner`)
  Scope owner;                     // where the keys were written
  std::vector<BlockKey> keys;      // the chain root→tip (put/publish) or the keys read
  std::vector<uint32_t> variants;  // put: payload variant per key
  size_t put_from = 0;             // put: first key of keys[] to put
  ChainId chain_id;                // publish
  bool session = false;
  std::optional<uint64_t> expected;  // publish with CAS
  // Save and publish: through the completion form (SaveChainAsync, PublishChainAsync); get and
  // get by hash: the non-blocking form first (Get*IfCached), the blocking one if it declines.
  bool async = false;
  uint32_t gen = 0;                  // sidecar generation
  ContentHash hash;                  // get by hash
  uint64_t n = 0;                    // tasks to run; corruption target seed
  L1CrashMode crash_mode = L1CrashMode::kProcess;
};

// What the workload may ask the world (no I/O, no effect on the store).
struct WorldView {
  std::function<bool(int host)> up;
  // The version and keys of a chain as the host's L0 has it (0 / empty when absent).
  std::function<std::pair<uint64_t, std::vector<BlockKey>>(int host, const ChainRef&)> chain;
};

class Workload {
 public:
  Workload(const SwarmConfig& cfg, SimRandom* rng);
  Op Next(const WorldView& world, const Model& model);
  // The publish of `op` finished (acked or not); the writer moves on.
  void OnPublished(const Op& op, bool acked);
  void OnPut(const Op& op, bool ok);
  void OnSaved(const Op& op, bool acked);
  void OnCrash(int host);

 private:
  struct Plan {
    Scope scope;
    std::vector<BlockKey> keys;
    std::vector<uint32_t> variants;
    size_t base = 0;  // keys[0..base) came from an earlier chain
    ChainId id;
    bool session = false;
    std::optional<uint64_t> expected;
    bool put = false;
  };
  Plan NewPlan(int host, const WorldView& world);
  BlockKey NewKey();
  Scope RandomScope();
  int RandomUpHost(const WorldView& world);
  Op WriterStep(int host, const WorldView& world);
  Op ReaderStep(int host, const Model& model);

  const SwarmConfig& cfg_;
  SimRandom* rng_;
  uint64_t next_key_ = 0;
  std::vector<std::optional<Plan>> writers_;
  // Per host: plans put and given up (buggify), which the engine may come back to and publish
  // without putting again, as `wombatkv publish` does with blocks put earlier.
  std::vector<std::vector<Plan>> shelved_;
  std::vector<Plan> history_;  // every plan ever put, for readers, sidecars and extensions
};

}  // namespace wombatkv::sim
