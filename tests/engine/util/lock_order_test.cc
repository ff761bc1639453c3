// The lock order of engine/util/lock_order.h, checked at run time: a lock
// taken out of order, a second lock of one rank and a lock taken twice
// abort naming the locks; locks taken in order, shared, released in any
// order or of a private object pass. The mutexes here check in every
// build (BasicMutex<Raw, true>); the engine's own mutexes check where the
// order is checked at run time (builds without NDEBUG, and wherever
// ExpensiveChecks(): the last test here).
#include "engine/util/lock_order.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>

#include "engine/util/mutex.h"
#include "tests/testutil/scoped_checks_env.h"

namespace slabfs::engine {
namespace {

using CheckedMutex = BasicMutex<std::mutex, true>;
using CheckedAdaptiveMutex = BasicMutex<AdaptiveMutex, true>;
using CheckedSharedMutex = BasicSharedMutex<true>;

class LockOrderTest : public ::testing::Test {
 protected:
  // The engine's thread pool may have started threads: a death test
  // re-runs the test in a fresh process rather than fork this one.
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(LockOrderTest, AcceptsLocksTakenInOrder) {
  CheckedSharedMutex commit{LockRank::kContainerCommit};
  CheckedSharedMutex ns{LockRank::kContainerNamespace};
  CheckedSharedMutex rw{LockRank::kDataset};
  CheckedMutex merge{LockRank::kChunkMerge};
  CheckedMutex alloc{LockRank::kAllocator};
  CheckedAdaptiveMutex cache{LockRank::kChunkCache};
  CheckedMutex pool{LockRank::kBufferPool};
  ReaderLock c(commit);
  WriterLock n(ns);
  ReaderLock r(rw);
  MutexLock m(merge);
  MutexLock a(alloc);
  MutexLock k(cache);
  MutexLock p(pool);
  commit.AssertReaderHeld();
  ns.AssertHeld();
  rw.AssertReaderHeld();
  cache.AssertHeld();
}

TEST_F(LockOrderTest, AbortsOnALockTakenOutOfOrder) {
  CheckedSharedMutex commit{LockRank::kContainerCommit};
  CheckedSharedMutex rw{LockRank::kDataset};
  // A dataset operation that would take the commit lock inside its own:
  // against a commit (commit_mu_, then each dataset's rw_) it deadlocks.
  EXPECT_DEATH(
      {
        ReaderLock r(rw);
        ReaderLock c(commit);
      },
      "lock order violated: taking ContainerImpl::commit_mu_ .*while holding DatasetState::rw_");
}

TEST_F(LockOrderTest, AbortsOnALeafTakenUnderALaterLeaf) {
  CheckedAdaptiveMutex cache{LockRank::kChunkCache};
  CheckedMutex alloc{LockRank::kAllocator};
  EXPECT_DEATH(
      {
        MutexLock k(cache);
        MutexLock a(alloc);
      },
      "taking Allocator::mu_ .*while holding ChunkCache::mu_");
}

TEST_F(LockOrderTest, AbortsOnTwoLocksOfOneRank) {
  CheckedSharedMutex rw1{LockRank::kDataset};
  CheckedSharedMutex rw2{LockRank::kDataset};
  // Two datasets locked by one thread: two threads doing so in opposite
  // orders deadlock.
  EXPECT_DEATH(
      {
        WriterLock a(rw1);
        ReaderLock b(rw2);
      },
      "taking DatasetState::rw_ .*while holding DatasetState::rw_");
}

TEST_F(LockOrderTest, AbortsOnALockTakenTwice) {
  CheckedSharedMutex ns{LockRank::kContainerNamespace};
  EXPECT_DEATH(
      {
        ReaderLock a(ns);
        ReaderLock b(ns);
      },
      "taking ContainerImpl::ns_mu_ .*which this thread already holds");
}

TEST_F(LockOrderTest, AcceptsAPrivateObjectUnderALiveOne) {
  CheckedSharedMutex live{LockRank::kDataset};
  CheckedSharedMutex fresh{LockRank::kDataset};
  CheckedAdaptiveMutex cache{LockRank::kChunkCache};
  WriterLock a(live);
  WriterLock b(fresh, kPrivateObject);
  fresh.AssertHeld();
  // Locks taken under both still follow the live one's rank.
  MutexLock k(cache);
}

TEST_F(LockOrderTest, ForgetsReleasedLocksInAnyOrder) {
  CheckedSharedMutex commit{LockRank::kContainerCommit};
  CheckedSharedMutex rw{LockRank::kDataset};
  CheckedMutex merge{LockRank::kChunkMerge};
  commit.LockShared();
  rw.Lock();
  commit.UnlockShared();  // not the last one taken
  merge.Lock();
  merge.Unlock();
  rw.Unlock();
  // Nothing is held any more: the outermost lock may be taken again.
  WriterLock c(commit);
  MutexLock m(merge);
}

TEST_F(LockOrderTest, AssertHeldAbortsUnlessHeld) {
  CheckedMutex alloc{LockRank::kAllocator};
  EXPECT_DEATH(alloc.AssertHeld(), "Allocator::mu_ .*should be held by this thread and is not");
  CheckedSharedMutex commit{LockRank::kContainerCommit};
  // Held shared is not held exclusively (what the commit's helpers need).
  EXPECT_DEATH(
      {
        ReaderLock c(commit);
        commit.AssertHeld();
      },
      "ContainerImpl::commit_mu_ .*should be held by this thread and is not");
}

TEST_F(LockOrderTest, EveryRankIsNamed) {
  for (LockRank r : {LockRank::kContainerCommit, LockRank::kContainerNamespace, LockRank::kDataset,
                     LockRank::kChunkMerge, LockRank::kIndexLoad, LockRank::kDirtyDatasets, LockRank::kDiskRoom,
                     LockRank::kAllocator, LockRank::kDatasetPath, LockRank::kChunkCache, LockRank::kBufferPool,
                     LockRank::kChunkLoad, LockRank::kThreadPool}) {
    EXPECT_NE(std::string(LockRankName(r)), "a mutex of an unknown rank") << static_cast<int>(r);
  }
}

using testutil::ScopedChecksEnv;

// The engine's own mutexes (Mutex: no forced check) taken out of order.
void TakeTwoEngineMutexesOutOfOrder() {
  Mutex cache{LockRank::kChunkCache};
  Mutex alloc{LockRank::kAllocator};
  MutexLock c(cache);
  MutexLock a(alloc);
  std::exit(0);
}

// ctest runs every test with SLABFS_EXPENSIVE_CHECKS=1 (tests/run.sh): a
// program started with it checks the order in any build, the release build
// that the daemon, quickstart and the benchmarks use included.
TEST_F(LockOrderTest, EngineMutexesCheckWhenTheEnvironmentAsks) {
  ScopedChecksEnv on("1");
  EXPECT_DEATH(TakeTwoEngineMutexesOutOfOrder(), "lock order violated: taking Allocator::mu_");
}

// Without it, a release build's engine mutexes cost only the flag's test;
// builds without NDEBUG and the sanitizer builds check anyway.
TEST_F(LockOrderTest, EngineMutexesCheckOnlyWhereAsked) {
  ScopedChecksEnv off("0");
#if SLABFS_LOCK_ORDER_CHECKS || defined(SLABFS_EXPENSIVE_CHECKS)
  EXPECT_DEATH(TakeTwoEngineMutexesOutOfOrder(), "lock order violated: taking Allocator::mu_");
#else
  EXPECT_EXIT(TakeTwoEngineMutexesOutOfOrder(), ::testing::ExitedWithCode(0), "");
#endif
}

}  // namespace
}  // namespace slabfs::engine
