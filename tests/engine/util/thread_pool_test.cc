#include "engine/util/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <new>
#include <stdexcept>
#include <vector>

namespace slabfs::engine {
namespace {

TEST(ThreadPoolTest, RunsEveryIndexOnce) {
  std::vector<std::atomic<int>> hits(1000);
  ParallelFor(hits.size(), [&](size_t i) { hits[i].fetch_add(1); });
  for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << i;
}

TEST(ThreadPoolTest, AnExceptionReachesTheCallerAfterEveryOtherIndexRan) {
  // Out of memory in a worker must not kill the process (std::terminate)
  // nor leave the caller's stack frame in use by a worker.
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> ran{0};
    EXPECT_THROW(ParallelFor(64,
                             [&](size_t i) {
                               ran.fetch_add(1);
                               if (i % 7 == 3) throw std::bad_alloc();
                             }),
                 std::bad_alloc);
    EXPECT_EQ(ran.load(), 64);
  }
  // The pool still works.
  std::atomic<int> sum{0};
  ParallelFor(100, [&](size_t i) { sum.fetch_add(static_cast<int>(i)); });
  EXPECT_EQ(sum.load(), 4950);
}

}  // namespace
}  // namespace slabfs::engine
