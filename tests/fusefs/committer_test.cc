#include "fusefs/committer.h"

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

namespace slabfs::fusefs {
namespace {

using namespace std::chrono_literals;

// Waits up to `limit` for pred.
template <typename Pred>
bool Eventually(Pred pred, std::chrono::milliseconds limit = 5000ms) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return pred();
}

TEST(CommitterTest, CommitsWhileDirty) {
  std::atomic<bool> dirty{true};
  std::atomic<int> commits{0};
  Committer c(
      10ms, [&] { return dirty.load(); },
      [&] {
        ++commits;
        dirty = false;
        return Status::OK();
      });
  c.Start();
  ASSERT_TRUE(Eventually([&] { return commits.load() == 1; }));
  dirty = true;
  ASSERT_TRUE(Eventually([&] { return commits.load() == 2; }));
  c.Stop();
  EXPECT_EQ(c.commits(), 2u);
}

TEST(CommitterTest, DoesNotCommitWhenClean) {
  std::atomic<int> checks{0};
  std::atomic<int> commits{0};
  Committer c(
      5ms,
      [&] {
        ++checks;
        return false;
      },
      [&] {
        ++commits;
        return Status::OK();
      });
  c.Start();
  ASSERT_TRUE(Eventually([&] { return checks.load() >= 3; }));
  c.Stop();
  EXPECT_EQ(commits.load(), 0);
}

TEST(CommitterTest, StopReturnsPromptlyDuringALongInterval) {
  Committer c(
      1h, [] { return true; }, [] { return Status::OK(); });
  c.Start();
  auto start = std::chrono::steady_clock::now();
  c.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(c.commits(), 0u);
}

TEST(CommitterTest, ZeroIntervalStartsNothing) {
  std::atomic<int> checks{0};
  Committer c(
      0ms,
      [&] {
        ++checks;
        return true;
      },
      [] { return Status::OK(); });
  c.Start();
  std::this_thread::sleep_for(50ms);
  c.Stop();
  EXPECT_EQ(checks.load(), 0);
}

TEST(CommitterTest, KeepsTryingAfterAFailedCommit) {
  std::atomic<int> commits{0};
  Committer c(
      5ms, [] { return true; },
      [&] {
        ++commits;
        return Status::IOError("disk on fire");
      });
  c.Start();
  EXPECT_TRUE(Eventually([&] { return commits.load() >= 3; }));
  c.Stop();
}

TEST(CommitterTest, SurvivesAThrowingCallback) {
  std::atomic<int> calls{0};
  Committer c(
      5ms,
      [&]() -> bool {
        ++calls;
        throw std::runtime_error("boom");
      },
      [] { return Status::OK(); });
  c.Start();
  EXPECT_TRUE(Eventually([&] { return calls.load() >= 2; }));
  c.Stop();
}

TEST(CommitterTest, StopAndStartAreIdempotent) {
  Committer c(
      5ms, [] { return false; }, [] { return Status::OK(); });
  c.Stop();
  c.Start();
  c.Start();
  c.Stop();
  c.Stop();
}

}  // namespace
}  // namespace slabfs::fusefs
