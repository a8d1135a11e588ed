// RocksDbInfoLog: L1's RocksDB log lines reach <dir>/LOG, roll to LOG.old, and a disk that refuses
// them loses lines, never the process (tests/tools/disk_full_test.sh runs the whole store so).
#include "meta/rocksdb_info_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace wombatkv {
namespace {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "wombatkv-log-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(RocksDbInfoLog, WritesStampedLinesAndRollsPastItsSize) {
  TempDir dir;
  rocksdb::Logger* log = new RocksDbInfoLog(dir.path(), 4096);
  std::shared_ptr<rocksdb::Logger> owner(log);
  rocksdb::Log(rocksdb::InfoLogLevel::INFO_LEVEL, owner, "flush %d of %s", 7, "cf");
  rocksdb::Log(rocksdb::InfoLogLevel::DEBUG_LEVEL, owner, "below the level: not written");
  const std::string first = Slurp(dir.path() + "/LOG");
  EXPECT_NE(first.find("flush 7 of cf\n"), std::string::npos) << first;
  EXPECT_EQ(first.find("below the level"), std::string::npos) << first;
  EXPECT_EQ(first.front(), '2');  // "2026/12/05-..." : a time stamp leads each line
  for (int i = 0; i < 200; ++i) {
    rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, owner, "line %d %s", i,
                 std::string(40, 'x').c_str());
  }
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/LOG.old"));
  EXPECT_LT(std::filesystem::file_size(dir.path() + "/LOG"), 4096u + 200);
  EXPECT_NE(Slurp(dir.path() + "/LOG").find("line 199 "), std::string::npos);
  EXPECT_EQ(static_cast<RocksDbInfoLog*>(log)->dropped_lines(), 0u);
}

// RocksDB's own file logger asserted on its next line once a write had failed (SIGABRT in
// Debian's build). Here every line the disk refuses is counted and dropped.
TEST(RocksDbInfoLog, ADiskThatRefusesLinesLosesThemNotTheProcess) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  TempDir dir;
  std::filesystem::create_symlink("/dev/full", dir.path() + "/LOG");  // every write: ENOSPC
  auto log = std::make_shared<RocksDbInfoLog>(dir.path(), 1 << 20);
  for (int i = 0; i < 100; ++i) {
    rocksdb::Log(rocksdb::InfoLogLevel::ERROR_LEVEL, std::shared_ptr<rocksdb::Logger>(log),
                 "flush failed: %d", i);
  }
  EXPECT_EQ(log->dropped_lines(), 100u);
}

TEST(RocksDbInfoLog, AVeryLongLineIsCutNotLost) {
  TempDir dir;
  auto log = std::make_shared<RocksDbInfoLog>(dir.path(), 1 << 20);
  const std::string big(200 << 10, 'y');
  rocksdb::Log(rocksdb::InfoLogLevel::INFO_LEVEL, std::shared_ptr<rocksdb::Logger>(log), "%s",
               big.c_str());
  const std::string text = Slurp(dir.path() + "/LOG");
  EXPECT_GT(text.size(), 60u << 10);
  EXPECT_LT(text.size(), 70u << 10);
  EXPECT_EQ(text.back(), '\n');
}

}  // namespace
}  // namespace wombatkv
