// The packed index's cost per new key (the journal's sync thread pays it for every small object
// a save writes), next to the std::map of string keys it used until session 22, in the same run.
// Also: how long a journal compaction holds the store's name lock to find one file's live
// records, walking the whole index at once (before session 41) or a chunk at a time (now).
// Keys are whole blob keys of the store's L2 ("kv/<ns>/wombatkv/v1/blob/" and 40 hex digits,
// docs/layout.md), drawn from a fixed seed in --namespaces namespaces; each structure first holds
// --keys of them, then times --new more.
//
//   build/bench/packed_index_bench [--keys N] [--new N] [--namespaces N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "object/packed_index.h"
#include "wombatkv/object_store.h"

namespace wombatkv {
namespace {

std::vector<std::string> BlobKeys(size_t n, size_t namespaces, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> keys;
  keys.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "kv/tenant-%zu/wombatkv/v1/blob/%016llx%016llx%08llx",
                  static_cast<size_t>(rng() % namespaces), static_cast<unsigned long long>(rng()),
                  static_cast<unsigned long long>(rng()),
                  static_cast<unsigned long long>(rng() & 0xffffffffu));
    keys.emplace_back(buf);
  }
  return keys;
}

// Nanoseconds per call of set(key) over `keys`.
template <typename Set>
double NanosPerKey(const std::vector<std::string>& keys, Set&& set) {
  const auto start = std::chrono::steady_clock::now();
  for (const std::string& k : keys) set(k);
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  return took.count() / static_cast<double>(keys.size());
}

int Main(int argc, char** argv) {
  size_t preload = 1'000'000, fresh = 200'000, namespaces = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--keys") == 0) {
      preload = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (std::strcmp(argv[i], "--new") == 0) {
      fresh = std::strtoull(argv[i + 1], nullptr, 10);
    } else if (std::strcmp(argv[i], "--namespaces") == 0) {
      namespaces = std::max<size_t>(1, std::strtoull(argv[i + 1], nullptr, 10));
    } else {
      std::fprintf(stderr, "usage: packed_index_bench [--keys N] [--new N] [--namespaces N]\n");
      return 2;
    }
  }
  const std::vector<std::string> held = BlobKeys(preload, namespaces, 1),
                                 added = BlobKeys(fresh, namespaces, 2);
  PackedEntry e;
  e.record_bytes = 1100;
  double index_ns, map_ns;
  double walk_ms = 0, chunk_ms = 0;
  {
    PackedIndex index;
    for (const std::string& k : held) index.Set(k, e);
    index_ns = NanosPerKey(added, [&](const std::string& k) { index.Set(k, e); });
    // A compaction gathering one journal file's live records (FsObjectStore::Compact): once a
    // walk of the whole index under the name lock, now chunks of compact_scan_chunk entries with
    // the lock released between them. Timed: the whole walk, and the longest chunk.
    size_t found = 0;
    auto gather = [&](std::string_view, const PackedEntry& p) { found += p.segment == 1; };
    const auto start = std::chrono::steady_clock::now();
    index.ForEach(gather);
    walk_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::string after;
    for (bool more = true; more;) {
      const auto t0 = std::chrono::steady_clock::now();
      std::string_view last;
      more = index.ForEachAfter(after, FsJournalOptions{}.compact_scan_chunk,
                                [&](std::string_view key, const PackedEntry& p) {
                                  gather(key, p);
                                  last = key;
                                });
      chunk_ms = std::max(
          chunk_ms,
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      after.assign(last);
    }
    if (found != 0) std::printf("(%zu in segment 1)\n", found);
  }
  {
    std::map<std::string, PackedEntry, std::less<>> map;
    for (const std::string& k : held) map.emplace(k, e);
    map_ns = NanosPerKey(added, [&](const std::string& k) { map.emplace(k, e); });
  }
  std::printf("new key into %zu held (%zu namespaces): PackedIndex::Set %.0f ns, std::map "
              "insert %.0f ns (%.2fx the map's rate)\n",
              preload, namespaces, index_ns, map_ns, map_ns / index_ns);
  std::printf(
      "a compaction's walk of the %zu-key index: %.1f ms in one hold of the name lock; "
      "the longest of its %zu-entry chunks %.3f ms\n",
      preload + fresh, walk_ms, FsJournalOptions{}.compact_scan_chunk, chunk_ms);
  return 0;
}

}  // namespace
}  // namespace wombatkv

int main(int argc, char** argv) { return wombatkv::Main(argc, argv); }
