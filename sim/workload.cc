#include "sim/workload.h"

#include <algorithm>
#include <cstring>

namespace wombatkv::sim {

const char* OpName(OpKind k) {
  switch (k) {
    case OpKind::kPut: return "put";
    case OpKind::kPublish: return "publish";
    case OpKind::kSave:
      return "save";
    case OpKind::kPutSidecar: return "put-sidecar";
    case OpKind::kLookup: return "lookup";
    case OpKind::kGet: return "get";
    case OpKind::kGetByHash: return "get-by-hash";
    case OpKind::kGetSidecar: return "get-sidecar";
    case OpKind::kRefresh: return "refresh";
    case OpKind::kRunTasks: return "run-tasks";
    case OpKind::kCrash: return "crash";
    case OpKind::kRestart: return "restart";
    case OpKind::kCorrupt: return "corrupt";
    case OpKind::kCorruptHead: return "corrupt-head";
    case OpKind::kBrownout: return "brownout";
  }
  return "?";
}

Workload::Workload(const SwarmConfig& cfg, SimRandom* rng)
    : cfg_(cfg),
      rng_(rng),
      writers_(static_cast<size_t>(cfg.hosts)),
      shelved_(static_cast<size_t>(cfg.hosts)) {}

BlockKey Workload::NewKey() {
  // Unique per run, and a function of the seed only: a stand-in for hash(parent, tokens).
  BlockKey k;
  SimRandom r(cfg_.seed * 1000003 + ++next_key_);
  for (size_t i = 0; i < BlockKey::kSize; i += 8) {
    const uint64_t x = r.Next64();
    std::memcpy(k.bytes.data() + i, &x, 8);
  }
  return k;
}

Scope Workload::RandomScope() {
  return Scope{static_cast<int>(rng_->Uniform(static_cast<uint64_t>(cfg_.namespaces))),
               static_cast<int>(rng_->Uniform(static_cast<uint64_t>(cfg_.fingerprints)))};
}

int Workload::RandomUpHost(const WorldView& world) {
  std::vector<int> up;
  for (int h = 0; h < cfg_.hosts; ++h) {
    if (world.up(h)) up.push_back(h);
  }
  if (up.empty()) return -1;
  return up[rng_->Uniform(up.size())];
}

Workload::Plan Workload::NewPlan(int host, const WorldView& world) {
  Plan p;
  std::vector<uint32_t> base_variants;  // of the earlier chain this one starts with, if any
  p.scope = RandomScope();
  p.session = rng_->Chance(cfg_.p_session);
  if (p.session) {
    // Two session ids per scope, shared by every host: writers race on them.
    p.id = BlockKey{};
    p.id.bytes[0] = 0x5E;
    p.id.bytes[1] = static_cast<uint8_t>(rng_->Uniform(2));
    p.id.bytes[2] = static_cast<uint8_t>(p.scope.ns);
    p.id.bytes[3] = static_cast<uint8_t>(p.scope.fp);
    // Rebase on what this host believes the session holds (it may be stale: that is the race).
    auto [version, keys] = world.chain(host, ChainRef{p.scope, p.id});
    if (rng_->Chance(cfg_.p_cas)) p.expected = version;
    if (!keys.empty() && rng_->Chance(0.7)) {
      p.keys = keys;
      p.keys.resize(rng_->Range(1, keys.size()));
    }
  } else if (!history_.empty() && rng_->Chance(0.7)) {
    // Extend or branch off an earlier chain; sometimes one of another scope (shared tokens).
    const Plan& base = history_[rng_->Uniform(history_.size())];
    base_variants = base.variants;
    if (rng_->Chance(0.7)) p.scope = base.scope;
    p.keys = base.keys;
    p.keys.resize(rng_->Chance(0.6) ? base.keys.size() : rng_->Range(1, base.keys.size()));
  }
  p.base = p.keys.size();
  const size_t grow = rng_->Chance(cfg_.p_buggify) ? rng_->Range(0, 12) : rng_->Range(1, 4);
  for (size_t i = 0; i < grow || p.keys.empty(); ++i) p.keys.push_back(NewKey());
  for (size_t i = 0; i < p.keys.size(); ++i) {
    p.variants.push_back(rng_->Chance(cfg_.p_variant) ? 1 : 0);
  }
  // Buggify drew no new block: the tip is an earlier chain's key, put again with other bytes (an
  // engine whose block for a key changed), to be published over the block already indexed.
  if (p.base == p.keys.size() && p.keys.size() <= base_variants.size()) {
    p.variants.back() = base_variants[p.keys.size() - 1] ^ 1;
  }
  if (!p.session) p.id = p.keys.back();
  return p;
}

Op Workload::WriterStep(int host, const WorldView& world) {
  auto& slot = writers_[static_cast<size_t>(host)];
  auto& shelf = shelved_[static_cast<size_t>(host)];
  // Drawn only with a plan on the shelf (buggify seeds): other seeds replay as before.
  if (!slot && !shelf.empty() && rng_->Chance(0.3)) {
    const size_t i = rng_->Uniform(shelf.size());
    slot = std::move(shelf[i]);  // put already: its next step is the publish
    shelf.erase(shelf.begin() + static_cast<std::ptrdiff_t>(i));
  }
  if (!slot) slot = NewPlan(host, world);
  Plan& p = *slot;
  Op op;
  op.host = host;
  op.scope = op.owner = p.scope;
  op.keys = p.keys;
  op.variants = p.variants;
  op.chain_id = p.id;
  op.session = p.session;
  op.expected = p.expected;
  // Buggify: publish before putting anything new, or put again after putting.
  const bool buggify = rng_->Chance(cfg_.p_buggify);
  if (!p.put || (buggify && rng_->Chance(0.5))) {
    op.kind = OpKind::kPut;
    op.put_from = rng_->Chance(cfg_.p_resave_all) ? 0 : std::min(p.base, p.keys.size() - 1);
    // An engine's save (the C ABI's wmbt_kv_put_kv_blocks, the daemon's save): only for a chain
    // published under its own tip, last writer wins, which is what SaveChain publishes.
    if (!p.session && !p.expected && rng_->Chance(cfg_.p_save)) {
      op.kind = OpKind::kSave;
      op.async = rng_->Chance(cfg_.p_async);
    }
    return op;
  }
  op.kind = OpKind::kPublish;
  op.async = rng_->Chance(cfg_.p_async);
  return op;
}

void Workload::OnPut(const Op& op, bool ok) {
  auto& slot = writers_[static_cast<size_t>(op.host)];
  if (!slot || slot->keys != op.keys) return;
  if (ok) {
    slot->put = true;
    history_.push_back(*slot);
    if (history_.size() > 64) history_.erase(history_.begin());
    // Buggify: the engine gives the chain up without publishing it (1 in 16, and every chain
    // grown by no block, whose tip re-put is the case a later bare publish must honour); its puts
    // stay pending. Chosen from the key's bytes rather than drawn: the draws stay as they were.
    if (cfg_.p_buggify > 0 &&
        (op.keys.back().bytes[9] % 16 == 0 || slot->base == slot->keys.size())) {
      auto& shelf = shelved_[static_cast<size_t>(op.host)];
      if (shelf.size() < 8) shelf.push_back(*slot);
      slot.reset();
    }
  } else if (rng_->Chance(0.5)) {
    slot.reset();  // the engine gives up on this save
  }
}

void Workload::OnSaved(const Op& op, bool acked) {
  auto& slot = writers_[static_cast<size_t>(op.host)];
  if (!slot || slot->keys != op.keys) return;
  // Readers look for it whatever the answer: a failed save may still have published.
  if (!slot->put) {
    history_.push_back(*slot);
    if (history_.size() > 64) history_.erase(history_.begin());
  }
  if (acked || rng_->Chance(0.5)) {
    slot.reset();
  } else {
    slot->put = false;  // the engine saves it again (its blocks may be pending in RAM only)
  }
}

void Workload::OnPublished(const Op& op, bool acked) {
  auto& slot = writers_[static_cast<size_t>(op.host)];
  if (!slot || slot->keys != op.keys) return;
  if (acked || rng_->Chance(0.5)) slot.reset();  // else retry the publish later
}

void Workload::OnCrash(int host) {
  writers_[static_cast<size_t>(host)].reset();
  shelved_[static_cast<size_t>(host)].clear();  // the engine process died with them
}

Op Workload::ReaderStep(int host, const Model& model) {
  Op op;
  op.host = host;
  const uint64_t what = rng_->Uniform(10);
  if (what < 2) {
    // By content hash: one the workload put (maybe asked in another namespace), or a stranger.
    op.kind = OpKind::kGetByHash;
    auto all = model.AllHashes();
    op.scope = RandomScope();
    if (!all.empty() && rng_->Chance(0.9)) {
      const auto& [ns, hash] = all[rng_->Uniform(all.size())];
      op.hash = hash;
      op.owner = Scope{ns, 0};
      if (rng_->Chance(0.8)) op.scope.ns = ns;
      op.async = rng_->Chance(cfg_.p_async);
    } else {
      op.hash.bytes[0] = static_cast<uint8_t>(rng_->Next64());
      op.owner = op.scope;
    }
    return op;
  }
  if (history_.empty()) {
    op.kind = OpKind::kRefresh;
    return op;
  }
  const Plan& p = history_[rng_->Uniform(history_.size())];
  op.owner = op.scope = p.scope;
  if (rng_->Chance(0.15)) op.scope = RandomScope();  // G8 probe
  if (what < 3) {
    op.kind = OpKind::kGetSidecar;
    op.keys = {p.keys[rng_->Uniform(p.keys.size())]};
    if (rng_->Chance(0.7)) op.keys = {p.keys.back()};
    return op;
  }
  op.kind = what < 6 ? OpKind::kLookup : OpKind::kGet;
  if (op.kind == OpKind::kGet) op.async = rng_->Chance(cfg_.p_async);
  op.keys = p.keys;
  if (rng_->Chance(0.5)) op.keys.resize(rng_->Range(1, p.keys.size()));
  if (rng_->Chance(0.1)) op.keys.push_back(NewKey());  // a key nobody put
  // A third of the gets start in the middle of the chain (a get restores any stretch of it).
  // Chosen from the keys' bytes rather than drawn, so every recorded seed replays as before.
  const uint8_t pick = op.keys.back().bytes[7];
  if (op.kind == OpKind::kGet && op.keys.size() > 1 && pick % 3 == 0) {
    op.keys.erase(op.keys.begin(), op.keys.begin() + 1 + pick / 3 % (op.keys.size() - 1));
  }
  return op;
}

Op Workload::Next(const WorldView& world, const Model& model) {
  Op op;
  std::vector<int> down;
  for (int h = 0; h < cfg_.hosts; ++h) {
    if (!world.up(h)) down.push_back(h);
  }
  if (!down.empty() && (down.size() == static_cast<size_t>(cfg_.hosts) || rng_->Chance(0.3))) {
    op.kind = OpKind::kRestart;
    op.host = down[rng_->Uniform(down.size())];
    return op;
  }
  const int host = RandomUpHost(world);
  op.host = host;
  if (rng_->Chance(cfg_.p_crash_step)) {
    op.kind = OpKind::kCrash;
    const uint64_t m = rng_->Uniform(10);
    op.crash_mode = cfg_.Allowed(m < 4   ? L1CrashMode::kProcess
                                 : m < 6 ? L1CrashMode::kMachineSubset
                                 : m < 8 ? L1CrashMode::kMachinePrefix
                                 : m < 9 ? L1CrashMode::kLost
                                         : L1CrashMode::kCorrupt);
    return op;
  }
  if (rng_->Chance(cfg_.p_corrupt)) {
    op.kind = OpKind::kCorrupt;
    op.n = rng_->Next64();
    return op;
  }
  if (rng_->Chance(cfg_.p_corrupt_head)) {
    op.kind = OpKind::kCorruptHead;
    op.n = rng_->Next64();
    return op;
  }
  if (rng_->Chance(cfg_.p_brownout_toggle)) {
    op.kind = OpKind::kBrownout;
    return op;
  }
  const uint64_t r = rng_->Uniform(100);
  if (r < 40) return WriterStep(host, world);
  if (r < 70) return ReaderStep(host, model);
  if (r < 76 && !history_.empty()) {
    const Plan& p = history_[rng_->Uniform(history_.size())];
    op.kind = OpKind::kPutSidecar;
    op.scope = op.owner = p.scope;
    op.keys = {p.keys.back()};
    op.gen = static_cast<uint32_t>(rng_->Uniform(1000));
    return op;
  }
  if (r < 85) {
    op.kind = OpKind::kRefresh;
    return op;
  }
  op.kind = OpKind::kRunTasks;
  op.n = rng_->Range(1, 6);
  return op;
}

}  // namespace wombatkv::sim
