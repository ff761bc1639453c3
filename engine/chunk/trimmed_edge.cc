#include "engine/chunk/trimmed_edge.h"

#include <algorithm>

#include "engine/index/dataset_geometry.h"

namespace slabfs::engine {

uint64_t ChunkStepBytes(const DatasetRecord& d, ChunkCoord c) { return StoredChunkBytesFrom(d, c, 1); }

uint64_t TrimmedChunkBytes(const DatasetRecord& d, ChunkCoord c, uint64_t length) {
  const uint64_t whole = StoredChunkBytes(d, c);
  const uint64_t step = ChunkStepBytes(d, c);
  const uint64_t first = c[0] * d.chunks[0];
  // A chunk wholly past the end is never written back (a shrink frees it
  // first); one step keeps the size valid if it were.
  const uint64_t steps = length > first ? length - first : 1;
  return steps >= whole / step ? whole : steps * step;
}

Status CheckTrimmedChunk(const DatasetRecord& d, ChunkCoord c, uint64_t stored, uint32_t mask) {
  const uint64_t whole = StoredChunkBytes(d, c);
  const uint64_t step = ChunkStepBytes(d, c);
  if (stored == 0 || stored > whole || stored % step != 0)
    return Status::Corruption("record claims " + std::to_string(stored) + " stored bytes, not a whole number of " +
                              std::to_string(step) + "-byte steps up to the chunk's " + std::to_string(whole));
  if (mask != 0) return Status::Corruption("record of an unfiltered chunk has a filter mask");
  return Status::OK();
}

}  // namespace slabfs::engine
