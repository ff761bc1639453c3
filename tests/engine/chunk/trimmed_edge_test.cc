// The arithmetic of trimmed edge chunks (engine/chunk/trimmed_edge.h): the
// bytes of one step of the first dimension, the stored size at a length,
// and which stored sizes a record may claim.
#include "engine/chunk/trimmed_edge.h"

#include <gtest/gtest.h>

#include "tests/testutil/status_matchers.h"

namespace slabfs::engine {
namespace {

DatasetRecord Record(DType dtype, Dims shape, Dims max_shape, Dims chunks) {
  DatasetRecord d;
  d.dtype = dtype;
  d.flags = kDatasetFlagLengthResizable | kDatasetFlagTrimmedEdge;
  d.shape = std::move(shape);
  d.max_shape = std::move(max_shape);
  d.chunks = std::move(chunks);
  d.fill.assign(ItemSize(d.dtype), '\0');
  return d;
}

TEST(TrimmedEdgeMathTest, AStepIsTheChunkAcrossTheOtherDimensions) {
  const DatasetRecord file = Record(DType::kU1, {0}, {kUnlimited}, {1 << 20});
  const Dims c0 = {0};
  EXPECT_EQ(ChunkStepBytes(file, c0), 1u);
  // 2-D u4, 10 columns in chunks of 4: the last column of chunks is 2 wide.
  const DatasetRecord rows = Record(DType::kU4, {0, 10}, {kUnlimited, 10}, {3, 4});
  const Dims a = {5, 0}, b = {5, 2};
  EXPECT_EQ(ChunkStepBytes(rows, a), 16u);
  EXPECT_EQ(ChunkStepBytes(rows, b), 8u);
  // An unlimited inner dimension: the chunk's whole width.
  const DatasetRecord wide = Record(DType::kI2, {0, 0}, {kUnlimited, kUnlimited}, {2, 7});
  const Dims w = {0, 3};
  EXPECT_EQ(ChunkStepBytes(wide, w), 14u);
}

TEST(TrimmedEdgeMathTest, StoredBytesFollowTheLength) {
  const DatasetRecord file = Record(DType::kU1, {0}, {kUnlimited}, {1 << 20});
  const Dims c0 = {0}, c1 = {1};
  EXPECT_EQ(TrimmedChunkBytes(file, c0, 6), 6u);
  EXPECT_EQ(TrimmedChunkBytes(file, c0, 1 << 20), 1u << 20);
  EXPECT_EQ(TrimmedChunkBytes(file, c0, 5 << 20), 1u << 20);
  EXPECT_EQ(TrimmedChunkBytes(file, c1, (1 << 20) + 1), 1u);
  // A chunk wholly past the end keeps one step (never written back so).
  EXPECT_EQ(TrimmedChunkBytes(file, c1, 10), 1u);
  // Bounded max shape: the last chunk is trimmed to it as well.
  const DatasetRecord bounded = Record(DType::kU4, {0, 3}, {10, 3}, {4, 3});
  const Dims last = {2, 0};
  EXPECT_EQ(TrimmedChunkBytes(bounded, last, 9), 12u);   // 1 step of 12 bytes
  EXPECT_EQ(TrimmedChunkBytes(bounded, last, 10), 24u);  // all 2 steps the max shape leaves
}

TEST(TrimmedEdgeMathTest, RecordsMustClaimWholeStepsOfTheChunk) {
  const DatasetRecord rows = Record(DType::kU4, {0, 10}, {kUnlimited, 10}, {3, 4});
  const Dims c = {1, 0};  // 3 steps of 16 bytes
  EXPECT_OK(CheckTrimmedChunk(rows, c, 16, 0));
  EXPECT_OK(CheckTrimmedChunk(rows, c, 48, 0));
  EXPECT_CODE(CheckTrimmedChunk(rows, c, 0, 0), Code::kCorruption);
  EXPECT_CODE(CheckTrimmedChunk(rows, c, 17, 0), Code::kCorruption);
  EXPECT_CODE(CheckTrimmedChunk(rows, c, 64, 0), Code::kCorruption);
  EXPECT_CODE(CheckTrimmedChunk(rows, c, 16, 1), Code::kCorruption);
}

}  // namespace
}  // namespace slabfs::engine
