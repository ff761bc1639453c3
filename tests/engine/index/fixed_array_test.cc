// What only the fixed-array kind of the paged-array index does
// (index_conformance_test.cc holds what every kind does, and
// extensible_array_test.cc the blocks and depth changes of the other kind):
// against a std::map reference over chunk counts that give zero to three
// node levels, ForEach across leaf boundaries, the C-order key, the depth a
// chunk count fixes, the cost of a Flush in blocks, disk_bytes, nothing
// held for the grid at open, every byte flip of a leaf and a node, hostile
// roots, and the blocks of the first fixed-array layout (types 3 and 4):
// read, hostile ones refused, and replaced by the new ones as they change.
#include "engine/index/paged_array.h"

#include <malloc.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/format/layout.h"
#include "engine/util/coding.h"
#include "tests/testutil/fault_file.h"
#include "tests/testutil/index_env.h"
#include "tests/testutil/paged_array_blocks.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::engine {
namespace {

IndexGeometry Geometry1D(uint64_t chunks) {
  IndexGeometry g;
  g.max_grid = {chunks};
  g.max_chunk_bytes = uint64_t{1} << 30;
  return g;
}

// The tests speak of chunk positions; the index takes grid coordinates. In a
// one-dimensional grid they are the same, so this adapter passes them on.
class Index {
 public:
  static constexpr uint64_t kLeafRecords = PagedArrayIndex::kLeafRecords;
  static constexpr uint64_t kNodeFanout = PagedArrayIndex::kNodeFanout;

  static Result<std::unique_ptr<Index>> Open(uint64_t chunks, std::string_view root, BlockStore* store,
                                             std::string what) {
    auto r = PagedArrayIndex::Open(IndexKind::kFixedArray, Geometry1D(chunks), root, store, std::move(what));
    if (!r) return Err(r.error());
    return std::unique_ptr<Index>(new Index(std::move(*r)));
  }
  Result<ChunkRecord> Get(uint64_t c) { return f_->Get(ChunkCoord(&c, 1)); }
  Status Put(uint64_t c, const ChunkRecord& rec) { return f_->Put(ChunkCoord(&c, 1), rec); }
  Status ForEach(const std::function<Status(uint64_t, const ChunkRecord&)>& fn) {
    return f_->ForEach([&](ChunkCoord c, const ChunkRecord& rec) { return fn(c[0], rec); });
  }
  IndexKind kind() const { return f_->kind(); }
  bool dirty() const { return f_->dirty(); }
  Status Flush() { return f_->Flush(); }
  std::string EncodeRoot() const { return f_->EncodeRoot(); }
  uint64_t disk_bytes() const { return f_->disk_bytes(); }
  Status Destroy() { return f_->Destroy(); }
  Status CollectBlocks(std::vector<BlockRef>* out) { return f_->CollectBlocks(out); }

 private:
  explicit Index(std::unique_ptr<PagedArrayIndex> f) : f_(std::move(f)) {}
  std::unique_ptr<PagedArrayIndex> f_;
};
using namespace testutil::paged;                  // the new blocks and the root, written out
constexpr uint64_t kLeaf = Index::kLeafRecords;   // 512
constexpr uint64_t kFanout = Index::kNodeFanout;  // 256
constexpr uint64_t kDataRegion = 1 << 20;         // where chunk addresses point

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

int ExpectedDepth(uint64_t chunks) {
  int depth = 0;
  for (uint64_t n = CeilDiv(chunks, kLeaf); n > 1; n = CeilDiv(n, kFanout)) ++depth;
  return depth;
}

// Blocks of the first fixed-array layout (types 3 and 4), which the index
// reads and never writes: u32 counts, every record of the leaf's part of
// the grid and every child slot of the node's part, stored or not.
std::string FirstLeafPayload(uint64_t first, uint32_t count, const std::vector<uint64_t>& addrs) {
  std::string p;
  PutU64(&p, first);
  PutU32(&p, count);
  for (uint64_t a : addrs) PutU64(&p, a);
  return p;
}

std::string FirstNodePayload(uint8_t level, uint64_t first_leaf, uint32_t count, const std::vector<BlockRef>& refs) {
  std::string p;
  PutU8(&p, level);
  PutU64(&p, first_leaf);
  PutU32(&p, count);
  for (const auto& r : refs) {
    PutU64(&p, r.addr);
    PutU32(&p, r.len);
  }
  return p;
}

class FixedArrayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    alloc_.Reset(kDataStart, {});
    // Chunk data lives here; index blocks come after it.
    data_begin_ = alloc_.Allocate(kDataRegion, 4096);
    data_end_ = data_begin_ + kDataRegion;
    alloc_.MarkDurable();
  }

  std::unique_ptr<Index> Open(uint64_t chunks, std::string_view root = {}) {
    auto r = Index::Open(chunks, root, &store_, "dataset 7");
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r ? std::move(*r) : nullptr;
  }

  uint64_t RandomAddr(std::mt19937_64& rng) {
    return data_begin_ + 8 * std::uniform_int_distribution<uint64_t>(0, kDataRegion / 8 - 1)(rng);
  }

  // Index bytes on disk, from the allocator's point of view.
  uint64_t LiveBytesAfterData() { return testutil::LiveBytesAfter(alloc_, data_end_); }
  using WriteStats = testutil::WriteStats;
  WriteStats TakeWrites() { return testutil::TakeWrites(*disk_, file_); }

  // Every record through Get and through ForEach equals the reference.
  void ExpectRecords(Index* idx, uint64_t chunks, const std::map<uint64_t, uint64_t>& ref) {
    for (uint64_t c = 0; c < chunks; ++c) {
      auto r = idx->Get(c);
      ASSERT_TRUE(r.has_value()) << c << ": " << r.error().ToString();
      auto it = ref.find(c);
      ASSERT_EQ(r->addr, it == ref.end() ? 0 : it->second) << "chunk " << c;
    }
    std::map<uint64_t, uint64_t> seen;
    uint64_t last = 0;
    bool first = true;
    ASSERT_OK(idx->ForEach([&](uint64_t c, const ChunkRecord& rec) -> Status {
      EXPECT_TRUE(first || c > last) << "ForEach out of order at " << c;
      EXPECT_TRUE(rec.allocated());
      first = false;
      last = c;
      seen[c] = rec.addr;
      return Status::OK();
    }));
    std::map<uint64_t, uint64_t> allocated;
    for (auto [c, a] : ref)
      if (a != 0) allocated[c] = a;
    EXPECT_EQ(seen, allocated);
  }

  std::shared_ptr<testutil::Disk> disk_ = std::make_shared<testutil::Disk>();
  testutil::FaultFile file_{disk_};
  Allocator alloc_;
  BlockStore store_{&file_, &alloc_};
  uint64_t data_begin_ = 0, data_end_ = 0;
};

// ------------------------------------------------------------ basics

TEST_F(FixedArrayTest, RejectsGridsItCannotIndex) {
  EXPECT_CODE(Index::Open(0, "", &store_, "d"), Code::kCorruption);
  EXPECT_CODE(Index::Open(kMaxFixedArrayChunks + 1, "", &store_, "d"), Code::kCorruption);
  EXPECT_CODE(Index::Open(kUnlimited, "", &store_, "d"), Code::kCorruption);
  IndexGeometry g = Geometry1D(10);
  g.max_grid = {uint64_t{1} << 20, uint64_t{1} << 20};  // 2^40 chunks
  EXPECT_CODE(PagedArrayIndex::Open(IndexKind::kFixedArray, g, "", &store_, "d"), Code::kCorruption);
  g.max_grid = {kUnlimited, 4};
  EXPECT_CODE(PagedArrayIndex::Open(IndexKind::kFixedArray, g, "", &store_, "d"), Code::kCorruption);
  EXPECT_OK(Index::Open(kMaxFixedArrayChunks, "", &store_, "d"));
}

TEST_F(FixedArrayTest, OpeningTheLargestGridHoldsNothingForIt) {
  // Slots are made as records arrive: an open of 2^28 chunks (2^19 leaves)
  // and a lookup hold a few pages at most, not a slot per leaf.
  auto heap = [] {
    const struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
  };
  auto idx = Open(kMaxFixedArrayChunks);
  for (uint64_t c : {uint64_t{0}, kMaxFixedArrayChunks / 2, kMaxFixedArrayChunks - 1})
    ASSERT_OK(idx->Put(c, {data_begin_}));
  ASSERT_OK(idx->Flush());
  const std::string root = idx->EncodeRoot();
  idx.reset();
  const size_t before = heap();
  auto again = Open(kMaxFixedArrayChunks, root);
  ASSERT_OK_AND_ASSIGN(ChunkRecord rec, again->Get(kMaxFixedArrayChunks - 1));
  EXPECT_EQ(rec.addr, data_begin_);
  ASSERT_OK_AND_ASSIGN(ChunkRecord none, again->Get(12345));
  EXPECT_FALSE(none.allocated());
  // The top and one node per level below it, one leaf: under 64 KiB.
  EXPECT_LT(heap() - before, size_t{64} << 10);
}

TEST_F(FixedArrayTest, ForEachVisitsExactlyTheAllocatedRecordsInOrder) {
  const uint64_t n = 3 * kLeaf + 7;
  auto idx = Open(n);
  std::map<uint64_t, uint64_t> ref;
  for (uint64_t c : {n - 1, uint64_t{0}, kLeaf, kLeaf - 1, 2 * kLeaf + 3, uint64_t{5}}) ref[c] = data_begin_ + 8 * c;
  for (auto [c, a] : ref) ASSERT_OK(idx->Put(c, {a}));
  std::vector<uint64_t> visited;
  ASSERT_OK(idx->ForEach([&](uint64_t c, const ChunkRecord& rec) -> Status {
    EXPECT_EQ(rec.addr, ref.at(c));
    visited.push_back(c);
    return Status::OK();
  }));
  EXPECT_EQ(visited, (std::vector<uint64_t>{0, 5, kLeaf - 1, kLeaf, 2 * kLeaf + 3, n - 1}));
  // And the same from disk, loaded lazily.
  ASSERT_OK(idx->Flush());
  auto again = Open(n, idx->EncodeRoot());
  visited.clear();
  ASSERT_OK(again->ForEach([&](uint64_t c, const ChunkRecord&) -> Status {
    visited.push_back(c);
    return Status::OK();
  }));
  EXPECT_EQ(visited, (std::vector<uint64_t>{0, 5, kLeaf - 1, kLeaf, 2 * kLeaf + 3, n - 1}));
}

TEST_F(FixedArrayTest, DepthFollowsTheChunkCount) {
  const std::pair<uint64_t, int> cases[] = {{1, 0}, {512, 0}, {513, 1}, {1024, 1}, {256 * 512, 1}, {256 * 512 + 1, 2}};
  for (auto [n, depth] : cases) {
    SCOPED_TRACE(n);
    ASSERT_EQ(ExpectedDepth(n), depth);
    auto idx = Open(n);
    ASSERT_OK(idx->Put(n - 1, {data_begin_}));
    ASSERT_OK(idx->Flush());
    Root root = ParseRoot(idx->EncodeRoot());
    EXPECT_EQ(root.depth, depth);
    EXPECT_EQ(root.row, n);
    EXPECT_EQ(root.disk_bytes, idx->disk_bytes());
  }
}

TEST_F(FixedArrayTest, KeyIsTheCOrderPositionAndTheDepthIsTheGrids) {
  // A 3 x 700 grid: chunk (r, c) has key 700 r + c; 2100 chunks need five
  // leaves, so one node level, even while only the first leaf is stored.
  IndexGeometry g = Geometry1D(1);
  g.max_grid = {3, 700};
  ASSERT_OK_AND_ASSIGN(auto idx, PagedArrayIndex::Open(IndexKind::kFixedArray, g, "", &store_, "d"));
  EXPECT_EQ(idx->kind(), IndexKind::kFixedArray);
  EXPECT_EQ(idx->row(), 2100u);
  ASSERT_OK(idx->Put(Dims{0, 9}, ChunkRecord{data_begin_ + 8}));
  ASSERT_OK(idx->Flush());
  Root root = ParseRoot(idx->EncodeRoot());
  EXPECT_EQ(root.depth, 1);
  EXPECT_EQ(root.row, 2100u);
  ASSERT_EQ(root.ref.len, NodeBlockBytes(1));
  ASSERT_OK_AND_ASSIGN(std::string node, store_.Read(root.ref, BlockType::kPagedNode, "node"));
  const BlockRef leaf0 = ChildOf(node, 0);
  ASSERT_EQ(leaf0.len, LeafBlockBytes(10));
  // Key 2 * 700 + 13 = 1413: leaf 2, record 389.
  ASSERT_OK(idx->Put(Dims{2, 13}, ChunkRecord{data_begin_ + 16}));
  ASSERT_OK(idx->Flush());
  ASSERT_OK_AND_ASSIGN(node, store_.Read(ParseRoot(idx->EncodeRoot()).ref, BlockType::kPagedNode, "node"));
  EXPECT_EQ(ChildOf(node, 0), leaf0);  // unchanged, not rewritten
  EXPECT_TRUE(ChildOf(node, 1).empty());
  ASSERT_OK_AND_ASSIGN(std::string leaf2, store_.Read(ChildOf(node, 2), BlockType::kPagedLeaf, "leaf"));
  EXPECT_EQ(LoadU64(leaf2.data()), 2 * kLeaf);
  ASSERT_EQ(leaf2.size(), 10 + 8 * (1413 - 2 * kLeaf + 1));
  EXPECT_EQ(LoadU64(leaf2.data() + 10 + 8 * (1413 - 2 * kLeaf)), data_begin_ + 16);
  // Emptied, the tree stores nothing; the depth stays the grid's.
  ASSERT_OK(idx->Put(Dims{0, 9}, ChunkRecord{}));
  ASSERT_OK(idx->Put(Dims{2, 13}, ChunkRecord{}));
  ASSERT_OK(idx->Flush());
  EXPECT_EQ(idx->EncodeRoot(), "");
  EXPECT_EQ(idx->disk_bytes(), 0u);
  ASSERT_OK(idx->Put(Dims{1, 1}, ChunkRecord{data_begin_}));
  ASSERT_OK(idx->Flush());
  EXPECT_EQ(ParseRoot(idx->EncodeRoot()).depth, 1);
}

TEST_F(FixedArrayTest, OpenChunkIndexOpensTheFixedArray) {
  auto idx = Open(700);
  ASSERT_OK(idx->Put(650, {data_begin_ + 64}));
  ASSERT_OK(idx->Flush());
  ASSERT_OK_AND_ASSIGN(auto generic,
                       OpenChunkIndex(IndexKind::kFixedArray, Geometry1D(700), idx->EncodeRoot(), &store_, "d"));
  EXPECT_EQ(generic->kind(), IndexKind::kFixedArray);
  const uint64_t c = 650;
  ASSERT_OK_AND_ASSIGN(ChunkRecord rec, generic->Get(ChunkCoord(&c, 1)));
  EXPECT_EQ(rec.addr, data_begin_ + 64);
  EXPECT_CODE(OpenChunkIndex(IndexKind::kAuto, Geometry1D(700), "", &store_, "d"), Code::kCorruption);
  // A fixed array cannot index an unlimited grid.
  EXPECT_CODE(OpenChunkIndex(IndexKind::kFixedArray, Geometry1D(kUnlimited), "", &store_, "d"), Code::kCorruption);
  // Errors of the fixed array come through unchanged.
  EXPECT_CODE(OpenChunkIndex(IndexKind::kFixedArray, Geometry1D(701), idx->EncodeRoot(), &store_, "d"),
              Code::kCorruption);
}

TEST_F(FixedArrayTest, FilteredRecordsRoundTripAndAreChecked) {
  IndexGeometry g = Geometry1D(600);
  g.filtered = true;
  g.max_chunk_bytes = 4096;
  ASSERT_OK_AND_ASSIGN(auto idx, PagedArrayIndex::Open(IndexKind::kFixedArray, g, "", &store_, "d"));
  const uint64_t c = 513;
  ASSERT_OK(idx->Put(ChunkCoord(&c, 1), ChunkRecord{data_begin_, 1234, 0x3}));
  ASSERT_OK(idx->Flush());
  ASSERT_OK_AND_ASSIGN(auto again, PagedArrayIndex::Open(IndexKind::kFixedArray, g, idx->EncodeRoot(), &store_, "d"));
  ASSERT_OK_AND_ASSIGN(ChunkRecord rec, again->Get(ChunkCoord(&c, 1)));
  EXPECT_EQ(rec, (ChunkRecord{data_begin_, 1234, 0x3}));
  // A record claiming more than a chunk can hold is refused by Put, and on
  // load in a block of either layout.
  EXPECT_CODE(idx->Put(ChunkCoord(&c, 1), ChunkRecord{data_begin_, 4097, 0}), Code::kInvalidArgument);
  for (BlockType t : {BlockType::kPagedLeaf, BlockType::kFixedArrayLeaf}) {
    std::string leaf;
    PutU64(&leaf, 0);
    if (t == BlockType::kPagedLeaf)
      PutU16(&leaf, 1);
    else
      PutU32(&leaf, 512);
    PutRecord(&leaf, ChunkRecord{data_begin_, 4097, 0}, true);
    if (t == BlockType::kFixedArrayLeaf)
      for (int i = 1; i < 512; ++i) PutRecord(&leaf, ChunkRecord{}, true);
    ASSERT_OK_AND_ASSIGN(BlockRef ref, store_.Write(t, leaf));
    ASSERT_OK_AND_ASSIGN(BlockRef top, store_.Write(BlockType::kPagedNode, NodePayload(1, 0, 1, {ref})));
    ASSERT_OK_AND_ASSIGN(auto bad,
                         PagedArrayIndex::Open(IndexKind::kFixedArray, g, MakeRoot(top, 1, 600), &store_, "d"));
    const uint64_t zero = 0;
    EXPECT_CODE(bad->Get(ChunkCoord(&zero, 1)), Code::kCorruption);
  }
}

// ------------------------------------------------------------ against a reference

class FixedArrayReferenceTest : public FixedArrayTest, public ::testing::WithParamInterface<uint64_t> {};

TEST_P(FixedArrayReferenceTest, MatchesReferenceUnderRandomPutGetFlushAndReopen) {
  const uint64_t n = GetParam();
  std::mt19937_64 rng(n * 7919 + 1);
  auto uniform = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  // Chunks near leaf and node boundaries, and anywhere.
  auto pick = [&]() -> uint64_t {
    switch (uniform(0, 3)) {
      case 0: {
        uint64_t b = std::min(n - 1, uniform(0, CeilDiv(n, kLeaf)) * kLeaf);
        return std::min(n - 1, b + uniform(0, 2) - std::min<uint64_t>(b, 1));
      }
      case 1: return n - 1 - std::min(n - 1, uniform(0, 3));
      default: return uniform(0, n - 1);
    }
  };
  auto idx = Open(n);
  std::map<uint64_t, uint64_t> ref;
  int reopens = 0;
  for (int op = 0; op < 3000; ++op) {
    uint64_t kind = uniform(0, 99);
    if (kind < 45) {
      uint64_t c = pick();
      uint64_t a = uniform(0, 9) == 0 ? 0 : RandomAddr(rng);
      ASSERT_OK(idx->Put(c, {a}));
      ref[c] = a;
    } else if (kind < 90) {
      uint64_t c = pick();
      ASSERT_OK_AND_ASSIGN(ChunkRecord rec, idx->Get(c));
      auto it = ref.find(c);
      ASSERT_EQ(rec.addr, it == ref.end() ? 0 : it->second) << "op " << op << " chunk " << c;
    } else if (kind < 95) {
      ASSERT_OK(idx->Flush());
      ASSERT_FALSE(idx->dirty());
      if (uniform(0, 1)) alloc_.MarkDurable();  // the commit became durable
    } else {
      ASSERT_OK(idx->Flush());
      std::string root = idx->EncodeRoot();
      if (!root.empty()) {
        EXPECT_EQ(ParseRoot(root).depth, ExpectedDepth(n));
      }
      idx = Open(n, root);
      ASSERT_TRUE(idx);
      ++reopens;
    }
  }
  EXPECT_GT(reopens, 50);
  ExpectRecords(idx.get(), n, ref);
  ASSERT_OK(idx->Flush());
  EXPECT_EQ(idx->disk_bytes(), LiveBytesAfterData());
  auto again = Open(n, idx->EncodeRoot());
  ExpectRecords(again.get(), n, ref);
  EXPECT_EQ(again->disk_bytes(), idx->disk_bytes());
}

INSTANTIATE_TEST_SUITE_P(ChunkCounts, FixedArrayReferenceTest,
                         ::testing::Values(1, 2, 511, 512, 513, 1024, 1025, 256 * 512 - 1, 256 * 512, 256 * 512 + 1,
                                           3 * 256 * 512 + 5));

TEST_F(FixedArrayTest, HandlesThreeNodeLevels) {
  const uint64_t n = kFanout * kFanout * kLeaf + 1;  // 65537 leaves
  ASSERT_EQ(ExpectedDepth(n), 3);
  std::mt19937_64 rng(3);
  std::map<uint64_t, uint64_t> ref;
  auto idx = Open(n);
  for (uint64_t c : {uint64_t{0}, n - 1, n - 2, kFanout * kLeaf, kFanout * kFanout * kLeaf - 1})
    ref[c] = RandomAddr(rng);
  for (int i = 0; i < 300; ++i) ref[std::uniform_int_distribution<uint64_t>(0, n - 1)(rng)] = RandomAddr(rng);
  for (auto [c, a] : ref) ASSERT_OK(idx->Put(c, {a}));
  ASSERT_OK(idx->Flush());
  EXPECT_EQ(ParseRoot(idx->EncodeRoot()).depth, 3);
  EXPECT_EQ(idx->disk_bytes(), LiveBytesAfterData());
  auto again = Open(n, idx->EncodeRoot());
  std::map<uint64_t, uint64_t> seen;
  ASSERT_OK(again->ForEach([&](uint64_t c, const ChunkRecord& r) -> Status {
    seen[c] = r.addr;
    return Status::OK();
  }));
  EXPECT_EQ(seen, ref);
  for (auto [c, a] : ref) {
    ASSERT_OK_AND_ASSIGN(ChunkRecord r, again->Get(c));
    EXPECT_EQ(r.addr, a);
    for (uint64_t d : {c + 1, c - 1}) {
      if (d >= n || ref.count(d)) continue;
      ASSERT_OK_AND_ASSIGN(ChunkRecord z, again->Get(d));
      EXPECT_FALSE(z.allocated()) << d;
    }
  }
}

// ------------------------------------------------------------ cost of a flush

TEST_F(FixedArrayTest, FlushWritesOnlyChangedLeavesAndTheirAncestors) {
  const uint64_t n = 256 * 512 + 1;  // 257 leaves under two level-1 nodes and a root
  std::mt19937_64 rng(5);
  auto idx = Open(n);
  for (uint64_t leaf = 0; leaf < CeilDiv(n, kLeaf); ++leaf) ASSERT_OK(idx->Put(leaf * kLeaf, {RandomAddr(rng)}));
  ASSERT_OK(idx->Flush());
  alloc_.MarkDurable();
  TakeWrites();

  // Every leaf holds its first record; the last leaf is leaf 256.
  const uint64_t full_leaf = LeafBlockBytes(kLeaf), one = LeafBlockBytes(1);
  const uint64_t node0 = NodeBlockBytes(256), node1 = NodeBlockBytes(1), root = NodeBlockBytes(2);
  struct Case {
    std::vector<uint64_t> chunks;
    int64_t writes;
    uint64_t bytes;
  };
  const Case cases[] = {
      {{5}, 3, LeafBlockBytes(6) + node0 + root},
      {{5, 6, 511}, 3, full_leaf + node0 + root},               // one leaf
      {{0, 512, 1024}, 5, full_leaf + 2 * one + node0 + root},  // three leaves, one parent
      {{0, 256 * 512}, 5, full_leaf + one + node0 + node1 + root},
      {{n - 1}, 3, one + node1 + root},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::PrintToString(c.chunks));
    for (uint64_t chunk : c.chunks) ASSERT_OK(idx->Put(chunk, {RandomAddr(rng)}));
    ASSERT_OK(idx->Flush());
    WriteStats w = TakeWrites();
    EXPECT_EQ(w.writes, c.writes);
    EXPECT_EQ(w.bytes, c.bytes);
    EXPECT_LE(w.writes, static_cast<int64_t>(c.chunks.size()) * (2 + 1));
    alloc_.MarkDurable();
  }
  // k random changes: at most k leaves plus their ancestors.
  for (int k : {1, 4, 16, 64}) {
    std::set<uint64_t> leaves, parents;
    for (int i = 0; i < k; ++i) {
      uint64_t chunk = std::uniform_int_distribution<uint64_t>(0, n - 1)(rng);
      leaves.insert(chunk / kLeaf);
      parents.insert(chunk / kLeaf / kFanout);
      ASSERT_OK(idx->Put(chunk, {RandomAddr(rng)}));
    }
    ASSERT_OK(idx->Flush());
    WriteStats w = TakeWrites();
    SCOPED_TRACE(k);
    EXPECT_EQ(w.writes, static_cast<int64_t>(leaves.size() + parents.size() + 1));
    EXPECT_LE(w.writes, k * 3);
    EXPECT_LE(w.bytes, leaves.size() * full_leaf + parents.size() * node0 + root);
  }
}

TEST_F(FixedArrayTest, FlushOfASmallIndexWritesOneBlock) {
  auto idx = Open(300);
  ASSERT_OK(idx->Put(7, {data_begin_}));
  TakeWrites();
  ASSERT_OK(idx->Flush());
  WriteStats w = TakeWrites();
  EXPECT_EQ(w.writes, 1);
  EXPECT_EQ(w.bytes, LeafBlockBytes(8));
  EXPECT_EQ(idx->disk_bytes(), LeafBlockBytes(8));
}

// ------------------------------------------------------------ disk bytes and destroy

TEST_F(FixedArrayTest, DiskBytesCountsTheStoredBlocks) {
  const uint64_t n = 256 * 512 + 1;
  auto idx = Open(n);
  // Leaves 0, 3 and 256 (the last, with one record).
  for (uint64_t c : {uint64_t{1}, 3 * kLeaf + 9, n - 1}) ASSERT_OK(idx->Put(c, {data_begin_ + 8}));
  ASSERT_OK(idx->Flush());
  uint64_t expect = LeafBlockBytes(2) + LeafBlockBytes(10) + LeafBlockBytes(1) + NodeBlockBytes(4) + NodeBlockBytes(1) +
                    NodeBlockBytes(2);
  EXPECT_EQ(idx->disk_bytes(), expect);
  EXPECT_EQ(idx->disk_bytes(), LiveBytesAfterData());
  EXPECT_EQ(ParseRoot(idx->EncodeRoot()).disk_bytes, expect);
  // Rewriting a block changes the figure by its new length; a new leaf
  // adds one.
  alloc_.MarkDurable();
  ASSERT_OK(idx->Put(1, {data_begin_ + 16}));
  ASSERT_OK(idx->Put(10 * kLeaf, {data_begin_ + 16}));
  ASSERT_OK(idx->Flush());
  expect += LeafBlockBytes(1) + NodeBlockBytes(11) - NodeBlockBytes(4);
  EXPECT_EQ(idx->disk_bytes(), expect);
  EXPECT_EQ(idx->disk_bytes(), LiveBytesAfterData());
  auto again = Open(n, idx->EncodeRoot());
  EXPECT_EQ(again->disk_bytes(), expect);
}

// ------------------------------------------------------------ damaged blocks

// Flips one byte of the file; restores it when it goes out of scope.
class ByteFlip {
 public:
  ByteFlip(testutil::Disk* disk, uint64_t at, char mask = 0x10) : disk_(disk), at_(at), mask_(mask) {
    disk_->current[at_] ^= mask_;
  }
  ~ByteFlip() { disk_->current[at_] ^= mask_; }

 private:
  testutil::Disk* disk_;
  uint64_t at_;
  char mask_;
};

TEST_F(FixedArrayTest, RejectsEveryByteFlipInALeaf) {
  auto idx = Open(300);
  ASSERT_OK(idx->Put(299, {data_begin_ + 8}));
  ASSERT_OK(idx->Flush());
  const std::string root = idx->EncodeRoot();
  const BlockRef leaf = ParseRoot(root).ref;
  ASSERT_EQ(leaf.len, LeafBlockBytes(300));  // up to the last record
  for (uint64_t i = 0; i < leaf.len; ++i) {
    ByteFlip flip(disk_.get(), leaf.addr + i);
    auto damaged = Open(300, root);
    SCOPED_TRACE(i);
    EXPECT_CODE(damaged->Get(299), Code::kCorruption);
    EXPECT_CODE(damaged->Get(0), Code::kCorruption);  // the same leaf
    EXPECT_CODE(damaged->Get(0), Code::kCorruption);  // and still, not the fill value
    EXPECT_CODE(damaged->ForEach([](uint64_t, const ChunkRecord&) { return Status::OK(); }), Code::kCorruption);
    EXPECT_CODE(damaged->Put(5, {data_begin_}), Code::kCorruption);
  }
  // Undamaged again: the same root reads fine.
  auto fine = Open(300, root);
  ASSERT_OK_AND_ASSIGN(ChunkRecord r, fine->Get(299));
  EXPECT_EQ(r.addr, data_begin_ + 8);
}

TEST_F(FixedArrayTest, RejectsEveryByteFlipInANode) {
  const uint64_t n = 256 * 512 + 1;
  auto idx = Open(n);
  ASSERT_OK(idx->Put(0, {data_begin_}));
  ASSERT_OK(idx->Put(n - 1, {data_begin_ + 8}));
  ASSERT_OK(idx->Flush());
  const std::string root = idx->EncodeRoot();
  const BlockRef top = ParseRoot(root).ref;
  ASSERT_EQ(top.len, NodeBlockBytes(2));
  ASSERT_OK_AND_ASSIGN(std::string top_payload, store_.Read(top, BlockType::kPagedNode, "root"));
  // Level-1 node 1 (above the last leaf) is the second child of the root.
  const BlockRef level1 = ChildOf(top_payload, 1);
  ASSERT_EQ(level1.len, NodeBlockBytes(1));
  for (BlockRef node : {top, level1}) {
    for (uint64_t i = 0; i < node.len; ++i) {
      ByteFlip flip(disk_.get(), node.addr + i, 0x01);
      auto damaged = Open(n, root);
      SCOPED_TRACE(std::to_string(node.addr) + "+" + std::to_string(i));
      EXPECT_CODE(damaged->Get(n - 1), Code::kCorruption);
      EXPECT_CODE(damaged->Get(n - 1), Code::kCorruption);
      EXPECT_CODE(damaged->Put(n - 1, {data_begin_}), Code::kCorruption);
      EXPECT_CODE(damaged->ForEach([](uint64_t, const ChunkRecord&) { return Status::OK(); }), Code::kCorruption);
    }
  }
}

TEST_F(FixedArrayTest, DamagedLeafDoesNotAffectOtherLeaves) {
  const uint64_t n = 4 * kLeaf;
  auto idx = Open(n);
  ASSERT_OK(idx->Put(10, {data_begin_}));
  ASSERT_OK(idx->Put(3 * kLeaf + 10, {data_begin_ + 8}));
  ASSERT_OK(idx->Flush());
  const std::string root = idx->EncodeRoot();
  ASSERT_OK_AND_ASSIGN(std::string node, store_.Read(ParseRoot(root).ref, BlockType::kPagedNode, "root"));
  const uint64_t leaf0 = ChildOf(node, 0).addr;
  ByteFlip flip(disk_.get(), leaf0 + 40);
  auto damaged = Open(n, root);
  EXPECT_CODE(damaged->Get(10), Code::kCorruption);
  ASSERT_OK_AND_ASSIGN(ChunkRecord other, damaged->Get(3 * kLeaf + 10));
  EXPECT_EQ(other.addr, data_begin_ + 8);
  ASSERT_OK_AND_ASSIGN(ChunkRecord never_written, damaged->Get(kLeaf + 1));
  EXPECT_FALSE(never_written.allocated());
}

// ------------------------------------------------------------ hostile roots

TEST_F(FixedArrayTest, RejectsRootWithAnotherChunkCount) {
  auto idx = Open(1000);
  ASSERT_OK(idx->Put(999, {data_begin_}));
  ASSERT_OK(idx->Flush());
  const std::string root = idx->EncodeRoot();
  for (uint64_t n : {uint64_t{999}, uint64_t{1001}, uint64_t{1}, uint64_t{512} * 1000}) {
    SCOPED_TRACE(n);
    EXPECT_CODE(Index::Open(n, root, &store_, "d"), Code::kCorruption);
  }
  // The chunk count inside the root disagrees with the dataset's.
  Root r = ParseRoot(root);
  EXPECT_CODE(Index::Open(1000, MakeRoot(r.ref, r.depth, 1001), &store_, "d"), Code::kCorruption);
}

TEST_F(FixedArrayTest, RejectsRootWithAnotherDepth) {
  for (uint64_t n : {uint64_t{300}, uint64_t{1000}, 256 * 512 + uint64_t{1}}) {
    auto idx = Open(n);
    ASSERT_OK(idx->Put(n - 1, {data_begin_}));
    ASSERT_OK(idx->Flush());
    Root r = ParseRoot(idx->EncodeRoot());
    for (int depth : {r.depth - 1, r.depth + 1, 255}) {
      if (depth < 0) continue;
      SCOPED_TRACE(std::to_string(n) + " depth " + std::to_string(depth));
      EXPECT_CODE(Index::Open(n, MakeRoot(r.ref, depth, n, r.disk_bytes), &store_, "d"), Code::kCorruption);
    }
  }
}

TEST_F(FixedArrayTest, RejectsRootOutOfBounds) {
  const uint64_t end = alloc_.file_end();
  for (BlockRef ref : {BlockRef{end, 100}, BlockRef{end - 10, 100}, BlockRef{kDataStart - 64, 100},
                       BlockRef{kDataStart, 8}, BlockRef{0, 100}, BlockRef{~uint64_t{0} - 10, 100}}) {
    SCOPED_TRACE(std::to_string(ref.addr) + "+" + std::to_string(ref.len));
    EXPECT_CODE(Index::Open(100, MakeRoot(ref, 0, 100), &store_, "d"), Code::kCorruption);
  }
}

// ------------------------------------------------------------ the first layout (types 3 and 4)

class FixedArrayHostileTest : public FixedArrayTest {
 protected:
  BlockRef Write(BlockType t, const std::string& payload) {
    auto r = store_.Write(t, payload);
    EXPECT_TRUE(r.has_value());
    return r ? *r : BlockRef{};
  }
  // Opens an index of n chunks whose root is the given block; Get(chunk).
  Status GetThrough(uint64_t n, BlockRef root, uint64_t chunk) {
    auto idx = Index::Open(n, MakeRoot(root, ExpectedDepth(n), n), &store_, "d");
    if (!idx) return idx.error();
    auto r = (*idx)->Get(chunk);
    return r ? Status::OK() : r.error();
  }
  std::vector<uint64_t> Addrs(size_t count) { return std::vector<uint64_t>(count, data_begin_); }
};

TEST_F(FixedArrayHostileTest, AcceptsWellFormedHandBuiltBlocks) {
  // The baseline of the tests below: hand-built blocks that are right.
  BlockRef leaf = Write(BlockType::kFixedArrayLeaf, FirstLeafPayload(0, 100, Addrs(100)));
  EXPECT_OK(GetThrough(100, leaf, 50));
  BlockRef leaf1 = Write(BlockType::kFixedArrayLeaf, FirstLeafPayload(512, 88, Addrs(88)));
  BlockRef node = Write(BlockType::kFixedArrayNode, FirstNodePayload(1, 0, 2, {BlockRef{}, leaf1}));
  EXPECT_OK(GetThrough(600, node, 599));
  EXPECT_OK(GetThrough(600, node, 0));
}

TEST_F(FixedArrayHostileTest, RejectsLeavesThatDoNotFitTheirPosition) {
  const uint64_t end = alloc_.file_end() + 1000000;  // beyond anything allocated so far
  struct {
    const char* what;
    std::string payload;
  } bad[] = {
      {"wrong first chunk", FirstLeafPayload(512, 100, Addrs(100))},
      {"count too small", FirstLeafPayload(0, 99, Addrs(99))},
      {"count too large", FirstLeafPayload(0, 101, Addrs(101))},
      {"count 2^32-1", FirstLeafPayload(0, 0xffffffffu, Addrs(100))},
      {"records missing", FirstLeafPayload(0, 100, Addrs(99))},
      {"trailing record", FirstLeafPayload(0, 100, Addrs(101))},
      {"trailing byte", FirstLeafPayload(0, 100, Addrs(100)) + "x"},
      {"header only", FirstLeafPayload(0, 100, {})},
      {"empty", ""},
      {"address in the superblock area", FirstLeafPayload(0, 100, {1})},
      {"address just before data",
       [&] {
         auto a = Addrs(100);
         a[7] = kDataStart - 1;
         return FirstLeafPayload(0, 100, a);
       }()},
      {"address past file_end",
       [&] {
         auto a = Addrs(100);
         a[99] = end;
         return FirstLeafPayload(0, 100, a);
       }()},
      {"address 2^64-1",
       [&] {
         auto a = Addrs(100);
         a[50] = ~uint64_t{0};
         return FirstLeafPayload(0, 100, a);
       }()},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.what);
    BlockRef leaf = Write(BlockType::kFixedArrayLeaf, b.payload);
    EXPECT_CODE(GetThrough(100, leaf, 50), Code::kCorruption);
  }
}

TEST_F(FixedArrayHostileTest, RejectsBlocksOfTheWrongType) {
  BlockRef as_node = Write(BlockType::kFixedArrayNode, FirstLeafPayload(0, 100, Addrs(100)));
  EXPECT_CODE(GetThrough(100, as_node, 0), Code::kCorruption);
  BlockRef leaf = Write(BlockType::kFixedArrayLeaf, FirstLeafPayload(0, 100, Addrs(100)));
  EXPECT_CODE(GetThrough(600, leaf, 0), Code::kCorruption);  // depth 1 wants a node
  BlockRef group = Write(BlockType::kGroup, FirstLeafPayload(0, 100, Addrs(100)));
  EXPECT_CODE(GetThrough(100, group, 0), Code::kCorruption);
}

TEST_F(FixedArrayHostileTest, RejectsNodesThatDoNotFitTheirPosition) {
  BlockRef leaf0 = Write(BlockType::kFixedArrayLeaf, FirstLeafPayload(0, 512, Addrs(512)));
  BlockRef leaf1 = Write(BlockType::kFixedArrayLeaf, FirstLeafPayload(512, 88, Addrs(88)));
  const BlockRef far{alloc_.file_end() + 4096, 100};
  struct {
    const char* what;
    std::string payload;
  } bad[] = {
      {"level 0", FirstNodePayload(0, 0, 2, {leaf0, leaf1})},
      {"level 2", FirstNodePayload(2, 0, 2, {leaf0, leaf1})},
      {"first leaf 1", FirstNodePayload(1, 1, 2, {leaf0, leaf1})},
      {"one child", FirstNodePayload(1, 0, 1, {leaf0})},
      {"three children", FirstNodePayload(1, 0, 3, {leaf0, leaf1, leaf1})},
      {"count says more than present", FirstNodePayload(1, 0, 2, {leaf0})},
      {"trailing child", FirstNodePayload(1, 0, 2, {leaf0, leaf1, leaf1})},
      {"trailing byte", FirstNodePayload(1, 0, 2, {leaf0, leaf1}) + "z"},
      {"child past file_end", FirstNodePayload(1, 0, 2, {leaf0, far})},
      {"child before data", FirstNodePayload(1, 0, 2, {BlockRef{64, 100}, leaf1})},
      {"child shorter than a header", FirstNodePayload(1, 0, 2, {leaf0, BlockRef{leaf1.addr, 4}})},
      {"child length without address", FirstNodePayload(1, 0, 2, {BlockRef{0, 100}, leaf1})},
      {"leaves swapped", FirstNodePayload(1, 0, 2, {leaf1, leaf0})},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.what);
    BlockRef node = Write(BlockType::kFixedArrayNode, b.payload);
    Status s = GetThrough(600, node, 0);
    Status t = GetThrough(600, node, 599);
    // The node itself or the leaf it sends a lookup to is rejected.
    EXPECT_TRUE(s.code() == Code::kCorruption || t.code() == Code::kCorruption)
        << s.ToString() << " / " << t.ToString();
    EXPECT_TRUE(s.ok() || s.code() == Code::kCorruption) << s.ToString();
    EXPECT_TRUE(t.ok() || t.code() == Code::kCorruption) << t.ToString();
  }
}

TEST_F(FixedArrayHostileTest, RejectsAnUpperNodeThatPointsAtTheWrongLevel) {
  // n needs depth 2; the root's children must be level-1 nodes.
  const uint64_t n = 256 * 512 + 1;
  BlockRef leaf = Write(BlockType::kFixedArrayLeaf, FirstLeafPayload(0, 512, Addrs(512)));
  BlockRef level1 = Write(BlockType::kFixedArrayNode, FirstNodePayload(1, 0, 256, std::vector<BlockRef>(256)));
  BlockRef level1_last = Write(BlockType::kFixedArrayNode, FirstNodePayload(1, 256, 1, {BlockRef{}}));
  BlockRef good = Write(BlockType::kFixedArrayNode, FirstNodePayload(2, 0, 2, {level1, level1_last}));
  EXPECT_OK(GetThrough(n, good, 0));
  BlockRef to_leaf = Write(BlockType::kFixedArrayNode, FirstNodePayload(2, 0, 2, {leaf, level1_last}));
  EXPECT_CODE(GetThrough(n, to_leaf, 0), Code::kCorruption);
  BlockRef to_self_level = Write(BlockType::kFixedArrayNode, FirstNodePayload(2, 0, 2, {good, level1_last}));
  EXPECT_CODE(GetThrough(n, to_self_level, 0), Code::kCorruption);
  BlockRef swapped = Write(BlockType::kFixedArrayNode, FirstNodePayload(2, 0, 2, {level1_last, level1}));
  EXPECT_CODE(GetThrough(n, swapped, 0), Code::kCorruption);
}

TEST_F(FixedArrayHostileTest, ReadsAFirstLayoutTreeAndRewritesWhatChangesInTheNew) {
  // A tree of two node levels as the first layout wrote it: leaf 0 (two
  // records) and leaf 256 (the grid's last chunk), their level-1 nodes and
  // the top.
  const uint64_t n = 256 * 512 + 1;
  std::vector<uint64_t> addrs(kLeaf, 0);
  addrs[3] = data_begin_ + 8;
  addrs[100] = data_begin_ + 16;
  const BlockRef leaf0 = Write(BlockType::kFixedArrayLeaf, FirstLeafPayload(0, kLeaf, addrs));
  const BlockRef leaf256 = Write(BlockType::kFixedArrayLeaf, FirstLeafPayload(256 * kLeaf, 1, {data_begin_ + 24}));
  std::vector<BlockRef> kids(256);
  kids[0] = leaf0;
  const BlockRef node0 = Write(BlockType::kFixedArrayNode, FirstNodePayload(1, 0, 256, kids));
  const BlockRef node1 = Write(BlockType::kFixedArrayNode, FirstNodePayload(1, 256, 1, {leaf256}));
  const BlockRef top = Write(BlockType::kFixedArrayNode, FirstNodePayload(2, 0, 2, {node0, node1}));
  const uint64_t bytes = leaf0.len + leaf256.len + node0.len + node1.len + top.len;
  alloc_.MarkDurable();
  ASSERT_EQ(LiveBytesAfterData(), bytes);
  std::map<uint64_t, uint64_t> ref = {{3, data_begin_ + 8}, {100, data_begin_ + 16}, {n - 1, data_begin_ + 24}};

  auto idx = Open(n, MakeRoot(top, 2, n, bytes));
  ExpectRecords(idx.get(), n, ref);
  std::vector<BlockRef> blocks;
  ASSERT_OK(idx->CollectBlocks(&blocks));
  EXPECT_EQ(blocks.size(), 5u);
  EXPECT_EQ(idx->disk_bytes(), bytes);

  // A change in leaf 0 writes it, its node and the top in the new layout;
  // node 1 and leaf 256 stay as they were, under the new top.
  ASSERT_OK(idx->Put(5, {data_begin_ + 32}));
  ref[5] = data_begin_ + 32;
  TakeWrites();
  ASSERT_OK(idx->Flush());
  WriteStats w = TakeWrites();
  EXPECT_EQ(w.writes, 3);
  EXPECT_EQ(w.bytes, LeafBlockBytes(101) + NodeBlockBytes(1) + NodeBlockBytes(2));
  EXPECT_EQ(idx->disk_bytes(), LiveBytesAfterData());
  Root root = ParseRoot(idx->EncodeRoot());
  EXPECT_EQ(root.depth, 2);
  ASSERT_OK_AND_ASSIGN(std::string new_top, store_.Read(root.ref, BlockType::kPagedNode, "top"));
  EXPECT_EQ(ChildOf(new_top, 1), node1);
  ASSERT_OK_AND_ASSIGN(BlockType t, store_.TypeOf(ChildOf(new_top, 0), "node 0"));
  EXPECT_EQ(t, BlockType::kPagedNode);
  auto again = Open(n, idx->EncodeRoot());
  ExpectRecords(again.get(), n, ref);

  // Emptying leaf 256 drops it and its node; then nothing of the first
  // layout is left.
  alloc_.MarkDurable();
  ASSERT_OK(again->Put(n - 1, {0}));
  ref.erase(n - 1);
  ASSERT_OK(again->Flush());
  EXPECT_EQ(TakeWrites().writes, 1);  // the top
  EXPECT_EQ(again->disk_bytes(), LiveBytesAfterData());
  auto third = Open(n, again->EncodeRoot());
  ExpectRecords(third.get(), n, ref);
  blocks.clear();
  ASSERT_OK(third->CollectBlocks(&blocks));
  ASSERT_EQ(blocks.size(), 3u);
  for (const BlockRef& b : blocks) {
    ASSERT_OK_AND_ASSIGN(BlockType type, store_.TypeOf(b, "block"));
    EXPECT_TRUE(type == BlockType::kPagedLeaf || type == BlockType::kPagedNode) << static_cast<int>(type);
  }
}

TEST_F(FixedArrayHostileTest, ReadsFirstLayoutBlocksOnlyForAFixedArray) {
  // An extensible array never had them: a type-3 leaf there is Corruption.
  BlockRef leaf = Write(BlockType::kFixedArrayLeaf, FirstLeafPayload(0, 100, Addrs(100)));
  EXPECT_OK(GetThrough(100, leaf, 5));
  IndexGeometry g = Geometry1D(1);
  g.max_grid = {kUnlimited, 100};
  ASSERT_OK_AND_ASSIGN(auto ext,
                       PagedArrayIndex::Open(IndexKind::kExtensibleArray, g, MakeRoot(leaf, 0, 100), &store_, "d"));
  EXPECT_CODE(ext->Get(Dims{0, 5}), Code::kCorruption);
}

}  // namespace
}  // namespace slabfs::engine
