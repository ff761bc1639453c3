#include "engine/index/fixed_array.h"

#include <algorithm>
#include <bit>

#include "engine/format/layout.h"
#include "engine/index/paged_walk.h"
#include "engine/util/coding.h"
#include "engine/util/math.h"

namespace slabfs::engine {
namespace {

constexpr int kFixedLeafShift = 9;  // log2(kLeafRecords)
static_assert(uint64_t{1} << kFixedLeafShift == FixedArrayIndex::kLeafRecords);

}  // namespace

FixedArrayIndex::FixedArrayIndex(const IndexGeometry& geo, BlockStore* store, std::string what)
    : geo_(geo),
      num_chunks_(geo.max_chunks()),
      num_leaves_(CeilDiv(num_chunks_, kLeafRecords)),
      store_(store),
      what_(std::move(what)) {
  for (uint64_t n = num_leaves_; n > 1; n = CeilDiv(n, kNodeFanout)) ++depth_;
  leaf_refs_.resize(num_leaves_);
  leaves_ = std::make_unique<std::atomic<Leaf*>[]>(num_leaves_);
  for (uint64_t i = 0; i < num_leaves_; ++i) leaves_[i].store(nullptr, std::memory_order_relaxed);
  node_refs_.resize(depth_);
  for (int l = 1; l <= depth_; ++l) node_refs_[l - 1].resize(NodesAt(l));
  leaf_bits_.assign(CeilDiv(num_leaves_, 64), 0);
  summary_bits_.assign(CeilDiv(leaf_bits_.size(), 64), 0);
  strides_.assign(geo.rank(), 1);
  for (size_t d = geo.rank() - 1; d-- > 0;) strides_[d] = strides_[d + 1] * geo.max_grid[d + 1];
}

FixedArrayIndex::~FixedArrayIndex() {
  for (uint64_t i = 0; i < num_leaves_; ++i) delete leaves_[i].load();
}

uint64_t FixedArrayIndex::NodesAt(int level) const {
  uint64_t n = num_leaves_;
  for (int l = 0; l < level; ++l) n = CeilDiv(n, kNodeFanout);
  return n;
}

uint64_t FixedArrayIndex::LeafSize(uint64_t leaf) const {
  return std::min(kLeafRecords, num_chunks_ - leaf * kLeafRecords);
}

Result<std::unique_ptr<FixedArrayIndex>> FixedArrayIndex::Open(const IndexGeometry& geo, std::string_view root,
                                                                BlockStore* store, std::string what) {
  const uint64_t num_chunks = geo.max_chunks();
  if (num_chunks == 0 || num_chunks > kMaxFixedArrayChunks)
    return Err(Status::Corruption(what + ": a fixed array cannot index " +
                                  (num_chunks == kUnlimited ? std::string("an unlimited grid")
                                                            : std::to_string(num_chunks) + " chunks")));
  std::unique_ptr<FixedArrayIndex> idx(new FixedArrayIndex(geo, store, std::move(what)));
  if (root.empty()) {
    idx->nodes_loaded_ = true;
    return idx;
  }
  Reader r(root);
  uint8_t depth;
  uint64_t chunks;
  if (!r.U64(&idx->root_.addr) || !r.U32(&idx->root_.len) || !r.U8(&depth) || !r.U64(&chunks) ||
      !r.U64(&idx->disk_bytes_) || !r.done())
    return Err(Status::Corruption(idx->what_ + ": bad fixed-array root"));
  idx->root_disk_bytes_ = idx->disk_bytes_;
  if (chunks != num_chunks || depth != idx->depth_)
    return Err(Status::Corruption(idx->what_ + ": fixed-array root does not match the dataset shape"));
  SLABFS_RETURN_IF_ERROR_R(CheckBlockRef(idx->root_, store->allocator()->file_end(), idx->what_ + " index root"));
  if (idx->root_.empty()) {
    idx->nodes_loaded_ = true;
  } else if (idx->depth_ == 0) {
    idx->leaf_refs_[0] = idx->root_;
    idx->SetLeafBit(0);
    idx->nodes_loaded_ = true;
  } else {
    idx->node_refs_[idx->depth_ - 1][0] = idx->root_;
  }
  return idx;
}

Status FixedArrayIndex::LoadNode(const BlockRef& ref, int level, uint64_t first_leaf) {
  SLABFS_ASSIGN_OR_RETURN(std::string payload, store_->Read(ref, BlockType::kFixedArrayNode, what_ + " index node"));
  Reader r(payload);
  uint8_t lvl;
  uint64_t first;
  uint32_t count;
  // Leaves covered by one node at this level.
  uint64_t span = 1;
  for (int l = 0; l < level; ++l) span *= kNodeFanout;
  uint64_t child_span = span / kNodeFanout;
  uint64_t children_below = level == 1 ? num_leaves_ : NodesAt(level - 1);
  uint64_t first_child = first_leaf / child_span;
  uint64_t expect = std::min<uint64_t>(kNodeFanout, children_below - first_child);
  if (!r.U8(&lvl) || !r.U64(&first) || !r.U32(&count) || lvl != level || first != first_leaf || count != expect)
    return Status::Corruption(what_ + ": index node does not match its position");
  uint64_t file_end = store_->allocator()->file_end();
  for (uint32_t i = 0; i < count; ++i) {
    BlockRef c;
    if (!r.U64(&c.addr) || !r.U32(&c.len)) return Status::Corruption(what_ + ": index node is truncated");
    SLABFS_RETURN_IF_ERROR(CheckBlockRef(c, file_end, what_ + " index node child"));
    if (level == 1) {
      leaf_refs_[first_child + i] = c;
      if (!c.empty()) SetLeafBit(first_child + i);
    } else {
      node_refs_[level - 2][first_child + i] = c;
    }
  }
  if (!r.done()) return Status::Corruption(what_ + ": trailing bytes in index node");
  if (level > 1) {
    for (uint32_t i = 0; i < count; ++i) {
      const BlockRef& c = node_refs_[level - 2][first_child + i];
      if (!c.empty()) SLABFS_RETURN_IF_ERROR(LoadNode(c, level - 1, (first_child + i) * child_span));
    }
  }
  return Status::OK();
}

Status FixedArrayIndex::EnsureNodes() {
  if (nodes_loaded_.load(std::memory_order_acquire)) return Status::OK();
  std::lock_guard lock(load_mu_);
  if (nodes_loaded_.load(std::memory_order_relaxed)) return Status::OK();
  Status s = LoadNode(root_, depth_, 0);
  if (!s.ok()) {
    // Leave nothing half-loaded behind.
    for (auto& r : leaf_refs_) r = BlockRef{};
    std::fill(leaf_bits_.begin(), leaf_bits_.end(), 0);
    std::fill(summary_bits_.begin(), summary_bits_.end(), 0);
    for (int l = 1; l < depth_; ++l)
      for (auto& r : node_refs_[l - 1]) r = BlockRef{};
    return s;
  }
  nodes_loaded_.store(true, std::memory_order_release);
  return Status::OK();
}

Result<FixedArrayIndex::Leaf*> FixedArrayIndex::GetLeaf(uint64_t leaf, bool create) {
  Leaf* l = leaves_[leaf].load(std::memory_order_acquire);
  if (l) return l;
  SLABFS_RETURN_IF_ERROR_R(EnsureNodes());
  std::lock_guard lock(load_mu_);
  l = leaves_[leaf].load(std::memory_order_relaxed);
  if (l) return l;
  const BlockRef& ref = leaf_refs_[leaf];
  if (ref.empty() && !create) return nullptr;
  auto fresh = std::make_unique<Leaf>();
  uint64_t n = LeafSize(leaf);
  if (ref.empty()) {
    fresh->recs.assign(n, ChunkRecord{});
  } else {
    SLABFS_ASSIGN_OR_RETURN(std::string payload, store_->Read(ref, BlockType::kFixedArrayLeaf, what_ + " index leaf"));
    Reader r(payload);
    uint64_t first;
    uint32_t count;
    if (!r.U64(&first) || !r.U32(&count) || first != leaf * kLeafRecords || count != n)
      return Err(Status::Corruption(what_ + ": index leaf does not match its position"));
    fresh->recs.resize(n);
    uint64_t file_end = store_->allocator()->file_end();
    for (auto& rec : fresh->recs) {
      if (!GetRecord(&r, &rec, geo_.filtered)) return Err(Status::Corruption(what_ + ": index leaf is truncated"));
      SLABFS_RETURN_IF_ERROR_R(CheckRecord(rec, geo_, file_end, what_ + " index leaf"));
    }
    if (!r.done()) return Err(Status::Corruption(what_ + ": trailing bytes in index leaf"));
  }
  l = fresh.release();
  leaves_[leaf].store(l, std::memory_order_release);
  return l;
}

Result<uint64_t> FixedArrayIndex::Position(ChunkCoord c) const {
  if (!geo_.Contains(c)) return Err(Status::InvalidArgument(what_ + ": chunk coordinates outside the chunk grid"));
  return geo_.Linear(c);
}

Result<ChunkRecord> FixedArrayIndex::Get(ChunkCoord c) {
  SLABFS_ASSIGN_OR_RETURN(uint64_t chunk, Position(c));
  SLABFS_ASSIGN_OR_RETURN(Leaf * l, GetLeaf(chunk / kLeafRecords, false));
  if (!l) return ChunkRecord{};
  return l->recs[chunk % kLeafRecords];
}

Status FixedArrayIndex::Put(ChunkCoord c, const ChunkRecord& rec) {
  SLABFS_ASSIGN_OR_RETURN(uint64_t chunk, Position(c));
  uint64_t leaf = chunk / kLeafRecords;
  SLABFS_ASSIGN_OR_RETURN(Leaf * l, GetLeaf(leaf, true));
  l->recs[chunk % kLeafRecords] = rec;
  if (rec.allocated()) SetLeafBit(leaf);
  dirty_leaves_.insert(leaf);
  return Status::OK();
}

Status FixedArrayIndex::ForEachIn(ChunkCoord lo, ChunkCoord hi, const Visitor& fn) {
  return ForEachInOrder(lo, hi, [&fn](ChunkCoord c, const ChunkRecord& rec) -> Result<bool> {
    SLABFS_RETURN_IF_ERROR_R(fn(c, rec));
    return true;
  });
}

Status FixedArrayIndex::ForEachInOrder(ChunkCoord lo, ChunkCoord hi, const OrderedVisitor& fn) {
  const size_t rank = geo_.rank();
  if (lo.size() != rank || hi.size() != rank)
    return Status::InvalidArgument(what_ + ": range of the wrong rank");
  // The box clipped to the grid; empty boxes visit nothing.
  Dims blo(rank), bhi(rank);
  for (size_t d = 0; d < rank; ++d) {
    blo[d] = lo[d];
    bhi[d] = std::min(hi[d], geo_.max_grid[d]);
    if (blo[d] >= bhi[d]) return Status::OK();
  }
  SLABFS_RETURN_IF_ERROR(EnsureNodes());
  // Leaves in C order are pages of positions: the walk looks only inside
  // leaves whose bit is set (a leaf that was never written, or was written
  // empty, is skipped without a look).
  auto next_leaf = [this](uint64_t from, uint64_t last) -> Result<std::pair<uint64_t, const Leaf*>> {
    for (uint64_t leaf = NextLeafBit(from); leaf <= last && leaf < num_leaves_; leaf = NextLeafBit(leaf + 1)) {
      SLABFS_ASSIGN_OR_RETURN(Leaf * l, GetLeaf(leaf, false));
      if (l) return std::pair<uint64_t, const Leaf*>(leaf, l);
    }
    return std::pair<uint64_t, const Leaf*>(0, nullptr);
  };
  auto visit = [&](const uint64_t* c, uint64_t key, const Leaf& l) -> Result<bool> {
    const ChunkRecord& rec = l.recs[key % kLeafRecords];
    if (!rec.allocated()) return true;
    return fn(ChunkCoord(c, rank), rec);
  };
  return WalkPagedBox<Leaf>(PagedGrid{rank, strides_.data(), kFixedLeafShift}, ChunkCoord(blo), ChunkCoord(bhi),
                            next_leaf, visit);
}

uint64_t FixedArrayIndex::NextLeafBit(uint64_t from) const {
  if (from >= num_leaves_) return num_leaves_;
  uint64_t w = from / 64;
  const uint64_t bits = leaf_bits_[w] & (~uint64_t{0} << (from % 64));
  if (bits != 0) return w * 64 + static_cast<uint64_t>(std::countr_zero(bits));
  // The words after w, through their summary bits.
  for (uint64_t s = (w + 1) / 64; s < summary_bits_.size(); ++s) {
    uint64_t m = summary_bits_[s];
    if (s == (w + 1) / 64) m &= ~uint64_t{0} << ((w + 1) % 64);
    if (m == 0) continue;
    w = s * 64 + static_cast<uint64_t>(std::countr_zero(m));
    return w * 64 + static_cast<uint64_t>(std::countr_zero(leaf_bits_[w]));
  }
  return num_leaves_;
}

void FixedArrayIndex::SetLeafBit(uint64_t leaf) {
  leaf_bits_[leaf / 64] |= uint64_t{1} << (leaf % 64);
  summary_bits_[leaf / 4096] |= uint64_t{1} << (leaf / 64 % 64);
}

void FixedArrayIndex::ClearLeafBit(uint64_t leaf) {
  uint64_t& w = leaf_bits_[leaf / 64];
  w &= ~(uint64_t{1} << (leaf % 64));
  if (w == 0) summary_bits_[leaf / 4096] &= ~(uint64_t{1} << (leaf / 64 % 64));
}

Status FixedArrayIndex::Flush() {
  if (dirty_leaves_.empty()) return Status::OK();
  SLABFS_RETURN_IF_ERROR(EnsureNodes());
  // Leaves first, then each node level above the ones that changed.
  std::set<uint64_t> changed;
  for (uint64_t leaf : dirty_leaves_) {
    Leaf* l = leaves_[leaf].load();
    BlockRef ref;
    // A leaf with no allocated record is not stored.
    if (std::any_of(l->recs.begin(), l->recs.end(), [](const ChunkRecord& r) { return r.allocated(); })) {
      std::string p;
      PutU64(&p, leaf * kLeafRecords);
      PutU32(&p, static_cast<uint32_t>(l->recs.size()));
      for (const ChunkRecord& rec : l->recs) PutRecord(&p, rec, geo_.filtered);
      SLABFS_ASSIGN_OR_RETURN(ref, store_->Write(BlockType::kFixedArrayLeaf, p));
    }
    if (!leaf_refs_[leaf].empty()) {
      disk_bytes_ -= leaf_refs_[leaf].len;
      store_->Free(leaf_refs_[leaf]);
    }
    disk_bytes_ += ref.len;
    leaf_refs_[leaf] = ref;
    if (ref.empty()) ClearLeafBit(leaf);  // it holds nothing: walks skip it
    changed.insert(leaf);
  }
  uint64_t span = 1;  // leaves per child at the current level
  for (int level = 1; level <= depth_; ++level) {
    const std::vector<BlockRef>& below = level == 1 ? leaf_refs_ : node_refs_[level - 2];
    std::set<uint64_t> parents;
    for (uint64_t c : changed) parents.insert(c / kNodeFanout);
    for (uint64_t node : parents) {
      uint64_t first_child = node * kNodeFanout;
      uint64_t count = std::min<uint64_t>(kNodeFanout, below.size() - first_child);
      BlockRef ref;  // a node with no stored child is not stored
      if (std::any_of(below.begin() + first_child, below.begin() + first_child + count,
                      [](const BlockRef& b) { return !b.empty(); })) {
        std::string p;
        PutU8(&p, static_cast<uint8_t>(level));
        PutU64(&p, first_child * span);
        PutU32(&p, static_cast<uint32_t>(count));
        for (uint64_t i = 0; i < count; ++i) {
          PutU64(&p, below[first_child + i].addr);
          PutU32(&p, below[first_child + i].len);
        }
        SLABFS_ASSIGN_OR_RETURN(ref, store_->Write(BlockType::kFixedArrayNode, p));
      }
      BlockRef& slot = node_refs_[level - 1][node];
      if (!slot.empty()) {
        disk_bytes_ -= slot.len;
        store_->Free(slot);
      }
      disk_bytes_ += ref.len;
      slot = ref;
    }
    changed = std::move(parents);
    span *= kNodeFanout;
  }
  root_ = depth_ == 0 ? leaf_refs_[0] : node_refs_[depth_ - 1][0];
  // Only now: a flush that fails part way leaves every leaf dirty, so a
  // retry rewrites the leaves (their fresh blocks from the failed attempt
  // are freed at once) and every node above them.
  dirty_leaves_.clear();
  root_disk_bytes_ = disk_bytes_;
  return Status::OK();
}

std::string FixedArrayIndex::EncodeRoot() const {
  std::string s;
  if (root_.empty()) return s;
  PutU64(&s, root_.addr);
  PutU32(&s, root_.len);
  PutU8(&s, static_cast<uint8_t>(depth_));
  PutU64(&s, num_chunks_);
  PutU64(&s, root_disk_bytes_);
  return s;
}

Status FixedArrayIndex::Destroy() {
  SLABFS_RETURN_IF_ERROR(EnsureNodes());
  for (auto& r : leaf_refs_) {
    store_->Free(r);
    r = BlockRef{};
  }
  for (auto& level : node_refs_)
    for (auto& r : level) {
      store_->Free(r);
      r = BlockRef{};
    }
  for (uint64_t i = 0; i < num_leaves_; ++i) delete leaves_[i].exchange(nullptr);
  std::fill(leaf_bits_.begin(), leaf_bits_.end(), 0);
  std::fill(summary_bits_.begin(), summary_bits_.end(), 0);
  dirty_leaves_.clear();
  root_ = BlockRef{};
  disk_bytes_ = root_disk_bytes_ = 0;
  return Status::OK();
}

Status FixedArrayIndex::CollectBlocks(std::vector<BlockRef>* out) {
  SLABFS_RETURN_IF_ERROR(EnsureNodes());
  for (const BlockRef& r : leaf_refs_)
    if (!r.empty()) out->push_back(r);
  for (const auto& level : node_refs_)
    for (const BlockRef& r : level)
      if (!r.empty()) out->push_back(r);
  return Status::OK();
}

}  // namespace slabfs::engine
