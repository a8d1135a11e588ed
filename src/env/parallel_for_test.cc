#include "env/parallel_for.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace wombatkv {
namespace {

TEST(ParallelFor, CallsEveryIndexOnceAcrossThreads) {
  auto pool = NewThreadPoolExecutor(4, "test");
  constexpr size_t kN = 500;
  std::vector<std::atomic<int>> calls(kN);
  std::mutex mu;
  std::set<std::thread::id> threads;
  ASSERT_TRUE(ParallelFor(pool.get(), kN, 4, [&](size_t i) {
                calls[i].fetch_add(1);
                std::this_thread::yield();
                std::lock_guard<std::mutex> g(mu);
                threads.insert(std::this_thread::get_id());
              }).ok());
  for (size_t i = 0; i < kN; ++i) EXPECT_EQ(calls[i].load(), 1) << i;
  EXPECT_TRUE(threads.count(std::this_thread::get_id())) << "the caller takes indexes too";
  pool->Drain();
}

TEST(ParallelFor, AnInlineExecutorMakesItSerialOnTheCaller) {
  auto inline_executor = NewInlineExecutor();
  auto calls = std::make_shared<std::vector<int>>(10, 0);
  {
    std::vector<std::thread::id> who;  // the caller's frame: gone before the tasks run
    ASSERT_TRUE(ParallelFor(inline_executor.get(), calls->size(), 3, [&](size_t i) {
                  (*calls)[i]++;
                  who.push_back(std::this_thread::get_id());
                }).ok());
    ASSERT_EQ(who.size(), calls->size());
    for (const auto& id : who) EXPECT_EQ(id, std::this_thread::get_id());
  }
  inline_executor->Drain();  // the helper tasks, queued, find nothing left
  for (int c : *calls) EXPECT_EQ(c, 1);
}

TEST(ParallelFor, ABusyExecutorLeavesTheWorkToTheCaller) {
  auto pool = NewThreadPoolExecutor(1, "test");
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  pool->Submit([released] { released.wait(); });  // the pool's one thread is taken
  std::atomic<int> calls{0};
  ASSERT_TRUE(ParallelFor(pool.get(), 8, 4, [&](size_t) { calls.fetch_add(1); }).ok());
  EXPECT_EQ(calls.load(), 8);
  release.set_value();
  pool->Drain();
  EXPECT_EQ(calls.load(), 8);
}

TEST(ParallelFor, NothingToDoReturnsAtOnce) {
  auto inline_executor = NewInlineExecutor();
  EXPECT_TRUE(ParallelFor(inline_executor.get(), 0, 4, [](size_t) { FAIL(); }).ok());
}

}  // namespace
}  // namespace wombatkv
