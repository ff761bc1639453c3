#include "fusefs/file_attr.h"

#include <gtest/gtest.h>

namespace slabfs::fusefs {
namespace {

TEST(FileAttrTest, DatasetIsARegularFileSizedByItsElements) {
  ObjectInfo info;
  info.id = 42;
  info.kind = ObjectKind::kDataset;
  info.size_bytes = 240000;
  info.stored_bytes = 1000;  // not a multiple of 512: rounds up
  timespec t{1700000000, 5};
  struct stat st = MakeStat(info, {.uid = 1000, .gid = 100, .read_only = false}, t);
  EXPECT_EQ(st.st_ino, 42u);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(st.st_size, 240000);
  EXPECT_EQ(st.st_blocks, 2);
  EXPECT_EQ(st.st_uid, 1000u);
  EXPECT_EQ(st.st_gid, 100u);
  EXPECT_EQ(st.st_nlink, 1u);
  EXPECT_EQ(st.st_blksize, kPreferredIoBytes);
  EXPECT_EQ(st.st_mtim.tv_sec, t.tv_sec);
  EXPECT_EQ(st.st_mtim.tv_nsec, t.tv_nsec);
}

TEST(FileAttrTest, ReadOnlyMountDropsWriteBits) {
  ObjectInfo info;
  info.id = 7;
  info.kind = ObjectKind::kDataset;
  struct stat st = MakeStat(info, {.uid = 0, .gid = 0, .read_only = true}, {});
  EXPECT_EQ(st.st_mode & 07777, 0444u);
}

TEST(FileAttrTest, UnallocatedDatasetHasNoBlocks) {
  ObjectInfo info;
  info.id = 7;
  info.kind = ObjectKind::kDataset;
  info.size_bytes = 1 << 20;
  info.stored_bytes = 0;
  EXPECT_EQ(MakeStat(info, {}, {}).st_blocks, 0);
  info.stored_bytes = 512;
  EXPECT_EQ(MakeStat(info, {}, {}).st_blocks, 1);
}

TEST(FileAttrTest, GroupIsADirectory) {
  ObjectInfo info;
  info.id = kRootId;
  info.kind = ObjectKind::kGroup;
  info.num_children = 3;
  struct stat st = MakeStat(info, {}, {});
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_EQ(st.st_ino, 1u);
  // nlink 1: find must not infer the number of subdirectories.
  EXPECT_EQ(st.st_nlink, 1u);
  EXPECT_EQ(ModeFor(ObjectKind::kGroup, true) & 07777, 0755u);
}

}  // namespace
}  // namespace slabfs::fusefs
