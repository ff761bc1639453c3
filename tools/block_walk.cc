#include "tools/block_walk.h"

#include <algorithm>

namespace slabfs::tools {
namespace {

uint64_t CeilDiv(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

uint64_t Linear(const Dims& coords, const Dims& grid) {
  uint64_t v = 0;
  for (size_t d = 0; d < grid.size(); ++d) v = v * grid[d] + coords[d];
  return v;
}

Dims Delinear(uint64_t v, const Dims& grid) {
  Dims coords(grid.size());
  for (size_t d = grid.size(); d-- > 0;) {
    coords[d] = v % grid[d];
    v /= grid[d];
  }
  return coords;
}

}  // namespace

Dims CopyBlockChunks(const Dims& shape, const Dims& chunks, size_t item_size, uint64_t budget_bytes) {
  const size_t rank = shape.size();
  Dims per_block(rank, 1);
  // Bytes of one element times the extent of one chunk in each dimension
  // before d. Every product stays below 2^70: shapes multiply to at most
  // 2^64 elements, and chunk extents are clipped to the shape.
  slabfs_u128 lead = item_size;
  for (size_t d = 0; d < rank; ++d) {
    const uint64_t grid = CeilDiv(shape[d], chunks[d]);
    slabfs_u128 rest = 1;  // elements of the dimensions after d, whole
    for (size_t e = d + 1; e < rank; ++e) rest *= shape[e];
    const uint64_t extent = std::min(chunks[d], shape[d]);
    const slabfs_u128 unit = lead * extent * rest;  // one chunk along d, whole after d
    if (unit <= budget_bytes) {
      per_block[d] = static_cast<uint64_t>(std::min<slabfs_u128>(grid, budget_bytes / unit));
      for (size_t e = d + 1; e < rank; ++e) per_block[e] = CeilDiv(shape[e], chunks[e]);
      return per_block;
    }
    lead *= extent;
  }
  return per_block;
}

BlockWalk::BlockWalk(const Dims& shape, const Dims& chunks, size_t item_size, uint64_t budget_bytes)
    : shape_(shape), chunks_(chunks) {
  const size_t rank = shape.size();
  grid_.resize(rank);
  block_grid_.resize(rank);
  per_block_ = CopyBlockChunks(shape, chunks, item_size, budget_bytes);
  // Both products are at most the element count, which fits 64 bits.
  for (size_t d = 0; d < rank; ++d) {
    grid_[d] = CeilDiv(shape[d], chunks[d]);
    block_grid_[d] = CeilDiv(grid_[d], per_block_[d]);
    num_chunks_ *= grid_[d];
    num_blocks_ *= block_grid_[d];
  }
}

uint64_t BlockWalk::ChunkIndex(const Dims& coords) const { return Linear(coords, grid_); }

Dims BlockWalk::ChunkCoords(uint64_t index) const { return Delinear(index, grid_); }

uint64_t BlockWalk::BlockOfChunk(uint64_t index) const {
  Dims c = Delinear(index, grid_);
  for (size_t d = 0; d < c.size(); ++d) c[d] /= per_block_[d];
  return Linear(c, block_grid_);
}

BlockWalk::Block BlockWalk::BlockAt(uint64_t index) const {
  const size_t rank = shape_.size();
  Block b;
  Dims bc = Delinear(index, block_grid_);
  b.lo.resize(rank);
  b.hi.resize(rank);
  b.start.resize(rank);
  b.count.resize(rank);
  b.elements = 1;
  b.chunks = 1;
  for (size_t d = 0; d < rank; ++d) {
    b.lo[d] = bc[d] * per_block_[d];
    b.hi[d] = std::min(b.lo[d] + per_block_[d], grid_[d]) - 1;
    b.start[d] = b.lo[d] * chunks_[d];
    uint64_t end = b.hi[d] + 1 == grid_[d] ? shape_[d] : (b.hi[d] + 1) * chunks_[d];
    b.count[d] = end - b.start[d];
    b.elements *= b.count[d];
    b.chunks *= b.hi[d] - b.lo[d] + 1;
  }
  return b;
}

void BlockWalk::ChunkBox(const Dims& coords, Dims* start, Dims* count) const {
  const size_t rank = shape_.size();
  start->resize(rank);
  count->resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    (*start)[d] = coords[d] * chunks_[d];
    uint64_t end = coords[d] + 1 == grid_[d] ? shape_[d] : (coords[d] + 1) * chunks_[d];
    (*count)[d] = end - (*start)[d];
  }
}

Status BlockWalk::ForEachChunk(const Block& b, const std::function<Status(const Dims&)>& f) const {
  Dims c = b.lo;
  for (;;) {
    SLABFS_RETURN_IF_ERROR(f(c));
    size_t d = c.size();
    for (;;) {
      if (d == 0) return Status::OK();
      --d;
      if (c[d] < b.hi[d]) {
        ++c[d];
        break;
      }
      c[d] = b.lo[d];
    }
  }
}

}  // namespace slabfs::tools
