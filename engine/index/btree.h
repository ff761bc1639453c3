// The B-tree chunk index, for datasets with two or more unlimited dimensions
// (it works for any geometry). A copy-on-write B+-tree keyed by chunk
// coordinates in lexicographic order (the C order of the chunk grid): leaves
// hold (key, record) pairs of allocated chunks only, nodes hold separator
// keys and child references. Unallocated chunks cost nothing.
//
// Lookup, insert and remove are O(log n). Nodes are read lazily, on first
// use, and stay in memory as sorted flat key arrays. A Flush after changing
// k records rewrites the dirty nodes and their ancestors, bottom-up, each
// into a new block (O(k log n) bytes), and frees the blocks they replace.
//
// Shape: a node splits above `node_capacity` entries (kMaxEntries by
// default). An insert at the end of the rightmost leaf (a sequential append)
// leaves the left node full and starts the right one with one entry, so
// appends fill nodes to 100%; any other split halves the node. A remove that
// leaves a node under a quarter full merges it with a sibling, or evens the
// two out when they do not fit in one node; a node left empty without a
// sibling goes, and a root left with one child is replaced by that child at
// the next Flush. All leaves are at the same depth.
//
// On disk (docs/format.md, "B-tree index"); keys are delta-encoded varints:
//   root (in the dataset header): u64 addr, u32 len, u8 height, u64 records,
//                                 u64 disk bytes; empty = empty tree
//   leaf block payload:  u16 count, count x (key, record)
//   node block payload:  u8 level (>= 1), u16 count,
//                        count x (u64 addr, u32 len), (count - 1) x key
// Every byte read is checked: block type and CRC, levels, counts, key order
// within the node and within the bounds its parent gives it, keys inside the
// grid, records (CheckRecord) and child references.
//
// Thread safety: Get and ForEachIn may run concurrently with each other
// (lazy loading takes load_mu_). Put, Flush and Destroy are exclusive.
#ifndef SLABFS_ENGINE_INDEX_BTREE_H_
#define SLABFS_ENGINE_INDEX_BTREE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/index/chunk_index.h"
#include "engine/util/mutex.h"

namespace slabfs::engine {

class BTreeIndex final : public ChunkIndex {
 public:
  // Entries (leaf records or node children) a block may hold.
  static constexpr size_t kMaxEntries = 256;
  // The smallest node capacity Open accepts (tests use small ones to build
  // tall trees from few records).
  static constexpr size_t kMinCapacity = 4;
  // Levels above the leaves. A tree built by this code stays far below it
  // (reaching height h takes about (kMaxEntries/2)^(h-1) records); a root
  // claiming more is Corruption.
  static constexpr int kMaxHeight = 24;

  // Opens the index from its root (empty for an empty tree). Reads no block:
  // nodes load on first use. node_capacity is the number of entries above
  // which a node splits, between kMinCapacity and kMaxEntries; it does not
  // affect what can be read.
  static Result<std::unique_ptr<BTreeIndex>> Open(const IndexGeometry& geo, std::string_view root, BlockStore* store,
                                                  std::string what, size_t node_capacity = kMaxEntries);
  ~BTreeIndex() override;

  IndexKind kind() const override { return IndexKind::kBTree; }
  const IndexGeometry& geometry() const override { return geo_; }
  Result<ChunkRecord> Get(ChunkCoord c) override;
  // InvalidArgument for coordinates outside the grid and for records that
  // CheckRecord would refuse on reading them back.
  Status Put(ChunkCoord c, const ChunkRecord& rec) override;
  // Visits in key order. Seeks: after a key outside the box it jumps to the
  // smallest key inside the box that is greater, so subtrees between the
  // box's rows are never read.
  Status ForEachIn(ChunkCoord lo, ChunkCoord hi, const Visitor& fn) override;
  // Key order is C order: the same walk, stopping when fn says so. Costs
  // O(log n) per leaf it enters, and a leaf is entered only for a key
  // inside the box (a jump lands on the box's next key).
  Status ForEachInOrder(ChunkCoord lo, ChunkCoord hi, const OrderedVisitor& fn) override;
  bool dirty() const override { return dirty_; }
  Status Flush() override;
  std::string EncodeRoot() const override { return root_bytes_; }
  uint64_t disk_bytes() const override { return disk_bytes_; }
  Status CollectBlocks(std::vector<BlockRef>* out) override;
  Status Destroy() override;

  // Allocated records in the tree (as of now, not of the last Flush).
  uint64_t records() const { return count_; }
  // Levels above the leaves (0: the root is a leaf).
  int height() const { return height_; }

 private:
  struct Node;
  struct Child;
  // One step of the path from the root to a leaf, kept by Put.
  struct PathEntry {
    Node* node = nullptr;
    size_t idx = 0;                // position among its parent's children
    bool rightmost = false;        // the last node of its level
    const uint64_t* lo = nullptr;  // the node's key range [lo, hi); null =
    const uint64_t* hi = nullptr;  // unbounded on that side
  };

  BTreeIndex(const IndexGeometry& geo, BlockStore* store, std::string what, size_t capacity);

  // The leaf whose range holds key (null for an empty tree), loading nodes
  // on the way. *leaf_hi (if asked) receives the leaf's exclusive upper
  // bound (null: none). With record_path, fills path_[0..height_].
  Result<Node*> FindLeaf(const uint64_t* key, const uint64_t** leaf_hi, bool record_path);
  Result<Node*> LoadRoot();
  // Child i of parent, loaded if needed; plo/phi are the parent's range.
  Result<Node*> ChildAt(Node* parent, size_t i, const uint64_t* plo, const uint64_t* phi);
  std::unique_ptr<Node> NewNode(int level) const;
  Result<std::unique_ptr<Node>> ReadNode(const BlockRef& ref, int level, const uint64_t* lo, const uint64_t* hi,
                                         bool is_root);
  std::string EncodeNode(const Node& n) const;

  ChunkRecord RecordAt(const Node& leaf, size_t i) const;
  void SetRecord(uint64_t* entry, const ChunkRecord& rec) const;
  void MarkPathDirty();
  Status Insert(size_t pos, const uint64_t* key, const ChunkRecord& rec);
  Status Remove(size_t pos);
  void MergeChildren(Node* parent, size_t left);
  void EvenOutChildren(Node* parent, size_t left);
  void Retire(const BlockRef& ref);

  // ForEachInOrder's walk; fn(coord, rec) -> Result<bool>.
  template <typename F>
  Status Walk(ChunkCoord lo, ChunkCoord hi, const F& fn);

  Status WriteDirty(Node* n, BlockRef* slot);
  Status CollectRefs(Node* n, const uint64_t* lo, const uint64_t* hi, std::vector<BlockRef>* refs);
  std::string EncodeRootBytes() const;

  const IndexGeometry geo_;
  const size_t rank_;
  const size_t leaf_stride_;  // u64 per leaf entry: key, address, [size | mask << 32]
  const size_t capacity_;     // a node splits above this many entries
  const size_t min_fill_;     // and is merged or evened out below this many
  BlockStore* store_;
  std::string what_;

  Mutex load_mu_{LockRank::kIndexLoad};  // serialises lazy loads (they read blocks)
  std::atomic<Node*> root_{nullptr};     // owned; null: empty or not loaded yet
  BlockRef root_ref_;                    // the root's block as of its last write
  int height_ = 0;
  uint64_t count_ = 0;
  uint64_t disk_bytes_ = 0;
  bool dirty_ = false;
  std::vector<BlockRef> dead_;  // blocks of removed nodes, freed by the next Flush
  std::string root_bytes_;      // EncodeRoot as of the last Flush (or Open)
  std::array<PathEntry, kMaxHeight + 1> path_;
};

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_INDEX_BTREE_H_
