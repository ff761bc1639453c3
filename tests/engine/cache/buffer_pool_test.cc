// The process-wide pool of chunk buffers: a buffer given back is taken
// again for the same size, and the pool keeps no more than its cap.
#include "engine/cache/buffer_pool.h"

#include <gtest/gtest.h>

#include "engine/cache/chunk_cache.h"

namespace slabfs::engine {
namespace {

TEST(BufferPoolTest, HandsBackWhatWasGivenForTheSameSize) {
  BufferPool pool;
  auto a = pool.Take(4096);
  char* raw = a.get();
  pool.Give(std::move(a), 4096);
  EXPECT_EQ(pool.kept_bytes(), 4096u);
  EXPECT_NE(pool.Take(8192).get(), raw) << "another size is a new buffer";
  EXPECT_EQ(pool.Take(4096).get(), raw);
  EXPECT_EQ(pool.kept_bytes(), 0u);
}

TEST(BufferPoolTest, KeepsNoMoreThanItsCap) {
  BufferPool pool;
  const size_t big = BufferPool::kMaxBytes / 2 + 1;
  pool.Give(std::unique_ptr<char[]>(new char[big]), big);
  pool.Give(std::unique_ptr<char[]>(new char[big]), big);  // over the cap: freed
  EXPECT_EQ(pool.kept_bytes(), big);
  pool.Give(nullptr, 100);
  EXPECT_EQ(pool.kept_bytes(), big);
}

TEST(BufferPoolTest, AClosingCacheLeavesItsBuffersForTheNext) {
  char* raw = nullptr;
  const size_t bytes = 123457;  // a size no other test uses
  {
    ChunkCache cache(1 << 20, 1 << 20);
    auto data = cache.TakeBuffer(bytes);
    raw = data.get();
    ChunkCache::Entry* e = cache.Insert(CacheKey{1, 2}, std::move(data), bytes, false);
    cache.Release(e, 0);
  }
  ChunkCache next(1 << 20, 1 << 20);
  EXPECT_EQ(next.TakeBuffer(bytes).get(), raw);
}

}  // namespace
}  // namespace slabfs::engine
