// DirMaker against a scratch directory, its directory syncs stubbed so that a test can hold or
// fail them.
#include "env/dir_maker.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "wombatkv/env.h"

namespace wombatkv {
namespace {

class DirMakerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> seq{0};
    root_ = ::testing::TempDir() + "wombatkv_dir_maker_" + std::to_string(::getpid()) + "_" +
            std::to_string(seq++);
    ASSERT_TRUE(PosixFileSystem()->DeleteTree(root_).ok());
    ASSERT_TRUE(PosixFileSystem()->CreateDirs(root_).ok());
  }
  void TearDown() override { EXPECT_TRUE(PosixFileSystem()->DeleteTree(root_).ok()); }

  // The syncs of `root_` the maker asked for.
  int RootSyncs() {
    std::lock_guard<std::mutex> g(mu_);
    int n = 0;
    for (const std::string& d : synced_) n += d == root_;
    return n;
  }

  // A maker whose sync of `root_` calls `on_root_sync` (the others succeed at once).
  DirMaker Maker(std::function<Status()> on_root_sync) {
    return DirMaker([this, on_root_sync](const std::string& dir) {
      {
        std::lock_guard<std::mutex> g(mu_);
        synced_.push_back(dir);
      }
      return dir == root_ ? on_root_sync() : Status::Ok();
    });
  }

  std::string root_;
  std::mutex mu_;
  std::vector<std::string> synced_;
};

// M1, for a caller that finds the new directory (stat) and for one that makes a directory in it.
TEST_F(DirMakerTest, ACallerThatFindsANewDirectoryWaitsUntilItsParentIsSynced) {
  for (const std::string second : {"/new", "/new/sub"}) {
    SCOPED_TRACE(second);
    ASSERT_TRUE(PosixFileSystem()->DeleteTree(root_ + "/new").ok());
    std::promise<void> entered, release;
    std::shared_future<void> released = release.get_future().share();
    DirMaker maker = Maker([&] {
      entered.set_value();
      released.wait();
      return Status::Ok();
    });
    auto first = std::async(std::launch::async, [&] { return maker.CreateDirs(root_ + "/new"); });
    entered.get_future().wait();  // "new" exists; its entry in root_ is not yet synced
    std::atomic<bool> second_returned{false};
    auto other = std::async(std::launch::async, [&] {
      Status s = maker.CreateDirs(root_ + second);
      second_returned = true;
      return s;
    });
    // Not a timing assertion: with M1 the second call cannot return before the release below;
    // without it, it returns in microseconds and this sees it.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_FALSE(second_returned.load()) << "returned while the parent's sync was running";
    release.set_value();
    EXPECT_TRUE(first.get().ok());
    EXPECT_TRUE(other.get().ok());
    EXPECT_EQ(RootSyncs(), 1);
    {
      std::lock_guard<std::mutex> g(mu_);
      synced_.clear();
    }
  }
}

// M2: a maker's failed sync is reported to it and done again by the next caller.
TEST_F(DirMakerTest, AParentSyncThatFailedIsDoneAgainByTheNextCaller) {
  std::atomic<int> fail_next{1};
  DirMaker maker = Maker([&] {
    return fail_next-- > 0 ? Status::Unavailable("injected fsync failure") : Status::Ok();
  });
  Status made = maker.CreateDirs(root_ + "/new");
  EXPECT_EQ(made.code(), Code::kUnavailable) << made.ToString();
  EXPECT_TRUE(PosixFileSystem()->Stat(root_ + "/new").ok());  // made, not durable
  EXPECT_TRUE(maker.CreateDirs(root_ + "/new/sub").ok());
  EXPECT_EQ(RootSyncs(), 2);
  EXPECT_TRUE(maker.CreateDirs(root_ + "/new").ok());
  EXPECT_EQ(RootSyncs(), 2);  // durable now: no third sync
}

TEST_F(DirMakerTest, AParentSyncThatFailsAgainFailsItsCallerToo) {
  DirMaker maker = Maker([] { return Status::Unavailable("injected fsync failure"); });
  EXPECT_EQ(maker.CreateDirs(root_ + "/new").code(), Code::kUnavailable);
  Status again = maker.CreateDirs(root_ + "/new");
  EXPECT_EQ(again.code(), Code::kUnavailable);
  EXPECT_NE(again.message().find("making " + root_ + "/new durable"), std::string::npos)
      << again.ToString();
  EXPECT_EQ(RootSyncs(), 2);
}

TEST_F(DirMakerTest, ExistingDirectoriesNeedNoSyncAndAFileInTheWayIsRefused) {
  DirMaker maker = Maker([] { return Status::Ok(); });
  EXPECT_TRUE(maker.CreateDirs(root_).ok());
  EXPECT_EQ(RootSyncs(), 0);
  ASSERT_TRUE(PosixFileSystem()->WriteFileAtomic(root_ + "/file", {AsBytes("x")}, false).ok());
  Status s = maker.CreateDirs(root_ + "/file/d");
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("is not a directory"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace wombatkv
