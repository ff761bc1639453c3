// Space held for readers is exact (engine/space/allocator.h): a reader
// pinned on one commit keeps what that commit references, not everything a
// writer frees after it. Before, a reader open while a writer rewrote a
// dataset made the file grow with every rewrite (9.5 MB to 2.8 GB in two
// minutes through a mount).
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "slabfs/container.h"
#include "tests/testutil/mem_container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {
namespace held_space_test {  // its own names in a unity batch

using testutil::DiskSize;
using testutil::NewDisk;
using testutil::OpenOnDisk;
using testutil::Pattern;
using testutil::SetCapacity;

// The file after a thousand rewrites of a 256 KiB dataset, with or without
// a reader pinned on the first commit the whole time.
uint64_t SizeAfterRewrites(bool with_reader) {
  auto disk = NewDisk();
  const size_t n = 256 * 1024;
  auto w = OpenOnDisk(disk);
  EXPECT_TRUE(w.has_value());
  auto d = (*w)->CreateDataset("/d", {.dtype = DType::kU1, .shape = {n}, .chunks = {65536}});
  EXPECT_TRUE(d.has_value());
  const std::string first = Pattern(n, 0);
  EXPECT_OK(d->WriteBytes(0, n, first.data()));
  EXPECT_OK((*w)->Commit());
  std::unique_ptr<Container> r;
  std::optional<Dataset> rd;
  if (with_reader) {
    auto opened = OpenOnDisk(disk, {.read_only = true});
    EXPECT_TRUE(opened.has_value());
    r = std::move(*opened);
    auto ds = r->OpenDataset("/d");
    EXPECT_TRUE(ds.has_value());
    rd = *ds;
  }
  for (uint32_t round = 1; round <= 1000; ++round) {
    const std::string bytes = Pattern(n, round);
    EXPECT_OK(d->WriteBytes(0, n, bytes.data()));
    EXPECT_OK((*w)->Commit());
  }
  if (rd) {
    std::string seen(n, '\0');
    EXPECT_OK(rd->ReadBytes(0, n, seen.data()));
    EXPECT_TRUE(seen == first) << "the reader still reads its commit, whole";
  }
  return DiskSize(disk);
}

TEST(HeldSpaceTest, AReaderPinnedOnOneCommitCostsOneCopyWhileAWriterRewrites) {
  const size_t n = 256 * 1024;
  const uint64_t alone = SizeAfterRewrites(false);
  const uint64_t with_reader = SizeAfterRewrites(true);
  // At most one extra copy of what the reader sees (and some metadata).
  EXPECT_LE(with_reader, alone + n + n / 4) << "alone " << alone;
}

TEST(HeldSpaceTest, TheReadersCopyIsReusedOnceItLetsGo) {
  auto disk = NewDisk();
  const size_t n = 256 * 1024;
  ASSERT_OK_AND_ASSIGN(auto w, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(Dataset d, w->CreateDataset("/d", {.dtype = DType::kU1, .shape = {n}, .chunks = {65536}}));
  ASSERT_OK(d.WriteBytes(0, n, Pattern(n, 0).data()));
  ASSERT_OK(w->Commit());
  {
    ASSERT_OK_AND_ASSIGN(auto r, OpenOnDisk(disk, {.read_only = true}));
    for (uint32_t round = 1; round <= 10; ++round) {
      ASSERT_OK(d.WriteBytes(0, n, Pattern(n, round).data()));
      ASSERT_OK(w->Commit());
    }
    EXPECT_GE(w->space().held_bytes, n);
  }
  ASSERT_OK(d.WriteBytes(0, n, Pattern(n, 11).data()));
  ASSERT_OK(w->Commit());
  EXPECT_LT(w->space().held_bytes, n);
}

TEST(HeldSpaceTest, AReaderOfARewrittenCommitKeepsItsExtents) {
  // The other side: extents a reader's commit references stay intact.
  auto disk = NewDisk();
  const size_t n = 128 * 1024;
  ASSERT_OK_AND_ASSIGN(auto w, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(Dataset d, w->CreateDataset("/d", {.dtype = DType::kU1, .shape = {n}, .chunks = {16384}}));
  for (uint32_t round = 0; round < 5; ++round) {
    const std::string bytes = Pattern(n, round);
    ASSERT_OK(d.WriteBytes(0, n, bytes.data()));
    ASSERT_OK(w->Commit());
  }
  // A reader on the fifth write's commit (born during this writer's open).
  ASSERT_OK_AND_ASSIGN(auto r, OpenOnDisk(disk, {.read_only = true}));
  ASSERT_OK_AND_ASSIGN(Dataset rd, r->OpenDataset("/d"));
  for (uint32_t round = 5; round < 50; ++round) {
    const std::string bytes = Pattern(n, round);
    ASSERT_OK(d.WriteBytes(0, n, bytes.data()));
    ASSERT_OK(w->Commit());
  }
  std::string seen(n, '\0');
  ASSERT_OK(rd.ReadBytes(0, n, seen.data()));
  EXPECT_TRUE(seen == Pattern(n, 4));
}

}  // namespace held_space_test
}  // namespace
}  // namespace slabfs
