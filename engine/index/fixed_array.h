// The fixed-array chunk index, for datasets whose dimensions are all bounded:
// one record (8 bytes, or 16 for filtered datasets) per chunk of the maximum
// grid, in C order, in leaves of kLeafRecords records under a tree of nodes
// of kNodeFanout children.
//
// Lookup is O(1): the leaf holding chunk c is c / kLeafRecords; the nodes
// above the leaves are read once, on first use, so a lookup reads at most one
// leaf block. A Flush after changing k records rewrites k leaves at most and
// the nodes above them: O(k log n) bytes, never the whole index. A leaf that
// was never written is not stored (its records read as unallocated).
//
// Walks (ForEachIn, ForEachInOrder) go in C order and look only inside
// leaves that may hold a record: a bit per leaf (set when a leaf is stored
// or gets a record, cleared when a Flush finds it empty), with a summary
// bit per 64 leaves, finds the next such leaf without touching the others.
// A walk looks at no more than min(box volume, 512 x leaves it meets)
// positions; the bits cost one bit per 512 chunks of the grid.
//
// On disk (docs/format.md):
//   root (in the dataset header): u64 addr, u32 len, u8 depth, u64 chunks,
//                                 u64 disk bytes; addr 0 = nothing stored
//   leaf block payload:  u64 first chunk, u32 count, count x record
//   node block payload:  u8 level (1 = above leaves), u64 first leaf,
//                        u32 count, count x (u64 addr, u32 len)
#ifndef SLABFS_ENGINE_INDEX_FIXED_ARRAY_H_
#define SLABFS_ENGINE_INDEX_FIXED_ARRAY_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "engine/index/chunk_index.h"

namespace slabfs::engine {

class FixedArrayIndex final : public ChunkIndex {
 public:
  static constexpr uint64_t kLeafRecords = 512;
  static constexpr uint64_t kNodeFanout = 256;

  static Result<std::unique_ptr<FixedArrayIndex>> Open(const IndexGeometry& geo, std::string_view root,
                                                        BlockStore* store, std::string what);
  ~FixedArrayIndex() override;

  IndexKind kind() const override { return IndexKind::kFixedArray; }
  const IndexGeometry& geometry() const override { return geo_; }
  Result<ChunkRecord> Get(ChunkCoord c) override;
  Status Put(ChunkCoord c, const ChunkRecord& rec) override;
  Status ForEachIn(ChunkCoord lo, ChunkCoord hi, const Visitor& fn) override;
  Status ForEachInOrder(ChunkCoord lo, ChunkCoord hi, const OrderedVisitor& fn) override;
  bool dirty() const override { return !dirty_leaves_.empty(); }
  Status Flush() override;
  std::string EncodeRoot() const override;
  uint64_t disk_bytes() const override { return root_disk_bytes_; }
  Status CollectBlocks(std::vector<BlockRef>* out) override;
  Status Destroy() override;

 private:
  struct Leaf {
    std::vector<ChunkRecord> recs;
  };

  FixedArrayIndex(const IndexGeometry& geo, BlockStore* store, std::string what);
  Result<uint64_t> Position(ChunkCoord c) const;
  uint64_t LeafSize(uint64_t leaf) const;
  // Reads the node levels (once) so every leaf's block reference is known.
  Status EnsureNodes();
  Status LoadNode(const BlockRef& ref, int level, uint64_t first_leaf);
  Result<Leaf*> GetLeaf(uint64_t leaf, bool create);
  // Number of nodes at `level` (1 = directly above leaves).
  uint64_t NodesAt(int level) const;
  // The first leaf numbered `from` or more whose bit is set (num_leaves_
  // if none), and the bits' upkeep.
  uint64_t NextLeafBit(uint64_t from) const;
  void SetLeafBit(uint64_t leaf);
  void ClearLeafBit(uint64_t leaf);

  const IndexGeometry geo_;
  const uint64_t num_chunks_;
  const uint64_t num_leaves_;
  int depth_ = 0;  // node levels above the leaves
  BlockStore* store_;
  std::string what_;

  BlockRef root_;
  uint64_t disk_bytes_ = 0;       // the blocks written so far, a failed Flush's too
  uint64_t root_disk_bytes_ = 0;  // as of the last Flush (what EncodeRoot says)

  std::mutex load_mu_;  // guards lazy loading; taken after the dataset lock
  std::atomic<bool> nodes_loaded_{false};
  std::vector<BlockRef> leaf_refs_;                 // per leaf
  std::vector<std::vector<BlockRef>> node_refs_;    // [level-1][node]
  std::unique_ptr<std::atomic<Leaf*>[]> leaves_;    // loaded leaves, owned
  std::set<uint64_t> dirty_leaves_;
  // A bit per leaf that may hold an allocated record, and a bit per word
  // of them that is not zero. Set while loading nodes (under load_mu_,
  // before nodes_loaded_ is published) and by Put, Flush and Destroy.
  std::vector<uint64_t> leaf_bits_, summary_bits_;
  Dims strides_;  // C-order strides of the grid, for the walks
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_INDEX_FIXED_ARRAY_H_
