// SPEC §5 G2 (same daemon), with real processes: one wombatkvd, one writer process and several
// observer processes, each with its own connection (TCP, or its own shared-memory segment).
//   - Visibility: after the writer's publish is acknowledged, every observer's next lookup and
//     get return the whole chain, byte for byte.
//   - Order: while the writer extends one chain id publish after publish, every observer's
//     lookups and ListChains versions never go backwards (monotonic reads).
//
// The clients are forked before the test process starts any thread, open their Store through
// OpenClientStore (the selection the C ABI and the CLI use), and take one command per line from
// the test over a pipe, answering "ok ..." or "fail <why>": the test process itself never talks
// to the daemon, so nothing it holds can hide a visibility bug.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "connect/open_client_store.h"
#include "tests/daemon/client_process.h"
#include "tests/daemon/daemon_test_util.h"

namespace wombatkv::testing {
namespace {

constexpr size_t kObservers = 3;
constexpr uint64_t kVisibilityRounds = 25;
constexpr uint64_t kOrderVersions = 40;
constexpr size_t kPayloadBytes = 2048;
constexpr std::string_view kNs = "g2";
constexpr uint64_t kOrderChain = 777;
// An observer that has not seen the last version after this many reads reports a failure rather
// than spin forever (the writer has finished by then; a read that still misses it is a G2 bug).
constexpr uint64_t kWatchReadsMax = 2'000'000;

// ---- what the clients do -----------------------------------------------------------------------

Fingerprint G2Fp() { return Fp(0x62); }

// The chain of round `i` of the visibility phase: 3 blocks.
std::vector<BlockKey> RoundKeys(uint64_t i) { return {Key(i, 0), Key(i, 1), Key(i, 2)}; }

std::string Check(Store& store, uint64_t i) {
  std::vector<BlockKey> keys = RoundKeys(i);
  auto matched = store.LookupPrefix(kNs, G2Fp(), keys);
  if (!matched.ok()) return "fail: lookup: " + matched.status().ToString();
  if (*matched != keys.size())
    return "fail: round " + std::to_string(i) + ": lookup matched " + std::to_string(*matched) +
           " of " + std::to_string(keys.size()) + " blocks of an acknowledged publish";
  auto got = store.GetBlocks(kNs, G2Fp(), keys);
  if (!got.ok()) return "fail: get: " + got.status().ToString();
  for (size_t j = 0; j < keys.size(); ++j) {
    const std::string want = Payload(i * 1000 + j, kPayloadBytes);
    if (AsChars(got->payload(j)) != want)
      return "fail: round " + std::to_string(i) + ": block " + std::to_string(j) + " differs";
  }
  return "ok";
}

std::string PublishRound(Store& store, uint64_t i) {
  auto keys = PutAndPublish(store, kNs, G2Fp(), i, 3, kPayloadBytes);
  if (!keys.ok()) return "fail: publish: " + keys.status().ToString();
  return "ok";
}

// The order phase: the chain kOrderChain grows by one block per publish, so version v has v
// blocks and a lookup of all kOrderVersions keys matches exactly the version it saw.
std::vector<BlockKey> OrderKeys() {
  std::vector<BlockKey> keys;
  for (uint64_t v = 0; v < kOrderVersions; ++v) keys.push_back(Key(kOrderChain, v));
  return keys;
}

std::string Extend(Store& store) {
  const std::vector<BlockKey> keys = OrderKeys();
  const ChainId id = Key(kOrderChain, 999'999);
  for (uint64_t v = 0; v < kOrderVersions; ++v) {
    const std::string payload = Payload(kOrderChain * 1000 + v, kPayloadBytes);
    BlockPut p;
    p.key = keys[v];
    p.parent = v == 0 ? BlockKey{} : keys[v - 1];
    p.payload = AsBytes(payload);
    auto put = store.PutBlocks(kNs, G2Fp(), std::span<const BlockPut>(&p, 1));
    if (!put.ok()) return "fail: put: " + put.status().ToString();
    auto version = store.PublishChain(kNs, G2Fp(), id, keys[v]);
    if (!version.ok()) return "fail: publish: " + version.status().ToString();
    if (*version != v + 1) return "fail: publish returned version " + std::to_string(*version);
  }
  return "ok";
}

// Reads until it has seen the last version; every read must be at least the one before.
std::string Watch(Store& store, int out) {
  const std::vector<BlockKey> keys = OrderKeys();
  uint64_t last_len = 0;
  uint64_t last_version = 0;
  uint64_t distinct = 0;
  bool announced = false;
  for (uint64_t reads = 0; reads < kWatchReadsMax; ++reads) {
    auto matched = store.LookupPrefix(kNs, G2Fp(), keys);
    if (!matched.ok()) return "fail: lookup: " + matched.status().ToString();
    if (*matched < last_len)
      return "fail: lookup went back from " + std::to_string(last_len) + " to " +
             std::to_string(*matched) + " blocks";
    if (*matched > last_len) ++distinct;
    last_len = *matched;
    uint64_t version = 0;
    auto listed = store.ListChains(kNs);
    if (!listed.ok()) return "fail: ListChains: " + listed.status().ToString();
    for (const ChainState& c : *listed) {
      if (c.chain_id == Key(kOrderChain, 999'999)) version = c.version;
    }
    if (version < last_version)
      return "fail: ListChains version went back from " + std::to_string(last_version) + " to " +
             std::to_string(version);
    last_version = version;
    if (!announced) {
      WriteLine(out, "watching");  // the writer starts only once every observer reads
      announced = true;
    }
    if (last_len == kOrderVersions && last_version == kOrderVersions)
      return "ok " + std::to_string(distinct);
  }
  return "fail: never saw version " + std::to_string(kOrderVersions) + " (last " +
         std::to_string(last_version) + ")";
}

int ClientMain(const Config& config, int in, int out) {
  ClientStoreSetup setup;
  setup.client_name = "g2-test pid " + std::to_string(getpid());
  auto opened = OpenClientStore(config, setup);
  if (!opened.ok()) {
    WriteLine(out, "fail: connect: " + opened.status().ToString());
    return 1;
  }
  Store& store = *opened->store;
  if (opened->backend == ClientBackend::kEmbedded) {
    WriteLine(out, "fail: the config selected the embedded store, not the daemon");
    return 1;
  }
  WriteLine(out, "ready");
  for (;;) {
    std::istringstream cmd(ReadLine(in));
    std::string op;
    uint64_t arg = 0;
    cmd >> op >> arg;
    if (op == "check") {
      WriteLine(out, Check(store, arg));
    } else if (op == "publish") {
      WriteLine(out, PublishRound(store, arg));
    } else if (op == "extend") {
      WriteLine(out, Extend(store));
    } else if (op == "watch") {
      WriteLine(out, Watch(store, out));
    } else {
      return 0;  // "quit" or EOF
    }
  }
}

// ---- the test ----------------------------------------------------------------------------------

enum class Transport { kTcp, kShm };

class DaemonG2Test : public ::testing::TestWithParam<Transport> {};

TEST_P(DaemonG2Test, AcknowledgedWritesAreSeenByEveryClientAndPublishesInOrder) {
  TempDir dir;
  const std::string prefix = "g2-" + std::to_string(getpid());
  auto daemon = StartDaemon(dir, {"--prefix", prefix, "--run-dir", dir.path(), "--workers", "8",
                                  "--shm-data-bytes", "64M"});
  ASSERT_TRUE(daemon->running()) << daemon->stderr_text();

  Config config = Config::Defaults([](const char*) { return std::nullopt; });
  config.ns = std::string(kNs);
  if (GetParam() == Transport::kTcp) {
    ASSERT_TRUE(config.Set("WMBT_KV_TCP_ADDR", daemon->tcp().at(0)).ok());
  } else {
    ASSERT_TRUE(config.Set("WMBT_KV_REMOTE_PREFIX", prefix).ok());
    ASSERT_TRUE(config.Set("WMBT_KV_RUN_DIR", dir.path()).ok());
  }

  auto body = [&config](int in, int out) { return ClientMain(config, in, out); };
  ClientProcess writer(body);
  std::vector<std::unique_ptr<ClientProcess>> observers;
  for (size_t i = 0; i < kObservers; ++i) observers.push_back(std::make_unique<ClientProcess>(body));
  ASSERT_TRUE(writer.started());
  ASSERT_EQ(writer.Read(), "ready");
  for (auto& o : observers) {
    ASSERT_TRUE(o->started());
    ASSERT_EQ(o->Read(), "ready");
  }

  // Visibility: the observers' connections are open (and warm) before each publish, so a stale
  // view anywhere between them and the store shows up as a miss.
  for (uint64_t round = 1; round <= kVisibilityRounds; ++round) {
    for (auto& o : observers) {
      std::string before = o->Ask("check " + std::to_string(round));
      ASSERT_NE(before, "ok") << "round " << round << " is visible before it was published";
    }
    ASSERT_EQ(writer.Ask("publish " + std::to_string(round)), "ok") << "round " << round;
    for (size_t i = 0; i < observers.size(); ++i) {
      EXPECT_EQ(observers[i]->Ask("check " + std::to_string(round)), "ok")
          << "observer " << i << ", round " << round;
    }
  }

  // Order: every observer reads in a loop while the writer publishes kOrderVersions versions.
  for (auto& o : observers) o->Send("watch");
  for (auto& o : observers) ASSERT_EQ(o->Read(), "watching");
  EXPECT_EQ(writer.Ask("extend"), "ok");
  for (size_t i = 0; i < observers.size(); ++i) {
    std::string result = observers[i]->Read();
    EXPECT_EQ(result.rfind("ok ", 0), 0u) << "observer " << i << ": " << result;
  }

  writer.Send("quit");
  for (auto& o : observers) o->Send("quit");
  EXPECT_EQ(daemon->Stop(SIGTERM), 0) << daemon->stderr_text();
}

INSTANTIATE_TEST_SUITE_P(Transports, DaemonG2Test,
                         ::testing::Values(Transport::kTcp, Transport::kShm),
                         [](const auto& info) {
                           return info.param == Transport::kTcp ? std::string("Tcp")
                                                                : std::string("Shm");
                         });

}  // namespace
}  // namespace wombatkv::testing
