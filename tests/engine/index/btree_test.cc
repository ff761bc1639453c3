// What only the B-tree chunk index does (index_conformance_test.cc holds
// what every kind does): against a std::map reference over ranks 1 to 4
// with small node capacities for tall trees (splits, merges, evening out);
// the fill of sequential appends; the exact cost of a Flush; retried
// flushes, Destroy and concurrent Gets on tall trees; every byte flip of a
// leaf and a node; hand-built hostile blocks and roots.
#include "engine/index/btree.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/format/layout.h"
#include "engine/util/coding.h"
#include "tests/testutil/fault_file.h"
#include "tests/testutil/index_env.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::engine {
namespace {
namespace btree_test {  // its own names in a unity batch

using Index = BTreeIndex;
using Key = std::vector<uint64_t>;
using Reference = std::map<Key, ChunkRecord>;  // std::map's order is C order

constexpr uint64_t U = kUnlimited;
constexpr uint64_t kDataRegion = 1 << 20;  // where chunk addresses point
constexpr uint64_t kMaxStored = 4096;      // filtered datasets: largest stored chunk
constexpr size_t kRootBytes = 8 + 4 + 1 + 8 + 8;
constexpr size_t kCap = Index::kMaxEntries;

IndexGeometry Geo(Dims max_grid, bool filtered = false) {
  IndexGeometry g;
  g.max_grid = std::move(max_grid);
  g.filtered = filtered;
  g.max_chunk_bytes = filtered ? kMaxStored : 0;
  return g;
}

// ------------------------------------------------------------ the format, written independently

void PutVarint(std::string* dst, uint64_t v) {
  for (; v >= 0x80; v >>= 7) dst->push_back(static_cast<char>(0x80 | (v & 0x7f)));
  dst->push_back(static_cast<char>(v));
}
uint64_t ZigZag(int64_t v) { return v < 0 ? ~(static_cast<uint64_t>(v) << 1) : static_cast<uint64_t>(v) << 1; }

void PutKey(std::string* p, const Key& k, const Key* prev) {
  for (size_t d = 0; d < k.size(); ++d) PutVarint(p, prev ? ZigZag(static_cast<int64_t>(k[d] - (*prev)[d])) : k[d]);
}

// A leaf payload: u16 count, then count x (key, record). `count` may lie.
std::string LeafPayload(const std::vector<Key>& keys, const std::vector<ChunkRecord>& recs, bool filtered,
                        int count = -1) {
  std::string p;
  PutU16(&p, static_cast<uint16_t>(count < 0 ? keys.size() : static_cast<size_t>(count)));
  for (size_t i = 0; i < keys.size(); ++i) {
    PutKey(&p, keys[i], i > 0 ? &keys[i - 1] : nullptr);
    PutU64(&p, recs[i].addr);
    if (filtered) {
      PutU32(&p, recs[i].size);
      PutU32(&p, recs[i].filter_mask);
    }
  }
  return p;
}

// A node payload: u8 level, u16 count, count x (u64 addr, u32 len), then
// (count - 1) separator keys.
std::string NodePayload(uint8_t level, const std::vector<BlockRef>& children, const std::vector<Key>& seps,
                        int count = -1) {
  std::string p;
  PutU8(&p, level);
  PutU16(&p, static_cast<uint16_t>(count < 0 ? children.size() : static_cast<size_t>(count)));
  for (const BlockRef& c : children) {
    PutU64(&p, c.addr);
    PutU32(&p, c.len);
  }
  for (size_t i = 0; i < seps.size(); ++i) PutKey(&p, seps[i], i > 0 ? &seps[i - 1] : nullptr);
  return p;
}

std::string MakeRoot(BlockRef ref, int height, uint64_t records, uint64_t disk_bytes) {
  std::string s;
  PutU64(&s, ref.addr);
  PutU32(&s, ref.len);
  PutU8(&s, static_cast<uint8_t>(height));
  PutU64(&s, records);
  PutU64(&s, disk_bytes);
  return s;
}

struct Root {
  BlockRef ref;
  int height = 0;
  uint64_t records = 0;
  uint64_t disk_bytes = 0;
};

Root ParseRoot(const std::string& s) {
  Root r;
  EXPECT_EQ(s.size(), kRootBytes);
  if (s.size() != kRootBytes) return r;
  r.ref.addr = LoadU64(s.data());
  r.ref.len = LoadU32(s.data() + 8);
  r.height = static_cast<uint8_t>(s[12]);
  r.records = LoadU64(s.data() + 13);
  r.disk_bytes = LoadU64(s.data() + 21);
  return r;
}

uint16_t LoadU16(const std::string& s, size_t at) {
  return static_cast<uint16_t>(static_cast<uint8_t>(s[at]) | (static_cast<uint8_t>(s[at + 1]) << 8));
}

// Flips one byte of the file; restores it when it goes out of scope.
class ByteFlip {
 public:
  ByteFlip(testutil::Disk* disk, uint64_t at, char mask) : disk_(disk), at_(at), mask_(mask) {
    disk_->current[at_] ^= mask_;
  }
  ~ByteFlip() { disk_->current[at_] ^= mask_; }

 private:
  testutil::Disk* disk_;
  uint64_t at_;
  char mask_;
};

Status VisitNothing(ChunkCoord, const ChunkRecord&) { return Status::OK(); }

class BTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    alloc_.Reset(kDataStart, {});
    // Chunk data lives here; index blocks come after it.
    data_begin_ = alloc_.Allocate(kDataRegion, 4096);
    data_end_ = data_begin_ + kDataRegion;
    alloc_.MarkDurable();
  }

  std::unique_ptr<Index> Open(const IndexGeometry& geo, std::string_view root = {}, size_t capacity = kCap) {
    auto r = Index::Open(geo, root, &store_, "dataset 7", capacity);
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r ? std::move(*r) : nullptr;
  }

  ChunkRecord Rec(uint64_t i, bool filtered = false) {
    ChunkRecord r;
    r.addr = data_begin_ + 8 * (i % ((kDataRegion - kMaxStored) / 8));
    if (filtered) {
      r.size = static_cast<uint32_t>(1 + i % kMaxStored);
      r.filter_mask = static_cast<uint32_t>(i * 2654435761u);
    }
    return r;
  }
  ChunkRecord RandomRec(std::mt19937_64& rng, bool filtered) {
    return Rec(std::uniform_int_distribution<uint64_t>(0, uint64_t{1} << 40)(rng), filtered);
  }

  // Index bytes on disk, from the allocator's point of view.
  uint64_t LiveBytesAfterData() { return testutil::LiveBytesAfter(alloc_, data_end_); }
  using WriteStats = testutil::WriteStats;
  WriteStats TakeWrites() { return testutil::TakeWrites(*disk_, file_); }

  // The stored tree, read block by block: per level (0 = leaves), in key
  // order, each node's block and entry count, and whether it is the last
  // node of its level.
  struct Shape {
    int height = -1;
    std::vector<std::vector<BlockRef>> refs;
    std::vector<std::vector<size_t>> sizes;
    uint64_t bytes = 0;
    uint64_t records = 0;
  };
  void WalkNode(BlockRef ref, int level, Shape* s) {
    const bool leaf = level == 0;
    auto payload = store_.Read(ref, leaf ? BlockType::kBTreeLeaf : BlockType::kBTreeNode, "walk");
    ASSERT_TRUE(payload.has_value()) << payload.error().ToString();
    s->bytes += ref.len;
    s->refs[level].push_back(ref);
    if (leaf) {
      size_t n = LoadU16(*payload, 0);
      s->sizes[0].push_back(n);
      s->records += n;
      return;
    }
    ASSERT_EQ(static_cast<uint8_t>((*payload)[0]), level);
    size_t n = LoadU16(*payload, 1);
    s->sizes[level].push_back(n);
    for (size_t i = 0; i < n; ++i) {
      BlockRef c{LoadU64(payload->data() + 3 + 12 * i), LoadU32(payload->data() + 3 + 12 * i + 8)};
      WalkNode(c, level - 1, s);
    }
  }
  Shape Walk(const std::string& root) {
    Shape s;
    if (root.empty()) return s;
    Root r = ParseRoot(root);
    s.height = r.height;
    s.refs.resize(r.height + 1);
    s.sizes.resize(r.height + 1);
    WalkNode(r.ref, r.height, &s);
    return s;
  }

  // Get of every key in the reference and of some absent keys; ForEach in
  // key order equals the reference.
  void ExpectMatches(Index* idx, const Reference& ref, std::mt19937_64* rng = nullptr) {
    for (const auto& [k, rec] : ref) {
      auto r = idx->Get(k);
      ASSERT_TRUE(r.has_value()) << r.error().ToString();
      ASSERT_EQ(*r, rec) << testing::PrintToString(k);
    }
    if (rng) {
      const IndexGeometry& geo = idx->geometry();
      for (int i = 0; i < 200; ++i) {
        Key k(geo.rank());
        for (size_t d = 0; d < k.size(); ++d)
          k[d] = std::uniform_int_distribution<uint64_t>(0, std::min<uint64_t>(geo.max_grid[d], 40) - 1)(*rng);
        auto r = idx->Get(k);
        ASSERT_TRUE(r.has_value()) << r.error().ToString();
        auto it = ref.find(k);
        ASSERT_EQ(*r, it == ref.end() ? ChunkRecord{} : it->second) << testing::PrintToString(k);
      }
    }
    Reference seen;
    Key last;
    ASSERT_OK(idx->ForEach([&](ChunkCoord c, const ChunkRecord& rec) -> Status {
      Key k(c.begin(), c.end());
      EXPECT_TRUE(last.empty() || last < k) << "out of order at " << testing::PrintToString(k);
      last = k;
      seen[k] = rec;
      return Status::OK();
    }));
    EXPECT_EQ(seen.size(), ref.size());
    EXPECT_TRUE(seen == ref);
    EXPECT_EQ(idx->records(), ref.size());
  }

  // ForEachIn(lo, hi) against the reference filtered to the box.
  void ExpectBox(Index* idx, const Reference& ref, const Key& lo, const Key& hi) {
    std::vector<std::pair<Key, ChunkRecord>> want, got;
    for (const auto& [k, rec] : ref) {
      bool in = true;
      for (size_t d = 0; d < k.size(); ++d) in = in && k[d] >= lo[d] && k[d] < hi[d];
      if (in) want.emplace_back(k, rec);
    }
    ASSERT_OK(idx->ForEachIn(lo, hi, [&](ChunkCoord c, const ChunkRecord& rec) -> Status {
      got.emplace_back(Key(c.begin(), c.end()), rec);
      return Status::OK();
    }));
    ASSERT_EQ(got.size(), want.size()) << testing::PrintToString(lo) << " " << testing::PrintToString(hi);
    EXPECT_TRUE(got == want) << testing::PrintToString(lo) << " " << testing::PrintToString(hi);
  }

  // Every stored node is well formed (the walk asserts levels), the counts
  // add up, and the allocator agrees on the bytes.
  void ExpectStoredTree(Index* idx, const Reference& ref) {
    Shape s = Walk(idx->EncodeRoot());
    EXPECT_EQ(s.records, ref.size());
    EXPECT_EQ(s.bytes, idx->disk_bytes());
    EXPECT_EQ(idx->disk_bytes(), LiveBytesAfterData());
    if (!ref.empty()) {
      EXPECT_EQ(ParseRoot(idx->EncodeRoot()).records, ref.size());
      EXPECT_EQ(s.height, idx->height());
    }
  }

  std::shared_ptr<testutil::Disk> disk_ = std::make_shared<testutil::Disk>();
  testutil::FaultFile file_{disk_};
  Allocator alloc_;
  BlockStore store_{&file_, &alloc_};
  uint64_t data_begin_ = 0, data_end_ = 0;
};

// ------------------------------------------------------------ basics

TEST_F(BTreeTest, RejectsCoordinatesOutsideTheGrid) {
  auto idx = Open(Geo({U, 10, U}));
  for (const Key& k : {Key{0, 10, 0}, Key{5, ~uint64_t{0}, 5}, Key{1, 2}, Key{1, 2, 3, 4}, Key{}}) {
    SCOPED_TRACE(testing::PrintToString(k));
    EXPECT_CODE(idx->Get(k), Code::kInvalidArgument);
    EXPECT_CODE(idx->Put(k, Rec(1)), Code::kInvalidArgument);
  }
  auto r = idx->Get(Key{0, 10, 0});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("dataset 7"), std::string::npos) << r.error().message();
  EXPECT_FALSE(idx->dirty());
  EXPECT_CODE(idx->ForEachIn(Key{0, 0}, Key{1, 1}, VisitNothing), Code::kInvalidArgument);
}

TEST_F(BTreeTest, RejectsRecordsItCouldNotReadBack) {
  auto plain = Open(Geo({U, U}));
  auto filtered = Open(Geo({U, U}, true));
  const Key k{1, 1};
  EXPECT_CODE(plain->Put(k, {data_begin_, 100, 0}), Code::kInvalidArgument);      // size without filters
  EXPECT_CODE(plain->Put(k, {data_begin_, 0, 1}), Code::kInvalidArgument);        // mask without filters
  EXPECT_CODE(plain->Put(k, {kDataStart - 8, 0, 0}), Code::kInvalidArgument);     // before the data
  EXPECT_CODE(plain->Put(k, {alloc_.file_end(), 0, 0}), Code::kInvalidArgument);  // past the end
  EXPECT_CODE(plain->Put(k, {0, 5, 0}), Code::kInvalidArgument);                  // unallocated with a size
  EXPECT_CODE(filtered->Put(k, {data_begin_, 0, 0}), Code::kInvalidArgument);     // stored size 0
  EXPECT_CODE(filtered->Put(k, {data_begin_, kMaxStored + 1, 0}), Code::kInvalidArgument);
  EXPECT_FALSE(plain->dirty());
  EXPECT_FALSE(filtered->dirty());
  EXPECT_OK(filtered->Put(k, {data_begin_, kMaxStored, 0xffffffffu}));
}

TEST_F(BTreeTest, RejectsBadGeometryAndCapacity) {
  EXPECT_CODE(Index::Open(Geo({}), "", &store_, "d"), Code::kCorruption);
  EXPECT_CODE(Index::Open(Geo(Dims(33, U)), "", &store_, "d"), Code::kCorruption);
  EXPECT_CODE(Index::Open(Geo({U, U}), "", &store_, "d", 3), Code::kInvalidArgument);
  EXPECT_CODE(Index::Open(Geo({U, U}), "", &store_, "d", 257), Code::kInvalidArgument);
  EXPECT_OK(Index::Open(Geo(Dims(32, U)), "", &store_, "d"));
}

TEST_F(BTreeTest, PutOfAnUnallocatedRecordRemovesTheKey) {
  auto idx = Open(Geo({U, U}));
  Reference ref = {{{1, 2}, Rec(1)}, {{1, 3}, Rec(2)}, {{7, 0}, Rec(3)}};
  for (const auto& [k, r] : ref) ASSERT_OK(idx->Put(k, r));
  ASSERT_OK(idx->Flush());
  // Removing an absent key and rewriting a record unchanged change nothing.
  ASSERT_OK(idx->Put(Key{1, 4}, {}));
  ASSERT_OK(idx->Put(Key{1, 3}, Rec(2)));
  EXPECT_FALSE(idx->dirty());
  ASSERT_OK(idx->Put(Key{1, 3}, {}));
  EXPECT_TRUE(idx->dirty());
  ref.erase({1, 3});
  ExpectMatches(idx.get(), ref);
  ASSERT_OK(idx->Flush());
  auto again = Open(Geo({U, U}), idx->EncodeRoot());
  ExpectMatches(again.get(), ref);
}

TEST_F(BTreeTest, OpenChunkIndexOpensBTrees) {
  auto idx = Open(Geo({U, U}));
  ASSERT_OK(idx->Put(Key{9, 9}, Rec(5)));
  ASSERT_OK(idx->Flush());
  ASSERT_OK_AND_ASSIGN(auto generic, OpenChunkIndex(IndexKind::kBTree, Geo({U, U}), idx->EncodeRoot(), &store_, "d"));
  EXPECT_EQ(generic->kind(), IndexKind::kBTree);
  ASSERT_OK_AND_ASSIGN(ChunkRecord rec, generic->Get(Key{9, 9}));
  EXPECT_EQ(rec, Rec(5));
}

// ------------------------------------------------------------ the bytes on disk

TEST_F(BTreeTest, WritesTheDocumentedLeafAndNodeFormat) {
  // Capacity 4: six records make two leaves (4 + 2: the last insert is an
  // append) under one node.
  const std::vector<Key> keys = {{0, 0}, {0, 1}, {0, 300}, {1, 0}, {1, 1}, {~uint64_t{0} - 1, 0}};
  auto idx = Open(Geo({U, U}), {}, 4);
  for (size_t i = 0; i < keys.size(); ++i) ASSERT_OK(idx->Put(keys[i], Rec(i)));
  ASSERT_OK(idx->Flush());
  Root root = ParseRoot(idx->EncodeRoot());
  EXPECT_EQ(root.height, 1);
  EXPECT_EQ(root.records, 6u);
  ASSERT_OK_AND_ASSIGN(std::string node, store_.Read(root.ref, BlockType::kBTreeNode, "root"));
  ASSERT_EQ(node.size(), 3u + 2 * 12 + 2);
  BlockRef leaf0{LoadU64(node.data() + 3), LoadU32(node.data() + 11)};
  BlockRef leaf1{LoadU64(node.data() + 15), LoadU32(node.data() + 23)};
  EXPECT_EQ(node, NodePayload(1, {leaf0, leaf1}, {{1, 1}}));
  ASSERT_OK_AND_ASSIGN(std::string l0, store_.Read(leaf0, BlockType::kBTreeLeaf, "leaf"));
  ASSERT_OK_AND_ASSIGN(std::string l1, store_.Read(leaf1, BlockType::kBTreeLeaf, "leaf"));
  EXPECT_EQ(l0, LeafPayload({keys[0], keys[1], keys[2], keys[3]}, {Rec(0), Rec(1), Rec(2), Rec(3)}, false));
  EXPECT_EQ(l1, LeafPayload({keys[4], keys[5]}, {Rec(4), Rec(5)}, false));
  // Two bytes of key per record in a row: 0 (same row), zigzag(+1) = 2.
  EXPECT_EQ(l0.substr(2, 2), std::string("\x00\x00", 2));
  EXPECT_EQ(l0.substr(12, 2), std::string("\x00\x02", 2));
  EXPECT_EQ(idx->disk_bytes(), 3 * kBlockHeaderBytes + node.size() + l0.size() + l1.size());
}

TEST_F(BTreeTest, ReadsHandBuiltBlocks) {
  // Hand-built blocks following the documented format, filtered records.
  const IndexGeometry geo = Geo({U, 10, U}, true);
  std::vector<Key> k0 = {{0, 0, 5}, {0, 9, 0}, {2, 3, 1}};
  std::vector<Key> k1 = {{3, 0, 0}, {uint64_t{1} << 50, 9, 1}};
  std::vector<ChunkRecord> r0 = {Rec(1, true), Rec(2, true), Rec(3, true)};
  std::vector<ChunkRecord> r1 = {Rec(4, true), Rec(5, true)};
  ASSERT_OK_AND_ASSIGN(BlockRef l0, store_.Write(BlockType::kBTreeLeaf, LeafPayload(k0, r0, true)));
  ASSERT_OK_AND_ASSIGN(BlockRef l1, store_.Write(BlockType::kBTreeLeaf, LeafPayload(k1, r1, true)));
  ASSERT_OK_AND_ASSIGN(BlockRef top, store_.Write(BlockType::kBTreeNode, NodePayload(1, {l0, l1}, {{3, 0, 0}})));
  auto idx = Open(geo, MakeRoot(top, 1, 5, l0.len + l1.len + top.len));
  Reference ref;
  for (size_t i = 0; i < k0.size(); ++i) ref[k0[i]] = r0[i];
  for (size_t i = 0; i < k1.size(); ++i) ref[k1[i]] = r1[i];
  ExpectMatches(idx.get(), ref);
}

// ------------------------------------------------------------ against a reference

struct RefCase {
  const char* name;
  Dims max_grid;
  bool filtered;
  size_t capacity;
};

void PrintTo(const RefCase& c, std::ostream* os) { *os << c.name; }

class BTreeReferenceTest : public BTreeTest, public ::testing::WithParamInterface<RefCase> {};

TEST_P(BTreeReferenceTest, MatchesReferenceUnderRandomChangesFlushesAndReopens) {
  const RefCase& p = GetParam();
  const IndexGeometry geo = Geo(p.max_grid, p.filtered);
  std::mt19937_64 rng(std::hash<std::string>()(p.name));
  auto uniform = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  // Coordinates from a range that holds about 2000 keys, so that keys
  // repeat, and now and then far out (long varints, large deltas both ways).
  double bounded = 1;
  int unlimited = 0;
  for (uint64_t g : geo.max_grid) {
    if (g == U)
      ++unlimited;
    else
      bounded *= static_cast<double>(g);
  }
  const auto span = static_cast<uint64_t>(std::ceil(std::pow(2000.0 / bounded, 1.0 / unlimited)));
  auto pick = [&]() {
    Key k(geo.rank());
    for (size_t d = 0; d < k.size(); ++d) {
      if (geo.max_grid[d] != U)
        k[d] = uniform(0, geo.max_grid[d] - 1);
      else if (uniform(0, 49) == 0)
        k[d] = uniform(0, 1) ? ~uint64_t{0} - 1 - uniform(0, 2) : (uint64_t{1} << 35) + uniform(0, 3);
      else
        k[d] = uniform(0, span - 1);
    }
    return k;
  };
  auto pick_box = [&](Key* lo, Key* hi) {
    lo->resize(geo.rank());
    hi->resize(geo.rank());
    for (size_t d = 0; d < geo.rank(); ++d) {
      const uint64_t extent = geo.max_grid[d] == U ? span : geo.max_grid[d];
      (*lo)[d] = uniform(0, extent - 1);
      (*hi)[d] = uniform(0, 4) == 0 ? U : (*lo)[d] + uniform(1, extent / 2 + 1);
    }
  };
  auto idx = Open(geo, {}, p.capacity);
  Reference ref;
  int reopens = 0, boxes = 0;
  size_t max_height = 0;
  for (int op = 0; op < 6000; ++op) {
    // The tree grows for the first half and shrinks in the second (removes
    // aimed at present keys), so splits, merges and collapses all happen.
    const bool shrinking = op >= 3000;
    const uint64_t kind = uniform(0, 99);
    if (kind < (shrinking ? 15 : 42)) {
      Key k = pick();
      ChunkRecord r = RandomRec(rng, p.filtered);
      ASSERT_OK(idx->Put(k, r));
      ref[k] = r;
    } else if (kind < 60) {
      Key k = pick();
      if (!ref.empty() && (shrinking || uniform(0, 2) > 0))
        k = std::next(ref.begin(), static_cast<long>(uniform(0, ref.size() - 1)))->first;
      ASSERT_OK(idx->Put(k, {}));
      ref.erase(k);
    } else if (kind < 90) {
      Key k = pick();
      ASSERT_OK_AND_ASSIGN(ChunkRecord r, idx->Get(k));
      auto it = ref.find(k);
      ASSERT_EQ(r, it == ref.end() ? ChunkRecord{} : it->second) << "op " << op;
    } else if (kind < 94) {
      Key lo, hi;
      pick_box(&lo, &hi);
      ExpectBox(idx.get(), ref, lo, hi);
      ++boxes;
    } else if (kind < 97) {
      ASSERT_OK(idx->Flush());
      ASSERT_FALSE(idx->dirty());
      if (uniform(0, 1)) alloc_.MarkDurable();
    } else {
      ASSERT_OK(idx->Flush());
      ExpectStoredTree(idx.get(), ref);
      idx = Open(geo, idx->EncodeRoot(), p.capacity);
      ASSERT_TRUE(idx);
      ++reopens;
    }
    max_height = std::max<size_t>(max_height, idx->height());
  }
  EXPECT_GT(reopens, 50);
  EXPECT_GT(boxes, 100);
  if (p.capacity <= 8) {
    EXPECT_GE(max_height, 3u);
  }
  ExpectMatches(idx.get(), ref, &rng);
  ASSERT_OK(idx->Flush());
  ExpectStoredTree(idx.get(), ref);
  auto again = Open(geo, idx->EncodeRoot(), p.capacity);
  ExpectMatches(again.get(), ref, &rng);
  EXPECT_EQ(again->disk_bytes(), idx->disk_bytes());

  // Remove the rest in random order: the tree empties without a trace.
  std::vector<Key> rest;
  for (const auto& [k, r] : ref) rest.push_back(k);
  std::shuffle(rest.begin(), rest.end(), rng);
  for (size_t i = 0; i < rest.size(); ++i) {
    ASSERT_OK(again->Put(rest[i], {}));
    ref.erase(rest[i]);
    if (i % 50 == 0) {
      ASSERT_OK(again->Flush());
      ExpectStoredTree(again.get(), ref);
      again = Open(geo, again->EncodeRoot(), p.capacity);
      ExpectMatches(again.get(), ref);
    }
  }
  ASSERT_OK(again->Flush());
  EXPECT_EQ(again->EncodeRoot(), "");
  EXPECT_EQ(again->disk_bytes(), 0u);
  EXPECT_EQ(LiveBytesAfterData(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, BTreeReferenceTest,
    ::testing::Values(RefCase{"rank1_cap4", {U}, false, 4}, RefCase{"rank1_cap256", {U}, true, 256},
                      RefCase{"rank2_cap4", {U, U}, false, 4}, RefCase{"rank2_cap8_filtered", {U, U}, true, 8},
                      RefCase{"rank2_bounded_cap5", {U, 7}, false, 5}, RefCase{"rank2_cap256", {U, U}, false, 256},
                      RefCase{"rank3_cap4_filtered", {5, U, U}, true, 4}, RefCase{"rank3_cap16", {U, 6, U}, false, 16},
                      RefCase{"rank4_cap6", {U, 3, U, 4}, false, 6},
                      RefCase{"rank4_cap8_filtered", {2, U, U, U}, true, 8}),
    [](const testing::TestParamInfo<RefCase>& param_info) { return std::string(param_info.param.name); });

TEST_F(BTreeTest, RangeScanVisitsTheBoxInKeyOrder) {
  auto idx = Open(Geo({U, U, 4}), {}, 4);
  Reference ref;
  for (uint64_t a = 0; a < 12; ++a)
    for (uint64_t b = 0; b < 12; b += 1 + a % 3)
      for (uint64_t c = 0; c < 4; ++c) ref[{a, b, c}] = Rec(a * 100 + b * 4 + c);
  for (const auto& [k, r] : ref) ASSERT_OK(idx->Put(k, r));
  std::vector<Key> visited;
  ASSERT_OK(idx->ForEachIn(Key{3, 2, 1}, Key{5, 4, 3}, [&](ChunkCoord c, const ChunkRecord& r) -> Status {
    EXPECT_EQ(r, ref.at(Key(c.begin(), c.end())));
    visited.emplace_back(c.begin(), c.end());
    return Status::OK();
  }));
  // Row 3 has b in {0, 1, 2, ...}; row 4 has b in {0, 2, 4, ...}.
  EXPECT_EQ(visited, (std::vector<Key>{{3, 2, 1}, {3, 2, 2}, {3, 3, 1}, {3, 3, 2}, {4, 2, 1}, {4, 2, 2}}));
  ASSERT_OK(idx->Flush());
  auto again = Open(Geo({U, U, 4}), idx->EncodeRoot(), 4);
  std::mt19937_64 rng(4);
  for (int i = 0; i < 300; ++i) {
    Key lo(3), hi(3);
    for (size_t d = 0; d < 3; ++d) {
      lo[d] = std::uniform_int_distribution<uint64_t>(0, 13)(rng);
      hi[d] = lo[d] + std::uniform_int_distribution<uint64_t>(0, 6)(rng);  // empty boxes too
    }
    ExpectBox(again.get(), ref, lo, hi);
  }
  ExpectBox(again.get(), ref, {0, 0, 0}, {U, U, U});
}

// A column of a 2-D grid touches one leaf per row: the scan seeks past the
// leaves in between without reading them, so damage there goes unnoticed.
TEST_F(BTreeTest, RangeScanSkipsLeavesOutsideTheBox) {
  const uint64_t rows = 60, cols = 90;
  auto idx = Open(Geo({U, U}), {}, 8);
  Reference ref;
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cols; ++c) {
      ref[{r, c}] = Rec(r * cols + c);
      ASSERT_OK(idx->Put(Key{r, c}, Rec(r * cols + c)));
    }
  ASSERT_OK(idx->Flush());
  const std::string root = idx->EncodeRoot();
  Shape s = Walk(root);
  ASSERT_EQ(s.refs[0].size(), rows * cols / 8 + (rows * cols % 8 != 0));  // appends fill leaves
  // Leaf j holds records [8j, 8j + 8) in C order; keep the leaves holding
  // column 40 and the last leaf (the seek past the last row ends there),
  // damage every other.
  std::vector<std::unique_ptr<ByteFlip>> flips;
  for (size_t j = 0; j < s.refs[0].size(); ++j) {
    bool holds = j + 1 == s.refs[0].size();
    for (uint64_t i = 8 * j; i < std::min(8 * j + 8, rows * cols); ++i) holds = holds || i % cols == 40;
    if (!holds) flips.push_back(std::make_unique<ByteFlip>(disk_.get(), s.refs[0][j].addr + 20, 0x04));
  }
  ASSERT_GT(flips.size(), s.refs[0].size() * 3 / 4);
  auto damaged = Open(Geo({U, U}), root, 8);
  ExpectBox(damaged.get(), ref, {0, 40}, {U, 41});
  ExpectBox(damaged.get(), ref, {10, 40}, {20, 41});
  // The damage is real.
  EXPECT_CODE(damaged->ForEach(VisitNothing), Code::kCorruption);
}

// ------------------------------------------------------------ shape and space

TEST_F(BTreeTest, SequentialAppendsFillEveryLeaf) {
  struct Case {
    Dims grid;
    uint64_t width;  // records per row of the last dimension
    double max_bytes_per_record;
  };
  const Case cases[] = {{{U, U}, 1000, 12.0}, {{U, U, U}, 40, 13.0}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.grid.size());
    const uint64_t n = 100000;
    auto idx = Open(Geo(c.grid));
    const size_t rank = c.grid.size();
    Key k(rank);
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t rest = i;
      for (size_t d = rank; d-- > 0;) {
        k[d] = d == 0 ? rest : rest % c.width;
        rest /= c.width;
      }
      ASSERT_OK(idx->Put(k, Rec(i)));
    }
    ASSERT_OK(idx->Flush());
    Shape s = Walk(idx->EncodeRoot());
    EXPECT_EQ(s.height, 2);
    EXPECT_EQ(s.records, n);
    ASSERT_EQ(s.sizes[0].size(), (n + kCap - 1) / kCap);
    for (size_t j = 0; j + 1 < s.sizes[0].size(); ++j) ASSERT_EQ(s.sizes[0][j], kCap) << "leaf " << j;
    const double per_record = static_cast<double>(idx->disk_bytes()) / static_cast<double>(n);
    EXPECT_LT(per_record, c.max_bytes_per_record);
    EXPECT_LT(per_record, 16.8 * 0.75);  // HDF5's v2 B-tree stores 16.8
    EXPECT_EQ(idx->disk_bytes(), s.bytes);
    std::printf("rank %zu sequential: %.2f bytes per record\n", rank, per_record);
  }
}

TEST_F(BTreeTest, RandomInsertsKeepNodesAtLeastHalfFull) {
  std::mt19937_64 rng(17);
  std::vector<Key> keys;
  for (uint64_t a = 0; a < 250; ++a)
    for (uint64_t b = 0; b < 200; ++b) keys.push_back({a, b});
  std::shuffle(keys.begin(), keys.end(), rng);
  auto idx = Open(Geo({U, U}));
  for (size_t i = 0; i < keys.size(); ++i) ASSERT_OK(idx->Put(keys[i], Rec(i)));
  ASSERT_OK(idx->Flush());
  Shape s = Walk(idx->EncodeRoot());
  ASSERT_EQ(s.height, 2);
  // Only the last node of a level can be less than half full (an append
  // split starts it with one entry).
  for (int level = 0; level <= s.height; ++level)
    for (size_t j = 0; j + 1 < s.sizes[level].size(); ++j)
      EXPECT_GE(s.sizes[level][j], kCap / 2) << "level " << level << " node " << j;
  EXPECT_LT(static_cast<double>(idx->disk_bytes()) / static_cast<double>(keys.size()), 16.8);
}

TEST_F(BTreeTest, GrowsTallWithSmallNodesAndShrinksToNothing) {
  std::mt19937_64 rng(23);
  const IndexGeometry geo = Geo({U, U});
  auto idx = Open(geo, {}, 4);
  Reference ref;
  for (uint64_t i = 0; i < 3000; ++i) {
    Key k = {std::uniform_int_distribution<uint64_t>(0, 99)(rng), std::uniform_int_distribution<uint64_t>(0, 99)(rng)};
    ref[k] = Rec(i);
    ASSERT_OK(idx->Put(k, Rec(i)));
  }
  ASSERT_OK(idx->Flush());
  EXPECT_GE(idx->height(), 4);
  ExpectStoredTree(idx.get(), ref);
  alloc_.MarkDurable();
  std::vector<Key> order;
  for (const auto& [k, r] : ref) order.push_back(k);
  std::shuffle(order.begin(), order.end(), rng);
  for (size_t i = 0; i < order.size(); ++i) {
    ASSERT_OK(idx->Put(order[i], {}));
    ref.erase(order[i]);
    if (i % 97 == 0) {
      ASSERT_OK(idx->Flush());
      ExpectStoredTree(idx.get(), ref);
      idx = Open(geo, idx->EncodeRoot(), 4);
      ExpectMatches(idx.get(), ref);
    }
  }
  ASSERT_OK(idx->Flush());
  EXPECT_EQ(idx->EncodeRoot(), "");
  EXPECT_EQ(idx->disk_bytes(), 0u);
  EXPECT_EQ(idx->records(), 0u);
  EXPECT_EQ(LiveBytesAfterData(), 0u);
  alloc_.MarkDurable();
  EXPECT_EQ(alloc_.TrimTail(), data_end_);
  ExpectMatches(idx.get(), {});
}

TEST_F(BTreeTest, RemovingAllOfALargeTreeLeavesNoBlocks) {
  const IndexGeometry geo = Geo({U, U});
  auto idx = Open(geo);
  for (uint64_t i = 0; i < 70000; ++i) ASSERT_OK(idx->Put(Key{i / 300, i % 300}, Rec(i)));
  ASSERT_OK(idx->Flush());
  ASSERT_EQ(idx->height(), 2);
  alloc_.MarkDurable();
  auto again = Open(geo, idx->EncodeRoot());
  // Seven records in eight first (leaves fall below a quarter full and are
  // merged or evened out with a sibling), then the rest.
  for (int pass = 0; pass < 2; ++pass) {
    for (uint64_t i = 0; i < 70000; ++i)
      if ((i % 8 == 0) == (pass == 1)) ASSERT_OK(again->Put(Key{i / 300, i % 300}, {}));
    ASSERT_OK(again->Flush());
    Reference ref;
    if (pass == 0)
      for (uint64_t i = 0; i < 70000; i += 8) ref[{i / 300, i % 300}] = Rec(i);
    ExpectStoredTree(again.get(), ref);
    ExpectMatches(again.get(), ref);
    if (pass == 0) {
      Shape s = Walk(again->EncodeRoot());
      for (size_t n : s.sizes[0]) EXPECT_GE(n, kCap / 4);
      EXPECT_LE(s.sizes[0].size(), ref.size() / (kCap / 4));
    }
  }
  EXPECT_EQ(again->EncodeRoot(), "");
  EXPECT_EQ(again->disk_bytes(), 0u);
  EXPECT_EQ(LiveBytesAfterData(), 0u);
}

// A node that falls below a quarter full next to a full sibling cannot
// merge with it; the two share their children evenly instead.
TEST_F(BTreeTest, RemovalsEvenOutANodeWithAFullSibling) {
  const IndexGeometry geo = Geo({U});
  auto idx = Open(geo, {}, 8);
  Reference ref;
  for (uint64_t i = 0; i < 512; ++i) {
    ref[{i}] = Rec(i);
    ASSERT_OK(idx->Put(Key{i}, Rec(i)));
  }
  ASSERT_OK(idx->Flush());
  Shape s = Walk(idx->EncodeRoot());
  ASSERT_EQ(s.sizes[1], std::vector<size_t>(8, 8));  // 64 full leaves under 8 full nodes
  // Empty the second node's leaves but for one key: its leaves even out
  // and merge until one is left, and then the node itself (one child, its
  // left sibling eight) evens out with its sibling: 9 children, 4 and 5.
  for (uint64_t i = 64; i < 127; ++i) {
    ASSERT_OK(idx->Put(Key{i}, {}));
    ref.erase({i});
  }
  ASSERT_OK(idx->Flush());
  s = Walk(idx->EncodeRoot());
  ASSERT_EQ(s.height, 2);
  EXPECT_EQ(s.sizes[1], (std::vector<size_t>{4, 5, 8, 8, 8, 8, 8, 8}));
  ExpectStoredTree(idx.get(), ref);
  ExpectMatches(idx.get(), ref);
  auto again = Open(geo, idx->EncodeRoot(), 8);
  ExpectMatches(again.get(), ref);
  for (uint64_t i = 0; i < 600; i += 7) ExpectBox(again.get(), ref, {i}, {i + 40});
}

// ------------------------------------------------------------ cost of a flush

TEST_F(BTreeTest, FlushWritesOnlyDirtyNodesAndTheirAncestors) {
  // 513 leaves (512 full, one of 10 records) under level-1 nodes of 256,
  // 256 and 1 children, under a root of 3.
  const uint64_t width = 1000, n = 2 * kCap * kCap + 10;
  auto key = [&](uint64_t i) { return Key{i / width, i % width}; };
  const IndexGeometry geo = Geo({U, U});
  auto idx = Open(geo);
  for (uint64_t i = 0; i < n; ++i) ASSERT_OK(idx->Put(key(i), Rec(i)));
  ASSERT_OK(idx->Flush());
  alloc_.MarkDurable();
  TakeWrites();
  Shape s = Walk(idx->EncodeRoot());
  ASSERT_EQ(s.height, 2);
  ASSERT_EQ(s.sizes[2], std::vector<size_t>{3});
  ASSERT_EQ(s.sizes[1], (std::vector<size_t>{256, 256, 1}));
  ASSERT_EQ(s.sizes[0].size(), 513u);
  ASSERT_EQ(s.sizes[0].back(), 10u);

  std::mt19937_64 rng(5);
  uint64_t salt = 0;
  // Records at addresses Rec() never gives, so each Put changes something.
  auto fresh_rec = [&] { return ChunkRecord{data_end_ - 8 * (1 + salt++ % 512)}; };
  // Changes the records i (same encoded sizes) and checks the writes: the
  // leaves holding them, their parents and the root, each once.
  auto check_update = [&](const std::vector<uint64_t>& changed) {
    SCOPED_TRACE(testing::PrintToString(changed));
    Shape before = Walk(idx->EncodeRoot());
    std::set<uint64_t> leaves, parents;
    for (uint64_t i : changed) {
      leaves.insert(i / kCap);
      parents.insert(i / kCap / kCap);
      ASSERT_OK(idx->Put(key(i), fresh_rec()));
    }
    uint64_t bytes = before.refs[2][0].len;
    for (uint64_t l : leaves) bytes += before.refs[0][l].len;
    for (uint64_t p : parents) bytes += before.refs[1][p].len;
    ASSERT_OK(idx->Flush());
    WriteStats w = TakeWrites();
    EXPECT_EQ(w.writes, static_cast<int64_t>(leaves.size() + parents.size() + 1));
    EXPECT_EQ(w.bytes, bytes);
    EXPECT_LE(w.writes, static_cast<int64_t>(changed.size()) * 3);
    EXPECT_EQ(idx->disk_bytes(), LiveBytesAfterData());
    alloc_.MarkDurable();
  };
  check_update({5});
  check_update({5, 6, 255});
  check_update({0, 256, 512});
  check_update({0, kCap * kCap});
  check_update({n - 1});
  for (int k : {1, 4, 16, 64}) {
    std::vector<uint64_t> changed;
    for (int i = 0; i < k; ++i) changed.push_back(std::uniform_int_distribution<uint64_t>(0, n - 1)(rng));
    check_update(changed);
  }

  // An append to the last leaf: one more entry of 2 key bytes + 8.
  Shape before = Walk(idx->EncodeRoot());
  ASSERT_OK(idx->Put(key(n), Rec(1)));
  ASSERT_OK(idx->Flush());
  WriteStats w = TakeWrites();
  EXPECT_EQ(w.writes, 3);
  EXPECT_EQ(w.bytes, before.refs[0].back().len + 10 + before.refs[1].back().len + before.refs[2][0].len);
  alloc_.MarkDurable();
  // A removal inside a full leaf (no merge): 10 bytes less.
  before = Walk(idx->EncodeRoot());
  ASSERT_OK(idx->Put(key(300 * kCap + 7), {}));
  ASSERT_OK(idx->Flush());
  w = TakeWrites();
  EXPECT_EQ(w.writes, 3);
  EXPECT_EQ(w.bytes, before.refs[0][300].len - 10 + before.refs[1][1].len + before.refs[2][0].len);
  EXPECT_EQ(idx->disk_bytes(), LiveBytesAfterData());
  // Nothing changed: nothing written.
  ASSERT_OK(idx->Put(key(3), {}));
  ASSERT_OK(idx->Put(key(3), {}));
  ASSERT_OK(idx->Put(key(3), Rec(99)));
  ASSERT_OK(idx->Flush());
  TakeWrites();
  ASSERT_OK(idx->Put(key(3), Rec(99)));
  EXPECT_FALSE(idx->dirty());
  ASSERT_OK(idx->Flush());
  EXPECT_EQ(TakeWrites().writes, 0);
}

TEST_F(BTreeTest, FlushIsCopyOnWrite) {
  const IndexGeometry geo = Geo({U, U});
  auto idx = Open(geo, {}, 4);
  for (uint64_t i = 0; i < 50; ++i) ASSERT_OK(idx->Put(Key{i, 0}, Rec(i)));
  ASSERT_OK(idx->Flush());
  alloc_.MarkDurable();
  const std::string old_root = idx->EncodeRoot();
  const std::string old_image = disk_->current;
  ASSERT_OK(idx->Put(Key{7, 0}, Rec(1000)));
  ASSERT_OK(idx->Put(Key{8, 0}, {}));
  ASSERT_OK(idx->Put(Key{60, 0}, Rec(1001)));
  ASSERT_OK(idx->Flush());
  ASSERT_GE(disk_->current.size(), old_image.size());
  EXPECT_EQ(disk_->current.compare(0, old_image.size(), old_image), 0);
  auto old_idx = Open(geo, old_root, 4);
  ASSERT_OK_AND_ASSIGN(ChunkRecord before, old_idx->Get(Key{7, 0}));
  EXPECT_EQ(before, Rec(7));
  ASSERT_OK_AND_ASSIGN(ChunkRecord gone, old_idx->Get(Key{8, 0}));
  EXPECT_EQ(gone, Rec(8));
  auto new_idx = Open(geo, idx->EncodeRoot(), 4);
  ASSERT_OK_AND_ASSIGN(ChunkRecord after, new_idx->Get(Key{7, 0}));
  EXPECT_EQ(after, Rec(1000));
  ASSERT_OK_AND_ASSIGN(ChunkRecord removed, new_idx->Get(Key{8, 0}));
  EXPECT_FALSE(removed.allocated());
}

// A Flush that fails at any write leaves the index dirty; the retry writes
// what is missing and the result is whole.
TEST_F(BTreeTest, FailedFlushIsRetried) {
  const IndexGeometry geo = Geo({U, U});
  std::mt19937_64 rng(31);
  for (int crash_at = 0; crash_at < 12; ++crash_at) {
    SCOPED_TRACE(crash_at);
    auto idx = Open(geo, {}, 4);
    Reference ref;
    for (uint64_t i = 0; i < 200; ++i) {
      Key k{i / 10, i % 10};
      ref[k] = Rec(i);
      ASSERT_OK(idx->Put(k, Rec(i)));
    }
    ASSERT_OK(idx->Flush());
    alloc_.MarkDurable();
    // Changes all over: updates, inserts with splits, removals with merges.
    for (int i = 0; i < 40; ++i) {
      Key k{std::uniform_int_distribution<uint64_t>(0, 25)(rng), std::uniform_int_distribution<uint64_t>(0, 9)(rng)};
      if (i % 3 == 0) {
        ASSERT_OK(idx->Put(k, {}));
        ref.erase(k);
      } else {
        ASSERT_OK(idx->Put(k, Rec(1000 + i)));
        ref[k] = Rec(1000 + i);
      }
    }
    disk_->crash_after = disk_->writes + crash_at;
    Status s = idx->Flush();
    disk_->crash_after = -1;
    disk_->crashed = false;
    if (!s.ok()) {  // else the flush needed at most crash_at writes
      EXPECT_EQ(s.code(), Code::kIOError);
      EXPECT_TRUE(idx->dirty());
      ASSERT_OK(idx->Flush());
    }
    EXPECT_FALSE(idx->dirty());
    ExpectStoredTree(idx.get(), ref);
    auto again = Open(geo, idx->EncodeRoot(), 4);
    ExpectMatches(again.get(), ref);
    ASSERT_OK(again->Destroy());
    alloc_.MarkDurable();
  }
}

// ------------------------------------------------------------ destroy

TEST_F(BTreeTest, DestroyFreesEveryBlock) {
  const IndexGeometry geo = Geo({U, U});
  std::mt19937_64 rng(8);
  auto idx = Open(geo, {}, 8);
  for (uint64_t i = 0; i < 5000; ++i)
    ASSERT_OK(idx->Put(Key{std::uniform_int_distribution<uint64_t>(0, 999)(rng), i % 13}, Rec(i)));
  ASSERT_OK(idx->Flush());
  alloc_.MarkDurable();
  ASSERT_GT(LiveBytesAfterData(), 0u);
  // A reopened index frees blocks it never read.
  auto again = Open(geo, idx->EncodeRoot(), 8);
  ASSERT_OK(again->Destroy());
  EXPECT_EQ(again->disk_bytes(), 0u);
  EXPECT_EQ(again->EncodeRoot(), "");
  EXPECT_FALSE(again->dirty());
  EXPECT_EQ(LiveBytesAfterData(), 0u);
  const uint64_t end = alloc_.file_end();
  EXPECT_EQ(alloc_.TrimTail(), end);  // pending until the commit is durable
  alloc_.MarkDurable();
  EXPECT_EQ(alloc_.TrimTail(), data_end_);
  ExpectMatches(again.get(), {});
}

TEST_F(BTreeTest, DestroyOfUnflushedChangesFreesEverything) {
  const IndexGeometry geo = Geo({U, U});
  auto idx = Open(geo, {}, 4);
  for (uint64_t i = 0; i < 300; ++i) ASSERT_OK(idx->Put(Key{i, i % 3}, Rec(i)));
  ASSERT_OK(idx->Flush());
  // Removed nodes waiting for a Flush, new nodes never written.
  for (uint64_t i = 0; i < 150; ++i) ASSERT_OK(idx->Put(Key{i, i % 3}, {}));
  for (uint64_t i = 0; i < 40; ++i) ASSERT_OK(idx->Put(Key{1000 + i, 0}, Rec(i)));
  ASSERT_OK(idx->Destroy());
  EXPECT_EQ(alloc_.TrimTail(), data_end_);  // all fresh: free at once
  EXPECT_FALSE(idx->dirty());
  // And usable again.
  ASSERT_OK(idx->Put(Key{5, 5}, Rec(5)));
  ASSERT_OK(idx->Flush());
  auto again = Open(geo, idx->EncodeRoot(), 4);
  ExpectMatches(again.get(), {{{5, 5}, Rec(5)}});
}

// ------------------------------------------------------------ concurrency

TEST_F(BTreeTest, ConcurrentGetsOnAReopenedIndexSeeEveryRecord) {
  const IndexGeometry geo = Geo({U, U});
  std::mt19937_64 rng(11);
  std::vector<std::pair<Key, ChunkRecord>> want;
  auto idx = Open(geo, {}, 16);
  for (uint64_t i = 0; i < 40000; ++i) {
    Key k{std::uniform_int_distribution<uint64_t>(0, 400)(rng), std::uniform_int_distribution<uint64_t>(0, 400)(rng)};
    want.emplace_back(k, Rec(i));
    ASSERT_OK(idx->Put(k, Rec(i)));
  }
  // Later puts of a key win.
  std::map<Key, ChunkRecord> last;
  for (const auto& [k, r] : want) last[k] = r;
  for (auto& [k, r] : want) r = last[k];
  ASSERT_OK(idx->Flush());
  auto again = Open(geo, idx->EncodeRoot(), 16);
  std::vector<std::thread> threads;
  std::vector<int> errors(5, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < want.size(); ++i) {
        const auto& [k, r] = want[(i * (2 * t + 1) + t * 1000) % want.size()];  // a different order per thread
        auto got = again->Get(k);
        if (!got || *got != r) ++errors[t];
      }
    });
  }
  threads.emplace_back([&] {
    size_t seen = 0;
    Status s = again->ForEach([&](ChunkCoord, const ChunkRecord&) {
      ++seen;
      return Status::OK();
    });
    if (!s.ok() || seen != last.size()) ++errors[4];
  });
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors, std::vector<int>(5, 0));
}

// ------------------------------------------------------------ damaged blocks

TEST_F(BTreeTest, RejectsEveryByteFlipInALeaf) {
  const IndexGeometry geo = Geo({U, U}, true);
  auto idx = Open(geo);
  for (uint64_t i = 0; i < 5; ++i) ASSERT_OK(idx->Put(Key{i, 2 * i}, Rec(i, true)));
  ASSERT_OK(idx->Flush());
  const std::string root = idx->EncodeRoot();
  const BlockRef leaf = ParseRoot(root).ref;
  for (uint64_t i = 0; i < leaf.len; ++i) {
    ByteFlip flip(disk_.get(), leaf.addr + i, 0x10);
    auto damaged = Open(geo, root);
    SCOPED_TRACE(i);
    EXPECT_CODE(damaged->Get(Key{4, 8}), Code::kCorruption);
    EXPECT_CODE(damaged->Get(Key{4, 8}), Code::kCorruption);  // and still, not the fill value
    EXPECT_CODE(damaged->ForEach(VisitNothing), Code::kCorruption);
    EXPECT_CODE(damaged->Put(Key{9, 9}, Rec(1, true)), Code::kCorruption);
  }
  auto fine = Open(geo, root);
  ASSERT_OK_AND_ASSIGN(ChunkRecord r, fine->Get(Key{4, 8}));
  EXPECT_EQ(r, Rec(4, true));
  // A damaged leaf root can still be destroyed: it is the only block.
  ByteFlip flip(disk_.get(), leaf.addr + 20, 0x10);
  auto damaged = Open(geo, root);
  EXPECT_CODE(damaged->Get(Key{4, 8}), Code::kCorruption);
  ASSERT_OK(damaged->Destroy());
  EXPECT_EQ(alloc_.TrimTail(), data_end_);
}

TEST_F(BTreeTest, RejectsEveryByteFlipInEveryNode) {
  const IndexGeometry geo = Geo({U, U});
  auto idx = Open(geo, {}, 4);
  Reference ref;
  for (uint64_t i = 0; i < 40; ++i) {
    ref[{i / 4, i % 4}] = Rec(i);
    ASSERT_OK(idx->Put(Key{i / 4, i % 4}, Rec(i)));
  }
  ASSERT_OK(idx->Flush());
  const std::string root = idx->EncodeRoot();
  Shape s = Walk(root);
  ASSERT_EQ(s.height, 2);
  // The nodes and the leaves on the path to the last key (all last of
  // their level), and the first leaf.
  std::vector<BlockRef> targets = {s.refs[2][0], s.refs[1].back(), s.refs[0].back(), s.refs[0].front()};
  for (const BlockRef& b : targets) {
    const Key probe = b == s.refs[0].front() ? Key{0, 0} : Key{9, 3};
    for (uint64_t i = 0; i < b.len; ++i) {
      ByteFlip flip(disk_.get(), b.addr + i, 0x01);
      SCOPED_TRACE(std::to_string(b.addr) + "+" + std::to_string(i));
      auto damaged = Open(geo, root, 4);
      EXPECT_CODE(damaged->Get(probe), Code::kCorruption);
      EXPECT_CODE(damaged->Put(probe, {}), Code::kCorruption);
      EXPECT_CODE(damaged->ForEach(VisitNothing), Code::kCorruption);
    }
  }
  // A damaged leaf leaves the other leaves readable.
  ByteFlip flip(disk_.get(), s.refs[0].front().addr + 30, 0x01);
  auto damaged = Open(geo, root, 4);
  EXPECT_CODE(damaged->Get(Key{0, 0}), Code::kCorruption);
  ASSERT_OK_AND_ASSIGN(ChunkRecord other, damaged->Get(Key{9, 3}));
  EXPECT_EQ(other, Rec(39));
}

// A remove that must merge with a damaged sibling fails before changing
// anything.
TEST_F(BTreeTest, RemoveNeedingADamagedSiblingChangesNothing) {
  const IndexGeometry geo = Geo({U});
  auto idx = Open(geo, {}, 8);
  for (uint64_t i = 0; i < 16; ++i) ASSERT_OK(idx->Put(Key{i}, Rec(i)));  // leaves of 8 and 8
  ASSERT_OK(idx->Flush());
  const std::string root = idx->EncodeRoot();
  Shape s = Walk(root);
  ASSERT_EQ(s.sizes[0], (std::vector<size_t>{8, 8}));
  auto again = Open(geo, root, 8);
  for (uint64_t i = 8; i < 14; ++i) ASSERT_OK(again->Put(Key{i}, {}));  // right leaf down to 2
  ByteFlip flip(disk_.get(), s.refs[0][0].addr + 20, 0x01);
  // Down to 1 of 8 entries: below a quarter, so it needs its left sibling.
  EXPECT_CODE(again->Put(Key{14}, {}), Code::kCorruption);
  ASSERT_OK_AND_ASSIGN(ChunkRecord still, again->Get(Key{14}));
  EXPECT_EQ(still, Rec(14));
  EXPECT_EQ(again->records(), 10u);
}

// ------------------------------------------------------------ hostile roots

TEST_F(BTreeTest, RejectsHostileRoots) {
  const IndexGeometry geo = Geo({U, U});
  auto idx = Open(geo, {}, 4);
  for (uint64_t i = 0; i < 20; ++i) ASSERT_OK(idx->Put(Key{i, 0}, Rec(i)));
  ASSERT_OK(idx->Flush());
  const std::string root = idx->EncodeRoot();
  const Root r = ParseRoot(root);
  ASSERT_GE(r.height, 1);
  for (size_t len = 1; len < root.size(); ++len) {
    SCOPED_TRACE(len);
    EXPECT_CODE(Index::Open(geo, root.substr(0, len), &store_, "d"), Code::kCorruption);
  }
  EXPECT_CODE(Index::Open(geo, root + '\0', &store_, "d"), Code::kCorruption);
  const uint64_t end = alloc_.file_end();
  struct {
    const char* what;
    std::string root;
  } bad[] = {
      {"height 200", MakeRoot(r.ref, 200, r.records, r.disk_bytes)},
      {"height 25", MakeRoot(r.ref, Index::kMaxHeight + 1, r.records, r.disk_bytes)},
      {"no records", MakeRoot(r.ref, r.height, 0, r.disk_bytes)},
      {"more records than the height holds", MakeRoot(r.ref, 0, 257, r.disk_bytes)},
      {"one record at height 1", MakeRoot(r.ref, 1, 1, r.disk_bytes)},
      {"disk bytes below the root block", MakeRoot(r.ref, r.height, r.records, r.ref.len - 1)},
      {"disk bytes past the file", MakeRoot(r.ref, r.height, r.records, end + 1)},
      {"no block", MakeRoot(BlockRef{}, r.height, r.records, r.disk_bytes)},
      {"block past the end", MakeRoot(BlockRef{end, 100}, r.height, r.records, r.disk_bytes)},
      {"block before the data", MakeRoot(BlockRef{64, 100}, r.height, r.records, r.disk_bytes)},
      {"block shorter than a header", MakeRoot(BlockRef{r.ref.addr, 8}, r.height, r.records, r.disk_bytes)},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.what);
    EXPECT_CODE(Index::Open(geo, b.root, &store_, "d"), Code::kCorruption);
  }
  // Plausible roots that disagree with the blocks fail on first use.
  for (int height : {r.height - 1, r.height + 1}) {
    SCOPED_TRACE(height);
    auto lying = Open(geo, MakeRoot(r.ref, height, r.records, r.disk_bytes));
    ASSERT_TRUE(lying);
    EXPECT_CODE(lying->Get(Key{3, 0}), Code::kCorruption);
  }
}

// ------------------------------------------------------------ hostile blocks (valid checksums)

class BTreeHostileTest : public BTreeTest {
 protected:
  // A 2-D geometry with a bounded second dimension (10 chunks).
  const IndexGeometry geo_ = Geo({U, 10});

  BlockRef Write(BlockType t, const std::string& payload) {
    auto r = store_.Write(t, payload);
    EXPECT_TRUE(r.has_value());
    return r ? *r : BlockRef{};
  }
  std::vector<ChunkRecord> Recs(size_t n) {
    std::vector<ChunkRecord> v;
    for (size_t i = 0; i < n; ++i) v.push_back(Rec(i + 1));
    return v;
  }
  // Get(key) through a tree whose root is the given block.
  Status GetThrough(BlockRef root, int height, uint64_t records, const Key& key) {
    auto idx = Index::Open(geo_, MakeRoot(root, height, records, root.len), &store_, "d");
    if (!idx) return idx.error();
    auto r = (*idx)->Get(key);
    return r ? Status::OK() : r.error();
  }
};

TEST_F(BTreeHostileTest, RejectsBadLeaves) {
  const std::vector<Key> good = {{0, 1}, {0, 2}, {3, 4}};
  ASSERT_OK(GetThrough(Write(BlockType::kBTreeLeaf, LeafPayload(good, Recs(3), false)), 0, 3, {0, 2}));
  auto with_rec = [&](size_t i, ChunkRecord r) {
    auto v = Recs(3);
    v[i] = r;
    return LeafPayload(good, v, false);
  };
  std::string overlong;  // a varint of 11 bytes
  PutU16(&overlong, 1);
  overlong.append(10, '\x80');
  overlong.push_back('\x00');
  overlong.push_back('\x00');
  PutU64(&overlong, data_begin_);
  std::string too_big;  // a varint above 2^64
  PutU16(&too_big, 1);
  too_big.append(9, '\xff');
  too_big.push_back('\x02');
  too_big.push_back('\x00');
  PutU64(&too_big, data_begin_);
  std::vector<Key> many;
  for (uint64_t i = 0; i < 257; ++i) many.push_back({i, 0});
  struct {
    const char* what;
    std::string payload;
  } bad[] = {
      {"count 0", LeafPayload({}, {}, false)},
      {"count above what is there", LeafPayload(good, Recs(3), false, 4)},
      {"count below what is there", LeafPayload(good, Recs(3), false, 2)},
      {"257 entries", LeafPayload(many, Recs(257), false)},
      {"count 65535", LeafPayload(good, Recs(3), false, 65535)},
      {"equal keys", LeafPayload({{0, 1}, {0, 1}, {3, 4}}, Recs(3), false)},
      {"keys descending", LeafPayload({{0, 1}, {0, 0}, {3, 4}}, Recs(3), false)},
      {"key outside the grid", LeafPayload({{0, 1}, {0, 10}, {3, 4}}, Recs(3), false)},
      {"record of an unallocated chunk", with_rec(1, ChunkRecord{})},
      {"address in the superblock area", with_rec(0, {64, 0, 0})},
      {"address past the file", with_rec(2, {alloc_.file_end() + 4096, 0, 0})},
      {"trailing byte", LeafPayload(good, Recs(3), false) + "x"},
      {"filtered records in an unfiltered tree", LeafPayload(good, Recs(3), true)},
      {"empty", ""},
      {"varint of 11 bytes", overlong},
      {"varint above 2^64", too_big},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.what);
    BlockRef leaf = Write(BlockType::kBTreeLeaf, b.payload);
    EXPECT_CODE(GetThrough(leaf, 0, 3, {0, 2}), Code::kCorruption);
  }
  // Cut short anywhere.
  const std::string whole = LeafPayload(good, Recs(3), false);
  for (size_t len = 0; len < whole.size(); ++len) {
    SCOPED_TRACE(len);
    EXPECT_CODE(GetThrough(Write(BlockType::kBTreeLeaf, whole.substr(0, len)), 0, 3, {0, 2}), Code::kCorruption);
  }
  // The right bytes under the wrong type, and a record count that lies.
  EXPECT_CODE(GetThrough(Write(BlockType::kBTreeNode, whole), 0, 3, {0, 2}), Code::kCorruption);
  EXPECT_CODE(GetThrough(Write(BlockType::kFixedArrayLeaf, whole), 0, 3, {0, 2}), Code::kCorruption);
  EXPECT_CODE(GetThrough(Write(BlockType::kBTreeLeaf, whole), 0, 4, {0, 2}), Code::kCorruption);
}

TEST_F(BTreeHostileTest, RejectsBadNodes) {
  // Two leaves, [.., (5,0)) and [(5,0), ..), under one node.
  const BlockRef l0 = Write(BlockType::kBTreeLeaf, LeafPayload({{0, 1}, {0, 2}}, Recs(2), false));
  const BlockRef l1 = Write(BlockType::kBTreeLeaf, LeafPayload({{5, 0}, {5, 1}}, Recs(2), false));
  const BlockRef good = Write(BlockType::kBTreeNode, NodePayload(1, {l0, l1}, {{5, 0}}));
  ASSERT_OK(GetThrough(good, 1, 4, {0, 1}));
  ASSERT_OK(GetThrough(good, 1, 4, {5, 1}));
  const BlockRef far{alloc_.file_end() + 4096, 100};
  struct {
    const char* what;
    std::string payload;
  } bad[] = {
      {"level 2", NodePayload(2, {l0, l1}, {{5, 0}})},
      {"level 0", NodePayload(0, {l0, l1}, {{5, 0}})},
      {"a root of one child", NodePayload(1, {l0}, {})},
      {"count 0", NodePayload(1, {}, {})},
      {"count above what is there", NodePayload(1, {l0, l1}, {{5, 0}}, 3)},
      {"count below what is there", NodePayload(1, {l0, l1}, {{5, 0}}, 1)},
      {"count 257", NodePayload(1, {l0, l1}, {{5, 0}}, 257)},
      {"separator not above the first leaf", NodePayload(1, {l0, l1}, {{0, 2}})},
      {"separator above the second leaf", NodePayload(1, {l0, l1}, {{5, 1}})},
      {"separator outside the grid", NodePayload(1, {l0, l1}, {{5, 10}})},
      {"leaves swapped", NodePayload(1, {l1, l0}, {{5, 0}})},
      {"one leaf twice", NodePayload(1, {l0, l0}, {{5, 0}})},
      {"missing child", NodePayload(1, {l0, BlockRef{}}, {{5, 0}})},
      {"child length without address", NodePayload(1, {l0, BlockRef{0, 100}}, {{5, 0}})},
      {"child past the file", NodePayload(1, {l0, far}, {{5, 0}})},
      {"child before the data", NodePayload(1, {BlockRef{64, 100}, l1}, {{5, 0}})},
      {"child shorter than a header", NodePayload(1, {l0, BlockRef{l1.addr, 4}}, {{5, 0}})},
      {"child is a node", NodePayload(1, {l0, good}, {{5, 0}})},
      {"trailing byte", NodePayload(1, {l0, l1}, {{5, 0}}) + "z"},
      {"separator missing", NodePayload(1, {l0, l1}, {})},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.what);
    BlockRef node = Write(BlockType::kBTreeNode, b.payload);
    Status s = GetThrough(node, 1, 4, {0, 1});
    Status t = GetThrough(node, 1, 4, {5, 1});
    // The node itself or the leaf a lookup goes to is refused, never
    // anything but Corruption.
    EXPECT_TRUE(s.code() == Code::kCorruption || t.code() == Code::kCorruption)
        << s.ToString() << " / " << t.ToString();
    EXPECT_TRUE(s.ok() || s.code() == Code::kCorruption) << s.ToString();
    EXPECT_TRUE(t.ok() || t.code() == Code::kCorruption) << t.ToString();
  }
}

TEST_F(BTreeHostileTest, RejectsAnUpperNodeThatPointsAtTheWrongLevel) {
  const BlockRef l0 = Write(BlockType::kBTreeLeaf, LeafPayload({{0, 1}}, Recs(1), false));
  const BlockRef l1 = Write(BlockType::kBTreeLeaf, LeafPayload({{5, 0}}, Recs(1), false));
  const BlockRef l2 = Write(BlockType::kBTreeLeaf, LeafPayload({{7, 0}}, Recs(1), false));
  const BlockRef n0 = Write(BlockType::kBTreeNode, NodePayload(1, {l0, l1}, {{5, 0}}));
  // A non-root node may have a single child.
  const BlockRef n1 = Write(BlockType::kBTreeNode, NodePayload(1, {l2}, {}));
  const BlockRef top = Write(BlockType::kBTreeNode, NodePayload(2, {n0, n1}, {{6, 0}}));
  EXPECT_OK(GetThrough(top, 2, 3, {7, 0}));
  EXPECT_OK(GetThrough(top, 2, 3, {5, 0}));
  const BlockRef to_leaf = Write(BlockType::kBTreeNode, NodePayload(2, {n0, l2}, {{6, 0}}));
  EXPECT_CODE(GetThrough(to_leaf, 2, 3, {7, 0}), Code::kCorruption);
  const BlockRef to_same_level = Write(BlockType::kBTreeNode, NodePayload(2, {n0, top}, {{6, 0}}));
  EXPECT_CODE(GetThrough(to_same_level, 2, 3, {7, 0}), Code::kCorruption);
  // A subtree whose keys fall outside the range the root gives it.
  const BlockRef misplaced = Write(BlockType::kBTreeNode, NodePayload(2, {n0, n1}, {{8, 0}}));
  EXPECT_CODE(GetThrough(misplaced, 2, 3, {9, 0}), Code::kCorruption);
  EXPECT_CODE(GetThrough(top, 3, 3, {7, 0}), Code::kCorruption);
}

TEST_F(BTreeHostileTest, DestroyFreesNothingWhenBlocksRepeat) {
  const BlockRef l0 = Write(BlockType::kBTreeLeaf, LeafPayload({{0, 1}, {0, 2}}, Recs(2), false));
  const BlockRef twice = Write(BlockType::kBTreeNode, NodePayload(1, {l0, l0}, {{5, 0}}));
  alloc_.MarkDurable();
  const uint64_t free_before = alloc_.free_bytes();
  auto idx = Open(geo_, MakeRoot(twice, 1, 4, twice.len + 2 * l0.len));
  EXPECT_CODE(idx->Destroy(), Code::kCorruption);
  EXPECT_EQ(alloc_.free_bytes(), free_before);
}

}  // namespace btree_test
}  // namespace
}  // namespace slabfs::engine
