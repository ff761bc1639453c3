// ReadStripes: the one rule for splitting a read over cores, used by the
// engine's datasets and the stores' (stores/chunked_dataset.cc).
#include "engine/chunk/read_stripes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "engine/util/thread_pool.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::engine {
namespace {
namespace read_stripes_test {

// A 1024 x 1024 f4 dataset in 256 x 256 chunks (256 KiB each).
TransferPlan Plan(const Slab& sel) {
  TransferPlan plan;
  EXPECT_OK(plan.Build({1024, 1024}, {256, 256}, sel, nullptr));
  return plan;
}

void Cache(ChunkCache& cache, uint64_t id, uint64_t linear) {
  constexpr size_t kBytes = 256 * 256 * 4;
  ChunkCache::Entry* e = cache.Insert({id, linear}, std::unique_ptr<char[]>(new char[kBytes]), kBytes, false);
  ASSERT_NE(e, nullptr);
  cache.Release(e, 0);
}

TEST(ReadStripesTest, LoadsThatCostAreSpreadUnlessAllButOneChunkIsCached) {
  ChunkCache cache(64 << 20, 0);
  const size_t wide = std::min<size_t>(ParallelWidth(), 4);
  // 64 rows across the width: 4 chunks touched, 256 KiB copied.
  const TransferPlan band = Plan(Slab::Box({0, 0}, {64, 1024}));
  EXPECT_EQ(ReadStripes(cache, 1, band, 4, /*loads_cost=*/true), wide);
  EXPECT_EQ(ReadStripes(cache, 1, band, 4, /*loads_cost=*/false), 1u);  // a small copy
  ASSERT_NO_FATAL_FAILURE(Cache(cache, 1, 0));
  ASSERT_NO_FATAL_FAILURE(Cache(cache, 1, 1));
  EXPECT_EQ(ReadStripes(cache, 1, band, 4, true), wide);  // two chunks still to load
  ASSERT_NO_FATAL_FAILURE(Cache(cache, 1, 2));
  EXPECT_EQ(ReadStripes(cache, 1, band, 4, true), 1u);    // one: no hop to the pool
  EXPECT_EQ(ReadStripes(cache, 2, band, 4, true), wide);  // another dataset's keys
  // One chunk touched: never split. A large copy is split even from cache.
  EXPECT_EQ(ReadStripes(cache, 1, Plan(Slab::Box({0, 0}, {256, 256})), 4, true), 1u);
  const TransferPlan all = Plan(Slab::Box({0, 0}, {1024, 1024}));  // 4 MiB
  EXPECT_EQ(ReadStripes(cache, 1, all, 4, false), std::min<size_t>(ParallelWidth(), 16));
}

}  // namespace read_stripes_test
}  // namespace
}  // namespace slabfs::engine
