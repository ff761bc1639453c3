// The free list is derivable (engine/rebuild_free_list.cc): a damaged
// free-list block locks out nothing. A reader opens without it, a writer
// rebuilds it from what the tree references and the next commit writes it,
// and OpenOptions::rebuild_free_list (slab fsck --repair) gives leaked
// space back.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/format/layout.h"
#include "engine/format/superblock.h"
#include "engine/fsck/check_file.h"
#include "engine/txn/free_list_log.h"
#include "slabfs/container.h"
#include "slabfs/fsck.h"
#include "tests/testutil/mem_container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {
namespace free_list_rebuild_test {  // its own names in a unity batch

using testutil::DiskSize;
using testutil::NewDisk;
using testutil::OpenOnDisk;
using testutil::Pattern;
using testutil::SetCapacity;

engine::Superblock Newest(const std::shared_ptr<testutil::Disk>& disk) {
  std::lock_guard lock(disk->mu);
  engine::Superblock best;
  for (uint64_t slot : {engine::kSuperblockSlot0, engine::kSuperblockSlot1}) {
    auto sb = engine::DecodeSuperblock(std::string_view(disk->current).substr(slot, engine::kSuperblockSlotBytes));
    if (sb && sb->generation > best.generation) best = *sb;
  }
  return best;
}

void Flip(const std::shared_ptr<testutil::Disk>& disk, uint64_t at) {
  std::lock_guard lock(disk->mu);
  disk->current[at] ^= 0x10;
  disk->durable = disk->current;
}

FsckReport Check(const std::shared_ptr<testutil::Disk>& disk) {
  auto r = engine::CheckFile(std::make_unique<testutil::FaultFile>(disk), {});
  EXPECT_TRUE(r.has_value());
  return r.has_value() ? *r : FsckReport{};
}

class FreeListRebuildTest : public ::testing::Test {
 protected:
  // Dense, filtered, sparse and B-tree datasets, each written twice so the
  // first copies are free space; returns the free bytes the list holds.
  void SetUp() override {
    disk_ = NewDisk();
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk_));
    const std::vector<DatasetOptions> kinds = {
        {.dtype = DType::kU1, .shape = {200000}, .chunks = {16384}},
        {.dtype = DType::kU1, .shape = {200000}, .chunks = {16384}, .filters = "shuffle,deflate=1,checksum"},
        {.dtype = DType::kU1, .shape = {200000}, .chunks = {16384}, .sparse = true},
        {.dtype = DType::kU1, .shape = {40, 5000}, .max_shape = {kUnlimited, kUnlimited}, .chunks = {8, 1000}},
    };
    for (size_t k = 0; k < kinds.size(); ++k) {
      ASSERT_OK_AND_ASSIGN(Dataset d, c->CreateDataset("/d" + std::to_string(k), kinds[k]));
      for (uint32_t round = 0; round < 2; ++round) {
        const std::string bytes = Pattern(200000, round + 10 * static_cast<uint32_t>(k));
        ASSERT_OK(d.WriteBytes(0, bytes.size(), bytes.data()));
        ASSERT_OK(c->Commit());
      }
      expect_.push_back(Pattern(200000, 1 + 10 * static_cast<uint32_t>(k)));
    }
    free_bytes_ = c->space().free_bytes;
    ASSERT_GT(free_bytes_, 0u);
    ASSERT_OK(c->Close());
    const engine::Superblock sb = Newest(disk_);
    ASSERT_FALSE(sb.free_list.empty());
    // The blocks the list is written in (a base and deltas): once its
    // newest block is damaged, nothing references them either.
    {
      testutil::FaultFile file(disk_);
      engine::Allocator alloc;
      alloc.Reset(sb.file_end, {});
      engine::BlockStore store(&file, &alloc);
      engine::FreeListChain chain;
      ASSERT_OK(engine::ReadFreeListChain(store, sb, &chain));
      ASSERT_GT(chain.blocks.size(), 1u) << "the list is a base and deltas";
      for (const engine::BlockRef& b : chain.blocks) list_bytes_ += b.len;
    }
    Flip(disk_, sb.free_list.addr + sb.free_list.len / 2);
  }

  void ExpectData(Container& c) {
    for (size_t k = 0; k < expect_.size(); ++k) {
      ASSERT_OK_AND_ASSIGN(Dataset d, c.OpenDataset("/d" + std::to_string(k)));
      std::string back(expect_[k].size(), '\0');
      ASSERT_OK(d.ReadBytes(0, back.size(), back.data()));
      EXPECT_TRUE(back == expect_[k]) << "dataset " << k;
    }
  }

  std::shared_ptr<testutil::Disk> disk_;
  std::vector<std::string> expect_;
  uint64_t free_bytes_ = 0;
  uint64_t list_bytes_ = 0;
};

TEST_F(FreeListRebuildTest, FsckCallsTheDamagedListDamage) {
  FsckReport r = Check(disk_);
  EXPECT_TRUE(r.damaged());
}

TEST_F(FreeListRebuildTest, AReaderOpensWithoutIt) {
  ASSERT_OK_AND_ASSIGN(auto r, OpenOnDisk(disk_, {.read_only = true}));
  ExpectData(*r);
}

TEST_F(FreeListRebuildTest, AWriterRebuildsItExactlyAndTheNextCommitWritesIt) {
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk_));
    // Derived from the tree: the same free space the list held, and the
    // list's own blocks.
    EXPECT_EQ(c->space().free_bytes, free_bytes_ + list_bytes_);
    EXPECT_TRUE(c->dirty());
    ExpectData(*c);
    ASSERT_OK(c->Close());
  }
  FsckReport r = Check(disk_);
  EXPECT_FALSE(r.damaged());
  EXPECT_FALSE(r.leaks());
  // The space is reused, and everything still reads back.
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk_));
    ASSERT_OK_AND_ASSIGN(Dataset d, c->OpenDataset("/d0"));
    const std::string again = Pattern(200000, 99);
    ASSERT_OK(d.WriteBytes(0, again.size(), again.data()));
    expect_[0] = again;
    ASSERT_OK(c->Close());
  }
  EXPECT_TRUE(Check(disk_).clean());
  ASSERT_OK_AND_ASSIGN(auto r2, OpenOnDisk(disk_, {.read_only = true}));
  ExpectData(*r2);
}

TEST(FreeListRebuild, RebuildOnRequestGivesLeakedSpaceBack) {
  auto disk = NewDisk();
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
    ASSERT_OK_AND_ASSIGN(Dataset d, c->CreateDataset("/d", {.dtype = DType::kU1, .shape = {65536}, .chunks = {4096}}));
    const std::string bytes = Pattern(65536, 4);
    ASSERT_OK(d.WriteBytes(0, bytes.size(), bytes.data()));
    ASSERT_OK(c->Close());
  }
  // Leak: the file grows by 64 KiB that nothing references, and the last
  // superblock says the file ends there.
  engine::Superblock sb = Newest(disk);
  {
    std::lock_guard lock(disk->mu);
    sb.file_end += 65536;
    disk->current.resize(sb.file_end, '\0');
    std::string enc = engine::EncodeSuperblock(sb);
    disk->current.replace(sb.generation % 2 ? engine::kSuperblockSlot1 : engine::kSuperblockSlot0, enc.size(), enc);
    disk->durable = disk->current;
  }
  FsckReport before = Check(disk);
  EXPECT_TRUE(before.leaks());
  EXPECT_FALSE(before.damaged());
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk, {.rebuild_free_list = true}));
    ASSERT_OK(c->Close());
  }
  EXPECT_TRUE(Check(disk).clean());
}

}  // namespace free_list_rebuild_test
}  // namespace
}  // namespace slabfs
