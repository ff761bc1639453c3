#include "engine/index/paged_array.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "engine/format/layout.h"
#include "engine/index/paged_walk.h"
#include "engine/util/coding.h"
#include "engine/util/math.h"

namespace slabfs::engine {
namespace {

constexpr int kLeafShift = 9;    // log2(kLeafRecords)
constexpr int kFanoutShift = 8;  // log2(kNodeFanout)
static_assert(uint64_t{1} << kLeafShift == PagedArrayIndex::kLeafRecords);
static_assert(uint64_t{1} << kFanoutShift == PagedArrayIndex::kNodeFanout);
// The largest leaf number a key below kKeyLimit has must fit under the
// deepest tree.
static_assert(((PagedArrayIndex::kKeyLimit - 1) >> kLeafShift) >> (kFanoutShift * PagedArrayIndex::kMaxDepth) == 0);

constexpr uint64_t kLeafMask = PagedArrayIndex::kLeafRecords - 1;
constexpr uint64_t kFanoutMask = PagedArrayIndex::kNodeFanout - 1;

// Whether leaf `number` lies under a tree of `depth` node levels.
inline bool Fits(uint64_t number, int depth) { return (number >> (kFanoutShift * depth)) == 0; }

// The smallest depth whose tree holds leaves [0, leaves).
int DepthFor(uint64_t leaves) {
  int depth = 0;
  while (!Fits(leaves - 1, depth)) ++depth;
  return depth;
}

}  // namespace

// A page of the tree in memory. Pages are owned by their parent's slot (or
// top_) and deleted with DeletePage, which knows their type from the level.
struct PagedArrayIndex::Page {
  // Changed since written: the page, and every node above it, must be
  // written by the next Flush.
  bool dirty = false;
};

struct PagedArrayIndex::Leaf : Page {
  uint64_t addr[kLeafRecords] = {};
  // Filtered datasets only: stored size and filter mask of each record,
  // kept apart so unfiltered leaves cost 8 bytes a record in memory too.
  std::unique_ptr<uint32_t[]> meta;

  ChunkRecord Record(size_t i) const {
    ChunkRecord r;
    r.addr = addr[i];
    if (meta) {
      r.size = meta[2 * i];
      r.filter_mask = meta[2 * i + 1];
    }
    return r;
  }
  void Set(size_t i, const ChunkRecord& r) {
    addr[i] = r.addr;
    if (meta) {
      meta[2 * i] = r.size;
      meta[2 * i + 1] = r.filter_mask;
    }
  }
};

struct PagedArrayIndex::Node : Page {
  Node() {
    for (auto& k : kids) k.store(nullptr, std::memory_order_relaxed);
  }
  // Children in memory (Node* above level 1, Leaf* at level 1).
  std::atomic<Page*> kids[kNodeFanout];
  // Children's blocks as of their last write; empty: not stored.
  BlockRef refs[kNodeFanout];
};

PagedArrayIndex::PagedArrayIndex(const IndexGeometry& geo, size_t u, uint64_t row, BlockStore* store, std::string what)
    : geo_(geo),
      u_(u),
      row_(row),
      // An extensible array's keys stop at the last whole step below
      // kKeyLimit; a fixed array's at its grid's end.
      key_limit_(u < geo.rank() ? kKeyLimit / row * row : row),
      leaf_limit_(CeilDiv(key_limit_, kLeafRecords)),
      fixed_depth_(u < geo.rank() ? 0 : DepthFor(leaf_limit_)),
      store_(store),
      what_(std::move(what)) {
  // Key order: u first (if any), then the other dimensions in C order.
  const size_t rank = geo.rank();
  if (growable()) key_dims_.push_back(u);
  for (size_t d = 0; d < rank; ++d)
    if (d != u) key_dims_.push_back(d);
  key_strides_.assign(rank, 1);
  for (size_t j = rank - 1; j-- > 0;) key_strides_[j] = key_strides_[j + 1] * geo.max_grid[key_dims_[j + 1]];
  depth_ = root_depth_ = fixed_depth_;
}

PagedArrayIndex::~PagedArrayIndex() {
  if (Page* top = top_.load(std::memory_order_relaxed)) DeletePage(top, depth_);
}

Result<std::unique_ptr<PagedArrayIndex>> PagedArrayIndex::Open(IndexKind kind, const IndexGeometry& geo,
                                                               std::string_view root, BlockStore* store,
                                                               std::string what) {
  const size_t rank = geo.rank();
  size_t unlimited = 0, u = rank;
  for (size_t d = 0; d < rank; ++d)
    if (geo.max_grid[d] == kUnlimited) {
      ++unlimited;
      u = d;
    }
  // The product of the bounded dimensions: the row, or the whole grid.
  const uint64_t limit = kind == IndexKind::kFixedArray ? kMaxFixedArrayChunks : kMaxExtensibleRowChunks;
  uint64_t row = 1;
  bool fits = rank > 0;
  for (size_t d = 0; d < rank && fits; ++d) {
    if (d == u) continue;
    const uint64_t g = geo.max_grid[d];
    fits = g != 0 && g <= limit && row <= limit / g;
    if (fits) row *= g;
  }
  if (kind == IndexKind::kFixedArray) {
    if (unlimited != 0) return Err(Status::Corruption(what + ": a fixed array cannot index an unlimited grid"));
    if (!fits)
      return Err(Status::Corruption(what + ": a fixed array indexes 1 to " + std::to_string(kMaxFixedArrayChunks) +
                                    " chunks, not " + std::to_string(geo.max_chunks())));
  } else if (kind == IndexKind::kExtensibleArray) {
    if (unlimited != 1)
      return Err(Status::Corruption(what + ": an extensible array needs exactly one unlimited dimension, " +
                                    "the grid has " + std::to_string(unlimited)));
    if (!fits)
      return Err(Status::Corruption(what +
                                    ": a step along the unlimited dimension of an extensible array must "
                                    "hold 1 to " +
                                    std::to_string(kMaxExtensibleRowChunks) + " chunks"));
  } else {
    return Err(Status::Corruption(what + ": not a paged-array index kind"));
  }
  std::unique_ptr<PagedArrayIndex> idx(new PagedArrayIndex(geo, u, row, store, std::move(what)));
  if (root.empty()) return idx;

  // The root of either kind: the fourth field is the row, which for a
  // fixed array is its chunk count (as the first fixed-array layout wrote).
  Reader r(root);
  BlockRef ref;
  uint8_t depth = 0;
  uint64_t root_row, disk_bytes;
  if (!r.U64(&ref.addr) || !r.U32(&ref.len) || !r.U8(&depth) || !r.U64(&root_row) || !r.U64(&disk_bytes) || !r.done())
    return Err(Status::Corruption(idx->what_ + ": bad paged-array root"));
  if (root_row != row)
    return Err(Status::Corruption(idx->what_ + ": paged-array root does not match the dataset shape"));
  if (idx->growable() ? depth > kMaxDepth : depth != idx->fixed_depth_)
    return Err(Status::Corruption(
        idx->what_ + ": paged-array root claims " + std::to_string(depth) + " node levels, the grid has " +
        (idx->growable() ? "at most " + std::to_string(kMaxDepth) : std::to_string(idx->fixed_depth_))));
  SLABFS_RETURN_IF_ERROR_R(CheckBlockRef(ref, store->allocator()->file_end(), idx->what_ + " index root"));
  if (ref.empty()) return Err(Status::Corruption(idx->what_ + ": paged-array root names no block"));
  if (disk_bytes < ref.len)
    return Err(Status::Corruption(idx->what_ + ": paged-array root counts fewer bytes than its top block"));
  idx->depth_ = idx->root_depth_ = depth;
  idx->top_ref_ = idx->root_ref_ = ref;
  idx->disk_bytes_ = idx->tree_bytes_ = disk_bytes;
  return idx;
}

// ------------------------------------------------------------ keys

Result<uint64_t> PagedArrayIndex::Key(ChunkCoord c) const {
  const size_t rank = geo_.rank();
  bool inside = c.size() == rank;
  uint64_t key = 0;
  for (size_t j = 0; inside && j < rank; ++j) {
    const size_t d = key_dims_[j];
    // Along u, the steps whose keys stay below the limit.
    inside = c[d] < (d == u_ ? key_limit_ / row_ : geo_.max_grid[d]);
    key += c[d] * key_strides_[j];
  }
  if (!inside) return Err(Status::InvalidArgument(what_ + ": chunk coordinates outside the chunk grid"));
  return key;
}

Status PagedArrayIndex::CheckNewRecord(const ChunkRecord& rec) const {
  bool ok;
  if (!rec.allocated())
    ok = rec.size == 0 && rec.filter_mask == 0;
  else if (rec.addr < kDataStart)
    ok = false;
  else if (geo_.filtered)
    ok = rec.size != 0 && rec.size <= geo_.max_chunk_bytes;
  else
    ok = rec.size == 0 && rec.filter_mask == 0;
  if (!ok) return Status::InvalidArgument(what_ + ": a chunk record the index cannot store");
  return Status::OK();
}

// ------------------------------------------------------------ pages

PagedArrayIndex::Page* PagedArrayIndex::NewPage(int level) const {
  if (level > 0) return new Node;
  auto* l = new Leaf;
  if (geo_.filtered) l->meta.reset(new uint32_t[2 * kLeafRecords]());
  return l;
}

void PagedArrayIndex::DeletePage(Page* p, int level) {
  if (level == 0) {
    delete static_cast<Leaf*>(p);
    return;
  }
  auto* n = static_cast<Node*>(p);
  for (auto& k : n->kids)
    if (Page* c = k.load(std::memory_order_relaxed)) DeletePage(c, level - 1);
  delete n;
}

// A leaf or node of either layout; `type` says which. The paged-array
// blocks (types 6, 7) stop at the last allocated record or stored child;
// the first fixed-array layout's (types 3, 4) hold every slot of their part
// of the grid (512 records, 256 children, fewer only at the grid's end),
// stored or not.
Result<std::unique_ptr<PagedArrayIndex::Leaf>> PagedArrayIndex::ParseLeaf(std::string_view payload, BlockType type,
                                                                          uint64_t first_leaf) const {
  const std::string what = what_ + ": " + std::string(BlockTypeName(type));
  const bool paged = type == BlockType::kPagedLeaf;
  const uint64_t want_first = first_leaf << kLeafShift;
  const uint64_t slots = want_first < key_limit_ ? std::min(kLeafRecords, key_limit_ - want_first) : 0;
  Reader r(payload);
  uint64_t first = 0;
  uint32_t count = 0;
  uint16_t count16 = 0;
  bool fits = r.U64(&first) && first == want_first && slots > 0;
  if (paged) {
    fits = fits && r.U16(&count16) && count16 > 0 && count16 <= slots;
    count = count16;
  } else {
    fits = fits && r.U32(&count) && count == slots;
  }
  if (!fits) return Err(Status::Corruption(what + " does not match its position"));
  std::unique_ptr<Leaf> l(static_cast<Leaf*>(NewPage(0)));
  const uint64_t file_end = store_->allocator()->file_end();
  for (size_t i = 0; i < count; ++i) {
    ChunkRecord rec;
    if (!GetRecord(&r, &rec, geo_.filtered)) return Err(Status::Corruption(what + " is truncated"));
    SLABFS_RETURN_IF_ERROR_R(CheckRecord(rec, geo_, file_end, what));
    l->Set(i, rec);
  }
  if (!r.done()) return Err(Status::Corruption(what + " has trailing bytes"));
  // The writer stops at the last allocated record; anything else is damage.
  if (paged && l->addr[count - 1] == 0) return Err(Status::Corruption(what + " ends in an unallocated record"));
  return l;
}

Result<std::unique_ptr<PagedArrayIndex::Node>> PagedArrayIndex::ParseNode(std::string_view payload, BlockType type,
                                                                          int level, uint64_t first_leaf) const {
  const std::string what = what_ + ": " + std::string(BlockTypeName(type));
  const bool paged = type == BlockType::kPagedNode;
  // Children at the level below that hold a key, and the first of them
  // this node holds: no child may start past the last leaf a key reaches
  // (for an extensible array only the top of a seven-level tree can list
  // one).
  const int child_shift = kFanoutShift * (level - 1);
  const uint64_t children_below = ((leaf_limit_ - 1) >> child_shift) + 1;
  const uint64_t first_child = first_leaf >> child_shift;
  const uint64_t slots = first_child < children_below ? std::min(kNodeFanout, children_below - first_child) : 0;
  Reader r(payload);
  uint8_t lvl = 0;
  uint64_t first = 0;
  uint32_t count = 0;
  uint16_t count16 = 0;
  bool fits = r.U8(&lvl) && r.U64(&first) && lvl == level && first == first_leaf && slots > 0;
  if (paged) {
    fits = fits && r.U16(&count16) && count16 > 0 && count16 <= kNodeFanout;
    count = count16;
  } else {
    fits = fits && r.U32(&count) && count == slots;
  }
  if (!fits) return Err(Status::Corruption(what + " does not match its position"));
  auto n = std::make_unique<Node>();
  const uint64_t file_end = store_->allocator()->file_end();
  for (size_t i = 0; i < count; ++i) {
    BlockRef& c = n->refs[i];
    if (!r.U64(&c.addr) || !r.U32(&c.len)) return Err(Status::Corruption(what + " is truncated"));
    SLABFS_RETURN_IF_ERROR_R(CheckBlockRef(c, file_end, what + " child"));
  }
  if (!r.done()) return Err(Status::Corruption(what + " has trailing bytes"));
  if (paged && n->refs[count - 1].empty()) return Err(Status::Corruption(what + " ends in a missing child"));
  if (count > slots) return Err(Status::Corruption(what + " lists children past the largest key"));
  return n;
}

Result<PagedArrayIndex::Page*> PagedArrayIndex::Load(std::atomic<Page*>* slot, const BlockRef& ref, int level,
                                                     uint64_t first_leaf) {
  // Read and decode without a lock (the lock order keeps block I/O out of
  // the inner locks); two readers of one missing page may both read it, and the
  // one that publishes second drops its copy.
  const bool leaf = level == 0;
  const BlockType type = leaf ? BlockType::kPagedLeaf : BlockType::kPagedNode;
  // A fixed array also reads the first layout's blocks.
  const BlockType fixed_type = leaf ? BlockType::kFixedArrayLeaf : BlockType::kFixedArrayNode;
  BlockType got = type;
  const std::string what = what_ + (leaf ? " index leaf" : " index node");
  auto payload = growable() ? store_->Read(ref, type, what) : store_->Read(ref, type, fixed_type, what, &got);
  if (!payload) return Err(payload.error());
  Page* page;
  if (leaf) {
    auto l = ParseLeaf(*payload, got, first_leaf);
    if (!l) return Err(l.error());
    page = l->release();
  } else {
    auto n = ParseNode(*payload, got, level, first_leaf);
    if (!n) return Err(n.error());
    page = n->release();
  }
  Page* published = nullptr;
  if (!slot->compare_exchange_strong(published, page, std::memory_order_acq_rel, std::memory_order_acquire)) {
    DeletePage(page, level);  // a fresh page: it owns no children yet
    return published;
  }
  return page;
}

Result<PagedArrayIndex::Page*> PagedArrayIndex::Top() {
  Page* p = top_.load(std::memory_order_acquire);
  if (p || top_ref_.empty()) return p;
  return Load(&top_, top_ref_, depth_, 0);
}

Result<PagedArrayIndex::Leaf*> PagedArrayIndex::FindLeaf(uint64_t number) {
  // The top is read even for a leaf past it: reading it checks the depth
  // the root claims, so a root too shallow for its tree is Corruption
  // rather than records that seem unallocated.
  SLABFS_ASSIGN_OR_RETURN(Page * p, Top());
  if (!p || !Fits(number, depth_)) return nullptr;
  for (int level = depth_; level > 0; --level) {
    auto* n = static_cast<Node*>(p);
    const int shift = kFanoutShift * (level - 1);
    const size_t i = (number >> shift) & kFanoutMask;
    p = n->kids[i].load(std::memory_order_acquire);
    if (!p) {
      if (n->refs[i].empty()) return nullptr;
      SLABFS_ASSIGN_OR_RETURN(p, Load(&n->kids[i], n->refs[i], level - 1, (number >> shift) << shift));
    }
  }
  return static_cast<Leaf*>(p);
}

Result<PagedArrayIndex::Found> PagedArrayIndex::NextLeaf(uint64_t from, uint64_t last) {
  if (from > last) return Found{};
  SLABFS_ASSIGN_OR_RETURN(Page * p, Top());  // checks the depth, as in FindLeaf
  if (!p || !Fits(from, depth_)) return Found{};
  return NextIn(p, depth_, 0, from, last);
}

Result<PagedArrayIndex::Found> PagedArrayIndex::NextIn(Page* p, int level, uint64_t first_leaf, uint64_t from,
                                                       uint64_t last) {
  if (level == 0) return Found{first_leaf, static_cast<Leaf*>(p)};
  auto* n = static_cast<Node*>(p);
  const int shift = kFanoutShift * (level - 1);
  for (size_t i = from > first_leaf ? (from - first_leaf) >> shift : 0; i < kNodeFanout; ++i) {
    Page* k = n->kids[i].load(std::memory_order_acquire);
    const uint64_t child_first = first_leaf + (uint64_t{i} << shift);
    if (child_first > last) break;  // pages past `last` are not read
    if (!k) {
      if (n->refs[i].empty()) continue;
      SLABFS_ASSIGN_OR_RETURN(k, Load(&n->kids[i], n->refs[i], level - 1, child_first));
    }
    SLABFS_ASSIGN_OR_RETURN(Found f, NextIn(k, level - 1, child_first, std::max(from, child_first), last));
    if (f.leaf) return f;
  }
  return Found{};
}

// ------------------------------------------------------------ lookup and change

Result<ChunkRecord> PagedArrayIndex::Get(ChunkCoord c) {
  SLABFS_ASSIGN_OR_RETURN(uint64_t key, Key(c));
  SLABFS_ASSIGN_OR_RETURN(Leaf * l, FindLeaf(key >> kLeafShift));
  if (!l) return ChunkRecord{};
  return l->Record(key & kLeafMask);
}

void PagedArrayIndex::Grow(uint64_t number) {
  int depth = depth_;
  while (!Fits(number, depth)) ++depth;
  if (!top_.load(std::memory_order_relaxed) && top_ref_.empty()) {
    depth_ = depth;  // nothing stored yet: start at the depth needed
    return;
  }
  // The old top becomes child 0 of the new one, unchanged: its keys are
  // the first 256^depth leaves either way.
  while (depth_ < depth) {
    auto* n = new Node;
    n->kids[0].store(top_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    n->refs[0] = top_ref_;
    n->dirty = true;
    top_.store(n, std::memory_order_release);
    top_ref_ = BlockRef{};
    ++depth_;
  }
}

Status PagedArrayIndex::Put(ChunkCoord c, const ChunkRecord& rec) {
  SLABFS_ASSIGN_OR_RETURN(uint64_t key, Key(c));
  SLABFS_RETURN_IF_ERROR(CheckNewRecord(rec));
  const uint64_t number = key >> kLeafShift;
  const bool adding = rec.allocated();
  if (!Fits(number, depth_)) {         // only an extensible array's keys outgrow it
    if (!adding) return Status::OK();  // past every stored key: nothing to remove
    Grow(number);
  }
  // Walk down, creating the missing pages when adding; a removal that finds
  // no page has nothing to remove.
  Node* path[kMaxDepth];
  SLABFS_ASSIGN_OR_RETURN(Page * p, Top());
  if (!p) {
    if (!adding) return Status::OK();
    p = NewPage(depth_);
    top_.store(p, std::memory_order_release);
  }
  for (int level = depth_; level > 0; --level) {
    auto* n = static_cast<Node*>(p);
    path[level - 1] = n;
    const int shift = kFanoutShift * (level - 1);
    const size_t i = (number >> shift) & kFanoutMask;
    p = n->kids[i].load(std::memory_order_relaxed);
    if (p) continue;
    if (!n->refs[i].empty()) {
      SLABFS_ASSIGN_OR_RETURN(p, Load(&n->kids[i], n->refs[i], level - 1, (number >> shift) << shift));
    } else {
      if (!adding) return Status::OK();
      p = NewPage(level - 1);
      n->kids[i].store(p, std::memory_order_release);
    }
  }
  auto* l = static_cast<Leaf*>(p);
  const size_t slot = key & kLeafMask;
  if (l->Record(slot) == rec) return Status::OK();
  l->Set(slot, rec);
  l->dirty = true;
  for (int level = 0; level < depth_; ++level) path[level]->dirty = true;
  return Status::OK();
}

// ------------------------------------------------------------ iteration

Status PagedArrayIndex::ForEachIn(ChunkCoord lo, ChunkCoord hi, const Visitor& fn) {
  return WalkKeys(lo, hi, [&fn](ChunkCoord c, const ChunkRecord& rec) -> Result<bool> {
    SLABFS_RETURN_IF_ERROR_R(fn(c, rec));
    return true;
  });
}

Status PagedArrayIndex::WalkKeys(ChunkCoord lo, ChunkCoord hi, const OrderedVisitor& fn) {
  const size_t rank = geo_.rank();
  if (lo.size() != rank || hi.size() != rank) return Status::InvalidArgument(what_ + ": range of the wrong rank");
  // The box in key order, clipped to the grid and, along u, to the keys
  // that can exist.
  Dims plo(rank), phi(rank);
  for (size_t j = 0; j < rank; ++j) {
    const size_t d = key_dims_[j];
    plo[j] = lo[d];
    phi[j] = std::min(hi[d], d == u_ ? key_limit_ / row_ : geo_.max_grid[d]);
    if (plo[j] >= phi[j]) return Status::OK();
  }
  Dims c(rank);  // the coordinates fn gets, in the grid's order
  auto next_leaf = [this](uint64_t from, uint64_t last) -> Result<std::pair<uint64_t, const Leaf*>> {
    SLABFS_ASSIGN_OR_RETURN(Found f, NextLeaf(from, last));
    return std::pair<uint64_t, const Leaf*>(f.number, f.leaf);
  };
  auto visit = [&](const uint64_t* p, uint64_t key, const Leaf& l) -> Result<bool> {
    const size_t slot = key & kLeafMask;
    if (l.addr[slot] == 0) return true;
    for (size_t j = 0; j < rank; ++j) c[key_dims_[j]] = p[j];
    return fn(ChunkCoord(c), l.Record(slot));
  };
  return WalkPagedBox<Leaf>(PagedGrid{rank, key_strides_.data(), kLeafShift}, ChunkCoord(plo), ChunkCoord(phi),
                            next_leaf, visit);
}

Status PagedArrayIndex::ForEachInOrder(ChunkCoord lo, ChunkCoord hi, const OrderedVisitor& fn) {
  if (key_dims_[0] == 0) return WalkKeys(lo, hi, fn);  // key order is C order
  const size_t rank = geo_.rank();
  if (lo.size() != rank || hi.size() != rank) return Status::InvalidArgument(what_ + ": range of the wrong rank");
  // Key order passes through dimension 0 once per step along u. The walk
  // takes windows of dimension 0 (bounded, since u is not 0) that double
  // in width, and sorts each window's records into C order: at most
  // log2(grid[0]) + 1 passes over the leaves for a walk that goes to the
  // end, held memory at most one window's records, and a walk that stops
  // early reads only its first windows.
  const uint64_t end = std::min(hi[0], geo_.max_grid[0]);
  Dims wlo(lo.begin(), lo.end()), whi(hi.begin(), hi.end());
  std::vector<uint64_t> coords;  // rank per record
  std::vector<ChunkRecord> recs;
  std::vector<size_t> order;
  for (uint64_t a = lo[0], w = 1; a < end; a += w, w *= 2) {
    w = std::min(w, end - a);
    wlo[0] = a;
    whi[0] = a + w;
    coords.clear();
    recs.clear();
    SLABFS_RETURN_IF_ERROR(
        WalkKeys(ChunkCoord(wlo), ChunkCoord(whi), [&](ChunkCoord c, const ChunkRecord& rec) -> Result<bool> {
          coords.insert(coords.end(), c.begin(), c.end());
          recs.push_back(rec);
          return true;
        }));
    order.resize(recs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return std::lexicographical_compare(coords.begin() + x * rank, coords.begin() + (x + 1) * rank,
                                          coords.begin() + y * rank, coords.begin() + (y + 1) * rank);
    });
    for (size_t i : order) {
      SLABFS_ASSIGN_OR_RETURN(bool go, fn(ChunkCoord(coords.data() + i * rank, rank), recs[i]));
      if (!go) return Status::OK();
    }
  }
  return Status::OK();
}

// ------------------------------------------------------------ flush

bool PagedArrayIndex::dirty() const {
  // Every change marks the whole path up to the top.
  const Page* top = top_.load(std::memory_order_relaxed);
  return top && top->dirty;
}

void PagedArrayIndex::EncodeLeaf(const Leaf& l, uint64_t first_leaf, std::string* dst) const {
  // Unallocated records at the end are not stored; a leaf with none
  // allocated is not stored at all (empty payload).
  size_t count = kLeafRecords;
  while (count > 0 && l.addr[count - 1] == 0) --count;
  if (count == 0) return;
  dst->reserve(8 + 2 + count * RecordBytes(geo_.filtered));
  PutU64(dst, first_leaf << kLeafShift);
  PutU16(dst, static_cast<uint16_t>(count));
  for (size_t i = 0; i < count; ++i) PutRecord(dst, l.Record(i), geo_.filtered);
}

void PagedArrayIndex::EncodeNode(const Node& n, int level, uint64_t first_leaf, std::string* dst) const {
  size_t count = kNodeFanout;
  while (count > 0 && n.refs[count - 1].empty()) --count;
  if (count == 0) return;
  dst->reserve(1 + 8 + 2 + 12 * count);
  PutU8(dst, static_cast<uint8_t>(level));
  PutU64(dst, first_leaf);
  PutU16(dst, static_cast<uint16_t>(count));
  for (size_t i = 0; i < count; ++i) {
    PutU64(dst, n.refs[i].addr);
    PutU32(dst, n.refs[i].len);
  }
}

Status PagedArrayIndex::Replace(Page* p, BlockType type, std::string_view payload, BlockRef* ref) {
  BlockRef fresh;
  if (!payload.empty()) {
    SLABFS_ASSIGN_OR_RETURN(fresh, store_->Write(type, payload));
  }
  if (!ref->empty()) {
    tree_bytes_ -= ref->len;
    store_->Free(*ref);
  }
  tree_bytes_ += fresh.len;
  *ref = fresh;
  // Clean only once its block is written: a page whose write failed stays
  // dirty, and so do the nodes above it (they are written after it), so a
  // retried Flush writes everything not yet on disk. Blocks written by a
  // failed attempt are fresh; replacing them frees them at once.
  p->dirty = false;
  return Status::OK();
}

Status PagedArrayIndex::FlushChildren(Node* n, int level, uint64_t first_leaf) {
  const int shift = kFanoutShift * (level - 1);
  for (size_t i = 0; i < kNodeFanout; ++i) {
    Page* k = n->kids[i].load(std::memory_order_relaxed);
    if (!k || !k->dirty) continue;
    SLABFS_RETURN_IF_ERROR(WritePage(k, level - 1, first_leaf + (uint64_t{i} << shift), &n->refs[i]));
    // Invariant: a clean page in memory has a block. Pages left empty go.
    if (n->refs[i].empty()) {
      n->kids[i].store(nullptr, std::memory_order_relaxed);
      DeletePage(k, level - 1);
    }
  }
  return Status::OK();
}

Status PagedArrayIndex::WritePage(Page* p, int level, uint64_t first_leaf, BlockRef* ref) {
  std::string payload;
  if (level == 0) {
    EncodeLeaf(*static_cast<Leaf*>(p), first_leaf, &payload);
    return Replace(p, BlockType::kPagedLeaf, payload, ref);
  }
  auto* n = static_cast<Node*>(p);
  SLABFS_RETURN_IF_ERROR(FlushChildren(n, level, first_leaf));
  EncodeNode(*n, level, first_leaf, &payload);
  return Replace(p, BlockType::kPagedNode, payload, ref);
}

void PagedArrayIndex::ShrinkTop() {
  while (depth_ > 0) {
    Page* p = top_.load(std::memory_order_relaxed);
    if (!p && top_ref_.empty()) break;
    if (!p) {
      // A clean top that was never read. Shrinking is an optimisation: a
      // top that cannot be read stays (lookups through it report why).
      auto loaded = Load(&top_, top_ref_, depth_, 0);
      if (!loaded) return;
      p = *loaded;
    }
    auto* n = static_cast<Node*>(p);
    if (std::any_of(n->refs + 1, n->refs + kNodeFanout, [](const BlockRef& r) { return !r.empty(); })) return;
    Page* child = n->kids[0].exchange(nullptr, std::memory_order_relaxed);
    const BlockRef child_ref = n->refs[0];
    if (!top_ref_.empty()) {
      tree_bytes_ -= top_ref_.len;
      store_->Free(top_ref_);
    }
    DeletePage(n, depth_);
    top_.store(child, std::memory_order_release);
    top_ref_ = child_ref;
    --depth_;
  }
  if (!top_.load(std::memory_order_relaxed) && top_ref_.empty()) depth_ = 0;
}

Status PagedArrayIndex::Flush() {
  Page* top = top_.load(std::memory_order_relaxed);
  if (top && top->dirty) {
    if (growable() && depth_ > 0) {
      auto* n = static_cast<Node*>(top);
      SLABFS_RETURN_IF_ERROR(FlushChildren(n, depth_, 0));
      // A top whose only stored child is child 0 is not written: the keys
      // shrank, and the child (already on disk) becomes the top instead.
      if (std::any_of(n->refs + 1, n->refs + kNodeFanout, [](const BlockRef& r) { return !r.empty(); })) {
        std::string payload;
        EncodeNode(*n, depth_, 0, &payload);
        SLABFS_RETURN_IF_ERROR(Replace(n, BlockType::kPagedNode, payload, &top_ref_));
      } else {
        ShrinkTop();
      }
    } else {
      // A leaf top, or a fixed array's top node (its depth never changes).
      SLABFS_RETURN_IF_ERROR(WritePage(top, depth_, 0, &top_ref_));
      if (top_ref_.empty()) {
        top_.store(nullptr, std::memory_order_relaxed);
        DeletePage(top, depth_);
      }
    }
  }
  root_ref_ = top_ref_;
  root_depth_ = depth_;
  disk_bytes_ = tree_bytes_;
  return Status::OK();
}

std::string PagedArrayIndex::EncodeRoot() const {
  std::string s;
  if (root_ref_.empty()) return s;
  PutU64(&s, root_ref_.addr);
  PutU32(&s, root_ref_.len);
  PutU8(&s, static_cast<uint8_t>(root_depth_));
  PutU64(&s, row_);
  PutU64(&s, disk_bytes_);
  return s;
}

// ------------------------------------------------------------ destroy

Status PagedArrayIndex::LoadAllNodes(std::atomic<Page*>* slot, const BlockRef& ref, int level, uint64_t first_leaf) {
  if (level == 0) return Status::OK();
  Page* p = slot->load(std::memory_order_relaxed);
  if (!p) {
    if (ref.empty()) return Status::OK();
    SLABFS_ASSIGN_OR_RETURN(p, Load(slot, ref, level, first_leaf));
  }
  auto* n = static_cast<Node*>(p);
  const int shift = kFanoutShift * (level - 1);
  for (size_t i = 0; i < kNodeFanout; ++i)
    SLABFS_RETURN_IF_ERROR(LoadAllNodes(&n->kids[i], n->refs[i], level - 1, first_leaf + (uint64_t{i} << shift)));
  return Status::OK();
}

void PagedArrayIndex::FreeBlocks(Page* p, const BlockRef& ref, int level) {
  store_->Free(ref);
  if (!p || level == 0) return;
  auto* n = static_cast<Node*>(p);
  for (size_t i = 0; i < kNodeFanout; ++i)
    FreeBlocks(n->kids[i].load(std::memory_order_relaxed), n->refs[i], level - 1);
}

Status PagedArrayIndex::Destroy() {
  // Every node is read first, so a damaged one fails Destroy before any
  // block is freed. Leaves need not be read: their blocks are named above.
  SLABFS_RETURN_IF_ERROR(LoadAllNodes(&top_, top_ref_, depth_, 0));
  Page* top = top_.exchange(nullptr, std::memory_order_relaxed);
  FreeBlocks(top, top_ref_, depth_);
  if (top) DeletePage(top, depth_);
  depth_ = root_depth_ = fixed_depth_;
  top_ref_ = root_ref_ = BlockRef{};
  disk_bytes_ = tree_bytes_ = 0;
  return Status::OK();
}

Status PagedArrayIndex::CollectBlocks(std::vector<BlockRef>* out) {
  SLABFS_RETURN_IF_ERROR(LoadAllNodes(&top_, top_ref_, depth_, 0));
  // The nodes are all in memory now; walk them for their references.
  std::function<void(Page*, const BlockRef&, int)> walk = [&](Page* p, const BlockRef& ref, int level) {
    if (ref.empty()) return;
    out->push_back(ref);
    if (!p || level == 0) return;
    auto* n = static_cast<Node*>(p);
    for (size_t i = 0; i < kNodeFanout; ++i) walk(n->kids[i].load(std::memory_order_acquire), n->refs[i], level - 1);
  };
  walk(top_.load(std::memory_order_acquire), top_ref_, depth_);
  return Status::OK();
}

}  // namespace slabfs::engine
