#include "sim/checkers.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "layout/chain_head.h"
#include "layout/envelope.h"
#include "layout/object_keys.h"

namespace wombatkv::sim {
namespace {

std::string Code(const Status& s) { return std::string(CodeName(s.code())); }

std::string Keys(const std::vector<BlockKey>& keys) {
  std::string s = "[";
  for (size_t i = 0; i < keys.size(); ++i) s += (i ? " " : "") + ShortKey(keys[i]);
  return s + "]";
}

}  // namespace

bool Checkers::BlobCorrupted(int ns, const ContentHash& hash) const {
  return bucket_->CorruptedThisStep(layout::BlobKey(kL2Prefix, NsName(ns), hash));
}

bool Checkers::AnyCorrupted(const Scope& s, const std::vector<BlockKey>& keys) const {
  for (const auto& k : keys) {
    for (const auto& h : model_.HashesOf(s, k)) {
      if (BlobCorrupted(s.ns, h)) return true;
    }
  }
  return false;
}

bool Checkers::MayBeForgotten(const Model::PendingPut& p) const {
  if (!cfg_.capacity || !wall_us) return false;
  const uint64_t age = std::min(cfg_.publish_grace_seconds * 1'000'000, cfg_.gc_grace_us);
  return wall_us() >= p.put_us + age;
}

bool Checkers::AbandonedAndGone(int ns, const ContentHash& hash) const {
  if (!cfg_.capacity || !wall_us) return false;
  const uint64_t put = model_.LastPutUs(ns, hash);
  if (wall_us() < put + cfg_.gc_grace_us) return false;
  return bucket_->truth()->Head(layout::BlobKey(kL2Prefix, NsName(ns), hash)).status().IsNotFound();
}

bool Checkers::R1Excused(const Scope& scope, const ChainEntry& e) const {
  if (!AbandonedAndGone(scope.ns, e.hash)) return false;
  return (writer_host >= 0 && model_.MaybePending(writer_host, scope, e.key, e.hash)) ||
         excused_blobs_.count({scope.ns, e.hash}) > 0;
}

void Checkers::Put(Store& store, const Op& op, const Result<std::vector<ContentHash>>& r) {
  if (!r.ok()) return Fail("G1", "PutBlocks failed: " + r.status().ToString());
  const size_t n = op.keys.size() - op.put_from;
  if (r->size() != n) return Fail("G1", "PutBlocks returned " + std::to_string(r->size()) +
                                            " hashes for " + std::to_string(n) + " blocks");
  for (size_t i = 0; i < n; ++i) {
    const size_t k = op.put_from + i;
    const auto bytes = PayloadBytes(cfg_, op.scope, op.keys[k], op.variants[k]);
    if ((*r)[i] != HashPayload(bytes)) {
      return Fail("G5", "PutBlocks returned hash " + (*r)[i].ToHex() + " for block " +
                            ShortKey(op.keys[k]) + ", not BLAKE3-20 of its bytes");
    }
    auto got = store.GetByContentHash(NsName(op.scope.ns), (*r)[i]);
    if (got.ok()) {
      if (!std::ranges::equal(got->view(), bytes)) {
        return Fail("G9", "read-back of a fresh put returned other bytes");
      }
    } else if (got.status().code() != Code::kUnavailable &&
               !(got.status().code() == Code::kCorruption &&
                 BlobCorrupted(op.scope.ns, (*r)[i]))) {
      return Fail("G1", "a put that returned OK is not readable by content hash at once: " +
                            got.status().ToString());
    }
  }
}

void Checkers::Publish(Store& store, const Op& op, const Result<uint64_t>& r,
                       const std::optional<HeadTruth>& before, const ChainState& current,
                       const std::optional<HeadTruth>* at_answer) {
  const ChainRef c{op.scope, op.chain_id};
  const auto now = ReadL2Head(bucket_->truth(), c);
  const auto& after = at_answer ? *at_answer : now;
  // Evict-gc: a completion may answer from inside a task (an eviction pass waiting on the
  // executor ran the answer), which then goes on and may trim the chain — after the ack, as
  // eviction may. The head is judged as it was at the answer; what the store serves next is not.
  const bool evicted_since =
      model_.evictable() && at_answer &&
      (now.has_value() != after.has_value() || (now && now->version != after->version));
  const std::string what = std::string(op.kind == OpKind::kSave ? "save" : "publish") + " of " +
                           ScopeName(op.scope) + " chain " + ShortKey(op.chain_id) + " " +
                           Keys(op.keys);
  if (r.ok()) {
    const uint64_t v = *r;
    if (!after && !CompactedAway(op)) {
      return Fail("G3", what + " acknowledged (v" + std::to_string(v) + ") but L2 has no head");
    }
    if (!after) {
      if (evicted_since) return;
      // Its head went as redundant: the chain is found whole through the longer one (G1).
      auto n = store.LookupPrefix(NsName(op.scope.ns), FpOf(op.scope.fp), op.keys);
      if (!n.ok() || *n != op.keys.size()) {
        const std::string found = n.ok() ? std::to_string(*n) : n.status().ToString();
        return Fail("G1", what + " acknowledged, its head compacted away, but the next lookup " +
                              "found " + found + " of " + std::to_string(op.keys.size()));
      }
      return;
    }
    if (after->version != v || KeysOf(after->entries) != op.keys) {
      return Fail("G3", what + " acknowledged v" + std::to_string(v) + " but L2 holds v" +
                            std::to_string(after->version) + " " + Keys(KeysOf(after->entries)));
    }
    // The tip's put awaiting publish on this host is what a publish of that tip takes, not a
    // block of the key indexed before (a publish through that block must have left the put).
    const ChainEntry& tip = after->entries.back();
    if (const Model::PendingPut* p = model_.PendingOf(op.host, op.scope, tip.key)) {
      const size_t n = after->entries.size();
      const BlockKey parent = n > 1 ? after->entries[n - 2].key : BlockKey{};
      if (p->parent == parent && !MayBeForgotten(*p) && tip.hash != p->hash) {
        return Fail("G1", what + " acknowledged, but its tip names blob " +
                              tip.hash.ToHex().substr(0, 10) + ", not " +
                              p->hash.ToHex().substr(0, 10) +
                              " of the tip's acknowledged put awaiting publish");
      }
    }
    if (op.expected && v != *op.expected + 1) {
      return Fail("G6", what + ": CAS on v" + std::to_string(*op.expected) + " returned v" +
                            std::to_string(v));
    }
    if (op.session && v <= model_.MaxAckedVersion(c)) {
      return Fail("G6", what + ": version " + std::to_string(v) +
                            " does not exceed an earlier acknowledged version " +
                            std::to_string(model_.MaxAckedVersion(c)));
    }
    if (evicted_since) return;
    // G1: visible to the next lookup and get in this process.
    auto n = store.LookupPrefix(NsName(op.scope.ns), FpOf(op.scope.fp), op.keys);
    if (!n.ok() || *n != op.keys.size()) {
      return Fail("G1", what + " acknowledged but the next lookup found " +
                            (n.ok() ? std::to_string(*n) : n.status().ToString()) + " of " +
                            std::to_string(op.keys.size()));
    }
    auto chain = store.GetChain(NsName(op.scope.ns), FpOf(op.scope.fp), op.chain_id);
    if (!chain.ok() || chain->size() != op.keys.size() || chain->back().key != op.keys.back()) {
      return Fail("G1", what + " acknowledged but GetChain disagrees");
    }
    return;
  }
  const Status& s = r.status();
  bool unchanged = (before.has_value() == after.has_value()) &&
                   (!before || before->version == after->version);
  // Evict-gc: background eviction during the call may have trimmed or deleted the head; that is
  // not the failed publish writing.
  if (!unchanged && model_.evictable() && before) {
    unchanged = !after || (after->entries.size() < before->entries.size() &&
                           std::equal(after->entries.begin(), after->entries.end(),
                                      before->entries.begin()));
  }
  switch (s.code()) {
    case Code::kUnavailable:
      return;  // in doubt: either outcome is allowed
    case Code::kConflict: {
      if (!op.expected) return Fail("G6", what + ": last-writer-wins publish reported " + Code(s));
      if (!unchanged) return Fail("G6", what + ": CAS reported Conflict but changed L2");
      const uint64_t now = after ? after->version : 0;
      if (current.version == *op.expected || current.version != now ||
          (after && current.tip != after->entries.back().key)) {
        return Fail("G6", what + ": CAS loser (expected v" + std::to_string(*op.expected) +
                              ") was told v" + std::to_string(current.version) + " tip " +
                              ShortKey(current.tip) + "; L2 holds v" + std::to_string(now));
      }
      return;
    }
    case Code::kFailedPrecondition:
      // A publish learns only after its head write that a blob it relies on was collected (R4,
      // and the check of the prefix it continues): its head stays. Allowed only when the blob is
      // gone under R1's stated limit (R1Excused), as for the heads HeadWritten excuses.
      if (!unchanged && !(after && std::ranges::any_of(after->entries, [&](const ChainEntry& e) {
                            return R1Excused(op.scope, e);
                          }))) {
        return Fail("G4", what + " failed (" + s.ToString() + ") but changed L2");
      }
      return;
    case Code::kCorruption:
      // G9: a CAS publish on a head the simulator damaged reports it (LWW replaces it).
      if (op.expected && model_.HeadCorrupted(ChainRef{op.scope, op.chain_id})) return;
      return Fail("G9", what + ": Corruption reported but no head of this chain was damaged: " +
                            s.ToString());
    default:
      return Fail("G3", what + ": unexpected error " + s.ToString());
  }
}

bool Checkers::CompactedAway(const Op& op) const {
  // Compaction (store_write.cc, CompactRedundantHeads) deletes a head named by its own tip whose
  // entries are a strict prefix of another head of the scope. A completion-form publish queues it
  // on the executor, so a compaction queued by an earlier save may run inside this call, after
  // its head write and before its answer, and delete the head just written: deleted during this
  // very call, the chain named by its tip, and a longer head in L2 now holding its keys.
  if (op.chain_id != op.keys.back()) return false;
  const std::string key =
      layout::ChainKey(kL2Prefix, NsName(op.scope.ns), FpOf(op.scope.fp), op.chain_id);
  if (!bucket_->DeletedThisStep(key)) return false;
  return std::ranges::any_of(ReadL2Heads(bucket_->truth(), cfg_), [&](const auto& h) {
    const auto keys = KeysOf(h.second.entries);
    return h.first.scope == op.scope && keys.size() > op.keys.size() &&
           std::equal(op.keys.begin(), op.keys.end(), keys.begin());
  });
}

void Checkers::Lookup(const Op& op, const Result<size_t>& r) {
  if (!r.ok()) return Fail("G1", "LookupPrefix failed: " + r.status().ToString());
  const size_t lb = model_.LowerBound(op.host, op.scope, op.keys);
  const size_t ub = model_.UpperBound(op.scope, op.keys);
  const std::string what = "h" + std::to_string(op.host) + " lookup " + ScopeName(op.scope) +
                           " " + Keys(op.keys) + " found " + std::to_string(*r);
  if (*r < lb) {
    return Fail("G1/G3/G11", what + " but at least " + std::to_string(lb) +
                                 " are published and known to this host");
  }
  if (*r > ub) {
    return Fail(op.scope == op.owner ? "G4" : "G8",
                what + " but at most " + std::to_string(ub) +
                    " are a prefix of a chain head ever written to L2 in this "
                    "namespace/fingerprint");
  }
}

void Checkers::Get(const Op& op, const Result<Borrow>& r) {
  const size_t lb = model_.StretchLowerBound(op.host, op.scope, op.keys);
  const size_t ub = model_.StretchUpperBound(op.scope, op.keys);
  const std::string what = "h" + std::to_string(op.host) + " get " + ScopeName(op.scope) + " " +
                           Keys(op.keys);
  if (r.ok()) {
    if (r->size() != op.keys.size()) return Fail("G9", what + ": wrong number of payloads");
    if (ub < op.keys.size()) {
      return Fail(op.scope == op.owner ? "G4" : "G8",
                  what + " returned blocks no chain head written to L2 holds in a row (" +
                      std::to_string(ub) + " of " + std::to_string(op.keys.size()) + ")");
    }
    for (size_t i = 0; i < op.keys.size(); ++i) {
      if (!model_.PayloadAllowed(cfg_, op.scope, op.keys[i], r->payload(i))) {
        return Fail(op.scope == op.owner ? "G9" : "G8",
                    what + ": block " + std::to_string(i) + " (" + std::to_string(
                        r->payload(i).size()) + " bytes) is not what was put under that key");
      }
    }
    return;
  }
  const Status& s = r.status();
  if (s.IsNotFound()) {
    // Excused by R1's limit only: a blob a head in L2 names for one of these keys, deleted by GC
    // after its put waited past the grace. A block naming bytes no head names any more is not
    // excused (bug 17: a node kept a departed chain's bytes after GC deleted them).
    bool abandoned = false;
    if (op.keys.size() <= lb && cfg_.capacity) {
      for (const auto& [c, head] : ReadL2Heads(bucket_->truth(), cfg_)) {
        if (c.scope != op.scope) continue;
        for (const auto& e : head.entries) {
          if (std::ranges::find(op.keys, e.key) == op.keys.end()) continue;
          abandoned |= AbandonedAndGone(op.scope.ns, e.hash);
        }
      }
    }
    if (op.keys.size() <= lb && !abandoned) {
      return Fail("G1/G3/G11", what + ": NotFound but the chain is published and known here: " +
                                   s.message());
    }
    return;
  }
  if (s.code() == Code::kUnavailable) return;
  if (s.code() == Code::kCorruption && AnyCorrupted(op.scope, op.keys)) return;
  Fail("G9", what + ": unexpected " + s.ToString());
}

void Checkers::GetByHash(const Op& op, const Result<BufferSlice>& r) {
  const int ns = op.scope.ns;
  const std::vector<uint8_t>* want = model_.BytesOf(ns, op.hash);
  const std::string what = "h" + std::to_string(op.host) + " get-by-hash " + NsName(ns) + " " +
                           op.hash.ToHex().substr(0, 10);
  if (r.ok()) {
    if (HashPayload(r->view()) != op.hash) {
      return Fail("G9", what + ": returned bytes that do not hash to the content hash");
    }
    if (!want) return Fail("G8", what + ": returned bytes never put in this namespace");
    if (!std::ranges::equal(*want, r->view())) return Fail("G9", what + ": wrong bytes");
    return;
  }
  const Status& s = r.status();
  const std::string key = layout::BlobKey(kL2Prefix, NsName(ns), op.hash);
  if (s.IsNotFound()) {
    if (want && bucket_->truth()->Head(key).ok()) {
      return Fail("G1/G3", what + ": NotFound but the blob is in L2");
    }
    return;
  }
  if (s.code() == Code::kUnavailable) return;
  if (s.code() == Code::kCorruption && bucket_->CorruptedThisStep(key)) return;
  Fail("G9", what + ": unexpected " + s.ToString());
}

void Checkers::Sidecar(const Op& op, const Result<BufferSlice>& r) {
  const ChainRef at{op.scope, op.keys.at(0)};
  const std::string what = "h" + std::to_string(op.host) + " get-sidecar " +
                           ScopeName(op.scope) + " tip " + ShortKey(at.id);
  if (r.ok()) {
    if (!model_.SidecarAllowed(at, r->view())) {
      return Fail(op.scope == op.owner ? "G7" : "G8",
                  what + ": returned bytes never put as this tip's sidecar");
    }
    return;
  }
  const Status& s = r.status();
  if (s.IsNotFound()) {
    // Evict-gc: eviction deletes a sidecar with the last chain holding its tip (docs/capacity.md).
    if (auto gen = model_.SidecarSettled(at); gen && !cfg_.capacity) {
      return Fail("G7", what + ": NotFound but generation " + std::to_string(*gen) +
                            " was acknowledged and never replaced");
    }
    return;
  }
  if (s.code() == Code::kUnavailable) return;
  const std::string key = layout::SidecarKey(kL2Prefix, NsName(op.scope.ns), FpOf(op.scope.fp),
                                             at.id);
  if (s.code() == Code::kCorruption && bucket_->CorruptedThisStep(key)) return;
  Fail("G9", what + ": unexpected " + s.ToString());
}

void Checkers::BytesFollowL2(Store& store, int host, const L2Heads& heads, const char* after) {
  if (head_in_doubt) {
    for (const auto& [c, h] : heads) {
      if (head_in_doubt(layout::ChainKey(kL2Prefix, NsName(c.scope.ns), FpOf(c.scope.fp), c.id))) {
        return;
      }
    }
  }
  // Per block (scope, keys root→block): the newest publish time of the heads through it, and
  // the bytes those heads name there (docs/layout.md §6, "One key, other bytes").
  struct Newest {
    uint64_t published_us = 0;
    std::set<ContentHash> hashes;
  };
  std::map<std::pair<Scope, std::vector<BlockKey>>, Newest> newest;
  for (const auto& [c, h] : heads) {
    std::vector<BlockKey> path;
    for (const ChainEntry& e : h.entries) {
      path.push_back(e.key);
      Newest& n = newest[{c.scope, path}];
      if (h.published_us > n.published_us) n = Newest{h.published_us, {}};
      if (h.published_us == n.published_us) n.hashes.insert(e.hash);
    }
  }
  for (const auto& [c, h] : heads) {
    auto blocks = store.GetChain(NsName(c.scope.ns), FpOf(c.scope.fp), c.id);
    if (!blocks.ok()) {
      return Fail("G11", "h" + std::to_string(host) + " after " + after + ": GetChain of chain " +
                             ShortKey(c.id) + ": " + blocks.status().ToString());
    }
    std::vector<BlockKey> path;
    for (size_t i = 0; i < blocks->size(); ++i) {
      path.push_back((*blocks)[i].key);
      if (newest[{c.scope, path}].hashes.count((*blocks)[i].hash)) continue;
      return Fail("G11", "h" + std::to_string(host) + " after " + after + ": block " +
                             std::to_string(i) + " of chain " + ShortKey(c.id) + " (" +
                             ScopeName(c.scope) +
                             ") has other bytes than the newest publish "
                             "through it");
    }
  }
}

void Checkers::SameAsL2(Store& store, int host, const L2Heads& heads, const char* after) {
  // Evict-gc: background passes run inside the call, and one whose head write is in doubt (an
  // answer lost) leaves this host's view behind L2 until its next refresh — checked exactly in
  // the liveness phase, where eviction is off.
  if (model_.evictable()) return;
  using Row = std::tuple<std::string, Fingerprint, ChainId, uint64_t, BlockKey, uint32_t>;
  std::set<Row> want, got;
  const auto in_doubt = [&](const std::string& ns, const Fingerprint& fp, const ChainId& id) {
    return head_in_doubt && head_in_doubt(layout::ChainKey(kL2Prefix, ns, fp, id));
  };
  for (const auto& [c, h] : heads) {
    if (in_doubt(NsName(c.scope.ns), FpOf(c.scope.fp), c.id)) continue;
    want.emplace(NsName(c.scope.ns), FpOf(c.scope.fp), c.id, h.version, h.entries.back().key,
                 static_cast<uint32_t>(h.entries.size()));
  }
  auto listed = store.ListChains("");
  if (!listed.ok()) {
    return Fail("G11", std::string("ListChains ") + after + ": " + listed.status().ToString());
  }
  for (const ChainState& s : *listed) {
    if (in_doubt(s.ns, s.fp, s.chain_id)) continue;
    got.emplace(s.ns, s.fp, s.chain_id, s.version, s.tip, s.length);
  }
  if (want == got) {
    BytesFollowL2(store, host, heads, after);
    return;
  }
  std::string diff;
  for (const Row& r : want) {
    if (!got.count(r)) {
      diff += " missing " + std::get<0>(r) + " chain " + ShortKey(std::get<2>(r)) + " v" +
              std::to_string(std::get<3>(r)) + ";";
    }
  }
  for (const Row& r : got) {
    if (!want.count(r)) {
      diff += " stale/extra " + std::get<0>(r) + " chain " + ShortKey(std::get<2>(r)) + " v" +
              std::to_string(std::get<3>(r)) + ";";
    }
  }
  Fail(std::string(after) == "open" ? "G3" : "G11",
       "h" + std::to_string(host) + " after " + after + " differs from L2:" + diff);
}

void Checkers::HeadWritten(const std::string& key, bool at_write) {
  if (!l2_invariants) return;
  auto obj = bucket_->truth()->Get(key, 0, kToEnd);
  if (!obj.ok()) return;
  auto head = layout::DecodeChainHead(obj->bytes->view(), key);
  if (!head.ok()) return Fail("G9", "a host wrote an undecodable head " + key);
  // A head (a publish, or eviction trimming one) is always a prefix of a publish of that chain.
  std::optional<ChainRef> ref;
  for (int ns = 0; ns < cfg_.namespaces && !ref; ++ns) {
    for (int fp = 0; fp < cfg_.fingerprints && !ref; ++fp) {
      if (NsName(ns) == head->ns && FpOf(fp) == head->fp) ref = ChainRef{{ns, fp}, head->chain_id};
    }
  }
  if (!ref || !model_.PrefixOfAttempt(*ref, KeysOf(head->entries))) {
    return Fail("G4/G10", "head " + key.substr(key.size() - 16) + " v" +
                              std::to_string(head->version) + " names " +
                              Keys(KeysOf(head->entries)) +
                              ", a prefix of no publish of that chain");
  }
  if (at_write) excused_.erase(key);
  for (const ChainEntry& e : head->entries) {
    const std::string blob = layout::BlobKey(kL2Prefix, head->ns, e.hash);
    auto b = bucket_->truth()->Get(blob, 0, kToEnd);
    if (!b.ok() && at_write && ref && R1Excused(ref->scope, e) && !bucket_->DeletedThisStep(blob)) {
      excused_[key].insert(blob);
      excused_blobs_.insert({ref->scope.ns, e.hash});
      continue;
    }
    // Later, only what was already gone at the write is excused: a blob present then and missing
    // now was deleted while a head named it (orphan GC must restore it, R3/R4).
    // A blob the simulator damaged may be deleted by orphan GC, which never puts corrupt bytes
    // back (R3): the chain was damaged already (G9) — and so is one a publish continues through
    // it, at its write too: the head it continues vouches for its blobs (docs/layout.md §7).
    if (!b.ok() && ((!at_write && excused_[key].count(blob)) || bucket_->EverCorrupted(blob))) {
      continue;
    }
    if (!b.ok()) {
      return Fail("G3", "head " + key.substr(key.size() - 16) + " v" +
                            std::to_string(head->version) + " was written while its block " +
                            ShortKey(e.key) + " (blob " + e.hash.ToHex().substr(0, 10) +
                            ") is not in L2");
    }
    if (bucket_->IsCorrupted(blob)) continue;
    auto payload = layout::DecodeVerified(layout::EnvelopeKind::kBlob, b->bytes, e.hash, blob);
    if (!payload.ok() || payload->size != e.length) {
      return Fail("G9", "head names blob " + blob + " whose bytes or length do not match");
    }
  }
}

void Checkers::HeadVersion(const std::string& key, bool deleted) {
  if (deleted) {
    head_versions_.erase(key);
    return;
  }
  auto obj = bucket_->truth()->Get(key, 0, kToEnd);
  if (!obj.ok()) return;
  auto head = layout::DecodeChainHead(obj->bytes->view(), key);
  if (!head.ok()) return;
  auto [it, fresh] = head_versions_.try_emplace(key, head->version);
  if (!fresh) {
    if (head->version <= it->second) {
      return Fail("G6", "head " + key.substr(key.size() - 16) + " went from v" +
                            std::to_string(it->second) + " to v" +
                            std::to_string(head->version) + ": two winners for one version");
    }
    it->second = head->version;
  }
}

void Checkers::AuditBucket() {
  std::string token;
  for (;;) {
    auto page = bucket_->truth()->List(std::string(kL2Prefix) + "/", "", token, 1000);
    if (!page.ok()) return Fail("G9", "audit: listing failed");
    for (const ObjectInfo& o : page->objects) {
      const size_t at = o.key.find("/wombatkv/v1/blob/");
      if (at != std::string::npos) {
        if (bucket_->IsCorrupted(o.key)) continue;
        auto hash = ContentHash::FromHex(o.key.substr(o.key.rfind('/') + 1));
        auto obj = bucket_->truth()->Get(o.key, 0, kToEnd);
        if (!hash.ok() || !obj.ok() ||
            !layout::DecodeVerified(layout::EnvelopeKind::kBlob, obj->bytes, *hash, o.key).ok()) {
          return Fail("G5/G9", "audit: blob " + o.key + " does not decode to its name (torn?)");
        }
      } else if (o.key.find("/wombatkv/v1/chain/") != std::string::npos &&
                 !bucket_->IsCorrupted(o.key)) {
        HeadWritten(o.key, /*at_write=*/false);  // when the L2 invariants are on
      }
    }
    if (page->next_token.empty()) break;
    token = page->next_token;
  }
}

}  // namespace wombatkv::sim
