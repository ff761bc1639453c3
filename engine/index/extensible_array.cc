#include "engine/index/extensible_array.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "engine/format/layout.h"
#include "engine/index/paged_walk.h"
#include "engine/util/coding.h"

namespace slabfs::engine {
namespace {

constexpr int kLeafShift = 9;    // log2(kLeafRecords)
constexpr int kFanoutShift = 8;  // log2(kNodeFanout)
static_assert(uint64_t{1} << kLeafShift == ExtensibleArrayIndex::kLeafRecords);
static_assert(uint64_t{1} << kFanoutShift == ExtensibleArrayIndex::kNodeFanout);
// The largest leaf number a key below kKeyLimit has must fit under the
// deepest tree.
static_assert(((ExtensibleArrayIndex::kKeyLimit - 1) >> kLeafShift) >>
                  (kFanoutShift * ExtensibleArrayIndex::kMaxDepth) ==
              0);

constexpr uint64_t kLeafMask = ExtensibleArrayIndex::kLeafRecords - 1;
constexpr uint64_t kFanoutMask = ExtensibleArrayIndex::kNodeFanout - 1;

// Whether leaf `number` lies under a tree of `depth` node levels.
inline bool Fits(uint64_t number, int depth) { return (number >> (kFanoutShift * depth)) == 0; }

}  // namespace

// A page of the tree in memory. Pages are owned by their parent's slot (or
// top_) and deleted with DeletePage, which knows their type from the level.
struct ExtensibleArrayIndex::Page {
  // Changed since written: the page, and every node above it, must be
  // written by the next Flush.
  bool dirty = false;
};

struct ExtensibleArrayIndex::Leaf : Page {
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

struct ExtensibleArrayIndex::Node : Page {
  Node() {
    for (auto& k : kids) k.store(nullptr, std::memory_order_relaxed);
  }
  // Children in memory (Node* above level 1, Leaf* at level 1).
  std::atomic<Page*> kids[kNodeFanout];
  // Children's blocks as of their last write; empty: not stored.
  BlockRef refs[kNodeFanout];
};

ExtensibleArrayIndex::ExtensibleArrayIndex(const IndexGeometry& geo, size_t u, uint64_t row, BlockStore* store,
                                           std::string what)
    : geo_(geo), u_(u), row_(row), max_steps_(kKeyLimit / row), store_(store), what_(std::move(what)) {
  // Strides of the key over the grid in key order: u first, then the
  // other dimensions in C order (key_strides_[0] is the row).
  const size_t rank = geo.rank();
  Dims grid;
  for (size_t d = 0; d < rank; ++d)
    if (d != u) grid.push_back(geo.max_grid[d]);
  key_strides_.assign(rank, 1);
  for (size_t j = rank - 1; j-- > 0;) key_strides_[j] = key_strides_[j + 1] * grid[j];
}

ExtensibleArrayIndex::~ExtensibleArrayIndex() {
  if (Page* top = top_.load(std::memory_order_relaxed)) DeletePage(top, depth_);
}

Result<std::unique_ptr<ExtensibleArrayIndex>> ExtensibleArrayIndex::Open(const IndexGeometry& geo,
                                                                          std::string_view root, BlockStore* store,
                                                                          std::string what) {
  size_t unlimited = 0, u = 0;
  for (size_t d = 0; d < geo.rank(); ++d)
    if (geo.max_grid[d] == kUnlimited) {
      ++unlimited;
      u = d;
    }
  if (unlimited != 1)
    return Err(Status::Corruption(what + ": an extensible array needs exactly one unlimited dimension, the grid has " +
                                  std::to_string(unlimited)));
  uint64_t row = 1;
  for (size_t d = 0; d < geo.rank(); ++d) {
    if (d == u) continue;
    const uint64_t g = geo.max_grid[d];
    if (g == 0 || g > kMaxExtensibleRowChunks || row > kMaxExtensibleRowChunks / g)
      return Err(Status::Corruption(what + ": a step along the unlimited dimension of an extensible array must "
                                           "hold 1 to " + std::to_string(kMaxExtensibleRowChunks) + " chunks"));
    row *= g;
  }
  std::unique_ptr<ExtensibleArrayIndex> idx(new ExtensibleArrayIndex(geo, u, row, store, std::move(what)));
  if (root.empty()) return idx;

  Reader r(root);
  BlockRef ref;
  uint8_t depth;
  uint64_t root_row, disk_bytes;
  if (!r.U64(&ref.addr) || !r.U32(&ref.len) || !r.U8(&depth) || !r.U64(&root_row) || !r.U64(&disk_bytes) ||
      !r.done())
    return Err(Status::Corruption(idx->what_ + ": bad extensible-array root"));
  if (root_row != row)
    return Err(Status::Corruption(idx->what_ + ": extensible-array root does not match the dataset shape"));
  if (depth > kMaxDepth)
    return Err(Status::Corruption(idx->what_ + ": extensible-array root claims " + std::to_string(depth) +
                                  " node levels, more than " + std::to_string(kMaxDepth)));
  SLABFS_RETURN_IF_ERROR_R(CheckBlockRef(ref, store->allocator()->file_end(), idx->what_ + " index root"));
  if (ref.empty()) return Err(Status::Corruption(idx->what_ + ": extensible-array root names no block"));
  if (disk_bytes < ref.len)
    return Err(Status::Corruption(idx->what_ + ": extensible-array root counts fewer bytes than its top block"));
  idx->depth_ = idx->root_depth_ = depth;
  idx->top_ref_ = idx->root_ref_ = ref;
  idx->disk_bytes_ = idx->tree_bytes_ = disk_bytes;
  return idx;
}

// ------------------------------------------------------------ keys

Result<uint64_t> ExtensibleArrayIndex::Key(ChunkCoord c) const {
  bool inside = c.size() == geo_.rank();
  uint64_t pos = 0;
  for (size_t d = 0; inside && d < c.size(); ++d) {
    if (d == u_) continue;
    inside = c[d] < geo_.max_grid[d];
    pos = pos * geo_.max_grid[d] + c[d];
  }
  if (!inside || c[u_] >= max_steps_)
    return Err(Status::InvalidArgument(what_ + ": chunk coordinates outside the chunk grid"));
  return c[u_] * row_ + pos;
}

void ExtensibleArrayIndex::KeyToCoord(uint64_t key, uint64_t* c) const {
  c[u_] = key / row_;
  uint64_t pos = key % row_;
  for (size_t d = geo_.rank(); d-- > 0;) {
    if (d == u_) continue;
    c[d] = pos % geo_.max_grid[d];
    pos /= geo_.max_grid[d];
  }
}

Status ExtensibleArrayIndex::CheckNewRecord(const ChunkRecord& rec) const {
  bool ok;
  if (!rec.allocated()) ok = rec.size == 0 && rec.filter_mask == 0;
  else if (rec.addr < kDataStart) ok = false;
  else if (geo_.filtered) ok = rec.size != 0 && rec.size <= geo_.max_chunk_bytes;
  else ok = rec.size == 0 && rec.filter_mask == 0;
  if (!ok) return Status::InvalidArgument(what_ + ": a chunk record the index cannot store");
  return Status::OK();
}

// ------------------------------------------------------------ pages

ExtensibleArrayIndex::Page* ExtensibleArrayIndex::NewPage(int level) const {
  if (level > 0) return new Node;
  auto* l = new Leaf;
  if (geo_.filtered) l->meta.reset(new uint32_t[2 * kLeafRecords]());
  return l;
}

void ExtensibleArrayIndex::DeletePage(Page* p, int level) {
  if (level == 0) {
    delete static_cast<Leaf*>(p);
    return;
  }
  auto* n = static_cast<Node*>(p);
  for (auto& k : n->kids)
    if (Page* c = k.load(std::memory_order_relaxed)) DeletePage(c, level - 1);
  delete n;
}

Result<std::unique_ptr<ExtensibleArrayIndex::Leaf>> ExtensibleArrayIndex::ParseLeaf(std::string_view payload,
                                                                                     uint64_t first_leaf) const {
  Reader r(payload);
  uint64_t first;
  uint16_t count;
  if (!r.U64(&first) || !r.U16(&count) || first != first_leaf << kLeafShift || count == 0 || count > kLeafRecords)
    return Err(Status::Corruption(what_ + ": extensible-array leaf does not match its position"));
  std::unique_ptr<Leaf> l(static_cast<Leaf*>(NewPage(0)));
  const uint64_t file_end = store_->allocator()->file_end();
  for (size_t i = 0; i < count; ++i) {
    ChunkRecord rec;
    if (!GetRecord(&r, &rec, geo_.filtered))
      return Err(Status::Corruption(what_ + ": extensible-array leaf is truncated"));
    SLABFS_RETURN_IF_ERROR_R(CheckRecord(rec, geo_, file_end, what_ + " extensible-array leaf"));
    l->Set(i, rec);
  }
  if (!r.done()) return Err(Status::Corruption(what_ + ": trailing bytes in extensible-array leaf"));
  // The writer stops at the last allocated record; anything else is damage.
  if (l->addr[count - 1] == 0)
    return Err(Status::Corruption(what_ + ": extensible-array leaf ends in an unallocated record"));
  return l;
}

Result<std::unique_ptr<ExtensibleArrayIndex::Node>> ExtensibleArrayIndex::ParseNode(std::string_view payload,
                                                                                     int level,
                                                                                     uint64_t first_leaf) const {
  Reader r(payload);
  uint8_t lvl;
  uint64_t first;
  uint16_t count;
  if (!r.U8(&lvl) || !r.U64(&first) || !r.U16(&count) || lvl != level || first != first_leaf || count == 0 ||
      count > kNodeFanout)
    return Err(Status::Corruption(what_ + ": extensible-array node does not match its position"));
  auto n = std::make_unique<Node>();
  const uint64_t file_end = store_->allocator()->file_end();
  for (size_t i = 0; i < count; ++i) {
    BlockRef& c = n->refs[i];
    if (!r.U64(&c.addr) || !r.U32(&c.len))
      return Err(Status::Corruption(what_ + ": extensible-array node is truncated"));
    SLABFS_RETURN_IF_ERROR_R(CheckBlockRef(c, file_end, what_ + " extensible-array node child"));
  }
  if (!r.done()) return Err(Status::Corruption(what_ + ": trailing bytes in extensible-array node"));
  if (n->refs[count - 1].empty())
    return Err(Status::Corruption(what_ + ": extensible-array node ends in a missing child"));
  // Only the top of a seven-level tree can list children no key reaches.
  const uint64_t last_leaf = first_leaf + (uint64_t{count - 1u} << (kFanoutShift * (level - 1)));
  if (last_leaf >= (kKeyLimit >> kLeafShift))
    return Err(Status::Corruption(what_ + ": extensible-array node lists children past the largest key"));
  return n;
}

Result<ExtensibleArrayIndex::Page*> ExtensibleArrayIndex::Load(std::atomic<Page*>* slot, const BlockRef& ref,
                                                               int level, uint64_t first_leaf) {
  // One loader at a time keeps a page from being read twice and published
  // over itself; readers of pages already in memory never take the lock.
  std::lock_guard lock(load_mu_);
  if (Page* p = slot->load(std::memory_order_relaxed)) return p;
  Page* page;
  if (level == 0) {
    SLABFS_ASSIGN_OR_RETURN(std::string payload,
                            store_->Read(ref, BlockType::kExtArrayLeaf, what_ + " extensible-array leaf"));
    SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Leaf> l, ParseLeaf(payload, first_leaf));
    page = l.release();
  } else {
    SLABFS_ASSIGN_OR_RETURN(std::string payload,
                            store_->Read(ref, BlockType::kExtArrayNode, what_ + " extensible-array node"));
    SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Node> n, ParseNode(payload, level, first_leaf));
    page = n.release();
  }
  slot->store(page, std::memory_order_release);
  return page;
}

Result<ExtensibleArrayIndex::Page*> ExtensibleArrayIndex::Top() {
  Page* p = top_.load(std::memory_order_acquire);
  if (p || top_ref_.empty()) return p;
  return Load(&top_, top_ref_, depth_, 0);
}

Result<ExtensibleArrayIndex::Leaf*> ExtensibleArrayIndex::FindLeaf(uint64_t number) {
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

Result<ExtensibleArrayIndex::Found> ExtensibleArrayIndex::NextLeaf(uint64_t from, uint64_t last) {
  if (from > last) return Found{};
  SLABFS_ASSIGN_OR_RETURN(Page * p, Top());  // checks the depth, as in FindLeaf
  if (!p || !Fits(from, depth_)) return Found{};
  return NextIn(p, depth_, 0, from, last);
}

Result<ExtensibleArrayIndex::Found> ExtensibleArrayIndex::NextIn(Page* p, int level, uint64_t first_leaf,
                                                                 uint64_t from, uint64_t last) {
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

Result<ChunkRecord> ExtensibleArrayIndex::Get(ChunkCoord c) {
  SLABFS_ASSIGN_OR_RETURN(uint64_t key, Key(c));
  SLABFS_ASSIGN_OR_RETURN(Leaf * l, FindLeaf(key >> kLeafShift));
  if (!l) return ChunkRecord{};
  return l->Record(key & kLeafMask);
}

void ExtensibleArrayIndex::Grow(uint64_t number) {
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

Status ExtensibleArrayIndex::Put(ChunkCoord c, const ChunkRecord& rec) {
  SLABFS_ASSIGN_OR_RETURN(uint64_t key, Key(c));
  SLABFS_RETURN_IF_ERROR(CheckNewRecord(rec));
  const uint64_t number = key >> kLeafShift;
  const bool adding = rec.allocated();
  if (!Fits(number, depth_)) {
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

Status ExtensibleArrayIndex::ForEachIn(ChunkCoord lo, ChunkCoord hi, const Visitor& fn) {
  return WalkKeys(lo, hi, [&fn](ChunkCoord c, const ChunkRecord& rec) -> Result<bool> {
    SLABFS_RETURN_IF_ERROR_R(fn(c, rec));
    return true;
  });
}

Status ExtensibleArrayIndex::WalkKeys(ChunkCoord lo, ChunkCoord hi, const OrderedVisitor& fn) {
  const size_t rank = geo_.rank();
  if (lo.size() != rank || hi.size() != rank) return Status::InvalidArgument(what_ + ": range of the wrong rank");
  // The box in key order (u first, then the others in C order), clipped to
  // the grid and, along u, to the keys that can exist.
  Dims plo(rank), phi(rank);
  plo[0] = lo[u_];
  phi[0] = std::min(hi[u_], max_steps_);
  for (size_t d = 0, j = 1; d < rank; ++d) {
    if (d == u_) continue;
    plo[j] = lo[d];
    phi[j] = std::min(hi[d], geo_.max_grid[d]);
    ++j;
  }
  for (size_t j = 0; j < rank; ++j)
    if (plo[j] >= phi[j]) return Status::OK();
  Dims c(rank);  // the coordinates fn gets, in the grid's order
  auto next_leaf = [this](uint64_t from, uint64_t last) -> Result<std::pair<uint64_t, const Leaf*>> {
    SLABFS_ASSIGN_OR_RETURN(Found f, NextLeaf(from, last));
    return std::pair<uint64_t, const Leaf*>(f.number, f.leaf);
  };
  auto visit = [&](const uint64_t* p, uint64_t key, const Leaf& l) -> Result<bool> {
    const size_t slot = key & kLeafMask;
    if (l.addr[slot] == 0) return true;
    c[u_] = p[0];
    for (size_t d = 0, j = 1; d < rank; ++d)
      if (d != u_) c[d] = p[j++];
    return fn(ChunkCoord(c), l.Record(slot));
  };
  return WalkPagedBox<Leaf>(PagedGrid{rank, key_strides_.data(), kLeafShift}, ChunkCoord(plo), ChunkCoord(phi),
                            next_leaf, visit);
}

Status ExtensibleArrayIndex::ForEachInOrder(ChunkCoord lo, ChunkCoord hi, const OrderedVisitor& fn) {
  if (u_ == 0) return WalkKeys(lo, hi, fn);  // key order is C order
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
  std::vector<uint64_t> coords;    // rank per record
  std::vector<ChunkRecord> recs;
  std::vector<size_t> order;
  for (uint64_t a = lo[0], w = 1; a < end; a += w, w *= 2) {
    w = std::min(w, end - a);
    wlo[0] = a;
    whi[0] = a + w;
    coords.clear();
    recs.clear();
    SLABFS_RETURN_IF_ERROR(WalkKeys(ChunkCoord(wlo), ChunkCoord(whi), [&](ChunkCoord c, const ChunkRecord& rec) -> Result<bool> {
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

bool ExtensibleArrayIndex::dirty() const {
  // Every change marks the whole path up to the top.
  const Page* top = top_.load(std::memory_order_relaxed);
  return top && top->dirty;
}

void ExtensibleArrayIndex::EncodeLeaf(const Leaf& l, uint64_t first_leaf, std::string* dst) const {
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

void ExtensibleArrayIndex::EncodeNode(const Node& n, int level, uint64_t first_leaf, std::string* dst) const {
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

Status ExtensibleArrayIndex::Replace(Page* p, BlockType type, std::string_view payload, BlockRef* ref) {
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

Status ExtensibleArrayIndex::FlushChildren(Node* n, int level, uint64_t first_leaf) {
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

Status ExtensibleArrayIndex::WritePage(Page* p, int level, uint64_t first_leaf, BlockRef* ref) {
  std::string payload;
  if (level == 0) {
    EncodeLeaf(*static_cast<Leaf*>(p), first_leaf, &payload);
    return Replace(p, BlockType::kExtArrayLeaf, payload, ref);
  }
  auto* n = static_cast<Node*>(p);
  SLABFS_RETURN_IF_ERROR(FlushChildren(n, level, first_leaf));
  EncodeNode(*n, level, first_leaf, &payload);
  return Replace(p, BlockType::kExtArrayNode, payload, ref);
}

void ExtensibleArrayIndex::ShrinkTop() {
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

Status ExtensibleArrayIndex::Flush() {
  Page* top = top_.load(std::memory_order_relaxed);
  if (top && top->dirty) {
    if (depth_ == 0) {
      SLABFS_RETURN_IF_ERROR(WritePage(top, 0, 0, &top_ref_));
      if (top_ref_.empty()) {
        top_.store(nullptr, std::memory_order_relaxed);
        DeletePage(top, 0);
      }
    } else {
      auto* n = static_cast<Node*>(top);
      SLABFS_RETURN_IF_ERROR(FlushChildren(n, depth_, 0));
      // A top whose only stored child is child 0 is not written: the keys
      // shrank, and the child (already on disk) becomes the top instead.
      if (std::any_of(n->refs + 1, n->refs + kNodeFanout, [](const BlockRef& r) { return !r.empty(); })) {
        std::string payload;
        EncodeNode(*n, depth_, 0, &payload);
        SLABFS_RETURN_IF_ERROR(Replace(n, BlockType::kExtArrayNode, payload, &top_ref_));
      } else {
        ShrinkTop();
      }
    }
  }
  root_ref_ = top_ref_;
  root_depth_ = depth_;
  disk_bytes_ = tree_bytes_;
  return Status::OK();
}

std::string ExtensibleArrayIndex::EncodeRoot() const {
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

Status ExtensibleArrayIndex::LoadAllNodes(std::atomic<Page*>* slot, const BlockRef& ref, int level,
                                          uint64_t first_leaf) {
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

void ExtensibleArrayIndex::FreeBlocks(Page* p, const BlockRef& ref, int level) {
  store_->Free(ref);
  if (!p || level == 0) return;
  auto* n = static_cast<Node*>(p);
  for (size_t i = 0; i < kNodeFanout; ++i)
    FreeBlocks(n->kids[i].load(std::memory_order_relaxed), n->refs[i], level - 1);
}

Status ExtensibleArrayIndex::Destroy() {
  // Every node is read first, so a damaged one fails Destroy before any
  // block is freed. Leaves need not be read: their blocks are named above.
  SLABFS_RETURN_IF_ERROR(LoadAllNodes(&top_, top_ref_, depth_, 0));
  Page* top = top_.exchange(nullptr, std::memory_order_relaxed);
  FreeBlocks(top, top_ref_, depth_);
  if (top) DeletePage(top, depth_);
  depth_ = root_depth_ = 0;
  top_ref_ = root_ref_ = BlockRef{};
  disk_bytes_ = tree_bytes_ = 0;
  return Status::OK();
}

Status ExtensibleArrayIndex::CollectBlocks(std::vector<BlockRef>* out) {
  SLABFS_RETURN_IF_ERROR(LoadAllNodes(&top_, top_ref_, depth_, 0));
  // The nodes are all in memory now; walk them for their references.
  std::function<void(Page*, const BlockRef&, int)> walk = [&](Page* p, const BlockRef& ref, int level) {
    if (ref.empty()) return;
    out->push_back(ref);
    if (!p || level == 0) return;
    auto* n = static_cast<Node*>(p);
    for (size_t i = 0; i < kNodeFanout; ++i)
      walk(n->kids[i].load(std::memory_order_acquire), n->refs[i], level - 1);
  };
  walk(top_.load(std::memory_order_acquire), top_ref_, depth_);
  return Status::OK();
}

}  // namespace slabfs::engine
