// A fixed pool of worker threads for splitting one large transfer across
// cores. ParallelFor runs fn(0..n-1) on the workers and the calling thread
// together and returns when all calls are done. Calls from several threads
// share the workers; a call made from inside a worker runs inline. If calls
// throw, all the others still run, and ParallelFor then rethrows the first
// exception in the caller.
#ifndef SLABFS_ENGINE_UTIL_THREAD_POOL_H_
#define SLABFS_ENGINE_UTIL_THREAD_POOL_H_

#include <cstddef>
#include <functional>

namespace slabfs::engine {

// Number of threads ParallelFor uses (workers + caller), from the number of
// online CPUs.
size_t ParallelWidth();
void ParallelFor(size_t n, const std::function<void(size_t)>& fn);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_UTIL_THREAD_POOL_H_
