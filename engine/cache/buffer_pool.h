// Chunk-sized buffers kept for reuse, process-wide.
//
// A chunk buffer fresh from the allocator costs page faults and the
// kernel's zeroing of every page (a 256 KiB chunk: 64 faults), as much as
// reading the chunk itself. Chunk caches hand the buffers of chunks they
// evict, and at their end all they hold, to this pool, and take buffers of
// the same size from it; so a program that opens containers one after the
// other (a Python loop, Dask tasks, slab commands in one process, a
// benchmark's rounds) reuses memory instead of faulting it in again, as
// libhdf5's free lists do. At most kMaxBytes are kept; the rest is freed.
// Thread-safe.
#ifndef SLABFS_ENGINE_CACHE_BUFFER_POOL_H_
#define SLABFS_ENGINE_CACHE_BUFFER_POOL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/util/mutex.h"

namespace slabfs::engine {

class BufferPool {
 public:
  static constexpr uint64_t kMaxBytes = 32ull << 20;

  static BufferPool& Global();

  // A buffer of `bytes` (contents undefined): a kept one, else a new one.
  std::unique_ptr<char[]> Take(size_t bytes);
  // Keeps `data` (of `bytes`) for a later Take, or frees it when the pool
  // is full.
  void Give(std::unique_ptr<char[]> data, size_t bytes);

  uint64_t kept_bytes() const;

 private:
  mutable Mutex mu_{LockRank::kBufferPool};
  std::unordered_map<size_t, std::vector<std::unique_ptr<char[]>>> by_size_ GUARDED_BY(mu_);
  uint64_t kept_ GUARDED_BY(mu_) = 0;
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_CACHE_BUFFER_POOL_H_
