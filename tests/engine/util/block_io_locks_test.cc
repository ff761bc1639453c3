// Every build counts the locks a thread holds whose rank forbids block I/O
// (engine/util/lock_order.h), so that BlockStore and the tests' fake file
// can check the lock order's rule: no block read or written under one.
#include <gtest/gtest.h>

#include <thread>

#include "engine/util/lock_order.h"
#include "engine/util/mutex.h"
#include "tests/testutil/fault_file.h"

namespace slabfs::engine {
namespace {

TEST(BlockIoLocksTest, RanksPastTheIndexLoadsForbidBlockIo) {
  EXPECT_TRUE(RankAllowsBlockIo(LockRank::kContainerCommit));
  EXPECT_TRUE(RankAllowsBlockIo(LockRank::kDataset));
  EXPECT_TRUE(RankAllowsBlockIo(LockRank::kIndexLoad));
  EXPECT_TRUE(RankAllowsBlockIo(LockRank::kUnranked));
  for (LockRank r : {LockRank::kDirtyDatasets, LockRank::kDiskRoom, LockRank::kAllocator, LockRank::kDatasetPath,
                     LockRank::kChunkCache, LockRank::kBufferPool, LockRank::kChunkLoad, LockRank::kThreadPool})
    EXPECT_FALSE(RankAllowsBlockIo(r)) << LockRankName(r);
}

TEST(BlockIoLocksTest, CountsTheLocksThisThreadHoldsThatForbidBlockIo) {
  Mutex index{LockRank::kIndexLoad};
  Mutex cache{LockRank::kChunkCache};
  Mutex pool{LockRank::kBufferPool};
  EXPECT_EQ(NoBlockIoLocksHeld(), 0);
  {
    MutexLock li(index);  // block I/O allowed: not counted
    EXPECT_EQ(NoBlockIoLocksHeld(), 0);
    {
      MutexLock lc(cache);
      EXPECT_EQ(NoBlockIoLocksHeld(), 1);
      {
        MutexLock lp(pool);
        EXPECT_EQ(NoBlockIoLocksHeld(), 2);
      }
      EXPECT_EQ(NoBlockIoLocksHeld(), 1);
      // Another thread holds none of them.
      std::thread([] { EXPECT_EQ(NoBlockIoLocksHeld(), 0); }).join();
    }
    EXPECT_EQ(NoBlockIoLocksHeld(), 0);
  }
  {
    // A private object's lock is outside the order, and not counted.
    MutexLock lc(cache, kPrivateObject);
    EXPECT_EQ(NoBlockIoLocksHeld(), 0);
  }
  EXPECT_EQ(NoBlockIoLocksHeld(), 0);
}

TEST(BlockIoLocksTest, TheFakeFileCountsIoUnderALockThatForbidsIt) {
  auto disk = std::make_shared<testutil::Disk>();
  testutil::FaultFile file(disk);
  char buf[4] = {1, 2, 3, 4};
  ASSERT_TRUE(file.WriteAt(0, buf, 4).ok());
  ASSERT_TRUE(file.ReadAt(0, buf, 4).ok());
  EXPECT_EQ(disk->io_under_no_block_io_lock, 0);
  Mutex mu{LockRank::kChunkCache};
  {
    MutexLock lock(mu);
    ASSERT_TRUE(file.ReadAt(0, buf, 4).ok());
    ASSERT_TRUE(file.WriteAt(0, buf, 4).ok());
  }
  EXPECT_EQ(disk->io_under_no_block_io_lock, 2);
}

}  // namespace
}  // namespace slabfs::engine
