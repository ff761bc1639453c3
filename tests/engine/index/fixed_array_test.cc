// What only the fixed-array chunk index does (index_conformance_test.cc
// holds what every kind does): against a std::map reference over chunk
// counts that give zero to three node levels, ForEach across leaf
// boundaries, the depth a chunk count gives, the cost of a Flush in
// blocks, disk_bytes, every byte flip of a leaf and a node, and hostile
// roots and hand-built blocks.
#include "engine/index/fixed_array.h"

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
  static constexpr uint64_t kLeafRecords = FixedArrayIndex::kLeafRecords;
  static constexpr uint64_t kNodeFanout = FixedArrayIndex::kNodeFanout;

  static Result<std::unique_ptr<Index>> Open(uint64_t chunks, std::string_view root, BlockStore* store,
                                             std::string what) {
    auto r = FixedArrayIndex::Open(Geometry1D(chunks), root, store, std::move(what));
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

 private:
  explicit Index(std::unique_ptr<FixedArrayIndex> f) : f_(std::move(f)) {}
  std::unique_ptr<FixedArrayIndex> f_;
};
constexpr uint64_t kLeaf = Index::kLeafRecords;   // 512
constexpr uint64_t kFanout = Index::kNodeFanout;  // 256
constexpr uint64_t kDataRegion = 1 << 20;         // where chunk addresses point
constexpr size_t kRootBytes = 8 + 4 + 1 + 8 + 8;

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

int ExpectedDepth(uint64_t chunks) {
  int depth = 0;
  for (uint64_t n = CeilDiv(chunks, kLeaf); n > 1; n = CeilDiv(n, kFanout)) ++depth;
  return depth;
}

uint64_t LeafBlockBytes(uint64_t records) { return kBlockHeaderBytes + 12 + 8 * records; }
uint64_t NodeBlockBytes(uint64_t children) { return kBlockHeaderBytes + 13 + 12 * children; }

struct Root {
  BlockRef ref;
  int depth = 0;
  uint64_t chunks = 0;
  uint64_t disk_bytes = 0;
};

Root ParseRoot(const std::string& s) {
  Root r;
  EXPECT_EQ(s.size(), kRootBytes);
  if (s.size() != kRootBytes) return r;
  r.ref.addr = LoadU64(s.data());
  r.ref.len = LoadU32(s.data() + 8);
  r.depth = static_cast<uint8_t>(s[12]);
  r.chunks = LoadU64(s.data() + 13);
  r.disk_bytes = LoadU64(s.data() + 21);
  return r;
}

std::string MakeRoot(BlockRef ref, int depth, uint64_t chunks, uint64_t disk_bytes = 0) {
  std::string s;
  PutU64(&s, ref.addr);
  PutU32(&s, ref.len);
  PutU8(&s, static_cast<uint8_t>(depth));
  PutU64(&s, chunks);
  PutU64(&s, disk_bytes);
  return s;
}

std::string LeafPayload(uint64_t first, uint32_t count, const std::vector<uint64_t>& addrs) {
  std::string p;
  PutU64(&p, first);
  PutU32(&p, count);
  for (uint64_t a : addrs) PutU64(&p, a);
  return p;
}

std::string NodePayload(uint8_t level, uint64_t first_leaf, uint32_t count, const std::vector<BlockRef>& refs) {
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

TEST_F(FixedArrayTest, RejectsEmptyChunkGrid) {
  EXPECT_CODE(Index::Open(0, "", &store_, "d"), Code::kCorruption);
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
  const std::pair<uint64_t, int> cases[] = {{1, 0},   {512, 0},          {513, 1},
                                            {1024, 1}, {256 * 512, 1}, {256 * 512 + 1, 2}};
  for (auto [n, depth] : cases) {
    SCOPED_TRACE(n);
    ASSERT_EQ(ExpectedDepth(n), depth);
    auto idx = Open(n);
    ASSERT_OK(idx->Put(n - 1, {data_begin_}));
    ASSERT_OK(idx->Flush());
    Root root = ParseRoot(idx->EncodeRoot());
    EXPECT_EQ(root.depth, depth);
    EXPECT_EQ(root.chunks, n);
    EXPECT_EQ(root.disk_bytes, idx->disk_bytes());
  }
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
  ASSERT_OK_AND_ASSIGN(auto idx, FixedArrayIndex::Open(g, "", &store_, "d"));
  const uint64_t c = 513;
  ASSERT_OK(idx->Put(ChunkCoord(&c, 1), ChunkRecord{data_begin_, 1234, 0x3}));
  ASSERT_OK(idx->Flush());
  ASSERT_OK_AND_ASSIGN(auto again, FixedArrayIndex::Open(g, idx->EncodeRoot(), &store_, "d"));
  ASSERT_OK_AND_ASSIGN(ChunkRecord rec, again->Get(ChunkCoord(&c, 1)));
  EXPECT_EQ(rec, (ChunkRecord{data_begin_, 1234, 0x3}));
  // A record claiming more than a chunk can hold is refused on load.
  ASSERT_OK(idx->Put(ChunkCoord(&c, 1), ChunkRecord{data_begin_, 4097, 0}));
  ASSERT_OK(idx->Flush());
  ASSERT_OK_AND_ASSIGN(auto bad, FixedArrayIndex::Open(g, idx->EncodeRoot(), &store_, "d"));
  EXPECT_CODE(bad->Get(ChunkCoord(&c, 1)), Code::kCorruption);
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
                         ::testing::Values(1, 2, 511, 512, 513, 1024, 1025, 256 * 512 - 1, 256 * 512,
                                           256 * 512 + 1, 3 * 256 * 512 + 5));

TEST_F(FixedArrayTest, HandlesThreeNodeLevels) {
  const uint64_t n = kFanout * kFanout * kLeaf + 1;  // 65537 leaves
  ASSERT_EQ(ExpectedDepth(n), 3);
  std::mt19937_64 rng(3);
  std::map<uint64_t, uint64_t> ref;
  auto idx = Open(n);
  for (uint64_t c : {uint64_t{0}, n - 1, n - 2, kFanout * kLeaf, kFanout * kFanout * kLeaf - 1}) ref[c] = RandomAddr(rng);
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

  const uint64_t full_leaf = LeafBlockBytes(kLeaf), last_leaf = LeafBlockBytes(1);
  const uint64_t node0 = NodeBlockBytes(256), node1 = NodeBlockBytes(1), root = NodeBlockBytes(2);
  struct Case {
    std::vector<uint64_t> chunks;
    int64_t writes;
    uint64_t bytes;
  };
  const Case cases[] = {
      {{5}, 3, full_leaf + node0 + root},
      {{5, 6, 511}, 3, full_leaf + node0 + root},               // one leaf
      {{0, 512, 1024}, 5, 3 * full_leaf + node0 + root},        // three leaves, one parent
      {{0, 256 * 512}, 5, full_leaf + last_leaf + node0 + node1 + root},
      {{n - 1}, 3, last_leaf + node1 + root},
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
  EXPECT_EQ(w.bytes, LeafBlockBytes(300));
  EXPECT_EQ(idx->disk_bytes(), LeafBlockBytes(300));
}

// ------------------------------------------------------------ disk bytes and destroy

TEST_F(FixedArrayTest, DiskBytesCountsTheStoredBlocks) {
  const uint64_t n = 256 * 512 + 1;
  auto idx = Open(n);
  // Leaves 0, 3 and 256 (the last, with one record).
  for (uint64_t c : {uint64_t{1}, 3 * kLeaf + 9, n - 1}) ASSERT_OK(idx->Put(c, {data_begin_ + 8}));
  ASSERT_OK(idx->Flush());
  uint64_t expect = 2 * LeafBlockBytes(kLeaf) + LeafBlockBytes(1) + NodeBlockBytes(256) + NodeBlockBytes(1) +
                    NodeBlockBytes(2);
  EXPECT_EQ(idx->disk_bytes(), expect);
  EXPECT_EQ(idx->disk_bytes(), LiveBytesAfterData());
  EXPECT_EQ(ParseRoot(idx->EncodeRoot()).disk_bytes, expect);
  // Rewriting blocks keeps the figure; a new leaf adds one.
  alloc_.MarkDurable();
  ASSERT_OK(idx->Put(1, {data_begin_ + 16}));
  ASSERT_OK(idx->Put(10 * kLeaf, {data_begin_ + 16}));
  ASSERT_OK(idx->Flush());
  expect += LeafBlockBytes(kLeaf);
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
  ASSERT_EQ(leaf.len, LeafBlockBytes(300));
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
  ASSERT_OK_AND_ASSIGN(std::string top_payload, store_.Read(top, BlockType::kFixedArrayNode, "root"));
  // Level-1 node 1 (above the last leaf) is the second child of the root.
  const BlockRef level1{LoadU64(top_payload.data() + 13 + 12), LoadU32(top_payload.data() + 13 + 12 + 8)};
  ASSERT_EQ(level1.len, NodeBlockBytes(1));
  for (BlockRef node : {top, level1}) {
    for (uint64_t i = 0; i < node.len; ++i) {
      ByteFlip flip(disk_.get(), node.addr + i, 0x01);
      auto damaged = Open(n, root);
      SCOPED_TRACE(std::to_string(node.addr) + "+" + std::to_string(i));
      EXPECT_CODE(damaged->Get(n - 1), Code::kCorruption);
      EXPECT_CODE(damaged->Get(n - 1), Code::kCorruption);
      EXPECT_CODE(damaged->Put(n - 2, {data_begin_}), Code::kCorruption);
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
  ASSERT_OK_AND_ASSIGN(std::string node, store_.Read(ParseRoot(root).ref, BlockType::kFixedArrayNode, "root"));
  const uint64_t leaf0 = LoadU64(node.data() + 13);
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

// ------------------------------------------------------------ hostile blocks (valid checksums)

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
  BlockRef leaf = Write(BlockType::kFixedArrayLeaf, LeafPayload(0, 100, Addrs(100)));
  EXPECT_OK(GetThrough(100, leaf, 50));
  BlockRef leaf1 = Write(BlockType::kFixedArrayLeaf, LeafPayload(512, 88, Addrs(88)));
  BlockRef node = Write(BlockType::kFixedArrayNode, NodePayload(1, 0, 2, {BlockRef{}, leaf1}));
  EXPECT_OK(GetThrough(600, node, 599));
  EXPECT_OK(GetThrough(600, node, 0));
}

TEST_F(FixedArrayHostileTest, RejectsLeavesThatDoNotFitTheirPosition) {
  const uint64_t end = alloc_.file_end() + 1000000;  // beyond anything allocated so far
  struct {
    const char* what;
    std::string payload;
  } bad[] = {
      {"wrong first chunk", LeafPayload(512, 100, Addrs(100))},
      {"count too small", LeafPayload(0, 99, Addrs(99))},
      {"count too large", LeafPayload(0, 101, Addrs(101))},
      {"count 2^32-1", LeafPayload(0, 0xffffffffu, Addrs(100))},
      {"records missing", LeafPayload(0, 100, Addrs(99))},
      {"trailing record", LeafPayload(0, 100, Addrs(101))},
      {"trailing byte", LeafPayload(0, 100, Addrs(100)) + "x"},
      {"header only", LeafPayload(0, 100, {})},
      {"empty", ""},
      {"address in the superblock area", LeafPayload(0, 100, {1})},
      {"address just before data", [&] {
         auto a = Addrs(100);
         a[7] = kDataStart - 1;
         return LeafPayload(0, 100, a);
       }()},
      {"address past file_end", [&] {
         auto a = Addrs(100);
         a[99] = end;
         return LeafPayload(0, 100, a);
       }()},
      {"address 2^64-1", [&] {
         auto a = Addrs(100);
         a[50] = ~uint64_t{0};
         return LeafPayload(0, 100, a);
       }()},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.what);
    BlockRef leaf = Write(BlockType::kFixedArrayLeaf, b.payload);
    EXPECT_CODE(GetThrough(100, leaf, 50), Code::kCorruption);
  }
}

TEST_F(FixedArrayHostileTest, RejectsBlocksOfTheWrongType) {
  BlockRef as_node = Write(BlockType::kFixedArrayNode, LeafPayload(0, 100, Addrs(100)));
  EXPECT_CODE(GetThrough(100, as_node, 0), Code::kCorruption);
  BlockRef leaf = Write(BlockType::kFixedArrayLeaf, LeafPayload(0, 100, Addrs(100)));
  EXPECT_CODE(GetThrough(600, leaf, 0), Code::kCorruption);  // depth 1 wants a node
  BlockRef group = Write(BlockType::kGroup, LeafPayload(0, 100, Addrs(100)));
  EXPECT_CODE(GetThrough(100, group, 0), Code::kCorruption);
}

TEST_F(FixedArrayHostileTest, RejectsNodesThatDoNotFitTheirPosition) {
  BlockRef leaf0 = Write(BlockType::kFixedArrayLeaf, LeafPayload(0, 512, Addrs(512)));
  BlockRef leaf1 = Write(BlockType::kFixedArrayLeaf, LeafPayload(512, 88, Addrs(88)));
  const BlockRef far{alloc_.file_end() + 4096, 100};
  struct {
    const char* what;
    std::string payload;
  } bad[] = {
      {"level 0", NodePayload(0, 0, 2, {leaf0, leaf1})},
      {"level 2", NodePayload(2, 0, 2, {leaf0, leaf1})},
      {"first leaf 1", NodePayload(1, 1, 2, {leaf0, leaf1})},
      {"one child", NodePayload(1, 0, 1, {leaf0})},
      {"three children", NodePayload(1, 0, 3, {leaf0, leaf1, leaf1})},
      {"count says more than present", NodePayload(1, 0, 2, {leaf0})},
      {"trailing child", NodePayload(1, 0, 2, {leaf0, leaf1, leaf1})},
      {"trailing byte", NodePayload(1, 0, 2, {leaf0, leaf1}) + "z"},
      {"child past file_end", NodePayload(1, 0, 2, {leaf0, far})},
      {"child before data", NodePayload(1, 0, 2, {BlockRef{64, 100}, leaf1})},
      {"child shorter than a header", NodePayload(1, 0, 2, {leaf0, BlockRef{leaf1.addr, 4}})},
      {"child length without address", NodePayload(1, 0, 2, {BlockRef{0, 100}, leaf1})},
      {"leaves swapped", NodePayload(1, 0, 2, {leaf1, leaf0})},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.what);
    BlockRef node = Write(BlockType::kFixedArrayNode, b.payload);
    Status s = GetThrough(600, node, 0);
    Status t = GetThrough(600, node, 599);
    // The node itself or the leaf it sends a lookup to is rejected.
    EXPECT_TRUE(s.code() == Code::kCorruption || t.code() == Code::kCorruption) << s.ToString() << " / " << t.ToString();
    EXPECT_TRUE(s.ok() || s.code() == Code::kCorruption) << s.ToString();
    EXPECT_TRUE(t.ok() || t.code() == Code::kCorruption) << t.ToString();
  }
}

TEST_F(FixedArrayHostileTest, RejectsAnUpperNodeThatPointsAtTheWrongLevel) {
  // n needs depth 2; the root's children must be level-1 nodes.
  const uint64_t n = 256 * 512 + 1;
  BlockRef leaf = Write(BlockType::kFixedArrayLeaf, LeafPayload(0, 512, Addrs(512)));
  BlockRef level1 = Write(BlockType::kFixedArrayNode, NodePayload(1, 0, 256, std::vector<BlockRef>(256)));
  BlockRef level1_last = Write(BlockType::kFixedArrayNode, NodePayload(1, 256, 1, {BlockRef{}}));
  BlockRef good = Write(BlockType::kFixedArrayNode, NodePayload(2, 0, 2, {level1, level1_last}));
  EXPECT_OK(GetThrough(n, good, 0));
  BlockRef to_leaf = Write(BlockType::kFixedArrayNode, NodePayload(2, 0, 2, {leaf, level1_last}));
  EXPECT_CODE(GetThrough(n, to_leaf, 0), Code::kCorruption);
  BlockRef to_self_level = Write(BlockType::kFixedArrayNode, NodePayload(2, 0, 2, {good, level1_last}));
  EXPECT_CODE(GetThrough(n, to_self_level, 0), Code::kCorruption);
  BlockRef swapped = Write(BlockType::kFixedArrayNode, NodePayload(2, 0, 2, {level1_last, level1}));
  EXPECT_CODE(GetThrough(n, swapped, 0), Code::kCorruption);
}

}  // namespace
}  // namespace slabfs::engine

