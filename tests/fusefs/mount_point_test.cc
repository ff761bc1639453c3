#include "fusefs/mount_point.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace slabfs::fusefs {
namespace {

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

TEST_F(CheckMountPointTest, AnEmptyDirectoryIsFine) { EXPECT_TRUE(CheckMountPoint(dir_, false, {}).ok()); }

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
