// Dataset::WriteEncodedChunk (engine/encoded_chunk.cc): a chunk encoded by
// the dataset's own pipeline is stored as it is, once it decodes to exactly
// the chunk; anything else is refused and changes nothing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/filter/pipeline.h"
#include "slabfs/container.h"
#include "tests/testutil/mem_container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {

using testutil::NewDisk;
using testutil::OpenOnDisk;

std::string Chunk(size_t n, uint32_t salt) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i / 7 + salt) % 13);
  return s;
}

std::string Encode(const std::string& filters, const std::string& raw, size_t item, uint32_t* mask) {
  auto p = engine::FilterPipeline::Parse(filters);
  EXPECT_TRUE(p.has_value());
  std::string out;
  p->Encode(raw.data(), raw.size(), item, &out, mask);
  return out;
}

class EncodedChunkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    disk_ = NewDisk();
    auto c = OpenOnDisk(disk_);
    ASSERT_TRUE(c.has_value());
    c_ = std::move(*c);
    auto d = c_->CreateDataset(
        "/d", {.dtype = DType::kU2, .shape = {100, 60}, .chunks = {32, 32}, .filters = "shuffle,deflate=3"});
    ASSERT_TRUE(d.has_value());
    ds_ = *d;
  }
  std::string Read(const Dims& start, const Dims& count) {
    uint64_t n = 2;
    for (uint64_t c : count) n *= c;
    std::string out(n, '\0');
    EXPECT_OK(ds_.Read(Slab::Box(start, count), out.data()));
    return out;
  }
  std::shared_ptr<testutil::Disk> disk_;
  std::unique_ptr<Container> c_;
  Dataset ds_;
};

TEST_F(EncodedChunkTest, AWholeChunkIsStoredAsGivenAndReadsBack) {
  const std::string raw = Chunk(32 * 32 * 2, 1);
  uint32_t mask = 0;
  const std::string image = Encode("shuffle,deflate=9", raw, 2, &mask);  // any level decodes
  const std::vector<uint64_t> at = {1, 0};
  ASSERT_OK(ds_.WriteEncodedChunk(at, image, mask));
  EXPECT_EQ(Read({32, 0}, {32, 32}), raw);
  EXPECT_EQ(ds_.info().stored_bytes, image.size()) << "stored as given, not encoded again";
  ASSERT_OK(c_->Commit());
  ASSERT_OK(c_->Close());
  ASSERT_OK_AND_ASSIGN(auto r, OpenOnDisk(disk_, {.read_only = true}));
  ASSERT_OK_AND_ASSIGN(Dataset rd, r->OpenDataset("/d"));
  std::string back(raw.size(), '\0');
  ASSERT_OK(rd.Read(Slab::Box({32, 0}, {32, 32}), back.data()));
  EXPECT_EQ(back, raw);
}

TEST_F(EncodedChunkTest, ItReplacesACachedChunkWhole) {
  std::string ones(60 * 2, '\x01');
  ASSERT_OK(ds_.Write(Slab::Box({0, 0}, {1, 60}), ones.data()));  // chunks (0,0), (0,1) in the cache
  const std::string raw = Chunk(32 * 32 * 2, 2);
  uint32_t mask = 0;
  const std::string image = Encode("shuffle,deflate=3", raw, 2, &mask);
  const std::vector<uint64_t> at = {0, 0};
  ASSERT_OK(ds_.WriteEncodedChunk(at, image, mask));
  ASSERT_OK(c_->Commit());
  EXPECT_EQ(Read({0, 0}, {32, 32}), raw);
}

TEST(EncodedChunkFullDiskTest, AStoreThatFailsKeepsTheCachedChanges) {
  auto disk = testutil::NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, testutil::OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(
      Dataset d,
      c->CreateDataset("/d", {.dtype = DType::kU2, .shape = {64, 64}, .chunks = {32, 32}, .filters = "deflate=1"}));
  std::string ones(64 * 2, '\x01');
  ASSERT_OK(d.Write(Slab::Box({0, 0}, {1, 64}), ones.data()));  // in the cache, not written back
  testutil::SetCapacity(disk, testutil::DiskSize(disk));        // no byte more
  const std::string raw = Chunk(32 * 32 * 2, 4);
  uint32_t mask = 0;
  const std::string image = Encode("deflate=1", raw, 2, &mask);
  const std::vector<uint64_t> at = {0, 0};
  EXPECT_CODE(d.WriteEncodedChunk(at, image, mask), Code::kNoSpace);
  testutil::SetCapacity(disk, UINT64_MAX);
  std::string back(64 * 2, '\0');
  ASSERT_OK(d.Read(Slab::Box({0, 0}, {1, 64}), back.data()));
  EXPECT_EQ(back, ones) << "the chunk is as it was, its cached changes included";
  ASSERT_OK(c->Commit());
  ASSERT_OK(d.Read(Slab::Box({0, 0}, {1, 64}), back.data()));
  EXPECT_EQ(back, ones);
}

TEST_F(EncodedChunkTest, RefusesWhatItCannotStoreAsGiven) {
  const std::string raw = Chunk(32 * 32 * 2, 3);
  uint32_t mask = 0;
  std::string image = Encode("shuffle,deflate=3", raw, 2, &mask);
  // An edge chunk (the dataset stores it trimmed).
  const std::vector<uint64_t> edge = {3, 0}, right = {0, 1}, outside = {9, 0}, wrong_rank = {0};
  EXPECT_CODE(ds_.WriteEncodedChunk(edge, image, mask), Code::kInvalidArgument);
  EXPECT_CODE(ds_.WriteEncodedChunk(right, image, mask), Code::kInvalidArgument);
  EXPECT_CODE(ds_.WriteEncodedChunk(outside, image, mask), Code::kInvalidArgument);
  EXPECT_CODE(ds_.WriteEncodedChunk(wrong_rank, image, mask), Code::kInvalidArgument);
  // Another encoding (no shuffle) decodes to other bytes... of the right
  // size, so only a damaged stream is caught; a damaged one is Corruption.
  const std::vector<uint64_t> at = {0, 0};
  std::string damaged = image;
  damaged[damaged.size() / 2] ^= 0x55;
  EXPECT_CODE(ds_.WriteEncodedChunk(at, damaged, mask), Code::kCorruption);
  EXPECT_CODE(ds_.WriteEncodedChunk(at, image.substr(0, image.size() - 9), mask), Code::kCorruption);
  // A mask naming a third filter, and a stream larger than the pipeline
  // stores for the chunk.
  EXPECT_CODE(ds_.WriteEncodedChunk(at, image, 0b100), Code::kInvalidArgument);
  EXPECT_CODE(ds_.WriteEncodedChunk(at, std::string(raw.size() + 64, 'x'), 0), Code::kInvalidArgument);
  EXPECT_EQ(ds_.info().allocated_chunks, 0u) << "nothing was stored";
  // Datasets that store no encoded chunks.
  ASSERT_OK_AND_ASSIGN(Dataset plain, c_->CreateDataset("/p", {.dtype = DType::kU2, .shape = {64}, .chunks = {32}}));
  const std::vector<uint64_t> zero = {0};
  EXPECT_CODE(plain.WriteEncodedChunk(zero, image, mask), Code::kNotSupported);
}

}  // namespace
}  // namespace slabfs
