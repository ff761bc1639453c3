// slab fsck's checker (include/slabfs/fsck.h) on real files: clean
// containers of every index kind, and each kind of damage it must name:
// a damaged chunk, a damaged index block, a free list that claims a chunk
// (overlap), a free list that forgets space (leak), a truncated file, a file
// that is not a container; and what is only a warning.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/format/block.h"
#include "engine/format/free_list.h"
#include "engine/format/layout.h"
#include "engine/format/superblock.h"
#include "engine/util/coding.h"
#include "slabfs/container.h"
#include "slabfs/fsck.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {
namespace fsck_test {  // its own names in a unity batch

namespace fs = std::filesystem;
using Extent = engine::FreedExtent;

class FsckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/slabfs-fsck-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/c.slab";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // One dataset of each index kind, with data, and a group with attributes.
  // With free_space, a hole of about 700 KB is left free in the middle of
  // the file (blocks are packed, so one commit leaves none of its own): a
  // dataset whose 1 MB chunk was written out before the commit, then
  // removed, with a dataset /pin written out after it.
  void MakeContainer(bool free_space = false) {
    auto c = Container::Open(path_, {.create = true});
    ASSERT_TRUE(c.has_value()) << c.error().ToString();
    Container& cc = **c;
    if (free_space) {
      for (auto [name, n] : {std::pair<const char*, uint64_t>{"/scratch", 1 << 20}, {"/pin", 8192}}) {
        auto d = cc.CreateDataset(name, {.dtype = DType::kU1, .shape = {n}, .chunks = {n}});
        ASSERT_TRUE(d.has_value());
        ASSERT_TRUE(d->WriteElements(0, n, std::string(n, 'x').data()).ok());
        ASSERT_TRUE(d->StoredChunks().has_value());  // writes the chunk out
      }
    }
    ASSERT_TRUE(cc.MakeGroups("/g/h").has_value());
    ASSERT_TRUE(cc.SetAttribute(*cc.Resolve("/g"), "units", Attribute::String("m")).ok());
    struct Spec {
      const char* path;
      DatasetOptions o;
    };
    std::vector<Spec> specs = {
        {"/single", {.dtype = DType::kF4, .shape = {10}}},
        {"/compact", {.dtype = DType::kU4, .shape = {20}, .chunks = {5}}},
        {"/g/fixed",
         {.dtype = DType::kF4, .shape = {200, 200}, .chunks = {4, 4}, .filters = "shuffle,deflate=1,checksum"}},
        {"/ext", {.dtype = DType::kI2, .shape = {100, 50}, .max_shape = {kUnlimited, 50}, .chunks = {2, 2}}},
        {"/btree", {.dtype = DType::kU1, .shape = {100, 100}, .max_shape = {kUnlimited, kUnlimited}, .chunks = {3, 3}}},
        {"/sparse", {.dtype = DType::kF8, .shape = {64, 64}, .chunks = {16, 16}, .sparse = true}},
    };
    for (Spec& s : specs) {
      auto ds = cc.CreateDataset(s.path, s.o);
      ASSERT_TRUE(ds.has_value()) << s.path << ": " << ds.error().ToString();
      std::string bytes(ds->size_bytes(), '\0');
      for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 7919) >> 5);
      uint64_t n = ds->num_elements();
      if (s.o.sparse) n /= 3;  // a part of it defined
      ASSERT_TRUE(ds->WriteElements(0, n, bytes.data()).ok());
    }
    if (free_space) {
      ASSERT_TRUE(cc.Remove("/scratch").ok());
    }
    ASSERT_TRUE(cc.Commit().ok());
    ASSERT_TRUE(cc.Close().ok());
  }

  FsckReport Check(bool verify_data = true) {
    auto r = CheckContainer(path_, {.verify_data = verify_data});
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r.has_value() ? *r : FsckReport{};
  }

  std::string ReadAll() {
    std::ifstream in(path_, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void WriteAt(uint64_t off, std::string_view bytes) {
    std::fstream f(path_, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(static_cast<std::streamoff>(off));
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  void FlipByte(uint64_t off) {
    std::string all = ReadAll();
    ASSERT_LT(off, all.size());
    WriteAt(off, std::string(1, static_cast<char>(all[off] ^ 0x5a)));
  }

  engine::Superblock Super() {
    std::string all = ReadAll();
    engine::Superblock best;
    for (uint64_t slot : {engine::kSuperblockSlot0, engine::kSuperblockSlot1}) {
      auto sb = engine::DecodeSuperblock(std::string_view(all).substr(slot, engine::kSuperblockSlotBytes));
      if (sb && sb->generation > best.generation) best = *sb;
    }
    return best;
  }

  // Rewrites the free list in place (same number of slots) after `edit`.
  void EditFreeList(const std::function<void(std::vector<Extent>*)>& edit) {
    engine::Superblock sb = Super();
    ASSERT_FALSE(sb.free_list.empty());
    std::string all = ReadAll();
    std::string_view image(all.data() + sb.free_list.addr, sb.free_list.len);
    uint8_t version = 0;
    auto payload = engine::DecodeBlock(image, engine::BlockType::kFreeList, "free list", &version);
    ASSERT_TRUE(payload.has_value());
    engine::Reader r(*payload);
    uint64_t slots = 0;
    ASSERT_TRUE(r.U64(&slots));
    auto extents = engine::DecodeFreeList(*payload, sb.file_end, version);
    ASSERT_TRUE(extents.has_value());
    std::vector<Extent> e = *extents;
    e.erase(std::remove_if(e.begin(), e.end(), [](const Extent& x) { return x.len == 0; }), e.end());
    edit(&e);
    std::sort(e.begin(), e.end(), [](const Extent& a, const Extent& b) { return a.addr < b.addr; });
    ASSERT_LE(e.size(), slots);
    std::string block =
        engine::EncodeBlock(engine::BlockType::kFreeList, engine::EncodeFreeList(e, slots), engine::kFreeListVersion);
    ASSERT_EQ(block.size(), sb.free_list.len);
    WriteAt(sb.free_list.addr, block);
  }

  // The first block of `type` in the file (scanning for its header).
  uint64_t FindBlock(engine::BlockType type) {
    std::string all = ReadAll();
    for (uint64_t off = engine::kDataStart; off + 16 <= all.size(); ++off) {  // blocks are packed
      uint32_t magic;
      std::memcpy(&magic, all.data() + off, 4);
      if (magic == engine::kBlockMagic && static_cast<uint8_t>(all[off + 4]) == static_cast<uint8_t>(type)) return off;
    }
    return 0;
  }

  StoredChunk FirstChunk(const std::string& dataset) {
    auto c = Container::Open(path_, {.read_only = true});
    EXPECT_TRUE(c.has_value());
    auto ds = (*c)->OpenDataset(dataset);
    EXPECT_TRUE(ds.has_value());
    auto chunks = ds->StoredChunks();
    EXPECT_TRUE(chunks.has_value() && !chunks->empty());
    return chunks->front();
  }

  static bool HasFinding(const FsckReport& r, FsckFinding::Kind kind, std::string_view where, std::string_view what) {
    for (const FsckFinding& f : r.findings) {
      if (f.kind == kind && f.where.find(where) != std::string::npos && f.what.find(what) != std::string::npos)
        return true;
    }
    return false;
  }
  static std::string Dump(const FsckReport& r) {
    std::string s;
    for (const FsckFinding& f : r.findings)
      s += std::string(FindingKindName(f.kind)) + ": " + f.where + ": " + f.what + "\n";
    return s;
  }

  std::string dir_, path_;
};

TEST_F(FsckTest, CleanContainerOfEveryIndexKind) {
  MakeContainer();
  FsckReport r = Check();
  EXPECT_TRUE(r.clean()) << Dump(r);
  EXPECT_TRUE(r.findings.empty()) << Dump(r);
  EXPECT_EQ(r.stats.datasets, 6u);
  EXPECT_EQ(r.stats.groups, 3u);
  EXPECT_EQ(r.stats.attributes, 1u);
  EXPECT_GT(r.stats.chunks, 1000u);
  EXPECT_EQ(r.stats.chunks_verified, r.stats.chunks);
  EXPECT_GT(r.stats.index_blocks, 0u);
  EXPECT_EQ(r.stats.leaked_bytes, 0u);
  EXPECT_EQ(r.stats.file_end, r.stats.file_bytes);
  // Everything in the data area is accounted for exactly once.
  EXPECT_EQ(
      r.stats.object_bytes + r.stats.index_bytes + r.stats.chunk_bytes + r.stats.free_bytes + Super().free_list.len,
      r.stats.file_end - engine::kDataStart);
}

TEST_F(FsckTest, NewEmptyContainerIsClean) {
  ASSERT_TRUE(Container::Open(path_, {.create = true}).has_value());
  FsckReport r = Check();
  EXPECT_TRUE(r.clean()) << Dump(r);
  EXPECT_EQ(r.stats.groups, 1u);
  EXPECT_EQ(r.stats.datasets, 0u);
}

TEST_F(FsckTest, DamagedChunkIsNamedWithItsCoordinates) {
  MakeContainer();
  StoredChunk c = FirstChunk("/g/fixed");
  FlipByte(c.addr + c.bytes / 2);
  FsckReport r = Check();
  EXPECT_TRUE(r.damaged());
  EXPECT_TRUE(HasFinding(r, FsckFinding::Kind::kDamage, "/g/fixed chunk [", "")) << Dump(r);
  EXPECT_EQ(r.stats.chunks_verified + 1, r.stats.chunks);
  // Without reading chunks the damage inside one is not seen.
  EXPECT_FALSE(Check(/*verify_data=*/false).damaged());
}

TEST_F(FsckTest, DamagedIndexBlockIsDamage) {
  MakeContainer();
  uint64_t leaf = FindBlock(engine::BlockType::kPagedLeaf);
  ASSERT_NE(leaf, 0u);
  FlipByte(leaf + 20);
  FsckReport r = Check();
  EXPECT_TRUE(r.damaged());
  EXPECT_TRUE(HasFinding(r, FsckFinding::Kind::kDamage, "(dataset)", "chunk index: ")) << Dump(r);
  // The other datasets are still checked, and the space the damaged index
  // would have named is not called a leak.
  EXPECT_GT(r.stats.chunks, 0u);
  EXPECT_FALSE(r.leaks()) << Dump(r);
}

TEST_F(FsckTest, DamagedObjectBlockSkipsOnlyItsSubtree) {
  MakeContainer();
  uint64_t block = FindBlock(engine::BlockType::kDataset);
  ASSERT_NE(block, 0u);
  FlipByte(block + 18);
  FsckReport r = Check();
  EXPECT_TRUE(r.damaged()) << Dump(r);
  EXPECT_GE(r.stats.datasets, 4u);  // the rest were found and checked
}

TEST_F(FsckTest, FreeListClaimingAChunkIsAnOverlap) {
  MakeContainer();
  StoredChunk c = FirstChunk("/ext");
  EditFreeList([&](std::vector<Extent>* e) { e->push_back({c.addr, c.bytes}); });
  FsckReport r = Check();
  EXPECT_TRUE(r.damaged());
  EXPECT_TRUE(HasFinding(r, FsckFinding::Kind::kDamage, "space", "overlaps")) << Dump(r);
  EXPECT_TRUE(HasFinding(r, FsckFinding::Kind::kDamage, "space", "/ext chunk")) << Dump(r);
}

TEST_F(FsckTest, ADatasetRemovedWhileInUseGivesItsSpaceBackAtClose) {
  // The commit after the removal cannot reclaim it (a handle still reads
  // it); Close reclaims it and must commit that, or the chunks leak.
  {
    auto c = Container::Open(path_, {.create = true});
    ASSERT_TRUE(c.has_value()) << c.error().ToString();
    auto d = (*c)->CreateDataset("/d", {.dtype = DType::kU1, .shape = {40000}, .chunks = {10000}});
    ASSERT_TRUE(d.has_value());
    ASSERT_TRUE(d->WriteElements(0, 40000, std::string(40000, 'x').data()).ok());
    ASSERT_TRUE((*c)->Commit().ok());
    ASSERT_TRUE((*c)->Remove("/d").ok());
    ASSERT_TRUE((*c)->Commit().ok());
    ASSERT_TRUE((*c)->Close().ok());
  }
  FsckReport r = Check();
  EXPECT_TRUE(r.clean()) << Dump(r);
  EXPECT_FALSE(r.leaks()) << Dump(r);
}

TEST_F(FsckTest, SpaceTheFreeListForgetsIsALeak) {
  MakeContainer(/*free_space=*/true);
  Extent dropped;
  EditFreeList([&](std::vector<Extent>* e) {
    ASSERT_FALSE(e->empty());
    dropped = e->back();
    e->pop_back();
  });
  FsckReport r = Check();
  EXPECT_FALSE(r.damaged()) << Dump(r);
  EXPECT_TRUE(r.leaks());
  EXPECT_EQ(r.stats.leaked_bytes, dropped.len);
  ASSERT_EQ(r.findings.size(), 1u) << Dump(r);
  EXPECT_EQ(r.findings[0].addr, dropped.addr);
  EXPECT_EQ(r.findings[0].bytes, dropped.len);
}

TEST_F(FsckTest, TruncatedFileIsDamage) {
  MakeContainer();
  uint64_t end = Super().file_end;
  fs::resize_file(path_, end - 100);
  FsckReport r = Check();
  EXPECT_TRUE(HasFinding(r, FsckFinding::Kind::kDamage, "file", "truncated")) << Dump(r);
}

TEST_F(FsckTest, BytesPastTheFileEndAreAWarning) {
  MakeContainer();
  uint64_t end = Super().file_end;
  fs::resize_file(path_, end + 4096);
  FsckReport r = Check();
  EXPECT_TRUE(r.clean()) << Dump(r);
  EXPECT_TRUE(HasFinding(r, FsckFinding::Kind::kWarning, "file", "past the file end")) << Dump(r);
}

TEST_F(FsckTest, DamagedNewestSuperblockFallsBackAndSaysSo) {
  MakeContainer();
  engine::Superblock sb = Super();
  FlipByte((sb.generation % 2) * engine::kSuperblockSlotBytes + 20);
  FsckReport r = Check();
  // The older commit is what a reader opens now: it is checked instead. Its
  // space may be reused by the newer commit, so findings are possible, but
  // the generation says which commit was checked.
  EXPECT_EQ(r.stats.generation, sb.generation - 1);
}

TEST_F(FsckTest, NotAContainerIsAnErrorNotDamage) {
  std::ofstream(path_) << std::string(20000, 'x');
  auto r = CheckContainer(path_);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
  EXPECT_NE(r.error().message().find("not a slabfs container"), std::string::npos) << r.error().ToString();
}

TEST_F(FsckTest, MissingFileIsAnError) {
  auto r = CheckContainer(dir_ + "/nope.slab");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kNotFound);
}

TEST_F(FsckTest, ProgressSeesEveryChunkAndCanStop) {
  MakeContainer();
  uint64_t calls = 0, last = 0, total = 0;
  auto r = CheckContainer(path_, {.progress = [&](uint64_t done, uint64_t t) {
                            EXPECT_GE(done, last);
                            last = done;
                            total = t;
                            ++calls;
                            return true;
                          }});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(calls, r->stats.chunks);
  EXPECT_EQ(last, total);
  auto stopped = CheckContainer(path_, {.progress = [](uint64_t, uint64_t) { return false; }});
  EXPECT_FALSE(stopped.has_value());
}

}  // namespace fsck_test
}  // namespace
}  // namespace slabfs
