// What a dataset's header says about its chunks, shared by the container
// (which opens datasets) and slab fsck (which checks them without one).
#ifndef SLABFS_ENGINE_INDEX_DATASET_GEOMETRY_H_
#define SLABFS_ENGINE_INDEX_DATASET_GEOMETRY_H_

#include <cstdint>

#include "engine/format/object.h"
#include "engine/index/chunk_index.h"

namespace slabfs::engine {

// The geometry the dataset's chunk index is opened with: the maximum grid,
// and whether records carry sizes (filtered and sparse chunks vary in size).
IndexGeometry GeometryOf(const DatasetRecord& d);

// Bytes of the chunk at c as stored before filters: its extent trimmed to the
// maximum shape (whole along unlimited dimensions), times the item size.
uint64_t StoredChunkBytes(const DatasetRecord& d, ChunkCoord c);
// The same over the dimensions from first_dim on (1: the bytes of one step
// of the first dimension, as trimmed edge chunks count them).
uint64_t StoredChunkBytesFrom(const DatasetRecord& d, ChunkCoord c, size_t first_dim);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_INDEX_DATASET_GEOMETRY_H_
