// The one mountinfo parser (fusefs/mountinfo.h), used by the mount-point
// check and the readahead window.
#include "fusefs/mountinfo.h"

#include <gtest/gtest.h>

namespace slabfs::fusefs {
namespace {

// Three lines as the kernel writes them: optional fields before "-", a
// path with a space (\040), and a second mount on top of the first.
constexpr const char* kMountInfo =
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "40 22 0:35 / /home/u/my\\040mnt rw,nosuid,nodev,relatime shared:20 - fuse.slabfs "
    "/data/run.slab rw,user_id=0,group_id=0\n"
    "41 22 0:36 / /mnt/auto rw,relatime - autofs systemd-1 rw,fd=1\n"
    "42 40 0:37 / /home/u/my\\040mnt rw - tmpfs none rw\n"
    "garbage line\n";

TEST(ParseMountInfoTest, ReadsMountPointTypeAndSourceUnescaped) {
  auto mounts = ParseMountInfo(kMountInfo);
  ASSERT_EQ(mounts.size(), 4u);
  EXPECT_EQ(mounts[0].mount_point, "/");
  EXPECT_EQ(mounts[0].fstype, "ext4");
  EXPECT_EQ(mounts[1].mount_point, "/home/u/my mnt");
  EXPECT_EQ(mounts[1].fstype, "fuse.slabfs");
  EXPECT_EQ(mounts[1].source, "/data/run.slab");
  EXPECT_EQ(mounts[1].device, "0:35");
  EXPECT_EQ(mounts[2].fstype, "autofs");
}

TEST(ParseMountInfoTest, TheTopMountAtAPathIsTheLastOne) {
  auto mounts = ParseMountInfo(kMountInfo);
  const MountEntry* top = TopMountAt(mounts, "/home/u/my mnt");
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->fstype, "tmpfs");
  EXPECT_EQ(TopMountAt(mounts, "/home/u"), nullptr);
}

}  // namespace
}  // namespace slabfs::fusefs
