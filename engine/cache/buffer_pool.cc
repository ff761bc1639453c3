#include "engine/cache/buffer_pool.h"

namespace slabfs::engine {

BufferPool& BufferPool::Global() {
  // Never destroyed: caches may give buffers back during static destruction.
  static BufferPool* pool = new BufferPool;
  return *pool;
}

std::unique_ptr<char[]> BufferPool::Take(size_t bytes) {
  {
    MutexLock lock(mu_);
    auto it = by_size_.find(bytes);
    if (it != by_size_.end() && !it->second.empty()) {
      std::unique_ptr<char[]> b = std::move(it->second.back());
      it->second.pop_back();
      kept_ -= bytes;
      return b;
    }
  }
  return std::unique_ptr<char[]>(new char[bytes]);
}

void BufferPool::Give(std::unique_ptr<char[]> data, size_t bytes) {
  if (!data) return;
  MutexLock lock(mu_);
  if (kept_ + bytes > kMaxBytes) return;  // `data` is freed on the way out
  by_size_[bytes].push_back(std::move(data));
  kept_ += bytes;
}

uint64_t BufferPool::kept_bytes() const {
  MutexLock lock(mu_);
  return kept_;
}

}  // namespace slabfs::engine
