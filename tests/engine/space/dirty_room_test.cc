// DirtyRoom: changes the cache would hold are refused when the disk and the
// container together could not store them, never when they can, and a file
// with no real path refuses nothing.
#include "engine/space/dirty_room.h"

#include <gtest/gtest.h>
#include <sys/statvfs.h>

#include <cstdint>
#include <filesystem>
#include <string>

namespace slabfs::engine {
namespace {

uint64_t DiskFree(const std::string& path) {
  struct statvfs sv;
  EXPECT_EQ(statvfs(path.c_str(), &sv), 0);
  return static_cast<uint64_t>(sv.f_bavail) * sv.f_frsize;
}

TEST(DirtyRoomTest, RefusesOnlyWhatTheDiskAndContainerCannotHold) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  DirtyRoom room(dir);
  const uint64_t free = DiskFree(dir);
  EXPECT_TRUE(room.Check(0, 0).ok());
  EXPECT_TRUE(room.Check(1 << 20, 0).ok());
  Status s = room.Check(free * 2 + (64u << 20), 0);
  EXPECT_EQ(s.code(), Code::kNoSpace);
  EXPECT_NE(s.message().find(dir), std::string::npos) << s.message();
  // Free space inside the container counts as room.
  EXPECT_TRUE(room.Check(free * 2 + (64u << 20), free * 2 + (256u << 20)).ok());
  // No overflow at the extremes.
  EXPECT_EQ(room.Check(UINT64_MAX, 0).code(), Code::kNoSpace);
  EXPECT_TRUE(room.Check(1 << 20, UINT64_MAX).ok());
}

TEST(DirtyRoomTest, AFileWithNoPathRefusesNothing) {
  DirtyRoom room("no such directory/c.slab");
  EXPECT_FALSE(room.Roomy(1)) << "nothing known yet";
  EXPECT_TRUE(room.Check(UINT64_MAX, 0).ok());
}

TEST(DirtyRoomTest, AFilesystemThatReportsNoSizeRefusesNothing) {
  DirtyRoom room("/x/c.slab", [](const std::string&) -> Result<DiskSpace> { return DiskSpace{}; });
  EXPECT_TRUE(room.Check(UINT64_MAX, 0).ok());
}

TEST(DirtyRoomTest, ReadsTheDiskAgainNearTheEdge) {
  uint64_t free = 100u << 20;
  int reads = 0;
  DirtyRoom room("/x/c.slab", [&](const std::string&) -> Result<DiskSpace> {
    ++reads;
    return DiskSpace{.total_bytes = 1u << 30, .free_bytes = free};
  });
  EXPECT_TRUE(room.Check(10u << 20, 0).ok());
  EXPECT_TRUE(room.Check(10u << 20, 0).ok());
  EXPECT_LE(reads, 2);  // plenty: an answer holds for 100 ms
  EXPECT_TRUE(room.Roomy(10u << 20) || reads == 2) << "fresh and plenty: no lock, no statvfs";
  EXPECT_FALSE(room.Roomy(60u << 20)) << "more than half the disk goes to Check";
  const int before = reads;
  free = 20u << 20;  // the disk fills from elsewhere
  EXPECT_TRUE(room.Check(10u << 20, 0).ok());
  EXPECT_EQ(room.Check(60u << 20, 0).code(), Code::kNoSpace) << "near the edge the disk is asked again";
  EXPECT_GT(reads, before);
  EXPECT_TRUE(room.Check(60u << 20, 64u << 20).ok()) << "space inside the container counts";
}

}  // namespace
}  // namespace slabfs::engine
