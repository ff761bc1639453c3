// Single-flight chunk loads (ChunkCache::ClaimLoad): one reader loads a
// chunk that several miss at once, the others wait for it and get its
// entry; a claim given up without a load (the load failed) passes to a
// waiter; claims of other keys do not wait for each other.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "engine/cache/chunk_cache.h"
#include "engine/util/mutex.h"
#include "tests/testutil/scoped_checks_env.h"

namespace slabfs::engine {
namespace {
namespace chunk_load_claim_test {

constexpr size_t kBytes = 64;

std::unique_ptr<char[]> Image(char fill) {
  auto p = std::make_unique<char[]>(kBytes);
  std::memset(p.get(), fill, kBytes);
  return p;
}

// Waits (up to 10 s) until `pred` holds.
template <typename Pred>
bool Eventually(Pred pred) {
  for (int i = 0; i < 10000 && !pred(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return pred();
}

TEST(ChunkLoadClaimTest, AMissClaimsTheKeyAndFillPublishesTheChunk) {
  ChunkCache cache(1 << 20, 1 << 20);
  const CacheKey key{1, 7};
  ChunkCache::Claim claim;
  EXPECT_EQ(cache.ClaimLoad(key, &claim), nullptr);
  EXPECT_TRUE(claim.held());
  ChunkCache::Entry* e = claim.Fill(Image('a'), kBytes);
  EXPECT_FALSE(claim.held());
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->data[0], 'a');
  cache.Release(e, 0);
  // Resident now: a claim is not needed, the entry comes back pinned.
  ChunkCache::Claim again;
  ChunkCache::Entry* hit = cache.ClaimLoad(key, &again);
  EXPECT_EQ(hit, e);
  EXPECT_FALSE(again.held());
  cache.Release(hit, 0);
}

TEST(ChunkLoadClaimTest, AReaderOfAChunkBeingLoadedWaitsForThatLoad) {
  ChunkCache cache(1 << 20, 1 << 20);
  const CacheKey key{1, 3};
  ChunkCache::Claim claim;
  ASSERT_EQ(cache.ClaimLoad(key, &claim), nullptr);
  std::atomic<bool> filled{false}, waiter_done{false};
  std::atomic<char> seen{0};
  std::atomic<bool> waiter_claimed{false};
  std::thread waiter([&] {
    ChunkCache::Claim mine;
    ChunkCache::Entry* e = cache.ClaimLoad(key, &mine);
    waiter_claimed = mine.held();
    if (e != nullptr) {
      // The load it waited for is done: its bytes are there.
      EXPECT_TRUE(filled.load());
      seen = e->data[0];
      cache.Release(e, 0);
    }
    waiter_done = true;
  });
  // The waiter does not return while the load is in progress.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(waiter_done.load());
  filled = true;
  cache.Release(claim.Fill(Image('b'), kBytes), 0);
  waiter.join();
  EXPECT_FALSE(waiter_claimed.load());
  EXPECT_EQ(seen.load(), 'b');
}

TEST(ChunkLoadClaimTest, AClaimGivenUpWithoutALoadPassesToAWaiter) {
  ChunkCache cache(1 << 20, 1 << 20);
  const CacheKey key{2, 9};
  auto failed = std::make_unique<ChunkCache::Claim>();
  ASSERT_EQ(cache.ClaimLoad(key, failed.get()), nullptr);
  std::atomic<bool> waiter_claimed{false}, waiter_done{false};
  std::thread waiter([&] {
    ChunkCache::Claim mine;
    ChunkCache::Entry* e = cache.ClaimLoad(key, &mine);
    EXPECT_EQ(e, nullptr);
    waiter_claimed = mine.held();
    if (mine.held()) cache.Release(mine.Fill(Image('c'), kBytes), 0);
    waiter_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(waiter_done.load());
  failed.reset();  // the load failed: the claim goes without a chunk
  waiter.join();
  EXPECT_TRUE(waiter_claimed.load());
  ChunkCache::Entry* e = cache.Lookup(key);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->data[0], 'c');
  cache.Release(e, 0);
}

TEST(ChunkLoadClaimTest, ClaimsOfOtherKeysDoNotWaitForEachOther) {
  ChunkCache cache(1 << 20, 1 << 20);
  ChunkCache::Claim first;
  ASSERT_EQ(cache.ClaimLoad(CacheKey{1, 1}, &first), nullptr);
  std::atomic<bool> done{false};
  std::thread other([&] {
    ChunkCache::Claim second;
    EXPECT_EQ(cache.ClaimLoad(CacheKey{1, 2}, &second), nullptr);
    EXPECT_TRUE(second.held());
    ChunkCache::Claim third;  // the same chunk grid position of another dataset
    EXPECT_EQ(cache.ClaimLoad(CacheKey{2, 1}, &third), nullptr);
    EXPECT_TRUE(third.held());
    done = true;
  });
  EXPECT_TRUE(Eventually([&] { return done.load(); }));
  other.join();
}

TEST(ChunkLoadClaimTest, ManyReadersMissingOneChunkLoadItOnce) {
  ChunkCache cache(1 << 20, 1 << 20);
  for (uint64_t chunk = 0; chunk < 50; ++chunk) {
    const CacheKey key{4, chunk};
    std::atomic<int> loads{0};
    std::atomic<int> right{0};
    std::vector<std::thread> readers;
    for (int t = 0; t < 6; ++t) {
      readers.emplace_back([&] {
        ChunkCache::Entry* e = cache.Lookup(key);
        if (e == nullptr) {
          ChunkCache::Claim claim;
          e = cache.ClaimLoad(key, &claim);
          if (e == nullptr) {
            loads.fetch_add(1);
            std::this_thread::sleep_for(std::chrono::microseconds(200));  // a decode
            e = claim.Fill(Image(static_cast<char>('A' + chunk % 26)), kBytes);
          }
        }
        if (e->data[kBytes - 1] == static_cast<char>('A' + chunk % 26)) right.fetch_add(1);
        cache.Release(e, kBytes);
      });
    }
    for (std::thread& r : readers) r.join();
    EXPECT_EQ(loads.load(), 1) << "chunk " << chunk;
    EXPECT_EQ(right.load(), 6) << "chunk " << chunk;
  }
}

// Waits for a load with a lock held that forbids block I/O (a load is a
// read and a decode): the lock order's rule, checked.
void WaitForALoadUnderANoIoLock() {
  ChunkCache cache(1 << 20, 1 << 20);
  ChunkCache::Claim first;
  if (cache.ClaimLoad(CacheKey{1, 1}, &first) != nullptr) std::exit(1);
  Mutex held{LockRank::kAllocator};
  MutexLock lock(held);
  ChunkCache::Claim second;
  cache.ClaimLoad(CacheKey{1, 1}, &second);  // the first claim holds it: a wait
  std::exit(0);
}

TEST(ChunkLoadClaimDeathTest, AWaitUnderALockThatForbidsBlockIoStopsTheProgram) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  testutil::ScopedChecksEnv on("1");
  EXPECT_DEATH(WaitForALoadUnderANoIoLock(), "a chunk load waited for under a lock that forbids block I/O");
}

}  // namespace chunk_load_claim_test
}  // namespace
}  // namespace slabfs::engine
