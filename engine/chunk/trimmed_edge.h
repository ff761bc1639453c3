// Trimmed edge chunks (dataset flag kDatasetFlagTrimmedEdge, docs/format.md
// "Chunks"): a dense chunk of a dataset whose first dimension can grow
// stores only its leading steps of the first dimension that lay inside the
// shape when it was written; the bytes it does not store read as the fill
// value. Since the first dimension is the outermost, those steps are a
// prefix of the chunk's C-order bytes: trimming cuts the image short and
// loading fills the rest, and nothing else about the chunk changes. The
// stored size is in the chunk's record (the shape may have grown since).
//
// Shared by the dataset code, which writes and reads such chunks, and slab
// fsck, which checks them without one. Pure functions of the header.
#ifndef SLABFS_ENGINE_CHUNK_TRIMMED_EDGE_H_
#define SLABFS_ENGINE_CHUNK_TRIMMED_EDGE_H_

#include <cstdint>
#include <string>

#include "engine/format/object.h"
#include "engine/index/chunk_index.h"

namespace slabfs::engine {

inline bool TrimsEdge(const DatasetRecord& d) { return (d.flags & kDatasetFlagTrimmedEdge) != 0; }

// Bytes of one step of the first dimension in the chunk at c: the item size
// times its stored extent (trimmed to the max shape) in the other dimensions.
uint64_t ChunkStepBytes(const DatasetRecord& d, ChunkCoord c);

// The bytes the chunk at c stores while the first dimension is `length`
// long: its steps inside [0, length), at least one, at most all of them
// (StoredChunkBytes).
uint64_t TrimmedChunkBytes(const DatasetRecord& d, ChunkCoord c, uint64_t length);

// Whether `stored` bytes with filter mask `mask`, read from the chunk's
// record, can be the chunk at c: a whole number of steps, 1 to all of
// them, and no mask. Corruption naming the sizes otherwise.
Status CheckTrimmedChunk(const DatasetRecord& d, ChunkCoord c, uint64_t stored, uint32_t mask);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_CHUNK_TRIMMED_EDGE_H_
