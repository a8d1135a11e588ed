// ColdSet: one namespace's least recently used eviction candidates, kept from one eviction pass to
// the next (docs/capacity.md, "Eviction: what goes, in what order").
//
// A pass may rewrite only a few heads (StoreOptions::eviction_heads_per_pass), but finding the
// coldest chains means visiting every chain of the namespace. Visiting them on every pass made
// eviction cost O(chains) per few heads: 437 µs per evicted block with 100k one-block chains
// (BENCHMARKS.md, "Session 23"). So a scan keeps the coldest eighth (at least what a pass needs)
// in order, and later passes take from it while it still answers for the namespace:
//
//   C1. Stamps only grow while a chain stays in L0 (uses, publishes), and a chain published
//       later is stamped with a later tick. So every chain outside the set — left out by the
//       scan, or published since — is at least as new as `beyond`: the coldest stamp the scan
//       left out, or the scan's tick if that is older. The set's order is LRU order up to
//       `beyond`; a member used since the scan is found newer when its tail is read, and skipped.
//   C2. Other chains can become colder than members only by being installed with an older stamp
//       (open, refresh, a head re-read from L2) or by becoming trimmable (a chain extending
//       theirs loses its tail, and their tip its last child). The store counts both; a change of
//       the count (the generation) retires the set.
//   C3. A set scanned for expired chains only (not over budget) does not answer for a pass over
//       budget, nor once the TTL's cutoff passes the one it was scanned with.
//   C4. A chain the pass trims and leaves trimmable, or must plan again, goes back in (Push).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <queue>
#include <vector>

#include "base/check.h"
#include "wombatkv/types.h"

namespace wombatkv {

struct EvictCandidate {
  uint32_t used;  // the chain's tip stamp when it was found
  Fingerprint fp;
  ChainId chain_id;
};

class ColdSet {
 public:
  // What a scan looked for.
  struct Scan {
    uint64_t generation = 0;  // C2
    uint32_t tick = 0;        // when it ran: chains published since are stamped no older
    bool every_chain = false;  // over budget: every trimmable chain is a candidate (C3)
    uint32_t cutoff = 0;       // else only those stamped below it (expired)
  };

  // Whether the set answers for a pass that would scan with `now` (C2, C3). An empty set never
  // does: a scan may find chains it left out, and chains published since.
  bool Answers(const Scan& now) const {
    if (Empty() || now.generation != scan_.generation) return false;
    return scan_.every_chain || (!now.every_chain && now.cutoff <= scan_.cutoff);
  }

  // Replaces the set with the `keep` coldest of `found` (a scan's candidates, any order; left
  // in an unspecified order).
  void Fill(std::vector<EvictCandidate>& found, size_t keep, const Scan& scan) {
    scan_ = scan;
    beyond_ = scan.tick;
    keep = std::min(keep, found.size());
    left_out_ = keep < found.size();
    if (left_out_) {
      std::nth_element(found.begin(), found.begin() + static_cast<ptrdiff_t>(keep), found.end(),
                       Older);
      for (size_t i = keep; i < found.size(); ++i) beyond_ = std::min(beyond_, found[i].used);
    }
    sorted_.assign(found.begin(), found.begin() + static_cast<ptrdiff_t>(keep));
    std::sort(sorted_.begin(), sorted_.end(), Older);
    next_ = 0;
    pushed_ = {};
  }

  bool Empty() const { return next_ == sorted_.size() && pushed_.empty(); }
  // The coldest candidate. REQUIRES: !Empty().
  const EvictCandidate& Top() const {
    WMBT_CHECK(!Empty());
    if (pushed_.empty()) return sorted_[next_];
    if (next_ == sorted_.size() || Older(pushed_.top(), sorted_[next_])) return pushed_.top();
    return sorted_[next_];
  }
  void Pop() {
    WMBT_CHECK(!Empty());
    if (!pushed_.empty() && (next_ == sorted_.size() || Older(pushed_.top(), sorted_[next_]))) {
      pushed_.pop();
    } else {
      ++next_;
    }
  }
  // C4.
  void Push(const EvictCandidate& c) { pushed_.push(c); }

  // How new every chain outside the set is at least (C1).
  uint32_t beyond() const { return beyond_; }
  // Whether the scan found more candidates than it kept.
  bool left_out() const { return left_out_; }
  // How new the next candidate may be: what a trim of the one just popped must not pass.
  uint32_t NextUsed() const { return Empty() ? beyond_ : std::min(beyond_, Top().used); }

 private:
  static bool Older(const EvictCandidate& a, const EvictCandidate& b) { return a.used < b.used; }
  struct Newer {
    bool operator()(const EvictCandidate& a, const EvictCandidate& b) const {
      return a.used > b.used;
    }
  };

  Scan scan_;
  std::vector<EvictCandidate> sorted_;  // oldest first; [next_, end) not yet taken
  size_t next_ = 0;
  std::priority_queue<EvictCandidate, std::vector<EvictCandidate>, Newer> pushed_;
  uint32_t beyond_ = UINT32_MAX;
  bool left_out_ = false;
};

}  // namespace wombatkv
