// The extensible-array chunk index, for datasets with exactly one unlimited
// dimension u. The other dimensions are bounded; a "row" is the set of chunks
// with one value of c[u] (row = product of the other dimensions' maximum
// grid, at most kMaxExtensibleRowChunks). Chunk c has the key
//
//   key = c[u] * row + (C-order position of the other coordinates)
//
// so growing the dataset along u only appends keys. Records (8 bytes, or 16
// for filtered datasets) sit in leaves of kLeafRecords consecutive keys,
// under a radix tree of nodes with kNodeFanout children. The tree's depth
// grows with the keys: when a key needs a leaf past 256^depth, a new top
// node is added whose child 0 is the old top (which is not rewritten). It
// shrinks again at Flush when the upper keys are gone, so the depth is
// always the smallest that holds the stored leaves.
//
// Lookup is O(1) (at most depth + 1 <= 8 steps). Pages are read from disk on
// first use, one block at a time, so once the few node blocks are in memory a
// lookup reads at most one leaf block. Memory and disk hold only what exists:
// a leaf with no allocated record, and a node with no stored child, is not
// stored, and nothing is sized by what a root or node claims.
//
// A Flush after changing k records rewrites at most k leaves and the nodes
// above them (O(k log n) bytes), copy-on-write; appending never rewrites a
// leaf or node that did not change. After a Flush that fails, every page not
// yet written is still dirty on a path from the top, so a retry loses
// nothing.
//
// ForEachIn visits records in key order (c[u] first, then the others in C
// order) and looks only at the box's positions inside leaves that exist
// (engine/index/paged_walk.h): no more than min(box volume, 512 x leaves it
// meets) positions, plus one descent from the top per leaf it meets. When
// u is 0, key order is C order and ForEachInOrder is the same walk; else
// ForEachInOrder sorts windows of dimension 0 that double in width (at most
// log2(grid[0]) + 1 passes over the leaves, one window's records held).
//
// Thread safety: as for every ChunkIndex, Get and ForEachIn may run
// concurrently with each other; Put, Flush and Destroy need exclusive access.
//
// On disk (docs/format.md, "Extensible-array index"):
//   root (in the dataset header): u64 addr, u32 len, u8 depth, u64 row,
//                                 u64 disk bytes; empty = nothing stored
//   leaf block payload:  u64 first key, u16 count (1..512), count x record;
//                        records past count are unallocated, the last
//                        stored one is allocated
//   node block payload:  u8 level (1 = above leaves), u64 first leaf,
//                        u16 count (1..256), count x (u64 addr, u32 len);
//                        children past count are not stored, the last
//                        listed one is
#ifndef SLABFS_ENGINE_INDEX_EXTENSIBLE_ARRAY_H_
#define SLABFS_ENGINE_INDEX_EXTENSIBLE_ARRAY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "engine/index/chunk_index.h"

namespace slabfs::engine {

class ExtensibleArrayIndex final : public ChunkIndex {
 public:
  static constexpr uint64_t kLeafRecords = 512;
  static constexpr uint64_t kNodeFanout = 256;
  // Keys stay below 2^63 (no dataset holds more chunks), so there are fewer
  // than 2^54 leaves and at most seven node levels.
  static constexpr uint64_t kKeyLimit = uint64_t{1} << 63;
  static constexpr int kMaxDepth = 7;

  // Corruption if the geometry does not have exactly one unlimited
  // dimension with a row of at most kMaxExtensibleRowChunks, or if the root
  // does not fit it.
  static Result<std::unique_ptr<ExtensibleArrayIndex>> Open(const IndexGeometry& geo, std::string_view root,
                                                             BlockStore* store, std::string what);
  ~ExtensibleArrayIndex() override;

  IndexKind kind() const override { return IndexKind::kExtensibleArray; }
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

  // The unlimited dimension and the records per step along it.
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

  ExtensibleArrayIndex(const IndexGeometry& geo, size_t u, uint64_t row, BlockStore* store, std::string what);

  Result<uint64_t> Key(ChunkCoord c) const;
  void KeyToCoord(uint64_t key, uint64_t* c) const;
  Status CheckNewRecord(const ChunkRecord& rec) const;

  Page* NewPage(int level) const;
  static void DeletePage(Page* p, int level);
  // Reads the page at `ref` (a node at `level`, or a leaf at level 0, whose
  // first leaf is first_leaf) into *slot unless another thread did.
  Result<Page*> Load(std::atomic<Page*>* slot, const BlockRef& ref, int level, uint64_t first_leaf);
  Result<std::unique_ptr<Leaf>> ParseLeaf(std::string_view payload, uint64_t first_leaf) const;
  Result<std::unique_ptr<Node>> ParseNode(std::string_view payload, int level, uint64_t first_leaf) const;

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
  // Adds top levels until leaf `number` fits.
  void Grow(uint64_t number);

  // Flush helpers: write the dirty children of n / the page p itself, and
  // put a page's new block in *ref, freeing the one it replaces.
  Status FlushChildren(Node* n, int level, uint64_t first_leaf);
  Status WritePage(Page* p, int level, uint64_t first_leaf, BlockRef* ref);
  Status Replace(Page* p, BlockType type, std::string_view payload, BlockRef* ref);
  void EncodeLeaf(const Leaf& l, uint64_t first_leaf, std::string* dst) const;
  void EncodeNode(const Node& n, int level, uint64_t first_leaf, std::string* dst) const;
  // Drops top nodes whose only stored child is child 0.
  void ShrinkTop();

  Status LoadAllNodes(std::atomic<Page*>* slot, const BlockRef& ref, int level, uint64_t first_leaf);
  void FreeBlocks(Page* p, const BlockRef& ref, int level);

  const IndexGeometry geo_;
  const size_t u_;           // the unlimited dimension
  const uint64_t row_;       // keys per step along u
  const uint64_t max_steps_; // c[u] < max_steps_ keeps keys below kKeyLimit
  Dims key_strides_;         // key = c[u] * row + C-order place of the others
  BlockStore* store_;
  std::string what_;

  // The tree in memory. depth_, top_ref_ and the contents of pages change
  // only in Put, Flush and Destroy; Get and ForEachIn only fill empty slots
  // (under load_mu_, published with release stores).
  int depth_ = 0;                       // node levels above the leaves
  std::atomic<Page*> top_{nullptr};     // the top page, if in memory
  BlockRef top_ref_;                    // the top page's block, if stored
  uint64_t tree_bytes_ = 0;             // bytes of the blocks the tree names
  std::mutex load_mu_;                  // serialises lazy loads; after the dataset lock

  // As of the last successful Flush (what EncodeRoot describes).
  BlockRef root_ref_;
  int root_depth_ = 0;
  uint64_t disk_bytes_ = 0;
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_INDEX_EXTENSIBLE_ARRAY_H_
