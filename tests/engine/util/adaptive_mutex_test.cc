// AdaptiveMutex: mutual exclusion under contention, try_lock, and use with
// the standard lock holders.
#include "engine/util/adaptive_mutex.h"

#include <gtest/gtest.h>

#include <mutex>
#include <thread>
#include <vector>

namespace slabfs::engine {
namespace {

TEST(AdaptiveMutexTest, ExcludesOtherThreads) {
  AdaptiveMutex mu;
  uint64_t counter = 0;  // plain: only the mutex keeps the increments whole
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100000; ++i) {
        std::lock_guard lock(mu);
        ++counter;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(counter, 400000u);
}

TEST(AdaptiveMutexTest, TryLockFailsWhileHeld) {
  AdaptiveMutex mu;
  std::unique_lock lock(mu);
  bool got = true;
  std::thread([&] { got = mu.try_lock(); }).join();
  EXPECT_FALSE(got);
  lock.unlock();
  std::thread([&] {
    got = mu.try_lock();
    if (got) mu.unlock();
  }).join();
  EXPECT_TRUE(got);
}

}  // namespace
}  // namespace slabfs::engine
