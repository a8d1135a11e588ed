// Machine-crash recovery of the journaled FsObjectStore: many rounds of concurrent puts and
// deletes (objects packed in the journal, journaled files, and files written directly), a crash
// at a random moment that loses whatever was not durable (CrashModelFs), and a reopen that
// replays the journal. After each:
//   - every put that returned durable is there with its bytes (heads: that version or a later
//     attempted one);
//   - nothing appears that was never written, and no object has bytes it never had;
//   - ordering: a present head names only blobs that are present with their bytes, and every
//     deferred put that returned before a durable put began (which then returned) is present;
//   - a delete that returned stays deleted; objects of earlier rounds are unchanged.
#include <unistd.h>

#include <cstdlib>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "object/crash_model_fs.h"
#include "wombatkv/object_store.h"

namespace wombatkv {
namespace {

constexpr int kThreads = 4;
constexpr uint64_t kJournaledMax = 2048;  // larger blobs take the un-journaled path

std::string BlobBytes(const std::string& key, uint64_t size) {
  std::string out;
  while (out.size() < size) out += key + ";";
  out.resize(size);
  return out;
}

std::string ReadAll(ObjectStore& s, const std::string& key, bool* found) {
  auto got = s.Get(key);
  *found = got.ok();
  EXPECT_TRUE(got.ok() || got.status().IsNotFound()) << key << ": " << got.status().ToString();
  if (!got.ok()) return {};
  return std::string(reinterpret_cast<const char*>(got->bytes->data()), got->bytes->size());
}

struct Model {
  std::mutex mu;
  uint64_t seq = 0;                                            // a logical clock of events
  std::map<std::string, std::string> written;                  // blobs and orphans (unique keys)
  std::map<std::string, uint64_t> returned_at;                 // deferred put returned (seq)
  std::map<std::string, std::vector<std::string>> head_tries;  // versions, in attempt order
  std::map<std::string, size_t> head_acked;                    // index of the last acked version
  std::set<std::string> delete_tried, delete_returned;
  uint64_t durable_began_max = 0;  // the latest start (seq) of a durable op that returned OK

  uint64_t Tick() {
    std::lock_guard<std::mutex> g(mu);
    return ++seq;
  }
};

class JournalCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = ::testing::TempDir() + "wombatkv_journal_crash_" + std::to_string(::getpid());
    ASSERT_TRUE(PosixFileSystem()->DeleteTree(root_).ok());
    ASSERT_TRUE(PosixFileSystem()->CreateDirs(root_).ok());
  }
  void TearDown() override { EXPECT_TRUE(PosixFileSystem()->DeleteTree(root_).ok()); }

  void Worker(ObjectStore& store, CrashModelFs& fs, Model& m, int round, int t, uint64_t seed,
              std::atomic<int>& ops, int crash_at) {
    auto rng = NewSeededRandom(seed * 97 + static_cast<uint64_t>(t));
    const std::string base = "r" + std::to_string(round) + "/";
    const std::string head = base + "h/t" + std::to_string(t);
    std::vector<std::string> unvouched;
    std::string etag;
    for (int i = 0;; ++i) {
      if (ops.fetch_add(1) == crash_at) fs.Crash();
      const uint64_t dice = rng->Uniform(10);
      if (dice < 6) {
        const std::string key = base + "b/t" + std::to_string(t) + "-" + std::to_string(i);
        const uint64_t size = rng->Uniform(5) == 0 ? kJournaledMax + 1 + rng->Uniform(3000)
                                                   : 1 + rng->Uniform(1500);
        const std::string bytes = BlobBytes(key, size);
        {
          std::lock_guard<std::mutex> g(m.mu);
          m.written[key] = bytes;
        }
        auto r = store.Put(key, {AsBytes(bytes)}, PutOptions{PutMode::kIfAbsent, {}, false});
        if (!r.ok()) return;
        std::lock_guard<std::mutex> g(m.mu);
        m.returned_at[key] = ++m.seq;
        unvouched.push_back(key);
      } else if (dice < 7) {
        const std::string key = base + "o/t" + std::to_string(t) + "-" + std::to_string(i);
        const std::string bytes = BlobBytes(key, 1 + rng->Uniform(600));
        {
          std::lock_guard<std::mutex> g(m.mu);
          m.written[key] = bytes;
        }
        if (!store.Put(key, {AsBytes(bytes)}, PutOptions{PutMode::kIfAbsent, {}, false}).ok()) {
          return;
        }
        uint64_t began;
        {
          std::lock_guard<std::mutex> g(m.mu);
          m.returned_at[key] = ++m.seq;
          m.delete_tried.insert(key);
          began = ++m.seq;
        }
        if (!store.Delete(key).ok()) return;
        std::lock_guard<std::mutex> g(m.mu);
        m.delete_returned.insert(key);
        m.durable_began_max = std::max(m.durable_began_max, began);
      } else {
        std::string content = "v" + std::to_string(i) + "|";
        for (const std::string& k : unvouched) content += k + ",";
        uint64_t began;
        size_t index;
        {
          std::lock_guard<std::mutex> g(m.mu);
          m.head_tries[head].push_back(content);
          index = m.head_tries[head].size() - 1;
          began = ++m.seq;
        }
        PutOptions o = etag.empty() ? PutOptions{PutMode::kIfAbsent, {}} : PutOptions{PutMode::kIfMatch, etag};
        auto r = store.Put(head, {AsBytes(content)}, o);
        if (!r.ok()) return;
        etag = *r;
        unvouched.clear();
        std::lock_guard<std::mutex> g(m.mu);
        m.head_acked[head] = index;
        m.durable_began_max = std::max(m.durable_began_max, began);
      }
    }
  }

  void Check(ObjectStore& store, Model& m, std::map<std::string, std::string>& stable) {
    // Every object present: one that was written, with bytes it had.
    std::map<std::string, std::string> present;
    std::string token;
    do {
      auto page = store.List("", "", token, 1000);
      ASSERT_TRUE(page.ok()) << page.status().ToString();
      for (const ObjectInfo& o : page->objects) {
        bool found = false;
        std::string bytes = ReadAll(store, o.key, &found);
        ASSERT_TRUE(found) << o.key;
        present[o.key] = bytes;
      }
      token = page->next_token;
    } while (!token.empty());
    for (const auto& [key, bytes] : present) {
      if (auto s = stable.find(key); s != stable.end()) {
        EXPECT_EQ(bytes, s->second) << key << " of an earlier round changed";
      } else if (auto w = m.written.find(key); w != m.written.end()) {
        EXPECT_TRUE(bytes == w->second) << key << " has bytes it never had (" << bytes.size()
                                        << " bytes; written: " << w->second.size() << ")";
      } else if (auto h = m.head_tries.find(key); h != m.head_tries.end()) {
        auto at = std::find(h->second.begin(), h->second.end(), bytes);
        ASSERT_NE(at, h->second.end()) << key << " has a version never written: " << bytes;
        auto acked = m.head_acked.find(key);
        if (acked != m.head_acked.end()) {
          EXPECT_GE(static_cast<size_t>(at - h->second.begin()), acked->second)
              << key << " went back before its acknowledged version";
        }
        // Ordering: every blob this head names is there with its bytes.
        std::string names = bytes.substr(bytes.find('|') + 1);
        for (size_t pos = 0; pos < names.size();) {
          size_t comma = names.find(',', pos);
          const std::string blob = names.substr(pos, comma - pos);
          pos = comma + 1;
          auto b = present.find(blob);
          ASSERT_NE(b, present.end()) << key << " names " << blob << ", which is missing";
          EXPECT_TRUE(b->second == m.written[blob]) << blob << " named by " << key;
        }
      } else {
        ADD_FAILURE() << key << " appeared but was never written";
      }
    }
    for (const auto& [key, index] : m.head_acked) {
      EXPECT_EQ(present.count(key), 1u) << "acknowledged head " << key << " is missing";
    }
    for (const auto& [key, at] : m.returned_at) {
      if (m.delete_tried.count(key) != 0) continue;
      if (at < m.durable_began_max) {
        EXPECT_EQ(present.count(key), 1u)
            << key << " returned before a durable put began, yet is missing";
      }
    }
    for (const std::string& key : m.delete_returned) {
      EXPECT_EQ(present.count(key), 0u) << key << " was deleted, yet is back";
    }
    for (const auto& [key, bytes] : stable) {
      EXPECT_EQ(present.count(key), 1u) << key << " of an earlier round vanished";
    }
    stable = present;
  }

  std::string root_;
};

// A number from the environment, for sweeps beyond CI's fixed seed:
//   WMBT_JOURNAL_CRASH_SEED=7 WMBT_JOURNAL_CRASH_ROUNDS=200 object_test --gtest_filter='JournalCrash*'
uint64_t FromEnv(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v == nullptr || *v == '\0' ? fallback : std::strtoull(v, nullptr, 10);
}

TEST_F(JournalCrashTest, RandomCrashesKeepDurablePutsAndTheirOrder) {
  CrashModelFs fs(PosixFileSystem(), root_);
  const uint64_t seed0 = FromEnv("WMBT_JOURNAL_CRASH_SEED", 20261130);
  const int rounds = static_cast<int>(FromEnv("WMBT_JOURNAL_CRASH_ROUNDS", 24));
  SCOPED_TRACE("seed " + std::to_string(seed0));
  auto rng = NewSeededRandom(seed0);
  std::map<std::string, std::string> stable;
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    FsJournalOptions opts;
    opts.journaled_object_bytes_max = kJournaledMax;
    opts.journal_file_bytes = rng->Uniform(2) == 0 ? 8 << 10 : 64 << 20;
    // Every object packed, some (<= 1000 bytes), or none: rounds move keys between the forms.
    const uint64_t packed_max[] = {0, 1000, 64 << 10};
    opts.packed_object_bytes_max = packed_max[rng->Uniform(3)];
    const uint64_t write_behind[] = {0, 1, 2 << 10, 1 << 20};
    opts.write_behind_bytes = write_behind[rng->Uniform(4)];
    auto opened = OpenJournaledFsObjectStore(root_, &fs, opts);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    std::unique_ptr<ObjectStore> store = std::move(opened).value();
    if (round > 0) {
      Model none;
      ASSERT_NO_FATAL_FAILURE(Check(*store, none, stable));
    }
    Model m;
    std::atomic<int> ops{0};
    const int crash_at = static_cast<int>(rng->Uniform(240));
    const uint64_t seed = rng->Next64();
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] { Worker(*store, fs, m, round, t, seed, ops, crash_at); });
    }
    for (auto& th : threads) th.join();
    store.reset();
    fs.ApplyCrash(*rng);
    fs.Revive();
    auto reopened = OpenJournaledFsObjectStore(root_, &fs, opts);
    ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
    ASSERT_NO_FATAL_FAILURE(Check(**reopened, m, stable));
  }
}

}  // namespace
}  // namespace wombatkv
