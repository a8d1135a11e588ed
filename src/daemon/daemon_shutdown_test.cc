// The daemon stopped in-process (Daemon::Shutdown), for what a process test cannot time: the
// moment the store starts closing.
#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>

#include "daemon/daemon.h"

namespace wombatkv {
namespace {

// /healthz, /readyz and /metrics answer while the store closes (its destructor waits for the
// uploads, which can take long against S3): the stop held the lock they read under across the
// close, so probes and scrapes hung until it ended — against docs/daemon.md, "Stopping".
TEST(DaemonShutdown, TheHttpEndpointAnswersWhileTheStoreCloses) {
  char path[] = "/tmp/wkv-daemon-shutdown-XXXXXX";
  ASSERT_NE(::mkdtemp(path), nullptr);
  const std::string dir = path;
  auto config = Config::FromLookup([&](const char* name) -> std::optional<std::string> {
    if (std::string(name) == "WMBT_KV_DATA_DIR") return dir + "/data";
    return std::nullopt;
  });
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  DaemonOptions options;
  options.config = *config;
  options.settings.tcp = {"127.0.0.1:0"};
  options.settings.http = "127.0.0.1:0";
  options.log = [](LogLevel, const std::string&) {};
  std::string url;
  std::optional<int> health, metrics;
  options.announce = [&](const std::string& line) {
    if (line.find("closing the store") == std::string::npos) return;
    httplib::Client http(url);
    http.set_read_timeout(5, 0);
    if (auto r = http.Get("/healthz")) health = r->status;
    if (auto r = http.Get("/metrics")) metrics = r->status;
  };
  auto daemon = Daemon::Start(std::move(options));
  ASSERT_TRUE(daemon.ok()) << daemon.status().ToString();
  url = (*daemon)->http_url();
  ASSERT_FALSE(url.empty());
  EXPECT_EQ((*daemon)->Shutdown(), 0u);
  ASSERT_TRUE(health.has_value()) << "the store's close was not announced, or /healthz hung";
  EXPECT_EQ(*health, 200);
  ASSERT_TRUE(metrics.has_value()) << "/metrics hung while the store closed";
  EXPECT_EQ(*metrics, 200);
  daemon->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace wombatkv
