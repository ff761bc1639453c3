// What only the extensible-array chunk index does (index_conformance_test.cc
// holds what every kind does): the key layout, against a std::map reference
// over geometries of rank 1 to 4 with the unlimited dimension in different
// places, depth growth and shrinking across zero to seven node levels,
// ForEachIn's reads along the unlimited dimension, the exact cost of a
// Flush, disk_bytes, every byte flip of a leaf and a node, and hostile
// roots and hand-built blocks.
#include "engine/index/paged_array.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/format/layout.h"
#include "engine/util/coding.h"
#include "tests/testutil/fault_file.h"
#include "tests/testutil/paged_array_blocks.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::engine {
namespace {
namespace extensible_array_test {  // its own names in a unity batch

using namespace testutil::paged;  // the blocks and root, written out
using Index = PagedArrayIndex;
constexpr IndexKind kExt = IndexKind::kExtensibleArray;
constexpr uint64_t kLeaf = Index::kLeafRecords;   // 512
constexpr uint64_t kFanout = Index::kNodeFanout;  // 256
constexpr uint64_t U = kUnlimited;
constexpr uint64_t kDataRegion = 1 << 20;     // where chunk addresses point
constexpr uint64_t kMaxChunkBytes = 1 << 16;  // filtered geometries

IndexGeometry Geo(Dims max_grid, bool filtered = false) {
  IndexGeometry g;
  g.max_grid = std::move(max_grid);
  g.filtered = filtered;
  g.max_chunk_bytes = filtered ? kMaxChunkBytes : 0;
  return g;
}

// The key layout, written out independently of the index: c[u] * row plus
// the C-order position of the other coordinates.
size_t UnlimitedDim(const IndexGeometry& g) {
  for (size_t d = 0; d < g.rank(); ++d)
    if (g.max_grid[d] == U) return d;
  ADD_FAILURE() << "no unlimited dimension";
  return 0;
}
uint64_t Row(const IndexGeometry& g) {
  uint64_t row = 1;
  for (uint64_t m : g.max_grid)
    if (m != U) row *= m;
  return row;
}
uint64_t KeyOf(const IndexGeometry& g, const Dims& c) {
  const size_t u = UnlimitedDim(g);
  uint64_t pos = 0;
  for (size_t d = 0; d < g.rank(); ++d)
    if (d != u) pos = pos * g.max_grid[d] + c[d];
  return c[u] * Row(g) + pos;
}
Dims CoordOf(const IndexGeometry& g, uint64_t key) {
  const size_t u = UnlimitedDim(g);
  Dims c(g.rank());
  c[u] = key / Row(g);
  uint64_t pos = key % Row(g);
  for (size_t d = g.rank(); d-- > 0;) {
    if (d == u) continue;
    c[d] = pos % g.max_grid[d];
    pos /= g.max_grid[d];
  }
  return c;
}

using Reference = std::map<uint64_t, ChunkRecord>;  // key -> record, allocated only

class ExtensibleArrayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    alloc_.Reset(kDataStart, {});
    // Chunk data lives here; index blocks come after it.
    data_begin_ = alloc_.Allocate(kDataRegion, 4096);
    data_end_ = data_begin_ + kDataRegion;
    alloc_.MarkDurable();
  }

  std::unique_ptr<Index> Open(const IndexGeometry& geo, std::string_view root = {}) {
    auto r = Index::Open(kExt, geo, root, &store_, "dataset 7");
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r ? std::move(*r) : nullptr;
  }

  ChunkRecord Rec(uint64_t i) const { return ChunkRecord{data_begin_ + 8 * (i % (kDataRegion / 8))}; }

  ChunkRecord RandomRecord(std::mt19937_64& rng, bool filtered) {
    auto uniform = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
    if (!filtered) return ChunkRecord{data_begin_ + 8 * uniform(0, kDataRegion / 8 - 1)};
    ChunkRecord r;
    r.addr = data_begin_ + 64 * uniform(0, (kDataRegion - kMaxChunkBytes) / 64);
    r.size = static_cast<uint32_t>(uniform(1, kMaxChunkBytes));
    r.filter_mask = static_cast<uint32_t>(uniform(0, 0xffffffffu));
    return r;
  }

  // Index bytes on disk, from the allocator's point of view: everything past
  // the data region that is not free or pending.
  uint64_t LiveBytesAfterData() {
    uint64_t unreferenced = 0;
    for (const FreedExtent& e : alloc_.Unreferenced())
      if (e.addr >= data_end_) unreferenced += e.len;
    return alloc_.file_end() - data_end_ - unreferenced;
  }

  // Writes to the file since the last call (the fake file lists every write
  // since the last sync).
  struct WriteStats {
    int64_t writes;
    uint64_t bytes;
  };
  WriteStats TakeWrites() {
    WriteStats w{static_cast<int64_t>(disk_->unsynced.size()), 0};
    for (const auto& u : disk_->unsynced) w.bytes += u.data.size();
    EXPECT_OK(file_.Sync());  // clears the list
    return w;
  }

  Status PutKey(Index* idx, const IndexGeometry& g, uint64_t key, const ChunkRecord& rec) {
    return idx->Put(CoordOf(g, key), rec);
  }
  Result<ChunkRecord> GetKey(Index* idx, const IndexGeometry& g, uint64_t key) { return idx->Get(CoordOf(g, key)); }

  // Every key of the reference (and its neighbours) through Get, and
  // everything through ForEach, in key order, equals the reference.
  void ExpectRecords(Index* idx, const IndexGeometry& g, const Reference& ref) {
    for (auto [key, rec] : ref) {
      for (uint64_t k : {key, key + 1, key - 1}) {
        if (k == ~uint64_t{0}) continue;
        auto r = GetKey(idx, g, k);
        ASSERT_TRUE(r.has_value()) << k << ": " << r.error().ToString();
        auto it = ref.find(k);
        ASSERT_EQ(*r, it == ref.end() ? ChunkRecord{} : it->second) << "key " << k;
      }
    }
    std::vector<std::pair<uint64_t, ChunkRecord>> seen;
    ASSERT_OK(idx->ForEach([&](ChunkCoord c, const ChunkRecord& rec) -> Status {
      seen.emplace_back(KeyOf(g, Dims(c.begin(), c.end())), rec);
      return Status::OK();
    }));
    const std::vector<std::pair<uint64_t, ChunkRecord>> want(ref.begin(), ref.end());
    EXPECT_EQ(seen, want);
  }

  // ForEachIn(lo, hi) against the reference filtered by the box, in key order.
  void ExpectBox(Index* idx, const IndexGeometry& g, const Reference& ref, const Dims& lo, const Dims& hi) {
    std::vector<std::pair<Dims, ChunkRecord>> want, seen;
    for (auto [key, rec] : ref) {
      Dims c = CoordOf(g, key);
      bool inside = true;
      for (size_t d = 0; d < g.rank(); ++d) inside = inside && c[d] >= lo[d] && c[d] < hi[d];
      if (inside) want.emplace_back(c, rec);
    }
    ASSERT_OK(idx->ForEachIn(lo, hi, [&](ChunkCoord c, const ChunkRecord& rec) -> Status {
      seen.emplace_back(Dims(c.begin(), c.end()), rec);
      return Status::OK();
    }));
    EXPECT_EQ(seen, want) << "box " << testing::PrintToString(lo) << " .. " << testing::PrintToString(hi);
  }

  // Blocks of the tree: the top node's payload.
  std::string ReadNode(BlockRef ref) {
    auto r = store_.Read(ref, BlockType::kPagedNode, "test");
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r ? *r : std::string();
  }

  std::shared_ptr<testutil::Disk> disk_ = std::make_shared<testutil::Disk>();
  testutil::FaultFile file_{disk_};
  Allocator alloc_;
  BlockStore store_{&file_, &alloc_};
  uint64_t data_begin_ = 0, data_end_ = 0;
};

// ------------------------------------------------------------ basics

TEST_F(ExtensibleArrayTest, RefusesGeometriesThatDoNotFit) {
  const uint64_t big = kMaxExtensibleRowChunks;
  const Dims bad[] = {
      {10},             // no unlimited dimension
      {10, 20},         // no unlimited dimension
      {U, U},           // two
      {U, 3, U},        // two
      {U, big + 1},     // a row too large
      {big / 2, 3, U},  // the product too large
      {1u << 20, U, 1u << 20},
      {U, 0},                 // an empty dimension
      {U, ~uint64_t{0} - 1},  // huge bounded dimension
  };
  for (const Dims& m : bad) {
    SCOPED_TRACE(testing::PrintToString(m));
    EXPECT_CODE(Index::Open(kExt, Geo(m), "", &store_, "d"), Code::kCorruption);
  }
  EXPECT_CODE(Index::Open(kExt, Geo({}), "", &store_, "d"), Code::kCorruption);
  // The largest row fits.
  EXPECT_OK(Index::Open(kExt, Geo({U, big}), "", &store_, "d"));
  EXPECT_OK(Index::Open(kExt, Geo({big / 4, U, 4}), "", &store_, "d"));
}

TEST_F(ExtensibleArrayTest, RejectsCoordinatesOutsideTheGrid) {
  const IndexGeometry g = Geo({3, U, 5});
  auto idx = Open(g);
  const uint64_t max_steps = Index::kKeyLimit / 15;
  const Dims bad[] = {{3, 0, 0},    {0, 0, 5}, {0, max_steps, 0}, {0, ~uint64_t{0}, 0}, {~uint64_t{0}, 1, 1}, {0, 0},
                      {0, 0, 0, 0}, {}};
  for (const Dims& c : bad) {
    SCOPED_TRACE(testing::PrintToString(c));
    EXPECT_CODE(idx->Get(c), Code::kInvalidArgument);
    EXPECT_CODE(idx->Put(c, Rec(1)), Code::kInvalidArgument);
  }
  auto r = idx->Get(Dims{3, 0, 0});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("dataset 7"), std::string::npos) << r.error().message();
  EXPECT_FALSE(idx->dirty());
  // The last step whose keys stay below the limit is fine.
  ASSERT_OK(idx->Put(Dims{2, max_steps - 1, 4}, Rec(1)));
  ASSERT_OK(idx->Flush());
  EXPECT_EQ(ParseRoot(idx->EncodeRoot()).depth, Index::kMaxDepth);
  auto again = Open(g, idx->EncodeRoot());
  ASSERT_OK_AND_ASSIGN(ChunkRecord back, again->Get(Dims{2, max_steps - 1, 4}));
  EXPECT_EQ(back, Rec(1));
}

TEST_F(ExtensibleArrayTest, RejectsRecordsItCannotStore) {
  auto plain = Open(Geo({U}));
  const ChunkRecord bad_plain[] = {
      {data_begin_, 10, 0}, {data_begin_, 0, 1}, {0, 5, 0}, {0, 0, 5}, {kDataStart - 8, 0, 0}, {1, 0, 0}};
  for (const ChunkRecord& r : bad_plain) {
    SCOPED_TRACE(testing::PrintToString(r.addr) + "/" + std::to_string(r.size) + "/" + std::to_string(r.filter_mask));
    EXPECT_CODE(plain->Put(Dims{0}, r), Code::kInvalidArgument);
  }
  auto filtered = Open(Geo({U}, true));
  const ChunkRecord bad_filtered[] = {
      {data_begin_, 0, 0}, {data_begin_, kMaxChunkBytes + 1, 0}, {0, 5, 0}, {0, 0, 3}, {100, 5, 0}};
  for (const ChunkRecord& r : bad_filtered) EXPECT_CODE(filtered->Put(Dims{0}, r), Code::kInvalidArgument);
  EXPECT_FALSE(plain->dirty());
  EXPECT_FALSE(filtered->dirty());
  EXPECT_OK(filtered->Put(Dims{0}, ChunkRecord{data_begin_, kMaxChunkBytes, 0xffffffffu}));
}

TEST_F(ExtensibleArrayTest, DirtyOnlyAfterARealChange) {
  const IndexGeometry g = Geo({U, 2});
  auto idx = Open(g);
  ASSERT_OK(idx->Put(Dims{5, 1}, ChunkRecord{}));  // removing what is not there
  EXPECT_FALSE(idx->dirty());
  ASSERT_OK(idx->Put(Dims{1u << 30, 1}, ChunkRecord{}));  // even far away
  EXPECT_FALSE(idx->dirty());
  ASSERT_OK(idx->Put(Dims{5, 1}, Rec(3)));
  EXPECT_TRUE(idx->dirty());
  ASSERT_OK(idx->Flush());
  EXPECT_FALSE(idx->dirty());
  EXPECT_NE(idx->EncodeRoot(), "");
  ASSERT_OK(idx->Put(Dims{5, 1}, Rec(3)));  // the same record again
  EXPECT_FALSE(idx->dirty());
  ASSERT_OK(idx->Put(Dims{5, 0}, ChunkRecord{}));
  EXPECT_FALSE(idx->dirty());
  TakeWrites();
  ASSERT_OK(idx->Flush());
  EXPECT_EQ(TakeWrites().writes, 0);
}

TEST_F(ExtensibleArrayTest, KeyIsTheStepTimesTheRowPlusThePositionInTheRow) {
  // u in the middle: key = c[1] * 15 + c[0] * 5 + c[2].
  const IndexGeometry g = Geo({3, U, 5});
  auto idx = Open(g);
  ASSERT_OK(idx->Put(Dims{2, 7, 4}, Rec(1)));  // key 119
  ASSERT_OK(idx->Put(Dims{0, 0, 1}, Rec(2)));  // key 1
  ASSERT_OK(idx->Flush());
  Root root = ParseRoot(idx->EncodeRoot());
  EXPECT_EQ(root.depth, 0);
  EXPECT_EQ(root.row, 15u);
  ASSERT_EQ(root.ref.len, LeafBlockBytes(120));
  ASSERT_OK_AND_ASSIGN(std::string leaf, store_.Read(root.ref, BlockType::kPagedLeaf, "leaf"));
  ASSERT_EQ(leaf.size(), 10 + 120 * 8u);
  EXPECT_EQ(LoadU64(leaf.data()), 0u);  // first key
  // The count stops at the last allocated record.
  EXPECT_EQ(static_cast<uint8_t>(leaf[8]) | (static_cast<uint8_t>(leaf[9]) << 8), 120);
  EXPECT_EQ(LoadU64(leaf.data() + 10 + 8 * 119), Rec(1).addr);
  EXPECT_EQ(LoadU64(leaf.data() + 10 + 8 * 1), Rec(2).addr);
  for (size_t k = 0; k < 120; ++k) {
    if (k != 1 && k != 119) {
      EXPECT_EQ(LoadU64(leaf.data() + 10 + 8 * k), 0u) << k;
    }
  }

  // Step 40 starts at key 600: the second leaf, one node level.
  ASSERT_OK(idx->Put(Dims{0, 40, 0}, Rec(3)));
  ASSERT_OK(idx->Flush());
  root = ParseRoot(idx->EncodeRoot());
  EXPECT_EQ(root.depth, 1);
  std::string node = ReadNode(root.ref);
  ASSERT_OK_AND_ASSIGN(std::string leaf1, store_.Read(ChildOf(node, 1), BlockType::kPagedLeaf, "leaf"));
  EXPECT_EQ(LoadU64(leaf1.data()), kLeaf);
  EXPECT_EQ(LoadU64(leaf1.data() + 10 + 8 * (600 - kLeaf)), Rec(3).addr);
}

TEST_F(ExtensibleArrayTest, FilteredRecordsKeepSizeAndMask) {
  const IndexGeometry g = Geo({U, 3}, true);
  auto idx = Open(g);
  const ChunkRecord a{data_begin_ + 64, 1, 0}, b{data_begin_ + 4096, kMaxChunkBytes, 0xdeadbeef},
      c{data_begin_ + 128, 77, 5};
  ASSERT_OK(idx->Put(Dims{0, 0}, a));
  ASSERT_OK(idx->Put(Dims{1000, 2}, b));
  ASSERT_OK(idx->Put(Dims{1000, 1}, c));
  ASSERT_OK(idx->Flush());
  Root root = ParseRoot(idx->EncodeRoot());
  EXPECT_EQ(root.depth, 1);
  // Two leaves: key 0 alone, and keys 3000..3002 in the leaf from 2560.
  EXPECT_EQ(idx->disk_bytes(), LeafBlockBytes(1, true) + LeafBlockBytes(3002 - 2560 + 1, true) + NodeBlockBytes(6));
  auto again = Open(g, idx->EncodeRoot());
  ExpectRecords(again.get(), g, {{0, a}, {3001, c}, {3002, b}});
}

TEST_F(ExtensibleArrayTest, OpenChunkIndexOpensIt) {
  const IndexGeometry g = Geo({U, 10});
  auto idx = Open(g);
  ASSERT_OK(idx->Put(Dims{77, 3}, Rec(9)));
  ASSERT_OK(idx->Flush());
  ASSERT_OK_AND_ASSIGN(auto generic, OpenChunkIndex(IndexKind::kExtensibleArray, g, idx->EncodeRoot(), &store_, "d"));
  EXPECT_EQ(generic->kind(), IndexKind::kExtensibleArray);
  ASSERT_OK_AND_ASSIGN(ChunkRecord rec, generic->Get(Dims{77, 3}));
  EXPECT_EQ(rec, Rec(9));
  EXPECT_CODE(OpenChunkIndex(IndexKind::kExtensibleArray, Geo({10, 10}), "", &store_, "d"), Code::kCorruption);
  EXPECT_CODE(OpenChunkIndex(IndexKind::kExtensibleArray, Geo({U, 11}), idx->EncodeRoot(), &store_, "d"),
              Code::kCorruption);
}

// ------------------------------------------------------------ depth

TEST_F(ExtensibleArrayTest, DepthGrowsWithTheKeysWithoutRewritingTheOldTop) {
  const IndexGeometry g = Geo({U});
  auto idx = Open(g);
  Reference ref;
  // Keys that need 0, 1, 2 and 3 node levels.
  const uint64_t keys[] = {0, kLeaf, kLeaf * kFanout, kLeaf * kFanout * kFanout};
  BlockRef old_top;
  for (int depth = 0; depth < 4; ++depth) {
    SCOPED_TRACE(depth);
    ref[keys[depth]] = Rec(depth + 1);
    ASSERT_OK(PutKey(idx.get(), g, keys[depth], Rec(depth + 1)));
    TakeWrites();
    ASSERT_OK(idx->Flush());
    WriteStats w = TakeWrites();
    Root root = ParseRoot(idx->EncodeRoot());
    EXPECT_EQ(root.depth, depth);
    // The new leaf, one new node per level below the top, and the new top.
    EXPECT_EQ(w.writes, depth + 1);
    uint64_t bytes = LeafBlockBytes(1) + (depth > 0 ? NodeBlockBytes(2) : 0);
    for (int l = 1; l < depth; ++l) bytes += NodeBlockBytes(1);
    EXPECT_EQ(w.bytes, bytes);
    if (depth > 0) {
      // The old top is the new top's child 0, as it was.
      EXPECT_EQ(ChildOf(ReadNode(root.ref), 0), old_top);
    }
    old_top = root.ref;
    EXPECT_EQ(idx->disk_bytes(), LiveBytesAfterData());
    alloc_.MarkDurable();
    auto again = Open(g, idx->EncodeRoot());
    ExpectRecords(again.get(), g, ref);
  }
}

TEST_F(ExtensibleArrayTest, DepthShrinksWhenTheUpperKeysGo) {
  const IndexGeometry g = Geo({U, 2});
  auto idx = Open(g);
  const uint64_t keys[] = {3, kLeaf + 3, kLeaf * kFanout + 3, kLeaf * kFanout * kFanout + 3};
  std::vector<std::string> roots;
  for (uint64_t k : keys) {
    ASSERT_OK(PutKey(idx.get(), g, k, Rec(k)));
    ASSERT_OK(idx->Flush());
    roots.push_back(idx->EncodeRoot());
  }
  ASSERT_EQ(ParseRoot(roots[3]).depth, 3);
  alloc_.MarkDurable();
  Reference ref;
  for (uint64_t k : keys) ref[k] = Rec(k);
  // Removing the highest key returns to the previous tree, writing nothing:
  // the unchanged lower part becomes the top again.
  for (int i = 3; i >= 0; --i) {
    SCOPED_TRACE(i);
    ASSERT_OK(PutKey(idx.get(), g, keys[i], ChunkRecord{}));
    ref.erase(keys[i]);
    TakeWrites();
    ASSERT_OK(idx->Flush());
    EXPECT_EQ(TakeWrites().writes, 0);
    EXPECT_FALSE(idx->dirty());
    if (i > 0) {
      EXPECT_EQ(idx->EncodeRoot(), roots[i - 1]);
    } else {
      EXPECT_EQ(idx->EncodeRoot(), "");
    }
    EXPECT_EQ(idx->disk_bytes(), LiveBytesAfterData());
    ExpectRecords(idx.get(), g, ref);
    auto again = Open(g, idx->EncodeRoot());
    ExpectRecords(again.get(), g, ref);
  }
  EXPECT_EQ(idx->disk_bytes(), 0u);
  alloc_.MarkDurable();
  EXPECT_EQ(alloc_.TrimTail(), data_end_);
}

TEST_F(ExtensibleArrayTest, ShrinksThroughLevelsItNeverRead) {
  // Reopened (nothing in memory), then the upper part removed: the levels
  // below the old top are read to find the new top.
  const IndexGeometry g = Geo({U});
  auto idx = Open(g);
  for (uint64_t k : {uint64_t{1}, uint64_t{700}, kLeaf * kFanout * kFanout}) ASSERT_OK(PutKey(idx.get(), g, k, Rec(k)));
  ASSERT_OK(idx->Flush());
  ASSERT_EQ(ParseRoot(idx->EncodeRoot()).depth, 3);
  auto again = Open(g, idx->EncodeRoot());
  ASSERT_OK(PutKey(again.get(), g, kLeaf * kFanout * kFanout, ChunkRecord{}));
  ASSERT_OK(again->Flush());
  EXPECT_EQ(ParseRoot(again->EncodeRoot()).depth, 1);
  EXPECT_EQ(again->disk_bytes(), LeafBlockBytes(2) + LeafBlockBytes(700 - kLeaf + 1) + NodeBlockBytes(2));
  EXPECT_EQ(again->disk_bytes(), LiveBytesAfterData());
  auto third = Open(g, again->EncodeRoot());
  ExpectRecords(third.get(), g, {{1, Rec(1)}, {700, Rec(700)}});
}

TEST_F(ExtensibleArrayTest, AFarKeyCostsOnlyItsPath) {
  // One record 2^40 steps out: a leaf and one node per level, nothing sized
  // by the key space.
  const IndexGeometry g = Geo({U});
  auto idx = Open(g);
  const uint64_t far = uint64_t{1} << 40;  // leaf 2^31: four node levels
  ASSERT_OK(idx->Put(Dims{far}, Rec(1)));
  TakeWrites();
  ASSERT_OK(idx->Flush());
  WriteStats w = TakeWrites();
  EXPECT_EQ(w.writes, 5);
  // Leaf 2^31 is child 128 of the top and child 0 on every level below.
  EXPECT_EQ(idx->disk_bytes(), LeafBlockBytes(1) + NodeBlockBytes(129) + 3 * NodeBlockBytes(1));
  EXPECT_EQ(ParseRoot(idx->EncodeRoot()).depth, 4);
  auto again = Open(g, idx->EncodeRoot());
  ExpectRecords(again.get(), g, {{far, Rec(1)}});
  ASSERT_OK_AND_ASSIGN(ChunkRecord zero, again->Get(Dims{0}));
  EXPECT_FALSE(zero.allocated());
}

TEST_F(ExtensibleArrayTest, TwoNodeLevelsOfDenseRecordsRoundTrip) {
  const IndexGeometry g = Geo({U, 4});
  const uint64_t n = kLeaf * kFanout + 1000;  // 257 full leaves and one of 488
  auto idx = Open(g);
  Reference ref;
  for (uint64_t k = 0; k < n; ++k) {
    ref[k] = Rec(k);
    ASSERT_OK(PutKey(idx.get(), g, k, Rec(k)));
  }
  ASSERT_OK(idx->Flush());
  Root root = ParseRoot(idx->EncodeRoot());
  EXPECT_EQ(root.depth, 2);
  EXPECT_EQ(idx->disk_bytes(), 257 * LeafBlockBytes(kLeaf) + LeafBlockBytes(n - 257 * kLeaf) + NodeBlockBytes(kFanout) +
                                   NodeBlockBytes(2) + NodeBlockBytes(2));
  EXPECT_EQ(idx->disk_bytes(), LiveBytesAfterData());
  EXPECT_EQ(root.disk_bytes, idx->disk_bytes());
  auto again = Open(g, idx->EncodeRoot());
  ExpectRecords(again.get(), g, ref);
}

// ------------------------------------------------------------ against a reference

struct GeometryCase {
  Dims max_grid;
  bool filtered;
};

class ExtensibleArrayReferenceTest : public ExtensibleArrayTest, public ::testing::WithParamInterface<GeometryCase> {};

TEST_P(ExtensibleArrayReferenceTest, MatchesReferenceUnderRandomChangesFlushesAndReopens) {
  const IndexGeometry g = Geo(GetParam().max_grid, GetParam().filtered);
  const size_t u = UnlimitedDim(g);
  const uint64_t row = Row(g);
  std::mt19937_64 rng(row * 131 + u * 7 + g.filtered);
  auto uniform = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  // The dataset grows along u, slowly at first: about 2^18 keys by the end,
  // so that the tree passes through zero, one and two node levels.
  const uint64_t final_steps = std::max<uint64_t>(2, (uint64_t{1} << 18) / row);
  const int ops = 4000;
  auto random_coord = [&](uint64_t steps) {
    Dims c(g.rank());
    for (size_t d = 0; d < g.rank(); ++d) {
      c[d] = d == u ? uniform(0, steps - 1) : uniform(0, g.max_grid[d] - 1);
      if (d != u && uniform(0, 3) == 0) c[d] = uniform(0, 1) ? 0 : g.max_grid[d] - 1;
    }
    if (uniform(0, 4) == 0) c[u] = steps - 1;  // the growing edge
    return c;
  };
  auto idx = Open(g);
  Reference ref;
  int reopens = 0, boxes = 0;
  std::set<int> depths;
  for (int op = 0; op < ops; ++op) {
    const uint64_t steps = 1 + static_cast<uint64_t>(final_steps * std::pow(double(op + 1) / ops, 3));
    const uint64_t kind = uniform(0, 99);
    if (kind < 50) {
      Dims c = random_coord(steps);
      ChunkRecord rec = uniform(0, 9) == 0 ? ChunkRecord{} : RandomRecord(rng, g.filtered);
      ASSERT_OK(idx->Put(c, rec));
      if (rec.allocated()) {
        ref[KeyOf(g, c)] = rec;
      } else {
        ref.erase(KeyOf(g, c));
      }
    } else if (kind < 55 && !ref.empty()) {
      // Remove something that exists.
      auto it = ref.begin();
      std::advance(it, uniform(0, ref.size() - 1));
      ASSERT_OK(idx->Put(CoordOf(g, it->first), ChunkRecord{}));
      ref.erase(it);
    } else if (kind < 85) {
      Dims c = random_coord(steps + 2);
      ASSERT_OK_AND_ASSIGN(ChunkRecord rec, idx->Get(c));
      auto it = ref.find(KeyOf(g, c));
      ASSERT_EQ(rec, it == ref.end() ? ChunkRecord{} : it->second) << "op " << op;
    } else if (kind < 90) {
      Dims lo(g.rank()), hi(g.rank());
      for (size_t d = 0; d < g.rank(); ++d) {
        const uint64_t m = d == u ? steps + 2 : g.max_grid[d];
        lo[d] = uniform(0, m);
        hi[d] = uniform(0, 3) == 0 ? (d == u ? U : m) : lo[d] + uniform(0, m);
      }
      ExpectBox(idx.get(), g, ref, lo, hi);
      ++boxes;
    } else if (kind < 95) {
      ASSERT_OK(idx->Flush());
      ASSERT_FALSE(idx->dirty());
      if (uniform(0, 1)) alloc_.MarkDurable();  // the commit became durable
    } else {
      ASSERT_OK(idx->Flush());
      const std::string root = idx->EncodeRoot();
      if (!root.empty()) depths.insert(ParseRoot(root).depth);
      EXPECT_EQ(idx->disk_bytes(), LiveBytesAfterData());
      idx = Open(g, root);
      ASSERT_TRUE(idx);
      ++reopens;
    }
  }
  EXPECT_GT(reopens, 50);
  EXPECT_GT(boxes, 50);
  // Rows of fewer than 512 chunks start in a single leaf.
  EXPECT_TRUE((row >= 64 || depths.count(0)) && depths.count(1) && depths.count(2)) << testing::PrintToString(depths);
  ExpectRecords(idx.get(), g, ref);
  ASSERT_OK(idx->Flush());
  EXPECT_EQ(idx->disk_bytes(), LiveBytesAfterData());
  auto again = Open(g, idx->EncodeRoot());
  ExpectRecords(again.get(), g, ref);
  EXPECT_EQ(again->disk_bytes(), idx->disk_bytes());
  // Boxes on the reopened index, loading lazily.
  for (int i = 0; i < 50; ++i) {
    Dims lo(g.rank()), hi(g.rank());
    for (size_t d = 0; d < g.rank(); ++d) {
      const uint64_t m = d == u ? final_steps + 1 : g.max_grid[d];
      lo[d] = uniform(0, m - 1);
      hi[d] = i % 5 == 0 ? U : lo[d] + 1 + uniform(0, m / 3);
    }
    ExpectBox(again.get(), g, ref, lo, hi);
  }
}

INSTANTIATE_TEST_SUITE_P(Geometries, ExtensibleArrayReferenceTest,
                         ::testing::Values(GeometryCase{{U}, false}, GeometryCase{{U}, true},
                                           GeometryCase{{U, 7}, false}, GeometryCase{{5, U}, true},
                                           GeometryCase{{3, U, 4}, false}, GeometryCase{{1000, U}, false},
                                           GeometryCase{{U, 600}, true}, GeometryCase{{2, 3, U, 5}, false},
                                           GeometryCase{{U, 2, 9, 3}, true}, GeometryCase{{4, 1, 3, U}, false}),
                         [](const ::testing::TestParamInfo<GeometryCase>& param_info) {
                           std::string name;
                           for (uint64_t m : param_info.param.max_grid)
                             name += (m == U ? std::string("U") : std::to_string(m)) + "x";
                           name.pop_back();
                           return name + (param_info.param.filtered ? "_filtered" : "_plain");
                         });

// ------------------------------------------------------------ ForEachIn

TEST_F(ExtensibleArrayTest, ForEachInVisitsTheBoxInKeyOrder) {
  const IndexGeometry g = Geo({4, U, 3});
  auto idx = Open(g);
  Reference ref;
  for (uint64_t k = 0; k < 12 * 300; k += 5) ref[k] = Rec(k);
  for (auto [k, r] : ref) ASSERT_OK(PutKey(idx.get(), g, k, r));
  auto check = [&](Index* i) {
    ExpectBox(i, g, ref, {1, 10, 0}, {3, 20, 2});
    ExpectBox(i, g, ref, {0, 0, 0}, {4, U, 3});
    ExpectBox(i, g, ref, {3, 299, 2}, {4, U, 3});
    ExpectBox(i, g, ref, {0, 5, 0}, {4, 5, 3});    // empty along u
    ExpectBox(i, g, ref, {2, 0, 0}, {1, U, 3});    // empty along another dimension
    ExpectBox(i, g, ref, {0, 300, 0}, {4, U, 3});  // past every record
    ExpectBox(i, g, ref, {0, 0, 0}, {9, U, 9});    // hi past the grid
    ExpectBox(i, g, ref, {1, 0, 1}, {2, U, 2});    // a thin box
  };
  check(idx.get());
  ASSERT_OK(idx->Flush());
  auto again = Open(g, idx->EncodeRoot());
  check(again.get());
  EXPECT_CODE(idx->ForEachIn(Dims{0, 0}, Dims{1, 1}, [](ChunkCoord, const ChunkRecord&) { return Status::OK(); }),
              Code::kInvalidArgument);
}

TEST_F(ExtensibleArrayTest, ForEachInReadsOnlyTheLeavesOfItsRangeAlongU) {
  const IndexGeometry g = Geo({U, 8});
  auto idx = Open(g);
  Reference ref;
  for (uint64_t k = 0; k < 8 * kLeaf; k += 3) ref[k] = Rec(k);  // 8 leaves, 64 steps each
  for (auto [k, r] : ref) ASSERT_OK(PutKey(idx.get(), g, k, r));
  ASSERT_OK(idx->Flush());
  const std::string root = idx->EncodeRoot();
  // Damage leaf 5: steps 320..383.
  const BlockRef leaf5 = ChildOf(ReadNode(ParseRoot(root).ref), 5);
  disk_->current[leaf5.addr + 40] ^= 0x20;
  auto damaged = Open(g, root);
  auto nothing = [](ChunkCoord, const ChunkRecord&) { return Status::OK(); };
  EXPECT_OK(damaged->ForEachIn(Dims{0, 0}, Dims{320, 8}, nothing));
  EXPECT_OK(damaged->ForEachIn(Dims{384, 0}, Dims{U, 8}, nothing));
  EXPECT_OK(damaged->ForEachIn(Dims{100, 2}, Dims{110, 3}, nothing));  // thin
  EXPECT_OK(damaged->ForEachIn(Dims{384, 2}, Dims{U, 3}, nothing));    // thin
  EXPECT_CODE(damaged->ForEachIn(Dims{383, 0}, Dims{384, 8}, nothing), Code::kCorruption);
  EXPECT_CODE(damaged->ForEachIn(Dims{300, 1}, Dims{400, 2}, nothing), Code::kCorruption);
  EXPECT_CODE(damaged->ForEach(nothing), Code::kCorruption);
  disk_->current[leaf5.addr + 40] ^= 0x20;
  auto fine = Open(g, root);
  ExpectBox(fine.get(), g, ref, {300, 1}, {400, 2});
}

TEST_F(ExtensibleArrayTest, ForEachInOfAThinBoxJumpsOverEmptySteps) {
  // Two records 2^40 steps apart in rows of 1000 chunks: a box one chunk
  // wide across every step visits both without walking the steps between.
  const IndexGeometry g = Geo({1000, U});
  auto idx = Open(g);
  const uint64_t far = uint64_t{1} << 40;
  ASSERT_OK(idx->Put(Dims{7, 0}, Rec(1)));
  ASSERT_OK(idx->Put(Dims{7, far}, Rec(2)));
  ASSERT_OK(idx->Put(Dims{8, far}, Rec(3)));
  ASSERT_OK(idx->Flush());
  auto again = Open(g, idx->EncodeRoot());
  std::vector<Dims> seen;
  ASSERT_OK(again->ForEachIn(Dims{7, 0}, Dims{8, U}, [&](ChunkCoord c, const ChunkRecord&) -> Status {
    seen.emplace_back(c.begin(), c.end());
    return Status::OK();
  }));
  EXPECT_EQ(seen, (std::vector<Dims>{{7, 0}, {7, far}}));
  ExpectBox(again.get(), g, {{7, Rec(1)}, {far * 1000 + 7, Rec(2)}, {far * 1000 + 8, Rec(3)}}, {0, 1}, {1000, U});
}

// ------------------------------------------------------------ cost of a flush

TEST_F(ExtensibleArrayTest, FlushWritesOnlyChangedLeavesAndTheirAncestors) {
  const IndexGeometry g = Geo({U});
  const uint64_t n = kLeaf * kFanout + kLeaf + 1;  // leaves 0..257; two level-1 nodes under a top
  std::mt19937_64 rng(5);
  auto idx = Open(g);
  for (uint64_t leaf = 0; leaf <= 257; ++leaf)
    ASSERT_OK(idx->Put(Dims{std::min(n - 1, leaf * kLeaf + kLeaf - 1)}, RandomRecord(rng, false)));
  ASSERT_OK(idx->Flush());
  alloc_.MarkDurable();
  TakeWrites();

  const uint64_t full_leaf = LeafBlockBytes(kLeaf), last_leaf = LeafBlockBytes(1);
  const uint64_t node0 = NodeBlockBytes(256), node1 = NodeBlockBytes(2), top = NodeBlockBytes(2);
  struct Case {
    std::vector<uint64_t> keys;
    int64_t writes;
    uint64_t bytes;
  };
  const Case cases[] = {
      {{5}, 3, full_leaf + node0 + top},
      {{5, 6, 511}, 3, full_leaf + node0 + top},         // one leaf
      {{0, 512, 1024}, 5, 3 * full_leaf + node0 + top},  // three leaves, one parent
      {{0, 256 * 512}, 5, 2 * full_leaf + node0 + node1 + top},
      {{n - 1}, 3, last_leaf + node1 + top},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::PrintToString(c.keys));
    for (uint64_t key : c.keys) ASSERT_OK(idx->Put(Dims{key}, RandomRecord(rng, false)));
    ASSERT_OK(idx->Flush());
    WriteStats w = TakeWrites();
    EXPECT_EQ(w.writes, c.writes);
    EXPECT_EQ(w.bytes, c.bytes);
    EXPECT_EQ(idx->disk_bytes(), LiveBytesAfterData());
    alloc_.MarkDurable();
  }
  // k random changes: at most k leaves plus their ancestors.
  for (int k : {1, 4, 16, 64}) {
    std::set<uint64_t> leaves, parents;
    for (int i = 0; i < k; ++i) {
      uint64_t key = std::uniform_int_distribution<uint64_t>(0, n - 2)(rng);
      leaves.insert(key / kLeaf);
      parents.insert(key / kLeaf / kFanout);
      ASSERT_OK(idx->Put(Dims{key}, RandomRecord(rng, false)));
    }
    ASSERT_OK(idx->Flush());
    WriteStats w = TakeWrites();
    SCOPED_TRACE(k);
    EXPECT_EQ(w.writes, static_cast<int64_t>(leaves.size() + parents.size() + 1));
    EXPECT_LE(w.writes, k * 3);
    EXPECT_LE(w.bytes, leaves.size() * full_leaf + parents.size() * node0 + top);
    alloc_.MarkDurable();
  }
}

TEST_F(ExtensibleArrayTest, AppendingWritesOnlyTheNewLeafAndTheRightEdge) {
  // Growth along u, one leaf's worth (32 steps of 16) per flush: every
  // flush writes the new leaf and one node per level, never a full page.
  const IndexGeometry g = Geo({U, 16});
  auto idx = Open(g);
  const uint64_t leaves = kFanout + 3;
  uint64_t written = 0;
  std::vector<BlockRef> level1_refs;
  for (uint64_t leaf = 0; leaf < leaves; ++leaf) {
    for (uint64_t k = leaf * kLeaf; k < (leaf + 1) * kLeaf; ++k) ASSERT_OK(PutKey(idx.get(), g, k, Rec(k)));
    TakeWrites();
    ASSERT_OK(idx->Flush());
    WriteStats w = TakeWrites();
    const int depth = ParseRoot(idx->EncodeRoot()).depth;
    ASSERT_EQ(depth, leaf == 0 ? 0 : leaf < kFanout ? 1 : 2) << leaf;
    uint64_t bytes = LeafBlockBytes(kLeaf);
    if (depth == 1) bytes += NodeBlockBytes(leaf + 1);
    if (depth == 2) bytes += NodeBlockBytes(leaf - kFanout + 1) + NodeBlockBytes(2);
    ASSERT_EQ(w.writes, 1 + depth) << leaf;
    ASSERT_EQ(w.bytes, bytes) << leaf;
    written += w.bytes;
    alloc_.MarkDurable();
  }
  // The first level-1 node (full) was not rewritten once level 2 appeared.
  const std::string top = ReadNode(ParseRoot(idx->EncodeRoot()).ref);
  const std::string level1 = ReadNode(ChildOf(top, 0));
  EXPECT_EQ(level1.size(), 11 + 12 * kFanout);
  auto again = Open(g, idx->EncodeRoot());
  for (uint64_t k = 0; k < leaves * kLeaf; k += 97) {
    ASSERT_OK_AND_ASSIGN(ChunkRecord r, GetKey(again.get(), g, k));
    ASSERT_EQ(r, Rec(k)) << k;
  }
  EXPECT_EQ(idx->disk_bytes(), LiveBytesAfterData());
  // Bytes per record on disk stay close to the record itself.
  EXPECT_LT(static_cast<double>(idx->disk_bytes()) / (leaves * kLeaf), 8.1);
}

// ------------------------------------------------------------ disk bytes and destroy

TEST_F(ExtensibleArrayTest, DiskBytesCountsTheStoredBlocks) {
  const IndexGeometry g = Geo({U});
  auto idx = Open(g);
  // Leaves 0 (up to key 1), 3 (up to key 9) and 256 (one record).
  for (uint64_t k : {uint64_t{1}, 3 * kLeaf + 9, kLeaf * kFanout}) ASSERT_OK(idx->Put(Dims{k}, Rec(k)));
  ASSERT_OK(idx->Flush());
  uint64_t expect = LeafBlockBytes(2) + LeafBlockBytes(10) + LeafBlockBytes(1) + NodeBlockBytes(4) + NodeBlockBytes(1) +
                    NodeBlockBytes(2);
  EXPECT_EQ(idx->disk_bytes(), expect);
  EXPECT_EQ(idx->disk_bytes(), LiveBytesAfterData());
  EXPECT_EQ(ParseRoot(idx->EncodeRoot()).disk_bytes, expect);
  alloc_.MarkDurable();
  // Rewriting a block changes the figure by its new length; a new leaf adds one.
  ASSERT_OK(idx->Put(Dims{1}, Rec(5)));
  ASSERT_OK(idx->Put(Dims{10 * kLeaf}, Rec(6)));
  ASSERT_OK(idx->Flush());
  expect += LeafBlockBytes(1) + NodeBlockBytes(11) - NodeBlockBytes(4);
  EXPECT_EQ(idx->disk_bytes(), expect);
  EXPECT_EQ(idx->disk_bytes(), LiveBytesAfterData());
  auto again = Open(g, idx->EncodeRoot());
  EXPECT_EQ(again->disk_bytes(), expect);
}

TEST_F(ExtensibleArrayTest, DestroyWithADamagedNodeFreesNothing) {
  const IndexGeometry g = Geo({U});
  auto idx = Open(g);
  for (uint64_t k = 0; k < kLeaf * kFanout * 2; k += 1000) ASSERT_OK(idx->Put(Dims{k}, Rec(k)));
  ASSERT_OK(idx->Flush());
  alloc_.MarkDurable();
  const uint64_t live = LiveBytesAfterData();
  const BlockRef level1 = ChildOf(ReadNode(ParseRoot(idx->EncodeRoot()).ref), 1);
  disk_->current[level1.addr + 20] ^= 1;
  auto damaged = Open(g, idx->EncodeRoot());
  EXPECT_CODE(damaged->Destroy(), Code::kCorruption);
  EXPECT_EQ(LiveBytesAfterData(), live);
}

TEST_F(ExtensibleArrayTest, IndexIsUsableAfterDestroy) {
  const IndexGeometry g = Geo({U, 2});
  auto idx = Open(g);
  ASSERT_OK(idx->Put(Dims{100000, 1}, Rec(1)));
  ASSERT_OK(idx->Flush());
  ASSERT_OK(idx->Destroy());
  ASSERT_OK(idx->Put(Dims{10, 0}, Rec(2)));
  ASSERT_OK(idx->Flush());
  ExpectRecords(idx.get(), g, {{20, Rec(2)}});
  auto again = Open(g, idx->EncodeRoot());
  ExpectRecords(again.get(), g, {{20, Rec(2)}});
  EXPECT_EQ(again->disk_bytes(), LeafBlockBytes(21));
  EXPECT_EQ(ParseRoot(again->EncodeRoot()).depth, 0);
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

Status Nothing(ChunkCoord, const ChunkRecord&) { return Status::OK(); }

TEST_F(ExtensibleArrayTest, RejectsEveryByteFlipInALeaf) {
  const IndexGeometry g = Geo({U, 3}, true);
  auto idx = Open(g);
  ASSERT_OK(idx->Put(Dims{0, 1}, ChunkRecord{data_begin_ + 64, 100, 3}));
  ASSERT_OK(idx->Put(Dims{20, 2}, ChunkRecord{data_begin_ + 4096, 200, 0}));  // key 62
  ASSERT_OK(idx->Flush());
  const std::string root = idx->EncodeRoot();
  const BlockRef leaf = ParseRoot(root).ref;
  ASSERT_EQ(leaf.len, LeafBlockBytes(63, true));
  for (uint64_t i = 0; i < leaf.len; ++i) {
    ByteFlip flip(disk_.get(), leaf.addr + i);
    auto damaged = Open(g, root);
    SCOPED_TRACE(i);
    EXPECT_CODE(damaged->Get(Dims{20, 2}), Code::kCorruption);
    EXPECT_CODE(damaged->Get(Dims{0, 0}), Code::kCorruption);  // the same leaf
    EXPECT_CODE(damaged->Get(Dims{0, 0}), Code::kCorruption);  // and still, not the fill value
    EXPECT_CODE(damaged->ForEach(Nothing), Code::kCorruption);
    EXPECT_CODE(damaged->Put(Dims{5, 0}, ChunkRecord{data_begin_, 1, 0}), Code::kCorruption);
  }
  auto fine = Open(g, root);
  ASSERT_OK_AND_ASSIGN(ChunkRecord r, fine->Get(Dims{20, 2}));
  EXPECT_EQ(r, (ChunkRecord{data_begin_ + 4096, 200, 0}));
}

TEST_F(ExtensibleArrayTest, RejectsEveryByteFlipInANode) {
  const IndexGeometry g = Geo({U});
  const uint64_t far = kLeaf * kFanout + 5;
  auto idx = Open(g);
  ASSERT_OK(idx->Put(Dims{0}, Rec(1)));
  ASSERT_OK(idx->Put(Dims{far}, Rec(2)));
  ASSERT_OK(idx->Flush());
  const std::string root = idx->EncodeRoot();
  const BlockRef top = ParseRoot(root).ref;
  ASSERT_EQ(top.len, NodeBlockBytes(2));
  const BlockRef level1 = ChildOf(ReadNode(top), 1);  // above leaf 256
  ASSERT_EQ(level1.len, NodeBlockBytes(1));
  for (BlockRef node : {top, level1}) {
    for (uint64_t i = 0; i < node.len; ++i) {
      ByteFlip flip(disk_.get(), node.addr + i, 0x01);
      auto damaged = Open(g, root);
      SCOPED_TRACE(std::to_string(node.addr) + "+" + std::to_string(i));
      EXPECT_CODE(damaged->Get(Dims{far}), Code::kCorruption);
      EXPECT_CODE(damaged->Get(Dims{far}), Code::kCorruption);
      EXPECT_CODE(damaged->Put(Dims{far + 1}, Rec(3)), Code::kCorruption);
      EXPECT_CODE(damaged->ForEach(Nothing), Code::kCorruption);
      EXPECT_CODE(damaged->Destroy(), Code::kCorruption);
    }
  }
}

TEST_F(ExtensibleArrayTest, DamagedLeafDoesNotAffectOtherLeaves) {
  const IndexGeometry g = Geo({U});
  auto idx = Open(g);
  ASSERT_OK(idx->Put(Dims{10}, Rec(1)));
  ASSERT_OK(idx->Put(Dims{3 * kLeaf + 10}, Rec(2)));
  ASSERT_OK(idx->Flush());
  const std::string root = idx->EncodeRoot();
  const BlockRef leaf0 = ChildOf(ReadNode(ParseRoot(root).ref), 0);
  ByteFlip flip(disk_.get(), leaf0.addr + 30);
  auto damaged = Open(g, root);
  EXPECT_CODE(damaged->Get(Dims{10}), Code::kCorruption);
  ASSERT_OK_AND_ASSIGN(ChunkRecord other, damaged->Get(Dims{3 * kLeaf + 10}));
  EXPECT_EQ(other, Rec(2));
  ASSERT_OK_AND_ASSIGN(ChunkRecord never_written, damaged->Get(Dims{kLeaf + 1}));
  EXPECT_FALSE(never_written.allocated());
}

// ------------------------------------------------------------ hostile roots

TEST_F(ExtensibleArrayTest, RejectsRootOfAnotherRow) {
  const IndexGeometry g = Geo({U, 4});
  auto idx = Open(g);
  ASSERT_OK(idx->Put(Dims{1, 1}, Rec(1)));
  ASSERT_OK(idx->Flush());
  const std::string root = idx->EncodeRoot();
  EXPECT_EQ(ParseRoot(root).row, 4u);
  for (const Dims& m : {Dims{U, 5}, Dims{U}, Dims{U, 2, 3}}) {
    SCOPED_TRACE(testing::PrintToString(m));
    EXPECT_CODE(Index::Open(kExt, Geo(m), root, &store_, "d"), Code::kCorruption);
  }
  Root r = ParseRoot(root);
  EXPECT_CODE(Index::Open(kExt, g, MakeRoot(r.ref, r.depth, 5, r.disk_bytes), &store_, "d"), Code::kCorruption);
  EXPECT_CODE(Index::Open(kExt, g, MakeRoot(r.ref, r.depth, 0, r.disk_bytes), &store_, "d"), Code::kCorruption);
}

TEST_F(ExtensibleArrayTest, RejectsRootsThatNameNoUsableBlock) {
  const IndexGeometry g = Geo({U});
  const uint64_t end = alloc_.file_end();
  for (BlockRef ref :
       {BlockRef{end, 100}, BlockRef{end - 10, 100}, BlockRef{kDataStart - 64, 100}, BlockRef{kDataStart, 8},
        BlockRef{0, 100}, BlockRef{0, 0}, BlockRef{~uint64_t{0} - 10, 100}, BlockRef{kDataStart, 0xffffffffu}}) {
    SCOPED_TRACE(std::to_string(ref.addr) + "+" + std::to_string(ref.len));
    EXPECT_CODE(Index::Open(kExt, g, MakeRoot(ref, 0, 1), &store_, "d"), Code::kCorruption);
  }
  // Fewer index bytes than the top block itself.
  auto idx = Open(g);
  ASSERT_OK(idx->Put(Dims{1}, Rec(1)));
  ASSERT_OK(idx->Flush());
  Root r = ParseRoot(idx->EncodeRoot());
  EXPECT_CODE(Index::Open(kExt, g, MakeRoot(r.ref, 0, 1, r.ref.len - 1), &store_, "d"), Code::kCorruption);
}

TEST_F(ExtensibleArrayTest, RejectsRootDeeperThanSevenLevels) {
  const IndexGeometry g = Geo({U});
  auto idx = Open(g);
  ASSERT_OK(idx->Put(Dims{1}, Rec(1)));
  ASSERT_OK(idx->Flush());
  Root r = ParseRoot(idx->EncodeRoot());
  for (int depth : {8, 9, 64, 255}) {
    SCOPED_TRACE(depth);
    EXPECT_CODE(Index::Open(kExt, g, MakeRoot(r.ref, depth, 1, r.disk_bytes), &store_, "d"), Code::kCorruption);
  }
}

TEST_F(ExtensibleArrayTest, RejectsRootWhoseDepthDoesNotMatchItsBlock) {
  const IndexGeometry g = Geo({U});
  auto one = Open(g);
  ASSERT_OK(one->Put(Dims{1}, Rec(1)));
  ASSERT_OK(one->Put(Dims{kLeaf + 1}, Rec(2)));
  ASSERT_OK(one->Flush());
  Root r = ParseRoot(one->EncodeRoot());
  ASSERT_EQ(r.depth, 1);
  for (int depth : {0, 2, 7}) {
    SCOPED_TRACE(depth);
    ASSERT_OK_AND_ASSIGN(auto idx, Index::Open(kExt, g, MakeRoot(r.ref, depth, 1, r.disk_bytes), &store_, "d"));
    EXPECT_CODE(idx->Get(Dims{1}), Code::kCorruption);
    EXPECT_CODE(idx->ForEach(Nothing), Code::kCorruption);
  }
  // A leaf named as a node.
  auto zero = Open(g);
  ASSERT_OK(zero->Put(Dims{1}, Rec(1)));
  ASSERT_OK(zero->Flush());
  Root z = ParseRoot(zero->EncodeRoot());
  ASSERT_OK_AND_ASSIGN(auto idx, Index::Open(kExt, g, MakeRoot(z.ref, 1, 1, z.disk_bytes), &store_, "d"));
  EXPECT_CODE(idx->Get(Dims{1}), Code::kCorruption);
}

// ------------------------------------------------------------ hostile blocks (valid checksums)

class ExtensibleArrayHostileTest : public ExtensibleArrayTest {
 protected:
  BlockRef Write(BlockType t, const std::string& payload) {
    auto r = store_.Write(t, payload);
    EXPECT_TRUE(r.has_value());
    return r ? *r : BlockRef{};
  }
  // Opens an index over `g` whose top is `top` at `depth`; Get(key).
  Status GetThrough(const IndexGeometry& g, BlockRef top, int depth, uint64_t key) {
    auto idx = Index::Open(kExt, g, MakeRoot(top, depth, Row(g)), &store_, "d");
    if (!idx) return idx.error();
    auto r = (*idx)->Get(CoordOf(g, key));
    return r ? Status::OK() : r.error();
  }
  std::vector<uint64_t> Addrs(size_t count) { return std::vector<uint64_t>(count, data_begin_); }
  std::string FilteredLeaf(uint64_t first, const std::vector<ChunkRecord>& recs) {
    std::string p;
    PutU64(&p, first);
    PutU16(&p, static_cast<uint16_t>(recs.size()));
    for (const auto& r : recs) PutRecord(&p, r, true);
    return p;
  }
};

TEST_F(ExtensibleArrayHostileTest, AcceptsWellFormedHandBuiltBlocks) {
  // The baseline of the tests below: hand-built blocks that are right.
  const IndexGeometry g = Geo({U});
  BlockRef leaf = Write(BlockType::kPagedLeaf, LeafPayload(0, 100, Addrs(100)));
  EXPECT_OK(GetThrough(g, leaf, 0, 50));
  EXPECT_OK(GetThrough(g, leaf, 0, 300));  // past the stored records
  BlockRef leaf1 = Write(BlockType::kPagedLeaf, LeafPayload(512, 10, Addrs(10)));
  BlockRef node = Write(BlockType::kPagedNode, NodePayload(1, 0, 2, {BlockRef{}, leaf1}));
  EXPECT_OK(GetThrough(g, node, 1, 515));
  EXPECT_OK(GetThrough(g, node, 1, 0));
  EXPECT_OK(GetThrough(g, node, 1, 600));
}

TEST_F(ExtensibleArrayHostileTest, RejectsLeavesThatDoNotFitTheirPosition) {
  const IndexGeometry g = Geo({U});
  const uint64_t end = alloc_.file_end() + 1000000;  // beyond anything allocated so far
  auto with = [&](size_t i, uint64_t addr) {
    auto a = Addrs(100);
    a[i] = addr;
    return LeafPayload(0, 100, a);
  };
  struct {
    const char* what;
    std::string payload;
  } bad[] = {
      {"wrong first key", LeafPayload(512, 100, Addrs(100))},
      {"first key not a multiple of 512", LeafPayload(1, 100, Addrs(100))},
      {"count 0", LeafPayload(0, 0, {})},
      {"count 513", LeafPayload(0, 513, Addrs(513))},
      {"count 65535", LeafPayload(0, 0xffff, Addrs(100))},
      {"records missing", LeafPayload(0, 100, Addrs(99))},
      {"trailing record", LeafPayload(0, 100, Addrs(101))},
      {"trailing byte", LeafPayload(0, 100, Addrs(100)) + "x"},
      {"header only", LeafPayload(0, 100, {})},
      {"empty", ""},
      {"last record unallocated", with(99, 0)},
      {"address in the superblock area", with(3, 1)},
      {"address just before data", with(7, kDataStart - 1)},
      {"address past file_end", with(50, end)},
      {"address 2^64-1", with(50, ~uint64_t{0})},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.what);
    BlockRef leaf = Write(BlockType::kPagedLeaf, b.payload);
    EXPECT_CODE(GetThrough(g, leaf, 0, 50), Code::kCorruption);
  }
}

TEST_F(ExtensibleArrayHostileTest, RejectsFilteredRecordsThatCannotBe) {
  const IndexGeometry g = Geo({U}, true);
  const uint64_t end = alloc_.file_end() + 1000000;
  const ChunkRecord good{data_begin_, 10, 0};
  EXPECT_OK(GetThrough(g, Write(BlockType::kPagedLeaf, FilteredLeaf(0, {good, good})), 0, 1));
  const std::vector<ChunkRecord> bad[] = {
      {ChunkRecord{0, 5, 0}, good},            // unallocated with a size
      {ChunkRecord{0, 0, 1}, good},            // unallocated with a mask
      {ChunkRecord{data_begin_, 0, 0}, good},  // no size
      {ChunkRecord{data_begin_, kMaxChunkBytes + 1, 0}, good},
      {ChunkRecord{end - 4, 100, 0}, good},  // extent past file_end
  };
  for (const auto& recs : bad) {
    BlockRef leaf = Write(BlockType::kPagedLeaf, FilteredLeaf(0, recs));
    EXPECT_CODE(GetThrough(g, leaf, 0, 1), Code::kCorruption);
  }
  // An unfiltered leaf (8-byte records) read by a filtered index.
  BlockRef plain = Write(BlockType::kPagedLeaf, LeafPayload(0, 4, Addrs(4)));
  EXPECT_CODE(GetThrough(g, plain, 0, 1), Code::kCorruption);
}

TEST_F(ExtensibleArrayHostileTest, RejectsBlocksOfTheWrongType) {
  const IndexGeometry g = Geo({U});
  BlockRef as_node = Write(BlockType::kPagedNode, LeafPayload(0, 100, Addrs(100)));
  EXPECT_CODE(GetThrough(g, as_node, 0, 0), Code::kCorruption);
  BlockRef fixed = Write(BlockType::kFixedArrayLeaf, LeafPayload(0, 100, Addrs(100)));
  EXPECT_CODE(GetThrough(g, fixed, 0, 0), Code::kCorruption);
  BlockRef group = Write(BlockType::kGroup, LeafPayload(0, 100, Addrs(100)));
  EXPECT_CODE(GetThrough(g, group, 0, 0), Code::kCorruption);
  BlockRef leaf = Write(BlockType::kPagedLeaf, LeafPayload(0, 100, Addrs(100)));
  EXPECT_CODE(GetThrough(g, leaf, 1, 0), Code::kCorruption);  // depth 1 wants a node
}

TEST_F(ExtensibleArrayHostileTest, RejectsNodesThatDoNotFitTheirPosition) {
  const IndexGeometry g = Geo({U});
  BlockRef leaf0 = Write(BlockType::kPagedLeaf, LeafPayload(0, 512, Addrs(512)));
  BlockRef leaf1 = Write(BlockType::kPagedLeaf, LeafPayload(512, 88, Addrs(88)));
  const BlockRef far{alloc_.file_end() + 4096, 100};
  struct {
    const char* what;
    std::string payload;
  } bad[] = {
      {"level 0", NodePayload(0, 0, 2, {leaf0, leaf1})},
      {"level 2", NodePayload(2, 0, 2, {leaf0, leaf1})},
      {"first leaf 1", NodePayload(1, 1, 2, {leaf0, leaf1})},
      {"first leaf 256", NodePayload(1, 256, 2, {leaf0, leaf1})},
      {"count 0", NodePayload(1, 0, 0, {})},
      {"count 257", NodePayload(1, 0, 257, std::vector<BlockRef>(257, leaf0))},
      {"count says more than present", NodePayload(1, 0, 2, {leaf0})},
      {"trailing child", NodePayload(1, 0, 2, {leaf0, leaf1, leaf1})},
      {"trailing byte", NodePayload(1, 0, 2, {leaf0, leaf1}) + "z"},
      {"last child missing", NodePayload(1, 0, 3, {leaf0, leaf1, BlockRef{}})},
      {"child past file_end", NodePayload(1, 0, 2, {leaf0, far})},
      {"child before data", NodePayload(1, 0, 2, {BlockRef{64, 100}, leaf1})},
      {"child shorter than a header", NodePayload(1, 0, 2, {leaf0, BlockRef{leaf1.addr, 4}})},
      {"child length without address", NodePayload(1, 0, 2, {BlockRef{0, 100}, leaf1})},
      {"leaves swapped", NodePayload(1, 0, 2, {leaf1, leaf0})},
      {"a leaf twice", NodePayload(1, 0, 2, {leaf0, leaf0})},
  };
  for (const auto& b : bad) {
    SCOPED_TRACE(b.what);
    BlockRef node = Write(BlockType::kPagedNode, b.payload);
    Status s = GetThrough(g, node, 1, 0);
    Status t = GetThrough(g, node, 1, 599);
    // The node itself or the leaf it sends a lookup to is rejected.
    EXPECT_TRUE(s.code() == Code::kCorruption || t.code() == Code::kCorruption)
        << s.ToString() << " / " << t.ToString();
    EXPECT_TRUE(s.ok() || s.code() == Code::kCorruption) << s.ToString();
    EXPECT_TRUE(t.ok() || t.code() == Code::kCorruption) << t.ToString();
    auto idx = Index::Open(kExt, g, MakeRoot(node, 1, 1), &store_, "d");
    ASSERT_TRUE(idx.has_value());
    EXPECT_CODE((*idx)->ForEach(Nothing), Code::kCorruption);
  }
}

TEST_F(ExtensibleArrayHostileTest, RejectsAnUpperNodeThatPointsAtTheWrongLevel) {
  const IndexGeometry g = Geo({U});
  const uint64_t key = kLeaf * kFanout;  // leaf 256: child 1 of a level-2 top
  BlockRef leaf = Write(BlockType::kPagedLeaf, LeafPayload(key, 1, Addrs(1)));
  BlockRef level1 = Write(BlockType::kPagedNode, NodePayload(1, 256, 1, {leaf}));
  BlockRef good = Write(BlockType::kPagedNode, NodePayload(2, 0, 2, {BlockRef{}, level1}));
  EXPECT_OK(GetThrough(g, good, 2, key));
  BlockRef to_leaf = Write(BlockType::kPagedNode, NodePayload(2, 0, 2, {BlockRef{}, leaf}));
  EXPECT_CODE(GetThrough(g, to_leaf, 2, key), Code::kCorruption);
  BlockRef to_self_level = Write(BlockType::kPagedNode, NodePayload(2, 0, 2, {BlockRef{}, good}));
  EXPECT_CODE(GetThrough(g, to_self_level, 2, key), Code::kCorruption);
  BlockRef level1_at_0 = Write(BlockType::kPagedNode, NodePayload(1, 0, 1, {leaf}));
  BlockRef misplaced = Write(BlockType::kPagedNode, NodePayload(2, 0, 2, {BlockRef{}, level1_at_0}));
  EXPECT_CODE(GetThrough(g, misplaced, 2, key), Code::kCorruption);
}

TEST_F(ExtensibleArrayHostileTest, FollowsASevenLevelPathWithoutAllocatingItsRange) {
  // Child 1 on every level: leaf 0x01010101010101, key about 2^57. Only the
  // path is held in memory; the 2^56 leaves the top could cover are not.
  const IndexGeometry g = Geo({U});
  uint64_t leaf_no = 0;
  for (int k = 0; k < Index::kMaxDepth; ++k) leaf_no |= uint64_t{1} << (8 * k);
  const uint64_t key = leaf_no * kLeaf + 7;
  BlockRef child = Write(BlockType::kPagedLeaf, LeafPayload(leaf_no * kLeaf, 8, Addrs(8)));
  for (int level = 1; level <= Index::kMaxDepth; ++level) {
    const uint64_t first = (leaf_no >> (8 * level)) << (8 * level);
    child = Write(BlockType::kPagedNode, NodePayload(static_cast<uint8_t>(level), first, 2, {BlockRef{}, child}));
  }
  ASSERT_OK_AND_ASSIGN(auto idx, Index::Open(kExt, g, MakeRoot(child, Index::kMaxDepth, 1), &store_, "d"));
  ASSERT_OK_AND_ASSIGN(ChunkRecord r, idx->Get(Dims{key}));
  EXPECT_EQ(r.addr, data_begin_);
  ASSERT_OK_AND_ASSIGN(ChunkRecord zero, idx->Get(Dims{0}));
  EXPECT_FALSE(zero.allocated());
  uint64_t visited = 0;
  ASSERT_OK(idx->ForEach([&](ChunkCoord c, const ChunkRecord&) -> Status {
    EXPECT_GE(c[0], leaf_no * kLeaf);
    ++visited;
    return Status::OK();
  }));
  EXPECT_EQ(visited, 8u);
  // A change there writes only the path again.
  TakeWrites();
  ASSERT_OK(idx->Put(Dims{key}, Rec(5)));
  ASSERT_OK(idx->Flush());
  EXPECT_EQ(TakeWrites().writes, 1 + Index::kMaxDepth);
  auto again = Open(g, idx->EncodeRoot());
  ASSERT_OK_AND_ASSIGN(ChunkRecord back, again->Get(Dims{key}));
  EXPECT_EQ(back, Rec(5));
}

TEST_F(ExtensibleArrayHostileTest, RejectsATopListingChildrenPastTheLargestKey) {
  // At seven levels each child of the top spans 2^48 leaves; keys stop at
  // 2^63, so children 64 and up can never be reached.
  const IndexGeometry g = Geo({U});
  BlockRef leaf = Write(BlockType::kPagedLeaf, LeafPayload(0, 1, Addrs(1)));
  BlockRef chain = leaf;
  for (int level = 1; level < Index::kMaxDepth; ++level)
    chain = Write(BlockType::kPagedNode, NodePayload(static_cast<uint8_t>(level), 0, 1, {chain}));
  std::vector<BlockRef> kids(65);
  kids[0] = chain;
  kids[64] = chain;
  BlockRef top = Write(BlockType::kPagedNode, NodePayload(Index::kMaxDepth, 0, 65, kids));
  EXPECT_CODE(GetThrough(g, top, Index::kMaxDepth, 0), Code::kCorruption);
  kids.resize(64);
  kids[63] = BlockRef{};
  kids.resize(1);
  BlockRef fine = Write(BlockType::kPagedNode, NodePayload(Index::kMaxDepth, 0, 1, kids));
  EXPECT_OK(GetThrough(g, fine, Index::kMaxDepth, 0));
}

}  // namespace extensible_array_test
}  // namespace
}  // namespace slabfs::engine
