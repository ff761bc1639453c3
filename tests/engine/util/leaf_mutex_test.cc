// LeafMutex counts the leaf locks the calling thread holds, so that the
// places that touch the file can check the lock order (no file I/O under a
// leaf lock); the tests' fake file counts the I/O it sees under one.
#include "engine/util/leaf_mutex.h"

#include <gtest/gtest.h>

#include <mutex>
#include <thread>

#include "engine/util/adaptive_mutex.h"
#include "tests/testutil/fault_file.h"

namespace slabfs::engine {
namespace {

TEST(LeafMutexTest, CountsTheLeafLocksThisThreadHolds) {
  LeafMutex<std::mutex> a;
  LeafMutex<AdaptiveMutex> b;
  EXPECT_EQ(LeafLocksHeld(), 0);
  {
    std::lock_guard la(a);
    EXPECT_EQ(LeafLocksHeld(), 1);
    {
      std::unique_lock lb(b);
      EXPECT_EQ(LeafLocksHeld(), 2);
      lb.unlock();
      EXPECT_EQ(LeafLocksHeld(), 1);
      ASSERT_TRUE(lb.try_lock());
      EXPECT_EQ(LeafLocksHeld(), 2);
    }
    // Another thread holds none of them, and cannot take a held one.
    std::thread([&] {
      EXPECT_EQ(LeafLocksHeld(), 0);
      EXPECT_FALSE(a.try_lock());
      EXPECT_EQ(LeafLocksHeld(), 0);
    }).join();
  }
  EXPECT_EQ(LeafLocksHeld(), 0);
}

TEST(LeafMutexTest, TheFakeFileCountsIoUnderALeafLock) {
  auto disk = std::make_shared<testutil::Disk>();
  testutil::FaultFile file(disk);
  char buf[4] = {1, 2, 3, 4};
  ASSERT_TRUE(file.WriteAt(0, buf, 4).ok());
  ASSERT_TRUE(file.ReadAt(0, buf, 4).ok());
  EXPECT_EQ(disk->io_under_leaf_lock, 0);
  LeafMutex<std::mutex> mu;
  {
    std::lock_guard lock(mu);
    ASSERT_TRUE(file.ReadAt(0, buf, 4).ok());
    ASSERT_TRUE(file.WriteAt(0, buf, 4).ok());
  }
  EXPECT_EQ(disk->io_under_leaf_lock, 2);
}

}  // namespace
}  // namespace slabfs::engine
