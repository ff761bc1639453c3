// BlockWalk against a brute-force walk of the chunk grid: every chunk lies
// in exactly one block, blocks are boxes of whole chunks clipped to the
// shape, and chunk indexes and coordinates are C order.
#include "tools/block_walk.h"

#include <map>
#include <vector>

#include <gtest/gtest.h>

namespace slabfs::tools {
namespace {

// Every chunk coordinate of a grid, in C order.
std::vector<Dims> AllChunks(const Dims& grid) {
  std::vector<Dims> out;
  Dims c(grid.size(), 0);
  for (;;) {
    out.push_back(c);
    size_t d = c.size();
    for (;;) {
      if (d == 0) return out;
      --d;
      if (++c[d] < grid[d]) break;
      c[d] = 0;
    }
  }
}

void CheckWalk(const Dims& shape, const Dims& chunks, size_t item, uint64_t budget) {
  SCOPED_TRACE(FormatDims(shape) + " / " + FormatDims(chunks));
  BlockWalk walk(shape, chunks, item, budget);
  const size_t rank = shape.size();
  for (size_t d = 0; d < rank; ++d) {
    EXPECT_EQ(walk.grid()[d], (shape[d] + chunks[d] - 1) / chunks[d]);
  }
  const std::vector<Dims> all = AllChunks(walk.grid());
  ASSERT_EQ(all.size(), walk.num_chunks());
  std::map<uint64_t, uint64_t> block_of;  // chunk index -> block
  uint64_t elements = 0;
  for (uint64_t b = 0; b < walk.num_blocks(); ++b) {
    const BlockWalk::Block block = walk.BlockAt(b);
    uint64_t chunks_seen = 0;
    ASSERT_TRUE(walk.ForEachChunk(block,
                                  [&](const Dims& c) {
                                    const uint64_t index = walk.ChunkIndex(c);
                                    EXPECT_EQ(walk.ChunkCoords(index), c);
                                    EXPECT_EQ(walk.BlockOfChunk(index), b);
                                    EXPECT_TRUE(block_of.emplace(index, b).second) << "a chunk in two blocks";
                                    // The chunk's box lies inside the block's box.
                                    Dims start, count;
                                    walk.ChunkBox(c, &start, &count);
                                    for (size_t d = 0; d < rank; ++d) {
                                      EXPECT_GE(start[d], block.start[d]);
                                      EXPECT_LE(start[d] + count[d], block.start[d] + block.count[d]);
                                      EXPECT_LE(start[d] + count[d], shape[d]);
                                    }
                                    ++chunks_seen;
                                    return Status::OK();
                                  })
                    .ok());
    EXPECT_EQ(chunks_seen, block.chunks);
    uint64_t n = 1;
    for (uint64_t c : block.count) n *= c;
    EXPECT_EQ(n, block.elements);
    elements += n;
    // Within budget unless the block is a single chunk.
    if (block.chunks > 1) {
      EXPECT_LE(block.elements * item, budget);
    }
  }
  EXPECT_EQ(block_of.size(), all.size());
  uint64_t total = 1;
  for (uint64_t s : shape) total *= s;
  EXPECT_EQ(elements, total);
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(walk.ChunkIndex(all[i]), i);
}

TEST(BlockWalkTest, CoversEveryChunkOnceInBlocksOfWholeChunks) {
  CheckWalk({100, 100}, {10, 10}, 4, 1 << 20);   // one block
  CheckWalk({1000, 1000}, {10, 10}, 4, 100000);  // two chunk rows per block
  CheckWalk({1000, 1000}, {10, 10}, 4, 10000);   // rows split
  CheckWalk({17, 9, 5}, {4, 3, 2}, 8, 500);      // edge chunks in every dimension
  CheckWalk({7}, {3}, 1, 1);                     // budget below one chunk: one chunk a block
  CheckWalk({5, 6}, {8, 10}, 2, 1 << 20);        // chunks larger than the shape
}

TEST(BlockWalkTest, BlocksAreClippedToTheShape) {
  BlockWalk walk({10, 7}, {4, 4}, 1, 1 << 20);
  ASSERT_EQ(walk.num_blocks(), 1u);
  BlockWalk::Block b = walk.BlockAt(0);
  EXPECT_EQ(b.start, (Dims{0, 0}));
  EXPECT_EQ(b.count, (Dims{10, 7}));
  EXPECT_EQ(b.chunks, 6u);
  Dims start, count;
  walk.ChunkBox({2, 1}, &start, &count);
  EXPECT_EQ(start, (Dims{8, 4}));
  EXPECT_EQ(count, (Dims{2, 3}));
}

}  // namespace
}  // namespace slabfs::tools
