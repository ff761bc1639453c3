#include "fusefs/element_range.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace slabfs::fusefs {
namespace {

uint64_t Volume(const Dims& d) {
  uint64_t v = 1;
  for (uint64_t x : d) v *= x;
  return v;
}

// The C-order positions of every element of b in an array of `shape`.
std::vector<uint64_t> Positions(const Dims& shape, const Box& b) {
  std::vector<uint64_t> out;
  const size_t rank = shape.size();
  Dims idx(rank, 0);
  if (Volume(b.count) == 0) return out;
  for (;;) {
    uint64_t off = 0;
    for (size_t d = 0; d < rank; ++d) off = off * shape[d] + b.start[d] + idx[d];
    out.push_back(off);
    size_t d = rank;
    while (d-- > 0) {
      if (++idx[d] < b.count[d]) break;
      idx[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) break;
  }
  return out;
}

// The boxes cover exactly [first, first + count), once each, in C order,
// inside the shape, and there are at most 2 * rank - 1 of them.
void ExpectExactCover(const Dims& shape, uint64_t first, uint64_t count) {
  SCOPED_TRACE(testing::Message() << "first " << first << " count " << count);
  std::vector<Box> boxes = LinearBoxes(shape, first, count);
  ASSERT_LE(boxes.size(), 2 * shape.size() - 1);
  std::vector<uint64_t> seen;
  for (const Box& b : boxes) {
    ASSERT_EQ(b.start.size(), shape.size());
    for (size_t d = 0; d < shape.size(); ++d) {
      ASSERT_GE(b.count[d], 1u);
      ASSERT_LE(b.start[d] + b.count[d], shape[d]);
    }
    for (uint64_t p : Positions(shape, b)) seen.push_back(p);
  }
  ASSERT_EQ(seen.size(), count);
  for (uint64_t i = 0; i < count; ++i) ASSERT_EQ(seen[i], first + i);
}

TEST(ElementRangeTest, WholeElementsSkipCutEnds) {
  // Elements of 4 bytes; bytes [2, 14) hold elements 1 and 2 whole.
  EXPECT_EQ(WholeElementsIn(2, 12, 4, 100), (ElementRun{1, 2}));
  EXPECT_EQ(WholeElementsIn(0, 16, 4, 100), (ElementRun{0, 4}));
  EXPECT_EQ(WholeElementsIn(4, 4, 4, 100), (ElementRun{1, 1}));
}

TEST(ElementRangeTest, NoWholeElementInsideIsEmpty) {
  EXPECT_EQ(WholeElementsIn(1, 6, 4, 100).count, 0u);  // cuts elements 0 and 1
  EXPECT_EQ(WholeElementsIn(5, 2, 4, 100).count, 0u);  // inside element 1
}

TEST(ElementRangeTest, StopsAtTheLastElement) {
  EXPECT_EQ(WholeElementsIn(392, 1000, 4, 100), (ElementRun{98, 2}));
  EXPECT_EQ(WholeElementsIn(400, 8, 4, 100).count, 0u);
  EXPECT_EQ(WholeElementsIn(0, UINT64_MAX, 8, 10), (ElementRun{0, 10}));
  EXPECT_EQ(WholeElementsIn(UINT64_MAX - 3, UINT64_MAX, 8, 10).count, 0u);
}

TEST(ElementRangeTest, OneDimensionIsOneBox) {
  std::vector<Box> boxes = LinearBoxes({1000}, 17, 400);
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_EQ(boxes[0], (Box{{17}, {400}}));
}

TEST(ElementRangeTest, WholeRowsAreOneBox) {
  std::vector<Box> boxes = LinearBoxes({10, 20}, 40, 60);
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_EQ(boxes[0], (Box{{2, 0}, {3, 20}}));
}

TEST(ElementRangeTest, CutRowsAtBothEnds) {
  // Row 1 from column 15, rows 2..3, row 4 up to column 4.
  std::vector<Box> boxes = LinearBoxes({10, 20}, 35, 50);
  ASSERT_EQ(boxes.size(), 3u);
  EXPECT_EQ(boxes[0], (Box{{1, 15}, {1, 5}}));
  EXPECT_EQ(boxes[1], (Box{{2, 0}, {2, 20}}));
  EXPECT_EQ(boxes[2], (Box{{4, 0}, {1, 5}}));
}

TEST(ElementRangeTest, InsideOneRow) {
  std::vector<Box> boxes = LinearBoxes({10, 20}, 42, 3);
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_EQ(boxes[0], (Box{{2, 2}, {1, 3}}));
}

TEST(ElementRangeTest, EmptyRunHasNoBoxes) { EXPECT_TRUE(LinearBoxes({10, 20}, 5, 0).empty()); }

TEST(ElementRangeTest, CoversEveryRunOfSmallShapesExactly) {
  for (const Dims& shape : {Dims{7}, Dims{3, 5}, Dims{2, 3, 4}, Dims{1, 4, 1, 3}}) {
    const uint64_t n = Volume(shape);
    for (uint64_t first = 0; first <= n; ++first) {
      for (uint64_t count = 0; first + count <= n; ++count) {
        ExpectExactCover(shape, first, count);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(ElementRangeTest, CoversRandomRunsOfLargerShapes) {
  std::mt19937_64 rng(5);
  for (const Dims& shape : {Dims{6, 7, 8, 9}, Dims{5, 1, 6, 2, 7}}) {
    const uint64_t n = Volume(shape);
    for (int i = 0; i < 300; ++i) {
      const uint64_t first = rng() % (n + 1);
      const uint64_t count = rng() % (n - first + 1);
      ExpectExactCover(shape, first, count);
      if (HasFatalFailure()) return;
    }
  }
}

// Brute force: the chunks all of whose elements lie in the run, against
// the boxes (which must each hold whole chunks, and together those only).
void ExpectWholeChunks(const Dims& shape, const Dims& chunks, uint64_t first, uint64_t count) {
  SCOPED_TRACE(testing::Message() << "first " << first << " count " << count);
  const size_t rank = shape.size();
  std::vector<Box> boxes = WholeChunkBoxes(shape, chunks, first, count);
  ASSERT_LE(boxes.size(), 2 * rank - 1);
  Dims grid(rank);
  for (size_t d = 0; d < rank; ++d) grid[d] = (shape[d] + chunks[d] - 1) / chunks[d];
  std::vector<bool> in_boxes(Volume(shape), false);
  for (const Box& b : boxes) {
    for (size_t d = 0; d < rank; ++d) {
      ASSERT_EQ(b.start[d] % chunks[d], 0u);
      const uint64_t end = b.start[d] + b.count[d];
      ASSERT_TRUE(end == shape[d] || end % chunks[d] == 0);
      ASSERT_LE(end, shape[d]);
    }
    for (uint64_t p : Positions(shape, b)) {
      ASSERT_FALSE(in_boxes[p]);
      in_boxes[p] = true;
    }
  }
  // Every chunk is either wholly in the boxes and wholly in the run, or
  // not in the boxes at all.
  Dims all_chunks = grid;
  for (uint64_t g = 0; g < Volume(grid); ++g) {
    Box chunk{Dims(rank), Dims(rank)};
    uint64_t rest = g;
    for (size_t d = rank; d-- > 0;) {
      chunk.start[d] = (rest % grid[d]) * chunks[d];
      rest /= grid[d];
      chunk.count[d] = std::min(chunk.start[d] + chunks[d], shape[d]) - chunk.start[d];
    }
    bool inside = true, boxed = true, any_boxed = false;
    for (uint64_t p : Positions(shape, chunk)) {
      inside = inside && p >= first && p < first + count;
      boxed = boxed && in_boxes[p];
      any_boxed = any_boxed || in_boxes[p];
    }
    ASSERT_EQ(boxed, any_boxed) << "chunk " << g << " partly boxed";
    ASSERT_EQ(boxed, inside) << "chunk " << g;
  }
}

TEST(ElementRangeTest, WholeChunksOfARunThatCutsRows) {
  // Elements (100, 100) up to (300, 100) of 400 x 500 in 100 x 100 chunks:
  // the chunks (1, 1..4) and (2, 0..4), although row 100 is cut.
  std::vector<Box> boxes = WholeChunkBoxes({400, 500}, {100, 100}, 100 * 500 + 100, 200 * 500);
  ASSERT_EQ(boxes.size(), 2u);
  EXPECT_EQ(boxes[0], (Box{{100, 100}, {100, 400}}));
  EXPECT_EQ(boxes[1], (Box{{200, 0}, {100, 500}}));
}

TEST(ElementRangeTest, NoWholeChunkInAShortRun) {
  EXPECT_TRUE(WholeChunkBoxes({400, 500}, {100, 100}, 0, 499).empty());
  EXPECT_TRUE(WholeChunkBoxes({400, 500}, {100, 100}, 1, 100 * 100).empty());
  // From column 1 of row 0 to row 100: chunks (0, 1..4) only.
  EXPECT_EQ(WholeChunkBoxes({400, 500}, {100, 100}, 1, 100 * 500), (std::vector<Box>{Box{{0, 100}, {100, 400}}}));
  EXPECT_TRUE(WholeChunkBoxes({400, 500}, {100, 100}, 0, 0).empty());
}

TEST(ElementRangeTest, EdgeChunksCutAtTheShapeCount) {
  std::vector<Box> boxes = WholeChunkBoxes({10, 7}, {4, 3}, 0, 70);
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_EQ(boxes[0], (Box{{0, 0}, {10, 7}}));
}

TEST(ElementRangeTest, WholeChunksMatchBruteForce) {
  struct Case {
    Dims shape, chunks;
  };
  for (const Case& c :
       {Case{{11}, {3}}, Case{{5, 7}, {2, 3}}, Case{{4, 5, 6}, {2, 2, 4}}, Case{{3, 4, 5}, {3, 1, 5}}}) {
    const uint64_t n = Volume(c.shape);
    for (uint64_t first = 0; first <= n; ++first) {
      for (uint64_t count = 0; first + count <= n; count += 1 + count / 7) {
        ExpectWholeChunks(c.shape, c.chunks, first, count);
        if (HasFatalFailure()) return;
      }
    }
  }
}

}  // namespace
}  // namespace slabfs::fusefs
