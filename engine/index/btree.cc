#include "engine/index/btree.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <utility>

#include "engine/format/layout.h"
#include "engine/util/coding.h"

namespace slabfs::engine {
namespace {

constexpr size_t kRootBytes = 8 + 4 + 1 + 8 + 8;

// A difference of two u64 taken modulo 2^64, as a small unsigned number when
// it is small in either direction (a row break in C order steps a later
// dimension backwards).
uint64_t ZigZag(uint64_t delta) { return (delta << 1) ^ static_cast<uint64_t>(static_cast<int64_t>(delta) >> 63); }
uint64_t UnZigZag(uint64_t u) { return (u >> 1) ^ (0 - (u & 1)); }

// A key: rank varints, each the coordinate itself for the first key of a
// node and the zigzagged difference to the previous key's coordinate after.
void PutKey(std::string* dst, const uint64_t* key, const uint64_t* prev, size_t rank) {
  for (size_t d = 0; d < rank; ++d) PutVarint(dst, prev ? ZigZag(key[d] - prev[d]) : key[d]);
}
bool GetKey(Reader* r, uint64_t* key, const uint64_t* prev, size_t rank) {
  for (size_t d = 0; d < rank; ++d) {
    uint64_t v;
    if (!GetVarint(r, &v)) return false;
    key[d] = prev ? prev[d] + UnZigZag(v) : v;
  }
  return true;
}

inline int Compare(const uint64_t* a, const uint64_t* b, size_t rank) {
  for (size_t d = 0; d < rank; ++d)
    if (a[d] != b[d]) return a[d] < b[d] ? -1 : 1;
  return 0;
}

// The first i in [begin, end) whose key is >= k (LowerBound) or > k
// (UpperBound). Entries are `stride` u64 each and start with a key of rank
// u64; they are sorted. A plain branching search: on nodes that miss the
// cache it beats branch-free variants with prefetching, since the CPU
// speculates down the predicted half and so fetches ahead on its own.
inline size_t LowerBound(const uint64_t* keys, size_t begin, size_t end, const uint64_t* k, size_t rank,
                         size_t stride) {
  while (begin < end) {
    const size_t mid = begin + (end - begin) / 2;
    if (Compare(keys + mid * stride, k, rank) < 0)
      begin = mid + 1;
    else
      end = mid;
  }
  return begin;
}
inline size_t UpperBound(const uint64_t* keys, size_t begin, size_t end, const uint64_t* k, size_t rank) {
  while (begin < end) {
    const size_t mid = begin + (end - begin) / 2;
    if (Compare(keys + mid * rank, k, rank) <= 0)
      begin = mid + 1;
    else
      end = mid;
  }
  return begin;
}

inline bool InBox(const uint64_t* k, ChunkCoord lo, ChunkCoord hi) {
  for (size_t d = 0; d < lo.size(); ++d)
    if (k[d] < lo[d] || k[d] >= hi[d]) return false;
  return true;
}

// Records the tree can hold at a height, saturating: a root's record count
// above it is a lie.
uint64_t MaxRecords(int height) {
  uint64_t n = BTreeIndex::kMaxEntries;
  for (int h = 0; h < height; ++h) {
    if (n > std::numeric_limits<uint64_t>::max() / BTreeIndex::kMaxEntries) return std::numeric_limits<uint64_t>::max();
    n *= BTreeIndex::kMaxEntries;
  }
  return n;
}

}  // namespace

// A child reference in a node: its block as of its last write (empty for a
// node not written yet) and, once loaded, the node itself, owned. The
// pointer is atomic because concurrent Gets load children lazily; moves
// happen only under exclusive access (Put), so they need no ordering.
struct BTreeIndex::Child {
  BlockRef ref;
  std::atomic<Node*> node{nullptr};

  Child() = default;
  Child(BlockRef r, Node* n) : ref(r), node(n) {}
  Child(Child&& o) noexcept : ref(o.ref), node(o.node.exchange(nullptr, std::memory_order_relaxed)) {}
  Child& operator=(Child&& o) noexcept;
  ~Child();
};

// A node in memory, its entries flat in `keys`, `stride` u64 each. A leaf's
// entry is the key (rank u64), the chunk address and, for filtered
// datasets, size | mask << 32: a lookup finds the address in the cache line
// of the key it matched. A node's entries are its n - 1 separators (child i
// holds the keys in [sep[i-1], sep[i])).
struct BTreeIndex::Node {
  Node(int node_level, size_t entry_words) : level(node_level), stride(entry_words) {}

  const int level;      // 0 = leaf
  const size_t stride;  // u64 per entry of keys
  bool dirty = false;   // differs from its block; then so do all its ancestors
  std::vector<uint64_t> keys;
  std::vector<Child> children;  // node

  size_t size() const { return level == 0 ? keys.size() / stride : children.size(); }
  uint64_t* entry(size_t i) { return keys.data() + i * stride; }
  const uint64_t* entry(size_t i) const { return keys.data() + i * stride; }
};

std::unique_ptr<BTreeIndex::Node> BTreeIndex::NewNode(int level) const {
  return std::make_unique<Node>(level, level == 0 ? leaf_stride_ : rank_);
}

BTreeIndex::Child& BTreeIndex::Child::operator=(Child&& o) noexcept {
  if (this != &o) {
    ref = o.ref;
    delete node.exchange(o.node.exchange(nullptr, std::memory_order_relaxed), std::memory_order_relaxed);
  }
  return *this;
}

BTreeIndex::Child::~Child() { delete node.load(std::memory_order_relaxed); }

BTreeIndex::BTreeIndex(const IndexGeometry& geo, BlockStore* store, std::string what, size_t capacity)
    : geo_(geo),
      rank_(geo.rank()),
      leaf_stride_(geo.rank() + (geo.filtered ? 2 : 1)),
      capacity_(capacity),
      min_fill_(capacity / 4),
      store_(store),
      what_(std::move(what)) {}

BTreeIndex::~BTreeIndex() { delete root_.load(); }

Result<std::unique_ptr<BTreeIndex>> BTreeIndex::Open(const IndexGeometry& geo, std::string_view root, BlockStore* store,
                                                     std::string what, size_t node_capacity) {
  if (geo.rank() < 1 || geo.rank() > static_cast<size_t>(kMaxRank))
    return Err(Status::Corruption(what + ": bad rank for a b-tree index"));
  if (node_capacity < kMinCapacity || node_capacity > kMaxEntries)
    return Err(Status::InvalidArgument(what + ": b-tree node capacity out of range"));
  std::unique_ptr<BTreeIndex> idx(new BTreeIndex(geo, store, std::move(what), node_capacity));
  if (root.empty()) return idx;
  Reader r(root);
  BlockRef ref;
  uint8_t height;
  uint64_t count, disk_bytes;
  if (!r.U64(&ref.addr) || !r.U32(&ref.len) || !r.U8(&height) || !r.U64(&count) || !r.U64(&disk_bytes) || !r.done())
    return Err(Status::Corruption(idx->what_ + ": bad b-tree root"));
  const uint64_t file_end = store->allocator()->file_end();
  if (ref.empty() || height > kMaxHeight || count < (height > 0 ? 2u : 1u) || count > MaxRecords(height) ||
      disk_bytes < ref.len || disk_bytes > file_end)
    return Err(Status::Corruption(idx->what_ + ": b-tree root is inconsistent (height " + std::to_string(height) +
                                  ", " + std::to_string(count) + " records)"));
  SLABFS_RETURN_IF_ERROR_R(CheckBlockRef(ref, file_end, idx->what_ + " b-tree root"));
  idx->root_ref_ = ref;
  idx->height_ = height;
  idx->count_ = count;
  idx->disk_bytes_ = disk_bytes;
  idx->root_bytes_ = std::string(root);
  return idx;
}

// ------------------------------------------------------------ reading nodes

Result<std::unique_ptr<BTreeIndex::Node>> BTreeIndex::ReadNode(const BlockRef& ref, int level, const uint64_t* lo,
                                                               const uint64_t* hi, bool is_root) {
  const bool leaf = level == 0;
  const std::string what = what_ + (leaf ? " b-tree leaf" : " b-tree node");
  SLABFS_ASSIGN_OR_RETURN(std::string payload,
                          store_->Read(ref, leaf ? BlockType::kBTreeLeaf : BlockType::kBTreeNode, what));
  auto bad = [&](std::string_view why) {
    return Err(Status::Corruption(what + " at " + std::to_string(ref.addr) + ": " + std::string(why)));
  };
  Reader r(payload);
  std::unique_ptr<Node> node = NewNode(level);
  if (!leaf) {
    uint8_t stored_level;
    if (!r.U8(&stored_level)) return bad("truncated");
    if (stored_level != level) return bad("level does not match its place in the tree");
  }
  uint16_t count;
  if (!r.U16(&count)) return bad("truncated");
  // A stored node is never empty, and a root node has at least two children
  // (Flush replaces a root with one child by that child).
  if (count == 0 || count > kMaxEntries || (!leaf && is_root && count < 2)) return bad("impossible entry count");
  const uint64_t file_end = store_->allocator()->file_end();
  if (!leaf) {
    node->children.reserve(count);
    for (uint16_t i = 0; i < count; ++i) {
      BlockRef c;
      if (!r.U64(&c.addr) || !r.U32(&c.len)) return bad("truncated");
      if (c.empty()) return bad("missing child");
      SLABFS_RETURN_IF_ERROR_R(CheckBlockRef(c, file_end, what + " child"));
      node->children.emplace_back(c, nullptr);
    }
  }
  const size_t nkeys = leaf ? count : count - 1u;
  node->keys.resize(nkeys * node->stride);
  for (size_t i = 0; i < nkeys; ++i) {
    uint64_t* k = node->entry(i);
    const uint64_t* prev = i > 0 ? k - node->stride : nullptr;
    if (!GetKey(&r, k, prev, rank_)) return bad("truncated");
    if (!geo_.Contains(ChunkCoord(k, rank_))) return bad("key outside the chunk grid");
    // Leaf keys lie in [lo, hi); separators strictly inside (lo, hi), since
    // every child's range holds at least one key.
    if (prev && Compare(prev, k, rank_) >= 0) return bad("keys out of order");
    if (!prev && lo && Compare(lo, k, rank_) >= (leaf ? 1 : 0)) return bad("key below the range its parent gives it");
    if (hi && Compare(k, hi, rank_) >= 0) return bad("key beyond the range its parent gives it");
    if (leaf) {
      ChunkRecord rec;
      if (!GetRecord(&r, &rec, geo_.filtered)) return bad("truncated");
      if (!rec.allocated()) return bad("record of an unallocated chunk");
      SLABFS_RETURN_IF_ERROR_R(CheckRecord(rec, geo_, file_end, what));
      SetRecord(k, rec);
    }
  }
  if (!r.done()) return bad("trailing bytes");
  return node;
}

Result<BTreeIndex::Node*> BTreeIndex::LoadRoot() {
  MutexLock lock(load_mu_);
  Node* n = root_.load(std::memory_order_relaxed);
  if (n) return n;
  SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Node> fresh, ReadNode(root_ref_, height_, nullptr, nullptr, true));
  if (height_ == 0 && fresh->size() != count_)
    return Err(Status::Corruption(what_ + ": b-tree root leaf disagrees with the record count"));
  n = fresh.release();
  root_.store(n, std::memory_order_release);
  return n;
}

Result<BTreeIndex::Node*> BTreeIndex::ChildAt(Node* parent, size_t i, const uint64_t* plo, const uint64_t* phi) {
  Node* n = parent->children[i].node.load(std::memory_order_acquire);
  if (n) return n;
  const size_t seps = parent->children.size() - 1;
  const uint64_t* lo = i > 0 ? parent->keys.data() + (i - 1) * rank_ : plo;
  const uint64_t* hi = i < seps ? parent->keys.data() + i * rank_ : phi;
  MutexLock lock(load_mu_);
  Child& slot = parent->children[i];
  n = slot.node.load(std::memory_order_relaxed);
  if (n) return n;
  SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Node> fresh, ReadNode(slot.ref, parent->level - 1, lo, hi, false));
  n = fresh.release();
  slot.node.store(n, std::memory_order_release);
  return n;
}

Result<BTreeIndex::Node*> BTreeIndex::FindLeaf(const uint64_t* key, const uint64_t** leaf_hi, bool record_path) {
  Node* n = root_.load(std::memory_order_acquire);
  if (!n) {
    if (root_ref_.empty()) return nullptr;
    SLABFS_ASSIGN_OR_RETURN(n, LoadRoot());
  }
  const uint64_t* lo = nullptr;
  const uint64_t* hi = nullptr;
  bool rightmost = true;
  size_t depth = 0;
  if (record_path) path_[0] = PathEntry{n, 0, true, nullptr, nullptr};
  while (n->level > 0) {
    const size_t seps = n->children.size() - 1;
    const size_t i = UpperBound(n->keys.data(), 0, seps, key, rank_);
    const uint64_t* clo = i > 0 ? n->keys.data() + (i - 1) * rank_ : lo;
    const uint64_t* chi = i < seps ? n->keys.data() + i * rank_ : hi;
    Node* child = n->children[i].node.load(std::memory_order_acquire);
    if (!child) {
      SLABFS_ASSIGN_OR_RETURN(child, ChildAt(n, i, lo, hi));
    }
    n = child;
    lo = clo;
    hi = chi;
    rightmost = rightmost && i == seps;
    if (record_path) path_[++depth] = PathEntry{n, i, rightmost, lo, hi};
  }
  if (leaf_hi) *leaf_hi = hi;
  return n;
}

ChunkRecord BTreeIndex::RecordAt(const Node& leaf, size_t i) const {
  const uint64_t* e = leaf.entry(i);
  ChunkRecord rec;
  rec.addr = e[rank_];
  if (geo_.filtered) {
    rec.size = static_cast<uint32_t>(e[rank_ + 1]);
    rec.filter_mask = static_cast<uint32_t>(e[rank_ + 1] >> 32);
  }
  return rec;
}

void BTreeIndex::SetRecord(uint64_t* entry, const ChunkRecord& rec) const {
  entry[rank_] = rec.addr;
  if (geo_.filtered) entry[rank_ + 1] = rec.size | (uint64_t{rec.filter_mask} << 32);
}

// ------------------------------------------------------------ lookups

Result<ChunkRecord> BTreeIndex::Get(ChunkCoord c) {
  if (!geo_.Contains(c)) return Err(Status::InvalidArgument(what_ + ": chunk coordinates outside the chunk grid"));
  SLABFS_ASSIGN_OR_RETURN(Node * leaf, FindLeaf(c.data(), nullptr, false));
  if (!leaf) return ChunkRecord{};
  const size_t n = leaf->size();
  const size_t pos = LowerBound(leaf->keys.data(), 0, n, c.data(), rank_, leaf_stride_);
  if (pos == n || Compare(leaf->entry(pos), c.data(), rank_) != 0) return ChunkRecord{};
  return RecordAt(*leaf, pos);
}

Status BTreeIndex::ForEachIn(ChunkCoord lo, ChunkCoord hi, const Visitor& fn) {
  return Walk(lo, hi, [&fn](ChunkCoord c, const ChunkRecord& rec) -> Result<bool> {
    SLABFS_RETURN_IF_ERROR_R(fn(c, rec));
    return true;
  });
}

Status BTreeIndex::ForEachInOrder(ChunkCoord lo, ChunkCoord hi, const OrderedVisitor& fn) { return Walk(lo, hi, fn); }

// One walk for both: a template, so that ForEachIn's visitor is not called
// through a second std::function per record.
template <typename F>
Status BTreeIndex::Walk(ChunkCoord lo, ChunkCoord hi, const F& fn) {
  if (lo.size() != rank_ || hi.size() != rank_) return Status::InvalidArgument(what_ + ": range of the wrong rank");
  for (size_t d = 0; d < rank_; ++d)
    if (lo[d] >= hi[d]) return Status::OK();
  // The next key worth visiting: the smallest key inside the box not yet
  // passed. Each round finds its leaf from the root and walks the leaf.
  std::vector<uint64_t> target(lo.begin(), lo.end());
  for (;;) {
    const uint64_t* leaf_hi = nullptr;
    SLABFS_ASSIGN_OR_RETURN(Node * leaf, FindLeaf(target.data(), &leaf_hi, false));
    if (!leaf) return Status::OK();
    const size_t n = leaf->size();
    size_t pos = LowerBound(leaf->keys.data(), 0, n, target.data(), rank_, leaf_stride_);
    bool left_leaf = false;
    while (pos < n) {
      const uint64_t* k = leaf->entry(pos);
      if (InBox(k, lo, hi)) {
        SLABFS_ASSIGN_OR_RETURN(bool go, fn(ChunkCoord(k, rank_), RecordAt(*leaf, pos)));
        if (!go) return Status::OK();
        ++pos;
        continue;
      }
      if (!SeekInBox(k, lo, hi, target.data())) return Status::OK();
      if (leaf_hi && Compare(target.data(), leaf_hi, rank_) >= 0) {
        left_leaf = true;
        break;
      }
      pos = LowerBound(leaf->keys.data(), pos + 1, n, target.data(), rank_, leaf_stride_);
    }
    if (left_leaf) continue;
    if (!leaf_hi) return Status::OK();
    if (!SeekInBox(leaf_hi, lo, hi, target.data())) return Status::OK();
  }
}

// ------------------------------------------------------------ changes

void BTreeIndex::MarkPathDirty() {
  for (int d = 0; d <= height_; ++d) path_[d].node->dirty = true;
  dirty_ = true;
}

void BTreeIndex::Retire(const BlockRef& ref) {
  if (!ref.empty()) dead_.push_back(ref);
}

Status BTreeIndex::Put(ChunkCoord c, const ChunkRecord& rec) {
  if (!geo_.Contains(c)) return Status::InvalidArgument(what_ + ": chunk coordinates outside the chunk grid");
  // Refuse now what could not be read back.
  Status valid = CheckRecord(rec, geo_, store_->allocator()->file_end(), what_);
  if (!valid.ok()) return Status::InvalidArgument(valid.message());

  if (!root_.load(std::memory_order_relaxed) && root_ref_.empty()) {
    if (!rec.allocated()) return Status::OK();
    std::unique_ptr<Node> leaf = NewNode(0);
    leaf->dirty = true;
    leaf->keys.resize(leaf_stride_);
    std::copy(c.begin(), c.end(), leaf->keys.begin());
    SetRecord(leaf->entry(0), rec);
    root_.store(leaf.release(), std::memory_order_release);
    height_ = 0;
    count_ = 1;
    dirty_ = true;
    return Status::OK();
  }
  SLABFS_ASSIGN_OR_RETURN(Node * leaf, FindLeaf(c.data(), nullptr, true));
  const size_t n = leaf->size();
  const size_t pos = LowerBound(leaf->keys.data(), 0, n, c.data(), rank_, leaf_stride_);
  const bool found = pos < n && Compare(leaf->entry(pos), c.data(), rank_) == 0;
  if (!rec.allocated()) return found ? Remove(pos) : Status::OK();
  if (!found) return Insert(pos, c.data(), rec);
  if (RecordAt(*leaf, pos) == rec) return Status::OK();
  SetRecord(leaf->entry(pos), rec);
  MarkPathDirty();
  return Status::OK();
}

Status BTreeIndex::Insert(size_t pos, const uint64_t* key, const ChunkRecord& rec) {
  const int h = height_;
  // The tree grows a level only when every node on the path is full.
  bool grows = true;
  for (int d = 0; d <= h && grows; ++d) grows = path_[d].node->size() >= capacity_;
  if (grows && h >= kMaxHeight) return Status::NotSupported(what_ + ": b-tree index is too tall");

  Node* leaf = path_[h].node;
  std::array<uint64_t, kMaxRank + 2> entry;
  std::copy(key, key + rank_, entry.begin());
  SetRecord(entry.data(), rec);
  leaf->keys.insert(leaf->keys.begin() + static_cast<ptrdiff_t>(pos * leaf_stride_), entry.begin(),
                    entry.begin() + static_cast<ptrdiff_t>(leaf_stride_));
  ++count_;
  MarkPathDirty();

  // Split upwards while a node is over capacity. `at_end`: the new entry is
  // the node's last one.
  bool at_end = pos + 1 == leaf->size();
  for (int d = h; d >= 0; --d) {
    Node* node = path_[d].node;
    const size_t total = node->size();
    if (total <= capacity_) break;
    // A sequential append keeps the left node full; anything else halves.
    const size_t keep = at_end && path_[d].rightmost ? capacity_ : total / 2;
    std::unique_ptr<Node> right = NewNode(node->level);
    right->dirty = true;
    std::vector<uint64_t> sep;
    const auto cut = static_cast<ptrdiff_t>(keep * node->stride);
    if (node->level == 0) {
      // Room for a full leaf at once: an append fills it one entry at a
      // time, and growing by doubling would leave half of it unused.
      right->keys.reserve((capacity_ + 1) * leaf_stride_);
      right->keys.assign(node->keys.begin() + cut, node->keys.end());
      node->keys.resize(keep * leaf_stride_);
      sep.assign(right->keys.begin(), right->keys.begin() + static_cast<ptrdiff_t>(rank_));
    } else {
      // Children [keep, total) move right; the separator between the halves
      // moves up.
      right->children.reserve(total - keep);
      for (size_t i = keep; i < total; ++i) right->children.push_back(std::move(node->children[i]));
      node->children.resize(keep);
      sep.assign(node->keys.begin() + cut - static_cast<ptrdiff_t>(rank_), node->keys.begin() + cut);
      right->keys.assign(node->keys.begin() + cut, node->keys.end());
      node->keys.resize((keep - 1) * rank_);
    }
    if (d == 0) {
      std::unique_ptr<Node> top = NewNode(node->level + 1);
      top->dirty = true;
      top->keys = std::move(sep);
      top->children.reserve(2);
      top->children.emplace_back(root_ref_, node);
      top->children.emplace_back(BlockRef{}, right.release());
      root_ref_ = BlockRef{};
      root_.store(top.release(), std::memory_order_release);
      ++height_;
      break;
    }
    Node* parent = path_[d - 1].node;
    const size_t i = path_[d].idx;
    parent->keys.insert(parent->keys.begin() + static_cast<ptrdiff_t>(i * rank_), sep.begin(), sep.end());
    parent->children.emplace(parent->children.begin() + static_cast<ptrdiff_t>(i + 1), BlockRef{}, right.release());
    at_end = i + 2 == parent->children.size();
  }
  return Status::OK();
}

Status BTreeIndex::Remove(size_t pos) {
  const int h = height_;
  // First decide how each level is repaired, reading the siblings that
  // takes: a read can fail, and nothing may change before every read is done.
  enum class Fix : uint8_t { kNone, kMerge, kEvenOut, kDrop };
  std::array<Fix, kMaxHeight + 1> fix;
  std::array<size_t, kMaxHeight + 1> left{};
  fix.fill(Fix::kNone);
  size_t new_size = path_[h].node->size() - 1;
  for (int d = h; d > 0; --d) {
    if (new_size >= min_fill_) break;  // min_fill_ >= 1
    Node* parent = path_[d - 1].node;
    const size_t i = path_[d].idx;
    if (parent->children.size() == 1) {
      if (new_size > 0) break;  // underfull but alone: it stays
      fix[d] = Fix::kDrop;
      new_size = 0;
      continue;
    }
    const size_t s = i > 0 ? i - 1 : i + 1;
    SLABFS_ASSIGN_OR_RETURN(Node * sibling, ChildAt(parent, s, path_[d - 1].lo, path_[d - 1].hi));
    left[d] = std::min(i, s);
    if (new_size + sibling->size() <= capacity_) {
      fix[d] = Fix::kMerge;
      new_size = parent->children.size() - 1;
      continue;
    }
    fix[d] = Fix::kEvenOut;
    break;
  }

  Node* leaf = path_[h].node;
  leaf->keys.erase(leaf->keys.begin() + static_cast<ptrdiff_t>(pos * leaf_stride_),
                   leaf->keys.begin() + static_cast<ptrdiff_t>((pos + 1) * leaf_stride_));
  --count_;
  MarkPathDirty();
  for (int d = h; d > 0 && fix[d] != Fix::kNone; --d) {
    Node* parent = path_[d - 1].node;
    switch (fix[d]) {
      case Fix::kDrop:
        Retire(parent->children[0].ref);
        parent->children.clear();
        break;
      case Fix::kMerge: MergeChildren(parent, left[d]); break;
      case Fix::kEvenOut: EvenOutChildren(parent, left[d]); break;
      case Fix::kNone: break;
    }
  }
  Node* root = path_[0].node;
  if (root->size() == 0) {
    Retire(root_ref_);
    root_ref_ = BlockRef{};
    root_.store(nullptr, std::memory_order_release);
    delete root;
    height_ = 0;
  }
  return Status::OK();
}

// Children left and left + 1 (both loaded) become one node, left.
void BTreeIndex::MergeChildren(Node* parent, size_t left) {
  Node* l = parent->children[left].node.load(std::memory_order_relaxed);
  Node* r = parent->children[left + 1].node.load(std::memory_order_relaxed);
  const auto sep = parent->keys.begin() + static_cast<ptrdiff_t>(left * rank_);
  if (l->level == 0) {
    l->keys.insert(l->keys.end(), r->keys.begin(), r->keys.end());
  } else {
    // The parent's separator goes between the two halves, unless one is a
    // node left empty (no children, so no separators either).
    if (!l->children.empty() && !r->children.empty())
      l->keys.insert(l->keys.end(), sep, sep + static_cast<ptrdiff_t>(rank_));
    l->keys.insert(l->keys.end(), r->keys.begin(), r->keys.end());
    l->children.reserve(l->children.size() + r->children.size());
    for (Child& c : r->children) l->children.push_back(std::move(c));
  }
  l->dirty = true;
  parent->keys.erase(sep, sep + static_cast<ptrdiff_t>(rank_));
  Retire(parent->children[left + 1].ref);
  parent->children.erase(parent->children.begin() + static_cast<ptrdiff_t>(left + 1));  // deletes r
}

// Children left and left + 1 (both loaded, too many for one node) share
// their entries evenly.
void BTreeIndex::EvenOutChildren(Node* parent, size_t left) {
  Node* l = parent->children[left].node.load(std::memory_order_relaxed);
  Node* r = parent->children[left + 1].node.load(std::memory_order_relaxed);
  const size_t total = l->size() + r->size();
  const size_t keep = total / 2;
  uint64_t* sep = parent->keys.data() + left * rank_;
  if (l->level == 0) {
    const size_t left_size = l->size();
    if (left_size > keep) {  // l's tail moves to the front of r
      const auto from = l->keys.begin() + static_cast<ptrdiff_t>(keep * leaf_stride_);
      r->keys.insert(r->keys.begin(), from, l->keys.end());
      l->keys.erase(from, l->keys.end());
    } else {  // r's head moves to the end of l
      const auto to = r->keys.begin() + static_cast<ptrdiff_t>((keep - left_size) * leaf_stride_);
      l->keys.insert(l->keys.end(), r->keys.begin(), to);
      r->keys.erase(r->keys.begin(), to);
    }
    std::copy(r->keys.begin(), r->keys.begin() + static_cast<ptrdiff_t>(rank_), sep);
  } else {
    // Lay both out as one node (the parent's separator between them), then
    // cut it at `keep` children.
    std::vector<uint64_t> seps(l->keys);
    seps.insert(seps.end(), sep, sep + rank_);
    seps.insert(seps.end(), r->keys.begin(), r->keys.end());
    std::vector<Child> kids;
    kids.reserve(total);
    for (Child& c : l->children) kids.push_back(std::move(c));
    for (Child& c : r->children) kids.push_back(std::move(c));
    l->children.clear();
    r->children.clear();
    for (size_t i = 0; i < total; ++i) (i < keep ? l : r)->children.push_back(std::move(kids[i]));
    const auto cut = seps.begin() + static_cast<ptrdiff_t>(keep * rank_);
    l->keys.assign(seps.begin(), cut - static_cast<ptrdiff_t>(rank_));
    std::copy(cut - static_cast<ptrdiff_t>(rank_), cut, sep);
    r->keys.assign(cut, seps.end());
  }
  l->dirty = true;
  r->dirty = true;
}

// ------------------------------------------------------------ writing

std::string BTreeIndex::EncodeNode(const Node& n) const {
  std::string p;
  const bool leaf = n.level == 0;
  const size_t count = n.size();
  p.reserve(3 + count * (leaf ? 2 * rank_ + RecordBytes(geo_.filtered) : 12 + 2 * rank_));
  if (!leaf) PutU8(&p, static_cast<uint8_t>(n.level));
  PutU16(&p, static_cast<uint16_t>(count));
  if (!leaf) {
    for (const Child& c : n.children) {
      PutU64(&p, c.ref.addr);
      PutU32(&p, c.ref.len);
    }
  }
  const size_t nkeys = leaf ? count : count - 1;
  for (size_t i = 0; i < nkeys; ++i) {
    const uint64_t* k = n.entry(i);
    PutKey(&p, k, i > 0 ? k - n.stride : nullptr, rank_);
    if (leaf) PutRecord(&p, RecordAt(n, i), geo_.filtered);
  }
  return p;
}

// Post-order, so a parent is written after its children and holds their new
// references. A node written is clean at once: if a later write fails, a
// retried Flush writes only what is still dirty (its ancestors among them).
Status BTreeIndex::WriteDirty(Node* n, BlockRef* slot) {
  if (n->level > 0) {
    for (Child& c : n->children) {
      Node* child = c.node.load(std::memory_order_relaxed);
      if (child && child->dirty) SLABFS_RETURN_IF_ERROR(WriteDirty(child, &c.ref));
    }
  }
  const std::string payload = EncodeNode(*n);
  SLABFS_ASSIGN_OR_RETURN(BlockRef ref,
                          store_->Write(n->level == 0 ? BlockType::kBTreeLeaf : BlockType::kBTreeNode, payload));
  if (!slot->empty()) {
    disk_bytes_ -= slot->len;
    store_->Free(*slot);
  }
  disk_bytes_ += ref.len;
  *slot = ref;
  n->dirty = false;
  return Status::OK();
}

std::string BTreeIndex::EncodeRootBytes() const {
  std::string s;
  s.reserve(kRootBytes);
  PutU64(&s, root_ref_.addr);
  PutU32(&s, root_ref_.len);
  PutU8(&s, static_cast<uint8_t>(height_));
  PutU64(&s, count_);
  PutU64(&s, disk_bytes_);
  return s;
}

Status BTreeIndex::Flush() {
  if (!dirty_) return Status::OK();
  // Removals can leave a root with one child; the child takes its place
  // (reading it may fail, which leaves the tree as it was).
  Node* root = root_.load(std::memory_order_relaxed);
  while (root && root->level > 0 && root->children.size() == 1) {
    SLABFS_ASSIGN_OR_RETURN(Node * child, ChildAt(root, 0, nullptr, nullptr));
    Child& only = root->children[0];
    Retire(root_ref_);
    root_ref_ = only.ref;
    only.node.store(nullptr, std::memory_order_relaxed);  // detach before deleting the old root
    root_.store(child, std::memory_order_release);
    delete root;
    root = child;
    --height_;
  }
  if (root && root->dirty) SLABFS_RETURN_IF_ERROR(WriteDirty(root, &root_ref_));
  // The blocks of removed nodes go last: until here a failed Flush keeps
  // them listed for the retry.
  for (const BlockRef& b : dead_) {
    disk_bytes_ -= b.len;
    store_->Free(b);
  }
  dead_.clear();
  root_bytes_ = root_ref_.empty() ? std::string() : EncodeRootBytes();
  dirty_ = false;
  return Status::OK();
}

// Every child reference below n; reads the nodes above the leaves (the
// leaves' references are in their parents).
Status BTreeIndex::CollectRefs(Node* n, const uint64_t* lo, const uint64_t* hi, std::vector<BlockRef>* refs) {
  if (n->level == 0) return Status::OK();
  const size_t seps = n->children.size() - 1;
  for (size_t i = 0; i < n->children.size(); ++i) {
    if (!n->children[i].ref.empty()) refs->push_back(n->children[i].ref);
    if (n->level == 1) continue;
    SLABFS_ASSIGN_OR_RETURN(Node * child, ChildAt(n, i, lo, hi));
    SLABFS_RETURN_IF_ERROR(CollectRefs(child, i > 0 ? n->keys.data() + (i - 1) * rank_ : lo,
                                       i < seps ? n->keys.data() + i * rank_ : hi, refs));
  }
  return Status::OK();
}

Status BTreeIndex::Destroy() {
  std::vector<BlockRef> refs = dead_;
  if (!root_ref_.empty()) refs.push_back(root_ref_);
  Node* root = root_.load(std::memory_order_relaxed);
  // A leaf root is its own block and need not be read, so a dataset whose
  // only index block is damaged can still be deleted.
  if (!root && !root_ref_.empty() && height_ > 0) {
    SLABFS_ASSIGN_OR_RETURN(root, LoadRoot());
  }
  if (root) SLABFS_RETURN_IF_ERROR(CollectRefs(root, nullptr, nullptr, &refs));
  // A damaged tree could name one block twice; freeing it twice would
  // corrupt the free list, so such a tree frees nothing.
  std::sort(refs.begin(), refs.end(), [](const BlockRef& a, const BlockRef& b) { return a.addr < b.addr; });
  for (size_t i = 1; i < refs.size(); ++i)
    if (refs[i - 1].addr + refs[i - 1].len > refs[i].addr) return Status::Corruption(what_ + ": b-tree blocks overlap");
  for (const BlockRef& b : refs) store_->Free(b);
  delete root_.exchange(nullptr);
  root_ref_ = BlockRef{};
  height_ = 0;
  count_ = 0;
  disk_bytes_ = 0;
  dirty_ = false;
  dead_.clear();
  root_bytes_.clear();
  return Status::OK();
}

Status BTreeIndex::CollectBlocks(std::vector<BlockRef>* out) {
  if (root_ref_.empty()) return Status::OK();
  out->push_back(root_ref_);
  if (height_ == 0) return Status::OK();
  SLABFS_ASSIGN_OR_RETURN(Node * root, LoadRoot());
  return CollectRefs(root, nullptr, nullptr, out);
}

}  // namespace slabfs::engine
