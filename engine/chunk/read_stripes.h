// How many stripes (items of ParallelFor, a core each) a read is split
// into: one rule for the engine's datasets and for the stores that read
// through the chunk cache (stores/chunked_dataset.h).
#ifndef SLABFS_ENGINE_CHUNK_READ_STRIPES_H_
#define SLABFS_ENGINE_CHUNK_READ_STRIPES_H_

#include <cstddef>
#include <cstdint>

#include "engine/cache/chunk_cache.h"
#include "engine/selection/hyperslab.h"

namespace slabfs::engine {

// A transfer this large that touches several chunks is split across cores.
// Below it the split costs more than it gains (and the mount already runs
// requests, of at most 1 MiB, on several threads).
inline constexpr uint64_t kParallelBytes = 4 << 20;

// Whether every chunk `plan` touches but at most one is in `cache` under
// dataset `cache_id`.
bool AllButOneCached(const ChunkCache& cache, uint64_t cache_id, const TransferPlan& plan);

// The stripes of a read of `plan`: one per core (up to the chunks touched)
// when loading its chunks costs (`loads_cost`: they are decoded, or large)
// and more than one of them must be loaded; else one per core only when
// the bytes copied reach kParallelBytes. Copying a 1 MiB request out of
// cached chunks is quicker on the calling thread than a hop to the pool.
size_t ReadStripes(const ChunkCache& cache, uint64_t cache_id, const TransferPlan& plan, uint64_t item_size,
                   bool loads_cost);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_CHUNK_READ_STRIPES_H_
