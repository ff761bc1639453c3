// The chunk index: maps a chunk's coordinates in the chunk grid to its
// record (where the chunk is stored). One interface, five kinds, each chosen
// to fit the dataset (docs/architecture.md, "Chunk indexes"):
//
//   single      the dataset is one chunk; the record lives in the header
//   compact     a few chunks (default at most 8); records in the header
//   fixed       every dimension bounded: a paged array over the maximum grid
//   extensible  exactly one unlimited dimension: a paged array that grows
//               (the two array kinds are one implementation, paged_array.h)
//   btree       two or more unlimited dimensions: a copy-on-write B-tree
//               keyed by chunk coordinates
//
// Walks cost what is stored, never the empty grid: ForEachIn and
// ForEachInOrder look only at the index pages that exist inside the box
// (each kind says its bound), so a box of 2^40 chunks holding three costs
// about as much as three lookups.
//
// Thread safety: Get, ForEachIn and ForEachInOrder may run concurrently with
// other Gets. Put, Flush and Destroy need exclusive access (the dataset's
// write lock).
#ifndef SLABFS_ENGINE_INDEX_CHUNK_INDEX_H_
#define SLABFS_ENGINE_INDEX_CHUNK_INDEX_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/txn/block_store.h"
#include "engine/util/coding.h"
#include "slabfs/types.h"

namespace slabfs::engine {

// Where one chunk lives. addr 0 means not allocated (reads give the fill
// value). Unfiltered datasets keep only the address: a chunk's stored size
// follows from the dataset's geometry. Indexes of filtered datasets also
// keep the stored size and the filter mask (the filters skipped for this
// chunk); for the others both are 0.
struct ChunkRecord {
  uint64_t addr = 0;
  uint32_t size = 0;
  uint32_t filter_mask = 0;
  bool allocated() const { return addr != 0; }
  bool operator==(const ChunkRecord&) const = default;
};

// A chunk's coordinates in the chunk grid, one per dimension.
using ChunkCoord = std::span<const uint64_t>;

// What an index knows of its dataset.
struct IndexGeometry {
  // Chunks per dimension at the maximum shape; kUnlimited where the
  // dimension is unlimited. Coordinates are checked against it.
  Dims max_grid;
  // Records carry the stored size and the filter mask.
  bool filtered = false;
  // Filtered records: the largest stored size a chunk may claim.
  uint64_t max_chunk_bytes = 0;

  size_t rank() const { return max_grid.size(); }
  // Chunks in the maximum grid, or kUnlimited if a dimension is unlimited
  // or the product overflows.
  uint64_t max_chunks() const;
  // Whether c lies inside the maximum grid.
  bool Contains(ChunkCoord c) const;
  // C-order position of c in the maximum grid (all dimensions bounded).
  uint64_t Linear(ChunkCoord c) const;
  // The inverse of Linear.
  void Unlinear(uint64_t linear, uint64_t* c) const;
};

// The record encodings shared by every kind: 8 bytes (u64 addr) for
// unfiltered datasets, 16 (u64 addr, u32 size, u32 filter mask) for
// filtered ones.
size_t RecordBytes(bool filtered);
void PutRecord(std::string* dst, const ChunkRecord& rec, bool filtered);
bool GetRecord(Reader* r, ChunkRecord* rec, bool filtered);
// Checks a record read from disk: an allocated chunk lies inside
// [kDataStart, file_end) and, for filtered records, its size is between 1
// and max_chunk_bytes and the extent ends before file_end; an unallocated
// record is all zero. Corruption otherwise.
Status CheckRecord(const ChunkRecord& rec, const IndexGeometry& geo, uint64_t file_end, std::string_view what);

// The smallest coordinates >= k (compared lexicographically, which is C
// order in the grid) inside the box [lo, hi), into out[0, rank); false if
// there are none. k need not lie in the box or the grid.
bool SeekInBox(const uint64_t* k, ChunkCoord lo, ChunkCoord hi, uint64_t* out);

class ChunkIndex {
 public:
  using Visitor = std::function<Status(ChunkCoord coord, const ChunkRecord& rec)>;
  // An ordered walk's visitor: true to go on, false to end the walk there
  // (not an error); an error ends it too and is returned.
  using OrderedVisitor = std::function<Result<bool>(ChunkCoord coord, const ChunkRecord& rec)>;

  virtual ~ChunkIndex() = default;
  virtual IndexKind kind() const = 0;
  virtual const IndexGeometry& geometry() const = 0;

  // The record of the chunk at c (unallocated if none). InvalidArgument if
  // c is outside the maximum grid.
  virtual Result<ChunkRecord> Get(ChunkCoord c) = 0;
  // Sets the record of the chunk at c; an unallocated record removes it.
  virtual Status Put(ChunkCoord c, const ChunkRecord& rec) = 0;
  // Calls fn for every allocated record with lo[d] <= c[d] < hi[d] in every
  // dimension (hi may hold kUnlimited), in an order fixed by the kind. fn
  // must not call Put.
  virtual Status ForEachIn(ChunkCoord lo, ChunkCoord hi, const Visitor& fn) = 0;
  Status ForEach(const Visitor& fn);
  // The same records in C order of the chunk grid (coordinates compared
  // lexicographically), until fn returns false: the walk a caller uses to
  // find the next stored chunk at or after a position. It reads only as
  // far as it goes. fn must not call Put.
  virtual Status ForEachInOrder(ChunkCoord lo, ChunkCoord hi, const OrderedVisitor& fn) = 0;

  // Whether records changed since the last Flush.
  virtual bool dirty() const = 0;
  // Writes the changed parts copy-on-write (freeing the blocks they replace)
  // so that EncodeRoot describes the new state. A Flush that fails may be
  // retried; nothing is lost.
  virtual Status Flush() = 0;
  // The root, stored in the dataset's header (the kinds that keep records
  // in the header return them here).
  virtual std::string EncodeRoot() const = 0;
  // Bytes of index blocks on disk as of the last Flush (0 for the kinds
  // that live in the header).
  virtual uint64_t disk_bytes() const = 0;
  // Frees every index block and forgets every record.
  virtual Status Destroy() = 0;
  // Appends every index block on disk as of the last Flush (or Open),
  // reading the nodes needed to name them (slab fsck). Needs the same
  // access as Get.
  virtual Status CollectBlocks(std::vector<BlockRef>* out) = 0;
};

// Opens an index from the root bytes stored in the dataset header (empty for
// a new dataset). Corruption if the root does not fit the geometry.
Result<std::unique_ptr<ChunkIndex>> OpenChunkIndex(IndexKind kind, const IndexGeometry& geo, std::string_view root,
                                                   BlockStore* store, std::string what);

// The largest maximum grid of a fixed array and of a compact index.
constexpr uint64_t kMaxFixedArrayChunks = uint64_t{1} << 28;
// The extensible array's records per step of its unlimited dimension.
constexpr uint64_t kMaxExtensibleRowChunks = uint64_t{1} << 28;
constexpr uint64_t kMaxCompactChunks = 64;
constexpr uint64_t kDefaultCompactChunks = 8;

// The index kind for a dataset: `requested` if it can work for the
// geometry (InvalidArgument naming the reason if not), else for kAuto:
// single for one chunk, compact for at most compact_limit chunks, fixed when
// every dimension is bounded (and the maximum grid has at most
// kMaxFixedArrayChunks), extensible for one unlimited dimension (when a step
// along it has at most kMaxExtensibleRowChunks chunks), and btree otherwise.
Result<IndexKind> ChooseIndexKind(IndexKind requested, const IndexGeometry& geo, uint64_t compact_limit);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_INDEX_CHUNK_INDEX_H_
