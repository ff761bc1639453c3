#include "fusefs/mount_point.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

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
  EXPECT_EQ(mounts[2].fstype, "autofs");
}

TEST(ParseMountInfoTest, TheTopMountAtAPathIsTheLastOne) {
  auto mounts = ParseMountInfo(kMountInfo);
  const MountEntry* top = TopMountAt(mounts, "/home/u/my mnt");
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->fstype, "tmpfs");
  EXPECT_EQ(TopMountAt(mounts, "/home/u"), nullptr);
}

class CheckMountPointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/slabfs_mount_point_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(CheckMountPointTest, AnEmptyDirectoryIsFine) {
  EXPECT_TRUE(CheckMountPoint(dir_, false, {}).ok());
}

TEST_F(CheckMountPointTest, RefusesADirectoryThatHoldsFilesUnlessNonempty) {
  std::ofstream(dir_ + "/notes.txt") << "mine";
  Status s = CheckMountPoint(dir_, false, {});
  EXPECT_EQ(s.code(), Code::kNotEmpty);
  EXPECT_NE(s.message().find(dir_), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("notes.txt"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("-o nonempty"), std::string::npos) << s.message();
  EXPECT_TRUE(CheckMountPoint(dir_, true, {}).ok());
}

TEST_F(CheckMountPointTest, RefusesAMountPointEvenWithNonempty) {
  std::vector<MountEntry> mounts = {{"/", "ext4", "/dev/sda1"}, {dir_, "fuse.slabfs", "/data/run.slab"}};
  for (bool nonempty : {false, true}) {
    Status s = CheckMountPoint(dir_, nonempty, mounts);
    EXPECT_EQ(s.code(), Code::kBusy);
    EXPECT_NE(s.message().find("already a mount point"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("/data/run.slab"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("fusermount3 -u " + dir_), std::string::npos) << s.message();
  }
}

TEST_F(CheckMountPointTest, AnAutomountTriggerIsNotChecked) {
  // systemd's automount mounts slabfs over its autofs trigger; listing the
  // directory then would wait for this very mount.
  std::ofstream(dir_ + "/x") << "";
  std::vector<MountEntry> mounts = {{dir_, "autofs", "systemd-1"}};
  EXPECT_TRUE(CheckMountPoint(dir_, false, mounts).ok());
}

}  // namespace
}  // namespace slabfs::fusefs
