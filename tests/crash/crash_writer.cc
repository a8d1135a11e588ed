// crash_writer — the process the real-process crash harness (tests/crash/crash_test.sh) SIGKILLs,
// and the checker it runs after each kill (issue 5, "Real-process crash tests"; SPEC §5 G3/G4/G9).
//
//   crash_writer --data-dir DIR --log FILE --seed N [--iters N]   write until killed (or N iters)
//   crash_writer --data-dir DIR --log FILE --verify               check the store against the log
//   crash_writer --tcp HOST:PORT --log FILE --seed N              write through a wombatkvd
//
// With --tcp the writer is a client of a daemon (RemoteStore over TCP) and the harness SIGKILLs the
// daemon instead; a writer that loses its daemon exits 4 (expected then). --verify always opens
// the data directory itself, after the daemon is dead.
//
// The writer opens the embedded store (local-directory L2, or S3 when WMBT_KV_BUCKET is set, as
// the CLI does) and loops: builds chains (fresh roots; extensions of its earlier chains, on disk
// from earlier runs too; chain id = tip like the C ABI, or explicit ids, some republished with a
// new tip: last writer wins), PutBlocks, PublishChain, sometimes PutSidecar, sometimes abandons
// blocks it put (orphans). The log FILE is the harness's record, one line per write(2):
//   START <run>
//   PUT <ns> <fp> <base len> <key...>                    before PutBlocks (no fsync): full path
//                                                        root→tip, keys from <base len> are new
//   TRY <ns> <fp> <chain id> <tip> <n> <key...>          before PublishChain, fdatasync'd
//   ACK <ns> <fp> <chain id> <version> <tip> <n> <key...> <content hash...>
//                                                        after PublishChain returned OK, fdatasync'd
//   SIDE <ns> <fp> <tip>                                 after PutSidecar returned OK, fdatasync'd
// A TRY without its ACK is "in doubt": either outcome is allowed. Payload bytes are a pure
// function of the key, sidecar bytes of the tip, so the checker recomputes them.
//
// --verify opens the store after a crash and checks, exiting 0 or printing every violation, exit 1:
//   G3  every chain id's latest ACK is visible in full (GetChain, LookupPrefix), with its version
//       and hashes, unless a later in-doubt TRY of the same id replaced it (then that TRY's chain,
//       with a higher version), or it is named by its tip and was compacted by a longer tried
//       tip-named chain (then its keys must still look up and read back in full); ACK versions
//       of one chain id increase.
//   G9  GetBlocks of every visible chain returns exactly the recomputed bytes, which hash to the
//       content hashes GetChain and the ACK line name; sidecars found are exactly their bytes.
//   G4  no PUT whose new keys never reached a TRY is visible to LookupPrefix or GetBlocks past
//       its base; ListChains shows no chain id that was never tried, and a never-acked id shows
//       only a tried tip.
//   G7  (with G3) a SIDE-acked sidecar is found; any sidecar found is exactly its bytes.
// Assertions are about states only, never about timing.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/blake3_hash.h"
#include "config/config.h"
#include "connect/open_client_store.h"
#include "wombatkv/store.h"

namespace wombatkv {
namespace {

constexpr size_t kChainLenMax = 24;
const char* const kNamespaces[] = {"crash-a", "crash-b"};

// ---- Deterministic data ---------------------------------------------------------------------

std::array<uint8_t, 32> Hash(std::string_view domain, std::span<const uint8_t> a, uint64_t n) {
  Blake3Hasher h;
  h.Update(AsBytes(domain));
  h.Update(a);
  uint8_t nb[8];
  std::memcpy(nb, &n, 8);
  h.Update(nb);
  std::array<uint8_t, 32> out;
  h.Finalize(out);
  return out;
}

Fingerprint FpOf(int i) {
  auto d = Hash("crash.fp", {}, static_cast<uint64_t>(i));
  return Fingerprint::FromBytes(std::span<const uint8_t>(d.data(), 12));
}

// Bytes a pure function of `seed` (a key or tip), 256..4351 bytes long.
std::vector<uint8_t> Expand(std::string_view domain, const BlockKey& seed) {
  size_t len = 256 + static_cast<size_t>(seed.bytes[0]) * 16 + seed.bytes[1] % 16;
  std::vector<uint8_t> out;
  out.reserve(len + 32);
  for (uint64_t i = 0; out.size() < len; ++i) {
    auto chunk = Hash(domain, seed.bytes, i);
    out.insert(out.end(), chunk.begin(), chunk.end());
  }
  out.resize(len);
  return out;
}
std::vector<uint8_t> PayloadOf(const BlockKey& key) { return Expand("crash.payload", key); }
std::vector<uint8_t> SidecarOf(const BlockKey& tip) { return Expand("crash.sidecar", tip); }

// ---- The log ---------------------------------------------------------------------------------

class AckLog {
 public:
  static std::unique_ptr<AckLog> Open(const std::string& path) {
    int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      std::fprintf(stderr, "crash_writer: open %s: %s\n", path.c_str(), std::strerror(errno));
      return nullptr;
    }
    return std::unique_ptr<AckLog>(new AckLog(fd));
  }
  ~AckLog() { ::close(fd_); }
  // One write(2) per line; `sync` = fdatasync before returning. Dies on failure: a log that
  // does not say what was acknowledged makes the whole run meaningless.
  void Append(const std::string& line, bool sync) {
    std::string l = line + "\n";
    ssize_t n = ::write(fd_, l.data(), l.size());
    if (n != static_cast<ssize_t>(l.size())) {
      std::fprintf(stderr, "crash_writer: log write failed: %s\n", std::strerror(errno));
      std::_Exit(3);
    }
    if (sync && ::fdatasync(fd_) != 0) {
      std::fprintf(stderr, "crash_writer: log fdatasync failed: %s\n", std::strerror(errno));
      std::_Exit(3);
    }
  }

 private:
  explicit AckLog(int fd) : fd_(fd) {}
  int fd_;
};

struct Line {
  std::string kind;
  std::string ns;
  Fingerprint fp;
  ChainId id;
  BlockKey tip;
  uint64_t version = 0;
  size_t base = 0;  // PUT
  std::vector<BlockKey> keys;
  std::vector<ContentHash> hashes;
  size_t index = 0;  // line number
};

// Parses the log. Lines that are torn (no newline: the writer was killed inside write(2)) or
// malformed are skipped and counted in *skipped.
std::vector<Line> ReadLog(const std::string& path, size_t* skipped, uint64_t* runs) {
  std::vector<Line> out;
  *skipped = 0;
  *runs = 0;
  std::ifstream in(path, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t pos = 0, index = 0;
  while (pos < all.size()) {
    size_t nl = all.find('\n', pos);
    if (nl == std::string::npos) {  // torn last line
      ++*skipped;
      break;
    }
    std::string text = all.substr(pos, nl - pos);
    pos = nl + 1;
    ++index;
    std::istringstream ss(text);
    Line l;
    l.index = index;
    ss >> l.kind;
    bool ok = true;
    auto key = [&](BlockKey* k) {
      std::string h;
      if (!(ss >> h)) return false;
      auto r = BlockKey::FromHex(h);
      if (!r.ok()) return false;
      *k = *r;
      return true;
    };
    auto nsfp = [&]() {
      std::string fph;
      if (!(ss >> l.ns >> fph)) return false;
      auto r = Fingerprint::FromHex(fph);
      if (!r.ok()) return false;
      l.fp = *r;
      return true;
    };
    auto keys = [&](size_t n) {
      l.keys.resize(n);
      for (auto& k : l.keys) if (!key(&k)) return false;
      return true;
    };
    size_t n = 0;
    if (l.kind == "START") {
      ++*runs;
      continue;
    } else if (l.kind == "PUT") {
      std::vector<BlockKey> ks;
      ok = nsfp() && static_cast<bool>(ss >> l.base);
      BlockKey k;
      while (ok && key(&k)) ks.push_back(k);
      l.keys = std::move(ks);
      ok = ok && l.base < l.keys.size();
    } else if (l.kind == "TRY") {
      ok = nsfp() && key(&l.id) && key(&l.tip) && static_cast<bool>(ss >> n) && n > 0 &&
           n <= 4096 && keys(n);
    } else if (l.kind == "ACK") {
      ok = nsfp() && key(&l.id) && static_cast<bool>(ss >> l.version) && key(&l.tip) &&
           static_cast<bool>(ss >> n) && n > 0 && n <= 4096 && keys(n);
      l.hashes.resize(n);
      for (size_t i = 0; ok && i < n; ++i) {
        std::string h;
        auto r = (ss >> h) ? ContentHash::FromHex(h) : Result<ContentHash>(Status::InvalidArgument("eol"));
        ok = r.ok();
        if (ok) l.hashes[i] = *r;
      }
    } else if (l.kind == "SIDE") {
      ok = nsfp() && key(&l.tip);
    } else {
      ok = false;
    }
    if (ok && (l.kind == "TRY" || l.kind == "ACK")) ok = l.keys.back() == l.tip;
    if (!ok) {
      ++*skipped;
      continue;
    }
    out.push_back(std::move(l));
  }
  return out;
}

std::string ChainName(const std::string& ns, const Fingerprint& fp, const ChainId& id) {
  return ns + " " + fp.ToHex() + " " + id.ToHex();
}

// ---- Opening the store -----------------------------------------------------------------------

// The writer opens its store the way the C ABI does (src/connect): embedded on `data_dir` (L2 in
// the local directory or, with WMBT_KV_BUCKET, on S3), or a client of wombatkvd over TCP.
std::shared_ptr<Store> Open(const std::string& data_dir, const std::string& tcp_addr) {
  auto config = Config::FromEnv();
  if (!config.ok()) {
    std::fprintf(stderr, "crash_writer: config: %s\n", config.status().ToString().c_str());
    return nullptr;
  }
  config->data_dir = data_dir;
  config->upload_threads = 4;
  config->cache_bytes = 64ull << 20;
  config->tcp_addr = tcp_addr;
  ClientStoreSetup setup;
  setup.client_name = "crash_writer";
  setup.embedded.program = "crash_writer";
  auto opened = OpenClientStoreAs(tcp_addr.empty() ? ClientBackend::kEmbedded : ClientBackend::kTcp,
                                  *config, setup);
  if (!opened.ok()) {
    std::fprintf(stderr, "crash_writer: open %s: %s\n", tcp_addr.empty() ? data_dir.c_str() : tcp_addr.c_str(),
                 opened.status().ToString().c_str());
    return nullptr;
  }
  return opened->store;
}

// ---- Writer ----------------------------------------------------------------------------------

struct Chain {  // an acknowledged chain the writer may extend or replace
  std::string ns;
  Fingerprint fp;
  ChainId id;
  std::vector<BlockKey> keys;
  std::vector<ContentHash> hashes;
  bool current = true;  // false once a TRY of the same id is in doubt
};

std::string Join(const std::vector<BlockKey>& keys) {
  std::string s;
  for (const auto& k : keys) s += " " + k.ToHex();
  return s;
}

// Exit code of a writer whose daemon went away (--tcp): expected when the harness kills it.
constexpr int kLostDaemon = 4;

int RunWriter(const std::string& data_dir, const std::string& tcp, const std::string& log_path,
              uint64_t seed, uint64_t iters) {
  size_t skipped;
  uint64_t runs;
  auto lines = ReadLog(log_path, &skipped, &runs);
  // Close a torn last line so the next line starts clean.
  {
    std::ifstream in(log_path, std::ios::binary | std::ios::ate);
    if (in && in.tellg() > 0) {
      in.seekg(-1, std::ios::end);
      char c = 0;
      in.get(c);
      if (c != '\n') {
        std::ofstream(log_path, std::ios::app) << "\n";
      }
    }
  }
  // The chains to build on: every id's latest ACK, unless a later TRY of that id is in doubt.
  std::map<std::string, Chain> chains;
  for (const auto& l : lines) {
    std::string name = (l.kind == "TRY" || l.kind == "ACK") ? ChainName(l.ns, l.fp, l.id) : "";
    if (l.kind == "TRY") {
      auto it = chains.find(name);
      if (it != chains.end()) it->second.current = false;
    } else if (l.kind == "ACK") {
      chains[name] = Chain{l.ns, l.fp, l.id, l.keys, l.hashes, true};
    }
  }
  auto log = AckLog::Open(log_path);
  if (!log) return 3;
  auto opened = Open(data_dir, tcp);
  if (!opened) return tcp.empty() ? 3 : kLostDaemon;
  Store& store = *opened;
  // A daemon that went away fails every call with Unavailable: the run ends there.
  auto lost = [&](const Status& s) { return !tcp.empty() && s.code() == Code::kUnavailable; };
  log->Append("START " + std::to_string(runs), true);

  std::mt19937_64 rng(seed ^ (runs * 0x9E3779B97F4A7C15ull));
  auto pick = [&](uint64_t n) { return rng() % n; };
  uint64_t counter = 0;
  auto fresh = [&](std::string_view domain) {
    uint8_t r[16];
    std::memcpy(r, &runs, 8);
    std::memcpy(r + 8, &seed, 8);
    return BlockKey::FromBytes(Hash(domain, r, counter++));
  };

  for (uint64_t it = 0; iters == 0 || it < iters; ++it) {
    // Candidates to extend or replace.
    std::vector<Chain*> bases, explicit_ids;
    for (auto& [name, c] : chains) {
      if (!c.current) continue;
      if (c.keys.size() < kChainLenMax) bases.push_back(&c);
      if (c.id != c.keys.back()) explicit_ids.push_back(&c);
    }
    Chain* base = (!bases.empty() && pick(2) == 0) ? bases[pick(bases.size())] : nullptr;
    std::string ns = base ? base->ns : kNamespaces[pick(2)];
    Fingerprint fp = base ? base->fp : FpOf(static_cast<int>(pick(2)));
    std::vector<BlockKey> path = base ? base->keys : std::vector<BlockKey>{};
    std::vector<ContentHash> hashes = base ? base->hashes : std::vector<ContentHash>{};
    size_t base_len = path.size();
    size_t n_new = 1 + pick(6);
    std::vector<BlockPut> puts;
    std::vector<std::vector<uint8_t>> payloads;
    payloads.reserve(n_new);
    for (size_t i = 0; i < n_new; ++i) {
      BlockKey k = fresh("crash.key");
      payloads.push_back(PayloadOf(k));
      puts.push_back(BlockPut{k, path.empty() ? BlockKey{} : path.back(), payloads.back()});
      path.push_back(k);
    }
    log->Append("PUT " + ns + " " + fp.ToHex() + " " + std::to_string(base_len) + Join(path),
                false);
    auto put = store.PutBlocks(ns, fp, puts);
    if (!put.ok()) {
      std::fprintf(stderr, "crash_writer: PutBlocks: %s\n", put.status().ToString().c_str());
      return lost(put.status()) ? kLostDaemon : 2;
    }
    hashes.insert(hashes.end(), put->begin(), put->end());
    if (pick(10) == 0) continue;  // abandoned: these blocks stay orphans (G4)

    const BlockKey tip = path.back();
    ChainId id = tip;
    uint64_t how = pick(100);
    if (base && base->id != base->keys.back() && how < 40) {
      id = base->id;  // extend an explicit-id chain in place (last writer wins)
    } else if (!explicit_ids.empty() && how < 55) {
      Chain* victim = explicit_ids[pick(explicit_ids.size())];
      if (victim->ns == ns && victim->fp == fp) id = victim->id;  // replace with another chain
    } else if (how < 75) {
      id = fresh("crash.chain");  // a new explicit id
    }
    std::string name = ChainName(ns, fp, id);
    log->Append("TRY " + ns + " " + fp.ToHex() + " " + id.ToHex() + " " + tip.ToHex() + " " +
                    std::to_string(path.size()) + Join(path),
                true);
    if (auto c = chains.find(name); c != chains.end()) c->second.current = false;
    auto version = store.PublishChain(ns, fp, id, tip);
    if (!version.ok()) {
      // In doubt; the checker allows either outcome. Keep going (the kill comes anyway).
      std::fprintf(stderr, "crash_writer: PublishChain: %s\n", version.status().ToString().c_str());
      if (lost(version.status())) return kLostDaemon;
      continue;
    }
    std::string line = "ACK " + ns + " " + fp.ToHex() + " " + id.ToHex() + " " +
                       std::to_string(*version) + " " + tip.ToHex() + " " +
                       std::to_string(path.size()) + Join(path);
    for (const auto& h : hashes) line += " " + h.ToHex();
    log->Append(line, true);
    chains[name] = Chain{ns, fp, id, path, hashes, true};

    if (pick(6) == 0) {
      auto side = SidecarOf(tip);
      Status s = store.PutSidecar(ns, fp, tip, side);
      if (!s.ok()) {
        std::fprintf(stderr, "crash_writer: PutSidecar: %s\n", s.ToString().c_str());
        if (lost(s)) return kLostDaemon;
        continue;
      }
      log->Append("SIDE " + ns + " " + fp.ToHex() + " " + tip.ToHex(), true);
    }
  }
  return 0;
}

// ---- Checker ---------------------------------------------------------------------------------

struct Checker {
  Store& store;
  int violations = 0;
  uint64_t checked_chains = 0, checked_blocks = 0, checked_orphans = 0, in_doubt_seen = 0;
  uint64_t compacted = 0;

  void Violation(const std::string& g, const std::string& what) {
    ++violations;
    std::printf("VIOLATION %s: %s\n", g.c_str(), what.c_str());
  }

  // G9: the blocks of a visible chain read back as exactly the recomputed bytes.
  void CheckBlocks(const std::string& name, const std::string& ns, const Fingerprint& fp,
                   const std::vector<BlockKey>& keys, const std::vector<ContentHash>& hashes) {
    auto n = store.LookupPrefix(ns, fp, keys);
    if (!n.ok() || *n != keys.size()) {
      Violation("G3", "chain " + name + ": LookupPrefix " +
                          (n.ok() ? std::to_string(*n) : n.status().ToString()) + " of " +
                          std::to_string(keys.size()));
    }
    auto got = store.GetBlocks(ns, fp, keys);
    if (!got.ok()) {
      Violation(got.status().code() == Code::kCorruption ? "G9" : "G3",
                "chain " + name + ": GetBlocks: " + got.status().ToString());
      return;
    }
    for (size_t i = 0; i < keys.size(); ++i) {
      auto want = PayloadOf(keys[i]);
      ByteView have = got->payload(i);
      ++checked_blocks;
      if (have.size() != want.size() || std::memcmp(have.data(), want.data(), want.size()) != 0) {
        Violation("G9", "chain " + name + " block " + std::to_string(i) + " (" +
                            keys[i].ToHex() + "): bytes differ from the payload put (" +
                            std::to_string(have.size()) + " vs " + std::to_string(want.size()) +
                            " bytes)");
      } else if (i < hashes.size() && HashPayload(have) != hashes[i]) {
        Violation("G9", "chain " + name + " block " + std::to_string(i) +
                            ": content hash differs from the acknowledged one");
      }
    }
  }

  int Run(const std::vector<Line>& lines) {
    std::set<BlockKey> tried;  // keys of every TRY (ACKs have a TRY before them)
    struct History {
      const Line* last_ack = nullptr;
      std::vector<const Line*> tries;  // every TRY, in order
    };
    std::map<std::string, History> chains;
    std::map<std::string, bool> tips;  // "ns fp tip" → sidecar acked
    std::map<std::string, std::pair<std::string, Fingerprint>> tip_chain;
    for (const auto& l : lines) {
      if (l.kind == "TRY") {
        tried.insert(l.keys.begin(), l.keys.end());
        chains[ChainName(l.ns, l.fp, l.id)].tries.push_back(&l);
      } else if (l.kind == "ACK") {
        tried.insert(l.keys.begin(), l.keys.end());
        auto& h = chains[ChainName(l.ns, l.fp, l.id)];
        if (h.last_ack && l.version <= h.last_ack->version) {
          Violation("G6", "chain " + ChainName(l.ns, l.fp, l.id) + ": ACK version " +
                              std::to_string(l.version) + " (line " + std::to_string(l.index) +
                              ") not above the earlier ACK's " +
                              std::to_string(h.last_ack->version));
        }
        h.last_ack = &l;
        std::string t = ChainName(l.ns, l.fp, l.tip);
        tips.emplace(t, false);
      } else if (l.kind == "SIDE") {
        tips[ChainName(l.ns, l.fp, l.tip)] = true;
      }
    }

    // Keys that are not the tip of some tried tip-named chain: a tip-named chain ending in one of
    // them is a strict prefix of that chain (keys are unique, parents fixed at put).
    std::set<std::string> interior;
    for (const auto& l : lines) {
      if (l.kind != "TRY" || l.id != l.tip) continue;
      for (size_t i = 0; i + 1 < l.keys.size(); ++i) interior.insert(ChainName(l.ns, l.fp, l.keys[i]));
    }
    // G3 + G9 per chain id.
    for (const auto& [name, h] : chains) {
      const Line& any = h.last_ack ? *h.last_ack : *h.tries.front();
      ++checked_chains;
      auto st = store.GetChain(any.ns, any.fp, any.id);
      if (!st.ok() && st.status().IsNotFound() && h.last_ack && any.id == any.tip) {
        // Compaction (docs/glossary.md): a chain named by its tip whose entries are a strict
        // prefix of a later tip-named chain loses its head; its keys stay visible through the
        // longer chain. Allowed only if such a chain was tried, and the keys must still read back.
        bool covered = interior.count(ChainName(any.ns, any.fp, any.tip)) > 0;
        if (covered) {
          ++compacted;
          CheckBlocks(name + " (compacted)", any.ns, any.fp, any.keys, any.hashes);
          continue;
        }
      }
      if (!st.ok()) {
        if (h.last_ack) {
          Violation("G3", "acknowledged chain " + name + " (ACK line " +
                              std::to_string(h.last_ack->index) + ", version " +
                              std::to_string(h.last_ack->version) +
                              ") is gone: GetChain: " + st.status().ToString());
        } else if (!st.status().IsNotFound()) {
          Violation("G3", "chain " + name + ": GetChain: " + st.status().ToString());
        }
        continue;
      }
      std::vector<BlockKey> keys;
      std::vector<ContentHash> hashes;
      for (const auto& b : *st) {
        keys.push_back(b.key);
        hashes.push_back(b.hash);
      }
      std::optional<uint64_t> version;
      auto listed = store.ListChains(any.ns);
      if (!listed.ok()) Violation("G3", "ListChains: " + listed.status().ToString());
      for (const auto& c : listed.ok() ? *listed : std::vector<ChainState>{}) {
        if (c.fp == any.fp && c.chain_id == any.id) version = c.version;
      }
      if (h.last_ack && keys == h.last_ack->keys) {
        if (version != h.last_ack->version) {
          Violation("G3", "chain " + name + " shows the acknowledged tip but version " +
                              (version ? std::to_string(*version) : "none") + " instead of " +
                              std::to_string(h.last_ack->version));
        }
        if (hashes != h.last_ack->hashes) {
          Violation("G9", "chain " + name + ": GetChain's content hashes differ from the ACK's");
        }
        CheckBlocks(name, any.ns, any.fp, keys, h.last_ack->hashes);
        continue;
      }
      // Not the latest ACK: must be an in-doubt TRY after it.
      const Line* match = nullptr;
      for (const Line* t : h.tries) {
        if ((!h.last_ack || t->index > h.last_ack->index) && t->keys == keys) match = t;
      }
      if (!match) {
        Violation(h.last_ack ? "G3" : "G4",
                  "chain " + name + " shows tip " + (keys.empty() ? "?" : keys.back().ToHex()) +
                      " (" + std::to_string(keys.size()) + " blocks), which is " +
                      (h.last_ack ? "neither its latest ACK (line " +
                                        std::to_string(h.last_ack->index) + ") nor a later TRY"
                                  : "none of its TRYs"));
        continue;
      }
      ++in_doubt_seen;
      if (h.last_ack && (!version || *version <= h.last_ack->version)) {
        Violation("G3", "chain " + name + " shows an in-doubt TRY (line " +
                            std::to_string(match->index) + ") with version " +
                            (version ? std::to_string(*version) : "none") +
                            ", not above the acknowledged " +
                            std::to_string(h.last_ack->version));
      }
      CheckBlocks(name, any.ns, any.fp, keys, hashes);
    }

    // G4: the only chains visible are ones the writer tried.
    for (const char* ns : kNamespaces) {
      auto listed = store.ListChains(ns);
      if (!listed.ok()) Violation("G4", "ListChains: " + listed.status().ToString());
      for (const auto& c : listed.ok() ? *listed : std::vector<ChainState>{}) {
        if (!chains.count(ChainName(c.ns, c.fp, c.chain_id))) {
          Violation("G4", "ListChains shows chain " + ChainName(c.ns, c.fp, c.chain_id) +
                              " (tip " + c.tip.ToHex() + "), never tried");
        }
      }
    }
    // G4: puts whose new keys never reached a TRY are invisible past their base.
    for (const auto& l : lines) {
      if (l.kind != "PUT" || tried.count(l.keys[l.base])) continue;
      ++checked_orphans;
      auto n = store.LookupPrefix(l.ns, l.fp, l.keys);
      if (!n.ok() || *n > l.base) {
        Violation("G4", "PUT line " + std::to_string(l.index) + " never published, but " +
                            "LookupPrefix returns " +
                            (n.ok() ? std::to_string(*n) : n.status().ToString()) + " of " +
                            std::to_string(l.keys.size()) + " keys (base " +
                            std::to_string(l.base) + ")");
      }
      std::vector<BlockKey> upto(l.keys.begin(), l.keys.begin() + l.base + 1);
      auto got = store.GetBlocks(l.ns, l.fp, upto);
      if (got.ok() || !got.status().IsNotFound()) {
        Violation("G4", "PUT line " + std::to_string(l.index) + " never published, but " +
                            "GetBlocks of its first new key is " +
                            (got.ok() ? "a hit" : got.status().ToString()));
      }
    }
    // G7/G9: sidecars of acknowledged tips.
    for (const auto& [t, acked] : tips) {
      std::istringstream ss(t);
      std::string ns, fph, tiph;
      ss >> ns >> fph >> tiph;
      auto fp = *Fingerprint::FromHex(fph);
      auto tip = *BlockKey::FromHex(tiph);
      auto got = store.GetSidecar(ns, fp, tip);
      if (!got.ok()) {
        if (acked || !got.status().IsNotFound()) {
          Violation(acked ? "G3" : "G7", "sidecar of tip " + t + ": " + got.status().ToString());
        }
        continue;
      }
      auto want = SidecarOf(tip);
      if (got->size != want.size() || std::memcmp(got->data, want.data(), want.size()) != 0) {
        Violation("G9", "sidecar of tip " + t + ": bytes differ from what was put");
      }
    }
    std::printf("verify: %llu chain ids, %llu blocks read back, %llu orphan puts, "
                "%llu compacted, %llu in-doubt publishes visible: %d violations\n",
                static_cast<unsigned long long>(checked_chains),
                static_cast<unsigned long long>(checked_blocks),
                static_cast<unsigned long long>(checked_orphans),
                static_cast<unsigned long long>(compacted),
                static_cast<unsigned long long>(in_doubt_seen), violations);
    return violations == 0 ? 0 : 1;
  }
};

int RunVerify(const std::string& data_dir, const std::string& log_path) {
  size_t skipped;
  uint64_t runs;
  auto lines = ReadLog(log_path, &skipped, &runs);
  if (skipped > 1) {
    // Only the line being written at the kill may be torn (and then it is closed by a newline).
    std::printf("verify: note: %zu torn or malformed log lines skipped\n", skipped);
  }
  auto opened = Open(data_dir, "");
  if (!opened) return 3;
  Checker checker{*opened};
  return checker.Run(lines);
}

int Usage() {
  std::fprintf(stderr,
               "usage: crash_writer (--data-dir DIR | --tcp HOST:PORT) --log FILE "
               "(--seed N [--iters N] | --verify)\n");
  return 2;
}

}  // namespace
}  // namespace wombatkv

int main(int argc, char** argv) {
  std::string data_dir, log, tcp;
  uint64_t seed = 1, iters = 0;
  bool verify = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--verify") {
      verify = true;
    } else if (a == "--data-dir" && (v = next())) {
      data_dir = v;
    } else if (a == "--tcp" && (v = next())) {
      tcp = v;
    } else if (a == "--log" && (v = next())) {
      log = v;
    } else if (a == "--seed" && (v = next())) {
      seed = std::strtoull(v, nullptr, 10);
    } else if (a == "--iters" && (v = next())) {
      iters = std::strtoull(v, nullptr, 10);
    } else {
      return wombatkv::Usage();
    }
  }
  if (log.empty() || (verify ? data_dir.empty() : data_dir.empty() == tcp.empty()))
    return wombatkv::Usage();
  return verify ? wombatkv::RunVerify(data_dir, log)
                : wombatkv::RunWriter(data_dir, tcp, log, seed, iters);
}
