// The ObjectStore conformance tests (see the header for how to instantiate them).
#include "object/object_store_conformance.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <latch>
#include <set>
#include <thread>

#include "base/futex.h"
#include "wombatkv/env.h"

namespace wombatkv {

std::string ObjectStoreFactoryName(const ::testing::TestParamInfo<ObjectStoreFactory>& info) {
  return info.param.name;
}

void ObjectStoreConformanceTest::SetUp() {
  store_ = GetParam().make();
  ASSERT_NE(store_, nullptr);
}

void ObjectStoreConformanceTest::TearDown() { store_.reset(); }

std::string ObjectStoreConformanceTest::MustPut(std::string_view key, std::string_view content,
                                                PutOptions options) {
  auto r = store_->Put(key, {AsBytes(content)}, options);
  EXPECT_TRUE(r.ok()) << "put " << key << ": " << r.status().ToString();
  return r.ok() ? *r : std::string();
}

std::string ObjectStoreConformanceTest::MustGet(std::string_view key, uint64_t offset,
                                                uint64_t length) {
  auto r = store_->Get(key, offset, length);
  EXPECT_TRUE(r.ok()) << "get " << key << ": " << r.status().ToString();
  return r.ok() ? std::string(AsChars(r->bytes->view())) : std::string();
}

void ObjectStoreConformanceTest::ExpectOneOfEightIfMatchWritersWins(const RacingPut& put) {
  constexpr int kThreads = 8;
  for (int round = 0; round < 5; ++round) {
    std::string etag = MustPut("race", "start");
    std::latch go(kThreads);
    std::atomic<int> wins{0}, conflicts{0};
    std::vector<std::string> contents(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      contents[t] = "writer " + std::to_string(t);
      threads.emplace_back([&, t] {
        go.arrive_and_wait();
        auto r = put(contents[t], {PutMode::kIfMatch, etag});
        if (r.ok()) ++wins;
        else if (r.status().IsConflict()) ++conflicts;
        else ADD_FAILURE() << r.status().ToString();
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(wins.load(), 1);
    EXPECT_EQ(conflicts.load(), kThreads - 1);
    std::string final_content = MustGet("race");
    EXPECT_NE(std::find(contents.begin(), contents.end(), final_content), contents.end());
  }
}

std::vector<ListPage> ObjectStoreConformanceTest::ListAllPages(std::string_view prefix,
                                                               std::string_view delimiter,
                                                               size_t max_keys) {
  std::vector<ListPage> pages;
  std::string token;
  for (int i = 0; i < 100000; ++i) {
    auto page = store_->List(prefix, delimiter, token, max_keys);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    if (!page.ok()) break;
    const bool last = page->next_token.empty();
    EXPECT_TRUE(last || !page->objects.empty() || !page->common_prefixes.empty())
        << "an empty page that is not the last";
    token = page->next_token;
    pages.push_back(std::move(page).value());
    if (last) break;
  }
  return pages;
}

std::vector<std::string> ObjectStoreConformanceTest::ListKeys(std::string_view prefix,
                                                              std::string_view delimiter,
                                                              size_t max_keys) {
  std::vector<std::string> out;
  for (const ListPage& page : ListAllPages(prefix, delimiter, max_keys)) {
    std::vector<std::string> entries;
    for (const ObjectInfo& o : page.objects) entries.push_back(o.key);
    entries.insert(entries.end(), page.common_prefixes.begin(), page.common_prefixes.end());
    std::sort(entries.begin(), entries.end());
    out.insert(out.end(), entries.begin(), entries.end());
  }
  return out;
}

namespace {

using Strings = std::vector<std::string>;

std::string Pattern(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i * 7 % 251);
  return s;
}

// ---- put / get / head ----

TEST_P(ObjectStoreConformanceTest, PutThenGetReturnsTheConcatenatedParts) {
  const std::string a = Pattern(1000, 'a'), b, c = Pattern(70000, 'c');
  auto etag = store_->Put("dir/obj", {AsBytes(a), AsBytes(b), AsBytes(c)}, {});
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  EXPECT_FALSE(etag->empty());
  auto got = store_->Get("dir/obj");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(AsChars(got->bytes->view()), a + b + c);
  EXPECT_EQ(got->object_size, a.size() + c.size());
  EXPECT_EQ(got->etag, *etag);
}

TEST_P(ObjectStoreConformanceTest, AnEmptyObjectRoundTrips) {
  auto etag = store_->Put("empty", {}, {});
  ASSERT_TRUE(etag.ok()) << etag.status().ToString();
  auto got = store_->Get("empty");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->bytes->size(), 0u);
  EXPECT_EQ(got->object_size, 0u);
  auto head = store_->Head("empty");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->size, 0u);
  EXPECT_EQ(head->etag, *etag);
}

TEST_P(ObjectStoreConformanceTest, RangedGetsReturnTheRequestedBytesClippedToTheObject) {
  const std::string data = "0123456789";
  MustPut("r", data);
  EXPECT_EQ(MustGet("r", 0, 3), "012");
  EXPECT_EQ(MustGet("r", 4, 2), "45");
  EXPECT_EQ(MustGet("r", 7), "789");
  EXPECT_EQ(MustGet("r", 8, 100), "89");
  EXPECT_EQ(MustGet("r", 0, 0), "");
  auto got = store_->Get("r", 4, 2);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->object_size, data.size());
}

TEST_P(ObjectStoreConformanceTest, ARangeStartingAtTheEndIsEmpty) {
  MustPut("r", "0123456789");
  auto got = store_->Get("r", 10, 5);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->bytes->size(), 0u);
  EXPECT_EQ(got->object_size, 10u);
}

TEST_P(ObjectStoreConformanceTest, ARangeStartingPastTheEndIsInvalidArgument) {
  MustPut("r", "0123456789");
  EXPECT_EQ(store_->Get("r", 11, 1).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->Get("r", kToEnd).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->Get("r", kToEnd, 2).status().code(), Code::kInvalidArgument);  // no wrap
}

TEST_P(ObjectStoreConformanceTest, HeadReportsTheSizeAndTheEtagThatPutReturned) {
  std::string etag = MustPut("a/b/c", "hello");
  auto head = store_->Head("a/b/c");
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(head->key, "a/b/c");
  EXPECT_EQ(head->size, 5u);
  EXPECT_EQ(head->etag, etag);
}

TEST_P(ObjectStoreConformanceTest, HeadAndListReportWhenTheObjectWasWritten) {
  // Orphan GC ages blobs by this time. The server's clock may differ from ours a little: allow
  // ten minutes either way (and S3 reports whole seconds in Last-Modified).
  const uint64_t before_us = RealClock()->WallMicros();
  MustPut("m/a", "x");
  const uint64_t after_us = RealClock()->WallMicros();
  constexpr uint64_t kSlackUs = 600ull * 1000000;
  auto head = store_->Head("m/a");
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_GE(head->modified_us + kSlackUs, before_us);
  EXPECT_LE(head->modified_us, after_us + kSlackUs);
  auto page = store_->List("m/", "", "", 1000);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_GE(page->objects[0].modified_us + kSlackUs, before_us);
  EXPECT_LE(page->objects[0].modified_us, after_us + kSlackUs);
}

TEST_P(ObjectStoreConformanceTest, MissingKeysAreNotFoundForGetAndHead) {
  MustPut("a/b", "x");
  EXPECT_TRUE(store_->Get("missing").status().IsNotFound());
  EXPECT_TRUE(store_->Head("missing").status().IsNotFound());
  // A prefix of existing keys is not an object.
  EXPECT_TRUE(store_->Get("a").status().IsNotFound());
  EXPECT_TRUE(store_->Head("a").status().IsNotFound());
  EXPECT_TRUE(store_->Get("a/b/c").status().IsNotFound());
}

// ---- conditional writes ----

TEST_P(ObjectStoreConformanceTest, OverwritingChangesTheContentAndTheEtag) {
  std::string first = MustPut("k", "version one");
  std::string second = MustPut("k", "version two!");
  EXPECT_NE(first, second);
  EXPECT_EQ(MustGet("k"), "version two!");
  EXPECT_EQ(store_->Head("k")->etag, second);
}

TEST_P(ObjectStoreConformanceTest, PutIfAbsentOnAnExistingKeyConflictsAndLeavesItUnchanged) {
  std::string etag = MustPut("k", "original");
  auto r = store_->Put("k", {AsBytes("intruder")}, {PutMode::kIfAbsent, ""});
  EXPECT_TRUE(r.status().IsConflict()) << r.status().ToString();
  EXPECT_EQ(MustGet("k"), "original");
  EXPECT_EQ(store_->Head("k")->etag, etag);
}

TEST_P(ObjectStoreConformanceTest, PutIfAbsentCreatesAMissingKey) {
  std::string etag = MustPut("new/key", "fresh", {PutMode::kIfAbsent, ""});
  EXPECT_EQ(MustGet("new/key"), "fresh");
  EXPECT_EQ(store_->Head("new/key")->etag, etag);
}

TEST_P(ObjectStoreConformanceTest, PutIfMatchWithTheCurrentEtagReplacesTheObject) {
  std::string etag = MustPut("k", "v1");
  std::string next = MustPut("k", "v2", {PutMode::kIfMatch, etag});
  EXPECT_NE(next, etag);
  EXPECT_EQ(MustGet("k"), "v2");
  EXPECT_EQ(store_->Head("k")->etag, next);
}

TEST_P(ObjectStoreConformanceTest, PutIfMatchWithAStaleEtagConflictsAndLeavesItUnchanged) {
  std::string stale = MustPut("k", "v1");
  std::string current = MustPut("k", "v2");
  auto r = store_->Put("k", {AsBytes("v3")}, {PutMode::kIfMatch, stale});
  EXPECT_TRUE(r.status().IsConflict()) << r.status().ToString();
  EXPECT_EQ(MustGet("k"), "v2");
  EXPECT_EQ(store_->Head("k")->etag, current);
}

TEST_P(ObjectStoreConformanceTest, PutIfMatchOnAnAbsentKeyConflictsAndWritesNothing) {
  std::string etag = MustPut("other", "x");
  auto r = store_->Put("k", {AsBytes("v")}, {PutMode::kIfMatch, etag});
  EXPECT_TRUE(r.status().IsConflict()) << r.status().ToString();
  EXPECT_TRUE(store_->Head("k").status().IsNotFound());
}

TEST_P(ObjectStoreConformanceTest, PutIfMatchWithAnEmptyEtagIsInvalidArgument) {
  MustPut("k", "v");
  auto r = store_->Put("k", {AsBytes("w")}, {PutMode::kIfMatch, ""});
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(MustGet("k"), "v");
}

// PutAsync's completion, waited for; it may have run before PutAsync returned.
static Result<std::string> PutAsyncAndWait(ObjectStore& store, std::string_view key,
                                           std::string_view content, PutOptions options) {
  Result<std::string> out = Status::Internal("PutAsync never completed");
  Baton done;
  store.PutAsync(key, {AsBytes(content)}, options, [&](Result<std::string> r) {
    out = std::move(r);
    done.Post();
  });
  done.Wait();
  return out;
}

TEST_P(ObjectStoreConformanceTest, PutAsyncCompletesAsPutWouldAnswer) {
  auto created = PutAsyncAndWait(*store_, "k", "v1", {PutMode::kIfAbsent, ""});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(MustGet("k"), "v1");
  EXPECT_EQ(store_->Head("k")->etag, *created);
  auto again = PutAsyncAndWait(*store_, "k", "intruder", {PutMode::kIfAbsent, ""});
  EXPECT_TRUE(again.status().IsConflict()) << again.status().ToString();
  auto stale = PutAsyncAndWait(*store_, "k", "v2", {PutMode::kIfMatch, "not-the-etag"});
  EXPECT_TRUE(stale.status().IsConflict()) << stale.status().ToString();
  EXPECT_EQ(MustGet("k"), "v1");
  auto replaced = PutAsyncAndWait(*store_, "k", "v2", {PutMode::kIfMatch, *created});
  ASSERT_TRUE(replaced.ok()) << replaced.status().ToString();
  EXPECT_NE(*replaced, *created);
  EXPECT_EQ(MustGet("k"), "v2");
  EXPECT_EQ(store_->Head("k")->etag, *replaced);
  auto bad = PutAsyncAndWait(*store_, "../k", "v", {});
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument) << bad.status().ToString();
}

TEST_P(ObjectStoreConformanceTest, ExactlyOneOfEightRacingPutAsyncIfMatchWritersWins) {
  ExpectOneOfEightIfMatchWritersWins([&](std::string_view content, const PutOptions& options) {
    return PutAsyncAndWait(*store_, "race", content, options);
  });
}

TEST_P(ObjectStoreConformanceTest, ExactlyOneOfEightRacingIfMatchWritersWins) {
  ExpectOneOfEightIfMatchWritersWins([&](std::string_view content, const PutOptions& options) {
    return store_->Put("race", {AsBytes(content)}, options);
  });
}

TEST_P(ObjectStoreConformanceTest, ExactlyOneOfEightRacingIfAbsentWritersWins) {
  constexpr int kThreads = 8;
  for (int round = 0; round < 5; ++round) {
    const std::string key = "race/" + std::to_string(round);
    std::latch go(kThreads);
    std::atomic<int> wins{0}, conflicts{0};
    std::vector<std::string> etags(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        go.arrive_and_wait();
        std::string content = "writer " + std::to_string(t);
        auto r = store_->Put(key, {AsBytes(content)}, {PutMode::kIfAbsent, ""});
        if (r.ok()) {
          ++wins;
          etags[t] = *r;
        } else if (r.status().IsConflict()) {
          ++conflicts;
        } else {
          ADD_FAILURE() << r.status().ToString();
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(wins.load(), 1);
    EXPECT_EQ(conflicts.load(), kThreads - 1);
    // The winner's ETag is the object's, and its content is the winner's.
    auto head = store_->Head(key);
    ASSERT_TRUE(head.ok());
    for (int t = 0; t < kThreads; ++t) {
      if (!etags[t].empty()) {
        EXPECT_EQ(head->etag, etags[t]);
        EXPECT_EQ(MustGet(key), "writer " + std::to_string(t));
      }
    }
  }
}

TEST_P(ObjectStoreConformanceTest, ReadersRacingAnOverwriterSeeWholeVersionsOnly) {
  const std::string a(64 * 1024, 'a'), b(64 * 1024, 'b');
  MustPut("flip", a);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; i < 50; ++i) MustPut("flip", i % 2 ? a : b);
    stop = true;
  });
  int reads = 0;
  while (!stop.load() || reads == 0) {
    auto got = store_->Get("flip");
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    std::string_view v = AsChars(got->bytes->view());
    ASSERT_TRUE(v == a || v == b) << "a torn read";
    ++reads;
  }
  writer.join();
}

// ---- delete ----

TEST_P(ObjectStoreConformanceTest, ADeletedObjectIsNotFound) {
  MustPut("d/k", "v");
  ASSERT_TRUE(store_->Delete("d/k").ok());
  EXPECT_TRUE(store_->Get("d/k").status().IsNotFound());
  EXPECT_TRUE(store_->Head("d/k").status().IsNotFound());
  EXPECT_TRUE(ListKeys("").empty());
}

TEST_P(ObjectStoreConformanceTest, DeletingAnAbsentKeyIsOk) {
  EXPECT_TRUE(store_->Delete("never/was").ok());
  MustPut("a/b", "x");
  EXPECT_TRUE(store_->Delete("a").ok());  // a prefix, not an object
  EXPECT_EQ(MustGet("a/b"), "x");
}

TEST_P(ObjectStoreConformanceTest, AKeyCanBeRecreatedAfterDelete) {
  MustPut("k", "one");
  ASSERT_TRUE(store_->Delete("k").ok());
  MustPut("k", "two", {PutMode::kIfAbsent, ""});
  EXPECT_EQ(MustGet("k"), "two");
}

// ---- list ----

TEST_P(ObjectStoreConformanceTest, ListReturnsKeysInByteOrder) {
  // '-' and '.' sort before '/', which sorts before digits: a directory-backed store must not
  // list "d/..." before "d-1" or "d.1".
  Strings keys = {"d0", "d/sub/2", "d.1", "e", "d/1", "d-1", "D", "_x", "d/sub.x"};
  for (const std::string& k : keys) MustPut(k, k);
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(ListKeys(""), keys);
  EXPECT_EQ(ListKeys("", "", 1), keys);  // one key per page
  auto page = store_->List("", "", "", 1000);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->objects.size(), keys.size());
  EXPECT_EQ(page->objects[0].size, keys[0].size());
  EXPECT_EQ(page->objects[0].etag, store_->Head(keys[0])->etag);
}

TEST_P(ObjectStoreConformanceTest, ListFiltersByPrefix) {
  for (const char* k : {"a/b/1", "a/b/2", "a/bc", "a/c", "ab", "b/1"}) MustPut(k, "x");
  EXPECT_EQ(ListKeys("a/"), (Strings{"a/b/1", "a/b/2", "a/bc", "a/c"}));
  EXPECT_EQ(ListKeys("a/b"), (Strings{"a/b/1", "a/b/2", "a/bc"}));
  EXPECT_EQ(ListKeys("a/b/"), (Strings{"a/b/1", "a/b/2"}));
  EXPECT_EQ(ListKeys("a"), (Strings{"a/b/1", "a/b/2", "a/bc", "a/c", "ab"}));
  EXPECT_EQ(ListKeys("a/b/1"), (Strings{"a/b/1"}));
  EXPECT_TRUE(ListKeys("zz").empty());
  EXPECT_TRUE(ListKeys("q/r/").empty());
}

TEST_P(ObjectStoreConformanceTest, ListWithADelimiterGroupsKeysIntoCommonPrefixes) {
  for (const char* k : {"top", "a/1", "a/2", "a/deep/3", "b-x", "b/1", "c/d/e"}) MustPut(k, "x");
  auto page = store_->List("", "/", "", 1000);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  Strings objects;
  for (const auto& o : page->objects) objects.push_back(o.key);
  EXPECT_EQ(objects, (Strings{"b-x", "top"}));
  EXPECT_EQ(page->common_prefixes, (Strings{"a/", "b/", "c/"}));
  EXPECT_TRUE(page->next_token.empty());

  EXPECT_EQ(ListKeys("a/", "/"), (Strings{"a/1", "a/2", "a/deep/"}));
  EXPECT_EQ(ListKeys("c", "/"), (Strings{"c/"}));
  EXPECT_EQ(ListKeys("c/", "/"), (Strings{"c/d/"}));
}

TEST_P(ObjectStoreConformanceTest, CommonPrefixesCountAgainstThePageSizeAndAreListedOnce) {
  for (const char* k : {"a/1", "a/2", "a/3", "b", "c/1", "c/2", "d"}) MustPut(k, "x");
  auto pages = ListAllPages("", "/", 1);
  Strings entries;
  for (const ListPage& p : pages) {
    EXPECT_EQ(p.objects.size() + p.common_prefixes.size(), 1u);
    for (const auto& o : p.objects) entries.push_back(o.key);
    for (const auto& c : p.common_prefixes) entries.push_back(c);
  }
  EXPECT_EQ(entries, (Strings{"a/", "b", "c/", "d"}));
  EXPECT_EQ(pages.size(), 4u);
}

TEST_P(ObjectStoreConformanceTest, ListContinuesAfterAKeyOrACommonPrefixToken) {
  for (const char* k : {"a/1", "a/2", "b", "c/1"}) MustPut(k, "x");
  auto after_prefix = store_->List("", "/", "a/", 1000);
  ASSERT_TRUE(after_prefix.ok());
  EXPECT_TRUE(after_prefix->objects.size() == 1 && after_prefix->objects[0].key == "b");
  EXPECT_EQ(after_prefix->common_prefixes, (Strings{"c/"}));
  auto after_key = store_->List("", "", "a/1", 1000);
  ASSERT_TRUE(after_key.ok());
  Strings keys;
  for (const auto& o : after_key->objects) keys.push_back(o.key);
  EXPECT_EQ(keys, (Strings{"a/2", "b", "c/1"}));
}

TEST_P(ObjectStoreConformanceTest, ListingTwentyFiveHundredKeysInPagesOfAThousandReturnsEachOnce) {
  Strings keys;
  for (int i = 0; i < 2500; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "many/%02d/k%05d", i % 7, (i * 7919) % 2500);
    keys.emplace_back(name);
  }
  for (const std::string& k : keys) MustPut(k, "");
  MustPut("other", "");
  std::sort(keys.begin(), keys.end());
  auto pages = ListAllPages("many/", "", 1000);
  ASSERT_EQ(pages.size(), 3u);
  EXPECT_EQ(pages[0].objects.size(), 1000u);
  EXPECT_EQ(pages[1].objects.size(), 1000u);
  EXPECT_EQ(pages[2].objects.size(), 500u);
  Strings listed;
  for (const ListPage& p : pages) {
    for (const auto& o : p.objects) listed.push_back(o.key);
  }
  EXPECT_EQ(listed, keys);
  // Asking for more than 1000 still yields pages of at most 1000.
  auto big = store_->List("many/", "", "", 5000);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->objects.size(), 1000u);
  EXPECT_FALSE(big->next_token.empty());
}

TEST_P(ObjectStoreConformanceTest, ListRejectsBadArguments) {
  EXPECT_EQ(store_->List("", "", "", 0).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->List("", ",", "", 10).status().code(), Code::kInvalidArgument);
  for (const char* prefix : {"../", "/a", "a//", "./x", "a\\b"}) {
    EXPECT_EQ(store_->List(prefix, "", "", 10).status().code(), Code::kInvalidArgument) << prefix;
  }
  EXPECT_TRUE(store_->List("..", "", "", 10).ok());  // may begin "..x", a valid key
}

// ---- key validation ----

TEST_P(ObjectStoreConformanceTest, InvalidKeysAreRejectedAndNothingIsWritten) {
  const std::string too_long(1025, 'k');
  const Strings bad = {"",        "../x", "/abs", "a//b", ".",   "..",  "a/./b", "a/../b",
                       "a/",      "a\\b", "a b",  "a~",   "é",   std::string("a\0b", 3),
                       too_long};
  for (const std::string& key : bad) {
    SCOPED_TRACE("key \"" + key + "\"");
    for (PutMode mode : {PutMode::kOverwrite, PutMode::kIfAbsent}) {
      EXPECT_EQ(store_->Put(key, {AsBytes("x")}, {mode, ""}).status().code(),
                Code::kInvalidArgument);
    }
    EXPECT_EQ(store_->Get(key).status().code(), Code::kInvalidArgument);
    EXPECT_EQ(store_->Head(key).status().code(), Code::kInvalidArgument);
    EXPECT_EQ(store_->Delete(key).code(), Code::kInvalidArgument);
  }
  EXPECT_TRUE(ListKeys("").empty());
}

TEST_P(ObjectStoreConformanceTest, TheLongestValidKeyIsAccepted) {
  // 1024 bytes, with segments short enough for any file system (<= 250 bytes).
  std::string key;
  while (key.size() + 251 <= 1024) key += std::string(250, 's') + "/";
  key += std::string(1024 - key.size(), 't');
  ASSERT_EQ(key.size(), 1024u);
  MustPut(key, "long");
  EXPECT_EQ(MustGet(key), "long");
  EXPECT_EQ(ListKeys(""), Strings{key});
}

TEST_P(ObjectStoreConformanceTest, KeysMayUseTheWholeAlphabet) {
  const std::string key = "AZaz09._-/..x/.hidden/x..";
  MustPut(key, "ok");
  EXPECT_EQ(MustGet(key), "ok");
  EXPECT_EQ(ListKeys(""), Strings{key});
}

}  // namespace
}  // namespace wombatkv
