#include "fusefs/readahead.h"

#include <gtest/gtest.h>

namespace slabfs::fusefs {
namespace {

constexpr const char* kMountinfo =
    "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
    "36 22 0:39 / /tmp/mnt rw,nosuid,nodev,relatime shared:20 - fuse.slabfs /d/x.slab "
    "rw,user_id=0,group_id=0\n"
    "37 22 0:40 / /tmp/with\\040space rw,relatime shared:21 - fuse /d/y.slab rw\n"
    "38 22 0:41 / /tmp/other rw,relatime - tmpfs tmpfs rw\n"
    "39 36 0:42 / /tmp/mnt rw,relatime - fuse.slabfs /d/z.slab rw\n";

TEST(ReadaheadTest, FindsTheDeviceOfAFuseMount) {
  EXPECT_EQ(FuseMountDevice(kMountinfo, "/tmp/with space").value_or(""), "0:40");
}

TEST(ReadaheadTest, TheLastStackedMountWins) {
  EXPECT_EQ(FuseMountDevice(kMountinfo, "/tmp/mnt").value_or(""), "0:42");
}

TEST(ReadaheadTest, IgnoresOtherFilesystemsAndMissingMounts) {
  EXPECT_FALSE(FuseMountDevice(kMountinfo, "/tmp/other").has_value());
  EXPECT_FALSE(FuseMountDevice(kMountinfo, "/nowhere").has_value());
  EXPECT_FALSE(FuseMountDevice("", "/tmp/mnt").has_value());
  EXPECT_FALSE(FuseMountDevice("garbage\n\n1 2 3\n", "/tmp/mnt").has_value());
}

TEST(ReadaheadTest, MissingMountIsReportedNotFatal) {
  EXPECT_NE(SetMountReadahead("/definitely/not/mounted", 1 << 20), "");
}

}  // namespace
}  // namespace slabfs::fusefs
