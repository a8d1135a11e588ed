// Checkers: one function per guarantee of SPEC §5, each judging one answer of the store against
// the reference model (model.h) and, where the guarantee is about L2, against the bucket's true
// contents. They never drive the store except to read back what the guarantee promises (a G1
// read right after a put or publish). A violation is reported through `fail(guarantee, what)`.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>

#include "sim/model.h"
#include "sim/sim_planes.h"
#include "sim/workload.h"
#include "wombatkv/store.h"

namespace wombatkv::sim {

using FailFn = std::function<void(const std::string& guarantee, const std::string& what)>;

class Checkers {
 public:
  Checkers(const SwarmConfig& cfg, const Model& model, SimBucket* bucket, FailFn fail)
      : cfg_(cfg), model_(model), bucket_(bucket), fail_(std::move(fail)) {}

  // G1 + G5: hashes are BLAKE3-20 of the bytes; each block is readable by hash at once.
  void Put(Store& store, const Op& op, const Result<std::vector<ContentHash>>& r);
  // G1 + G3 + G6: an acknowledged publish is in L2 with these entries and visible here; a CAS
  // loser learns the current state and wrote nothing; versions only grow.
  // `at_answer`: for a completion-form call, the head as L2 held it when the completion ran
  // (null: now).
  void Publish(Store& store, const Op& op, const Result<uint64_t>& r,
               const std::optional<HeadTruth>& before, const ChainState& current,
               const std::optional<HeadTruth>* at_answer = nullptr);
  // G1/G3/G11 (lower bound) and G4/G8 (upper bound: a prefix of a head written to L2).
  void Lookup(const Op& op, const Result<size_t>& r);
  // Bounds as Lookup, plus G8/G9: every byte is what was put under that key in that scope.
  void Get(const Op& op, const Result<Borrow>& r);
  // G1/G8/G9 by content hash.
  void GetByHash(const Op& op, const Result<BufferSlice>& r);
  // G7: a miss or bytes put for this very tip, never other bytes; G9 for sidecars.
  void Sidecar(const Op& op, const Result<BufferSlice>& r);
  // G11 (and G3 after an "open"): the host's chains are exactly the bucket's.
  void SameAsL2(Store& store, int host, const L2Heads& heads, const char* after);
  // Part of SameAsL2 once the chains match: every block of every chain has the bytes of the
  // newest publish through it among the heads in L2 (RadixIndex I8; bug 17: a node kept a
  // departed chain's bytes, which orphan GC then deleted, or took an older head's).
  void BytesFollowL2(Store& store, int host, const L2Heads& heads, const char* after);
  // G3 + G9 at the instant a head is written: every blob it names is durable and intact.
  // `at_write`: called at the instant the head was written (else by the final audit, which
  // excuses only the blobs that were already missing then: R1's stated limit).
  void HeadWritten(const std::string& key, bool at_write = true);
  // G6 in L2: versions of one chain key strictly increase while it exists.
  void HeadVersion(const std::string& key, bool deleted);
  // G5 + G9 audit of the whole bucket: every blob decodes to its name; every head's blobs exist.
  void AuditBucket();

  bool l2_invariants = true;
  std::function<uint64_t()> wall_us;  // the simulated wall clock
  // A head key whose state a host may legitimately not see yet: corrupted in the bucket (the store
  // ignores it until it is published again), or created/deleted within the listing lag.
  std::function<bool(const std::string& head_key)> head_in_doubt;

  // Evict-gc: the blob is gone from L2 and its last put is older than the GC grace (R1: another
  // host may collect it). A head naming it is the documented limit, not a store bug — unless the
  // blob went during the very call that wrote the head (HeadWritten): the writer collected it
  // (claimed pending blocks and indexed chains are kept) or was gathering it at that moment.
  bool AbandonedAndGone(int ns, const ContentHash& hash) const;
  // Whether a head being written may name this gone blob under R1's limit: abandoned and gone,
  // and either put by the writing host and not published by it since (its put waited too long)
  // or already excused in an earlier head (a chain continuing that one). A blob of the published
  // prefix a publish continues is not: the publish must check it (store_indexed_prefix.cc).
  bool R1Excused(const Scope& scope, const ChainEntry& e) const;
  // The host whose step is running (the heads written are its), or -1.
  int writer_host = -1;
  // Evict-gc: a put awaiting publish that the store may have forgotten as abandoned
  // (docs/capacity.md): old enough for one of the two graces (the store waits for both).
  bool MayBeForgotten(const Model::PendingPut& p) const;
  // Head key → blobs it named that were abandoned and gone when it was written.
  std::map<std::string, std::set<std::string>> excused_;

 private:
  // An acknowledged publish whose head this host's compaction deleted during the call.
  bool CompactedAway(const Op& op) const;
  bool BlobCorrupted(int ns, const ContentHash& hash) const;
  bool AnyCorrupted(const Scope& s, const std::vector<BlockKey>& keys) const;
  void Fail(const std::string& g, const std::string& what) { fail_(g, what); }

  const SwarmConfig& cfg_;
  const Model& model_;
  SimBucket* bucket_;
  FailFn fail_;
  std::map<std::string, uint64_t> head_versions_;
  // (namespace, blob): gone when a head named it, excused under R1's limit.
  std::set<std::pair<int, ContentHash>> excused_blobs_;
};

}  // namespace wombatkv::sim
