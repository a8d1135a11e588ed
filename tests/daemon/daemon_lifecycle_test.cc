// The daemon's life: a stop (SIGTERM, or SIGKILL) under a write load keeps every acknowledged
// publish (G3) across a restart; clients reconnect by themselves; HTTP health, readiness and
// metrics.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>
#include <tuple>

#include "config/config.h"
#include "connect/open_client_store.h"
#include "tests/daemon/daemon_test_util.h"
#include "transport/tcp/tcp_server.h"

namespace wombatkv::testing {
namespace {

constexpr size_t kBlocks = 4;
constexpr size_t kPayloadBytes = 4096;

struct Acked {
  uint64_t chain;
  std::vector<BlockKey> keys;
};

// Writers put and publish chains until the daemon goes away; `acked` gets every chain whose
// publish returned OK. The stop signal is sent once `min_acked` publishes are in.
// The daemon did not start: it exited with `code`, its stderr saying `says`, and it loaded no
// store.
void ExpectRefused(DaemonProcess& daemon, int code, const std::string& says) {
  ASSERT_FALSE(daemon.running());
  EXPECT_EQ(daemon.exit_code(), code);
  EXPECT_NE(daemon.stderr_text().find(says), std::string::npos) << daemon.stderr_text();
  EXPECT_EQ(daemon.output().find("store:"), std::string::npos) << daemon.output();
}

void RunStopUnderLoad(int sig, int expected_exit) {
  TempDir dir;
  auto daemon = StartDaemon(dir, {"--shutdown-timeout", "60000"});
  ASSERT_TRUE(daemon->running()) << daemon->stderr_text();
  const std::string addr = daemon->tcp().at(0);

  std::mutex mu;
  std::condition_variable cv;
  std::vector<Acked> acked;
  std::atomic<int> failures{0};
  int finished = 0;  // guarded by mu
  std::vector<std::thread> writers;
  for (uint64_t w = 0; w < 4; ++w) {
    writers.emplace_back([&, w] {
      auto store = OpenRemote(addr);
      for (uint64_t i = 0; store.ok(); ++i) {
        const uint64_t chain = (w + 1) * 1'000'000 + i;
        auto keys = PutAndPublish(**store, "load", Fp(3), chain, kBlocks, kPayloadBytes);
        if (!keys.ok()) {
          // The daemon went away: Unavailable (the call may or may not have taken effect).
          if (keys.status().code() != Code::kUnavailable) failures.fetch_add(1);
          break;
        }
        std::lock_guard<std::mutex> g(mu);
        acked.push_back({chain, std::move(keys).value()});
        cv.notify_all();
      }
      std::lock_guard<std::mutex> g(mu);
      ++finished;
      cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return acked.size() >= 40 || finished == 4; });
    EXPECT_GE(acked.size(), 40u) << "the writers stopped before the signal";
  }
  EXPECT_EQ(daemon->Stop(sig), expected_exit) << daemon->output() << daemon->stderr_text();
  for (auto& t : writers) t.join();
  EXPECT_EQ(failures.load(), 0) << "only Unavailable is an acceptable failure when it stops";
  if (sig != SIGKILL) {
    EXPECT_NE(daemon->output().find("store closed"), std::string::npos) << daemon->output();
  }

  // Restart on the same data directory: every acknowledged chain is whole, byte for byte.
  auto again = StartDaemon(dir);
  ASSERT_TRUE(again->running()) << again->stderr_text();
  auto store = OpenRemote(again->tcp().at(0));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  for (const Acked& a : acked) {
    ExpectChainReadable(**store, "load", Fp(3), a.chain, a.keys, kPayloadBytes);
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_EQ(again->Stop(SIGTERM), 0);
}

TEST(DaemonLifecycle, SigtermUnderLoadExitsZeroAndKeepsEveryAcknowledgedPublish) {
  RunStopUnderLoad(SIGTERM, 0);
}

// Ctrl-C at a terminal stops it the same way.
TEST(DaemonLifecycle, SigintUnderLoadExitsZeroAndKeepsEveryAcknowledgedPublish) {
  RunStopUnderLoad(SIGINT, 0);
}

TEST(DaemonLifecycle, SigkillUnderLoadLosesNoAcknowledgedPublish) {
  RunStopUnderLoad(SIGKILL, 128 + SIGKILL);
}

// SIGHUP (sent by habit, for a reload or a log reopen) must not kill the daemon, and a SIGTERM
// delivered twice (timeout(1) signals the process and its group) must not cut the stop short.
TEST(DaemonLifecycle, SighupIsIgnoredAndARepeatedSigtermStillStopsGracefully) {
  TempDir dir;
  auto daemon = StartDaemon(dir);
  ASSERT_TRUE(daemon->running()) << daemon->stderr_text();
  ASSERT_EQ(::kill(daemon->pid(), SIGHUP), 0);
  ASSERT_EQ(::kill(daemon->pid(), SIGTERM), 0);
  ASSERT_TRUE(daemon->WaitForOutput("received SIGTERM: stopping")) << daemon->stderr_text();
  ::kill(daemon->pid(), SIGTERM);  // may find it gone already: then it proves nothing, harmlessly
  EXPECT_EQ(daemon->Stop(SIGTERM), 0) << daemon->output() << daemon->stderr_text();
  EXPECT_NE(daemon->output().find("wombatkvd: stopped"), std::string::npos) << daemon->output();
  EXPECT_NE(daemon->stderr_text().find("received SIGHUP while running: ignored"), std::string::npos)
      << daemon->stderr_text();
}

// A stop asked for while the store opens — here on an S3 endpoint that accepts connections and
// never answers, which the open would wait out through every retry (minutes) — ends the process
// at once, before it serves anything.
TEST(DaemonLifecycle, SigtermWhileTheStoreOpensExitsWithoutWaitingForIt) {
  TempDir dir;
  auto silent = tcp::BoundListeners::Bind({"127.0.0.1:0"});  // listens; never answers
  ASSERT_TRUE(silent.ok()) << silent.status().ToString();
  const std::vector<std::string> args = {
      "--data-dir",    dir.path() + "/data",
      "--tcp",         "127.0.0.1:0",
      "--http",        "127.0.0.1:0",
      "--s3-endpoint", "http://" + (*silent)->listeners().at(0).address,
      "--bucket",      "unanswered"};
  DaemonProcess daemon(args, {}, dir.path() + "/stderr.log", "wombatkvd: http on");
  ASSERT_TRUE(daemon.running()) << daemon.stderr_text();
  EXPECT_EQ(daemon.Stop(SIGTERM), 0) << daemon.stderr_text();
  EXPECT_NE(daemon.stderr_text().find("received SIGTERM while starting: exiting"),
            std::string::npos)
      << daemon.stderr_text();
  EXPECT_EQ(daemon.output().find("wombatkvd: ready"), std::string::npos) << daemon.output();
}

// Mistakes in the shared-memory listener's settings are found before the store opens (which can
// take minutes on S3) and before any listener accepts a client.
TEST(DaemonLifecycle, AnUnknownShmGroupOrRunDirFailsBeforeTheStoreOpens) {
  TempDir dir;
  for (const auto& [flags, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--prefix", "p", "--shm-group", "no-such-group-here"}, "no group named"},
           {{"--prefix", "p", "--run-dir", dir.path() + "/absent"}, "is not a directory"}}) {
    auto daemon = StartDaemon(dir, flags);
    ExpectRefused(*daemon, 2, says);  // a bad setting, like a bad flag
    EXPECT_EQ(daemon->output().find("listening"), std::string::npos) << daemon->output();
  }
}

// A TCP port or a shared-memory prefix in use is found before the store opens (minutes on a
// large S3 store), and the daemon exits without loading anything.
TEST(DaemonLifecycle, AListenerInUseFailsBeforeTheStoreOpens) {
  TempDir dir, other;
  auto taken = tcp::BoundListeners::Bind({"127.0.0.1:0"});  // another program's port
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  const std::string port_in_use = (*taken)->listeners().at(0).address;
  auto serving = StartDaemon(other, {"--prefix", "in-use", "--run-dir", other.path()});
  ASSERT_TRUE(serving->running()) << serving->stderr_text();
  for (const auto& [tcp, flags, says] :
       std::vector<std::tuple<std::string, std::vector<std::string>, std::string>>{
           {port_in_use, {}, "choose another --tcp port"},
           {"127.0.0.1:0",
            {"--prefix", "in-use", "--run-dir", other.path()},
            "another wombatkvd already serves this prefix"}}) {
    auto daemon = StartDaemon(dir, flags, {}, tcp);
    ExpectRefused(*daemon, 1, says);
  }
  EXPECT_EQ(serving->Stop(SIGTERM), 0) << serving->stderr_text();
}

// Log lines carry their time (UTC, to the millisecond), except into the systemd journal, which
// stamps each line itself (JOURNAL_STREAM names stderr's device and inode).
TEST(DaemonLifecycle, LogLinesCarryTheirTimeUnlessTheJournalTakesThem) {
  const std::regex stamp(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z wombatkvd \[info\] setting )");
  for (const bool journal : {false, true}) {
    SCOPED_TRACE(journal ? "into the journal" : "into a file");
    TempDir dir;
    DaemonProcess::Env env;
    if (journal) {
      const std::string path = dir.path() + "/stderr.log";  // StartDaemon's, truncated in place
      std::ofstream(path) << "\n";
      struct stat st;
      ASSERT_EQ(::stat(path.c_str(), &st), 0);
      env.emplace_back("JOURNAL_STREAM",
                       std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino));
    }
    auto daemon = StartDaemon(dir, {"--log-level", "info"}, env);
    ASSERT_TRUE(daemon->running()) << daemon->stderr_text();
    EXPECT_EQ(daemon->Stop(SIGTERM), 0);
    std::istringstream err(daemon->stderr_text());
    int settings = 0;
    for (std::string line; std::getline(err, line);) {
      if (line.find("[info] setting ") == std::string::npos) continue;
      ++settings;
      EXPECT_EQ(std::regex_search(line, stamp), !journal) << line;
      if (journal) {
        EXPECT_TRUE(line.starts_with("wombatkvd [info] setting ")) << line;
      }
    }
    EXPECT_GT(settings, 10) << daemon->stderr_text();
  }
}

// A flag overrides its variable, even one whose value would not parse: an operator fixes a bad
// environment (a unit file's, a container's) from the command line.
TEST(DaemonLifecycle, AFlagOverridesAVariableWhoseValueWouldNotParse) {
  TempDir dir;
  const DaemonProcess::Env bad_env = {{"WMBT_KV_CACHE_BYTES", "1.5G"},
                                      {"WMBT_KV_GC_GRACE", "soon"},
                                      {"WMBT_KV_AUTH_TOKENS", "=ns"},
                                      {"AWS_ENDPOINT_URL", "minio:9000"}};  // no scheme
  auto refused = StartDaemon(dir, {}, bad_env);
  ExpectRefused(*refused, 2, "WMBT_KV_");

  auto daemon = StartDaemon(
      dir,
      {"--cache-bytes", "16M", "--gc-grace", "1h", "--auth-token", "t0ken", "--s3-endpoint",
       ""},  // cleared: and the AWS variable standing in for it is not read either
      bad_env);
  ASSERT_TRUE(daemon->running()) << daemon->stderr_text();
  auto store = OpenRemote(daemon->tcp().at(0), "t0ken");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(daemon->Stop(SIGTERM), 0) << daemon->stderr_text();
}

// The client-only settings are not the daemon's: their variables are not read (a value only a
// client would parse never stops it), and their flags, long or short, are refused as such.
TEST(DaemonLifecycle, ClientSettingsAreNeitherReadNorTaken) {
  TempDir dir;
  auto daemon = StartDaemon(dir, {},
                            {{"WMBT_KV_FINGERPRINT", "xyz"},
                             {"WMBT_KV_NAMESPACE", "a/b"},
                             {"WMBT_KV_TCP_ADDR", "bad"},
                             {"WMBT_KV_CLIENT_POLL", "7"},
                             {"WMBT_KV_REQUEST_TIMEOUT_MS", "abc"}});
  ASSERT_TRUE(daemon->running()) << daemon->stderr_text();
  EXPECT_EQ(daemon->Stop(SIGTERM), 0) << daemon->stderr_text();
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"-n", "x"}, {"--fingerprint", "00"}}) {
    auto refused = StartDaemon(dir, flags);
    ExpectRefused(*refused, 2, "is a client setting");
  }
}

// A --tcp list naming one address twice is a mistake in the list, not a port in use.
TEST(DaemonLifecycle, AnAddressListedTwiceIsRefusedAsSuch) {
  TempDir dir;
  std::string free_port;
  {
    auto probe = tcp::BoundListeners::Bind({"127.0.0.1:0"});
    ASSERT_TRUE(probe.ok()) << probe.status().ToString();
    free_port = (*probe)->listeners().at(0).address;
  }  // released: the daemon takes it (once)
  auto daemon = StartDaemon(dir, {}, {}, free_port + "," + free_port);
  ExpectRefused(*daemon, 2, "is listed twice");
}

TEST(DaemonLifecycle, AClientReconnectsByItselfAfterADaemonRestart) {
  TempDir dir;
  auto first = StartDaemon(dir);
  ASSERT_TRUE(first->running()) << first->stderr_text();
  const std::string addr = first->tcp().at(0);
  auto store = OpenRemote(addr);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto keys = PutAndPublish(**store, "re", Fp(4), 1, 3, 2000);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ(first->Stop(SIGTERM), 0);

  // While it is down: Unavailable, naming the daemon.
  auto down = (*store)->LookupPrefix("re", Fp(4), *keys);
  EXPECT_EQ(down.status().code(), Code::kUnavailable) << down.status().ToString();

  auto second = StartDaemon(dir, {}, {}, addr);  // same port
  ASSERT_TRUE(second->running()) << second->stderr_text();
  // The same RemoteStore, no reopen: the first call may still meet the dead connection.
  Result<size_t> found = Status::Unavailable("not tried");
  for (int attempt = 0; attempt < 2 && !found.ok(); ++attempt) {
    found = (*store)->LookupPrefix("re", Fp(4), *keys);
  }
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, 3u);
  ExpectChainReadable(**store, "re", Fp(4), 1, *keys, 2000);
  EXPECT_EQ(second->Stop(SIGTERM), 0);
}

TEST(DaemonLifecycle, HttpReportsHealthReadinessAndMetrics) {
  TempDir dir;
  auto daemon = StartDaemon(dir,
                            {"--http", "127.0.0.1:0", "--prefix", "metrics", "--run-dir", dir.path()},
                            {{"WMBT_KV_AUTH_TOKENS", "metrics-must-not-show-this"}});
  ASSERT_TRUE(daemon->running()) << daemon->stderr_text();
  ASSERT_FALSE(daemon->http().empty()) << daemon->output();
  ExpectServes(daemon->tcp().at(0));
  {  // one lookup over shared memory: counted apart from TCP's
    auto config =
        Config::FromLookup([](const char*) -> std::optional<std::string> { return std::nullopt; });
    ASSERT_TRUE(config.ok());
    config->remote_prefix = "metrics";
    config->run_dir = dir.path();
    auto shm = OpenClientStore(*config);
    ASSERT_TRUE(shm.ok()) << shm.status().ToString();
    const std::vector<BlockKey> keys = {Key(1, 1)};
    ASSERT_TRUE(shm->store->LookupPrefix("shm-ns", Fp(1), keys).ok());
  }
  httplib::Client http(daemon->http());
  auto health = http.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto ready = http.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  auto metrics = http.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  const std::string& page = metrics->body;
  for (const char* series :
       {"wombatkv_ready 1", "wombatkv_requests_total{op=\"PutBlocks\",transport=\"tcp\"} 1",
        "wombatkv_requests_total{op=\"PublishChain\",transport=\"tcp\"} 1",
        "wombatkv_requests_total{op=\"PublishChain\",transport=\"shm\"} 0",
        "wombatkv_requests_total{op=\"LookupPrefix\",transport=\"shm\"} 1",
        "wombatkv_request_duration_seconds_bucket{op=\"GetBlocks\",transport=\"tcp\",le=\"+Inf\"} "
        "1",
        "wombatkv_plane_hits_total{plane=\"l0\"} 3", "wombatkv_l0_chains 1",
        "wombatkv_tcp_connections_accepted_total 1", "wombatkv_cache_bytes ",
        "wombatkv_cache_budget_bytes 67108864" /* StartDaemon's --cache-bytes 64M */,
        "wombatkv_shm_clients 0", "wombatkv_shm_protocol_errors_total 0"}) {
    EXPECT_NE(page.find(series), std::string::npos) << series << "\n" << page;
  }
  EXPECT_EQ(page.find("metrics-must-not-show-this"), std::string::npos);
  EXPECT_EQ(daemon->Stop(SIGTERM), 0);
}

// docs/daemon.md, "Spinning": the daemon's event loop polls after every wake-up with work
// (WMBT_KV_TCP_POLL, on by default), also between the requests of two connections taking turns,
// which the lone-connection poll never serves while both send within its 1 ms windows: at least
// once per call, each being read in a wake-up of its own (the next is sent after the answer).
// That `--tcp-poll 0` leaves only the lone-connection poll is TcpServer's behaviour with `spin`
// off (tcp_transport_test.cc); the lone one does poll here once calls take over 1 ms (a loaded
// machine), so a count cannot tell the two settings apart in this process.
TEST(DaemonLifecycle, TheLoopPollsBetweenTwoClientsRequestsByDefault) {
  constexpr int kCalls = 40;
  TempDir dir;
  auto daemon = StartDaemon(dir, {"--http", "127.0.0.1:0"});
  ASSERT_TRUE(daemon->running()) << daemon->stderr_text();
  auto a = OpenRemote(daemon->tcp().at(0));
  auto b = OpenRemote(daemon->tcp().at(0));
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<BlockKey> keys = {Key(1, 1)};
  for (int i = 0; i < kCalls; ++i) {
    for (auto* store : {&*a, &*b}) {
      auto found = (*store)->LookupPrefix("poll", Fp(1), keys);
      ASSERT_TRUE(found.ok()) << found.status().ToString();
    }
  }
  httplib::Client http(daemon->http());
  auto metrics = http.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_GE(MetricValue(metrics->body, "wombatkv_tcp_loop_polls_total"), 2 * kCalls);
  EXPECT_EQ(daemon->Stop(SIGTERM), 0);
}

// docs/daemon.md, "Threads": an operator's `top -H` tells the daemon's threads apart. Every thread
// but the main one is named for its role: "wmbt-..." (ours) or RocksDB's own.
TEST(DaemonLifecycle, EveryThreadButTheMainOneIsNamedForItsRole) {
  TempDir dir;
  auto daemon = StartDaemon(dir, {"--http", "127.0.0.1:0", "--prefix", "names", "--run-dir",
                                  dir.path()});
  ASSERT_TRUE(daemon->running()) << daemon->stderr_text();
  ExpectServes(daemon->tcp().at(0));
  std::vector<std::string> unnamed;
  size_t threads = 0;
  const std::string tasks = "/proc/" + std::to_string(daemon->pid()) + "/task";
  for (const auto& task : std::filesystem::directory_iterator(tasks)) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    ++threads;
    if (!name.starts_with("wmbt-") && !name.starts_with("rocksdb:")) unnamed.push_back(name);
  }
  EXPECT_GT(threads, 10u);
  EXPECT_EQ(unnamed, std::vector<std::string>{"wombatkvd"}) << "only the main thread is unnamed";
  EXPECT_EQ(daemon->Stop(SIGTERM), 0);
}

}  // namespace
}  // namespace wombatkv::testing
