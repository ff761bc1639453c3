// The chunk index: maps a chunk's position in the chunk grid to its record
// (where the chunk is stored). One interface, several kinds chosen to fit
// the dataset (see docs/architecture.md); the fixed array is the kind for
// datasets whose dimensions are all fixed.
//
// Thread safety: Get may run concurrently with other Gets. Put, Flush and
// Destroy need exclusive access (the dataset's write lock).
#ifndef SLABFS_ENGINE_INDEX_CHUNK_INDEX_H_
#define SLABFS_ENGINE_INDEX_CHUNK_INDEX_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "engine/txn/block_store.h"
#include "slabfs/types.h"

namespace slabfs::engine {

// Where one chunk lives. addr 0 means not allocated (reads give the fill
// value). The stored size of an unfiltered chunk follows from the dataset's
// geometry, so the array kinds keep only the address for it.
struct ChunkRecord {
  uint64_t addr = 0;
  bool allocated() const { return addr != 0; }
  bool operator==(const ChunkRecord&) const = default;
};

class ChunkIndex {
 public:
  virtual ~ChunkIndex() = default;
  virtual IndexKind kind() const = 0;

  // `chunk` is the chunk's linear position in the chunk grid (C order).
  virtual Result<ChunkRecord> Get(uint64_t chunk) = 0;
  virtual Status Put(uint64_t chunk, const ChunkRecord& rec) = 0;
  // Calls fn for every allocated record, in chunk order.
  virtual Status ForEach(const std::function<Status(uint64_t chunk, const ChunkRecord&)>& fn) = 0;

  // Whether records changed since the last Flush.
  virtual bool dirty() const = 0;
  // Writes the changed parts copy-on-write (freeing the blocks they replace)
  // so that EncodeRoot describes the new state.
  virtual Status Flush() = 0;
  // The root, stored in the dataset's object block.
  virtual std::string EncodeRoot() const = 0;
  // Bytes of index blocks on disk as of the last Flush.
  virtual uint64_t disk_bytes() const = 0;
  // Frees every index block and forgets every record.
  virtual Status Destroy() = 0;
};

// Opens an index from the root bytes stored in the dataset header (empty for
// a new dataset). num_chunks is the number of chunks in the grid.
Result<std::unique_ptr<ChunkIndex>> OpenChunkIndex(IndexKind kind, uint64_t num_chunks,
                                                   std::string_view root, BlockStore* store,
                                                   std::string what);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_INDEX_CHUNK_INDEX_H_
