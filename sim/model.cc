#include "sim/model.h"

#include <algorithm>
#include <cstring>

#include "layout/chain_head.h"
#include "layout/object_keys.h"

namespace wombatkv::sim {
namespace {

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

void Fill(uint64_t seed, std::vector<uint8_t>* out) {
  uint64_t x = Mix(seed) | 1;
  size_t i = 0;
  for (; i + 8 <= out->size(); i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(out->data() + i, &x, 8);
  }
  for (; i < out->size(); ++i) (*out)[i] = static_cast<uint8_t>(Mix(x + i));
}

size_t CommonPrefix(const std::vector<BlockKey>& a, const std::vector<BlockKey>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

}  // namespace

std::string NsName(int ns) {
  // Valid but unusual names: dots, dashes, mixed case.
  static const char* kNames[] = {"ns0", "Team-B.v2", "x_"};
  return kNames[ns % 3];
}

Fingerprint FpOf(int fp) {
  Fingerprint f;
  f.bytes.fill(static_cast<uint8_t>(0xA0 + fp));
  return f;
}

std::string ScopeName(const Scope& s) {
  return NsName(s.ns) + "/fp" + std::to_string(s.fp);
}

std::string ShortKey(const BlockKey& k) { return k.ToHex().substr(0, 8); }

std::vector<uint8_t> PayloadBytes(const SwarmConfig& cfg, const Scope& s, const BlockKey& key,
                                  uint32_t variant) {
  const uint64_t id = Mix(key.Prefix64() ^ Mix(uint64_t(s.ns) << 40 | uint64_t(s.fp) << 20 |
                                                variant));
  const uint64_t span = cfg.block_bytes_max - cfg.block_bytes_min + 1;
  std::vector<uint8_t> out(cfg.block_bytes_min + id % span);
  Fill(id, &out);
  if (cfg.block_compress_level > 0) {
    for (size_t i = 0; i < out.size(); ++i) {
      if (i % 4 >= 2) out[i] = 0;  // like the high bytes of small 16-bit values
    }
  }
  return out;
}

std::vector<uint8_t> SidecarBytes(const Scope& s, const BlockKey& tip, uint32_t gen) {
  const uint64_t id = Mix(tip.Prefix64() ^ Mix(uint64_t(s.ns) << 40 | uint64_t(s.fp) << 20 |
                                                (uint64_t(gen) + 0x5151)));
  std::vector<uint8_t> out(id % 300);
  Fill(id, &out);
  return out;
}

std::vector<BlockKey> KeysOf(const std::vector<ChainEntry>& entries) {
  std::vector<BlockKey> keys;
  keys.reserve(entries.size());
  for (const auto& e : entries) keys.push_back(e.key);
  return keys;
}

L2Heads ReadL2Heads(ObjectStore* truth, const SwarmConfig& cfg) {
  L2Heads out;
  for (int ns = 0; ns < cfg.namespaces; ++ns) {
    const std::string prefix = layout::ChainsPrefix(kL2Prefix, NsName(ns));
    std::string token;
    for (;;) {
      auto page = truth->List(prefix, "", token, 1000);
      if (!page.ok()) break;
      for (const ObjectInfo& o : page->objects) {
        auto name = layout::ParseChainKey(prefix, o.key);
        if (!name) continue;
        auto obj = truth->Get(o.key, 0, kToEnd);
        if (!obj.ok()) continue;
        auto head = layout::DecodeChainHead(obj->bytes->view(), o.key);
        if (!head.ok()) continue;
        int fp = -1;
        for (int f = 0; f < cfg.fingerprints; ++f) {
          if (FpOf(f) == name->fp) fp = f;
        }
        if (fp < 0) continue;
        out[ChainRef{Scope{ns, fp}, name->chain_id}] =
            HeadTruth{head->version, std::move(head->entries), head->published_us};
      }
      if (page->next_token.empty()) break;
      token = page->next_token;
    }
  }
  return out;
}

void Model::OnPut(const Scope& s, const BlockKey& key, uint32_t variant, const ContentHash& hash,
                  const std::vector<uint8_t>& bytes) {
  puts_[{s, key}][variant] = hash;
  bytes_.try_emplace({s.ns, hash}, bytes);
}

const std::vector<uint8_t>* Model::BytesOf(int ns, const ContentHash& hash) const {
  auto it = bytes_.find({ns, hash});
  return it == bytes_.end() ? nullptr : &it->second;
}

std::vector<ContentHash> Model::HashesOf(const Scope& s, const BlockKey& key) const {
  std::vector<ContentHash> out;
  auto it = puts_.find({s, key});
  if (it != puts_.end()) {
    for (const auto& [v, h] : it->second) out.push_back(h);
  }
  return out;
}

std::vector<std::pair<int, ContentHash>> Model::AllHashes() const {
  std::vector<std::pair<int, ContentHash>> out;
  for (const auto& [k, v] : bytes_) out.push_back(k);
  return out;
}

bool Model::PayloadAllowed(const SwarmConfig& cfg, const Scope& s, const BlockKey& key,
                           ByteView bytes) const {
  auto it = puts_.find({s, key});
  if (it == puts_.end()) return false;
  for (const auto& [variant, hash] : it->second) {
    const auto want = PayloadBytes(cfg, s, key, variant);
    if (std::ranges::equal(want, bytes)) return true;
  }
  return false;
}

void Model::OnPublishAttempt(const ChainRef& c, const std::vector<BlockKey>& keys) {
  attempts_[c].insert(keys);
  auto it = acks_.find(c);
  if (it != acks_.end()) it->second.superseded = true;
}

void Model::OnPublishAcked(int host, const ChainRef& c, const std::vector<BlockKey>& keys,
                           uint64_t version) {
  acks_[c] = Ack{keys, version, host, false};
  auto& v = max_acked_version_[c];
  v = std::max(v, version);
  known_[static_cast<size_t>(host)][c] = keys;
}

uint64_t Model::MaxAckedVersion(const ChainRef& c) const {
  auto it = max_acked_version_.find(c);
  return it == max_acked_version_.end() ? 0 : it->second;
}

void Model::OnPublishFailed(int host, const ChainRef& c) {
  known_[static_cast<size_t>(host)].erase(c);
}

void Model::OnHeadCorrupted(const ChainRef& c, const std::vector<BlockKey>& keys) {
  corrupted_heads_.insert(c);
  max_acked_version_.erase(c);
  const auto covered = [&](const ChainRef& other, const std::vector<BlockKey>& other_keys) {
    return other == c || (other.scope == c.scope && other_keys.size() <= keys.size() &&
                          std::equal(other_keys.begin(), other_keys.end(), keys.begin()));
  };
  for (auto& [ref, ack] : acks_) {
    if (covered(ref, ack.keys)) ack.superseded = true;
  }
  for (auto& k : known_) {
    for (auto it = k.begin(); it != k.end();) {
      it = covered(it->first, it->second) ? k.erase(it) : std::next(it);
    }
  }
}

void Model::OnSynced(int host, const L2Heads& heads) {
  auto& k = known_[static_cast<size_t>(host)];
  k.clear();
  for (const auto& [c, h] : heads) k[c] = KeysOf(h.entries);
}

void Model::OnAutoRefreshed(int host, const L2Heads& settled, const L2Heads& after) {
  auto& k = known_[static_cast<size_t>(host)];
  std::map<ChainRef, std::vector<BlockKey>> now;
  for (const auto& [c, h] : settled) now[c] = KeysOf(h.entries);
  for (auto& [c, keys] : k) {
    auto it = after.find(c);
    if (!now.count(c) && it != after.end() && KeysOf(it->second.entries) == keys) {
      now[c] = std::move(keys);
    }
  }
  k = std::move(now);
}

void Model::OnRefreshFailed(int host, const L2Heads& heads) {
  // A refresh only ever moves a chain towards what L2 holds: chains already equal stay known.
  auto& k = known_[static_cast<size_t>(host)];
  for (auto it = k.begin(); it != k.end();) {
    auto h = heads.find(it->first);
    if (h == heads.end() || KeysOf(h->second.entries) != it->second) {
      it = k.erase(it);
    } else {
      ++it;
    }
  }
}

bool Model::PrefixOfAttempt(const ChainRef& c, const std::vector<BlockKey>& keys) const {
  auto it = attempts_.find(c);
  if (it == attempts_.end()) return false;
  for (const auto& a : it->second) {
    if (CommonPrefix(a, keys) == keys.size()) return true;
  }
  return false;
}

size_t Model::LowerBound(int host, const Scope& s, const std::vector<BlockKey>& keys) const {
  if (evictable_) return 0;
  size_t best = 0;
  for (const auto& [c, known] : known_[static_cast<size_t>(host)]) {
    if (c.scope == s) best = std::max(best, CommonPrefix(keys, known));
  }
  return best;
}

size_t Model::StretchLowerBound(int host, const Scope& s, const std::vector<BlockKey>& keys) const {
  if (evictable_ || keys.empty()) return 0;
  size_t best = 0;
  for (const auto& [c, known] : known_[static_cast<size_t>(host)]) {
    if (c.scope != s) continue;
    auto at = std::find(known.begin(), known.end(), keys[0]);
    if (at == known.end()) continue;
    const std::vector<BlockKey> tail(at, known.end());
    best = std::max(best, CommonPrefix(keys, tail));
  }
  return best;
}

void Model::OnHeadWritten(const ChainRef& c, std::vector<BlockKey> keys) {
  written_heads_[c.scope].insert(std::move(keys));
}

// Heads are root→tip paths, and every key the workload makes has one parent in a scope, so the
// index's paths are exactly the prefixes of written heads: a lookup (from a root) may find at most
// the longest common prefix with one of them, a get of a stretch at most the run that follows
// keys[0] in one of them.
size_t Model::UpperBound(const Scope& s, const std::vector<BlockKey>& keys) const {
  auto it = written_heads_.find(s);
  if (it == written_heads_.end()) return 0;
  size_t best = 0;
  for (const auto& head : it->second) best = std::max(best, CommonPrefix(keys, head));
  return best;
}

size_t Model::StretchUpperBound(const Scope& s, const std::vector<BlockKey>& keys) const {
  auto it = written_heads_.find(s);
  if (it == written_heads_.end() || keys.empty()) return 0;
  size_t best = 0;
  for (const auto& head : it->second) {
    auto at = std::find(head.begin(), head.end(), keys[0]);
    if (at == head.end()) continue;
    const std::vector<BlockKey> tail(at, head.end());
    best = std::max(best, CommonPrefix(keys, tail));
  }
  return best;
}

void Model::OnSidecarAttempt(const ChainRef& at, uint32_t gen) {
  auto& st = sidecars_[at];
  st.attempted.insert(gen);
  if (st.acked) st.superseded = true;
}

void Model::OnSidecarAcked(const ChainRef& at, uint32_t gen) {
  auto& st = sidecars_[at];
  st.acked = gen;
  st.superseded = false;
}

bool Model::SidecarAllowed(const ChainRef& at, ByteView bytes) const {
  auto it = sidecars_.find(at);
  if (it == sidecars_.end()) return false;
  for (uint32_t gen : it->second.attempted) {
    if (std::ranges::equal(SidecarBytes(at.scope, at.id, gen), bytes)) return true;
  }
  return false;
}

std::optional<uint32_t> Model::SidecarSettled(const ChainRef& at) const {
  auto it = sidecars_.find(at);
  if (it == sidecars_.end() || it->second.superseded) return std::nullopt;
  return it->second.acked;
}

std::vector<ChainRef> Model::Sidecars() const {
  std::vector<ChainRef> out;
  for (const auto& [k, v] : sidecars_) out.push_back(k);
  return out;
}

}  // namespace wombatkv::sim

namespace wombatkv::sim {
std::optional<HeadTruth> ReadL2Head(ObjectStore* truth, const ChainRef& c) {
  const std::string key = layout::ChainKey(kL2Prefix, NsName(c.scope.ns), FpOf(c.scope.fp), c.id);
  auto obj = truth->Get(key, 0, kToEnd);
  if (!obj.ok()) return std::nullopt;
  auto head = layout::DecodeChainHead(obj->bytes->view(), key);
  if (!head.ok()) return std::nullopt;
  return HeadTruth{head->version, std::move(head->entries), head->published_us};
}
void Model::OnPublishedBy(int host, const Scope& s, const std::vector<ChainEntry>& entries) {
  for (const ChainEntry& e : entries)
    maybe_pending_[static_cast<size_t>(host)].erase({s, e.key, e.hash});
  auto& m = pending_[static_cast<size_t>(host)];
  for (size_t i = 0; i < entries.size(); ++i) {
    auto it = m.find({s, entries[i].key});
    const BlockKey parent = i ? entries[i - 1].key : BlockKey{};
    if (it != m.end() && it->second.hash == entries[i].hash && it->second.parent == parent) {
      m.erase(it);
    }
  }
}

}  // namespace wombatkv::sim
