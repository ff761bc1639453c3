// Trimmed edge chunks through the dataset API (engine/chunk/trimmed_edge.h,
// docs/format.md "Chunks"): a dense dataset whose first dimension can grow
// stores each chunk only as far as the dataset reached when it was written.
// A new file of 6 bytes takes 6 bytes; growing reads the rest as the fill
// value; a shrink stores the cut chunk shorter; rewrites, reopens, crashes
// at every write of a commit, damaged records, and containers written
// before the flag existed (whole chunks, version 1 blocks).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "engine/format/block.h"
#include "engine/format/layout.h"
#include "engine/format/object.h"
#include "engine/format/superblock.h"
#include "engine/fsck/check_file.h"
#include "engine/util/coding.h"
#include "slabfs/fsck.h"
#include "tests/testutil/mem_container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {

using testutil::NewDisk;
using testutil::OpenOnDisk;

constexpr uint64_t kMiB = 1 << 20;

// A new file as the mount makes it: 1-D u1, growable, chunks chosen by the
// engine (1 MiB).
Result<Dataset> NewFile(Container& c, const std::string& path, std::string fill = "") {
  return c.CreateDataset(path, {.dtype = DType::kU1, .shape = {0}, .max_shape = {kUnlimited}, .fill = fill});
}

std::string Bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (char& ch : s) ch = static_cast<char>(1 + rng() % 255);  // never the fill value 0
  return s;
}

std::string ReadAll(const Dataset& d) {
  std::string out(d.size_bytes(), '\0');
  auto n = d.ReadBytes(0, out.size(), out.data());
  EXPECT_TRUE(n.has_value()) << n.error().ToString();
  return out;
}

uint64_t SumStored(const Dataset& d) {
  auto chunks = d.StoredChunks();
  EXPECT_TRUE(chunks.has_value());
  uint64_t sum = 0;
  for (const StoredChunk& c : *chunks) sum += c.bytes;
  return sum;
}

// slab fsck of the disk's current image: no damage and no leak.
void ExpectClean(const std::shared_ptr<testutil::Disk>& disk, const std::string& what) {
  auto r = engine::CheckFile(std::make_unique<testutil::FaultFile>(testutil::DiskWithImage(disk->current)),
                             {.verify_data = true});
  ASSERT_TRUE(r.has_value()) << what << ": " << r.error().ToString();
  std::string findings;
  for (const FsckFinding& f : r->findings)
    findings += std::string(FindingKindName(f.kind)) + ": " + f.where + ": " + f.what + "\n";
  EXPECT_FALSE(r->damaged()) << what << "\n" << findings;
  EXPECT_FALSE(r->leaks()) << what << "\n" << findings;
}

// Rewrites the block of dataset `name` (a child of the root) in the image,
// in place, after `edit` changed its record (the block keeps its length).
void EditDatasetBlock(std::string* image, const std::string& name,
                      const std::function<void(engine::DatasetRecord*, uint8_t* version)>& edit) {
  engine::Superblock sb;
  for (uint64_t slot : {engine::kSuperblockSlot0, engine::kSuperblockSlot1}) {
    auto s = engine::DecodeSuperblock(std::string_view(*image).substr(slot, engine::kSuperblockSlotBytes));
    if (s && s->generation > sb.generation) sb = *s;
  }
  ASSERT_FALSE(sb.root.empty());
  auto root = engine::DecodeBlock(std::string_view(*image).substr(sb.root.addr, sb.root.len), engine::BlockType::kGroup,
                                  "root");
  ASSERT_TRUE(root.has_value());
  ASSERT_OK_AND_ASSIGN(engine::ObjectRecord group, engine::DecodeObject(*root, engine::BlockType::kGroup, sb.file_end));
  engine::BlockRef ref;
  for (const engine::ChildRecord& c : group.children)
    if (c.name == name) ref = c.block;
  ASSERT_FALSE(ref.empty()) << name;
  uint8_t version = 0;
  auto payload = engine::DecodeBlock(std::string_view(*image).substr(ref.addr, ref.len), engine::BlockType::kDataset,
                                     "dataset", &version);
  ASSERT_TRUE(payload.has_value());
  ASSERT_OK_AND_ASSIGN(engine::ObjectRecord rec,
                       engine::DecodeObject(*payload, engine::BlockType::kDataset, sb.file_end, version));
  edit(&rec.dataset, &version);
  const std::string block = engine::EncodeBlock(engine::BlockType::kDataset, engine::EncodeObject(rec), version);
  ASSERT_EQ(block.size(), ref.len);
  image->replace(ref.addr, block.size(), block);
}

// The compact index root's records: u16 count, then (u16 position, record).
struct CompactRecord {
  uint16_t pos;
  uint64_t addr;
  uint32_t size, mask;
};
std::vector<CompactRecord> DecodeCompactRoot(const std::string& root) {
  engine::Reader r(root);
  uint16_t n = 0;
  EXPECT_TRUE(r.U16(&n));
  std::vector<CompactRecord> out(n);
  for (CompactRecord& c : out) EXPECT_TRUE(r.U16(&c.pos) && r.U64(&c.addr) && r.U32(&c.size) && r.U32(&c.mask));
  return out;
}
std::string EncodeCompactRoot(const std::vector<CompactRecord>& recs) {
  std::string s;
  engine::PutU16(&s, static_cast<uint16_t>(recs.size()));
  for (const CompactRecord& c : recs) {
    engine::PutU16(&s, c.pos);
    engine::PutU64(&s, c.addr);
    engine::PutU32(&s, c.size);
    engine::PutU32(&s, c.mask);
  }
  return s;
}

// ------------------------------------------------------------------ sizes

TEST(TrimmedEdgeTest, ASixByteFileStoresSixBytes) {
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(Dataset f, NewFile(*c, "/f"));
  EXPECT_EQ(f.info().chunks, Dims{kMiB});
  ASSERT_OK(f.WriteBytes(0, 6, "hello\n", Dataset::Growth::kGrowRows));
  ASSERT_OK(c->Commit());
  EXPECT_EQ(f.info().stored_bytes, 6u);
  EXPECT_EQ(f.info().allocated_chunks, 1u);
  EXPECT_EQ(SumStored(f), 6u);
  // The whole container: the reserved head, a chunk, the blocks and the
  // free list, well under one 4 KiB page past the head.
  EXPECT_LT(c->space().file_bytes, engine::kDataStart + 4096);
  c.reset();
  ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(f, c->OpenDataset("/f"));
  EXPECT_EQ(ReadAll(f), "hello\n");
  EXPECT_EQ(f.info().stored_bytes, 6u);
  ASSERT_OK(c->Close());
  ExpectClean(disk, "after close");
}

TEST(TrimmedEdgeTest, ManySmallFilesTakeAboutTheirBytes) {
  // tar x of 400 files of 10 to 6,000 bytes, a commit after each (the
  // mount commits at every close): the target, container bytes at
  // most 1.25 x the files' bytes + 4 KiB per file.
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  std::mt19937_64 rng(21);
  uint64_t total = 0;
  const int files = 400;
  std::vector<std::string> contents;
  for (int i = 0; i < files; ++i) {
    const auto n = static_cast<size_t>(std::exp(std::uniform_real_distribution<>(std::log(10), std::log(6000))(rng)));
    contents.push_back(Bytes(n, static_cast<uint64_t>(i)));
    ASSERT_OK_AND_ASSIGN(Dataset f, NewFile(*c, "/f" + std::to_string(i)));
    // Written as tar does: in pieces of up to 4 KiB, each growing the file.
    for (size_t off = 0; off < n; off += 4096) {
      const size_t len = std::min<size_t>(4096, n - off);
      ASSERT_OK(f.WriteBytes(off, len, contents.back().data() + off, Dataset::Growth::kGrowRows));
    }
    ASSERT_OK(c->Commit());
    EXPECT_EQ(f.info().stored_bytes, n) << "file " << i;
    total += n;
  }
  const uint64_t file_bytes = c->space().file_bytes;
  EXPECT_LE(file_bytes, total * 5 / 4 + 4096ull * files)
      << "container " << file_bytes << " bytes for " << total << " bytes in " << files << " files";
  ASSERT_OK(c->Close());
  c.reset();
  ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(disk, {.read_only = true}));
  for (int i = 0; i < files; ++i) {
    ASSERT_OK_AND_ASSIGN(Dataset f, c->OpenDataset("/f" + std::to_string(i)));
    ASSERT_EQ(ReadAll(f), contents[static_cast<size_t>(i)]) << "file " << i;
  }
  c.reset();
  ExpectClean(disk, "400 small files");
}

TEST(TrimmedEdgeTest, OnlyTheLastChunkIsTrimmed) {
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(Dataset f, NewFile(*c, "/f"));
  const std::string bytes = Bytes(2 * kMiB + 1000, 3);
  ASSERT_OK(f.WriteBytes(0, bytes.size(), bytes.data(), Dataset::Growth::kGrowRows));
  ASSERT_OK(c->Commit());
  ASSERT_OK_AND_ASSIGN(std::vector<StoredChunk> chunks, f.StoredChunks());
  ASSERT_EQ(chunks.size(), 3u);
  std::sort(chunks.begin(), chunks.end(), [](auto& a, auto& b) { return a.coords < b.coords; });
  EXPECT_EQ(chunks[0].bytes, kMiB);
  EXPECT_EQ(chunks[1].bytes, kMiB);
  EXPECT_EQ(chunks[2].bytes, 1000u);
  EXPECT_EQ(f.info().stored_bytes, bytes.size());
  EXPECT_EQ(ReadAll(f), bytes);
}

TEST(TrimmedEdgeTest, WholeStepsOfAnNdChunkAreKept) {
  // 2-D, growable first dimension, chunks of 4 x 3 rows of u4: a chunk
  // holding 2 rows of the dataset stores those 2 steps (24 bytes).
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(
      Dataset d,
      c->CreateDataset("/d", {.dtype = DType::kU4, .shape = {0, 3}, .max_shape = {kUnlimited, 3}, .chunks = {4, 3}}));
  std::vector<uint32_t> v(10 * 3);
  std::iota(v.begin(), v.end(), 1u);
  ASSERT_OK(d.WriteBytes(0, v.size() * 4, v.data(), Dataset::Growth::kGrowRows));
  ASSERT_OK(c->Commit());
  EXPECT_EQ(d.info().shape, (Dims{10, 3}));
  EXPECT_EQ(d.info().stored_bytes, 10u * 3 * 4);  // 4 + 4 + 2 rows
  c.reset();
  ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(d, c->OpenDataset("/d"));
  std::vector<uint32_t> got(v.size());
  ASSERT_OK(d.ReadElements(0, got.size(), got.data()));
  EXPECT_EQ(got, v);
}

TEST(TrimmedEdgeTest, FixedAndFilteredDatasetsAreNotTrimmed) {
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  // A fixed dataset's edge chunks were always stored trimmed to its shape.
  ASSERT_OK_AND_ASSIGN(Dataset fixed, c->CreateDataset("/fixed", {.dtype = DType::kU1, .shape = {10}, .chunks = {4}}));
  ASSERT_OK(fixed.WriteElements(0, 10, "0123456789"));
  // A filtered growable dataset stores what its filters make.
  ASSERT_OK_AND_ASSIGN(
      Dataset filtered,
      c->CreateDataset(
          "/filtered",
          {.dtype = DType::kU1, .shape = {0}, .max_shape = {kUnlimited}, .chunks = {64}, .filters = "checksum"}));
  ASSERT_OK(filtered.WriteBytes(0, 10, "0123456789", Dataset::Growth::kGrowRows));
  ASSERT_OK(c->Commit());
  EXPECT_EQ(fixed.info().stored_bytes, 10u);
  EXPECT_EQ(filtered.info().stored_bytes, 64u + 4);  // the whole chunk and a CRC
  ASSERT_OK(c->Close());
  ExpectClean(disk, "fixed and filtered");
}

// ---------------------------------------------------------------- growing

TEST(TrimmedEdgeTest, GrowingAfterATrimmedChunkReadsTheFillValue) {
  // Fill 0x2A, so that a read of what the chunk does not store is told
  // apart from zeros.
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(Dataset f, NewFile(*c, "/f", "\x2a"));
  ASSERT_OK(f.WriteBytes(0, 10, "0123456789", Dataset::Growth::kGrowRows));
  ASSERT_OK(c->Commit());
  EXPECT_EQ(f.info().stored_bytes, 10u);

  // truncate up: nothing is stored, the new bytes read as the fill value,
  // from the cold file too.
  ASSERT_OK(f.SetSizeBytes(5000));
  ASSERT_OK(c->Commit());
  EXPECT_EQ(f.info().stored_bytes, 10u);
  const std::string want = "0123456789" + std::string(4990, '\x2a');
  EXPECT_EQ(ReadAll(f), want);
  c.reset();
  ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(f, c->OpenDataset("/f"));
  EXPECT_EQ(ReadAll(f), want);
  // A read inside what is stored, and one across its end, cold.
  c.reset();
  ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(f, c->OpenDataset("/f"));
  char buf[20];
  ASSERT_OK(f.ReadBytes(2, 5, buf));
  EXPECT_EQ(std::string(buf, 5), "23456");
  ASSERT_OK(f.ReadBytes(5, 20, buf));
  EXPECT_EQ(std::string(buf, 20), "56789" + std::string(15, '\x2a'));

  // A write past the old end, with a gap: the chunk is stored again, as
  // far as the dataset now reaches.
  ASSERT_OK(f.WriteBytes(6000, 4, "abcd", Dataset::Growth::kGrowRows));
  ASSERT_OK(c->Commit());
  EXPECT_EQ(f.info().stored_bytes, 6004u);
  const std::string after = want + std::string(1000, '\x2a') + "abcd";
  EXPECT_EQ(ReadAll(f), after);
  ASSERT_OK(c->Close());
  c.reset();
  ExpectClean(disk, "after growing");
  ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(f, c->OpenDataset("/f"));
  EXPECT_EQ(ReadAll(f), after);
}

// A new file's chunk is filled in the cache only as far as the file
// reaches (a small file does not zero a whole 1 MiB chunk); growth fills
// the rest over what it makes visible. The chunk buffers come from the
// process's pool, here left full of another file's bytes, so an element
// the growth did not fill would read as those.
TEST(TrimmedEdgeTest, ACachedChunkFilledToTheEndReadsTheFillValueWhereItGrows) {
  {
    auto junk_disk = NewDisk();
    ASSERT_OK_AND_ASSIGN(auto j, OpenOnDisk(junk_disk));
    ASSERT_OK_AND_ASSIGN(Dataset junk, NewFile(*j, "/junk"));
    // In half chunks, through the cache (whole chunks would go straight to
    // the file, on the engine's pool).
    const std::string ee(kMiB / 2, '\xee');
    for (uint64_t off = 0; off < 4 * kMiB; off += ee.size())
      ASSERT_OK(junk.WriteBytes(off, ee.size(), ee.data(), Dataset::Growth::kGrowRows));
    ASSERT_OK(j->Close());  // its cache's buffers go to the pool
  }
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(Dataset f, NewFile(*c, "/f", "\x2a"));
  ASSERT_OK(f.WriteBytes(0, 10, "0123456789", Dataset::Growth::kGrowRows));
  // Grown by truncate, by a write past the end, and by an append, before
  // anything is stored: the chunk stays in the cache throughout.
  ASSERT_OK(f.SetSizeBytes(5000));
  std::string want = "0123456789" + std::string(4990, '\x2a');
  EXPECT_EQ(ReadAll(f), want);
  ASSERT_OK(f.WriteBytes(6000, 4, "abcd", Dataset::Growth::kGrowRows));
  want += std::string(1000, '\x2a') + "abcd";
  EXPECT_EQ(ReadAll(f), want);
  ASSERT_OK(f.WriteBytes(want.size(), 3, "xyz", Dataset::Growth::kGrowRows));
  want += "xyz";
  EXPECT_EQ(ReadAll(f), want);
  EXPECT_EQ(c->cache_stats().bytes_written, 0u);
  ASSERT_OK(c->Commit());
  EXPECT_EQ(f.info().stored_bytes, want.size());
  // Stored, then changed without being read (write without read): the
  // stored chunk is merged in as far as the file reaches, and a truncate
  // past it reads the fill value.
  ASSERT_OK(c->Close());
  c.reset();
  ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(f, c->OpenDataset("/f"));
  ASSERT_OK(f.WriteBytes(1, 2, "AB"));
  want.replace(1, 2, "AB");
  ASSERT_OK(f.SetSizeBytes(want.size() + 100));
  want += std::string(100, '\x2a');
  EXPECT_EQ(ReadAll(f), want);
  ASSERT_OK(c->Close());
  c.reset();
  ExpectClean(disk, "after growing a cached chunk");
  ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(f, c->OpenDataset("/f"));
  EXPECT_EQ(ReadAll(f), want);
}

TEST(TrimmedEdgeTest, AppendingAcrossCommitsRestoresTheEdgeChunk) {
  // A log file: appended in small pieces with a commit after each, as
  // `>>` through the mount with a close after each line.
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(Dataset f, NewFile(*c, "/log"));
  std::string want;
  for (int i = 0; i < 300; ++i) {
    const std::string line = "line " + std::to_string(i) + " " + Bytes(static_cast<size_t>(i % 37), i) + "\n";
    ASSERT_OK(f.WriteBytes(f.size_bytes(), line.size(), line.data(), Dataset::Growth::kGrowRows));
    want += line;
    ASSERT_OK(c->Commit());
    ASSERT_EQ(f.info().stored_bytes, want.size()) << "after line " << i;
    if (i % 50 == 49) {
      c.reset();
      ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(disk));
      ASSERT_OK_AND_ASSIGN(f, c->OpenDataset("/log"));
    }
  }
  EXPECT_EQ(ReadAll(f), want);
  // The replaced edge chunks are free space again: the file is not much
  // more than the log (and the free list's deltas, at most 64 small blocks).
  const SpaceInfo space = c->space();
  EXPECT_LT(space.file_bytes - space.free_bytes - space.free_list_bytes, engine::kDataStart + want.size() + 4096);
  EXPECT_LT(space.free_list_bytes, 64u * 1024);
  ASSERT_OK(c->Close());
  ExpectClean(disk, "appended log");
}

// ------------------------------------------------------- shrinking, rewriting

TEST(TrimmedEdgeTest, AShrinkStoresTheCutChunkShorter) {
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  std::string fill(4, '\0');
  const uint32_t kFill = 0xF111F111;
  std::memcpy(fill.data(), &kFill, 4);
  ASSERT_OK_AND_ASSIGN(
      Dataset d,
      c->CreateDataset(
          "/d", {.dtype = DType::kU4, .shape = {0, 8}, .max_shape = {kUnlimited, 8}, .chunks = {4, 8}, .fill = fill}));
  std::vector<uint32_t> v(10 * 8);
  std::iota(v.begin(), v.end(), 1u);
  ASSERT_OK(d.WriteBytes(0, v.size() * 4, v.data(), Dataset::Growth::kGrowRows));
  ASSERT_OK(c->Commit());
  EXPECT_EQ(d.info().stored_bytes, 10u * 32);  // 4 + 4 + 2 rows of 32 bytes

  ASSERT_OK(d.Resize({5, 8}));  // chunk 1 is cut after one row, chunk 2 goes
  EXPECT_EQ(d.info().allocated_chunks, 2u);
  EXPECT_EQ(d.info().stored_bytes, 5u * 32);
  ASSERT_OK(c->Commit());
  ASSERT_OK(d.Resize({10, 8}));  // rows 5..9 read as the fill value
  std::vector<uint32_t> want(v.begin(), v.begin() + 40);
  want.resize(80, kFill);
  std::vector<uint32_t> got(80);
  ASSERT_OK(d.ReadElements(0, 80, got.data()));
  EXPECT_EQ(got, want);
  EXPECT_EQ(d.info().stored_bytes, 5u * 32);
  ASSERT_OK(c->Commit());
  c.reset();
  ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(d, c->OpenDataset("/d"));
  ASSERT_OK(d.ReadElements(0, 80, got.data()));
  EXPECT_EQ(got, want);
  // The mount's truncate to 0 and back.
  ASSERT_OK(d.SetSizeBytes(0));
  EXPECT_EQ(d.info().stored_bytes, 0u);
  ASSERT_OK(d.SetSizeBytes(3 * 32));
  ASSERT_OK(d.ReadElements(0, 24, got.data()));
  EXPECT_EQ(std::vector<uint32_t>(got.begin(), got.begin() + 24), std::vector<uint32_t>(24, kFill));
  ASSERT_OK(c->Close());
  ExpectClean(disk, "after shrinking");
}

TEST(TrimmedEdgeTest, RewritesInsideAndOverTheWholeChunk) {
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(
      Dataset f,
      c->CreateDataset("/f", {.dtype = DType::kU1, .shape = {0}, .max_shape = {kUnlimited}, .chunks = {4096}}));
  std::string want = Bytes(3000, 1);
  ASSERT_OK(f.WriteBytes(0, want.size(), want.data(), Dataset::Growth::kGrowRows));
  ASSERT_OK(c->Commit());
  // A rewrite of part of the trimmed chunk: written without reading it,
  // merged with the stored 3,000 bytes at the commit.
  ASSERT_OK(f.WriteBytes(100, 5, "HELLO"));
  want.replace(100, 5, "HELLO");
  ASSERT_OK(c->Commit());
  EXPECT_EQ(f.info().stored_bytes, 3000u);
  EXPECT_EQ(ReadAll(f), want);
  // Growing to a whole chunk and more, written in one piece (a whole-chunk
  // write goes straight to the file).
  const std::string more = Bytes(8192 - 3000, 2);
  ASSERT_OK(f.WriteBytes(3000, more.size(), more.data(), Dataset::Growth::kGrowRows));
  want += more;
  ASSERT_OK(c->Commit());
  EXPECT_EQ(f.info().stored_bytes, 8192u);
  const std::string whole = Bytes(8192, 3);
  ASSERT_OK(f.WriteBytes(0, whole.size(), whole.data()));
  ASSERT_OK(c->Commit());
  EXPECT_EQ(ReadAll(f), whole);
  EXPECT_EQ(f.info().stored_bytes, 8192u);
  // Erase (punch a hole) in the middle of the last chunk, and all of it.
  ASSERT_OK(f.Erase(Slab::Box({5000}, {100})));
  ASSERT_OK(c->Commit());
  std::string erased = whole;
  erased.replace(5000, 100, std::string(100, '\0'));
  EXPECT_EQ(ReadAll(f), erased);
  ASSERT_OK(f.Erase(Slab::Box({4096}, {4096})));
  ASSERT_OK(c->Commit());
  EXPECT_EQ(f.info().stored_bytes, 4096u);
  ASSERT_OK(c->Close());
  c.reset();
  ExpectClean(disk, "after rewrites");
  ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(f, c->OpenDataset("/f"));
  EXPECT_EQ(ReadAll(f), erased.substr(0, 4096) + std::string(4096, '\0'));
}

// ------------------------------------------------------------ against a model

// Random appends, writes, truncates and resizes, commits and reopens, in a
// dataset and a dense reference; every stored chunk holds at most the steps
// inside the current shape, and the header's stored bytes are the records'.
struct ModelCase {
  const char* name;
  Dims shape, max_shape, chunks;
};
class TrimmedEdgeModelTest : public ::testing::TestWithParam<ModelCase> {};

TEST_P(TrimmedEdgeModelTest, MatchesAReferenceAndStoresNoMoreThanTheShape) {
  const ModelCase& tc = GetParam();
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(
      Dataset d,
      c->CreateDataset(
          "/d",
          {.dtype = DType::kU1, .shape = tc.shape, .max_shape = tc.max_shape, .chunks = tc.chunks, .fill = "\x07"}));
  const size_t rank = tc.shape.size();
  uint64_t row = 1;  // bytes of one step of the first dimension
  for (size_t k = 1; k < rank; ++k) row *= tc.shape[k];
  std::string ref(tc.shape[0] * row, '\x07');
  std::mt19937_64 rng(std::hash<std::string>()(tc.name));
  auto pick = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  const uint64_t cap = tc.max_shape[0] == kUnlimited ? 6 * tc.chunks[0] + 3 : tc.max_shape[0];
  auto check = [&](int step) {
    ASSERT_EQ(d.size_bytes(), ref.size()) << "step " << step;
    ASSERT_EQ(ReadAll(d), ref) << "step " << step;
    ASSERT_OK_AND_ASSIGN(std::vector<StoredChunk> chunks, d.StoredChunks());
    uint64_t sum = 0;
    const uint64_t length = ref.size() / row;
    for (const StoredChunk& ch : chunks) {
      uint64_t step_bytes = 1;
      for (size_t k = 1; k < rank; ++k)
        step_bytes *= std::min(tc.chunks[k], tc.max_shape[k] - ch.coords[k] * tc.chunks[k]);
      const uint64_t first = ch.coords[0] * tc.chunks[0];
      ASSERT_LT(first, length) << "a chunk past the end, step " << step;
      EXPECT_LE(ch.bytes, std::min(tc.chunks[0], length - first) * step_bytes)
          << "chunk " << ch.coords[0] << " stores more than the dataset holds, step " << step;
      EXPECT_EQ(ch.bytes % step_bytes, 0u);
      sum += ch.bytes;
    }
    EXPECT_EQ(sum, d.info().stored_bytes) << "step " << step;
  };
  for (int step = 0; step < 200; ++step) {
    const uint64_t op = pick(0, 9);
    const uint64_t length = ref.size() / row;
    if (op < 3) {  // append some bytes, growing by whole rows
      if (length >= cap) continue;
      const uint64_t n = pick(1, std::min<uint64_t>((cap - length) * row, 3 * tc.chunks[0] * row));
      const std::string bytes = Bytes(n, static_cast<uint64_t>(step));
      ASSERT_OK(d.WriteBytes(ref.size(), n, bytes.data(), Dataset::Growth::kGrowRows));
      ref += bytes;
      ref.resize((ref.size() + row - 1) / row * row, '\x07');
    } else if (op < 5) {  // overwrite inside
      if (ref.empty()) continue;
      const uint64_t off = pick(0, ref.size() - 1);
      const uint64_t n = pick(1, std::min<uint64_t>(ref.size() - off, 2 * tc.chunks[0] * row));
      const std::string bytes = Bytes(n, 1000 + static_cast<uint64_t>(step));
      ASSERT_OK(d.WriteBytes(off, n, bytes.data()));
      ref.replace(off, n, bytes);
    } else if (op < 7) {  // truncate, up or down, by whole rows
      const uint64_t to = pick(0, 5) == 0 ? 0 : pick(0, cap);
      ASSERT_OK(d.SetSizeBytes(to * row));
      ref.resize(to * row, '\x07');
    } else if (op == 7) {
      ASSERT_OK(c->Commit());
    } else if (op == 8) {
      ASSERT_OK(c->Close());
      c.reset();
      ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(disk));
      ASSERT_OK_AND_ASSIGN(d, c->OpenDataset("/d"));
    } else {  // erase a range
      if (ref.empty()) continue;
      const uint64_t first = pick(0, length - 1);
      const uint64_t n = pick(1, length - first);
      Dims start(rank, 0), count = d.info().shape;
      start[0] = first;
      count[0] = n;
      ASSERT_OK(d.Erase(Slab::Box(start, count)));
      ref.replace(first * row, n * row, std::string(n * row, '\x07'));
    }
    check(step);
  }
  ASSERT_OK(c->Close());
  ExpectClean(disk, tc.name);
}

INSTANTIATE_TEST_SUITE_P(Shapes, TrimmedEdgeModelTest,
                         ::testing::Values(ModelCase{"file", {0}, {kUnlimited}, {64}},             // extensible array
                                           ModelCase{"rows", {0, 5}, {kUnlimited, 5}, {3, 2}},     // edge columns too
                                           ModelCase{"bounded", {2, 4}, {40, 4}, {6, 4}},          // compact index
                                           ModelCase{"bounded_fixed", {0, 3}, {1000, 3}, {7, 3}},  // fixed array
                                           ModelCase{
                                               "two_unlimited", {1, 4}, {kUnlimited, kUnlimited}, {5, 3}}),  // B-tree
                         [](const ::testing::TestParamInfo<ModelCase>& p) { return std::string(p.param.name); });

// ------------------------------------------------------------------ crashes

// A power loss at every write and sync of a commit that appends to a
// trimmed file, creates small files, shrinks one and deletes one leaves
// the state of the commit before or the one after, whole, and a
// container slab fsck finds clean.
TEST(TrimmedEdgeCrashTest, ACrashLeavesTheOldOrTheNewState) {
  const std::string a0 = Bytes(700, 1), a1 = Bytes(5000, 2), b = Bytes(6, 3), d0 = Bytes(3000, 4);
  auto prepare = [&](std::unique_ptr<Container>* c) {
    auto disk = NewDisk();
    *c = std::move(*OpenOnDisk(disk));
    auto a = NewFile(**c, "/a");
    auto d = NewFile(**c, "/d");
    auto gone = NewFile(**c, "/gone");
    EXPECT_TRUE(a->WriteBytes(0, a0.size(), a0.data(), Dataset::Growth::kGrowRows).ok());
    EXPECT_TRUE(d->WriteBytes(0, d0.size(), d0.data(), Dataset::Growth::kGrowRows).ok());
    EXPECT_TRUE(gone->WriteBytes(0, 10, "0123456789", Dataset::Growth::kGrowRows).ok());
    EXPECT_TRUE((*c)->Commit().ok());
    // The next commit's changes.
    EXPECT_TRUE(a->WriteBytes(a0.size(), a1.size(), a1.data(), Dataset::Growth::kGrowRows).ok());
    auto bf = NewFile(**c, "/b");
    EXPECT_TRUE(bf->WriteBytes(0, b.size(), b.data(), Dataset::Growth::kGrowRows).ok());
    EXPECT_TRUE(d->SetSizeBytes(1000).ok());
    EXPECT_TRUE((*c)->Remove("/gone").ok());
    return disk;
  };
  int64_t commit_writes;
  {
    std::unique_ptr<Container> c;
    auto disk = prepare(&c);
    const int64_t before = disk->writes;
    ASSERT_OK(c->Commit());
    commit_writes = disk->writes - before;
  }
  ASSERT_GT(commit_writes, 4);
  int old_seen = 0, new_seen = 0;
  for (int64_t k = 0; k <= commit_writes; ++k) {
    std::unique_ptr<Container> c;
    auto disk = prepare(&c);
    disk->crash_after = disk->writes + k;
    Status s = c->Commit();
    if (k < commit_writes) {
      EXPECT_FALSE(s.ok()) << "k=" << k;
    }
    c.reset();  // its retry fails too: the "machine" is down
    for (uint64_t seed = 0; seed < 4; ++seed) {
      std::mt19937_64 rng(seed * 1000 + static_cast<uint64_t>(k));
      auto after = testutil::DiskWithImage(disk->CrashImage(rng, seed == 0 ? 0.0 : 0.5, seed < 2 ? 0.0 : 0.3));
      ASSERT_OK_AND_ASSIGN(auto r, OpenOnDisk(after, {.read_only = true}));
      ASSERT_OK_AND_ASSIGN(Dataset a, r->OpenDataset("/a"));
      ASSERT_OK_AND_ASSIGN(Dataset d, r->OpenDataset("/d"));
      const bool is_new = !r->Resolve("/gone").has_value();
      if (is_new) {
        ++new_seen;
        EXPECT_EQ(ReadAll(a), a0 + a1) << "k=" << k << " seed " << seed;
        EXPECT_EQ(ReadAll(d), d0.substr(0, 1000)) << "k=" << k << " seed " << seed;
        ASSERT_OK_AND_ASSIGN(Dataset bd, r->OpenDataset("/b"));
        EXPECT_EQ(ReadAll(bd), b);
        EXPECT_EQ(a.info().stored_bytes, a0.size() + a1.size());
        EXPECT_EQ(d.info().stored_bytes, 1000u);
      } else {
        ++old_seen;
        EXPECT_EQ(ReadAll(a), a0) << "k=" << k << " seed " << seed;
        EXPECT_EQ(ReadAll(d), d0) << "k=" << k << " seed " << seed;
        EXPECT_FALSE(r->Resolve("/b").has_value());
        EXPECT_EQ(a.info().stored_bytes, a0.size());
      }
      r.reset();
      ExpectClean(after, "crash after write " + std::to_string(k) + " seed " + std::to_string(seed));
      // A writer opens it and carries on.
      ASSERT_OK_AND_ASSIGN(auto w, OpenOnDisk(after));
      ASSERT_OK_AND_ASSIGN(Dataset wa, w->OpenDataset("/a"));
      ASSERT_OK(wa.WriteBytes(wa.size_bytes(), 3, "end", Dataset::Growth::kGrowRows));
      ASSERT_OK(w->Close());
      w.reset();
      ExpectClean(after, "writing after crash " + std::to_string(k));
    }
  }
  EXPECT_GT(old_seen, 0);
  EXPECT_GT(new_seen, 0);
}

// ----------------------------------------------------------- damaged records

class TrimmedEdgeDamageTest : public ::testing::Test {
 protected:
  // A compact-indexed dataset (records in its header): 10 rows of 3 u1 in
  // chunks of 4 rows, so chunk 2 stores 2 steps (6 bytes) of 12.
  void SetUp() override {
    disk_ = NewDisk();
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk_));
    ASSERT_OK_AND_ASSIGN(
        Dataset d,
        c->CreateDataset("/d", {.dtype = DType::kU1, .shape = {0, 3}, .max_shape = {20, 3}, .chunks = {4, 3}}));
    ASSERT_EQ(d.info().index, IndexKind::kCompact);
    ASSERT_OK(d.WriteBytes(0, 30, Bytes(30, 5).data(), Dataset::Growth::kGrowRows));
    ASSERT_OK(c->Close());
    image_ = disk_->current;
  }
  // The image with chunk 2's record changed by `edit`.
  std::shared_ptr<testutil::Disk> Damaged(const std::function<void(CompactRecord*)>& edit) {
    std::string image = image_;
    EditDatasetBlock(&image, "d", [&](engine::DatasetRecord* rec, uint8_t*) {
      std::vector<CompactRecord> recs = DecodeCompactRoot(rec->index_root);
      EXPECT_EQ(recs.size(), 3u);
      EXPECT_EQ(recs[2].size, 6u);
      edit(&recs[2]);
      rec->index_root = EncodeCompactRoot(recs);
    });
    return testutil::DiskWithImage(image);
  }
  static FsckReport Fsck(const std::shared_ptr<testutil::Disk>& disk) {
    auto r = engine::CheckFile(std::make_unique<testutil::FaultFile>(disk), {.verify_data = true});
    EXPECT_TRUE(r.has_value());
    return r.has_value() ? *r : FsckReport{};
  }
  std::shared_ptr<testutil::Disk> disk_;
  std::string image_;
};

TEST_F(TrimmedEdgeDamageTest, ASizeThatIsNotWholeStepsIsCorruption) {
  auto disk = Damaged([](CompactRecord* r) { r->size = 7; });
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk, {.read_only = true}));
  ASSERT_OK_AND_ASSIGN(Dataset d, c->OpenDataset("/d"));
  std::string buf(30, '\0');
  // The chunks before it still read.
  EXPECT_OK(d.ReadBytes(0, 24, buf.data()));
  auto r = d.ReadBytes(24, 6, buf.data());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kCorruption);
  EXPECT_NE(r.error().message().find("/d chunk [2,0]"), std::string::npos) << r.error().ToString();
  EXPECT_NE(r.error().message().find("3-byte steps"), std::string::npos) << r.error().ToString();
  c.reset();
  const FsckReport report = Fsck(disk);
  EXPECT_TRUE(report.damaged());
  bool named = false;
  for (const FsckFinding& f : report.findings) named |= f.where.find("/d chunk [2,0]") != std::string::npos;
  EXPECT_TRUE(named);
}

TEST_F(TrimmedEdgeDamageTest, ASizeBeyondTheChunkIsRefusedWhenOpened) {
  // 13 bytes: more than the chunk's 12; the index refuses the record.
  auto disk = Damaged([](CompactRecord* r) { r->size = 13; });
  auto c = OpenOnDisk(disk, {.read_only = true});
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code(), Code::kCorruption);
  EXPECT_TRUE(Fsck(disk).damaged());
}

TEST_F(TrimmedEdgeDamageTest, AZeroSizeOrAFilterMaskIsCorruption) {
  auto zero = Damaged([](CompactRecord* r) { r->size = 0; });
  EXPECT_CODE(OpenOnDisk(zero, {.read_only = true}), Code::kCorruption);
  auto mask = Damaged([](CompactRecord* r) { r->mask = 1; });
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(mask, {.read_only = true}));
  ASSERT_OK_AND_ASSIGN(Dataset d, c->OpenDataset("/d"));
  std::string buf(6, '\0');
  EXPECT_CODE(d.ReadBytes(24, 6, buf.data()), Code::kCorruption);
  c.reset();
  EXPECT_TRUE(Fsck(mask).damaged());
}

TEST_F(TrimmedEdgeDamageTest, AShrinkOverADamagedRecordChangesNothing) {
  auto disk = Damaged([](CompactRecord* r) { r->size = 7; });
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(Dataset d, c->OpenDataset("/d"));
  EXPECT_CODE(d.Resize({9, 3}), Code::kCorruption);
  EXPECT_EQ(d.info().shape, (Dims{10, 3}));
  EXPECT_EQ(d.info().allocated_chunks, 3u);
}

TEST_F(TrimmedEdgeDamageTest, TheFlagInAVersion1BlockIsCorruption) {
  // A build that predates the flag writes version 1 blocks; a version 1
  // block that claims it is damaged, not trimmed.
  std::string image = image_;
  EditDatasetBlock(&image, "d", [](engine::DatasetRecord* rec, uint8_t* version) {
    EXPECT_EQ(*version, 2);
    EXPECT_NE(rec->flags & engine::kDatasetFlagTrimmedEdge, 0);
    *version = 1;
  });
  auto disk = testutil::DiskWithImage(image);
  auto c = OpenOnDisk(disk, {.read_only = true});
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code(), Code::kCorruption);
  EXPECT_NE(c.error().message().find("unknown dataset flags"), std::string::npos) << c.error().ToString();
  EXPECT_TRUE(Fsck(disk).damaged());
}

// ----------------------------------------------------- containers from before

// The image of a container as builds before trimmed edge chunks wrote it:
// version 1 blocks, a growable dataset /d (u1, shape {20}, max shape {100},
// chunks {16}, compact index of 8-byte records) whose chunks are stored
// whole along the growable dimension: chunk 0 holds bytes 0..15, chunk 1
// bytes 16..19 and 12 fill values. Packed (no alignment gaps, as `slab
// repack` writes), so that every byte is referenced.
std::string OldContainerImage(const std::string& data) {
  std::string image(engine::kDataStart, '\0');
  const uint64_t chunk0 = image.size();
  image += data.substr(0, 16);
  const uint64_t chunk1 = image.size();
  image += data.substr(16, 4) + std::string(12, '\0');

  engine::ObjectRecord ds;
  ds.id = 2;
  ds.kind = ObjectKind::kDataset;
  engine::DatasetRecord& d = ds.dataset;
  d.dtype = DType::kU1;
  d.index = IndexKind::kCompact;
  d.flags = engine::kDatasetFlagLengthResizable;
  d.shape = {20};
  d.max_shape = {100};
  d.chunks = {16};
  d.fill = std::string(1, '\0');
  d.allocated_chunks = 2;
  d.stored_bytes = 32;
  engine::PutU16(&d.index_root, 2);
  engine::PutU16(&d.index_root, 0);
  engine::PutU64(&d.index_root, chunk0);
  engine::PutU16(&d.index_root, 1);
  engine::PutU64(&d.index_root, chunk1);
  EXPECT_EQ(engine::ObjectBlockVersion(ds), 1);
  const std::string ds_block = engine::EncodeBlock(engine::BlockType::kDataset, engine::EncodeObject(ds), 1);
  const engine::BlockRef ds_ref{image.size(), static_cast<uint32_t>(ds_block.size())};
  image += ds_block;

  engine::ObjectRecord root;
  root.id = kRootId;
  root.kind = ObjectKind::kGroup;
  root.children.push_back({"d", ObjectKind::kDataset, 2, ds_ref});
  const std::string root_block = engine::EncodeBlock(engine::BlockType::kGroup, engine::EncodeObject(root), 1);
  engine::Superblock sb;
  sb.generation = 1;
  sb.root = engine::BlockRef{image.size(), static_cast<uint32_t>(root_block.size())};
  image += root_block;
  sb.file_end = image.size();
  sb.next_object_id = 3;
  const std::string sbytes = engine::EncodeSuperblock(sb);
  image.replace(engine::kSuperblockSlot1, sbytes.size(), sbytes);
  return image;
}

TEST(TrimmedEdgeOldContainerTest, WholeChunksOfAnOlderBuildReadAndStayWhole) {
  const std::string data = Bytes(20, 9);
  auto disk = testutil::DiskWithImage(OldContainerImage(data));
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk, {.read_only = true}));
    ASSERT_OK_AND_ASSIGN(Dataset d, c->OpenDataset("/d"));
    EXPECT_EQ(ReadAll(d), data);
    EXPECT_EQ(d.info().stored_bytes, 32u);
    ASSERT_OK_AND_ASSIGN(std::vector<StoredChunk> chunks, d.StoredChunks());
    ASSERT_EQ(chunks.size(), 2u);
    EXPECT_EQ(chunks[1].bytes, 16u);
  }
  ExpectClean(disk, "the old image");
  // A new build changes it the old way: the dataset keeps its layout (its
  // chunks stay whole, its block version 1), so an older build still reads it.
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
    ASSERT_OK_AND_ASSIGN(Dataset d, c->OpenDataset("/d"));
    ASSERT_OK(d.WriteBytes(20, 20, Bytes(20, 10).data(), Dataset::Growth::kGrowRows));
    ASSERT_OK(d.SetSizeBytes(35));
    ASSERT_OK(c->Commit());
    EXPECT_EQ(d.info().stored_bytes, 48u);  // three whole chunks
    ASSERT_OK(c->Close());
  }
  ExpectClean(disk, "the old image changed");
  std::string image = disk->current;
  EditDatasetBlock(&image, "d", [](engine::DatasetRecord* rec, uint8_t* version) {
    EXPECT_EQ(*version, 1);
    EXPECT_EQ(rec->flags & engine::kDatasetFlagTrimmedEdge, 0);
  });
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk, {.read_only = true}));
  ASSERT_OK_AND_ASSIGN(Dataset d, c->OpenDataset("/d"));
  EXPECT_EQ(ReadAll(d), data + Bytes(20, 10).substr(0, 15));
}

}  // namespace
}  // namespace slabfs
