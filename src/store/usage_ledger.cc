#include "store/usage_ledger.h"

#include <algorithm>
#include <set>
#include <unordered_set>

#include "base/check.h"
#include "layout/chain_head.h"
#include "layout/envelope.h"

namespace wombatkv {

uint64_t BlobObjectBytes(uint64_t length) { return layout::kEnvelopeHeaderBytes + length; }

UsageLedger::Ns& UsageLedger::NsFor(std::string_view ns) {
  auto it = ns_.find(ns);
  if (it == ns_.end()) it = ns_.emplace(std::string(ns), Ns{}).first;
  return it->second;
}

const UsageLedger::Ns* UsageLedger::FindNs(std::string_view ns) const {
  auto it = ns_.find(ns);
  return it == ns_.end() ? nullptr : &it->second;
}

void UsageLedger::AddUnref(const std::string& ns, Ns& n, const UnrefBlob& b) {
  auto [it, inserted] = n.unref.try_emplace(b.hash, Unref{b.bytes, b.since_us, 0});
  if (!inserted) return;
  n.unref_bytes += b.bytes;
  probe_queue_.emplace_back(ns, b.hash);
  if (probe_queue_.size() >= compact_probe_queue_at_) CompactProbeQueue();
}

void UsageLedger::CompactProbeQueue() {
  // Keeps each live entry once, in queue order: the round robin goes on where it was.
  std::deque<std::pair<std::string, ContentHash>> kept;
  std::set<std::pair<std::string_view, ContentHash>> seen;
  for (auto& entry : probe_queue_) {
    auto nit = ns_.find(entry.first);
    if (nit == ns_.end() || !nit->second.unref.contains(entry.second)) continue;
    if (!seen.emplace(nit->first, entry.second).second) continue;
    kept.push_back(std::move(entry));
  }
  probe_queue_ = std::move(kept);
  compact_probe_queue_at_ = std::max(kProbeQueueCompactMin, 2 * probe_queue_.size());
}

void UsageLedger::AddRefs(Ns& n, std::span<const ChainEntry> entries, Changes* changes) {
  for (const ChainEntry& e : entries) {
    BlobRef& b = n.blobs[e.hash];
    if (b.refs++ > 0) continue;
    b.length = e.length;
    n.blob_bytes += BlobObjectBytes(e.length);
    auto u = n.unref.find(e.hash);
    if (u != n.unref.end()) {  // U2
      n.unref_bytes -= u->second.bytes;
      n.unref.erase(u);
      if (changes) changes->rereferenced.push_back(e.hash);
    }
  }
}

void UsageLedger::DropRefs(const std::string& ns, Ns& n, std::span<const ContentHash> hashes,
                           uint64_t now_us, Changes* changes) {
  for (const ContentHash& h : hashes) {
    auto it = n.blobs.find(h);
    WMBT_CHECK(it != n.blobs.end() && it->second.refs > 0);  // U4: the chain's own entries
    if (--it->second.refs > 0) continue;
    const uint64_t bytes = BlobObjectBytes(it->second.length);
    n.blob_bytes -= bytes;
    n.blobs.erase(it);
    UnrefBlob u{h, bytes, now_us};
    AddUnref(ns, n, u);
    if (changes) changes->unreferenced.push_back(u);
  }
}

void UsageLedger::ChainSet(std::string_view ns, const Fingerprint& fp, const ChainId& chain_id,
                           std::span<const ChainEntry> entries, uint64_t order, uint64_t now_us,
                           Changes* changes) {
  std::lock_guard<std::mutex> g(mu_);
  auto nit = ns_.find(ns);
  if (nit == ns_.end()) nit = ns_.emplace(std::string(ns), Ns{}).first;
  Ns& n = nit->second;
  std::vector<ContentHash> hashes;
  hashes.reserve(entries.size());
  for (const ChainEntry& e : entries) hashes.push_back(e.hash);
  ScopeTotals& sc = n.scopes[fp];
  auto [cit, inserted] = n.chains.try_emplace({fp, chain_id});
  // The new entries first: blobs both heads name never drop to zero references (U2).
  AddRefs(n, entries, changes);
  if (!inserted) {
    sc.head_bytes -= layout::ChainHeadBytes(ns.size(), cit->second.hashes.size());
    DropRefs(nit->first, n, cit->second.hashes, now_us, changes);
  } else {
    ++sc.chains;
  }
  sc.head_bytes += layout::ChainHeadBytes(ns.size(), entries.size());
  cit->second = ChainHashes{order, std::move(hashes)};
}

std::optional<RadixIndex::OwnEntry> UsageLedger::OwnEntry(std::string_view ns,
                                                          const Fingerprint& fp,
                                                          const ChainId& chain_id,
                                                          uint32_t position) const {
  std::lock_guard<std::mutex> g(mu_);
  const Ns* n = FindNs(ns);
  if (n == nullptr) return std::nullopt;
  auto cit = n->chains.find({fp, chain_id});
  if (cit == n->chains.end() || position >= cit->second.hashes.size()) return std::nullopt;
  const ContentHash& h = cit->second.hashes[position];
  return RadixIndex::OwnEntry{BlockMeta{h, n->blobs.at(h).length}, cit->second.order};
}

std::optional<uint64_t> UsageLedger::ChainOrder(std::string_view ns, const Fingerprint& fp,
                                                const ChainId& chain_id) const {
  std::lock_guard<std::mutex> g(mu_);
  const Ns* n = FindNs(ns);
  if (n == nullptr) return std::nullopt;
  auto cit = n->chains.find({fp, chain_id});
  if (cit == n->chains.end()) return std::nullopt;
  return cit->second.order;
}

bool UsageLedger::ChainRemoved(std::string_view ns, const Fingerprint& fp,
                               const ChainId& chain_id, uint64_t now_us, Changes* changes) {
  std::lock_guard<std::mutex> g(mu_);
  auto nit = ns_.find(ns);
  if (nit == ns_.end()) return false;
  Ns& n = nit->second;
  auto cit = n.chains.find({fp, chain_id});
  if (cit == n.chains.end()) return false;
  auto sit = n.scopes.find(fp);
  WMBT_CHECK(sit != n.scopes.end() && sit->second.chains > 0);  // U3
  ScopeTotals& sc = sit->second;
  --sc.chains;
  sc.head_bytes -= layout::ChainHeadBytes(ns.size(), cit->second.hashes.size());
  if (sc.chains == 0) {
    WMBT_CHECK(sc.head_bytes == 0);  // U3
    n.scopes.erase(sit);
  }
  DropRefs(nit->first, n, cit->second.hashes, now_us, changes);
  n.chains.erase(cit);
  return true;
}

void UsageLedger::SidecarPut(std::string_view ns, const Fingerprint& fp, const BlockKey& tip,
                             uint64_t bytes) {
  std::lock_guard<std::mutex> g(mu_);
  Ns& n = NsFor(ns);
  Sidecar& s = n.sidecars[{fp, tip}];
  n.sidecar_bytes += bytes - s.bytes;  // wraps correctly when it shrinks
  s.bytes = bytes;
  s.token = ++sidecar_token_;
}

void UsageLedger::SidecarDeleted(std::string_view ns, const Fingerprint& fp, const BlockKey& tip) {
  std::lock_guard<std::mutex> g(mu_);
  auto nit = ns_.find(ns);
  if (nit == ns_.end()) return;
  Ns& n = nit->second;
  auto it = n.sidecars.find({fp, tip});
  if (it == n.sidecars.end()) return;
  n.sidecar_bytes -= it->second.bytes;
  n.sidecars.erase(it);
}

uint64_t UsageLedger::SidecarBytes(std::string_view ns, const Fingerprint& fp,
                                   const BlockKey& tip) const {
  std::lock_guard<std::mutex> g(mu_);
  const Ns* n = FindNs(ns);
  if (n == nullptr) return 0;
  auto it = n->sidecars.find({fp, tip});
  return it == n->sidecars.end() ? 0 : it->second.bytes;
}

uint64_t UsageLedger::QuickBytes(std::string_view ns) const {
  std::lock_guard<std::mutex> g(mu_);
  const Ns* n = FindNs(ns);
  if (n == nullptr) return 0;
  uint64_t total = n->blob_bytes + n->sidecar_bytes;
  for (const auto& [fp, sc] : n->scopes) total += sc.head_bytes;
  return total;
}

uint64_t UsageLedger::BeginSidecarListing() {
  std::lock_guard<std::mutex> g(mu_);
  return ++sidecar_token_;
}

void UsageLedger::ReplaceSidecars(std::string_view ns, uint64_t token,
                                  std::span<const ListedSidecar> listed) {
  std::lock_guard<std::mutex> g(mu_);
  Ns& n = NsFor(ns);
  std::map<std::pair<Fingerprint, BlockKey>, Sidecar> next;
  for (const ListedSidecar& l : listed) next[{l.fp, l.tip}] = Sidecar{l.bytes, token};
  for (const auto& [id, s] : n.sidecars) {
    if (s.token > token) next[id] = s;  // put while the listing ran: newer than what it saw
  }
  n.sidecars = std::move(next);
  n.sidecar_bytes = 0;
  for (const auto& [id, s] : n.sidecars) n.sidecar_bytes += s.bytes;
}

bool UsageLedger::UnrefLoaded(std::string_view ns, const UnrefBlob& blob) {
  std::lock_guard<std::mutex> g(mu_);
  auto nit = ns_.find(ns);
  if (nit == ns_.end()) nit = ns_.emplace(std::string(ns), Ns{}).first;
  if (nit->second.blobs.count(blob.hash)) return false;  // U2
  AddUnref(nit->first, nit->second, blob);
  return true;
}

std::vector<std::pair<std::string, UsageLedger::UnrefBlob>> UsageLedger::DueForProbe(
    uint64_t now_us, uint64_t interval_us, size_t max) {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<std::pair<std::string, UnrefBlob>> out;
  // A bounded look at the front of the queue: stale entries (referenced again, or deleted) are
  // dropped, the others go to the back. An entry is due one interval after it was unreferenced
  // (orphan GC keeps young orphans for its grace period anyway) and after each probe.
  for (size_t looked = 0, n = std::min(probe_queue_.size(), 4 * max);
       looked < n && out.size() < max; ++looked) {
    auto entry = std::move(probe_queue_.front());
    probe_queue_.pop_front();
    auto nit = ns_.find(entry.first);
    if (nit == ns_.end()) continue;
    auto it = nit->second.unref.find(entry.second);
    if (it == nit->second.unref.end()) continue;
    Unref& u = it->second;
    if (std::max(u.since_us, u.probed_us) + interval_us <= now_us) {
      u.probed_us = now_us;
      out.emplace_back(entry.first, UnrefBlob{entry.second, u.bytes, u.since_us});
    }
    probe_queue_.push_back(std::move(entry));
  }
  return out;
}

uint64_t UsageLedger::UnrefDeleted(std::string_view ns, const ContentHash& hash) {
  std::lock_guard<std::mutex> g(mu_);
  auto nit = ns_.find(ns);
  if (nit == ns_.end()) return 0;
  auto it = nit->second.unref.find(hash);
  if (it == nit->second.unref.end()) return 0;
  const uint64_t bytes = it->second.bytes;
  nit->second.unref_bytes -= bytes;
  nit->second.unref.erase(it);
  return bytes;
}

bool UsageLedger::IsReferenced(std::string_view ns, const ContentHash& hash) const {
  std::lock_guard<std::mutex> g(mu_);
  const Ns* n = FindNs(ns);
  return n != nullptr && n->blobs.count(hash) > 0;
}

uint64_t UsageLedger::BytesFreedIfDropped(std::string_view ns, const ContentHash& hash,
                                          uint32_t refs) const {
  std::lock_guard<std::mutex> g(mu_);
  const Ns* n = FindNs(ns);
  if (n == nullptr) return 0;
  auto it = n->blobs.find(hash);
  if (it == n->blobs.end() || it->second.refs > refs) return 0;
  return BlobObjectBytes(it->second.length);
}

UsageLedger::Totals UsageLedger::NamespaceTotals(std::string_view ns,
                                                 const IndexedFn& indexed) const {
  std::lock_guard<std::mutex> g(mu_);
  Totals t;
  const Ns* n = FindNs(ns);
  if (n == nullptr) return t;
  for (const auto& [fp, sc] : n->scopes) {
    t.chains += sc.chains;
    t.head_bytes += sc.head_bytes;
  }
  t.blobs = n->blobs.size();
  t.blob_bytes = n->blob_bytes;
  for (const auto& [id, s] : n->sidecars) {
    if (indexed(id.first, id.second)) {
      ++t.sidecars;
      t.sidecar_bytes += s.bytes;
    } else {
      ++t.stray_sidecars;
      t.stray_sidecar_bytes += s.bytes;
    }
  }
  t.unreferenced_blobs = n->unref.size();
  t.unreferenced_bytes = n->unref_bytes;
  return t;
}

std::map<Fingerprint, UsageLedger::Totals> UsageLedger::FingerprintTotals(
    std::string_view ns, const IndexedFn& indexed) const {
  std::lock_guard<std::mutex> g(mu_);
  std::map<Fingerprint, Totals> out;
  const Ns* n = FindNs(ns);
  if (n == nullptr) return out;
  for (const auto& [fp, sc] : n->scopes) {
    out[fp].chains = sc.chains;
    out[fp].head_bytes = sc.head_bytes;
  }
  // Distinct blobs per fingerprint. The chains are hashed, so fingerprints come interleaved: a
  // set of the blobs seen for each.
  std::map<Fingerprint, std::unordered_set<ContentHash, FixedBytesHash>> seen;
  for (const auto& [id, chain] : n->chains) {
    Totals& t = out[id.first];
    auto& seen_here = seen[id.first];
    for (const ContentHash& h : chain.hashes) {
      if (!seen_here.insert(h).second) continue;
      ++t.blobs;
      t.blob_bytes += BlobObjectBytes(n->blobs.at(h).length);
    }
  }
  for (const auto& [id, s] : n->sidecars) {
    Totals& t = out[id.first];
    if (indexed(id.first, id.second)) {
      ++t.sidecars;
      t.sidecar_bytes += s.bytes;
    } else {
      ++t.stray_sidecars;
      t.stray_sidecar_bytes += s.bytes;
    }
  }
  return out;
}

std::vector<std::string> UsageLedger::Namespaces() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<std::string> out;
  for (const auto& [name, n] : ns_) out.push_back(name);
  return out;
}

uint64_t UsageLedger::AllReferencedBytes() const {
  std::lock_guard<std::mutex> g(mu_);
  uint64_t total = 0;
  for (const auto& [name, n] : ns_) {
    total += n.blob_bytes + n.sidecar_bytes;
    for (const auto& [fp, sc] : n.scopes) total += sc.head_bytes;
  }
  return total;
}

uint64_t UsageLedger::AllUnreferencedBytes() const {
  std::lock_guard<std::mutex> g(mu_);
  uint64_t total = 0;
  for (const auto& [name, n] : ns_) total += n.unref_bytes;
  return total;
}

}  // namespace wombatkv
