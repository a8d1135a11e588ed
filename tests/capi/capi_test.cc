// Edge cases of the C ABI (include/wombatkv.h) from C++: G12 bad input, error reporting, CAS
// publish, borrows and threads sharing one handle. The happy paths from C are in capi_c_test.c.
// Like it, the same tests run against the embedded store and against wombatkvd over shared
// memory and TCP (WOMBATKV_TEST_MODE; see OpenStore), so an engine sees the same behaviour in
// every mode (issue 4).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "capi/status_map.h"
#include "store/stats_fields.h"
#include "wombatkv.h"
#include "wombatkv/types.h"

namespace {

using wombatkv::Code;
using wombatkv::capi::CallKind;
using wombatkv::capi::CReturnFor;

std::string Key(unsigned seed) {
  char buf[WMBT_KV_KEY_HEX_BUF];
  for (int i = 0; i < 32; ++i) std::snprintf(buf + 2 * i, 3, "%02x", (seed * 131 + i * 7) & 0xff);
  return std::string(buf, 64);
}

const uint8_t* Bytes(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }
// For literals: never through a temporary std::string, whose bytes die with the expression.
const uint8_t* Bytes(const char* literal) { return reinterpret_cast<const uint8_t*>(literal); }

std::string LastError() { return wmbt_kv_last_error(); }

// As capi_c_test.c's open_store: WOMBATKV_TEST_MODE unset or "embedded" tests the embedded store;
// "shm" or "tcp" a wombatkvd that `$WOMBATKV_TEST_DAEMON_CTL start DIR` (tests/capi/daemon_ctl.sh)
// (re)starts on data directory DIR, reached through wmbt_kv_init_from_env as an engine would.
bool DaemonMode() {
  const char* mode = getenv("WOMBATKV_TEST_MODE");
  return mode != nullptr && *mode != '\0' && std::string_view(mode) != "embedded";
}

// Runs the daemon control script; `start` sets the client's variables it prints (NAME=value
// lines) and returns their names.
std::vector<std::string> DaemonCtl(const std::string& verb, const std::string& dir) {
  const std::string cmd = std::string(getenv("WOMBATKV_TEST_DAEMON_CTL")) + " " + verb + " " + dir;
  std::vector<std::string> names;
  FILE* out = popen(cmd.c_str(), "r");
  if (out == nullptr) return names;
  char line[512];
  while (fgets(line, sizeof line, out) != nullptr) {
    std::string l(line, strcspn(line, "\n"));
    const size_t eq = l.find('=');
    if (eq == std::string::npos) continue;
    names.push_back(l.substr(0, eq));
    setenv(names.back().c_str(), l.c_str() + eq + 1, 1);
  }
  EXPECT_EQ(pclose(out), 0) << cmd;
  return names;
}

// The settings that reach the test's daemon (none in embedded mode), as OpenStore found them.
std::vector<std::pair<std::string, std::string>> daemon_settings;

wmbt_kv_handle_t* OpenStore(const std::string& dir) {
  daemon_settings.clear();
  if (!DaemonMode()) return wmbt_kv_open_embedded(dir.c_str());
  const std::vector<std::string> names = DaemonCtl("start", dir);
  wmbt_kv_handle_t* h = wmbt_kv_init_from_env();
  for (const std::string& n : names) {
    daemon_settings.emplace_back(n, getenv(n.c_str()));
    unsetenv(n.c_str());  // tests set transports themselves
  }
  return h;
}

class CApi : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"WMBT_KV_REMOTE_PREFIX", "WMBT_KV_TCP_ADDR", "WMBT_KV_HTTP_ADDR",
                          "WMBT_KV_BUCKET", "WMBT_KV_NAMESPACE", "WMBT_KV_FINGERPRINT",
                          "WMBT_KV_DATA_DIR"})
      unsetenv(v);
    std::string tmpl = (std::filesystem::temp_directory_path() / "wombatkv-capi-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    handle_ = OpenStore(dir_);
    ASSERT_NE(handle_, nullptr) << LastError();
  }
  void TearDown() override {
    wmbt_kv_free(handle_);
    if (DaemonMode()) DaemonCtl("stop", "");
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Puts keys as one published chain (1.0 semantics) with payload "payload-<key prefix>".
  int64_t PutChain(const std::vector<std::string>& keys, const char* ns = "default") {
    std::vector<const char*> k;
    std::vector<std::string> payloads;
    std::vector<const uint8_t*> p;
    std::vector<size_t> lens;
    for (const auto& key : keys) payloads.push_back("payload-" + key.substr(0, 8));
    for (size_t i = 0; i < keys.size(); ++i) {
      k.push_back(keys[i].c_str());
      p.push_back(Bytes(payloads[i]));
      lens.push_back(payloads[i].size());
    }
    return wmbt_kv_put_kv_blocks(handle_, ns, k.data(), p.data(), lens.data(), keys.size());
  }

  size_t Lookup(const std::vector<std::string>& keys, const char* ns = "default") {
    std::vector<const char*> k;
    for (const auto& key : keys) k.push_back(key.c_str());
    size_t matched = SIZE_MAX;
    EXPECT_EQ(wmbt_kv_lookup_block_prefix(handle_, ns, k.data(), k.size(), &matched, nullptr, 0),
              0)
        << LastError();
    return matched;
  }

  // A borrow of the one published block `key` (default namespace).
  struct Borrowed {
    const uint8_t** ptrs = nullptr;
    const size_t* lens = nullptr;
    wmbt_kv_borrow_t* borrow = nullptr;
  };
  Borrowed BorrowOne(const std::string& key) {
    const char* keys[] = {key.c_str()};
    Borrowed b;
    EXPECT_EQ(
        wmbt_kv_get_kv_blocks_borrowed(handle_, "default", keys, 1, &b.ptrs, &b.lens, &b.borrow), 1)
        << LastError();
    return b;
  }

  std::string dir_;
  wmbt_kv_handle_t* handle_ = nullptr;
};

TEST(CApiStatusMap, EveryCodeMapsToTheDocumentedReturn) {
  struct Row {
    Code code;
    int32_t plain, read, publish;
  };
  const Row rows[] = {
      {Code::kOk, 0, 1, 0},
      {Code::kNotFound, -1, 0, -1},
      {Code::kUnavailable, -1, -1, -1},
      {Code::kConflict, -1, -1, 1},
      {Code::kInvalidArgument, -1, -1, -1},
      {Code::kCorruption, -1, -1, -1},
      {Code::kResourceExhausted, -1, -1, -1},
      {Code::kFailedPrecondition, -1, -1, -1},
      {Code::kInternal, -1, -1, -1},
      {Code::kPermissionDenied, -1, -1, -1},
  };
  ASSERT_EQ(std::size(wombatkv::capi::kStatusToC), std::size(rows)) << "a code without a row";
  for (const Row& r : rows) {
    SCOPED_TRACE(static_cast<int>(r.code));
    EXPECT_EQ(CReturnFor(r.code, CallKind::kPlain), r.plain);
    EXPECT_EQ(CReturnFor(r.code, CallKind::kRead), r.read);
    EXPECT_EQ(CReturnFor(r.code, CallKind::kPublish), r.publish);
  }
  EXPECT_EQ(CReturnFor(static_cast<Code>(200), CallKind::kRead), -1);
}

TEST_F(CApi, HashArgumentsMustBeExactly64Hex) {
  std::string good = Key(1);
  ASSERT_EQ(PutChain({good}), static_cast<int64_t>(std::string("payload-").size() + 8));
  std::string upper = good;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(Lookup({upper}), 1u) << "either case names the same key";

  const std::string bad[] = {good.substr(0, 63), good + "0", good.substr(0, 62) + "g0",
                             good.substr(0, 63) + " ", "", "0x" + good.substr(0, 62)};
  for (const std::string& b : bad) {
    SCOPED_TRACE(b);
    const char* keys[] = {good.c_str(), b.c_str()};
    size_t matched = 7;
    char err[256] = "sentinel";
    EXPECT_EQ(wmbt_kv_lookup_block_prefix(handle_, "default", keys, 2, &matched, err, sizeof err),
              -1);
    EXPECT_EQ(matched, 7u);
    EXPECT_NE(std::string(err).find("block_hashes_hex[1]"), std::string::npos) << err;
    EXPECT_NE(std::string(err).find("64 hex digits"), std::string::npos) << err;
    EXPECT_EQ(std::string(err), LastError());
    const uint8_t* payload = Bytes("x");
    size_t len = 1;
    EXPECT_EQ(wmbt_kv_put_kv_blocks(handle_, "default", keys + 1, &payload, &len, 1), -1);
    EXPECT_EQ(wmbt_kv_put_raw_tail(handle_, "default", b.c_str(), payload, 1, nullptr, 0), -1);
    const uint8_t** ptrs = nullptr;
    const size_t* lens = nullptr;
    wmbt_kv_borrow_t* borrow = nullptr;
    EXPECT_EQ(wmbt_kv_get_kv_blocks_borrowed(handle_, "default", keys, 2, &ptrs, &lens, &borrow),
              -1);
    EXPECT_EQ(borrow, nullptr);
  }
  const char* with_null[] = {good.c_str(), nullptr};
  size_t matched = 0;
  EXPECT_EQ(wmbt_kv_lookup_block_prefix(handle_, "default", with_null, 2, &matched, nullptr, 0),
            -1);
  EXPECT_NE(LastError().find("block_hashes_hex[1] is NULL"), std::string::npos) << LastError();
}

// A message echoes a bad argument, which may be any bytes: it stays one line of valid UTF-8
// (a binding decodes it as text), the bytes that are not shown as \xNN, and a cut err_buf never
// ends inside a character.
TEST_F(CApi, AnErrorEchoingBinaryBytesIsOneLineOfValidUtf8) {
  const std::string key =
      "ab\ncd\xe9"
      "f\xc3\xa9" +
      std::string(40, 'e');  // \xe9 alone: Latin-1
  const char* keys[] = {key.c_str()};
  size_t matched = 0;
  ASSERT_EQ(wmbt_kv_lookup_block_prefix(handle_, "default", keys, 1, &matched, nullptr, 0), -1);
  const std::string e = LastError();
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  EXPECT_NE(e.find("ab\\x0acd\\xe9f\xc3\xa9"
                   "eee"),
            std::string::npos)
      << e;
  // Cut inside the "é": the buffer ends before it.
  const size_t at = e.find("\xc3\xa9");
  std::vector<char> err(at + 2);
  ASSERT_EQ(
      wmbt_kv_lookup_block_prefix(handle_, "default", keys, 1, &matched, err.data(), err.size()),
      -1);
  EXPECT_EQ(std::string(err.data()), e.substr(0, at));
}

TEST_F(CApi, NullArgumentsAreErrorsNotCrashes) {
  std::string k = Key(2);
  const char* keys[] = {k.c_str()};
  const uint8_t* payloads[] = {Bytes("abc")};
  size_t lens[] = {3};
  size_t matched = 0;
  const uint8_t** ptrs = nullptr;
  const size_t* plens = nullptr;
  wmbt_kv_borrow_t* borrow = nullptr;
  const uint8_t* bytes = nullptr;
  size_t len = 0;

  EXPECT_EQ(wmbt_kv_lookup_block_prefix(nullptr, "default", keys, 1, &matched, nullptr, 0), -1);
  EXPECT_EQ(wmbt_kv_lookup_block_prefix(handle_, "default", nullptr, 1, &matched, nullptr, 0), -1);
  EXPECT_EQ(wmbt_kv_lookup_block_prefix(handle_, "default", keys, 1, nullptr, nullptr, 0), -1);
  EXPECT_EQ(wmbt_kv_get_kv_blocks_borrowed(nullptr, "default", keys, 1, &ptrs, &plens, &borrow),
            -1);
  EXPECT_EQ(wmbt_kv_get_kv_blocks_borrowed(handle_, "default", nullptr, 1, &ptrs, &plens, &borrow),
            -1);
  EXPECT_EQ(wmbt_kv_get_kv_blocks_borrowed(handle_, "default", keys, 1, &ptrs, nullptr, &borrow),
            -1);
  EXPECT_EQ(wmbt_kv_get_kv_blocks_borrowed(handle_, "default", keys, 1, &ptrs, &plens, nullptr),
            -1);
  EXPECT_EQ(wmbt_kv_put_kv_blocks(handle_, "default", nullptr, payloads, lens, 1), -1);
  EXPECT_EQ(wmbt_kv_put_kv_blocks(handle_, "default", keys, nullptr, lens, 1), -1);
  EXPECT_EQ(wmbt_kv_put_kv_blocks(handle_, "default", keys, payloads, nullptr, 1), -1);
  const uint8_t* null_payload[] = {nullptr};
  EXPECT_EQ(wmbt_kv_put_kv_blocks(handle_, "default", keys, null_payload, lens, 1), -1);
  EXPECT_NE(LastError().find("payloads[0] is NULL with length 3"), std::string::npos);
  EXPECT_EQ(wmbt_kv_put_raw_tail(nullptr, "default", keys[0], payloads[0], 3, nullptr, 0), -1);
  EXPECT_EQ(wmbt_kv_get_raw_tail_borrowed(handle_, "default", keys[0], nullptr, &len, &borrow,
                                          nullptr, 0),
            -1);
  EXPECT_EQ(wmbt_kv_get_by_content_hash_borrowed(handle_, "default", nullptr, &bytes, &len,
                                                 &borrow, nullptr, 0),
            -1);
  EXPECT_EQ(wmbt_kv_publish_chain(handle_, "default", nullptr, nullptr, nullptr, -1, nullptr,
                                  nullptr, nullptr, nullptr, 0),
            -1);
  EXPECT_EQ(wmbt_kv_put_blocks_ex(handle_, "default", nullptr, keys, nullptr, nullptr, lens, 1,
                                  nullptr, nullptr, 0),
            -1);
  EXPECT_EQ(wmbt_kv_stats_json(nullptr, nullptr, 0, nullptr), -1);
  EXPECT_EQ(wmbt_kv_refresh(nullptr, nullptr, 0), -1);
  EXPECT_EQ(borrow, nullptr);
  wmbt_kv_free(nullptr);
  wmbt_kv_release_borrow(nullptr);
  wmbt_kv_payload_free(nullptr);
  // No-ops that cannot fail: they leave the refresh's error to be read (ABI 1.3; payload_free
  // since 1.5's header says so).
  EXPECT_NE(LastError().find("wmbt_kv_refresh: INVALID_ARGUMENT: handle is NULL"),
            std::string::npos)
      << LastError();
}

TEST_F(CApi, ZeroBlocksNeedNoArrays) {
  size_t matched = 5;
  EXPECT_EQ(wmbt_kv_put_kv_blocks(handle_, "default", nullptr, nullptr, nullptr, 0), 0);
  EXPECT_EQ(wmbt_kv_lookup_block_prefix(handle_, "default", nullptr, 0, &matched, nullptr, 0), 0);
  EXPECT_EQ(matched, 0u);
  EXPECT_EQ(wmbt_kv_put_blocks_ex(handle_, "default", nullptr, nullptr, nullptr, nullptr, nullptr,
                                  0, nullptr, nullptr, 0),
            0);
  const uint8_t** ptrs = nullptr;
  const size_t* lens = nullptr;
  wmbt_kv_borrow_t* borrow = nullptr;
  EXPECT_EQ(wmbt_kv_get_kv_blocks_borrowed(handle_, "default", nullptr, 0, &ptrs, &lens, &borrow),
            1);
  EXPECT_NE(borrow, nullptr);
  wmbt_kv_release_borrow(borrow);
  EXPECT_EQ(LastError(), "");
  // Without blocks, a bad namespace is still refused, by every call alike.
  borrow = nullptr;
  EXPECT_EQ(wmbt_kv_put_kv_blocks(handle_, "bad ns!", nullptr, nullptr, nullptr, 0), -1);
  EXPECT_NE(LastError().find("namespace"), std::string::npos) << LastError();
  EXPECT_EQ(wmbt_kv_lookup_block_prefix(handle_, "bad ns!", nullptr, 0, &matched, nullptr, 0), -1);
  EXPECT_EQ(wmbt_kv_put_blocks_ex(handle_, "bad ns!", nullptr, nullptr, nullptr, nullptr, nullptr,
                                  0, nullptr, nullptr, 0),
            -1);
  EXPECT_EQ(wmbt_kv_get_kv_blocks_borrowed(handle_, "bad ns!", nullptr, 0, &ptrs, &lens, &borrow),
            -1);
  EXPECT_EQ(borrow, nullptr);
}

TEST_F(CApi, HugeCountsAreRefusedBeforeReadingArrays) {
  // The arrays are one element long: reading past them would be caught by ASan, or crash.
  std::string k = Key(3);
  const char* keys[] = {k.c_str()};
  const uint8_t* payloads[] = {Bytes("a")};
  size_t lens[] = {1};
  size_t matched = 0;
  const uint8_t** ptrs = nullptr;
  const size_t* plens = nullptr;
  wmbt_kv_borrow_t* borrow = nullptr;
  for (size_t count : {SIZE_MAX, SIZE_MAX / 2, size_t{WMBT_KV_BATCH_BLOCKS_MAX} + 1}) {
    SCOPED_TRACE(count);
    EXPECT_EQ(wmbt_kv_put_kv_blocks(handle_, "default", keys, payloads, lens, count), -1);
    EXPECT_NE(LastError().find("exceeds the limit"), std::string::npos) << LastError();
    EXPECT_EQ(wmbt_kv_put_blocks_ex(handle_, "default", nullptr, keys, nullptr, payloads, lens,
                                    count, nullptr, nullptr, 0),
              -1);
  }
  for (size_t count : {SIZE_MAX, size_t{WMBT_KV_LOOKUP_KEYS_MAX} + 1}) {
    EXPECT_EQ(wmbt_kv_lookup_block_prefix(handle_, "default", keys, count, &matched, nullptr, 0),
              -1);
    EXPECT_EQ(
        wmbt_kv_get_kv_blocks_borrowed(handle_, "default", keys, count, &ptrs, &plens, &borrow),
        -1);
  }
  // An oversized length is refused before the payload is read.
  size_t huge[] = {static_cast<size_t>(WMBT_KV_BLOCK_BYTES_MAX) + 1};
  EXPECT_EQ(wmbt_kv_put_kv_blocks(handle_, "default", keys, payloads, huge, 1), -1);
  EXPECT_NE(LastError().find("more than the limit"), std::string::npos) << LastError();
  EXPECT_EQ(wmbt_kv_put_raw_tail(handle_, "default", keys[0], payloads[0],
                                 static_cast<size_t>(WMBT_KV_SIDECAR_BYTES_MAX) + 1, nullptr, 0),
            -1);
}

TEST_F(CApi, ErrBufIsTruncatedAndNulTerminated) {
  size_t matched = 0;
  char buf[16];
  for (size_t len : {size_t{1}, size_t{2}, size_t{8}, sizeof buf}) {
    SCOPED_TRACE(len);
    std::memset(buf, 'Z', sizeof buf);
    EXPECT_EQ(wmbt_kv_lookup_block_prefix(handle_, "default", nullptr, 1, &matched, buf, len), -1);
    EXPECT_EQ(std::strlen(buf), len - 1);
    EXPECT_EQ(std::string(buf), LastError().substr(0, len - 1));
    for (size_t i = len; i < sizeof buf; ++i) EXPECT_EQ(buf[i], 'Z') << "wrote past err_len";
  }
  std::memset(buf, 'Z', sizeof buf);
  EXPECT_EQ(wmbt_kv_lookup_block_prefix(handle_, "default", nullptr, 1, &matched, buf, 0), -1);
  EXPECT_EQ(buf[0], 'Z') << "err_len 0 writes nothing";
  EXPECT_TRUE(LastError().starts_with("wombatkv: wmbt_kv_lookup_block_prefix: INVALID_ARGUMENT:"))
      << LastError();
  // Success writes an empty string.
  std::memset(buf, 'Z', sizeof buf);
  EXPECT_EQ(wmbt_kv_lookup_block_prefix(handle_, "default", nullptr, 0, &matched, buf, sizeof buf),
            0);
  EXPECT_EQ(buf[0], '\0');
}

TEST_F(CApi, LastErrorIsPerThreadAndClearedByEveryCall) {
  size_t matched = 0;
  ASSERT_EQ(wmbt_kv_lookup_block_prefix(handle_, "default", nullptr, 1, &matched, nullptr, 0), -1);
  std::string mine = LastError();
  ASSERT_FALSE(mine.empty());
  std::string other_before, other_after;
  std::thread t([&] {
    other_before = LastError();
    EXPECT_EQ(wmbt_kv_blake3_64hex(nullptr, 1, nullptr), -1);
    other_after = LastError();
  });
  t.join();
  EXPECT_EQ(other_before, "");
  EXPECT_NE(other_after.find("wmbt_kv_blake3_64hex"), std::string::npos);
  EXPECT_EQ(LastError(), mine) << "another thread's failure does not touch this thread's error";
  (void)wmbt_kv_crc32c(Bytes("x"), 1);
  EXPECT_EQ(LastError(), "");
}

TEST_F(CApi, CasPublishConflictReturnsOneWithTheCurrentTip) {
  std::string a = Key(10), b = Key(11), c = Key(12);
  const char* keys[] = {a.c_str(), b.c_str(), c.c_str()};
  const char* parents[] = {nullptr, a.c_str(), a.c_str()};  // a ← b and a ← c
  std::string p = "pp";
  const uint8_t* payloads[] = {Bytes(p), Bytes(p), Bytes(p)};
  size_t lens[] = {2, 2, 2};
  char hashes[3 * WMBT_KV_CONTENT_HASH_HEX_BUF];
  ASSERT_EQ(wmbt_kv_put_blocks_ex(handle_, "default", nullptr, keys, parents, payloads, lens, 3,
                                  hashes, nullptr, 0),
            0)
      << LastError();
  EXPECT_STREQ(hashes, hashes + 41) << "identical payloads have one content hash";
  EXPECT_EQ(std::strlen(hashes), 40u);

  // Writer 1 creates chain a with tip b; writer 2, also expecting "does not exist", loses and
  // learns writer 1's tip and version.
  uint64_t v1 = 0;
  ASSERT_EQ(wmbt_kv_publish_chain(handle_, "default", nullptr, a.c_str(), b.c_str(), 0, &v1,
                                  nullptr, nullptr, nullptr, 0),
            0)
      << LastError();
  EXPECT_GE(v1, 1u);
  uint64_t current_version = 0, untouched = 12345;
  char current_tip[WMBT_KV_KEY_HEX_BUF] = {};
  char err[128] = "sentinel";
  EXPECT_EQ(wmbt_kv_publish_chain(handle_, "default", nullptr, a.c_str(), c.c_str(), 0, &untouched,
                                  current_tip, &current_version, err, sizeof err),
            1);
  EXPECT_EQ(std::string(current_tip), b);
  EXPECT_EQ(current_version, v1);
  EXPECT_EQ(untouched, 12345u) << "no new version on a conflict";
  EXPECT_STREQ(err, "") << "a conflict is an answer, not an error";
  EXPECT_EQ(LastError(), "");
  // Writer 2 rebases on what it learned and wins.
  uint64_t v2 = 0;
  ASSERT_EQ(wmbt_kv_publish_chain(handle_, "default", nullptr, a.c_str(), c.c_str(),
                                  static_cast<int64_t>(current_version), &v2, nullptr, nullptr,
                                  nullptr, 0),
            0)
      << LastError();
  EXPECT_GT(v2, v1);
  // A stale version conflicts and reports the new state.
  EXPECT_EQ(wmbt_kv_publish_chain(handle_, "default", nullptr, a.c_str(), c.c_str(),
                                  static_cast<int64_t>(v1), nullptr, current_tip,
                                  &current_version, nullptr, 0),
            1);
  EXPECT_EQ(std::string(current_tip), c);
  EXPECT_EQ(current_version, v2);
  // Last writer wins ignores versions.
  uint64_t v3 = 0;
  EXPECT_EQ(wmbt_kv_publish_chain(handle_, "default", nullptr, a.c_str(), c.c_str(), -1, &v3,
                                  nullptr, nullptr, nullptr, 0),
            0);
  EXPECT_GT(v3, v2);
  size_t matched = 0;
  const char* path[] = {a.c_str(), c.c_str()};
  EXPECT_EQ(wmbt_kv_lookup_block_prefix(handle_, "default", path, 2, &matched, nullptr, 0), 0);
  EXPECT_EQ(matched, 2u);
}

TEST_F(CApi, RacingCasPublishersHaveExactlyOneWinner) {
  constexpr int kWriters = 4;
  std::string root = Key(60);
  std::vector<std::string> tips;
  for (int i = 0; i < kWriters; ++i) tips.push_back(Key(61 + i));
  std::vector<const char*> keys = {root.c_str()}, parents = {nullptr};
  for (const auto& t : tips) {
    keys.push_back(t.c_str());
    parents.push_back(root.c_str());
  }
  std::vector<std::string> payloads;
  for (int i = 0; i <= kWriters; ++i) payloads.push_back("race-" + std::to_string(i));
  std::vector<const uint8_t*> p;
  std::vector<size_t> lens;
  for (const auto& s : payloads) {
    p.push_back(Bytes(s));
    lens.push_back(s.size());
  }
  ASSERT_EQ(wmbt_kv_put_blocks_ex(handle_, "default", nullptr, keys.data(), parents.data(),
                                  p.data(), lens.data(), keys.size(), nullptr, nullptr, 0),
            0)
      << LastError();
  std::vector<int32_t> rc(kWriters);
  std::vector<std::string> learned(kWriters);
  std::vector<std::thread> threads;
  for (int i = 0; i < kWriters; ++i) {
    threads.emplace_back([&, i] {
      char tip[WMBT_KV_KEY_HEX_BUF] = {};
      uint64_t version = 0;
      rc[i] = wmbt_kv_publish_chain(handle_, "default", nullptr, root.c_str(), tips[i].c_str(), 0,
                                    nullptr, tip, &version, nullptr, 0);
      learned[i] = tip;
    });
  }
  for (auto& t : threads) t.join();
  int winner = -1, losers = 0;
  for (int i = 0; i < kWriters; ++i) {
    if (rc[i] == 0) {
      EXPECT_EQ(winner, -1) << "two winners";
      winner = i;
    } else {
      EXPECT_EQ(rc[i], 1) << "writer " << i;
      ++losers;
    }
  }
  ASSERT_NE(winner, -1);
  EXPECT_EQ(losers, kWriters - 1);
  for (int i = 0; i < kWriters; ++i) {
    if (i != winner) {
      EXPECT_EQ(learned[i], tips[winner]) << "loser " << i << " learns the winner";
    }
  }
}

// put_kv_blocks chains its blocks in key order: a key given twice would make the parent links
// loop. It is refused naming both positions, before anything is stored.
TEST_F(CApi, APutThatRepeatsAKeyIsRefusedBeforeStoringAnything) {
  const std::string a = Key(31), b = Key(32);
  const char* keys[] = {a.c_str(), b.c_str(), a.c_str()};
  const uint8_t* payloads[] = {Bytes("one"), Bytes("two"), Bytes("three")};
  const size_t lens[] = {3, 3, 5};
  EXPECT_EQ(wmbt_kv_put_kv_blocks(handle_, "default", keys, payloads, lens, 3), -1);
  EXPECT_NE(LastError().find("block_hashes_hex[2] repeats block_hashes_hex[0]"), std::string::npos)
      << LastError();
  EXPECT_EQ(Lookup({a, b}), 0u);
  const uint8_t** ptrs = nullptr;
  const size_t* got_lens = nullptr;
  wmbt_kv_borrow_t* borrow = nullptr;
  const char* middle[] = {b.c_str()};
  EXPECT_EQ(
      wmbt_kv_get_kv_blocks_borrowed(handle_, "default", middle, 1, &ptrs, &got_lens, &borrow), 0);
  // Nothing was put: the store's put counter did not move.
  char json[8192];
  size_t needed = 0;
  ASSERT_EQ(wmbt_kv_stats_json(handle_, json, sizeof json, &needed), 0) << LastError();
  EXPECT_NE(std::string(json).find("\"puts\":0"), std::string::npos) << json;
}

// Stats come from the store that answers: embedded, always; through a daemon that has gone,
// UNAVAILABLE (-1) — they were zeros, which a monitor takes for a daemon restart.
TEST_F(CApi, StatsThroughADaemonThatHasGoneAreUnavailableNotZeros) {
  char json[8192];
  size_t needed = 0;
  ASSERT_EQ(wmbt_kv_stats_json(handle_, json, sizeof json, &needed), 0) << LastError();
  EXPECT_NE(std::string(json).find("\"puts\":"), std::string::npos) << json;
  if (!DaemonMode()) return;  // the embedded store has no daemon to lose
  DaemonCtl("stop", "");
  EXPECT_EQ(wmbt_kv_stats_json(handle_, json, sizeof json, &needed), -1) << json;
  EXPECT_EQ(wmbt_kv_last_error_code(), WMBT_KV_ERR_UNAVAILABLE) << LastError();
}

// A get or a lookup that repeats a key cannot match a chain (each block is in it once): a get is
// a miss, a lookup counts the keys before the repeat — in every mode alike.
TEST_F(CApi, AGetThatRepeatsAKeyIsAMissAndALookupStopsAtTheRepeat) {
  const std::string a = Key(33), b = Key(34);
  const char* chain[] = {a.c_str(), b.c_str()};
  const uint8_t* payloads[] = {Bytes("one"), Bytes("two")};
  const size_t lens[] = {3, 3};
  ASSERT_GE(wmbt_kv_put_kv_blocks(handle_, "default", chain, payloads, lens, 2), 0) << LastError();
  const uint8_t** ptrs = nullptr;
  const size_t* got_lens = nullptr;
  wmbt_kv_borrow_t* borrow = nullptr;
  const char* repeated[] = {a.c_str(), b.c_str(), b.c_str()};
  EXPECT_EQ(
      wmbt_kv_get_kv_blocks_borrowed(handle_, "default", repeated, 3, &ptrs, &got_lens, &borrow),
      0);
  EXPECT_EQ(borrow, nullptr);
  EXPECT_EQ(Lookup({a, b, b}), 2u);
  EXPECT_EQ(Lookup({a, a}), 1u);
  ASSERT_EQ(
      wmbt_kv_get_kv_blocks_borrowed(handle_, "default", repeated, 2, &ptrs, &got_lens, &borrow),
      1);
  wmbt_kv_release_borrow(borrow);
}

// wmbt_kv_get_kv_blocks_into: a get copied into the caller's buffers, with the borrowed get's
// answers (hit, miss, a block from the middle of a chain, another fingerprint), a buffer too
// small named with every length returned, and nothing left held after it.
TEST_F(CApi, GetIntoCopiesIntoTheCallersBuffersAndHoldsNothing) {
  const std::string a = Key(40), b = Key(41), c = Key(42), d = Key(43);
  const std::string small = "sixteen bytes ok";
  std::string large(100 << 10, '\0');  // over shm, a payload this size lives in an arena
  for (size_t i = 0; i < large.size(); ++i) large[i] = static_cast<char>(i * 7 + i / 4096);
  const std::string tail(3000, 'z');
  const char* chain[] = {a.c_str(), b.c_str(), c.c_str(), d.c_str()};
  const uint8_t* payloads[] = {nullptr, Bytes(small), Bytes(large), Bytes(tail)};
  const size_t lens[] = {0, small.size(), large.size(), tail.size()};
  ASSERT_GT(wmbt_kv_put_kv_blocks(handle_, "default", chain, payloads, lens, 4), 0) << LastError();

  std::vector<std::string> bufs = {"", std::string(64, '.'), std::string(large.size(), '.'),
                                   std::string(4096, '.')};
  std::vector<uint8_t*> dsts = {nullptr};
  for (size_t i = 1; i < bufs.size(); ++i) dsts.push_back(reinterpret_cast<uint8_t*>(&bufs[i][0]));
  std::vector<size_t> caps = {0, bufs[1].size(), bufs[2].size(), bufs[3].size()};
  std::vector<size_t> got(4, 7);
  char err[256] = "sentinel";
  ASSERT_EQ(wmbt_kv_get_kv_blocks_into(handle_, "default", nullptr, chain, 4, dsts.data(),
                                       caps.data(), got.data(), err, sizeof err),
            1)
      << err;
  EXPECT_STREQ(err, "");
  EXPECT_EQ(got, std::vector<size_t>({0, small.size(), large.size(), tail.size()}));
  EXPECT_EQ(bufs[1].substr(0, small.size()), small);
  EXPECT_EQ(bufs[1][small.size()], '.') << "wrote past the payload";
  EXPECT_EQ(bufs[2], large);
  EXPECT_EQ(bufs[3].substr(0, tail.size()), tail);

  // From the middle of the chain, as a borrowed get.
  ASSERT_EQ(wmbt_kv_get_kv_blocks_into(handle_, "default", nullptr, chain + 3, 1, dsts.data() + 3,
                                       caps.data() + 3, got.data(), nullptr, 0),
            1)
      << LastError();
  EXPECT_EQ(got[0], tail.size());

  // A miss (an unknown key, another fingerprint) writes nothing.
  const std::string unknown = Key(49);
  const char* missing[] = {a.c_str(), unknown.c_str()};
  bufs[1].assign(64, '.');
  got.assign(4, 7);
  EXPECT_EQ(wmbt_kv_get_kv_blocks_into(handle_, "default", nullptr, missing, 2, dsts.data(),
                                       caps.data(), got.data(), err, sizeof err),
            0);
  EXPECT_STREQ(err, "");
  EXPECT_EQ(wmbt_kv_get_kv_blocks_into(handle_, "default", "0123456789abcdef01234567", chain, 4,
                                       dsts.data(), caps.data(), got.data(), nullptr, 0),
            0);
  EXPECT_EQ(got, std::vector<size_t>(4, 7));
  EXPECT_EQ(bufs[1], std::string(64, '.'));

  // A buffer too small: an error naming it, every length returned, nothing copied.
  caps[2] = large.size() - 1;
  bufs[2].assign(large.size(), '.');
  EXPECT_EQ(wmbt_kv_get_kv_blocks_into(handle_, "default", nullptr, chain, 4, dsts.data(),
                                       caps.data(), got.data(), err, sizeof err),
            -1);
  EXPECT_EQ(wmbt_kv_last_error_code(), WMBT_KV_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("dst_caps[2] = 102399 bytes is too small for block 2 of 102400"),
            std::string::npos)
      << err;
  EXPECT_EQ(got, std::vector<size_t>({0, small.size(), large.size(), tail.size()}));
  EXPECT_EQ(bufs[1], std::string(64, '.'));
  EXPECT_EQ(bufs[2], std::string(large.size(), '.'));
  caps[2] = large.size();

  // Bad arguments are errors; a count of 0 needs no arrays.
  dsts[1] = nullptr;
  EXPECT_EQ(wmbt_kv_get_kv_blocks_into(handle_, "default", nullptr, chain, 4, dsts.data(),
                                       caps.data(), got.data(), err, sizeof err),
            -1);
  EXPECT_NE(std::string(err).find("dsts[1] is NULL with dst_caps[1] = 64"), std::string::npos)
      << err;
  // Overlapping buffers: refused before anything is read, the same in every mode (over TCP the
  // blocks would be received in place, in whatever order they arrive).
  dsts[1] = reinterpret_cast<uint8_t*>(&bufs[3][0]);
  dsts[2] = dsts[1] + 10;
  bufs[3].assign(4096, '.');
  caps[2] = 100;
  EXPECT_EQ(wmbt_kv_get_kv_blocks_into(handle_, "default", nullptr, chain, 3, dsts.data(),
                                       caps.data(), got.data(), err, sizeof err),
            -1);
  EXPECT_EQ(wmbt_kv_last_error_code(), WMBT_KV_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("dsts[1] and dsts[2] overlap"), std::string::npos) << err;
  EXPECT_EQ(bufs[3], std::string(4096, '.'));
  dsts[1] = reinterpret_cast<uint8_t*>(&bufs[1][0]);
  dsts[2] = reinterpret_cast<uint8_t*>(&bufs[2][0]);
  caps[2] = large.size();
  EXPECT_EQ(wmbt_kv_get_kv_blocks_into(handle_, "default", nullptr, chain, 4, nullptr, caps.data(),
                                       got.data(), err, sizeof err),
            -1);
  EXPECT_NE(std::string(err).find("dsts is NULL"), std::string::npos) << err;
  EXPECT_EQ(wmbt_kv_get_kv_blocks_into(nullptr, "default", nullptr, chain, 4, dsts.data(),
                                       caps.data(), got.data(), nullptr, 0),
            -1);
  EXPECT_EQ(wmbt_kv_get_kv_blocks_into(handle_, "default", nullptr, nullptr, 0, nullptr, nullptr,
                                       nullptr, nullptr, 0),
            1);

  // More gets than one shared-memory client may hold borrows (16,384): none is held.
  dsts[1] = reinterpret_cast<uint8_t*>(&bufs[1][0]);
  for (int i = 0; i < 17'000; ++i) {
    ASSERT_EQ(wmbt_kv_get_kv_blocks_into(handle_, "default", nullptr, chain, 2, dsts.data(),
                                         caps.data(), got.data(), nullptr, 0),
              1)
        << "get " << i << ": " << LastError();
  }
}

// wmbt_kv_open_with_settings: settings given for one handle (here another fingerprint and, for
// an embedded store, another data directory; in daemon modes the daemon's address too), where
// the environment says otherwise or nothing; and each mistake named by its index.
TEST_F(CApi, OpenWithSettingsConfiguresOneHandleAndNamesWhatIsWrong) {
  std::vector<std::pair<std::string, std::string>> settings = daemon_settings;
  settings.emplace_back("WMBT_KV_FINGERPRINT", "0123456789abcdef01234567");
  settings.emplace_back("WMBT_KV_DATA_DIR", dir_ + "/second");
  setenv("WMBT_KV_FINGERPRINT", "not hex: a flag-like override must hide it", 1);
  auto open = [&] {
    std::vector<const char*> names, values;
    for (const auto& [n, v] : settings) {
      names.push_back(n.c_str());
      values.push_back(v.c_str());
    }
    return wmbt_kv_open_with_settings(names.data(), values.data(), settings.size());
  };
  wmbt_kv_handle_t* h = open();
  unsetenv("WMBT_KV_FINGERPRINT");
  ASSERT_NE(h, nullptr) << LastError();
  const std::string key = Key(41);
  const char* keys[] = {key.c_str()};
  const uint8_t* payloads[] = {Bytes("scoped")};
  const size_t lens[] = {6};
  ASSERT_GE(wmbt_kv_put_kv_blocks(h, "default", keys, payloads, lens, 1), 0) << LastError();
  size_t matched = 9;
  ASSERT_EQ(wmbt_kv_lookup_block_prefix(h, "default", keys, 1, &matched, nullptr, 0), 0);
  EXPECT_EQ(matched, 1u);
  EXPECT_EQ(Lookup({key}), 0u) << "the first handle has its own fingerprint (and store)";
  wmbt_kv_free(h);
  h = open();  // the same settings again: the same scope
  ASSERT_NE(h, nullptr) << LastError();
  ASSERT_EQ(wmbt_kv_lookup_block_prefix(h, "default", keys, 1, &matched, nullptr, 0), 0);
  EXPECT_EQ(matched, 1u);
  wmbt_kv_free(h);

  const struct {
    std::vector<const char*> names, values;
    const char* says;
  } wrong[] = {
      {{"WMBT_KV_FINGERPRNT"},
       {"0123456789abcdef01234567"},
       "names[0] \"WMBT_KV_FINGERPRNT\" is not a WombatKV setting (did you mean "
       "WMBT_KV_FINGERPRINT?)"},
      {{"WMBT_KV_NAMESPACE", "WMBT_KV_FINGERPRINT"},
       {"team-a", "xyz"},
       "values[1] \"xyz\" is not valid"},
      {{"WMBT_KV_NAMESPACE", "WMBT_KV_NAMESPACE"}, {"a", "b"}, "names[1] repeats names[0]"},
      {{"WMBT_KV_DAEMON_WORKERS"}, {"4"}, "is a setting of wombatkvd, not of a client"},
      {{"WMBT_KV_NAMESPACE"}, {nullptr}, "values[0] is NULL"},
  };
  for (const auto& w : wrong) {
    EXPECT_EQ(wmbt_kv_open_with_settings(w.names.data(), w.values.data(), w.names.size()), nullptr);
    EXPECT_NE(LastError().find(w.says), std::string::npos) << LastError();
    EXPECT_EQ(wmbt_kv_last_error_code(), WMBT_KV_ERR_INVALID_ARGUMENT);
  }
  EXPECT_EQ(wmbt_kv_open_with_settings(nullptr, nullptr, 1), nullptr);
  EXPECT_NE(LastError().find("names"), std::string::npos) << LastError();
}

// A daemon named by the call is the one used: the environment's transport variables (a stale
// prefix, a malformed address) neither win by precedence nor fail the open.
TEST_F(CApi, ADaemonNamedByTheCallIsUsedWhateverTheEnvironmentSays) {
  setenv("WMBT_KV_REMOTE_PREFIX", "wombatkv-nowhere", 1);
  setenv("WMBT_KV_TCP_ADDR", "not an address", 1);
  EXPECT_EQ(wmbt_kv_open_tcp("127.0.0.1:1"), nullptr);
  EXPECT_EQ(wmbt_kv_last_error_code(), WMBT_KV_ERR_UNAVAILABLE) << LastError();
  EXPECT_EQ(LastError().find("not an address"), std::string::npos) << LastError();
  EXPECT_NE(LastError().find("127.0.0.1:1"), std::string::npos) << LastError();
  if (DaemonMode()) {
    // daemon_settings: the test daemon's prefix (shm) or address and token (tcp).
    std::vector<const char*> names, values;
    for (const auto& [n, v] : daemon_settings) {
      names.push_back(n.c_str());
      values.push_back(v.c_str());
    }
    wmbt_kv_handle_t* h = wmbt_kv_open_with_settings(names.data(), values.data(), names.size());
    ASSERT_NE(h, nullptr) << LastError();
    const std::string k = Key(42);
    const char* keys[] = {k.c_str()};
    size_t matched = 9;
    EXPECT_EQ(wmbt_kv_lookup_block_prefix(h, "default", keys, 1, &matched, nullptr, 0), 0)
        << LastError();
    EXPECT_EQ(matched, 0u);
    wmbt_kv_free(h);
  }
  unsetenv("WMBT_KV_REMOTE_PREFIX");
  unsetenv("WMBT_KV_TCP_ADDR");
}

TEST_F(CApi, PublishingABlockNeverPutIsAnError) {
  std::string tip = Key(20);
  char err[256];
  EXPECT_EQ(wmbt_kv_publish_chain(handle_, "default", nullptr, nullptr, tip.c_str(), -1, nullptr,
                                  nullptr, nullptr, err, sizeof err),
            -1);
  EXPECT_NE(std::string(err), "");
}

TEST_F(CApi, BorrowStaysValidAfterItsHandleIsFreed) {
  std::string k = Key(30);
  ASSERT_GT(PutChain({k}), 0);
  const Borrowed b = BorrowOne(k);
  ASSERT_NE(b.borrow, nullptr);
  const uint8_t** ptrs = b.ptrs;
  const size_t* lens = b.lens;
  wmbt_kv_borrow_t* borrow = b.borrow;
  wmbt_kv_free(handle_);
  handle_ = nullptr;
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(ptrs[0]), lens[0]),
            "payload-" + k.substr(0, 8));
  wmbt_kv_release_borrow(borrow);
  handle_ = OpenStore(dir_);  // embedded: the directory is free again; else a daemon restart
  ASSERT_NE(handle_, nullptr) << LastError();
  EXPECT_EQ(Lookup({k}), 1u);
}

// A forked child (Python's multiprocessing forks by default) inherits the parent's handles: using
// one there would write into the parent's store files, or its socket or shared memory. The child
// is refused, and freeing the inherited handle or borrow there leaves the parent's alone.
TEST_F(CApi, AForkedChildCannotUseItsParentsHandle) {
  const std::string k = Key(31), child_key = Key(32);
  ASSERT_GT(PutChain({k}), 0);
  const char* keys[] = {k.c_str()};
  const Borrowed b = BorrowOne(k);
  ASSERT_NE(b.borrow, nullptr);
  const uint8_t** ptrs = b.ptrs;
  const size_t* lens = b.lens;
  wmbt_kv_borrow_t* borrow = b.borrow;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int failures = 0;
    if (PutChain({child_key}) != -1) failures |= 1;
    const std::string error = LastError();
    if (error.find("FAILED_PRECONDITION") == std::string::npos) failures |= 2;
    if (error.find("fork") == std::string::npos) failures |= 4;
    size_t matched = 7;
    if (wmbt_kv_lookup_block_prefix(handle_, "default", keys, 1, &matched, nullptr, 0) != -1 ||
        matched != 7)
      failures |= 8;
    // Nor does a handle it opens itself share the parent's store: the directory is another
    // process's (embedded; over a daemon the child's own handle is fine, not tried here).
    if (!DaemonMode() && wmbt_kv_open_embedded(dir_.c_str()) != nullptr) failures |= 16;
    wmbt_kv_release_borrow(borrow);
    wmbt_kv_free(handle_);
    _exit(failures);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "bit 1: the put was taken; 2, 4: its error; 8: a lookup; 16: an open shared the store";
  // The parent's handle and borrow are as they were; nothing the child tried landed.
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(ptrs[0]), lens[0]),
            "payload-" + k.substr(0, 8));
  wmbt_kv_release_borrow(borrow);
  EXPECT_EQ(Lookup({k}), 1u);
  EXPECT_EQ(Lookup({child_key}), 0u);
  EXPECT_GT(PutChain({child_key}), 0) << LastError();
}

// Within one process, a second handle on an embedded data directory shares the first one's store
// (as two handles on one daemon do): an engine may open a handle per model in every mode. With
// other store settings it is refused, naming the setting. In daemon mode the daemon owns the
// directory: an engine opening it embedded is refused.
TEST_F(CApi, ASecondHandleOnADataDirectorySharesItsStoreInThisProcessOnly) {
  if (DaemonMode()) {
    EXPECT_EQ(wmbt_kv_open_embedded(dir_.c_str()), nullptr);
    EXPECT_NE(LastError().find("FAILED_PRECONDITION"), std::string::npos) << LastError();
    return;
  }
  const char* names[] = {"WMBT_KV_DATA_DIR", "WMBT_KV_FINGERPRINT"};
  const char* values[] = {dir_.c_str(), "0123456789abcdef01234567"};
  wmbt_kv_handle_t* second = wmbt_kv_open_with_settings(names, values, 2);
  ASSERT_NE(second, nullptr) << LastError();
  const std::string k = Key(33);
  const char* keys[] = {k.c_str()};
  const uint8_t* payloads[] = {Bytes("other model")};
  const size_t lens[] = {11};
  ASSERT_GT(wmbt_kv_put_kv_blocks(second, "default", keys, payloads, lens, 1), 0) << LastError();
  EXPECT_EQ(Lookup({k}), 0u) << "the fingerprint is the handle's own";
  ASSERT_GT(PutChain({k}), 0);
  EXPECT_EQ(Lookup({k}), 1u);
  wmbt_kv_handle_t* third = wmbt_kv_open_embedded(dir_.c_str());  // the same store, at once
  ASSERT_NE(third, nullptr) << LastError();
  size_t matched = 0;
  ASSERT_EQ(wmbt_kv_lookup_block_prefix(third, "default", keys, 1, &matched, nullptr, 0), 0);
  EXPECT_EQ(matched, 1u);
  wmbt_kv_free(third);
  const char* other_names[] = {"WMBT_KV_DATA_DIR", "WMBT_KV_CACHE_BYTES"};
  const char* other_values[] = {dir_.c_str(), "64M"};
  EXPECT_EQ(wmbt_kv_open_with_settings(other_names, other_values, 2), nullptr);
  EXPECT_NE(LastError().find("already open in this process with another WMBT_KV_CACHE_BYTES"),
            std::string::npos)
      << LastError();
  wmbt_kv_free(second);
}

// A misspelt variable is ignored (the default applies), so the library says so on stderr: once
// per name and process however many handles are opened.
TEST(CApiEnvironment, AnUnknownSettingIsWarnedAboutOncePerName) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "wombatkv-capi-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  setenv("WMBT_KV_CAHCE_BYTES", "1G", 1);
  testing::internal::CaptureStderr();
  for (int i = 0; i < 2; ++i) {
    wmbt_kv_handle_t* h = wmbt_kv_open_embedded(tmpl.c_str());
    EXPECT_NE(h, nullptr) << LastError();
    wmbt_kv_free(h);
  }
  const std::string err = testing::internal::GetCapturedStderr();
  unsetenv("WMBT_KV_CAHCE_BYTES");
  std::filesystem::remove_all(tmpl);
  const std::string warning =
      "libwombatkv [warn] WMBT_KV_CAHCE_BYTES is not a WombatKV setting and is ignored (did you "
      "mean WMBT_KV_CACHE_BYTES?)";
  const size_t at = err.find(warning);
  EXPECT_NE(at, std::string::npos) << err;
  EXPECT_EQ(err.find(warning, at + 1), std::string::npos) << "warned twice: " << err;
}

// WMBT_KV_TCP is where wombatkvd listens; an engine with it and no WMBT_KV_TCP_ADDR opens a store
// of its own, which it most likely did not mean: the library says so (once), naming the variable
// to set. Opened embedded on purpose (wmbt_kv_open_embedded), nothing is said.
TEST(CApiEnvironment, TheDaemonsListenerVariableWithoutTheClientsIsWarnedAbout) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "wombatkv-capi-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  for (const char* v : {"WMBT_KV_REMOTE_PREFIX", "WMBT_KV_TCP_ADDR", "WMBT_KV_HTTP_ADDR"})
    unsetenv(v);
  setenv("WMBT_KV_TCP", "0.0.0.0:7070", 1);
  testing::internal::CaptureStderr();
  wmbt_kv_handle_t* h = wmbt_kv_open_embedded(tmpl.c_str());
  EXPECT_NE(h, nullptr) << LastError();
  wmbt_kv_free(h);
  const std::string on_purpose = testing::internal::GetCapturedStderr();
  setenv("WMBT_KV_DATA_DIR", tmpl.c_str(), 1);
  testing::internal::CaptureStderr();
  for (int i = 0; i < 2; ++i) {
    h = wmbt_kv_init_from_env();
    EXPECT_NE(h, nullptr) << LastError();
    wmbt_kv_free(h);
  }
  const std::string err = testing::internal::GetCapturedStderr();
  unsetenv("WMBT_KV_TCP");
  unsetenv("WMBT_KV_DATA_DIR");
  std::filesystem::remove_all(tmpl);
  const std::string warning =
      "WMBT_KV_TCP is set, which only wombatkvd reads (where it listens), and WMBT_KV_TCP_ADDR is "
      "not: this process opens an embedded store of its own. To use that daemon, set "
      "WMBT_KV_TCP_ADDR.";
  EXPECT_EQ(on_purpose.find("WMBT_KV_TCP is set"), std::string::npos) << on_purpose;
  const size_t at = err.find(warning);
  EXPECT_NE(at, std::string::npos) << err;
  EXPECT_EQ(err.find(warning, at + 1), std::string::npos) << "warned twice: " << err;
}

// With WMBT_KV_LOG_LEVEL=info the library says which backend a handle got (an operator checking
// that the environment chose the daemon and not an embedded store); at the default level, nothing.
TEST(CApiEnvironment, AHandleSaysWhichBackendItOpenedAtInfoLevel) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "wombatkv-capi-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  auto open_and_capture = [&] {
    testing::internal::CaptureStderr();
    wmbt_kv_handle_t* h = wmbt_kv_open_embedded(tmpl.c_str());
    EXPECT_NE(h, nullptr) << LastError();
    wmbt_kv_free(h);
    return testing::internal::GetCapturedStderr();
  };
  const std::string quiet = open_and_capture();
  // A chain, then L1 lost: the next open rebuilds from L2 and the store says so.
  wmbt_kv_handle_t* h = wmbt_kv_open_embedded(tmpl.c_str());
  ASSERT_NE(h, nullptr) << LastError();
  const std::string k = Key(7);
  const char* keys[] = {k.c_str()};
  const uint8_t payload[] = {1, 2, 3};
  const uint8_t* payloads[] = {payload};
  const size_t lens[] = {sizeof payload};
  EXPECT_EQ(wmbt_kv_put_kv_blocks(h, nullptr, keys, payloads, lens, 1), 3) << LastError();
  wmbt_kv_free(h);
  std::filesystem::remove_all(tmpl + "/l1");
  setenv("WMBT_KV_LOG_LEVEL", "info", 1);
  const std::string told = open_and_capture();
  unsetenv("WMBT_KV_LOG_LEVEL");
  std::filesystem::remove_all(tmpl);
  const std::string line = "libwombatkv [info] opened: embedded store in data directory " + tmpl;
  EXPECT_NE(told.find(line), std::string::npos) << told;
  EXPECT_EQ(quiet.find("opened:"), std::string::npos) << quiet;
  // The store's own lines carry the library's name too, not the CLI's.
  EXPECT_NE(told.find("libwombatkv [warn] L1 was empty or rebuilt"), std::string::npos) << told;
  EXPECT_EQ(("\n" + told).find("\nwombatkv ["), std::string::npos) << told;
}

TEST_F(CApi, NamespaceIsHonoured) {
  std::string a = Key(40), b = Key(41);
  ASSERT_GT(PutChain({a, b}, "ns-one"), 0);
  EXPECT_EQ(Lookup({a, b}, "ns-one"), 2u);
  EXPECT_EQ(Lookup({a, b}, "ns-two"), 0u);
  EXPECT_EQ(Lookup({a, b}, "default"), 0u);
  EXPECT_EQ(Lookup({a, b}, nullptr), 0u);
  EXPECT_EQ(Lookup({a, b}, ""), 0u);
  size_t matched = 0;
  const char* keys[] = {a.c_str()};
  for (const char* bad : {"..", "a/b", "has space", "x\n"}) {
    EXPECT_EQ(wmbt_kv_lookup_block_prefix(handle_, bad, keys, 1, &matched, nullptr, 0), -1) << bad;
  }
  std::string long_ns(65, 'n');
  EXPECT_EQ(wmbt_kv_lookup_block_prefix(handle_, long_ns.c_str(), keys, 1, &matched, nullptr, 0),
            -1);
}

TEST_F(CApi, ThreadsShareOneHandle) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 20;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        std::string k0 = Key(1000 + t * 100 + r * 2), k1 = Key(1001 + t * 100 + r * 2);
        std::string p0 = "t" + std::to_string(t) + "r" + std::to_string(r) + "-0";
        std::string p1 = "t" + std::to_string(t) + "r" + std::to_string(r) + "-1";
        const char* keys[] = {k0.c_str(), k1.c_str()};
        const uint8_t* payloads[] = {Bytes(p0), Bytes(p1)};
        size_t lens[] = {p0.size(), p1.size()};
        if (wmbt_kv_put_kv_blocks(handle_, "shared", keys, payloads, lens, 2) !=
            static_cast<int64_t>(p0.size() + p1.size()))
          failures++;
        size_t matched = 0;
        if (wmbt_kv_lookup_block_prefix(handle_, "shared", keys, 2, &matched, nullptr, 0) != 0 ||
            matched != 2)
          failures++;
        const uint8_t** ptrs = nullptr;
        const size_t* plens = nullptr;
        wmbt_kv_borrow_t* borrow = nullptr;
        if (wmbt_kv_get_kv_blocks_borrowed(handle_, "shared", keys, 2, &ptrs, &plens, &borrow) !=
                1 ||
            std::string(reinterpret_cast<const char*>(ptrs[1]), plens[1]) != p1)
          failures++;
        wmbt_kv_release_borrow(borrow);
        if (wmbt_kv_last_error()[0] != '\0') failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  char stats[4096];
  size_t needed = 0;
  ASSERT_EQ(wmbt_kv_stats_json(handle_, stats, sizeof stats, &needed), 0) << LastError();
  EXPECT_EQ(std::strlen(stats) + 1, needed);
}

TEST_F(CApi, StatsJsonReportsTheNeededSize) {
  size_t needed = 0;
  EXPECT_EQ(wmbt_kv_stats_json(handle_, nullptr, 0, &needed), -1);
  EXPECT_EQ(wmbt_kv_last_error_code(), WMBT_KV_ERR_RESOURCE_EXHAUSTED) << "as the header says";
  ASSERT_GT(needed, 2u);
  // Counters grow between the ask and the retry (here from 0 to hundreds of blocks and bytes in
  // many fields); the size the refusal gave still holds the JSON.
  std::vector<std::string> keys;
  for (unsigned i = 0; i < 200; ++i) keys.push_back(Key(5000 + i));
  ASSERT_GT(PutChain(keys), 0) << LastError();
  std::vector<char> buf(needed, 'Z');
  ASSERT_EQ(wmbt_kv_stats_json(handle_, buf.data(), buf.size(), &needed), 0) << LastError();
  std::string json(buf.data());
  EXPECT_EQ(json.size() + 1, needed) << "a success gives the bytes written";
  // One byte short: refused, naming the size the JSON needs.
  buf.assign(needed - 1, 'Z');
  EXPECT_EQ(wmbt_kv_stats_json(handle_, buf.data(), buf.size(), nullptr), -1);
  EXPECT_NE(LastError().find(std::to_string(needed)), std::string::npos) << LastError();
  EXPECT_TRUE(json.starts_with("{\"abi_version\":65541,")) << json;
  // Every StoreStats counter, as the header says (it once stopped at corruptions_detected).
  const auto parsed = nlohmann::json::parse(json);
  for (const wombatkv::StoreStatsField& f : wombatkv::kStoreStatsFields) {
    EXPECT_TRUE(parsed.contains(f.name)) << f.name << " missing from " << json;
  }
  // The publishes above were made durable by the local L2's journal (an S3 L2 has none).
  if (parsed["l2"].get<std::string>().starts_with("file://")) {
    EXPECT_GT(parsed["l2_journal_syncs"].get<uint64_t>(), 0u) << json;
    EXPECT_GE(parsed["l2_journal_records_synced"].get<uint64_t>(),
              parsed["l2_journal_syncs"].get<uint64_t>());
  }
}

TEST_F(CApi, FingerprintDigestMatchesTheEnvelopeAndScopesBlocks) {
  char fp[WMBT_KV_FINGERPRINT_HEX_BUF];
  ASSERT_EQ(wmbt_kv_fingerprint_digest("m", "t", "bf16", 2, 1, "r8", fp), 0);
  wombatkv::FingerprintSpec spec;
  spec.model_id = "m";
  spec.tokenizer_id = "t";
  spec.kv_dtype = "bf16";
  spec.tensor_parallel = 2;
  spec.pipeline_parallel = 1;
  spec.lora = "r8";
  EXPECT_EQ(std::string(fp), spec.Digest().ToHex()) << "the C digest is FingerprintSpec's";
  std::string k = Key(50);
  const char* keys[] = {k.c_str()};
  const uint8_t* payloads[] = {Bytes("fpb")};
  size_t lens[] = {3};
  ASSERT_EQ(wmbt_kv_put_blocks_ex(handle_, "default", fp, keys, nullptr, payloads, lens, 1,
                                  nullptr, nullptr, 0),
            0);
  ASSERT_EQ(wmbt_kv_publish_chain(handle_, "default", fp, nullptr, k.c_str(), -1, nullptr, nullptr,
                                  nullptr, nullptr, 0),
            0);
  size_t matched = 0;
  EXPECT_EQ(wmbt_kv_lookup_block_prefix_ex(handle_, "default", fp, keys, 1, &matched, nullptr, 0),
            0);
  EXPECT_EQ(matched, 1u);
  EXPECT_EQ(Lookup({k}), 0u) << "the handle's default fingerprint is another scope";
}

// SPEC §2's free-form extras: part of the digest, in any order; none = the plain digest.
TEST_F(CApi, FingerprintExtrasAreDigestedInAnyOrder) {
  char plain[WMBT_KV_FINGERPRINT_HEX_BUF], none[WMBT_KV_FINGERPRINT_HEX_BUF];
  char ab[WMBT_KV_FINGERPRINT_HEX_BUF], ba[WMBT_KV_FINGERPRINT_HEX_BUF];
  ASSERT_EQ(wmbt_kv_fingerprint_digest("m", "t", "bf16", 1, 1, nullptr, plain), 0);
  ASSERT_EQ(
      wmbt_kv_fingerprint_digest_extras("m", "t", "bf16", 1, 1, nullptr, nullptr, nullptr, 0, none),
      0)
      << LastError();
  EXPECT_STREQ(none, plain);
  const char* names[] = {"block_size", "rope"};
  const char* values[] = {"16", ""};
  const char* names_ba[] = {"rope", "block_size"};
  const char* values_ba[] = {"", "16"};
  ASSERT_EQ(
      wmbt_kv_fingerprint_digest_extras("m", "t", "bf16", 1, 1, nullptr, names, values, 2, ab), 0)
      << LastError();
  ASSERT_EQ(wmbt_kv_fingerprint_digest_extras("m", "t", "bf16", 1, 1, nullptr, names_ba, values_ba,
                                              2, ba),
            0);
  EXPECT_STREQ(ab, ba);
  EXPECT_STRNE(ab, plain);
  wombatkv::FingerprintSpec spec;
  spec.model_id = "m";
  spec.tokenizer_id = "t";
  spec.kv_dtype = "bf16";
  spec.extras = {{"block_size", "16"}, {"rope", ""}};
  EXPECT_EQ(std::string(ab), spec.Digest().ToHex()) << "the C digest is FingerprintSpec's";
  // Another value is another model.
  const char* values2[] = {"32", ""};
  char other[WMBT_KV_FINGERPRINT_HEX_BUF];
  ASSERT_EQ(
      wmbt_kv_fingerprint_digest_extras("m", "t", "bf16", 1, 1, nullptr, names, values2, 2, other),
      0);
  EXPECT_STRNE(other, ab);
}

TEST_F(CApi, FingerprintExtrasRefuseBadPairs) {
  char fp[WMBT_KV_FINGERPRINT_HEX_BUF];
  const char* names[] = {"a", "a"};
  const char* values[] = {"1", "2"};
  EXPECT_EQ(
      wmbt_kv_fingerprint_digest_extras("m", "t", "bf16", 1, 1, nullptr, names, values, 2, fp), -1);
  EXPECT_NE(LastError().find("extra_names[1] \"a\" is given twice"), std::string::npos)
      << LastError();
  const char* empty[] = {""};
  EXPECT_EQ(
      wmbt_kv_fingerprint_digest_extras("m", "t", "bf16", 1, 1, nullptr, empty, values, 1, fp), -1);
  EXPECT_NE(LastError().find("extra_names[0] is empty"), std::string::npos) << LastError();
  const char* null_value[] = {nullptr};
  EXPECT_EQ(
      wmbt_kv_fingerprint_digest_extras("m", "t", "bf16", 1, 1, nullptr, names, null_value, 1, fp),
      -1);
  EXPECT_NE(LastError().find("extra_values[0]"), std::string::npos) << LastError();
  EXPECT_EQ(
      wmbt_kv_fingerprint_digest_extras("m", "t", "bf16", 1, 1, nullptr, nullptr, values, 1, fp),
      -1);
  EXPECT_NE(LastError().find("extra_names"), std::string::npos) << LastError();
  // A huge count is refused before the arrays are read (they hold one pair here).
  EXPECT_EQ(wmbt_kv_fingerprint_digest_extras("m", "t", "bf16", 1, 1, nullptr, names, values,
                                              SIZE_MAX, fp),
            -1);
  EXPECT_NE(LastError().find("over the limit of 256"), std::string::npos) << LastError();
}

}  // namespace
