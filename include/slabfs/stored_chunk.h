// Where one chunk of a dataset is stored (Dataset::StoredChunks).
#ifndef SLABFS_STORED_CHUNK_H_
#define SLABFS_STORED_CHUNK_H_

#include <cstdint>

#include "slabfs/dims.h"

namespace slabfs {

// Where one chunk is stored, for tools and tests (see Dataset::StoredChunks).
struct StoredChunk {
  Dims coords;               // position in the chunk grid
  uint64_t addr = 0;         // byte offset in the container file
  uint64_t bytes = 0;        // bytes stored there
  uint32_t filter_mask = 0;  // bit i: filter i of the pipeline was skipped
};

}  // namespace slabfs

#endif  // SLABFS_STORED_CHUNK_H_
