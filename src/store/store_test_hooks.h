// Switches that break a guarantee on purpose, so tests can prove their checkers catch the break
// (docs/testing.md, "The deliberately broken guarantee"). Nothing in the product sets them: no
// option, setting or environment variable reaches them; only test code (wombatkv-sim --break)
// does, before any store exists.
#pragma once

#include <atomic>

namespace wombatkv::test_hooks {

// PublishChain skips its durability barrier (waiting for every new blob of the chain to be in
// L2), so a head may name blobs whose uploads are still queued: "publish the head before the
// blocks", which breaks G3.
inline std::atomic<bool> publish_skips_durability_barrier{false};

}  // namespace wombatkv::test_hooks
