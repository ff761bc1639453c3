#include "engine/chunk/read_stripes.h"

#include <algorithm>

#include "engine/util/thread_pool.h"

namespace slabfs::engine {

bool AllButOneCached(const ChunkCache& cache, uint64_t cache_id, const TransferPlan& plan) {
  int missing = 0;
  for (ChunkCursor cur(plan); !cur.done(); cur.Next()) {
    if (!cache.Contains(CacheKey{cache_id, cur.linear()}) && ++missing > 1) return false;
  }
  return true;
}

size_t ReadStripes(const ChunkCache& cache, uint64_t cache_id, const TransferPlan& plan, uint64_t item_size,
                   bool loads_cost) {
  const uint64_t chunks = plan.chunks_touched();
  if (chunks < 2) return 1;
  const size_t wide = static_cast<size_t>(std::min<uint64_t>(ParallelWidth(), chunks));
  if (loads_cost && !AllButOneCached(cache, cache_id, plan)) return wide;
  return plan.num_elements() * item_size >= kParallelBytes ? wide : 1;
}

}  // namespace slabfs::engine
