// Issue 4: "SIGKILL a client holding borrows; its pins are released" — with a real wombatkvd and
// its store, not a transport test double (ShmProcess.* covers the transport alone). A client
// process attached over shared memory reads a chain of 256 KiB blocks: they live in the
// namespace's payload arena and are passed by reference, so while the client's borrow lives the
// daemon holds their Buffers for it — which keeps their arena ranges from reuse and their cache
// entries from eviction (docs/shm.md, "Zero-copy gets"). The client is then killed with SIGKILL,
// borrow held. The daemon's /metrics must show the hold while the client lives and none once it
// is gone, and the daemon serves the next client.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "connect/open_client_store.h"
#include "tests/daemon/client_process.h"
#include "tests/daemon/daemon_test_util.h"

namespace wombatkv::testing {
namespace {

constexpr std::string_view kNs = "pins";
constexpr size_t kBlocks = 4;
constexpr size_t kPayloadBytes = 256 << 10;  // >= 64 KiB: in the arena, passed by reference
// How many /metrics reads a release may take before the test fails (a bound for a hang, not a
// time the daemon must meet: each read is a round trip to the daemon).
constexpr int kMetricReadsMax = 20'000;

// Puts and publishes the chain, reads it back borrowed, says "holding" and keeps the borrow until
// it is killed (or the test closes the pipe).
int HoldingClient(const Config& config, int in, int out) {
  ClientStoreSetup setup;
  setup.client_name = "pins-test pid " + std::to_string(getpid());
  auto opened = OpenClientStore(config, setup);
  if (!opened.ok() || opened->backend != ClientBackend::kShm) {
    WriteLine(out, "fail: not attached over shared memory: " +
                       (opened.ok() ? std::string("another backend") : opened.status().ToString()));
    return 1;
  }
  Store& store = *opened->store;
  auto keys = PutAndPublish(store, kNs, Fp(7), 1, kBlocks, kPayloadBytes);
  if (!keys.ok()) {
    WriteLine(out, "fail: publish: " + keys.status().ToString());
    return 1;
  }
  auto held = store.GetBlocks(kNs, Fp(7), *keys);
  if (!held.ok() || held->size() != kBlocks) {
    WriteLine(out, "fail: get: " + (held.ok() ? std::string("short") : held.status().ToString()));
    return 1;
  }
  WriteLine(out, "holding");
  (void)ReadLine(in);  // until killed
  return 0;
}

// The daemon's /metrics page; "" when it does not answer.
std::string Metrics(const std::string& http_base) {
  httplib::Client http(http_base);
  auto page = http.Get("/metrics");
  return page && page->status == 200 ? page->body : std::string();
}

TEST(DaemonPins, ASigkilledShmClientsBorrowsAreReleasedByTheDaemon) {
  TempDir dir;
  const std::string prefix = "pins-" + std::to_string(getpid());
  auto daemon =
      StartDaemon(dir, {"--prefix", prefix, "--run-dir", dir.path(), "--http", "127.0.0.1:0",
                        "--shm-data-bytes", "64M", "--shm-arena-bytes", "64M"});
  ASSERT_TRUE(daemon->running()) << daemon->stderr_text();
  ASSERT_FALSE(daemon->http().empty()) << daemon->output();

  Config config = Config::Defaults([](const char*) { return std::nullopt; });
  ASSERT_TRUE(config.Set("WMBT_KV_REMOTE_PREFIX", prefix).ok());
  ASSERT_TRUE(config.Set("WMBT_KV_RUN_DIR", dir.path()).ok());
  ClientProcess holder([&config](int in, int out) { return HoldingClient(config, in, out); });
  ASSERT_TRUE(holder.started());
  ASSERT_EQ(holder.Read(), "holding");

  // While the client lives, the daemon holds its blocks for it.
  std::string page = Metrics(daemon->http());
  ASSERT_FALSE(page.empty());
  EXPECT_EQ(MetricValue(page, "wombatkv_shm_shared_payloads_live"), double{kBlocks}) << page;
  EXPECT_EQ(MetricValue(page, "wombatkv_shm_shared_bytes_live"), double{kBlocks * kPayloadBytes})
      << page;
  EXPECT_EQ(MetricValue(page, "wombatkv_shm_clients"), 1) << page;

  holder.Kill();  // borrow held: the engine crashed
  int reads = 0;
  for (; reads < kMetricReadsMax; ++reads) {
    page = Metrics(daemon->http());
    if (MetricValue(page, "wombatkv_shm_shared_payloads_live") == 0 &&
        MetricValue(page, "wombatkv_shm_shared_bytes_live") == 0 &&
        MetricValue(page, "wombatkv_shm_response_regions_live") == 0 &&
        MetricValue(page, "wombatkv_shm_clients") == 0)
      break;
  }
  EXPECT_LT(reads, kMetricReadsMax) << "the killed client's pins were never released:\n" << page;

  // And the daemon serves the next client (over TCP and shared memory alike).
  ExpectServes(daemon->tcp().at(0));
  ClientProcess next([&config](int in, int out) { return HoldingClient(config, in, out); });
  ASSERT_TRUE(next.started());
  EXPECT_EQ(next.Read(), "holding");
  next.Kill();
  EXPECT_EQ(daemon->Stop(SIGTERM), 0) << daemon->stderr_text();
}

}  // namespace
}  // namespace wombatkv::testing
