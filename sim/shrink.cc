#include "sim/shrink.h"

#include <algorithm>
#include <limits>

namespace wombatkv::sim {
namespace {

class Shrinker {
 public:
  Shrinker(uint64_t seed, const SimResult& failed) : seed_(seed), guarantee_(failed.guarantee) {}

  // The same guarantee fails (not necessarily with the same words: a shorter run may notice it
  // at another key).
  bool Fails(const SimOptions& o, SimResult* out) {
    ++runs_;
    SimOptions quiet = o;
    quiet.verbose = false;
    SimResult r = Simulate(seed_, quiet);
    const bool same = !r.ok && r.guarantee == guarantee_;
    if (same && out) *out = std::move(r);
    return same;
  }

  // Fewest steps that still fail. A failure in the safety phase at step s fails the same way with
  // --steps s; a liveness failure is bisected (assuming, and checking, that more steps fail too).
  void ShrinkSteps(SimOptions* o, SimResult* r) {
    if (r->steps_run < o->steps) {
      SimOptions t = *o;
      t.steps = r->steps_run;
      if (Fails(t, r)) *o = t;
    }
    uint64_t lo = 1, hi = o->steps;  // hi fails
    while (lo < hi) {
      SimOptions t = *o;
      t.steps = lo + (hi - lo) / 2;
      SimResult tr;
      if (Fails(t, &tr)) {
        hi = t.steps;
        *r = std::move(tr);
        if (r->steps_run < hi) hi = r->steps_run;  // failed before its last step
      } else {
        lo = t.steps + 1;
      }
    }
    if (hi != o->steps) {
      SimOptions t = *o;
      t.steps = hi;
      if (Fails(t, r)) *o = t;
    }
  }

  // Each fault class on in this run, switched off if the run still fails without it.
  void ShrinkFaults(SimOptions* o, SimResult* r) {
    for (const std::string& name : FaultClassNames()) {
      // Asked afresh: switching one class off may leave another without effect (crash kinds
      // once crashes are off), and those are not worth a run or a flag.
      const auto on =
          SwarmConfig::FromSeed(seed_, o->steps, o->capacity, o->overrides).FaultsOn();
      if (std::find(on.begin(), on.end(), name) == on.end()) continue;
      SimOptions t = *o;
      t.overrides.off.insert(name);
      if (Fails(t, r)) *o = t;
    }
  }

  void ShrinkHosts(SimOptions* o, SimResult* r) {
    const SwarmConfig cfg = SwarmConfig::FromSeed(seed_, o->steps, o->capacity, o->overrides);
    for (int hosts = 1; hosts < cfg.hosts; ++hosts) {
      SimOptions t = *o;
      t.overrides.hosts = hosts;
      if (Fails(t, r)) {
        *o = t;
        return;
      }
    }
  }

  uint64_t runs() const { return runs_; }

 private:
  uint64_t seed_;
  std::string guarantee_;
  uint64_t runs_ = 0;
};

}  // namespace

Shrunk ShrinkFailure(uint64_t seed, const SimOptions& options, const SimResult& failed) {
  Shrinker s(seed, failed);
  Shrunk out;
  out.options = options;
  out.options.verbose = false;
  out.result = failed;
  s.ShrinkSteps(&out.options, &out.result);
  s.ShrinkFaults(&out.options, &out.result);
  s.ShrinkHosts(&out.options, &out.result);
  s.ShrinkSteps(&out.options, &out.result);
  // The final run again, keeping its whole trace.
  SimOptions full = out.options;
  full.tail_events = std::numeric_limits<size_t>::max();
  SimResult r;
  if (s.Fails(full, &r)) out.result = std::move(r);
  out.runs = s.runs();
  return out;
}

std::string CommandLine(uint64_t seed, const SimOptions& o) {
  std::string cmd = "wombatkv-sim --seed " + std::to_string(seed) + " --steps " +
                    std::to_string(o.steps);
  if (o.capacity) cmd += " --capacity";
  if (!o.l2_invariants) cmd += " --no-l2-invariants";
  if (o.break_publish_order) cmd += " --break publish-order";
  if (o.gc_ignores_list_lag) cmd += " --gc-ignores-list-lag";
  if (o.overrides.hosts > 0) cmd += " --hosts " + std::to_string(o.overrides.hosts);
  if (o.overrides.list_lag_us > 0) {
    cmd += " --list-lag " + std::to_string(o.overrides.list_lag_us);
  }
  if (o.overrides.buggify_percent > 0) {
    cmd += " --buggify " + std::to_string(o.overrides.buggify_percent);
  }
  if (o.overrides.refresh_interval_ms > 0) {
    cmd += " --auto-refresh " + std::to_string(o.overrides.refresh_interval_ms);
  }
  // In the documented order, so equal option sets print equally.
  for (const std::string& name : FaultClassNames()) {
    if (o.overrides.off.count(name)) cmd += " --no-fault " + name;
  }
  return cmd;
}

}  // namespace wombatkv::sim
