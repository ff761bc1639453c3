// The conformance suite of the ChunkIndex interface: every index kind
// (single, compact, fixed array, extensible array, B-tree), over grids of
// rank 1 to 3, bounded and unlimited, filtered records and not, keeps the
// contract of engine/index/chunk_index.h, checked against a std::map (whose
// order is C order):
//
//   - Get answers what Put stored (unallocated elsewhere); an unallocated
//     record removes; coordinates outside the maximum grid are
//     InvalidArgument and change nothing;
//   - ForEachIn visits the allocated records of a box, ForEachInOrder the
//     same in C order until told to stop; an error from the visitor ends a
//     walk and comes back; walks over an index reopened from its root read
//     only the pages that hold what they visit;
//   - Flush makes EncodeRoot describe the records, copy-on-write; a Flush
//     that fails at any write can be retried and loses nothing;
//   - CollectBlocks names exactly the index blocks the allocator holds for
//     it, disk_bytes counts them, Destroy frees them all;
//   - Gets and walks may run at once on a reopened index, and read its
//     pages under no lock that forbids block I/O;
//   - a truncated or damaged root, leaf or node is Corruption (or, where the
//     damage does not matter, the right answer), never a crash and never
//     another record.
//
// What only one kind does (its on-disk layout, the cost of a Flush in
// blocks, depth changes, hand-built hostile blocks) is in the kind's own
// test file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/format/layout.h"
#include "engine/index/chunk_index.h"
#include "engine/space/allocator.h"
#include "engine/txn/block_store.h"
#include "tests/testutil/fault_file.h"
#include "tests/testutil/index_env.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::engine {
namespace {
namespace index_conformance_test {  // its own names in a unity batch

using Key = std::vector<uint64_t>;
using Reference = std::map<Key, ChunkRecord>;  // allocated records only

constexpr uint64_t U = kUnlimited;
constexpr uint64_t kDataRegion = 1 << 20;  // where chunk addresses point
constexpr uint64_t kMaxStored = 4096;      // filtered records: the largest stored chunk

struct Case {
  const char* name;
  IndexKind kind;
  Dims max_grid;
  bool filtered = false;
  // Coordinates used along unlimited dimensions stay below this.
  uint64_t unlimited_extent = uint64_t{1} << 40;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// Every geometry of every kind. Tests that only mean something for some
// of them run in a sub-suite instantiated with just those (never a skip).
const std::vector<Case>& AllCases() {
  static const std::vector<Case> cases = {

      Case{"single", IndexKind::kSingle, {1, 1}},
      Case{"single_filtered", IndexKind::kSingle, {1}, true},
      Case{"compact", IndexKind::kCompact, {4, 8}},
      Case{"compact_3d", IndexKind::kCompact, {3, 2, 5}},
      Case{"compact_filtered", IndexKind::kCompact, {10}, true},
      Case{"fixed_1d", IndexKind::kFixedArray, {uint64_t{1} << 28}},
      Case{"fixed_1d_two_levels", IndexKind::kFixedArray, {256 * 512 + 1}},
      Case{"fixed_2d", IndexKind::kFixedArray, {uint64_t{1} << 12, uint64_t{1} << 16}},
      Case{"fixed_3d_small", IndexKind::kFixedArray, {7, 9, 600}},
      Case{"fixed_filtered", IndexKind::kFixedArray, {3, 700}, true},
      Case{"extensible_u0", IndexKind::kExtensibleArray, {U, 3}},
      Case{"extensible_u0_1d", IndexKind::kExtensibleArray, {U}},
      Case{"extensible_u1", IndexKind::kExtensibleArray, {5, U, 3}},
      Case{"extensible_u2", IndexKind::kExtensibleArray, {7, 2, U}},
      Case{"extensible_dense", IndexKind::kExtensibleArray, {U, 4}, false, 1 << 16},
      Case{"extensible_filtered", IndexKind::kExtensibleArray, {U, 4}, true, 1 << 16},
      Case{"btree_2d", IndexKind::kBTree, {U, U}},
      Case{"btree_dense", IndexKind::kBTree, {U, U}, false, 40},
      Case{"btree_fixed_3d", IndexKind::kBTree, {uint64_t{1} << 20, uint64_t{1} << 20, uint64_t{1} << 20}},
      Case{"btree_filtered", IndexKind::kBTree, {U, U, 3}, true, 1000}};
  return cases;
}

uint64_t MaxChunks(const Case& c) {
  uint64_t n = 1;
  for (uint64_t g : c.max_grid) {
    if (g == U) return U;
    n *= g;
  }
  return n;
}

bool InHeader(const Case& c) { return c.kind == IndexKind::kSingle || c.kind == IndexKind::kCompact; }

template <typename Pred>
std::vector<Case> Where(Pred keep) {
  std::vector<Case> out;
  for (const Case& c : AllCases())
    if (keep(c)) out.push_back(c);
  return out;
}

std::string CaseName(const testing::TestParamInfo<Case>& i) { return i.param.name; }

class IndexConformanceTest : public testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    alloc_.Reset(kDataStart, {});
    // Chunk data lives here; index blocks come after it.
    data_begin_ = alloc_.Allocate(kDataRegion, 4096);
    data_end_ = data_begin_ + kDataRegion;
    alloc_.MarkDurable();
    geo_.max_grid = GetParam().max_grid;
    geo_.filtered = GetParam().filtered;
    geo_.max_chunk_bytes = GetParam().filtered ? kMaxStored : 0;
  }

  Result<std::unique_ptr<ChunkIndex>> TryOpen(std::string_view root) {
    return OpenChunkIndex(GetParam().kind, geo_, root, &store_, "dataset 7");
  }
  std::unique_ptr<ChunkIndex> Open(std::string_view root = {}) {
    auto r = TryOpen(root);
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r ? std::move(*r) : nullptr;
  }

  // Single and compact keep their records in the root: no index block.
  bool in_header() const { return InHeader(GetParam()); }

  // The extent of the grid a test uses in dimension d.
  uint64_t Extent(size_t d) const { return geo_.max_grid[d] == U ? GetParam().unlimited_extent : geo_.max_grid[d]; }

  Key RandomKey(std::mt19937_64& rng) const {
    Key k(geo_.rank());
    for (size_t d = 0; d < k.size(); ++d) k[d] = rng() % Extent(d);
    return k;
  }

  ChunkRecord Rec(std::mt19937_64& rng) const {
    ChunkRecord r;
    if (!geo_.filtered) {
      r.addr = data_begin_ + 8 * (rng() % (kDataRegion / 8));
    } else {
      r.addr = data_begin_ + 64 * (rng() % ((kDataRegion - kMaxStored) / 64));
      r.size = static_cast<uint32_t>(1 + rng() % kMaxStored);
      r.filter_mask = static_cast<uint32_t>(rng());
    }
    return r;
  }

  // How many records a test stores: half the grid when it is small (single
  // and compact), else a few hundred, enough for several leaves.
  size_t Count() const {
    const uint64_t chunks = geo_.max_chunks();
    return chunks < 64 ? chunks / 2 + 1 : 300;
  }

  // Puts n records, half spread over the grid and half next to earlier ones
  // (so that leaves hold more than one).
  void Populate(ChunkIndex* idx, Reference* ref, std::mt19937_64& rng, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      Key k = RandomKey(rng);
      if (i % 2 == 1 && !ref->empty()) {
        k = std::next(ref->begin(), static_cast<long>(rng() % ref->size()))->first;
        k.back() = std::min(k.back() + 1 + rng() % 3, Extent(k.size() - 1) - 1);
      }
      const ChunkRecord rec = Rec(rng);
      ASSERT_OK(idx->Put(k, rec));
      (*ref)[k] = rec;
    }
  }

  // The records of the reference inside [lo, hi), in C order.
  static std::vector<Key> InBox(const Reference& ref, const Key& lo, const Key& hi) {
    std::vector<Key> out;
    for (const auto& [k, r] : ref) {
      bool in = true;
      for (size_t d = 0; d < k.size() && in; ++d) in = k[d] >= lo[d] && k[d] < hi[d];
      if (in) out.push_back(k);
    }
    return out;
  }

  // The ordered walk's keys, stopping after `limit` of them; every record
  // it hands out is the reference's.
  static std::vector<Key> Ordered(ChunkIndex& idx, const Key& lo, const Key& hi, const Reference& ref,
                                  size_t limit = SIZE_MAX) {
    std::vector<Key> out;
    Status s = idx.ForEachInOrder(lo, hi, [&](ChunkCoord c, const ChunkRecord& rec) -> Result<bool> {
      Key k(c.begin(), c.end());
      auto it = ref.find(k);
      EXPECT_TRUE(it != ref.end() && it->second == rec) << testing::PrintToString(k);
      out.push_back(std::move(k));
      return out.size() < limit;
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  // ForEachIn's keys, sorted (its order is the kind's).
  static std::vector<Key> Unordered(ChunkIndex& idx, const Key& lo, const Key& hi) {
    std::vector<Key> out;
    Status s = idx.ForEachIn(lo, hi, [&](ChunkCoord c, const ChunkRecord&) {
      out.emplace_back(c.begin(), c.end());
      return Status::OK();
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    std::sort(out.begin(), out.end());
    return out;
  }

  // A random box: often the whole grid, else random bounds (hi may be
  // kUnlimited, or past the grid).
  std::pair<Key, Key> RandomBox(std::mt19937_64& rng) const {
    Key lo(geo_.rank()), hi(geo_.rank());
    for (size_t d = 0; d < lo.size(); ++d) {
      const uint64_t e = Extent(d);
      switch (rng() % 4) {
        case 0:
          lo[d] = 0;
          hi[d] = U;
          break;
        case 1:
          lo[d] = rng() % e;
          hi[d] = lo[d] + 1;
          break;
        default: lo[d] = rng() % e; hi[d] = lo[d] + 1 + rng() % (e - lo[d] + 2);
      }
    }
    return {lo, hi};
  }

  // Get of every reference key and of random other keys, ForEach (every
  // record once) and ForEachInOrder (in C order) all equal the reference.
  void ExpectMatches(ChunkIndex* idx, const Reference& ref, std::mt19937_64& rng) {
    for (const auto& [k, rec] : ref) {
      auto r = idx->Get(k);
      ASSERT_TRUE(r.has_value()) << testing::PrintToString(k) << ": " << r.error().ToString();
      ASSERT_EQ(*r, rec) << testing::PrintToString(k);
    }
    for (int i = 0; i < 100; ++i) {
      const Key k = RandomKey(rng);
      auto r = idx->Get(k);
      ASSERT_TRUE(r.has_value()) << testing::PrintToString(k) << ": " << r.error().ToString();
      auto it = ref.find(k);
      ASSERT_EQ(*r, it == ref.end() ? ChunkRecord{} : it->second) << testing::PrintToString(k);
    }
    Reference seen;
    ASSERT_OK(idx->ForEach([&](ChunkCoord c, const ChunkRecord& rec) -> Status {
      Key k(c.begin(), c.end());
      EXPECT_TRUE(rec.allocated()) << testing::PrintToString(k);
      EXPECT_TRUE(seen.emplace(k, rec).second) << "visited twice: " << testing::PrintToString(k);
      return Status::OK();
    }));
    EXPECT_TRUE(seen == ref) << seen.size() << " records seen, " << ref.size() << " stored";
    std::vector<Key> keys;
    for (const auto& [k, r] : ref) keys.push_back(k);
    const Key lo(geo_.rank(), 0), hi(geo_.rank(), U);
    EXPECT_EQ(Ordered(*idx, lo, hi, ref), keys);
  }

  // Index bytes on disk from the allocator's point of view: everything past
  // the data region that is neither free nor pending.
  uint64_t LiveIndexBytes() { return testutil::LiveBytesAfter(alloc_, data_end_); }

  std::vector<BlockRef> Blocks(ChunkIndex* idx) {
    std::vector<BlockRef> blocks;
    Status s = idx->CollectBlocks(&blocks);
    EXPECT_TRUE(s.ok()) << s.ToString();
    std::sort(blocks.begin(), blocks.end(), [](const BlockRef& a, const BlockRef& b) { return a.addr < b.addr; });
    return blocks;
  }

  // The blocks CollectBlocks names are exactly what the allocator holds
  // for the index: past the data, apart, none of them free or pending, and
  // together as many bytes as the allocator has in use and disk_bytes says.
  void ExpectAccounting(ChunkIndex* idx) {
    const std::vector<BlockRef> blocks = Blocks(idx);
    const std::vector<FreedExtent> unreferenced = alloc_.Unreferenced();
    uint64_t total = 0, end = data_end_;
    for (const BlockRef& b : blocks) {
      EXPECT_GE(b.addr, end) << "block " << b.addr << " overlaps the one before or the data";
      EXPECT_LE(b.addr + b.len, alloc_.file_end());
      for (const FreedExtent& e : unreferenced)
        EXPECT_TRUE(e.addr + e.len <= b.addr || b.addr + b.len <= e.addr)
            << "block " << b.addr << "+" << b.len << " is free or pending";
      end = b.addr + b.len;
      total += b.len;
    }
    EXPECT_EQ(total, idx->disk_bytes());
    EXPECT_EQ(total, LiveIndexBytes());
    if (in_header()) {
      EXPECT_TRUE(blocks.empty());
    }
  }

  std::shared_ptr<testutil::Disk> disk_ = std::make_shared<testutil::Disk>();
  testutil::FaultFile file_{disk_};
  Allocator alloc_;
  BlockStore store_{&file_, &alloc_};
  uint64_t data_begin_ = 0, data_end_ = 0;
  IndexGeometry geo_;
};

// ------------------------------------------------------------ records

// Grids with at least one bounded dimension (coordinates past it exist).
class BoundedIndexTest : public IndexConformanceTest {};
// Grids that hold at least eight chunks (a walk can be stopped at its third).
class SeveralChunksIndexTest : public IndexConformanceTest {};
// Grids of a million chunks or more (pages far apart).
class LargeGridIndexTest : public IndexConformanceTest {};
// Kinds that keep their records in index blocks, not in the root.
class BlockIndexTest : public IndexConformanceTest {};

TEST_P(IndexConformanceTest, NewIndexIsEmpty) {
  std::unique_ptr<ChunkIndex> idx = Open();
  ASSERT_TRUE(idx);
  EXPECT_EQ(idx->kind(), GetParam().kind);
  EXPECT_EQ(idx->geometry().max_grid, geo_.max_grid);
  EXPECT_FALSE(idx->dirty());
  EXPECT_EQ(idx->EncodeRoot(), "");
  EXPECT_EQ(idx->disk_bytes(), 0u);
  std::mt19937_64 rng(1);
  ExpectMatches(idx.get(), {}, rng);
  testutil::TakeWrites(*disk_, file_);
  ASSERT_OK(idx->Flush());
  EXPECT_EQ(testutil::TakeWrites(*disk_, file_).writes, 0);
  EXPECT_EQ(idx->EncodeRoot(), "");
  EXPECT_TRUE(Blocks(idx.get()).empty());
}

TEST_P(IndexConformanceTest, MatchesAReferenceUnderRandomPutsRemovesFlushesAndReopens) {
  std::mt19937_64 rng(7);
  std::unique_ptr<ChunkIndex> idx = Open();
  Reference ref;
  int reopens = 0;
  for (int op = 0; op < 2000; ++op) {
    const uint64_t what = rng() % 100;
    if (what < 40) {
      // A new key, or one stored already (to replace or remove it).
      Key k = ref.empty() || rng() % 2 ? RandomKey(rng)
                                       : std::next(ref.begin(), static_cast<long>(rng() % ref.size()))->first;
      if (rng() % 5 == 0) {
        ASSERT_OK(idx->Put(k, ChunkRecord{}));
        ref.erase(k);
      } else {
        const ChunkRecord rec = Rec(rng);
        ASSERT_OK(idx->Put(k, rec));
        ref[k] = rec;
      }
    } else if (what < 90) {
      const Key k = ref.empty() || rng() % 2 ? RandomKey(rng)
                                             : std::next(ref.begin(), static_cast<long>(rng() % ref.size()))->first;
      ASSERT_OK_AND_ASSIGN(ChunkRecord rec, idx->Get(k));
      auto it = ref.find(k);
      ASSERT_EQ(rec, it == ref.end() ? ChunkRecord{} : it->second) << "op " << op << " " << testing::PrintToString(k);
    } else if (what < 95) {
      ASSERT_OK(idx->Flush());
      ASSERT_FALSE(idx->dirty());
      ExpectAccounting(idx.get());
      if (rng() % 2) alloc_.MarkDurable();  // the commit became durable
    } else {
      ASSERT_OK(idx->Flush());
      idx = Open(idx->EncodeRoot());
      ASSERT_TRUE(idx);
      ++reopens;
    }
  }
  EXPECT_GT(reopens, 50);
  ExpectMatches(idx.get(), ref, rng);
  ASSERT_OK(idx->Flush());
  ExpectAccounting(idx.get());
  std::unique_ptr<ChunkIndex> again = Open(idx->EncodeRoot());
  ExpectMatches(again.get(), ref, rng);
  EXPECT_EQ(again->disk_bytes(), idx->disk_bytes());
}

TEST_P(IndexConformanceTest, PutOfAnUnallocatedRecordRemovesIt) {
  std::mt19937_64 rng(2);
  std::unique_ptr<ChunkIndex> idx = Open();
  Reference ref;
  Populate(idx.get(), &ref, rng, Count());
  ASSERT_OK(idx->Flush());
  // Remove every other record, and a key that holds none.
  std::vector<Key> removed;
  bool drop = true;
  for (auto it = ref.begin(); it != ref.end(); drop = !drop) {
    if (!drop) {
      ++it;
      continue;
    }
    ASSERT_OK(idx->Put(it->first, ChunkRecord{}));
    removed.push_back(it->first);
    it = ref.erase(it);
  }
  const Key absent = RandomKey(rng);
  if (!ref.contains(absent)) ASSERT_OK(idx->Put(absent, ChunkRecord{}));
  for (const Key& k : removed) {
    ASSERT_OK_AND_ASSIGN(ChunkRecord r, idx->Get(k));
    EXPECT_FALSE(r.allocated());
  }
  ExpectMatches(idx.get(), ref, rng);
  ASSERT_OK(idx->Flush());
  ExpectAccounting(idx.get());
  std::unique_ptr<ChunkIndex> again = Open(idx->EncodeRoot());
  ExpectMatches(again.get(), ref, rng);
  // Removing everything leaves an empty root and no block.
  for (const auto& [k, r] : ref) ASSERT_OK(again->Put(k, ChunkRecord{}));
  ASSERT_OK(again->Flush());
  EXPECT_EQ(again->EncodeRoot(), "");
  EXPECT_EQ(again->disk_bytes(), 0u);
  alloc_.MarkDurable();
  EXPECT_EQ(LiveIndexBytes(), 0u);
}

TEST_P(IndexConformanceTest, DirtyFromAChangeUntilFlush) {
  std::mt19937_64 rng(3);
  std::unique_ptr<ChunkIndex> idx = Open();
  const Key k = RandomKey(rng);
  ASSERT_OK(idx->Put(k, Rec(rng)));
  EXPECT_TRUE(idx->dirty());
  ASSERT_OK(idx->Flush());
  EXPECT_FALSE(idx->dirty());
  EXPECT_NE(idx->EncodeRoot(), "");
  ASSERT_OK(idx->Put(k, ChunkRecord{}));
  EXPECT_TRUE(idx->dirty());
  ASSERT_OK(idx->Flush());
  EXPECT_FALSE(idx->dirty());
  // A reopened index has nothing to write.
  ASSERT_OK(idx->Put(k, Rec(rng)));
  ASSERT_OK(idx->Flush());
  std::unique_ptr<ChunkIndex> again = Open(idx->EncodeRoot());
  EXPECT_FALSE(again->dirty());
}

TEST_P(BoundedIndexTest, RejectsCoordinatesOutsideTheGrid) {
  std::mt19937_64 rng(4);
  std::unique_ptr<ChunkIndex> idx = Open();
  size_t tried = 0;
  for (size_t d = 0; d < geo_.rank(); ++d) {
    if (geo_.max_grid[d] == U) continue;
    for (uint64_t v : {geo_.max_grid[d], geo_.max_grid[d] + 1, ~uint64_t{0}}) {
      Key k(geo_.rank(), 0);
      k[d] = v;
      SCOPED_TRACE(testing::PrintToString(k));
      auto r = idx->Get(k);
      ASSERT_FALSE(r.has_value());
      EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
      EXPECT_NE(r.error().message().find("dataset 7"), std::string::npos) << r.error().message();
      EXPECT_CODE(idx->Put(k, Rec(rng)), Code::kInvalidArgument);
      ++tried;
    }
  }
  EXPECT_FALSE(idx->dirty());
  EXPECT_EQ(idx->EncodeRoot(), "");
  EXPECT_GT(tried, 0);
}

// ------------------------------------------------------------ walks

TEST_P(IndexConformanceTest, VisitsTheBoxInCOrderAndStopsWhenTold) {
  std::mt19937_64 rng(3);
  std::unique_ptr<ChunkIndex> idx = Open();
  Reference ref;
  Populate(idx.get(), &ref, rng, Count());
  for (int pass = 0; pass < 2; ++pass) {
    for (int t = 0; t < 200; ++t) {
      auto [lo, hi] = RandomBox(rng);
      const std::vector<Key> want = InBox(ref, lo, hi);
      ASSERT_EQ(Ordered(*idx, lo, hi, ref), want) << "pass " << pass << " box " << t;
      ASSERT_EQ(Unordered(*idx, lo, hi), want) << "pass " << pass << " box " << t;
      if (!want.empty()) {
        const size_t stop = 1 + rng() % want.size();
        ASSERT_EQ(Ordered(*idx, lo, hi, ref, stop), std::vector<Key>(want.begin(), want.begin() + stop));
      }
    }
    ASSERT_OK(idx->Flush());
    idx = Open(idx->EncodeRoot());
  }
}

TEST_P(SeveralChunksIndexTest, WalksEndAtTheFirstError) {
  std::mt19937_64 rng(5);
  std::unique_ptr<ChunkIndex> idx = Open();
  Reference ref;
  Populate(idx.get(), &ref, rng, Count());
  ASSERT_GE(ref.size(), 3u);
  ASSERT_OK(idx->Flush());
  const Key lo(geo_.rank(), 0), hi(geo_.rank(), U);
  for (int reopened = 0; reopened < 2; ++reopened) {
    int calls = 0;
    Status s = idx->ForEach([&](ChunkCoord, const ChunkRecord&) -> Status {
      return ++calls == 3 ? Status::Busy("stop here") : Status::OK();
    });
    EXPECT_EQ(s.code(), Code::kBusy);
    EXPECT_EQ(s.message(), "stop here");
    EXPECT_EQ(calls, 3);
    calls = 0;
    s = idx->ForEachInOrder(lo, hi, [&](ChunkCoord, const ChunkRecord&) -> Result<bool> {
      if (++calls == 3) return Err(Status::Busy("stop here"));
      return true;
    });
    EXPECT_EQ(s.code(), Code::kBusy);
    EXPECT_EQ(calls, 3);
    idx = Open(idx->EncodeRoot());
  }
}

TEST_P(LargeGridIndexTest, ReadsOnlyThePagesThatHoldWhatItVisits) {
  std::unique_ptr<ChunkIndex> idx = Open();
  // Three records far apart: the first and last chunk of the range used,
  // and one in the middle.
  Reference ref;
  std::mt19937_64 rng(5);
  Key first(geo_.rank(), 0), last(geo_.rank()), middle(geo_.rank());
  for (size_t d = 0; d < geo_.rank(); ++d) {
    last[d] = Extent(d) - 1;
    middle[d] = Extent(d) / 2;
  }
  for (const Key& k : {first, middle, last}) {
    ref[k] = Rec(rng);
    ASSERT_OK(idx->Put(k, ref[k]));
  }
  ASSERT_OK(idx->Flush());
  const std::string root = idx->EncodeRoot();
  const Key lo(geo_.rank(), 0), hi(geo_.rank(), U);
  struct Walk {
    const char* what;
    Key lo, hi;
    size_t limit;
    std::vector<Key> want;
  };
  Key after_first = first;
  after_first.back() = 1;
  const std::vector<Walk> walks = {
      {"everything", lo, hi, SIZE_MAX, {first, middle, last}},
      {"the first record", lo, hi, 1, {first}},
      {"from past the first", after_first, hi, 1, {middle}},
      {"nothing past the last", last, hi, SIZE_MAX, {last}},
  };
  for (const Walk& w : walks) {
    std::unique_ptr<ChunkIndex> fresh = Open(root);  // nothing in memory
    const int64_t before = disk_->reads;
    ASSERT_EQ(Ordered(*fresh, w.lo, w.hi, ref, w.limit), w.want) << w.what;
    // Each record costs at most one block per level of the tallest index
    // over such a grid (seven node levels and a leaf for an extensible
    // array), whatever the grid's size.
    EXPECT_LE(disk_->reads - before, 8 * static_cast<int64_t>(ref.size())) << w.what;
  }
}

// ------------------------------------------------------------ flush

TEST_P(IndexConformanceTest, FlushIsCopyOnWrite) {
  std::mt19937_64 rng(6);
  std::unique_ptr<ChunkIndex> idx = Open();
  Reference before;
  Populate(idx.get(), &before, rng, Count());
  ASSERT_OK(idx->Flush());
  alloc_.MarkDurable();
  const std::string old_root = idx->EncodeRoot();
  const std::string old_image = disk_->current;
  // Change every record.
  Reference after;
  for (const auto& [k, r] : before) {
    after[k] = Rec(rng);
    ASSERT_OK(idx->Put(k, after[k]));
  }
  ASSERT_OK(idx->Flush());
  // No byte of the committed state was overwritten...
  ASSERT_GE(disk_->current.size(), old_image.size());
  EXPECT_EQ(disk_->current.compare(0, old_image.size(), old_image), 0);
  // ...so the old root still reads the old records, the new root the new.
  std::unique_ptr<ChunkIndex> old_idx = Open(old_root);
  ExpectMatches(old_idx.get(), before, rng);
  std::unique_ptr<ChunkIndex> new_idx = Open(idx->EncodeRoot());
  ExpectMatches(new_idx.get(), after, rng);
}

TEST_P(IndexConformanceTest, FlushThatFailsAtAnyWriteCanBeRetried) {
  std::mt19937_64 rng(9);
  Reference base;
  {
    // The records before and the changes after, drawn once.
    // Few records: over a large grid each one is a leaf of its own.
    std::unique_ptr<ChunkIndex> scratch = Open();
    Populate(scratch.get(), &base, rng, std::min<size_t>(Count(), 60));
    ASSERT_OK(scratch->Destroy());
  }
  std::vector<std::pair<Key, ChunkRecord>> changes;
  for (const auto& [k, r] : base) {
    switch (rng() % 4) {
      case 0: changes.emplace_back(k, ChunkRecord{}); break;  // a removal
      case 1: changes.emplace_back(k, Rec(rng)); break;       // a new record
      default: break;
    }
  }
  for (int i = 0; i < 10; ++i) changes.emplace_back(RandomKey(rng), Rec(rng));  // new keys
  Reference want = base;
  for (const auto& [k, r] : changes) {
    if (r.allocated())
      want[k] = r;
    else
      want.erase(k);
  }
  for (int64_t fail_at = 0;; ++fail_at) {
    SCOPED_TRACE(fail_at);
    std::unique_ptr<ChunkIndex> idx = Open();
    for (const auto& [k, r] : base) ASSERT_OK(idx->Put(k, r));
    ASSERT_OK(idx->Flush());
    alloc_.MarkDurable();
    const std::string before = idx->EncodeRoot();
    for (const auto& [k, r] : changes) ASSERT_OK(idx->Put(k, r));
    disk_->crash_after = disk_->writes + fail_at;
    Status s = idx->Flush();
    disk_->crash_after = -1;
    disk_->crashed = false;
    if (s.ok()) {
      // Every write the Flush makes failed once above; the kinds in the
      // header write nothing.
      if (in_header()) {
        EXPECT_EQ(fail_at, 0);
      } else {
        EXPECT_GT(fail_at, 0);
      }
      ExpectMatches(Open(idx->EncodeRoot()).get(), want, rng);
      break;
    }
    EXPECT_EQ(s.code(), Code::kIOError) << s.ToString();
    EXPECT_TRUE(idx->dirty());
    EXPECT_EQ(idx->EncodeRoot(), before);
    ASSERT_OK(idx->Flush());
    EXPECT_FALSE(idx->dirty());
    ExpectAccounting(idx.get());
    ExpectMatches(Open(idx->EncodeRoot()).get(), want, rng);
    ASSERT_OK(idx->Destroy());
    alloc_.MarkDurable();
    ASSERT_EQ(alloc_.TrimTail(), data_end_);
    testutil::TakeWrites(*disk_, file_);  // the fake disk forgets the writes it kept for a crash
    ASSERT_LT(fail_at, 1000);
  }
}

// ------------------------------------------------------------ blocks

TEST_P(IndexConformanceTest, CollectBlocksNamesExactlyTheBlocksAllocated) {
  std::mt19937_64 rng(10);
  std::unique_ptr<ChunkIndex> idx = Open();
  Reference ref;
  Populate(idx.get(), &ref, rng, Count());
  ASSERT_OK(idx->Flush());
  ExpectAccounting(idx.get());
  const std::vector<BlockRef> blocks = Blocks(idx.get());
  if (!in_header()) {
    EXPECT_FALSE(blocks.empty());
  }
  // A reopened index names the same blocks without having read them first.
  std::unique_ptr<ChunkIndex> again = Open(idx->EncodeRoot());
  EXPECT_EQ(again->disk_bytes(), idx->disk_bytes());
  const std::vector<BlockRef> reread = Blocks(again.get());
  ASSERT_EQ(reread.size(), blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) {
    EXPECT_EQ(reread[i].addr, blocks[i].addr);
    EXPECT_EQ(reread[i].len, blocks[i].len);
  }
  // After changes, committed or not yet durable.
  alloc_.MarkDurable();
  Populate(again.get(), &ref, rng, Count() / 2);
  for (int i = 0; i < 5 && !ref.empty(); ++i) {
    auto it = std::next(ref.begin(), static_cast<long>(rng() % ref.size()));
    ASSERT_OK(again->Put(it->first, ChunkRecord{}));
    ref.erase(it);
  }
  ASSERT_OK(again->Flush());
  ExpectAccounting(again.get());
  alloc_.MarkDurable();
  ExpectAccounting(again.get());
  ExpectMatches(again.get(), ref, rng);
}

TEST_P(IndexConformanceTest, DestroyFreesEveryBlockAndForgetsEveryRecord) {
  std::mt19937_64 rng(11);
  std::unique_ptr<ChunkIndex> idx = Open();
  Reference ref;
  Populate(idx.get(), &ref, rng, Count());
  ASSERT_OK(idx->Flush());
  alloc_.MarkDurable();  // the blocks are in the committed state now
  if (!in_header()) {
    ASSERT_GT(LiveIndexBytes(), 0u);
  }
  ASSERT_OK(idx->Destroy());
  EXPECT_EQ(idx->disk_bytes(), 0u);
  EXPECT_EQ(idx->EncodeRoot(), "");
  // (dirty() after Destroy is the kind's: the kinds in the header say the
  // header must be rewritten, the others that no block is left to write.)
  EXPECT_TRUE(Blocks(idx.get()).empty());
  // Freed, but committed blocks stay pending until the commit is durable.
  EXPECT_EQ(LiveIndexBytes(), 0u);
  const uint64_t end = alloc_.file_end();
  EXPECT_EQ(alloc_.TrimTail(), end);
  alloc_.MarkDurable();
  EXPECT_EQ(alloc_.TrimTail(), data_end_);
  ExpectMatches(idx.get(), {}, rng);
  // And usable again.
  Reference next;
  Populate(idx.get(), &next, rng, Count() / 2 + 1);
  ASSERT_OK(idx->Flush());
  ExpectAccounting(idx.get());
  ExpectMatches(Open(idx->EncodeRoot()).get(), next, rng);
}

TEST_P(IndexConformanceTest, DestroyOfUnflushedChangesFreesFreshBlocksAtOnce) {
  std::mt19937_64 rng(12);
  std::unique_ptr<ChunkIndex> idx = Open();
  Reference ref;
  Populate(idx.get(), &ref, rng, Count());
  ASSERT_OK(idx->Flush());
  Populate(idx.get(), &ref, rng, Count() / 4 + 1);  // dirty, unwritten pages
  ASSERT_OK(idx->Destroy());
  EXPECT_EQ(idx->EncodeRoot(), "");
  EXPECT_EQ(alloc_.TrimTail(), data_end_);  // never committed: free at once
}

TEST_P(IndexConformanceTest, DestroyOfAReopenedIndexFreesBlocksItNeverRead) {
  std::mt19937_64 rng(13);
  std::unique_ptr<ChunkIndex> idx = Open();
  Reference ref;
  Populate(idx.get(), &ref, rng, Count());
  ASSERT_OK(idx->Flush());
  alloc_.MarkDurable();
  std::unique_ptr<ChunkIndex> again = Open(idx->EncodeRoot());
  ASSERT_OK(again->Destroy());
  alloc_.MarkDurable();
  EXPECT_EQ(alloc_.TrimTail(), data_end_);
}

// ------------------------------------------------------------ concurrency

TEST_P(IndexConformanceTest, ConcurrentGetsAndWalksOnAReopenedIndexSeeEveryRecord) {
  std::mt19937_64 rng(14);
  std::unique_ptr<ChunkIndex> idx = Open();
  Reference ref;
  Populate(idx.get(), &ref, rng, 4 * Count());
  ASSERT_OK(idx->Flush());
  const std::vector<std::pair<Key, ChunkRecord>> want(ref.begin(), ref.end());
  std::unique_ptr<ChunkIndex> again = Open(idx->EncodeRoot());
  const Key lo(geo_.rank(), 0), hi(geo_.rank(), U);
  std::vector<int> errors(6, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < want.size(); ++i) {
        const auto& [k, rec] = want[(i * (2 * t + 1) + t * 1000) % want.size()];  // an order per thread
        auto r = again->Get(k);
        if (!r || *r != rec) ++errors[t];
      }
    });
  }
  threads.emplace_back([&] {
    size_t seen = 0;
    Status s = again->ForEachIn(lo, hi, [&](ChunkCoord c, const ChunkRecord& r) -> Status {
      auto it = ref.find(Key(c.begin(), c.end()));
      if (it == ref.end() || it->second != r) ++errors[4];
      ++seen;
      return Status::OK();
    });
    if (!s.ok() || seen != ref.size()) ++errors[4];
  });
  threads.emplace_back([&] {
    size_t seen = 0;
    Status s = again->ForEachInOrder(lo, hi, [&](ChunkCoord c, const ChunkRecord& r) -> Result<bool> {
      if (seen >= want.size() || !std::equal(c.begin(), c.end(), want[seen].first.begin()) || r != want[seen].second)
        ++errors[5];
      ++seen;
      return true;
    });
    if (!s.ok() || seen != want.size()) ++errors[5];
  });
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors, std::vector<int>(6, 0));
  // The lock order: no thread read a page under a lock that forbids block I/O.
  EXPECT_EQ(disk_->io_under_no_block_io_lock, 0);
}

// ------------------------------------------------------------ damage

TEST_P(IndexConformanceTest, RejectsEveryTruncatedRoot) {
  std::mt19937_64 rng(15);
  std::unique_ptr<ChunkIndex> idx = Open();
  Reference ref;
  Populate(idx.get(), &ref, rng, std::min<size_t>(Count(), 3));
  ASSERT_OK(idx->Flush());
  const std::string root = idx->EncodeRoot();
  ASSERT_FALSE(root.empty());
  for (size_t len = 1; len < root.size(); ++len) {
    SCOPED_TRACE(len);
    EXPECT_CODE(TryOpen(root.substr(0, len)), Code::kCorruption);
  }
  EXPECT_CODE(TryOpen(root + '\0'), Code::kCorruption);
  ASSERT_OK(TryOpen(root));
}

// What an index with damaged bytes may answer: Corruption, or (where the
// damage does not touch what is asked) the right record; never another
// record, never a crash. A walk over everything must meet the damage.
void ExpectRightOrCorruption(ChunkIndex* idx, const Reference& ref, bool walk_must_fail) {
  for (int twice = 0; twice < 2; ++twice) {  // a second Get is no fill value
    for (const auto& [k, rec] : ref) {
      auto r = idx->Get(k);
      if (r.has_value()) {
        EXPECT_EQ(*r, rec) << testing::PrintToString(k);
      } else {
        EXPECT_EQ(r.error().code(), Code::kCorruption) << r.error().ToString();
      }
    }
  }
  Reference seen;
  Status s = idx->ForEach([&](ChunkCoord c, const ChunkRecord& rec) {
    seen.emplace(Key(c.begin(), c.end()), rec);
    return Status::OK();
  });
  if (s.ok()) {
    EXPECT_FALSE(walk_must_fail) << "a walk over everything missed the damage";
    EXPECT_TRUE(seen == ref);
  } else {
    EXPECT_EQ(s.code(), Code::kCorruption) << s.ToString();
    for (const auto& [k, rec] : seen) {
      auto it = ref.find(k);
      EXPECT_TRUE(it != ref.end() && it->second == rec) << testing::PrintToString(k);
    }
  }
}

TEST_P(BlockIndexTest, DamagedBlocksAreCorruptionNeverOtherRecords) {
  std::mt19937_64 rng(16);
  std::unique_ptr<ChunkIndex> idx = Open();
  Reference ref;
  Populate(idx.get(), &ref, rng, Count());
  ASSERT_OK(idx->Flush());
  alloc_.MarkDurable();
  const std::string root = idx->EncodeRoot();
  std::vector<BlockRef> blocks = Blocks(idx.get());
  ASSERT_FALSE(blocks.empty());
  // The first blocks, the last ones and the top (leaves and nodes both).
  if (blocks.size() > 6) blocks.erase(blocks.begin() + 3, blocks.end() - 3);
  for (const BlockRef& b : blocks) {
    // Every byte of the block header and of the start of the payload, then
    // a stride through the rest, and the last byte.
    std::vector<uint64_t> at;
    for (uint64_t i = 0; i < b.len; i += i < 64 ? 1 : 97) at.push_back(i);
    at.push_back(b.len - 1);
    for (uint64_t i : at) {
      SCOPED_TRACE(std::to_string(b.addr) + "+" + std::to_string(i));
      disk_->current[b.addr + i] ^= 0x10;
      std::unique_ptr<ChunkIndex> damaged = Open(root);  // roots do not read blocks
      ASSERT_TRUE(damaged);
      ExpectRightOrCorruption(damaged.get(), ref, /*walk_must_fail=*/true);
      // A change through a damaged page is refused, never a crash.
      Status put = damaged->Put(ref.begin()->first, Rec(rng));
      EXPECT_TRUE(put.ok() || put.code() == Code::kCorruption) << put.ToString();
      disk_->current[b.addr + i] ^= 0x10;
    }
  }
  // Undamaged again: the same root reads everything.
  ExpectMatches(Open(root).get(), ref, rng);
}

// Single and compact roots are the records: the dataset header's checksum
// guards them, so a damaged root there is the header's concern.
TEST_P(BlockIndexTest, DamagedRootsAreCorruptionNeverOtherRecords) {
  std::mt19937_64 rng(17);
  std::unique_ptr<ChunkIndex> idx = Open();
  Reference ref;
  Populate(idx.get(), &ref, rng, Count());
  ASSERT_OK(idx->Flush());
  const std::string root = idx->EncodeRoot();
  for (size_t i = 0; i < root.size(); ++i) {
    for (char mask : {char{0x01}, char{0x10}, static_cast<char>(0x80)}) {
      SCOPED_TRACE(std::to_string(i) + " ^ " + std::to_string(static_cast<unsigned char>(mask)));
      std::string bad = root;
      bad[i] ^= mask;
      auto damaged = TryOpen(bad);
      if (!damaged) {
        EXPECT_EQ(damaged.error().code(), Code::kCorruption) << damaged.error().ToString();
        continue;
      }
      ExpectRightOrCorruption(damaged->get(), ref, /*walk_must_fail=*/false);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, IndexConformanceTest, testing::ValuesIn(AllCases()), CaseName);
INSTANTIATE_TEST_SUITE_P(Kinds, BoundedIndexTest, testing::ValuesIn(Where([](const Case& c) {
                           for (uint64_t g : c.max_grid)
                             if (g != U) return true;
                           return false;
                         })),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(Kinds, SeveralChunksIndexTest,
                         testing::ValuesIn(Where([](const Case& c) { return MaxChunks(c) >= 8; })), CaseName);
INSTANTIATE_TEST_SUITE_P(Kinds, LargeGridIndexTest,
                         testing::ValuesIn(Where([](const Case& c) { return MaxChunks(c) >= (uint64_t{1} << 20); })),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(Kinds, BlockIndexTest, testing::ValuesIn(Where([](const Case& c) { return !InHeader(c); })),
                         CaseName);

}  // namespace index_conformance_test
}  // namespace
}  // namespace slabfs::engine
