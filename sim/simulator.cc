#include "sim/simulator.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <memory>

#include "layout/object_keys.h"
#include "object/crash_model_fs.h"
#include "sim/checkers.h"
#include "sim/model.h"
#include "sim/sim_env.h"
#include "sim/sim_planes.h"
#include "sim/swarm.h"
#include "sim/workload.h"
#include "store/store_test_hooks.h"
#include "wombatkv/store.h"

namespace wombatkv::sim {
namespace {

std::string Code(const Status& s) { return std::string(CodeName(s.code())); }

class World {
 public:
  World(uint64_t seed, const SimOptions& options)
      : options_(options),
        cfg_(SwarmConfig::FromSeed(seed, options.steps, options.capacity, options.overrides)),
        workload_rng_(seed),
        fault_rng_(seed ^ 0xfa017),
        sched_rng_(seed ^ 0x5c4ed),
        buggify_rng_(seed ^ 0xb066f),
        disk_rng_(seed ^ 0xd15c),
        borrow_rng_(seed ^ 0xb0770),
        trace_(&clock_),
        model_(cfg_.hosts, cfg_.capacity),
        workload_(cfg_, &workload_rng_),
        checkers_(cfg_, model_, &bucket_,
                  [this](const std::string& g, const std::string& w) { Fail(g, w); }),
        rates_(cfg_.faults) {
    trace_.verbose = options.verbose;
    trace_.keep = std::max(Trace::kTailEvents, options.tail_events);
    checkers_.l2_invariants = options.l2_invariants;
    checkers_.wall_us = [this] { return clock_.WallMicros(); };
    checkers_.head_in_doubt = [this](const std::string& key) { return HeadInDoubt(key); };
    bucket_.on_head_written = [this](const std::string& key) {
      // What lookups may find from now on (G4's upper bound), whether or not the l2 invariants
      // are checked: the head as L2 holds it, applied whatever its writer is told.
      if (auto c = RefOfHeadKey(key)) {
        if (auto head = ReadL2Head(bucket_.truth(), *c)) {
          model_.OnHeadWritten(*c, KeysOf(head->entries));
        }
      }
      checkers_.HeadWritten(key);
      checkers_.HeadVersion(key, /*deleted=*/false);
    };
    bucket_.on_head_deleted = [this](const std::string& key) {
      checkers_.HeadVersion(key, /*deleted=*/true);
      if (auto c = RefOfHeadKey(key)) model_.OnHeadDeleted(*c);
    };
    for (int h = 0; h < cfg_.hosts; ++h) {
      auto host = std::make_unique<Host>();
      auto crash_point = [this](int id, const char*) { return CrashPointHit(id); };
      host->l2 = std::make_unique<FaultyObjectStore>(h, &bucket_, &rates_, &fault_rng_, &clock_,
                                                     &trace_, crash_point);
      host->l1 = std::make_unique<CrashableMetaStore>(h, crash_point);
      host->random = std::make_unique<SimRandom>(seed * 31 + static_cast<uint64_t>(h));
      hosts_.push_back(std::move(host));
    }
    if (cfg_.capacity) MakeDataDirs();
  }
  ~World() {
    hosts_.clear();  // stores first: they hold their data directories' locks
    std::error_code ec;
    if (!data_root_.empty()) std::filesystem::remove_all(data_root_, ec);
  }
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  SimResult Run();

 private:
  struct Host {
    std::unique_ptr<FaultyObjectStore> l2;
    std::unique_ptr<CrashableMetaStore> l1;
    std::unique_ptr<SimRandom> random;
    std::unique_ptr<SimExecutor> executor;  // one per process lifetime
    std::unique_ptr<Store> store;           // null while the host is down
    // With --capacity, a data directory on a disk that crashes with the host: it holds the
    // orphan collector's hold files (GcOptions::hold_dir), the state a collector killed mid-pass
    // leaves for the next process. Real files (in /dev/shm when there is one: cheap syncs).
    std::string data_dir;
    std::unique_ptr<CrashModelFs> disk;
    std::unique_ptr<LogicalMtimeFs> files;  // over `disk`: what the store is given
    bool disk_crashed = false;
    int crash_countdown = -1;               // plane calls until a mid-operation crash
    // The store's refresh counters as the simulator last saw them (automatic refresh).
    uint64_t refreshes = 0, refresh_failures = 0;
  };

  // G10's borrow clause: a payload borrowed (a GetBlocks or GetByContentHash answer) keeps its
  // bytes until the caller releases it, whatever the store does meanwhile — later calls,
  // eviction passes, orphan GC, the store's destruction (a crash of the host). Some answers are
  // held open across later steps, with a copy of the bytes the checkers accepted; when released,
  // every payload must still hold those bytes (a pool that recycled a borrowed buffer would not).
  struct HeldBorrow {
    int host = 0;
    std::string what;                            // for the trace and failures
    std::vector<BufferSlice> slices;             // the borrow itself
    std::vector<std::vector<uint8_t>> expected;  // the bytes as checked when it was taken
    uint64_t step = 0;
  };
  void MaybeHold(int host, std::string what, std::vector<BufferSlice> slices);
  void ReleaseBorrow(size_t i, const char* why);
  void ReleaseBorrowsOf(int host, const char* why);  // -1: all
  std::vector<HeldBorrow> borrows_;
  uint64_t step_ = 0;

  void Fail(const std::string& guarantee, const std::string& what) {
    trace_.Add("VIOLATION " + guarantee + ": " + what);
    if (!result_.ok) return;
    result_.ok = false;
    result_.guarantee = guarantee;
    result_.failure = what;
  }
  bool CrashPointHit(int host) {
    Host& h = *hosts_[static_cast<size_t>(host)];
    if (h.crash_countdown < 0) return false;
    if (h.crash_countdown-- > 0) return false;
    h.executor->DropAll();  // the process dies: nothing queued ever runs, not even in ~Store
    // Nor does any file-system call it makes while it unwinds (a destructor removing a file).
    CrashDisk(h);
    return true;
  }
  void CrashDisk(Host& h) {
    if (!h.disk) return;
    h.disk->Crash();
    h.disk_crashed = true;
  }
  void MakeDataDirs();
  // The chain a head key names, if it is one of this run's scopes.
  std::optional<ChainRef> RefOfHeadKey(const std::string& key) const {
    for (int ns = 0; ns < cfg_.namespaces; ++ns) {
      auto name = layout::ParseChainKey(layout::ChainsPrefix(kL2Prefix, NsName(ns)), key);
      if (!name) continue;
      for (int fp = 0; fp < cfg_.fingerprints; ++fp) {
        if (FpOf(fp) == name->fp) return ChainRef{{ns, fp}, name->chain_id};
      }
    }
    return std::nullopt;
  }
  // See Checkers::head_in_doubt. A listing made since `lag_from_us_` may still show a head as it
  // was before a create or delete in the lag window.
  bool HeadInDoubt(const std::string& key) const {
    if (bucket_.IsCorrupted(key)) return true;
    if (rates_.list_lag_us == 0) return false;
    auto it = bucket_.changes().find(key);
    return it != bucket_.changes().end() && it->second.at_us + rates_.list_lag_us > lag_from_us_;
  }
  // Before a call that lists: what its listing may lag behind.
  void MarkListingStart() { lag_from_us_ = clock_.NowMicros(); }
  // `heads` without the chains a host that just listed may not know (lower bounds only).
  L2Heads Settled(L2Heads heads) const {
    for (auto it = heads.begin(); it != heads.end();) {
      const ChainRef& c = it->first;
      if (HeadInDoubt(layout::ChainKey(kL2Prefix, NsName(c.scope.ns), FpOf(c.scope.fp), c.id))) {
        it = heads.erase(it);
      } else {
        ++it;
      }
    }
    return heads;
  }
  bool Up(int host) const { return hosts_[static_cast<size_t>(host)]->store != nullptr; }
  Store& S(int host) { return *hosts_[static_cast<size_t>(host)]->store; }
  L1CrashMode RandomCrashMode() {
    const uint64_t m = fault_rng_.Uniform(10);
    return cfg_.Allowed(m < 5   ? L1CrashMode::kProcess
                        : m < 7 ? L1CrashMode::kMachineSubset
                        : m < 9 ? L1CrashMode::kMachinePrefix
                                : L1CrashMode::kLost);
  }
  void Crash(int host, L1CrashMode mode, const std::string& why);
  void Restart(int host);
  // Runs `fn` against a host; a HostCrash thrown inside becomes a crash of that host.
  template <typename F>
  void Guard(int host, F&& fn) {
    try {
      fn();
    } catch (const HostCrash& c) {
      Crash(c.host, RandomCrashMode(), "mid-operation");
    }
    (void)host;
  }
  // Automatic refresh (SwarmConfig::refresh_interval_ms): a host may refresh from L2 inside any
  // call that runs its background tasks. BeforeCall notes L2's heads; Called, right after the
  // store returns and before its answer is judged, reads the store's refresh counters and, if a
  // refresh ran, tells the model what that host now knows (Model::OnAutoRefreshed): the chains
  // whose heads were the same before and after the call, and those it knew whose heads still hold
  // the keys it knew (its own publish in the call is recorded after this).
  bool AutoRefreshes(int host) const { return cfg_.RefreshesByItself(host) && Up(host); }
  void BeforeCall(int host);
  void Called(int host, bool ran_only_background_tasks = false);
  void CountRefreshes(int host);  // the counters as they are now, without a model update
  void Step(const Op& op);
  void DoPut(const Op& op);
  void DoPublish(const Op& op);
  void DoSave(const Op& op);
  std::vector<BlockPut> PreparePuts(const Op& op, std::vector<std::vector<uint8_t>>* payloads,
                                    std::vector<ContentHash>* hashes);
  // Starts a completion-form call (`start(done)`) and runs the host's queued tasks until it has
  // answered; nullopt if the queue ran dry first.
  template <typename Start>
  std::optional<Result<uint64_t>> AwaitCompletion(const Op& op, ChainState* current,
                                                  std::optional<HeadTruth>* at_answer,
                                                  Start&& start);
  // Traces and judges the answer of a publish or save, and updates the model.
  void Published(const Op& op, const Result<uint64_t>& r, const std::optional<HeadTruth>& before,
                 const ChainState& current, const std::optional<HeadTruth>* at_answer);
  void DoRefresh(int host);
  // `heads` without the ones this step's host deleted as redundant (a prefix of another head in
  // L2 now): a completion-form save queues that compaction on the executor (store_save_async.cc),
  // so it may run inside any later call that runs tasks, a Refresh included.
  L2Heads WithoutCompacted(int host, L2Heads heads);
  void DoCorrupt(uint64_t n);
  void DoCorruptHead(uint64_t n);
  void CorruptCacheFile(uint64_t n);
  void DoEvict(int host);
  void DoGc(int host);
  void Liveness();
  WorldView View();

  SimOptions options_;
  SwarmConfig cfg_;
  // buggify_rng_ answers the store's buggify points, disk_rng_ picks what a crashed data
  // directory holds: streams of their own, so that neither changes another draw.
  // borrow_rng_ picks which answers are held open and when they are released.
  SimRandom workload_rng_, fault_rng_, sched_rng_, buggify_rng_, disk_rng_, borrow_rng_;
  SimClock clock_;
  Trace trace_;
  SimBucket bucket_;
  Model model_;
  Workload workload_;
  Checkers checkers_;
  FaultRates rates_;
  std::vector<std::unique_ptr<Host>> hosts_;
  std::string data_root_;  // the hosts' data directories (MakeDataDirs)
  SimResult result_;
  bool no_capacity_ = false;  // the liveness phase reopens stores without budgets
  uint64_t lag_from_us_ = 0;
  L2Heads before_call_;     // BeforeCall's snapshot
  // The entries of each head the simulator damaged, as they were (WithoutCompacted).
  std::map<ChainRef, std::vector<ChainEntry>> damaged_heads_;
  bool buggify_on_ = true;  // the store's buggify points; off in the liveness phase
};

WorldView World::View() {
  WorldView v;
  v.up = [this](int h) { return Up(h); };
  v.chain = [this](int h, const ChainRef& c) -> std::pair<uint64_t, std::vector<BlockKey>> {
    auto listed = S(h).ListChains(NsName(c.scope.ns));
    if (!listed.ok()) return {0, {}};  // the embedded store lists any valid namespace
    for (const ChainState& s : *listed) {
      if (s.fp == FpOf(c.scope.fp) && s.chain_id == c.id) {
        auto blocks = S(h).GetChain(s.ns, s.fp, s.chain_id);
        std::vector<BlockKey> keys;
        if (blocks.ok()) {
          for (const auto& b : *blocks) keys.push_back(b.key);
        }
        return {s.version, keys};
      }
    }
    return {0, {}};
  };
  return v;
}

void World::Crash(int host, L1CrashMode mode, const std::string& why) {
  Host& h = *hosts_[static_cast<size_t>(host)];
  h.crash_countdown = -1;
  if (h.executor) h.executor->DropAll();
  CrashDisk(h);
  h.store.reset();  // ~Store drains the executor, which drops everything after DropAll
  // The process's borrows die with it; until then (here: past ~Store) their bytes stay valid.
  ReleaseBorrowsOf(host, "host crashed");
  h.l1->Crash(mode, &fault_rng_);
  model_.OnCrash(host);
  workload_.OnCrash(host);
  result_.crashes++;
  trace_.Add("h" + std::to_string(host) + " CRASH " + why + " L1=" + L1CrashModeName(mode));
}

void World::MakeDataDirs() {
  const char* shm = "/dev/shm";
  const std::filesystem::path base = std::filesystem::is_directory(shm)
                                         ? std::filesystem::path(shm)
                                         : std::filesystem::temp_directory_path();
  std::string pattern = (base / "wombatkv-sim-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) {
    return Fail("setup", "cannot make a data directory in " + base.string());
  }
  data_root_ = pattern;
  for (int i = 0; i < cfg_.hosts; ++i) {
    Host& h = *hosts_[static_cast<size_t>(i)];
    h.data_dir = data_root_ + "/h" + std::to_string(i);
    if (Status s = PosixFileSystem()->CreateDirs(h.data_dir); !s.ok()) {
      return Fail("setup", s.ToString());
    }
    h.disk = std::make_unique<CrashModelFs>(PosixFileSystem(), h.data_dir);
    h.files = std::make_unique<LogicalMtimeFs>(h.disk.get());
  }
}

void World::Restart(int host) {
  Host& h = *hosts_[static_cast<size_t>(host)];
  model_.ForgetPending(host);  // the new process reloads puts from L1: not checked
  h.executor = std::make_unique<SimExecutor>(&sched_rng_);
  StoreOptions o;
  if (h.disk) {
    if (std::exchange(h.disk_crashed, false)) {
      h.disk->ApplyCrash(disk_rng_);  // what the disk holds after the crash, then a new process
      h.disk->Revive();
    }
    o.data_dir = h.data_dir;
    o.fs = h.files.get();
    // The local disk cache (data_dir/cache), kept in the liveness phase too: it is a cache.
    o.disk_cache_bytes_max = cfg_.disk_cache_bytes_max;
  }
  o.object_store = h.l2.get();
  o.meta_store = h.l1.get();
  o.clock = &clock_;
  o.random = h.random.get();
  o.executor = h.executor.get();
  o.cache_bytes_max = cfg_.cache_bytes_max;
  if (host % 2 == 0) o.block_compress_level = cfg_.block_compress_level;
  if (cfg_.RefreshesByItself(host)) o.refresh_interval_ms = cfg_.refresh_interval_ms;
  if (cfg_.capacity && !no_capacity_) {
    if (cfg_.ns_budget_bytes) o.namespace_bytes_max[""] = cfg_.ns_budget_bytes;
    if (cfg_.ns_ttl_seconds) o.namespace_ttl_seconds[""] = cfg_.ns_ttl_seconds;
    o.gc_grace_us = cfg_.gc_grace_us;
    o.publish_grace_seconds = cfg_.publish_grace_seconds;
    // The lag the bucket's listings may have (orphan GC's R3 re-check waits it out); the
    // ungated run shows what happens when an operator leaves it unset.
    if (!options_.gc_ignores_list_lag) o.l2_list_lag_us = cfg_.faults.list_lag_us;
    o.eviction_interval_ms = 1;  // background passes as executor tasks, in the seed's order
    o.gc_interval_ms = 1;
    o.eviction_heads_per_pass = 4;  // small, so passes stop part-way
    // Even hosts take the eviction lease, odd ones evict without it: both the lease and the
    // races between evictors it prevents stay covered (with one host, the lease only).
    if (host % 2 == 1) o.eviction_lease_ms = 0;
    o.gc_deletes_per_pass = 3;
  }
  // The store's buggify points (docs/testing.md) at the swarm's rate, each one taken traced.
  if (cfg_.p_buggify > 0) {
    o.buggify = [this, host](const char* site) {
      if (!buggify_on_ || !buggify_rng_.Chance(cfg_.p_buggify)) return false;
      trace_.Add("h" + std::to_string(host) + " buggify " + site);
      return true;
    };
  }
  o.log = [this](LogLevel, const std::string& m) {
    if (trace_.verbose) std::printf("    log: %s\n", m.c_str());  // not traced: may name ETags
  };
  const L2Heads heads = ReadL2Heads(bucket_.truth(), cfg_);
  MarkListingStart();
  Guard(host, [&] {
    auto s = Store::Open(o);
    trace_.Add("h" + std::to_string(host) + " open -> " + Code(s.status()));
    if (!s.ok()) {
      if (trace_.verbose) std::printf("    open: %s\n", s.status().ToString().c_str());
      if (s.status().code() != Code::kUnavailable) {
        Fail("G3", "h" + std::to_string(host) + " cannot open: " + s.status().ToString());
      }
      return;
    }
    h.store = std::move(s).value();
    // Evict-gc: background passes inside the open may already have trimmed what it loaded, in L2
    // and L0 alike; compare with L2 as it is now.
    const L2Heads now = model_.evictable() ? ReadL2Heads(bucket_.truth(), cfg_) : heads;
    model_.OnSynced(host, Settled(now));
    checkers_.SameAsL2(*h.store, host, now, "open");
    CountRefreshes(host);
  });
}

void World::MaybeHold(int host, std::string what, std::vector<BufferSlice> slices) {
  if (!result_.ok || borrows_.size() >= 8 || !borrow_rng_.Chance(0.3)) return;
  HeldBorrow b;
  b.host = host;
  b.what = std::move(what);
  for (const BufferSlice& s : slices) b.expected.emplace_back(s.view().begin(), s.view().end());
  b.slices = std::move(slices);
  b.step = step_;
  trace_.Add("h" + std::to_string(host) + " holds borrow of " + b.what);
  borrows_.push_back(std::move(b));
}

void World::ReleaseBorrow(size_t i, const char* why) {
  HeldBorrow b = std::move(borrows_[i]);
  borrows_.erase(borrows_.begin() + static_cast<std::ptrdiff_t>(i));
  trace_.Add("h" + std::to_string(b.host) + " releases borrow of " + b.what + " (" + why + ")");
  for (size_t k = 0; k < b.slices.size(); ++k) {
    if (!std::ranges::equal(b.slices[k].view(), b.expected[k])) {
      return Fail("G10", "h" + std::to_string(b.host) + " " + b.what + ": payload " +
                             std::to_string(k) + " of a borrow held since step " +
                             std::to_string(b.step) + " changed before its release (" + why + ")");
    }
  }
}

void World::ReleaseBorrowsOf(int host, const char* why) {
  for (size_t i = borrows_.size(); i-- > 0;) {
    if (host < 0 || borrows_[i].host == host) ReleaseBorrow(i, why);
  }
}

void World::CountRefreshes(int host) {
  Host& h = *hosts_[static_cast<size_t>(host)];
  const StoreStats s = h.store->Stats();
  h.refreshes = s.refreshes;
  h.refresh_failures = s.refresh_failures;
}

void World::BeforeCall(int host) {
  if (!AutoRefreshes(host)) return;
  before_call_ = ReadL2Heads(bucket_.truth(), cfg_);
  MarkListingStart();
}

void World::Called(int host, bool ran_only_background_tasks) {
  if (!AutoRefreshes(host)) return;
  Host& h = *hosts_[static_cast<size_t>(host)];
  const uint64_t refreshes = h.refreshes, failures = h.refresh_failures;
  CountRefreshes(host);
  if (h.refreshes == refreshes && h.refresh_failures == failures) return;
  const L2Heads after = ReadL2Heads(bucket_.truth(), cfg_);
  L2Heads same;
  for (const auto& [c, head] : before_call_) {
    auto it = after.find(c);
    if (it != after.end() && it->second.version == head.version &&
        KeysOf(it->second.entries) == KeysOf(head.entries)) {
      same.emplace(c, head);
    }
  }
  trace_.Add("h" + std::to_string(host) + " refreshed by itself" +
             (h.refresh_failures != failures ? " (failed)" : ""));
  if (h.refresh_failures != failures) {
    model_.OnRefreshFailed(host, Settled(same));
    return;
  }
  model_.OnAutoRefreshed(host, Settled(same), after);
  // Between steps the refresh was the only task that ran: the host's view is L2's, exactly.
  if (ran_only_background_tasks) checkers_.SameAsL2(S(host), host, after, "auto-refresh");
}

L2Heads World::WithoutCompacted(int host, L2Heads heads) {
  const L2Heads after = ReadL2Heads(bucket_.truth(), cfg_);
  for (auto it = heads.begin(); it != heads.end();) {
    const ChainRef& c = it->first;
    const std::string key = layout::ChainKey(kL2Prefix, NsName(c.scope.ns), FpOf(c.scope.fp), c.id);
    const auto redundant = [&](const ChainRef& o, const std::vector<ChainEntry>& entries) {
      return o.scope == c.scope && !(o == c) && entries.size() > it->second.entries.size() &&
             std::equal(it->second.entries.begin(), it->second.entries.end(), entries.begin(),
                        [](const ChainEntry& a, const ChainEntry& b) {
                          return a.key == b.key && a.hash == b.hash;
                        });
    };
    // Redundant with a head L2 holds, or held before the simulator damaged it (the store
    // compacted against the head it had read: the damage does not make that wrong).
    bool covered = std::ranges::any_of(
        after, [&](const auto& h) { return redundant(h.first, h.second.entries); });
    for (const auto& [o, entries] : damaged_heads_) {
      covered = covered || (bucket_.IsCorrupted(layout::ChainKey(kL2Prefix, NsName(o.scope.ns),
                                                                 FpOf(o.scope.fp), o.id)) &&
                            redundant(o, entries));
    }
    bool compacted = bucket_.DeletedThisStep(key) && !after.count(c) && covered;
    // Unless the delete applied but its answer was lost (seed 2076): told it failed, the store
    // keeps the chain (DeleteRedundantHead); run inside a Refresh after its listing, the refresh
    // ends with the chain as L2 held it when it listed. Allowed, only for such a head and only
    // with the version L2 held (a prefix of a longer head: harmless); the next refresh drops it.
    if (compacted && bucket_.DeleteUnansweredThisStep(key) && Up(host) &&
        View().chain(host, c).first == it->second.version) {
      trace_.Add("h" + std::to_string(host) + " keeps compacted chain " + ShortKey(c.id) +
                 " after a lost delete answer");
      compacted = false;
    }
    it = compacted ? heads.erase(it) : std::next(it);
  }
  return heads;
}

void World::DoRefresh(int host) {
  const L2Heads heads = ReadL2Heads(bucket_.truth(), cfg_);
  MarkListingStart();
  Guard(host, [&] {
    auto r = S(host).Refresh();
    trace_.Add("h" + std::to_string(host) + " refresh -> " + Code(r.status()));
    if (AutoRefreshes(host)) CountRefreshes(host);  // its own count, not one in the background
    if (r.ok()) {
      const L2Heads now =
          model_.evictable() ? ReadL2Heads(bucket_.truth(), cfg_) : WithoutCompacted(host, heads);
      model_.OnSynced(host, Settled(now));
      checkers_.SameAsL2(S(host), host, now, "refresh");
    } else {
      model_.OnRefreshFailed(host, Settled(heads));
      if (r.status().code() != Code::kUnavailable) {
        Fail("G11", "refresh failed with " + r.status().ToString());
      }
    }
  });
}

void World::DoPut(const Op& op) {
  std::vector<std::vector<uint8_t>> payloads;
  std::vector<ContentHash> hashes;
  const std::vector<BlockPut> puts = PreparePuts(op, &payloads, &hashes);
  Guard(op.host, [&] {
    auto r = S(op.host).PutBlocks(NsName(op.scope.ns), FpOf(op.scope.fp), puts);
    Called(op.host);
    trace_.Add("h" + std::to_string(op.host) + " put " + ScopeName(op.scope) + " " +
               std::to_string(puts.size()) + " blocks up to " + ShortKey(op.keys.back()) +
               " -> " + Code(r.status()));
    checkers_.Put(S(op.host), op, r);
    for (size_t i = op.put_from; i < op.keys.size(); ++i) {
      if (!r.ok()) {
        model_.OnPutInDoubt(op.host, op.scope, op.keys[i]);
        continue;
      }
      model_.OnPutAcked(op.host, op.scope, op.keys[i],
                        Model::PendingPut{(*r)[i - op.put_from], i ? op.keys[i - 1] : BlockKey{},
                                          clock_.WallMicros()});
    }
    workload_.OnPut(op, r.ok());
  });
}

// The puts of a save or put: the bytes the model allows from now on (a put in doubt may still be
// published), and the calls' arguments.
std::vector<BlockPut> World::PreparePuts(const Op& op, std::vector<std::vector<uint8_t>>* payloads,
                                         std::vector<ContentHash>* hashes) {
  std::vector<BlockPut> puts;
  for (size_t i = op.put_from; i < op.keys.size(); ++i) {
    payloads->push_back(PayloadBytes(cfg_, op.scope, op.keys[i], op.variants[i]));
    hashes->push_back(HashPayload(payloads->back()));
    model_.OnPut(op.scope, op.keys[i], op.variants[i], hashes->back(), payloads->back());
    model_.OnPutAt(op.scope.ns, hashes->back(), clock_.WallMicros());
    model_.OnPutAttempted(op.host, op.scope, op.keys[i], hashes->back());
  }
  for (size_t i = op.put_from; i < op.keys.size(); ++i) {
    puts.push_back(
        BlockPut{op.keys[i], i ? op.keys[i - 1] : BlockKey{}, (*payloads)[i - op.put_from]});
  }
  return puts;
}

template <typename Start>
std::optional<Result<uint64_t>> World::AwaitCompletion(const Op& op, ChainState* current,
                                                       std::optional<HeadTruth>* at_answer,
                                                       Start&& start) {
  // The completion form: the store answers in the call or from a task it queued on the executor
  // (the re-check of an indexed prefix), run here in the seed's order with the other queued work
  // until the answer comes, as the daemon's threads would. No crash is armed (Step): a crash
  // between the store's AsyncBegan and its completion would leave ~Store waiting for ever.
  // The answer may come from inside a task that goes on after it (an eviction pass that waited
  // on the executor): L2's head is noted at the answer, when the caller learns it.
  std::optional<Result<uint64_t>> answer;
  const ChainRef c{op.scope, op.chain_id};
  start([this, &answer, current, at_answer, c](Result<uint64_t> v, const ChainState& now) {
    answer = std::move(v);
    if (current) *current = now;
    *at_answer = ReadL2Head(bucket_.truth(), c);
  });
  SimExecutor& executor = *hosts_[static_cast<size_t>(op.host)]->executor;
  while (!answer && executor.RunOne()) {
  }
  return answer;
}

void World::Published(const Op& op, const Result<uint64_t>& r,
                      const std::optional<HeadTruth>& before, const ChainState& current,
                      const std::optional<HeadTruth>* at_answer) {
  const ChainRef c{op.scope, op.chain_id};
  std::string res = Code(r.status());
  if (r.ok()) res += " v" + std::to_string(*r);
  if (r.status().IsConflict()) res += " (now v" + std::to_string(current.version) + ")";
  const std::string how = op.kind == OpKind::kSave
                              ? "save " + std::to_string(op.keys.size() - op.put_from) + " blocks, "
                              : "publish ";
  trace_.Add("h" + std::to_string(op.host) + " " + how + ScopeName(op.scope) + " " +
             (op.session ? "session " : "chain ") + ShortKey(op.chain_id) + " len " +
             std::to_string(op.keys.size()) +
             (op.expected ? " cas v" + std::to_string(*op.expected) : std::string(" lww")) +
             (op.async ? " async" : "") + " -> " + res);
  checkers_.Publish(S(op.host), op, r, before, current, at_answer);
  // The puts this publish took are no longer awaiting one. A publish refused (a lost CAS, a
  // block not put) took none; after any other failure, any may have been taken.
  const auto after = !r.ok()     ? std::nullopt
                     : at_answer ? *at_answer
                                 : ReadL2Head(bucket_.truth(), c);
  const auto code = r.status().code();
  if (after && after->version == *r && KeysOf(after->entries) == op.keys) {
    model_.OnPublishedBy(op.host, op.scope, after->entries);
  } else if (code != wombatkv::Code::kConflict && code != wombatkv::Code::kFailedPrecondition) {
    for (const BlockKey& k : op.keys) model_.OnPutInDoubt(op.host, op.scope, k);
  }
  if (r.ok()) {
    model_.OnPublishAcked(op.host, c, op.keys, *r);
    // Deleted before the answer (eviction, compaction: Checkers::Publish): versions restart.
    if (!after) model_.OnHeadDeleted(c);
    result_.acked_publishes++;
  } else {
    model_.OnPublishFailed(op.host, c);
  }
}

void World::DoPublish(const Op& op) {
  const ChainRef c{op.scope, op.chain_id};
  const auto before = ReadL2Head(bucket_.truth(), c);
  model_.OnPublishAttempt(c, op.keys);
  Guard(op.host, [&] {
    ChainState current;
    std::optional<HeadTruth> at_answer;
    Result<uint64_t> r = Status::Internal("not answered");
    if (op.async) {
      auto answer = AwaitCompletion(op, &current, &at_answer, [&](auto done) {
        S(op.host).PublishChainAsync(NsName(op.scope.ns), FpOf(op.scope.fp), op.chain_id,
                                     op.keys.back(), op.expected, std::move(done));
      });
      if (!answer) return Fail("G3", "PublishChainAsync never called its completion");
      r = std::move(*answer);
    } else {
      r = S(op.host).PublishChain(NsName(op.scope.ns), FpOf(op.scope.fp), op.chain_id,
                                  op.keys.back(), op.expected, &current);
    }
    Called(op.host);
    Published(op, r, before, current, op.async ? &at_answer : nullptr);
    workload_.OnPublished(op, r.ok());
  });
  // A crash inside leaves the publish in doubt: the attempt is recorded, the ack is not.
}

void World::DoSave(const Op& op) {
  // An engine's save: PutBlocks and PublishChain(id = tip, last writer wins) in one call, judged
  // as that pair. The store writes no L1 record of its puts and defers the last upload to the
  // publish (store_write.cc), so a crash inside may leave blocks pending in RAM only.
  const ChainRef c{op.scope, op.chain_id};
  std::vector<std::vector<uint8_t>> payloads;
  std::vector<ContentHash> hashes;
  const std::vector<BlockPut> puts = PreparePuts(op, &payloads, &hashes);
  const uint64_t put_us = clock_.WallMicros();
  const auto before = ReadL2Head(bucket_.truth(), c);
  model_.OnPublishAttempt(c, op.keys);
  Guard(op.host, [&] {
    std::optional<HeadTruth> at_answer;
    Result<uint64_t> r = Status::Internal("not answered");
    if (op.async) {
      auto answer = AwaitCompletion(op, nullptr, &at_answer, [&](auto done) {
        S(op.host).SaveChainAsync(
            NsName(op.scope.ns), FpOf(op.scope.fp), puts,
            [done = std::move(done)](Result<uint64_t> v) { done(std::move(v), ChainState{}); });
      });
      if (!answer) return Fail("G3", "SaveChainAsync never called its completion");
      r = std::move(*answer);
    } else {
      r = S(op.host).SaveChain(NsName(op.scope.ns), FpOf(op.scope.fp), puts);
    }
    Called(op.host);
    for (size_t i = op.put_from; i < op.keys.size(); ++i) {
      if (!r.ok()) {
        // Its puts may be pending in this process, with these or earlier bytes: not known.
        model_.OnPutInDoubt(op.host, op.scope, op.keys[i]);
        continue;
      }
      // Acknowledged: its puts returned OK, and its publish must have taken them (the tip
      // check of Checkers::Publish), so they are recorded as pending until Published clears them.
      model_.OnPutAcked(
          op.host, op.scope, op.keys[i],
          Model::PendingPut{hashes[i - op.put_from], i ? op.keys[i - 1] : BlockKey{}, put_us});
    }
    Published(op, r, before, ChainState{}, op.async ? &at_answer : nullptr);
    // G1 for the puts of an acknowledged save: readable by content hash at once — while the
    // chain is as acknowledged (evict-gc: once eviction trimmed it, orphan GC may collect them).
    const auto now = ReadL2Head(bucket_.truth(), c);
    if (r.ok() && result_.ok && now && now->version == *r && KeysOf(now->entries) == op.keys) {
      checkers_.Put(S(op.host), op, hashes);
    }
    workload_.OnSaved(op, r.ok());
  });
}

void World::DoEvict(int host) {
  BeforeCall(host);
  Guard(host, [&] {
    auto r = S(host).Evict();
    Called(host);
    std::string res = Code(r.status());
    if (r.ok()) {
      res += " " + std::to_string(r->chains) + " chains " + std::to_string(r->blocks) +
             " blocks" + (r->work_left ? " (more)" : "");
    }
    trace_.Add("h" + std::to_string(host) + " evict -> " + res);
  });
}

void World::DoGc(int host) {
  BeforeCall(host);
  Guard(host, [&] {
    auto r = S(host).CollectOrphans();
    Called(host);
    std::string res = Code(r.status());
    if (r.ok()) {
      res += " " + std::to_string(r->deleted) + " deleted " + std::to_string(r->restored) +
             " restored " + std::to_string(r->delete_failures) + " failed " +
             std::to_string(r->kept_in_flight) + " kept";
    } else {
      if (r.status().code() == Code::kInternal || r.status().code() == Code::kInvalidArgument) {
        Fail("GC", "orphan GC failed: " + r.status().ToString());
      }
    }
    trace_.Add("h" + std::to_string(host) + " gc -> " + res);
  });
}

void World::DoCorrupt(uint64_t n) {
  std::vector<std::string> keys;
  for (const auto& [ns, hash] : model_.AllHashes()) {
    keys.push_back(layout::BlobKey(kL2Prefix, NsName(ns), hash));
  }
  for (const ChainRef& at : model_.Sidecars()) {
    keys.push_back(layout::SidecarKey(kL2Prefix, NsName(at.scope.ns), FpOf(at.scope.fp), at.id));
  }
  if (!keys.empty()) {
    const std::string& key = keys[n % keys.size()];
    const bool done = bucket_.Corrupt(key, n / keys.size());
    trace_.Add("corrupt " + ShortObjectKey(key) + (done ? "" : " (absent)"));
  }
  if (cfg_.disk_cache_bytes_max > 0) CorruptCacheFile(n);
}

void World::CorruptCacheFile(uint64_t n) {
  // Bit rot or a torn write in the local disk cache, behind the store's back: a byte flipped in,
  // or the tail cut off, one cache file of one host (G9: the store must drop it, never serve it).
  const uint64_t host = n % static_cast<uint64_t>(cfg_.hosts);
  Host& h = *hosts_[host];
  n /= static_cast<uint64_t>(cfg_.hosts);
  std::vector<std::string> files;  // sorted: the pick must not depend on directory order
  std::error_code ec;
  const std::filesystem::path dir = h.data_dir + "/cache";
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec) && it->file_size(ec) > 0) files.push_back(it->path().string());
  }
  if (files.empty()) return;
  std::sort(files.begin(), files.end());
  const std::string& path = files[n % files.size()];
  n /= files.size();
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec || size == 0) return;
  const bool cut = n % 3 == 0;
  const uint64_t at = (n / 3) % size;
  if (cut) {
    std::filesystem::resize_file(path, at, ec);
  } else {
    std::FILE* f = std::fopen(path.c_str(), "r+b");
    if (!f) return;
    std::fseek(f, static_cast<long>(at), SEEK_SET);
    const int c = std::fgetc(f);
    std::fseek(f, static_cast<long>(at), SEEK_SET);
    std::fputc((c == EOF ? 0 : c) ^ 0x5a, f);
    std::fclose(f);
  }
  const std::string name = std::filesystem::path(path).filename().string();
  trace_.Add("corrupt cache file h" + std::to_string(host) + " " + name.substr(0, 8) +
             (cut ? " cut to " : " flip at ") + std::to_string(at));
}

void World::DoCorruptHead(uint64_t n) {
  const L2Heads heads = ReadL2Heads(bucket_.truth(), cfg_);
  if (heads.empty()) return;
  auto it = heads.begin();
  std::advance(it, static_cast<std::ptrdiff_t>(n % heads.size()));
  const ChainRef& c = it->first;
  const std::string key = layout::ChainKey(kL2Prefix, NsName(c.scope.ns), FpOf(c.scope.fp), c.id);
  const bool done = bucket_.Corrupt(key, n / heads.size());
  if (done) {
    damaged_heads_[c] = it->second.entries;
    model_.OnHeadCorrupted(c, KeysOf(it->second.entries));
    checkers_.HeadVersion(key, /*deleted=*/true);  // a publish over the damage restarts at v1
  }
  trace_.Add("corrupt-head " + ScopeName(c.scope) + " chain " + ShortKey(c.id) +
             (done ? "" : " (absent)"));
}

void World::Step(const Op& op) {
  const int h = op.host;
  bucket_.BeginStep();
  checkers_.writer_host = h;
  switch (op.kind) {
    case OpKind::kRestart:
      return Restart(h);
    case OpKind::kCrash:
      return Crash(h, op.crash_mode, "between steps");
    case OpKind::kCorrupt:
      return DoCorrupt(op.n);
    case OpKind::kCorruptHead:
      return DoCorruptHead(op.n);
    case OpKind::kBrownout:
      rates_.brownout = !rates_.brownout;
      trace_.Add(std::string("brown-out ") + (rates_.brownout ? "starts" : "ends"));
      return;
    default:
      break;
  }
  if (!Up(h)) return;
  BeforeCall(h);
  if (fault_rng_.Chance(cfg_.p_crash_mid)) {
    hosts_[static_cast<size_t>(h)]->crash_countdown = static_cast<int>(fault_rng_.Range(0, 8));
    // Not inside a completion-form save or publish: the store counts it in flight from before its
    // head write until its completion, and a real crash never runs ~Store, which here would wait
    // for that completion for ever (a crash in a blocking SaveChain or PublishChain is simulated).
    if (op.async && (op.kind == OpKind::kSave || op.kind == OpKind::kPublish)) {
      hosts_[static_cast<size_t>(h)]->crash_countdown = -1;
    }
  }
  const std::string who = "h" + std::to_string(h) + " ";
  switch (op.kind) {
    case OpKind::kPut:
      DoPut(op);
      break;
    case OpKind::kPublish:
      DoPublish(op);
      break;
    case OpKind::kSave:
      DoSave(op);
      break;
    case OpKind::kPutSidecar: {
      const ChainRef at{op.scope, op.keys[0]};
      model_.OnSidecarAttempt(at, op.gen);
      const auto bytes = SidecarBytes(op.scope, at.id, op.gen);
      Guard(h, [&] {
        Status s = S(h).PutSidecar(NsName(op.scope.ns), FpOf(op.scope.fp), at.id, bytes);
        Called(h);
        trace_.Add(who + "put-sidecar " + ScopeName(op.scope) + " tip " + ShortKey(at.id) +
                   " gen " + std::to_string(op.gen) + " -> " + Code(s));
        if (s.ok()) {
          model_.OnSidecarAcked(at, op.gen);
        } else if (s.code() != Code::kUnavailable) {
          Fail("G7", "PutSidecar failed with " + s.ToString());
        }
      });
      break;
    }
    case OpKind::kLookup:
      Guard(h, [&] {
        auto r = S(h).LookupPrefix(NsName(op.scope.ns), FpOf(op.scope.fp), op.keys);
        Called(h);
        trace_.Add(who + "lookup " + ScopeName(op.scope) + " " + std::to_string(op.keys.size()) +
                   " keys -> " + (r.ok() ? std::to_string(*r) : Code(r.status())));
        checkers_.Lookup(op, r);
      });
      break;
    case OpKind::kGet:
      Guard(h, [&] {
        // The daemon's event loop asks the non-blocking form first (never waiting for L2), and
        // the blocking one only when it declines: both answers are judged the same way.
        std::optional<Result<Borrow>> cached;
        if (op.async) {
          cached = S(h).GetBlocksIfCached(NsName(op.scope.ns), FpOf(op.scope.fp), op.keys);
        }
        auto r = cached ? std::move(*cached)
                        : S(h).GetBlocks(NsName(op.scope.ns), FpOf(op.scope.fp), op.keys);
        Called(h);
        trace_.Add(who + "get " + ScopeName(op.scope) + " " + std::to_string(op.keys.size()) +
                   " keys -> " + Code(r.status()) +
                   (op.async ? (cached ? " (if-cached)" : " (not cached)") : ""));
        checkers_.Get(op, r);
        if (r.ok())
          MaybeHold(h, "get " + ScopeName(op.scope) + " " + ShortKey(op.keys.back()), r->slices());
      });
      break;
    case OpKind::kGetByHash:
      Guard(h, [&] {
        std::optional<Result<BufferSlice>> cached;
        if (op.async) cached = S(h).GetByContentHashIfCached(NsName(op.scope.ns), op.hash);
        auto r = cached ? std::move(*cached) : S(h).GetByContentHash(NsName(op.scope.ns), op.hash);
        Called(h);
        trace_.Add(who + "get-by-hash " + NsName(op.scope.ns) + " " + op.hash.ToHex().substr(0, 8) +
                   " -> " + Code(r.status()) +
                   (op.async ? (cached ? " (if-cached)" : " (not cached)") : ""));
        checkers_.GetByHash(op, r);
        if (r.ok()) {
          MaybeHold(h, "get-by-hash " + op.hash.ToHex().substr(0, 8), {*r});
        }
      });
      break;
    case OpKind::kGetSidecar:
      Guard(h, [&] {
        auto r = S(h).GetSidecar(NsName(op.scope.ns), FpOf(op.scope.fp), op.keys[0]);
        Called(h);
        trace_.Add(who + "get-sidecar " + ScopeName(op.scope) + " tip " + ShortKey(op.keys[0]) +
                   " -> " + Code(r.status()));
        checkers_.Sidecar(op, r);
      });
      break;
    case OpKind::kRefresh:
      DoRefresh(h);
      break;
    case OpKind::kRunTasks:
      Guard(h, [&] {
        uint64_t ran = 0;
        for (uint64_t i = 0; i < op.n && Up(h); ++i) {
          if (!hosts_[static_cast<size_t>(h)]->executor->RunOne()) break;
          ++ran;
        }
        if (Up(h)) Called(h);
        trace_.Add(who + "ran " + std::to_string(ran) + " background tasks");
      });
      break;
    default:
      break;
  }
  if (Up(h)) hosts_[static_cast<size_t>(h)]->crash_countdown = -1;
}

void World::Liveness() {
  trace_.Add("--- liveness phase: no faults ---");
  rates_ = FaultRates{};
  buggify_on_ = false;
  for (auto& h : hosts_) h->crash_countdown = -1;
  if (cfg_.capacity) {
    // Eviction stops: every host closes cleanly and reopens without budgets, so what the checks
    // below read does not shrink under them. Then one GC pass per host past the grace: whatever
    // eviction left unreferenced goes, and everything a head names must still read back.
    no_capacity_ = true;
    for (int h = 0; h < cfg_.hosts; ++h) {
      Host& host = *hosts_[static_cast<size_t>(h)];
      if (!host.store) continue;
      host.executor->Drain();
      host.store.reset();
      ReleaseBorrowsOf(h, "store closed");
      model_.OnCrash(h);  // forgets what it knew; Restart re-syncs it with L2
      trace_.Add("h" + std::to_string(h) + " closed (eviction off)");
    }
    model_.set_evictable(false);
  }
  for (int h = 0; h < cfg_.hosts && result_.ok; ++h) {
    if (!Up(h)) Restart(h);
    if (!Up(h)) return Fail("liveness", "h" + std::to_string(h) + " cannot open without faults");
  }
  for (int h = 0; h < cfg_.hosts; ++h) hosts_[static_cast<size_t>(h)]->executor->Drain();
  if (cfg_.capacity) {
    clock_.Advance(cfg_.gc_grace_us + 1'000'000);
    for (int h = 0; h < cfg_.hosts && result_.ok; ++h) {
      auto r = S(h).CollectOrphans();
      trace_.Add("h" + std::to_string(h) + " final gc -> " + Code(r.status()) +
                 (r.ok() ? " " + std::to_string(r->deleted) + " deleted" : std::string()));
      if (!r.ok()) return Fail("liveness", "orphan GC failed without faults: " + r.status().ToString());
    }
  }
  // G11's bounded staleness, asserted: a host that refreshes by itself sees L2 within its
  // interval without any Refresh call. Past the interval, one call (a get: it queues the
  // refresh), the host's tasks run to the end, and its chains must be exactly L2's.
  for (int h = 0; h < cfg_.hosts && result_.ok; ++h) {
    if (!cfg_.RefreshesByItself(h)) continue;
    Host& host = *hosts_[static_cast<size_t>(h)];
    clock_.Advance(cfg_.refresh_interval_ms * 1000 + 1000);
    bucket_.BeginStep();
    CountRefreshes(h);
    const uint64_t refreshes = host.refreshes, failures = host.refresh_failures;
    MarkListingStart();
    Guard(h, [&] {
      const std::vector<BlockKey> probe(1);  // any key: what matters is that a get was made
      auto r = S(h).GetBlocks(NsName(0), FpOf(0), probe);
      host.executor->Drain();
    });
    if (!Up(h)) return Fail("liveness", "h" + std::to_string(h) + " crashed without faults");
    CountRefreshes(h);
    trace_.Add("h" + std::to_string(h) + " waited out its refresh interval: " +
               std::to_string(host.refreshes - refreshes) + " automatic refreshes");
    if (host.refresh_failures != failures) {
      return Fail("G11", "h" + std::to_string(h) + ": an automatic refresh failed without faults");
    }
    if (host.refreshes == refreshes) {
      return Fail("G11", "h" + std::to_string(h) + " refreshes by itself every " +
                             std::to_string(cfg_.refresh_interval_ms) +
                             " ms, but no automatic refresh ran after that long and a get");
    }
    const L2Heads now = ReadL2Heads(bucket_.truth(), cfg_);
    checkers_.SameAsL2(S(h), h, now, "automatic refresh (liveness, no Refresh call)");
    model_.OnSynced(h, Settled(now));
  }
  for (int h = 0; h < cfg_.hosts && result_.ok; ++h) {
    DoRefresh(h);
    if (!Up(h)) return Fail("liveness", "h" + std::to_string(h) + " crashed without faults");
  }
  if (!result_.ok) return;
  const L2Heads heads = ReadL2Heads(bucket_.truth(), cfg_);
  // Every acknowledged chain not replaced since is readable, whole, from every host (G3, G11).
  for (const auto& [c, ack] : model_.acks()) {
    if (ack.superseded) continue;
    for (int h = 0; h < cfg_.hosts && result_.ok; ++h) {
      bucket_.BeginStep();
      Op op;
      op.kind = OpKind::kGet;
      op.host = h;
      op.scope = op.owner = c.scope;
      op.keys = ack.keys;
      auto n = S(h).LookupPrefix(NsName(c.scope.ns), FpOf(c.scope.fp), ack.keys);
      if (cfg_.capacity && n.ok()) {
        // Eviction may have shortened or removed it: what is left reads back right (a prefix).
        op.keys.resize(*n);
        if (*n > 0) checkers_.Get(op, S(h).GetBlocks(NsName(c.scope.ns), FpOf(c.scope.fp), op.keys));
        continue;
      }
      if (!n.ok() || *n != ack.keys.size()) {
        Fail("G3/G11", "liveness: h" + std::to_string(h) + " finds " +
                           (n.ok() ? std::to_string(*n) : Code(n.status())) + " of " +
                           std::to_string(ack.keys.size()) + " blocks of acknowledged chain " +
                           ShortKey(c.id) + " (" + ScopeName(c.scope) + " v" +
                           std::to_string(ack.version) + " by h" + std::to_string(ack.host) +
                           ")");
        return;
      }
      auto r = S(h).GetBlocks(NsName(c.scope.ns), FpOf(c.scope.fp), ack.keys);
      if (!r.ok() && r.status().code() == Code::kUnavailable) {
        return Fail("liveness", "get Unavailable without faults");
      }
      checkers_.Get(op, r);
    }
  }
  // Every chain in L2 reads back on every host; acknowledged sidecars are there (G7).
  for (const auto& [c, head] : heads) {
    for (int h = 0; h < cfg_.hosts && result_.ok; ++h) {
      bucket_.BeginStep();
      Op op;
      op.kind = OpKind::kGet;
      op.host = h;
      op.scope = op.owner = c.scope;
      op.keys = KeysOf(head.entries);
      checkers_.Get(op, S(h).GetBlocks(NsName(c.scope.ns), FpOf(c.scope.fp), op.keys));
    }
  }
  for (const ChainRef& at : model_.Sidecars()) {
    for (int h = 0; h < cfg_.hosts && result_.ok; ++h) {
      bucket_.BeginStep();
      Op op;
      op.kind = OpKind::kGetSidecar;
      op.host = h;
      op.scope = op.owner = at.scope;
      op.keys = {at.id};
      checkers_.Sidecar(op, S(h).GetSidecar(NsName(at.scope.ns), FpOf(at.scope.fp), at.id));
    }
  }
  if (result_.ok) checkers_.AuditBucket();
}

SimResult World::Run() {
  result_.config = cfg_.Describe();
  trace_.Add("config " + result_.config);
  for (int h = 0; h < cfg_.hosts; ++h) Restart(h);
  for (uint64_t step = 0; step < cfg_.safety_steps && result_.ok; ++step) {
    const Op op = workload_.Next(View(), model_);
    Step(op);
    // Background work makes progress between the engine's calls, in a seed-chosen order.
    if (result_.ok && sched_rng_.Chance(0.5)) {
      const int h = static_cast<int>(sched_rng_.Uniform(static_cast<uint64_t>(cfg_.hosts)));
      if (Up(h)) {
        if (fault_rng_.Chance(cfg_.p_crash_mid)) {
          hosts_[static_cast<size_t>(h)]->crash_countdown =
              static_cast<int>(fault_rng_.Range(0, 3));
        }
        BeforeCall(h);
        Guard(h, [&] {
          hosts_[static_cast<size_t>(h)]->executor->RunOne();
          Called(h, /*ran_only_background_tasks=*/true);
        });
        if (Up(h)) hosts_[static_cast<size_t>(h)]->crash_countdown = -1;
      }
    }
    if (result_.ok && cfg_.capacity) {
      // Eviction and orphan GC at random steps, on a random host (besides background passes).
      const int h = static_cast<int>(sched_rng_.Uniform(static_cast<uint64_t>(cfg_.hosts)));
      if (Up(h) && sched_rng_.Chance(cfg_.p_evict)) DoEvict(h);
      if (result_.ok && Up(h) && sched_rng_.Chance(cfg_.p_gc)) DoGc(h);
      if (sched_rng_.Chance(cfg_.p_clock_jump)) {
        const uint64_t jump = sched_rng_.Range(1'000'000, 4'000'000);
        clock_.Advance(jump);
        trace_.Add("clock +" + std::to_string(jump / 1000) + "ms");
      }
    }
    clock_.Advance(sched_rng_.Range(0, 1000));
    // Held borrows are released at random steps, a few at a time.
    while (result_.ok && !borrows_.empty() && borrow_rng_.Chance(0.15)) {
      ReleaseBorrow(borrow_rng_.Uniform(borrows_.size()), "released");
    }
    result_.steps_run = step + 1;
    step_ = result_.steps_run;
  }
  // The borrows still open are kept through the liveness phase (its closes, final GC, reads).
  if (result_.ok) Liveness();
  if (result_.ok) ReleaseBorrowsOf(-1, "end of run");
  borrows_.clear();
  trace_.Add(std::string("end ") + (result_.ok ? "ok" : "FAILED"));
  result_.digest = trace_.digest();
  result_.events = trace_.events();
  if (!result_.ok) result_.tail = trace_.Tail(options_.tail_events);
  // Stores go first: they reference the planes and executors.
  for (auto& h : hosts_) {
    if (h->executor) h->executor->DropAll();
    h->store.reset();
  }
  return result_;
}

}  // namespace

SimResult Simulate(uint64_t seed, const SimOptions& options) {
  test_hooks::publish_skips_durability_barrier.store(options.break_publish_order);
  SimResult r;
  {
    World world(seed, options);
    r = world.Run();
  }
  test_hooks::publish_skips_durability_barrier.store(false);
  return r;
}

}  // namespace wombatkv::sim
