#include "engine/selection/boxes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <set>

namespace slabfs::engine {
namespace {

using Point3 = std::array<uint64_t, 3>;

std::set<Point3> BoxElements(const std::vector<Box>& boxes) {
  std::set<Point3> out;
  for (const Box& b : boxes) {
    for (uint64_t i = 0; i < b.count[0]; ++i) {
      for (uint64_t j = 0; j < b.count[1]; ++j) {
        for (uint64_t k = 0; k < b.count[2]; ++k) {
          EXPECT_TRUE(out.insert({b.start[0] + i, b.start[1] + j, b.start[2] + k}).second) << "boxes overlap";
        }
      }
    }
  }
  return out;
}

TEST(MergeBoxesTest, JoinsTheChunksOfAWholeRegion) {
  // A 20x30 region in 8x8 chunks, in the engine's order.
  std::vector<Box> chunks;
  for (uint64_t r = 0; r < 20; r += 8) {
    for (uint64_t c = 0; c < 30; c += 8) {
      chunks.push_back({{r, c}, {std::min<uint64_t>(8, 20 - r), std::min<uint64_t>(8, 30 - c)}});
    }
  }
  EXPECT_EQ(MergeBoxes(chunks), (std::vector<Box>{{{0, 0}, {20, 30}}}));
  EXPECT_TRUE(MergeBoxes({}).empty());
}

TEST(MergeBoxesTest, RepeatsUntilNothingMerges) {
  // The first two merge along dimension 0; only then can the third join.
  std::vector<Box> boxes = {{{0, 0}, {2, 1}}, {{2, 0}, {2, 1}}, {{0, 1}, {4, 1}}};
  EXPECT_EQ(MergeBoxes(boxes), (std::vector<Box>{{{0, 0}, {4, 2}}}));
}

TEST(MergeBoxesTest, KeepsBoxesThatDoNotFormABox) {
  // An L and two boxes with a gap between them.
  std::vector<Box> boxes = {{{0, 0}, {1, 2}}, {{1, 0}, {1, 1}}, {{5, 0}, {1, 1}}, {{5, 2}, {1, 1}}};
  EXPECT_EQ(MergeBoxes(boxes),
            (std::vector<Box>{{{0, 0}, {1, 2}}, {{1, 0}, {1, 1}}, {{5, 0}, {1, 1}}, {{5, 2}, {1, 1}}}));
}

// Random masks split per chunk into runs along the last dimension (roughly
// what a sparse dataset answers): merging keeps exactly the same elements,
// disjoint, in C order of their first element, in no more boxes.
TEST(MergeBoxesTest, KeepsTheSameElements) {
  std::mt19937_64 rng(5);
  const Dims shape{6, 7, 5}, chunk{2, 3, 2};
  for (int trial = 0; trial < 300; ++trial) {
    const double density = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    std::set<Point3> mask;
    for (uint64_t i = 0; i < shape[0]; ++i) {
      for (uint64_t j = 0; j < shape[1]; ++j) {
        for (uint64_t k = 0; k < shape[2]; ++k) {
          if (std::bernoulli_distribution(density)(rng)) mask.insert({i, j, k});
        }
      }
    }
    std::vector<Box> runs;
    for (uint64_t i = 0; i < shape[0]; ++i) {
      for (uint64_t j = 0; j < shape[1]; ++j) {
        for (uint64_t k = 0; k < shape[2]; ++k) {
          if (!mask.contains({i, j, k})) continue;
          // Extend the previous run if it is in the same chunk and adjacent.
          if (!runs.empty() && k % chunk[2] != 0) {
            Box& r = runs.back();
            if (r.start[0] == i && r.start[1] == j && r.start[2] + r.count[2] == k) {
              ++r.count[2];
              continue;
            }
          }
          runs.push_back({{i, j, k}, {1, 1, 1}});
        }
      }
    }
    std::shuffle(runs.begin(), runs.end(), rng);
    std::vector<Box> merged = MergeBoxes(runs);
    EXPECT_LE(merged.size(), runs.size());
    EXPECT_EQ(BoxElements(merged), mask) << "trial " << trial;
    for (size_t i = 1; i < merged.size(); ++i) EXPECT_LT(merged[i - 1].start, merged[i].start);
    if (mask.size() == shape[0] * shape[1] * shape[2]) {
      EXPECT_EQ(merged.size(), 1u);
    }
  }
}

}  // namespace
}  // namespace slabfs::engine
