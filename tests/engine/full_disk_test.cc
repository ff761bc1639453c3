// A full disk (ENOSPC) in the middle of writes: the write fails with
// NoSpace, the container stays consistent (it commits, reopens, and holds
// every byte of the last commit and of the writes that succeeded), a write
// that failed changes nothing it was not already allowed to (a dataset it
// grew shrinks back, a whole chunk it was replacing keeps its old bytes),
// and once space is free writes work again. The daemon's view of the same
// is tests/integration/test_mount_full_disk.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include "tests/testutil/mem_container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {
namespace full_disk_test {  // its own names in a unity batch

using testutil::DiskSize;
using testutil::NewDisk;
using testutil::OpenOnDisk;
using testutil::Pattern;
using testutil::SetCapacity;

// dense and filtered streams: the direct whole-chunk path, and the cache's
// write-back path.
class FullDiskTest : public ::testing::TestWithParam<const char*> {};

TEST_P(FullDiskTest, AppendsFailCleanlyAndTheContainerStaysWhole) {
  auto disk = NewDisk();
  const uint64_t row = 4096;
  const std::string keep = Pattern(64 * 1024, 1);
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk, {.create = true}));
    ASSERT_OK_AND_ASSIGN(Dataset k,
                         c->CreateDataset("/keep", {.dtype = DType::kU1, .shape = {keep.size()}, .chunks = {16384}}));
    ASSERT_OK(k.WriteBytes(0, keep.size(), keep.data()));
    ASSERT_OK_AND_ASSIGN(Dataset s, c->CreateDataset("/s", {.dtype = DType::kU1,
                                                            .shape = {0, row},
                                                            .max_shape = {kUnlimited, row},
                                                            .chunks = {4, row},
                                                            .filters = GetParam()}));
    ASSERT_OK(c->Commit());
  }
  SetCapacity(disk, DiskSize(disk) + 200 * 1024);
  std::string written;
  Status failed;
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
    ASSERT_OK_AND_ASSIGN(Dataset s, c->OpenDataset("/s"));
    for (uint32_t i = 0; i < 400 && failed.ok(); ++i) {
      // Noise: deflate cannot shrink it.
      std::string block = Pattern(8 * row, 1000 + i);
      for (size_t j = 0; j < block.size(); ++j) block[j] = static_cast<char>(block[j] ^ (j * 2654435761u >> 13));
      const uint64_t before = s.size_bytes();
      failed = s.WriteBytes(before, block.size(), block.data(), Dataset::Growth::kGrowRows);
      if (failed.ok()) {
        failed = c->Commit();  // write-back of cached chunks happens here at the latest
        if (failed.ok()) written += block;
      } else {
        EXPECT_EQ(s.size_bytes(), before) << "a failed write takes its growth back";
      }
    }
    ASSERT_FALSE(failed.ok()) << "the disk never filled";
    EXPECT_EQ(failed.code(), Code::kNoSpace) << failed.ToString();
    // What was committed reads back; a commit may fail while chunks of the
    // failed write are still cached, and the container is left as the last
    // commit made it.
    c->Discard();
  }
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
    ASSERT_OK_AND_ASSIGN(Dataset k, c->OpenDataset("/keep"));
    std::string back(keep.size(), '\0');
    ASSERT_OK(k.ReadBytes(0, back.size(), back.data()));
    EXPECT_EQ(back, keep);
    ASSERT_OK_AND_ASSIGN(Dataset s, c->OpenDataset("/s"));
    ASSERT_EQ(s.size_bytes(), written.size());
    std::string got(written.size(), '\0');
    ASSERT_OK(s.ReadBytes(0, got.size(), got.data()));
    EXPECT_TRUE(got == written);
    // Space comes back: writing works again.
    SetCapacity(disk, UINT64_MAX);
    const std::string more = Pattern(8 * row, 77);
    ASSERT_OK(s.WriteBytes(s.size_bytes(), more.size(), more.data(), Dataset::Growth::kGrowRows));
    ASSERT_OK(c->Commit());
    written += more;
  }
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk, {.read_only = true}));
  ASSERT_OK_AND_ASSIGN(Dataset s, c->OpenDataset("/s"));
  std::string got(written.size(), '\0');
  ASSERT_OK(s.ReadBytes(0, got.size(), got.data()));
  EXPECT_TRUE(got == written);
}

// A disk that fails every write (EIO) while dirty chunks must be shed: the
// write that left the cache over budget succeeds (its shed's failure is
// logged), and the next write is refused before it takes a byte. Never a
// failed write whose bytes then read back and are committed. Rows are
// written bottom up, so no chunk is streamed in full and write-behind
// stays out of it.
TEST_P(FullDiskTest, AWriteWhoseSheddingFailsIsRefusedWithNothingTaken) {
  constexpr uint64_t kRows = 256, kCols = 1024, kStep = 16;  // f4, 64 x 64 chunks of 16 KiB
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk, {.create = true, .cache_bytes = 256 * 1024}));
  ASSERT_OK_AND_ASSIGN(Dataset d, c->CreateDataset("/d", {.dtype = DType::kF4,
                                                          .shape = {kRows, kCols},
                                                          .max_shape = {kUnlimited, kCols},
                                                          .chunks = {64, 64},
                                                          .filters = GetParam()}));
  ASSERT_OK(c->Commit());
  {
    std::lock_guard lock(disk->mu);
    disk->crash_after = disk->writes;
  }
  std::vector<float> model(kRows * kCols, 0.0f);
  Status failed;
  uint64_t refused_at = kRows;
  for (uint64_t r = kRows; r > 0 && failed.ok();) {
    r -= kStep;
    std::vector<float> v(kStep * kCols);
    for (uint64_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(r * kCols + i) + 0.25f;
    failed = d.Write(Slab::Box({r, 0}, {kStep, kCols}), v.data());
    if (failed.ok()) {
      std::copy(v.begin(), v.end(), model.begin() + static_cast<ptrdiff_t>(r * kCols));
    } else {
      refused_at = r;
    }
  }
  ASSERT_FALSE(failed.ok()) << "the cache never had to shed";
  EXPECT_EQ(failed.code(), Code::kIOError) << failed.ToString();
  // The first band fits the cache; the write that starts the second leaves
  // it over budget (its shed fails, logged), and the next one is refused.
  EXPECT_EQ(refused_at, kRows - 6 * kStep);
  // An append (the mount's write past the end) is refused too, and the
  // dataset keeps its size.
  std::vector<float> row(kCols, 1.5f);
  const uint64_t size = d.size_bytes();
  Status append = d.WriteBytes(size, row.size() * 4, row.data(), Dataset::Growth::kGrowRows);
  EXPECT_EQ(append.code(), Code::kIOError) << append.ToString();
  EXPECT_EQ(d.size_bytes(), size);
  // An erase of whole chunks frees what it erases: a failed shed does not
  // refuse it (a hole punched to make room on a full disk).
  EXPECT_OK(d.Erase(Slab::Box({kRows - 64, 0}, {64, kCols})));
  std::fill(model.begin() + static_cast<ptrdiff_t>((kRows - 64) * kCols), model.end(), 0.0f);
  std::vector<float> back(kRows * kCols);
  ASSERT_OK(d.ReadElements(0, back.size(), back.data()));
  EXPECT_TRUE(back == model) << "the refused write at row " << refused_at << " left bytes behind";
  EXPECT_FALSE(c->Commit().ok());
}

INSTANTIATE_TEST_SUITE_P(Pipelines, FullDiskTest, ::testing::Values("", "shuffle,deflate=1,checksum"));

// A whole-chunk overwrite of committed chunks that fails keeps their old
// bytes: the new extent is given back and the index never names it.
TEST(FullDisk, FailedWholeChunkOverwriteKeepsTheOldBytes) {
  auto disk = NewDisk();
  const std::string old_bytes = Pattern(256 * 1024, 3);
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk, {.create = true}));
    ASSERT_OK_AND_ASSIGN(Dataset d,
                         c->CreateDataset("/d", {.dtype = DType::kU1, .shape = {old_bytes.size()}, .chunks = {65536}}));
    ASSERT_OK(d.WriteBytes(0, old_bytes.size(), old_bytes.data()));
    ASSERT_OK(c->Commit());
  }
  SetCapacity(disk, DiskSize(disk) + 100 * 1024);  // room for one new chunk, not four
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
    ASSERT_OK_AND_ASSIGN(Dataset d, c->OpenDataset("/d"));
    const std::string new_bytes = Pattern(old_bytes.size(), 9);
    Status s = d.WriteBytes(0, new_bytes.size(), new_bytes.data());
    ASSERT_EQ(s.code(), Code::kNoSpace) << s.ToString();
    // Every chunk holds its old bytes or its new ones, never anything else.
    std::string back(old_bytes.size(), '\0');
    ASSERT_OK(d.ReadBytes(0, back.size(), back.data()));
    for (size_t k = 0; k < 4; ++k) {
      const std::string got = back.substr(k * 65536, 65536);
      EXPECT_TRUE(got == old_bytes.substr(k * 65536, 65536) || got == new_bytes.substr(k * 65536, 65536)) << k;
    }
    ASSERT_OK(c->Commit());
    const std::string committed = back;
    c->Discard();
    ASSERT_OK_AND_ASSIGN(auto r, OpenOnDisk(disk, {.read_only = true}));
    ASSERT_OK_AND_ASSIGN(Dataset rd, r->OpenDataset("/d"));
    std::string again(committed.size(), '\0');
    ASSERT_OK(rd.ReadBytes(0, again.size(), again.data()));
    EXPECT_TRUE(again == committed);
  }
}

}  // namespace full_disk_test
}  // namespace
}  // namespace slabfs
