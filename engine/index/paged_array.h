// The paged-array chunk index: one radix tree of records that serves two
// index kinds (docs/architecture.md, "Chunk indexes"):
//
//   fixed array       every dimension bounded (at most kMaxFixedArrayChunks
//                     chunks): a chunk's key is its C-order position in the
//                     maximum grid, and the depth is fixed by the grid;
//   extensible array  exactly one unlimited dimension u: the other
//                     dimensions are bounded, a "row" is the set of chunks
//                     with one value of c[u] (at most
//                     kMaxExtensibleRowChunks), and
//
//                       key = c[u] * row + (C-order position of the others)
//
//                     so growing the dataset along u only appends keys; the
//                     depth grows with the keys.
//
// A bounded grid is the same thing with no unlimited dimension: its "row"
// is the whole grid and every key is in step 0. Records (8 bytes, or 16 for
// filtered datasets) sit in leaves of kLeafRecords consecutive keys, under
// nodes with kNodeFanout children; a node at level l covers 256^l leaves.
// When a key of an extensible array needs a leaf past 256^depth, a new top
// node is added whose child 0 is the old top (which is not rewritten); it
// shrinks again at Flush when the upper keys are gone, so that its depth is
// always the smallest that holds the stored leaves. A fixed array's depth is
// the smallest that holds every leaf of its grid, and never changes.
//
// Lookup is O(1) (at most depth + 1 <= 8 steps). Pages are read from disk
// on first use, one block at a time, so once the few node blocks are in
// memory a lookup reads at most one leaf block. Memory and disk hold only
// what exists: opening allocates nothing for the grid, a leaf with no
// allocated record and a node with no stored child are not stored, and
// nothing is sized by what a root or node claims.
//
// A Flush after changing k records rewrites at most k leaves and the nodes
// above them (O(k log n) bytes), copy-on-write; appending never rewrites a
// leaf or node that did not change. After a Flush that fails, every page
// not yet written is still dirty on a path from the top, so a retry loses
// nothing.
//
// ForEachIn visits records in key order and looks only at the box's
// positions inside leaves that exist (engine/index/paged_walk.h): no more
// than min(box volume, 512 x leaves it meets) positions, plus one descent
// from the top per leaf it meets. Key order is C order for a fixed array
// and for an extensible array whose unlimited dimension is 0, and then
// ForEachInOrder is the same walk; otherwise ForEachInOrder sorts windows
// of dimension 0 that double in width (at most log2(grid[0]) + 1 passes
// over the leaves, one window's records held).
//
// Thread safety: as for every ChunkIndex, Get and the walks may run
// concurrently with each other; Put, Flush and Destroy need exclusive
// access. The index takes no lock: a reader that finds a page missing
// reads and decodes it without one and publishes it with a compare-and-swap
// (a reader that loses the race drops its copy), so no lock is ever held
// across file I/O (the lock order, engine/container_impl.h).
//
// On disk (docs/format.md, "Paged-array index"):
//   root (in the dataset header): u64 addr, u32 len, u8 depth, u64 row
//                                 (a fixed array's: its chunk count),
//                                 u64 disk bytes; empty = nothing stored
//   leaf block (type 6) payload:  u64 first key, u16 count (1..512),
//                                 count x record; records past count are
//                                 unallocated, the last stored one is
//                                 allocated
//   node block (type 7) payload:  u8 level (1 = above leaves), u64 first
//                                 leaf, u16 count (1..256), count x (u64
//                                 addr, u32 len); children past count are
//                                 not stored, the last listed one is
// A fixed array also reads the blocks of the first fixed-array layout
// (types 3 and 4: u32 counts that always cover the whole leaf or node of
// the grid); it writes only types 6 and 7, so such a tree changes to the
// new blocks as its pages are written.
#ifndef SLABFS_ENGINE_INDEX_PAGED_ARRAY_H_
#define SLABFS_ENGINE_INDEX_PAGED_ARRAY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "engine/index/chunk_index.h"

namespace slabfs::engine {

class PagedArrayIndex final : public ChunkIndex {
 public:
  static constexpr uint64_t kLeafRecords = 512;
  static constexpr uint64_t kNodeFanout = 256;
  // Keys stay below 2^63 (no dataset holds more chunks), so there are fewer
  // than 2^54 leaves and at most seven node levels.
  static constexpr uint64_t kKeyLimit = uint64_t{1} << 63;
  static constexpr int kMaxDepth = 7;

  // Opens an index of `kind` (kFixedArray or kExtensibleArray). Corruption
  // if the geometry does not fit the kind (a fixed array: every dimension
  // bounded, 1 to kMaxFixedArrayChunks chunks; an extensible array: exactly
  // one unlimited dimension, a row of 1 to kMaxExtensibleRowChunks), or if
  // the root does not fit the geometry.
  static Result<std::unique_ptr<PagedArrayIndex>> Open(IndexKind kind, const IndexGeometry& geo, std::string_view root,
                                                       BlockStore* store, std::string what);
  ~PagedArrayIndex() override;

  IndexKind kind() const override { return growable() ? IndexKind::kExtensibleArray : IndexKind::kFixedArray; }
  const IndexGeometry& geometry() const override { return geo_; }
  // InvalidArgument for coordinates outside the grid, or whose key would
  // reach kKeyLimit.
  Result<ChunkRecord> Get(ChunkCoord c) override;
  // Also InvalidArgument for a record the index cannot store (a size or
  // filter mask in an unfiltered or unallocated record, a filtered size
  // outside 1..max_chunk_bytes, an address below the data area).
  Status Put(ChunkCoord c, const ChunkRecord& rec) override;
  Status ForEachIn(ChunkCoord lo, ChunkCoord hi, const Visitor& fn) override;
  Status ForEachInOrder(ChunkCoord lo, ChunkCoord hi, const OrderedVisitor& fn) override;
  bool dirty() const override;
  Status Flush() override;
  std::string EncodeRoot() const override;
  uint64_t disk_bytes() const override { return disk_bytes_; }
  Status CollectBlocks(std::vector<BlockRef>* out) override;
  Status Destroy() override;

  // The unlimited dimension (rank() for a fixed array), and the keys per
  // step along it (a fixed array's: every chunk of its grid).
  size_t unlimited_dim() const { return u_; }
  uint64_t row() const { return row_; }

 private:
  struct Page;
  struct Leaf;
  struct Node;
  struct Found {
    uint64_t number = 0;
    Leaf* leaf = nullptr;  // nullptr: no such leaf
  };

  PagedArrayIndex(const IndexGeometry& geo, size_t u, uint64_t row, BlockStore* store, std::string what);

  bool growable() const { return u_ < geo_.rank(); }
  Result<uint64_t> Key(ChunkCoord c) const;
  Status CheckNewRecord(const ChunkRecord& rec) const;

  Page* NewPage(int level) const;
  static void DeletePage(Page* p, int level);
  // The page at `ref` (a node at `level`, or a leaf at level 0, whose first
  // leaf is first_leaf): *slot if another thread got there first, else read
  // (without a lock) and published in *slot.
  Result<Page*> Load(std::atomic<Page*>* slot, const BlockRef& ref, int level, uint64_t first_leaf);
  // Decode a leaf (type 6, or 3 in the first fixed-array layout) or node
  // (type 7, or 4) found at its position.
  Result<std::unique_ptr<Leaf>> ParseLeaf(std::string_view payload, BlockType type, uint64_t first_leaf) const;
  Result<std::unique_ptr<Node>> ParseNode(std::string_view payload, BlockType type, int level,
                                          uint64_t first_leaf) const;

  // The top page (nullptr: nothing stored), read if needed.
  Result<Page*> Top();
  // Leaf `number`, or nullptr if it does not exist.
  Result<Leaf*> FindLeaf(uint64_t number);
  // The first leaf numbered `from` to `last` that exists (reading no page
  // that holds only leaves past `last`).
  Result<Found> NextLeaf(uint64_t from, uint64_t last = ~uint64_t{0});
  Result<Found> NextIn(Page* p, int level, uint64_t first_leaf, uint64_t from, uint64_t last);
  // The records in the box in key order, until fn returns false.
  Status WalkKeys(ChunkCoord lo, ChunkCoord hi, const OrderedVisitor& fn);
  // Adds top levels until leaf `number` fits (extensible arrays).
  void Grow(uint64_t number);

  // Flush helpers: write the dirty children of n / the page p itself, and
  // put a page's new block in *ref, freeing the one it replaces.
  Status FlushChildren(Node* n, int level, uint64_t first_leaf);
  Status WritePage(Page* p, int level, uint64_t first_leaf, BlockRef* ref);
  Status Replace(Page* p, BlockType type, std::string_view payload, BlockRef* ref);
  void EncodeLeaf(const Leaf& l, uint64_t first_leaf, std::string* dst) const;
  void EncodeNode(const Node& n, int level, uint64_t first_leaf, std::string* dst) const;
  // Drops top nodes whose only stored child is child 0 (extensible arrays).
  void ShrinkTop();

  Status LoadAllNodes(std::atomic<Page*>* slot, const BlockRef& ref, int level, uint64_t first_leaf);
  void FreeBlocks(Page* p, const BlockRef& ref, int level);

  const IndexGeometry geo_;
  const size_t u_;             // the unlimited dimension; rank for a fixed array
  const uint64_t row_;         // keys per step along u (all keys: fixed array)
  const uint64_t key_limit_;   // every key is below it
  const uint64_t leaf_limit_;  // and every leaf number
  const int fixed_depth_;      // a fixed array's depth; 0 for an extensible one
  // Key order: key_dims_[j] is the grid dimension at place j (u first),
  // key_strides_[j] its stride in the key.
  Dims key_dims_, key_strides_;
  BlockStore* store_;
  std::string what_;

  // The tree in memory. depth_, top_ref_ and the contents of pages change
  // only in Put, Flush and Destroy; Get and the walks only fill empty slots
  // (by compare-and-swap, published with release order).
  int depth_ = 0;                    // node levels above the leaves
  std::atomic<Page*> top_{nullptr};  // the top page, if in memory
  BlockRef top_ref_;                 // the top page's block, if stored
  uint64_t tree_bytes_ = 0;          // bytes of the blocks the tree names

  // As of the last successful Flush (what EncodeRoot describes).
  BlockRef root_ref_;
  int root_depth_ = 0;
  uint64_t disk_bytes_ = 0;
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_INDEX_PAGED_ARRAY_H_
