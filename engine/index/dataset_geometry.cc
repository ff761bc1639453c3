#include "engine/index/dataset_geometry.h"

#include <algorithm>

#include "engine/filter/pipeline.h"
#include "engine/format/layout.h"
#include "engine/util/math.h"

namespace slabfs::engine {

IndexGeometry GeometryOf(const DatasetRecord& d) {
  IndexGeometry g;
  g.max_grid.resize(d.shape.size());
  for (size_t i = 0; i < d.shape.size(); ++i)
    g.max_grid[i] = d.max_shape[i] == kUnlimited ? kUnlimited : CeilDiv(d.max_shape[i], d.chunks[i]);
  // Filtered, sparse and trimmed chunks vary in size: records hold size
  // and mask.
  g.filtered = (d.flags & (kDatasetFlagFiltered | kDatasetFlagSparse | kDatasetFlagTrimmedEdge)) != 0;
  // A filtered chunk is stored as it is (plus a checksum) when filtering
  // does not make it smaller, so no record may claim more; a trimmed one
  // is at most a whole chunk.
  g.max_chunk_bytes = kMaxChunkBytes + kMaxFilterOverhead;
  if (d.flags & kDatasetFlagTrimmedEdge) {  // never with filters (DecodeObject)
    uint64_t chunk = ItemSize(d.dtype);
    for (uint64_t c : d.chunks) chunk *= c;  // at most 1 GiB: checked with the shape
    g.max_chunk_bytes = chunk;
  }
  return g;
}

uint64_t StoredChunkBytes(const DatasetRecord& d, ChunkCoord c) { return StoredChunkBytesFrom(d, c, 0); }

uint64_t StoredChunkBytesFrom(const DatasetRecord& d, ChunkCoord c, size_t first_dim) {
  uint64_t n = ItemSize(d.dtype);
  for (size_t i = first_dim; i < c.size(); ++i) {
    const uint64_t chunk = d.chunks[i], limit = d.max_shape[i];
    n *= limit == kUnlimited ? chunk : std::min(chunk, limit - c[i] * chunk);
  }
  return n;
}

}  // namespace slabfs::engine
