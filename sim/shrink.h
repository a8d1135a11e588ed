// Shrinking a failing seed to the shortest run that still fails the same way. A run is a pure
// function of (seed, options), so a smaller failing run is found by re-running with less: fewer
// safety-phase steps (the first K steps of a run with --steps N are the run with --steps K), then
// each fault class switched off in turn (kept off if the run still fails the same guarantee),
// then fewer hosts, then the steps again.
#pragma once

#include <cstdint>
#include <string>

#include "sim/simulator.h"

namespace wombatkv::sim {

struct Shrunk {
  SimOptions options;   // reproduces the shrunk failure with the same seed
  SimResult result;     // of that run, with its whole trace in `tail`
  uint64_t runs = 0;    // simulations the shrinker ran
};

// REQUIRES: `failed` is Simulate(seed, options) and !failed.ok.
Shrunk ShrinkFailure(uint64_t seed, const SimOptions& options, const SimResult& failed);

// The wombatkv-sim command line that reproduces Simulate(seed, options).
std::string CommandLine(uint64_t seed, const SimOptions& options);

}  // namespace wombatkv::sim
