#include "fusefs/invalidator.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <future>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

namespace slabfs::fusefs {
namespace {

using namespace std::chrono_literals;

struct Call {
  uint64_t ino;
  int64_t offset;
  int64_t length;
};

TEST(InvalidatorTest, NotifiesAndReturnsTheResult) {
  std::mutex mu;
  std::vector<Call> calls;
  Invalidator inv([&](uint64_t ino, int64_t off, int64_t len) {
    std::lock_guard lock(mu);
    calls.push_back({ino, off, len});
    return ino == 9 ? -ENOENT : 0;
  });
  inv.Start();
  EXPECT_EQ(inv.Invalidate(5, 4096, 100, 5s), 0);
  EXPECT_EQ(inv.Invalidate(9, 0, 1, 5s), -ENOENT);
  inv.Stop();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].ino, 5u);
  EXPECT_EQ(calls[0].offset, 4096);
  EXPECT_EQ(calls[0].length, 100);
}

TEST(InvalidatorTest, NotRunningIsNotConnected) {
  std::atomic<int> calls{0};
  Invalidator inv([&](uint64_t, int64_t, int64_t) { return ++calls, 0; });
  EXPECT_EQ(inv.Invalidate(5, 0, 1, 1s), -ENOTCONN);
  inv.Start();
  inv.Stop();
  EXPECT_EQ(inv.Invalidate(5, 0, 1, 1s), -ENOTCONN);
  EXPECT_EQ(calls.load(), 0);
}

// The case the thread exists for: the kernel holds a notice until a read
// queued behind the caller is answered. The caller gives up waiting, and
// the notice completes later.
TEST(InvalidatorTest, ACallerStopsWaitingForAStuckNotice) {
  std::promise<void> read_served;
  std::shared_future<void> served = read_served.get_future().share();
  std::atomic<int> done{0};
  Invalidator inv([&](uint64_t, int64_t, int64_t) {
    served.wait();
    ++done;
    return 0;
  });
  inv.Start();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(inv.Invalidate(5, 0, 4096, 50ms), -ETIMEDOUT);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  read_served.set_value();
  // The next notice runs after the stuck one.
  EXPECT_EQ(inv.Invalidate(5, 0, 4096, 5s), 0);
  EXPECT_EQ(done.load(), 2);
  inv.Stop();
}

TEST(InvalidatorTest, PostSendsLaterWithoutWaiting) {
  std::mutex mu;
  std::vector<std::chrono::steady_clock::time_point> sent;
  Invalidator inv([&](uint64_t, int64_t, int64_t) {
    std::lock_guard lock(mu);
    sent.push_back(std::chrono::steady_clock::now());
    return 0;
  });
  inv.Start();
  const auto start = std::chrono::steady_clock::now();
  inv.Post(5, 0, 1, 100ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 50ms);
  // A notice queued after a delayed one runs after it.
  EXPECT_EQ(inv.Invalidate(5, 4096, 1, 5s), 0);
  std::lock_guard lock(mu);
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_GE(sent[0] - start, 100ms);
  inv.Stop();
}

TEST(InvalidatorTest, StopDropsDelayedNotices) {
  std::atomic<int> calls{0};
  Invalidator inv([&](uint64_t, int64_t, int64_t) { return ++calls, 0; });
  inv.Start();
  inv.Post(5, 0, 1, std::chrono::hours(1));
  const auto start = std::chrono::steady_clock::now();
  inv.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(calls.load(), 0);
  inv.Post(5, 0, 1, 0ms);  // not running: nothing
}

TEST(InvalidatorTest, StartAndStopAreIdempotent) {
  Invalidator inv([](uint64_t, int64_t, int64_t) { return 0; });
  inv.Stop();
  inv.Start();
  inv.Start();
  EXPECT_EQ(inv.Invalidate(1, 0, 1, 5s), 0);
  inv.Stop();
  inv.Stop();
}

}  // namespace
}  // namespace slabfs::fusefs
