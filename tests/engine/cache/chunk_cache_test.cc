// The chunk cache: hit and miss counts, LRU order with the w0 preference,
// dirty and pinned entries, no collision evictions, ghost-driven budget
// growth, DirtyEntries, write-behind, EraseDataset and Insert races.
#include "engine/cache/chunk_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace slabfs::engine {
namespace {

std::unique_ptr<char[]> Bytes(size_t n, char fill = 'x') {
  auto p = std::make_unique<char[]>(n);
  std::memset(p.get(), fill, n);
  return p;
}

class ChunkCacheTest : public ::testing::Test {
 protected:
  // Inserts and releases a clean or dirty entry with `used` bytes used.
  static void Add(ChunkCache& c, CacheKey k, size_t bytes, uint64_t used = 0, bool dirty = false) {
    ChunkCache::Entry* e = c.Insert(k, Bytes(bytes), bytes, dirty);
    ASSERT_NE(e, nullptr);
    c.Release(e, used);
  }
  // Whether the key is resident (a lookup: counts, and refreshes recency).
  static bool Has(ChunkCache& c, CacheKey k) {
    ChunkCache::Entry* e = c.Lookup(k);
    if (e) c.Release(e, 0);
    return e != nullptr;
  }
};

TEST_F(ChunkCacheTest, CountsHitsAndMisses) {
  ChunkCache c(1 << 20, 1 << 20);
  EXPECT_EQ(c.Lookup({1, 1}), nullptr);
  EXPECT_EQ(c.Lookup({1, 2}), nullptr);
  Add(c, {1, 1}, 100);
  ChunkCache::Entry* e = c.Lookup({1, 1});
  ASSERT_NE(e, nullptr);
  c.Release(e, 0);
  ASSERT_NE(e = c.Lookup({1, 1}), nullptr);
  c.Release(e, 0);
  CacheStats s = c.stats();
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.hits, 2u);  // Insert counts as neither
  EXPECT_EQ(s.resident_bytes, 100u);
  EXPECT_EQ(s.budget_bytes, 1u << 20);
  EXPECT_EQ(s.evictions, 0u);
}

TEST_F(ChunkCacheTest, CountsTransfersAndBypasses) {
  ChunkCache c(1000, 1000);
  c.CountBytesRead(10);
  c.CountBytesRead(5);
  c.CountBytesWritten(7);
  c.CountBypassRead();
  c.CountBypassWrite();
  c.CountBypassWrite();
  CacheStats s = c.stats();
  EXPECT_EQ(s.bytes_read, 15u);
  EXPECT_EQ(s.bytes_written, 7u);
  EXPECT_EQ(s.bypass_reads, 1u);
  EXPECT_EQ(s.bypass_writes, 2u);
}

TEST_F(ChunkCacheTest, LookupReturnsTheInsertedBytes) {
  ChunkCache c(1000, 1000);
  auto data = Bytes(64, 'q');
  const char* raw = data.get();
  ChunkCache::Entry* e = c.Insert({3, 9}, std::move(data), 64, false);
  c.Release(e, 0);
  ChunkCache::Entry* f = c.Lookup({3, 9});
  ASSERT_EQ(f, e);
  EXPECT_EQ(f->data.get(), raw);
  EXPECT_EQ(f->bytes, 64u);
  EXPECT_EQ(f->key, (CacheKey{3, 9}));
  EXPECT_EQ(f->pins, 1);
  c.Release(f, 0);
  EXPECT_EQ(f->pins, 0);
  // Same chunk number of another dataset is another key.
  EXPECT_EQ(c.Lookup({4, 9}), nullptr);
}

TEST_F(ChunkCacheTest, InsertOfAnExistingKeyReturnsTheExistingEntry) {
  ChunkCache c(1000, 1000);
  ChunkCache::Entry* first = c.Insert({1, 5}, Bytes(100, 'a'), 100, false);
  c.Release(first, 0);
  // Another reader loaded the same chunk meanwhile: its copy is dropped.
  ChunkCache::Entry* second = c.Insert({1, 5}, Bytes(200, 'b'), 200, true);
  EXPECT_EQ(second, first);
  EXPECT_EQ(second->data[0], 'a');
  EXPECT_EQ(second->bytes, 100u);
  EXPECT_FALSE(second->dirty);
  EXPECT_EQ(second->pins, 1);  // pinned for the second inserter
  EXPECT_EQ(c.stats().resident_bytes, 100u);
  EXPECT_EQ(c.dirty_bytes(), 0u);
  // Pinned twice at once: both must release before it can go.
  ChunkCache::Entry* third = c.Insert({1, 5}, Bytes(100, 'c'), 100, false);
  EXPECT_EQ(third, first);
  EXPECT_EQ(first->pins, 2);
  c.Release(second, 0);
  c.EraseDataset(1);
  EXPECT_TRUE(Has(c, {1, 5}));  // still pinned once
  c.Release(third, 0);
  c.EraseDataset(1);
  EXPECT_FALSE(Has(c, {1, 5}));
  EXPECT_EQ(c.stats().resident_bytes, 0u);
}

TEST_F(ChunkCacheTest, EvictsLeastRecentlyUsedFirst) {
  ChunkCache c(300, 300);
  Add(c, {1, 0}, 100);          // A
  Add(c, {1, 1}, 100);          // B
  Add(c, {1, 2}, 100);          // C
  ASSERT_TRUE(Has(c, {1, 0}));  // A is now the most recent: B, C, A
  Add(c, {1, 3}, 100);          // D: B, C, A, D
  EXPECT_TRUE(c.over_budget());
  c.EvictToBudget();
  EXPECT_FALSE(c.over_budget());
  EXPECT_EQ(c.stats().evictions, 1u);
  EXPECT_EQ(c.stats().resident_bytes, 300u);
  EXPECT_FALSE(Has(c, {1, 1}));
  EXPECT_TRUE(Has(c, {1, 2}));  // C, A, D -> A, D, C
  EXPECT_TRUE(Has(c, {1, 0}));  // D, C, A
  EXPECT_TRUE(Has(c, {1, 3}));  // C, A, D
  Add(c, {1, 4}, 100);
  Add(c, {1, 5}, 100);
  c.EvictToBudget();
  EXPECT_FALSE(Has(c, {1, 2}));
  EXPECT_FALSE(Has(c, {1, 0}));
  EXPECT_TRUE(Has(c, {1, 3}));
  EXPECT_TRUE(Has(c, {1, 4}));
  EXPECT_TRUE(Has(c, {1, 5}));
}

TEST_F(ChunkCacheTest, EvictsOnlyUntilTheBudgetFits) {
  ChunkCache c(1000, 1000);
  for (uint64_t i = 0; i < 10; ++i) Add(c, {1, i}, 150);
  c.EvictToBudget();
  CacheStats s = c.stats();
  EXPECT_EQ(s.resident_bytes, 900u);
  EXPECT_EQ(s.evictions, 4u);
  for (uint64_t i = 0; i < 4; ++i) EXPECT_FALSE(Has(c, {1, i})) << i;
  for (uint64_t i = 4; i < 10; ++i) EXPECT_TRUE(Has(c, {1, i})) << i;
}

TEST_F(ChunkCacheTest, EvictsFullyUsedEntriesBeforePartiallyUsedOnes) {
  ChunkCache c(300, 300);
  Add(c, {1, 0}, 100, 0);    // least recent, unused
  Add(c, {1, 1}, 100, 99);   // one byte short of full
  Add(c, {1, 2}, 100, 100);  // most recent, but used in full (w0)
  Add(c, {1, 3}, 100, 0);
  c.EvictToBudget();
  EXPECT_FALSE(Has(c, {1, 2}));
  EXPECT_TRUE(Has(c, {1, 0}));
  EXPECT_TRUE(Has(c, {1, 1}));
  EXPECT_TRUE(Has(c, {1, 3}));
}

TEST_F(ChunkCacheTest, UseAddsUpAcrossReleases) {
  ChunkCache c(200, 200);
  Add(c, {1, 0}, 100, 60);
  Add(c, {1, 1}, 100, 0);
  ChunkCache::Entry* e = c.Lookup({1, 0});
  ASSERT_NE(e, nullptr);
  c.Release(e, 40);  // 60 + 40: now fully used, though the most recent but one
  Add(c, {1, 2}, 100, 0);
  c.EvictToBudget();
  EXPECT_FALSE(Has(c, {1, 0}));
  EXPECT_TRUE(Has(c, {1, 1}));
  EXPECT_TRUE(Has(c, {1, 2}));
}

TEST_F(ChunkCacheTest, FullyUsedEntriesGoInRecencyOrder) {
  ChunkCache c(200, 200);
  Add(c, {1, 0}, 100, 100);
  Add(c, {1, 1}, 100, 100);
  Add(c, {1, 2}, 100, 100);
  ASSERT_TRUE(Has(c, {1, 0}));  // 1, 2, 0
  Add(c, {1, 3}, 100, 100);     // 1, 2, 0, 3
  c.EvictToBudget();
  EXPECT_FALSE(Has(c, {1, 1}));
  EXPECT_FALSE(Has(c, {1, 2}));
  EXPECT_TRUE(Has(c, {1, 0}));
  EXPECT_TRUE(Has(c, {1, 3}));
}

TEST_F(ChunkCacheTest, NeverEvictsDirtyEntries) {
  ChunkCache c(100, 100);
  for (uint64_t i = 0; i < 5; ++i) Add(c, {1, i}, 100, 100, /*dirty=*/true);
  EXPECT_EQ(c.dirty_bytes(), 500u);
  c.EvictToBudget();
  EXPECT_EQ(c.stats().evictions, 0u);
  EXPECT_EQ(c.stats().resident_bytes, 500u);
  EXPECT_TRUE(c.over_budget());
  // Written back: evictable.
  for (uint64_t i : {1, 3}) {
    ChunkCache::Entry* e = c.Lookup({1, i});
    ASSERT_NE(e, nullptr);
    c.MarkClean(e);
    c.Release(e, 0);
  }
  EXPECT_EQ(c.dirty_bytes(), 300u);
  c.EvictToBudget();
  EXPECT_EQ(c.stats().evictions, 2u);
  EXPECT_EQ(c.stats().resident_bytes, 300u);
  for (uint64_t i : {0, 2, 4}) EXPECT_TRUE(Has(c, {1, i})) << i;
  for (uint64_t i : {1, 3}) EXPECT_FALSE(Has(c, {1, i})) << i;
}

TEST_F(ChunkCacheTest, EntryMarkedDirtyAfterInsertIsNotEvicted) {
  ChunkCache c(0, 0);
  ChunkCache::Entry* e = c.Insert({1, 1}, Bytes(10), 10, false);
  c.MarkDirty(e);
  c.MarkDirty(e);  // counted once
  EXPECT_EQ(c.dirty_bytes(), 10u);
  c.Release(e, 10);
  c.EvictToBudget();
  ChunkCache::Entry* again = c.Lookup({1, 1});
  ASSERT_EQ(again, e);
  c.MarkClean(again);
  c.MarkClean(again);  // counted once
  EXPECT_EQ(c.dirty_bytes(), 0u);
  c.Release(again, 0);
  c.EvictToBudget();
  EXPECT_FALSE(Has(c, {1, 1}));
}

TEST_F(ChunkCacheTest, NeverEvictsPinnedEntries) {
  ChunkCache c(100, 100);
  ChunkCache::Entry* a = c.Insert({1, 0}, Bytes(100), 100, false);  // pinned by Insert
  Add(c, {1, 1}, 100, 100);
  ChunkCache::Entry* b = c.Lookup({1, 1});  // pinned by Lookup
  ASSERT_NE(b, nullptr);
  ChunkCache::Entry* d = c.Insert({1, 2}, Bytes(100), 100, false);
  c.EvictToBudget();
  EXPECT_EQ(c.stats().evictions, 0u);
  EXPECT_EQ(c.stats().resident_bytes, 300u);
  // The pinned bytes stay valid and unchanged.
  EXPECT_EQ(a->data[99], 'x');
  EXPECT_EQ(b->key, (CacheKey{1, 1}));
  c.Release(a, 0);
  c.Release(b, 0);
  c.EvictToBudget();
  EXPECT_EQ(c.stats().resident_bytes, 100u);  // d stays: pinned
  EXPECT_EQ(d->pins, 1);
  c.Release(d, 0);
  c.EraseDataset(1);
  EXPECT_EQ(c.stats().resident_bytes, 0u);
}

TEST_F(ChunkCacheTest, KeepsThousandsOfDistinctKeysWithinTheBudget) {
  // Keys a direct-mapped table would fold onto few slots (strided chunk
  // numbers, several datasets): a hash map keeps them all.
  constexpr uint64_t kKeys = 20000, kBytes = 64;
  ChunkCache c(kKeys * kBytes, kKeys * kBytes);
  std::vector<CacheKey> keys;
  for (uint64_t i = 0; i < kKeys; ++i) keys.push_back({1 + i % 5, (i / 5) * 4096});
  for (const auto& k : keys) {
    Add(c, k, kBytes);
    c.EvictToBudget();
  }
  CacheStats s = c.stats();
  EXPECT_EQ(s.evictions, 0u);
  EXPECT_EQ(s.resident_bytes, kKeys * kBytes);
  for (const auto& k : keys) ASSERT_TRUE(Has(c, k)) << k.dataset << "/" << k.chunk;
  EXPECT_EQ(c.stats().hits, kKeys);
  EXPECT_EQ(c.stats().misses, 0u);
}

TEST_F(ChunkCacheTest, HashSpreadsNearbyKeys) {
  CacheKeyHash h;
  std::set<size_t> seen;
  for (uint64_t d = 1; d <= 8; ++d)
    for (uint64_t i = 0; i < 1000; ++i) seen.insert(h({d, i}));
  EXPECT_EQ(seen.size(), 8000u);
}

// ------------------------------------------------------------ ghosts and budget

TEST_F(ChunkCacheTest, GhostHitsGrowTheBudgetUpToMaxBudget) {
  constexpr uint64_t kChunk = 8192;
  const uint64_t max_budget = 5 * kChunk + 100;
  ChunkCache c(3 * kChunk, max_budget);
  for (uint64_t i = 0; i < 10; ++i) {
    Add(c, {1, i}, kChunk);
    c.EvictToBudget();
  }
  ASSERT_EQ(c.stats().evictions, 7u);  // chunks 0..6 are ghosts
  // Each miss on a ghost grows the budget by a chunk, until max_budget.
  const uint64_t expect[] = {4 * kChunk, 5 * kChunk, max_budget, max_budget, max_budget, max_budget, max_budget};
  for (uint64_t i = 0; i < 7; ++i) {
    EXPECT_EQ(c.Lookup({1, i}), nullptr);
    EXPECT_EQ(c.stats().budget_bytes, expect[i]) << "after ghost hit " << i;
  }
  // Growth and refill, many times over: never past max_budget.
  for (uint64_t i = 100; i < 400; ++i) {
    if (!Has(c, {1, i % 150})) Add(c, {1, i % 150}, kChunk);
    c.EvictToBudget();
    ASSERT_LE(c.stats().budget_bytes, max_budget);
    ASSERT_LE(c.stats().resident_bytes, max_budget);
  }
  EXPECT_EQ(c.stats().budget_bytes, max_budget);
}

TEST_F(ChunkCacheTest, GrownBudgetHoldsMoreEntries) {
  constexpr uint64_t kChunk = 4096;
  ChunkCache c(2 * kChunk, 4 * kChunk);
  for (uint64_t i = 0; i < 4; ++i) {
    Add(c, {1, i}, kChunk);
    c.EvictToBudget();
  }
  ASSERT_FALSE(Has(c, {1, 0}));  // a ghost: grows the budget
  ASSERT_FALSE(Has(c, {1, 1}));  // again
  EXPECT_EQ(c.stats().budget_bytes, 4 * kChunk);
  Add(c, {1, 0}, kChunk);
  Add(c, {1, 1}, kChunk);
  c.EvictToBudget();
  for (uint64_t i = 0; i < 4; ++i) EXPECT_TRUE(Has(c, {1, i})) << i;
}

TEST_F(ChunkCacheTest, MissesOnUnknownKeysDoNotGrowTheBudget) {
  ChunkCache c(1000, 100000);
  for (uint64_t i = 0; i < 100; ++i) EXPECT_EQ(c.Lookup({1, i}), nullptr);
  EXPECT_EQ(c.stats().budget_bytes, 1000u);
}

TEST_F(ChunkCacheTest, FullyUsedEvictionsLeaveNoGhost) {
  // A sequential pass: each chunk used up in one go, then evicted.
  constexpr uint64_t kChunk = 4096;
  ChunkCache c(2 * kChunk, 100 * kChunk);
  for (int pass = 0; pass < 3; ++pass) {
    for (uint64_t i = 0; i < 20; ++i) {
      ChunkCache::Entry* e = c.Lookup({1, i});
      if (!e) e = c.Insert({1, i}, Bytes(kChunk), kChunk, false);
      c.Release(e, kChunk);
      c.EvictToBudget();
    }
  }
  EXPECT_EQ(c.stats().budget_bytes, 2 * kChunk);
  EXPECT_GT(c.stats().evictions, 50u);
}

TEST_F(ChunkCacheTest, MaxBudgetBelowBudgetMeansAFixedBudget) {
  ChunkCache c(2 * 4096, 10);
  for (uint64_t i = 0; i < 5; ++i) {
    Add(c, {1, i}, 4096);
    c.EvictToBudget();
  }
  for (uint64_t i = 0; i < 5; ++i) Has(c, {1, i});
  EXPECT_EQ(c.stats().budget_bytes, 2 * 4096u);
}

// ------------------------------------------------------------ datasets

TEST_F(ChunkCacheTest, DirtyEntriesReturnsOnlyThatDatasetsDirtyEntries) {
  ChunkCache c(1 << 20, 1 << 20);
  Add(c, {1, 0}, 10, 0, true);
  Add(c, {1, 1}, 20, 0, true);
  Add(c, {1, 2}, 30, 0, false);
  Add(c, {2, 0}, 40, 0, true);
  Add(c, {2, 1}, 50, 50, true);
  EXPECT_EQ(c.dirty_bytes(), 120u);

  std::vector<ChunkCache::Entry*> d1 = c.DirtyEntries(1);
  std::set<uint64_t> chunks;
  for (auto* e : d1) {
    EXPECT_EQ(e->key.dataset, 1u);
    EXPECT_TRUE(e->dirty);
    EXPECT_EQ(e->pins, 1);  // pinned for the caller
    chunks.insert(e->key.chunk);
  }
  EXPECT_EQ(chunks, (std::set<uint64_t>{0, 1}));
  EXPECT_TRUE(c.DirtyEntries(3).empty());

  // The caller writes them back, marks them clean and releases them.
  for (auto* e : d1) {
    c.MarkClean(e);
    c.Release(e, 0);
  }
  EXPECT_EQ(c.dirty_bytes(), 90u);
  EXPECT_TRUE(c.DirtyEntries(1).empty());
  std::vector<ChunkCache::Entry*> d2 = c.DirtyEntries(2);
  EXPECT_EQ(d2.size(), 2u);
  for (auto* e : d2) c.Release(e, 0);
}

TEST_F(ChunkCacheTest, DirtyEntriesRespectsMaxEntries) {
  ChunkCache c(1 << 20, 1 << 20);
  for (uint64_t i = 0; i < 10; ++i) Add(c, {7, i}, 10, 0, true);
  std::vector<ChunkCache::Entry*> some = c.DirtyEntries(7, 3);
  EXPECT_EQ(some.size(), 3u);
  for (auto* e : some) c.Release(e, 0);
  EXPECT_TRUE(c.DirtyEntries(7, 0).empty());
  std::vector<ChunkCache::Entry*> all = c.DirtyEntries(7);
  EXPECT_EQ(all.size(), 10u);
  for (auto* e : all) c.Release(e, 0);
  // Nothing stays pinned.
  for (uint64_t i = 0; i < 10; ++i) {
    ChunkCache::Entry* e = c.Lookup({7, i});
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->pins, 1);
    c.Release(e, 0);
  }
}

TEST_F(ChunkCacheTest, DirtyEntriesComeLeastRecentlyUsedFirst) {
  ChunkCache c(1 << 20, 1 << 20);
  for (uint64_t i : {5, 3, 9, 1}) Add(c, {1, i}, 10, 0, true);
  ASSERT_TRUE(Has(c, {1, 3}));  // 5, 9, 1, 3
  std::vector<ChunkCache::Entry*> d = c.DirtyEntries(1);
  std::vector<uint64_t> order;
  for (auto* e : d) {
    order.push_back(e->key.chunk);
    c.Release(e, 0);
  }
  EXPECT_EQ(order, (std::vector<uint64_t>{5, 9, 1, 3}));
}

TEST_F(ChunkCacheTest, ShedCandidatesAreFullyUsedDirtyEntriesFirst) {
  ChunkCache c(50, 50);          // room for 5 entries of 10
  Add(c, {1, 0}, 10, 10, true);  // done with
  Add(c, {1, 1}, 10, 4, true);   // being filled
  Add(c, {1, 2}, 10, 10, true);  // done with
  Add(c, {2, 3}, 10, 10, true);  // another dataset's
  Add(c, {1, 4}, 10, 0, false);  // clean
  Add(c, {1, 5}, 10, 3, true);   // being filled
  Add(c, {1, 6}, 10, 5, true);   // being filled
  std::vector<ChunkCache::Entry*> d = c.ShedCandidates(1, 16);
  std::vector<uint64_t> got;
  for (auto* e : d) got.push_back(e->key.chunk);
  EXPECT_EQ(got, (std::vector<uint64_t>{0, 2}));  // none still being filled
  for (auto* e : d) {
    c.MarkClean(e);
    c.Release(e, 0);
  }
  // With nothing fully used left, as few entries being filled as cover
  // what is over, least recently used first.
  c.EvictToBudget();  // 0 and 2, now clean
  EXPECT_EQ(c.stats().resident_bytes, 50u);
  Add(c, {1, 7}, 10, 1, true);
  c.EvictToBudget();  // 4, the last clean one
  Add(c, {1, 8}, 10, 1, true);
  c.EvictToBudget();  // nothing clean left
  ASSERT_EQ(c.stats().resident_bytes, 60u);
  d = c.ShedCandidates(1, 16);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0]->key.chunk, 1u);
  c.MarkClean(d[0]);
  c.Release(d[0], 0);
  c.EvictToBudget();
  EXPECT_FALSE(c.over_budget());
  EXPECT_TRUE(c.ShedCandidates(1, 16).empty());  // within budget: nothing to shed
}

TEST_F(ChunkCacheTest, WriteBehindTakesChunksStreamedInFullOnceTheyFillTheWindow) {
  ChunkCache c(800, 800);  // window: 800 / 8 = 100 bytes, ten entries of 10 one-byte elements
  ASSERT_EQ(c.write_behind_window(), 100u);
  // Whether the write finished the chunk.
  auto write = [&](CacheKey k, uint64_t lo, uint64_t hi) {
    ChunkCache::Entry* e = c.Lookup(k);
    EXPECT_NE(e, nullptr);
    if (e == nullptr) return false;
    c.MarkDirty(e);
    return c.ReleaseWritten(e, hi - lo, hi - lo, lo, hi, 10);
  };
  for (uint64_t i = 0; i < 12; ++i) Add(c, {1, i}, 10);
  Add(c, {2, 0}, 10);
  // Read in full and then changed in part: fully used, not finished.
  ChunkCache::Entry* e = c.Lookup({1, 11});
  c.Release(e, 10);
  write({1, 11}, 0, 3);
  // Covered, but out of order: not finished.
  write({1, 10}, 5, 10);
  EXPECT_FALSE(write({1, 10}, 0, 5));
  // Streamed in order in pieces that cover the chunk: finished.
  for (uint64_t i = 0; i < 9; ++i) {
    write({1, i}, 0, 4);
    write({1, i}, 4, 10);
  }
  write({2, 0}, 0, 10);                     // another dataset's: not counted for dataset 1
  EXPECT_FALSE(write({1, 9}, 0, 9));        // one element short
  EXPECT_TRUE(c.FinishedDirty(1).empty());  // 90 bytes finished: under the window
  EXPECT_TRUE(write({1, 9}, 9, 10));
  std::vector<ChunkCache::Entry*> f = c.FinishedDirty(1);
  std::vector<uint64_t> got;
  for (auto* x : f) got.push_back(x->key.chunk);
  EXPECT_EQ(got, (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));  // least recently used first
  std::vector<CacheKey> keys;
  for (auto* x : f) {
    keys.push_back(x->key);
    c.MarkClean(x);  // stored
    c.Release(x, 0);
  }
  const uint64_t evictions = c.stats().evictions;
  c.EvictStored(keys);
  EXPECT_EQ(c.stats().evictions - evictions, 10u);
  EXPECT_EQ(c.stats().resident_bytes, 30u);  // 10 and 11 of dataset 1, 0 of dataset 2
  EXPECT_TRUE(c.HoldsChanges({1, 10}));
  EXPECT_TRUE(c.HoldsChanges({1, 11}));
  // Once stored, writes count anew: an out-of-order entry stored (by a
  // commit) and then streamed in full is finished.
  std::vector<ChunkCache::Entry*> d = c.DirtyEntries(1);
  for (auto* x : d) {
    c.MarkClean(x);
    c.Release(x, 0);
  }
  write({1, 10}, 0, 10);
  for (uint64_t i = 20; i < 29; ++i) {
    Add(c, {1, i}, 10);
    write({1, i}, 0, 10);
  }
  f = c.FinishedDirty(1);
  ASSERT_EQ(f.size(), 10u);
  for (auto* x : f) {
    c.MarkClean(x);
    c.Release(x, 0);
  }
  write({1, 20}, 0, 5);
  EXPECT_TRUE(c.FinishedDirty(1).empty());
  // A pinned or dirty entry is not evicted by EvictStored.
  ChunkCache::Entry* pinned = c.Lookup({1, 21});
  c.EvictStored({{1, 20}, {1, 21}, {1, 99}});
  EXPECT_TRUE(c.Contains({1, 20}));  // dirty again
  EXPECT_TRUE(c.Contains({1, 21}));  // pinned
  c.Release(pinned, 0);
  c.EvictStored({{1, 21}});
  EXPECT_FALSE(c.Contains({1, 21}));
}

TEST_F(ChunkCacheTest, CacheOnRepeatSaysYesWhenReadsOverlap) {
  ChunkCache c(1 << 20, 1 << 20);
  // Pieces that do not overlap, in any order: a streaming pass (the
  // kernel's read-ahead requests may arrive out of order), never cached.
  EXPECT_FALSE(c.CacheOnRepeat({1, 5}, 0, 100));
  EXPECT_FALSE(c.CacheOnRepeat({1, 5}, 200, 300));
  EXPECT_FALSE(c.CacheOnRepeat({1, 5}, 100, 200));
  EXPECT_FALSE(c.CacheOnRepeat({2, 5}, 100, 200));  // another dataset
  EXPECT_FALSE(c.CacheOnRepeat({1, 6}, 100, 200));  // another chunk
  // The same elements again, read by any of the last few reads: cache it.
  EXPECT_TRUE(c.CacheOnRepeat({1, 5}, 10, 20));
  EXPECT_FALSE(c.CacheOnRepeat({1, 5}, 0, 10));  // taken: counts anew
  EXPECT_TRUE(c.CacheOnRepeat({1, 5}, 0, 10));
  // A window moving across a chunk: its rows interleave with the last.
  EXPECT_FALSE(c.CacheOnRepeat({1, 7}, 0, 64 * 256 - 192));
  EXPECT_TRUE(c.CacheOnRepeat({1, 7}, 64, 64 * 256 - 128));
  // It remembers a bounded number of chunks, the oldest dropped first.
  for (uint64_t i = 100; i < 100 + 20000; ++i) EXPECT_FALSE(c.CacheOnRepeat({3, i}, 0, 10));
  EXPECT_FALSE(c.CacheOnRepeat({1, 6}, 100, 200));
  EXPECT_TRUE(c.CacheOnRepeat({3, 100 + 19999}, 0, 10));
}

TEST_F(ChunkCacheTest, ShedCandidatesRespectsMaxEntries) {
  ChunkCache c(0, 0);
  for (uint64_t i = 0; i < 10; ++i) Add(c, {1, i}, 10, 10, true);
  std::vector<ChunkCache::Entry*> d = c.ShedCandidates(1, 4);
  EXPECT_EQ(d.size(), 4u);
  for (auto* e : d) c.Release(e, 0);
}

TEST_F(ChunkCacheTest, DirtyEntriesStayResidentWhilePinnedAfterMarkClean) {
  ChunkCache c(0, 0);
  Add(c, {1, 0}, 100, 0, true);
  std::vector<ChunkCache::Entry*> d = c.DirtyEntries(1);
  ASSERT_EQ(d.size(), 1u);
  c.MarkClean(d[0]);
  c.EvictToBudget();  // clean but pinned by DirtyEntries
  EXPECT_EQ(c.stats().resident_bytes, 100u);
  c.Release(d[0], 0);
  c.EvictToBudget();
  EXPECT_EQ(c.stats().resident_bytes, 0u);
}

TEST_F(ChunkCacheTest, EraseDatasetDropsEveryEntryOfThatDataset) {
  ChunkCache c(1 << 20, 1 << 20);
  for (uint64_t i = 0; i < 50; ++i) {
    Add(c, {1, i}, 10, i % 3 == 0 ? 10 : 0, i % 2 == 0);
    Add(c, {2, i}, 20, 0, i % 5 == 0);
  }
  const uint64_t dirty2 = 10 * 20;
  c.EraseDataset(1);
  EXPECT_EQ(c.stats().resident_bytes, 50u * 20);
  EXPECT_EQ(c.dirty_bytes(), dirty2);
  EXPECT_TRUE(c.DirtyEntries(1).empty());
  for (uint64_t i = 0; i < 50; ++i) {
    EXPECT_FALSE(Has(c, {1, i})) << i;
    EXPECT_TRUE(Has(c, {2, i})) << i;
  }
  // The dataset's keys can be used again (a new dataset with the same id).
  Add(c, {1, 0}, 30);
  EXPECT_TRUE(Has(c, {1, 0}));
  c.EraseDataset(3);  // nothing there: a no-op
  EXPECT_EQ(c.stats().resident_bytes, 50u * 20 + 30);
}

TEST_F(ChunkCacheTest, EraseDatasetLeavesPinnedEntries) {
  ChunkCache c(1000, 1000);
  ChunkCache::Entry* e = c.Insert({1, 1}, Bytes(10), 10, true);
  c.EraseDataset(1);
  EXPECT_EQ(c.stats().resident_bytes, 10u);
  c.Release(e, 0);
  c.EraseDataset(1);
  EXPECT_EQ(c.stats().resident_bytes, 0u);
  EXPECT_EQ(c.dirty_bytes(), 0u);
  c.EraseDataset(99);  // absent: a no-op
}

// ------------------------------------------------------------ buffer recycling

TEST_F(ChunkCacheTest, TakeBufferGivesNewMemoryWhenNothingIsPooled) {
  ChunkCache c(1000, 1000);
  std::unique_ptr<char[]> a = c.TakeBuffer(100), b = c.TakeBuffer(100);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a.get(), b.get());
  std::memset(a.get(), 1, 100);  // usable for all 100 bytes (ASan checks)
}

TEST_F(ChunkCacheTest, RecyclesTheBufferOfAnEvictedEntryOfTheSameSize) {
  ChunkCache c(4096, 4096);
  std::unique_ptr<char[]> data = c.TakeBuffer(4096);
  const char* raw = data.get();
  c.Release(c.Insert({1, 0}, std::move(data), 4096, false), 0);
  Add(c, {1, 1}, 4096);
  c.EvictToBudget();  // evicts {1, 0}
  ASSERT_FALSE(Has(c, {1, 0}));
  std::unique_ptr<char[]> other_size = c.TakeBuffer(2048);
  EXPECT_NE(other_size.get(), raw);
  std::unique_ptr<char[]> same_size = c.TakeBuffer(4096);
  EXPECT_EQ(same_size.get(), raw);
  // Taken once: the next one is other memory.
  std::unique_ptr<char[]> next = c.TakeBuffer(4096);
  EXPECT_NE(next.get(), raw);
}

TEST_F(ChunkCacheTest, RecyclesBuffersOfErasedEntriesAndDroppedDuplicates) {
  ChunkCache c(1 << 20, 1 << 20);
  auto first = Bytes(512), dup = Bytes(512), erased = Bytes(512);
  std::set<const char*> raws = {first.get(), dup.get(), erased.get()};
  c.Release(c.Insert({1, 0}, std::move(first), 512, false), 0);
  c.Release(c.Insert({1, 0}, std::move(dup), 512, false), 0);  // the copy is dropped: pooled
  c.Release(c.Insert({2, 0}, std::move(erased), 512, true), 0);
  c.EraseDataset(2);
  std::set<const char*> taken;
  auto t1 = c.TakeBuffer(512), t2 = c.TakeBuffer(512);
  taken = {t1.get(), t2.get()};
  EXPECT_EQ(taken.size(), 2u);
  for (const char* p : taken) EXPECT_TRUE(raws.count(p)) << "not a recycled buffer";
  // The live entry's buffer was not handed out.
  ChunkCache::Entry* live = c.Lookup({1, 0});
  ASSERT_NE(live, nullptr);
  EXPECT_FALSE(taken.count(live->data.get()));
  c.Release(live, 0);
}

// Release counts use and unpins without the cache's lock (it takes it only
// when the entry becomes fully used): with threads releasing the same
// entries at once, every byte of use is counted, every pin dropped, and an
// entry used up moves to the list evicted first exactly as on one thread.
TEST_F(ChunkCacheTest, ConcurrentReleasesCountEveryUseAndUnpin) {
  constexpr uint64_t kChunk = 4096;
  ChunkCache c(64 * kChunk, 64 * kChunk);
  for (uint64_t k = 0; k < 8; ++k) Add(c, {1, k}, kChunk);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&c] {
      for (int i = 0; i < 2000; ++i) {
        // Chunks 0-3 are used up (1000 releases of 5 bytes each), 4-7 not.
        const uint64_t k = i % 8;
        ChunkCache::Entry* e = c.Lookup({1, k});
        ASSERT_NE(e, nullptr);
        c.Release(e, k < 4 ? 5 : 0);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (uint64_t k = 0; k < 8; ++k) {
    ChunkCache::Entry* e = c.Lookup({1, k});
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->pins.load(), 1) << k;
    EXPECT_EQ(e->used.load(), k < 4 ? 5000u : 0u) << k;
    c.Release(e, 0);
  }
  // The used-up chunks go first, though they were looked up last.
  for (uint64_t k = 0; k < 4; ++k) EXPECT_TRUE(Has(c, {1, k}));
  Add(c, {2, 0}, 60 * kChunk);
  c.EvictToBudget();
  for (uint64_t k = 0; k < 8; ++k) EXPECT_EQ(c.Contains({1, k}), k >= 4) << k;
}

TEST_F(ChunkCacheTest, SurvivesConcurrentUse) {
  constexpr uint64_t kChunk = 256;
  ChunkCache c(64 * kChunk, 256 * kChunk);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&c, &wrong, t] {
      std::mt19937_64 rng(t);
      for (int i = 0; i < 5000; ++i) {
        CacheKey k{1 + rng() % 3, rng() % 200};
        ChunkCache::Entry* e = c.Lookup(k);
        if (!e) e = c.Insert(k, Bytes(kChunk, static_cast<char>(k.chunk)), kChunk, false);
        // The bytes are the chunk's, whoever loaded it.
        if (e->data[kChunk - 1] != static_cast<char>(k.chunk) || !(e->key == k)) ++wrong;
        c.Release(e, rng() % (kChunk + 1));
        if (i % 16 == 0) c.EvictToBudget();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  c.EvictToBudget();
  CacheStats s = c.stats();
  EXPECT_LE(s.resident_bytes, s.budget_bytes);
  EXPECT_LE(s.budget_bytes, 256 * kChunk);
  EXPECT_EQ(s.hits + s.misses, 4u * 5000);
  EXPECT_EQ(s.resident_bytes % kChunk, 0u);
}

}  // namespace
}  // namespace slabfs::engine

namespace slabfs::engine {
namespace {

// A chunk evicted, wanted again, re-inserted and evicted again must stay a
// ghost for the next kMaxGhosts (8192) evictions.
TEST_F(ChunkCacheTest, ReEvictedChunkStaysAGhost) {
  const size_t kChunk = 4096;
  ChunkCache c(kChunk, uint64_t{1} << 40);
  const CacheKey k{1, 0};
  Add(c, k, kChunk);
  Add(c, {1, 1}, kChunk);  // evicts k
  c.EvictToBudget();
  ASSERT_FALSE(Has(c, k));  // a ghost hit: the budget grows
  Add(c, k, kChunk);
  uint64_t budget = c.stats().budget_bytes;
  // Fill past the grown budget so that k is evicted again, then 8191 others.
  for (uint64_t i = 2; i < 2 + 8191 + budget / kChunk; ++i) {
    Add(c, {1, i}, kChunk);
    c.EvictToBudget();
  }
  ASSERT_FALSE(Has(c, k));
  EXPECT_GT(c.stats().budget_bytes, budget);
}

}  // namespace
}  // namespace slabfs::engine
