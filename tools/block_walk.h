// The chunk grid of a dataset and the blocks of whole chunks that a copy
// moves through memory at once.
//
// A block is CopyBlockChunks' shape (whole chunk rows, as many as fit the
// byte budget, at least one chunk), so a copy that reads a block from one
// side and writes it to the other touches each chunk on both sides once,
// whole, and holds one block in memory. Blocks are numbered in C order of
// the block grid; chunks in C order of the chunk grid. Used by slab repack
// and by the HDF5 converter.
#ifndef SLABFS_TOOLS_BLOCK_WALK_H_
#define SLABFS_TOOLS_BLOCK_WALK_H_

#include <cstddef>
#include <cstdint>
#include <functional>

#include "slabfs/status.h"
#include "slabfs/types.h"

namespace slabfs::tools {

// The shape, in chunks per dimension, of the blocks a copy moves through
// memory for a dataset of `shape` with chunks `chunks` (same rank, no zero
// dimension) and elements of `item_size` bytes: whole chunk rows (every
// dimension but the first whole) as many as fit in `budget_bytes`; when a
// single row does not fit, one chunk along the first dimension and as many
// whole rows of the next as fit, and so on; at least one chunk.
Dims CopyBlockChunks(const Dims& shape, const Dims& chunks, size_t item_size, uint64_t budget_bytes);

class BlockWalk {
 public:
  // `shape` and `chunks` of the same rank, no zero in either.
  BlockWalk(const Dims& shape, const Dims& chunks, size_t item_size, uint64_t budget_bytes);

  struct Block {
    Dims lo, hi;        // chunk coordinates, inclusive
    Dims start, count;  // its element box, clipped to the shape
    uint64_t elements = 0;
    uint64_t chunks = 0;
  };

  const Dims& grid() const { return grid_; }  // chunks per dimension
  uint64_t num_chunks() const { return num_chunks_; }
  uint64_t num_blocks() const { return num_blocks_; }

  uint64_t ChunkIndex(const Dims& coords) const;
  Dims ChunkCoords(uint64_t index) const;
  // The block that holds chunk `index`.
  uint64_t BlockOfChunk(uint64_t index) const;
  Block BlockAt(uint64_t index) const;
  // The element box of one chunk, clipped to the shape.
  void ChunkBox(const Dims& coords, Dims* start, Dims* count) const;
  // Calls f with the coordinates of each chunk of `b`, in C order; stops at
  // the first error.
  Status ForEachChunk(const Block& b, const std::function<Status(const Dims&)>& f) const;

 private:
  Dims shape_, chunks_, grid_, per_block_, block_grid_;
  uint64_t num_chunks_ = 1;
  uint64_t num_blocks_ = 1;
};

}  // namespace slabfs::tools

#endif  // SLABFS_TOOLS_BLOCK_WALK_H_
