#include "daemon/metrics_text.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "base/read_text_file.h"

namespace wombatkv {
namespace {

TEST(MetricsText, HistogramsAreCumulativeAndEndAtInf) {
  ServiceMetrics m;
  const size_t get = 6;  // wire::Op::kGetBlocks
  m.requests[get] = 3;
  m.latency_us_buckets[get][0] = 1;  // < 1 us
  m.latency_us_buckets[get][5] = 1;  // < 32 us
  m.latency_us_buckets[get][ServiceMetrics::kLatencyBuckets - 1] = 1;  // the overflow bucket
  m.latency_us_sum[get] = 2'000'040;
  ServiceMetrics shm;
  shm.requests[get] = 5;
  shm.bad_requests = 1;
  MetricsSources src;
  src.service[static_cast<size_t>(Transport::kTcp)] = &m;
  src.ready = true;
  src.version = "1.2.0";
  src.start_unix_seconds = 1'796'500'000;
  const std::string page = RenderMetrics(src);
  EXPECT_NE(page.find("wombatkv_build_info{version=\"1.2.0\"} 1\n"), std::string::npos) << page;
  EXPECT_NE(page.find("wombatkv_start_time_seconds 1796500000\n"), std::string::npos) << page;
  EXPECT_NE(page.find("wombatkv_ready 1\n"), std::string::npos);
  EXPECT_NE(page.find("wombatkv_healthy 1\n"), std::string::npos);
  src.healthy = false;
  EXPECT_NE(RenderMetrics(src).find("wombatkv_healthy 0\n"), std::string::npos);
  EXPECT_NE(page.find("wombatkv_requests_total{op=\"GetBlocks\",transport=\"tcp\"} 3\n"),
            std::string::npos);
  EXPECT_NE(page.find("wombatkv_request_duration_seconds_bucket{op=\"GetBlocks\",transport=\"tcp\","
                      "le=\"0.000001\"} 1\n"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("wombatkv_request_duration_seconds_bucket{op=\"GetBlocks\",transport=\"tcp\","
                      "le=\"0.000016\"} 1\n"),
            std::string::npos);
  EXPECT_NE(page.find("wombatkv_request_duration_seconds_bucket{op=\"GetBlocks\",transport=\"tcp\","
                      "le=\"0.000032\"} 2\n"),
            std::string::npos);
  // Bounds are exact (%g printed 4.1943 for 4.194304 s: a bound below the bucket's).
  EXPECT_NE(page.find("wombatkv_request_duration_seconds_bucket{op=\"GetBlocks\",transport=\"tcp\","
                      "le=\"4.194304\"} 2\n"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("wombatkv_request_duration_seconds_bucket{op=\"GetBlocks\",transport=\"tcp\","
                      "le=\"+Inf\"} 3\n"),
            std::string::npos);
  EXPECT_NE(
      page.find("wombatkv_request_duration_seconds_count{op=\"GetBlocks\",transport=\"tcp\"} 3\n"),
      std::string::npos);
  EXPECT_NE(
      page.find(
          "wombatkv_request_duration_seconds_sum{op=\"GetBlocks\",transport=\"tcp\"} 2.000040\n"),
      std::string::npos);
  EXPECT_EQ(page.find("transport=\"shm\""), std::string::npos) << "a transport not served";
  src.service[static_cast<size_t>(Transport::kShm)] = &shm;
  const std::string both = RenderMetrics(src);
  EXPECT_NE(both.find("wombatkv_requests_total{op=\"GetBlocks\",transport=\"tcp\"} 3\n"
                      "wombatkv_requests_total{op=\"GetBlocks\",transport=\"shm\"} 5\n"),
            std::string::npos)
      << both;
  EXPECT_NE(both.find("wombatkv_bad_requests_total{transport=\"tcp\"} 0\n"
                      "wombatkv_bad_requests_total{transport=\"shm\"} 1\n"),
            std::string::npos)
      << both;
}

TEST(MetricsText, TheJournalsCommitsAreCountedAndTimedInSeconds) {
  StoreStats s;
  s.l2_journal_syncs = 4;
  s.l2_journal_records_synced = 22;
  s.l2_journal_sync_micros = 1'500'250;
  s.l2_journal_preallocations = 2;
  s.l2_journal_preallocate_micros = 9'000;
  MetricsSources src;
  src.store = &s;
  const std::string page = RenderMetrics(src);
  for (const char* line : {"wombatkv_l2_journal_syncs_total 4\n",
                           "wombatkv_l2_journal_records_synced_total 22\n",
                           "wombatkv_l2_journal_sync_seconds_total 1.500250\n",
                           "wombatkv_l2_journal_preallocations_total 2\n",
                           "wombatkv_l2_journal_preallocate_seconds_total 0.009000\n"}) {
    EXPECT_NE(page.find(line), std::string::npos) << line << page;
  }
}

TEST(MetricsText, EveryFamilyIsDeclaredOnceBeforeItsSamples) {
  ServiceMetrics m;
  StoreStats s;
  s.lookup_keys = 10;
  s.lookup_hit_keys = 7;
  tcp::TcpServerStats t;
  ShmServerStats shm;
  shm.doorbells = 4;
  MetricsSources src{{&m, &m}, &s, &t, false, &shm};
  std::istringstream lines(RenderMetrics(src));
  std::set<std::string> declared;
  std::string line, current;
  bool saw_l0_misses = false, saw_doorbells = false;
  while (std::getline(lines, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::string name = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_TRUE(declared.insert(name).second) << "declared twice: " << name;
      current = name;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    std::string name = line.substr(0, line.find_first_of("{ "));
    EXPECT_EQ(name.rfind(current, 0), 0u) << "sample outside its family: " << line;
    if (line == "wombatkv_plane_misses_total{plane=\"l0\"} 3") saw_l0_misses = true;
    if (line == "wombatkv_shm_doorbells_total 4") saw_doorbells = true;
  }
  EXPECT_TRUE(saw_l0_misses);
  EXPECT_TRUE(saw_doorbells);
  EXPECT_TRUE(declared.count("wombatkv_tcp_connections_open"));
}

// docs/daemon.md lists every metric family the page has (without the wombatkv_ prefix).
TEST(MetricsText, TheDaemonDocNamesEveryFamily) {
  const std::optional<std::string> text = ReadTextFile(WOMBATKV_DAEMON_DOC);
  ASSERT_TRUE(text) << WOMBATKV_DAEMON_DOC;
  const std::string& doc = *text;
  ServiceMetrics m;
  StoreStats s;
  tcp::TcpServerStats t;
  ShmServerStats shm;
  MetricsSources src{{&m, &m}, &s, &t, false, &shm};
  std::istringstream lines(RenderMetrics(src));
  std::string line;
  size_t families = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("# TYPE wombatkv_", 0) != 0) continue;
    ++families;
    const std::string name = line.substr(16, line.find(' ', 16) - 16);
    EXPECT_TRUE(doc.find("`" + name + "`") != std::string::npos ||
                doc.find("`" + name + "{") != std::string::npos)
        << "docs/daemon.md does not list " << name;
  }
  EXPECT_GT(families, 50u);
}

}  // namespace
}  // namespace wombatkv
