// The conformance suite of the walks every chunk index kind offers:
// ForEachInOrder visits the allocated records of a box in C order of the
// chunk grid and stops when told, ForEachIn visits the same records, and
// neither reads the index pages of the empty grid (bounded by the disk
// reads of a walk over an index reopened from its root, so nothing is in
// memory yet). Checked against a std::map, whose order is C order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/format/layout.h"
#include "engine/index/chunk_index.h"
#include "engine/space/allocator.h"
#include "engine/txn/block_store.h"
#include "tests/testutil/fault_file.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::engine {
namespace {

using Key = std::vector<uint64_t>;
using Reference = std::map<Key, ChunkRecord>;

constexpr uint64_t U = kUnlimited;
constexpr uint64_t kDataRegion = 1 << 20;  // where chunk addresses point

struct Case {
  const char* name;
  IndexKind kind;
  Dims max_grid;
  // Coordinates used along unlimited dimensions stay below this.
  uint64_t unlimited_extent = uint64_t{1} << 40;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class OrderedWalkTest : public testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    alloc_.Reset(kDataStart, {});
    data_begin_ = alloc_.Allocate(kDataRegion, 4096);
    alloc_.MarkDurable();
    geo_.max_grid = GetParam().max_grid;
  }

  std::unique_ptr<ChunkIndex> Open(std::string_view root = {}) {
    auto r = OpenChunkIndex(GetParam().kind, geo_, root, &store_, "dataset 7");
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r ? std::move(*r) : nullptr;
  }

  // The extent of the grid a test uses in dimension d.
  uint64_t Extent(size_t d) const {
    return geo_.max_grid[d] == U ? GetParam().unlimited_extent : geo_.max_grid[d];
  }

  Key RandomKey(std::mt19937_64& rng) const {
    Key k(geo_.rank());
    for (size_t d = 0; d < k.size(); ++d) k[d] = rng() % Extent(d);
    return k;
  }

  ChunkRecord Rec(std::mt19937_64& rng) { return ChunkRecord{data_begin_ + (rng() % (kDataRegion / 8)) * 8, 0, 0}; }

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

  // The walk's keys, stopping after `limit` of them.
  static std::vector<Key> Ordered(ChunkIndex& idx, const Key& lo, const Key& hi, const Reference& ref,
                                  size_t limit = SIZE_MAX) {
    std::vector<Key> out;
    Status s = idx.ForEachInOrder(lo, hi, [&](ChunkCoord c, const ChunkRecord& rec) -> Result<bool> {
      Key k(c.begin(), c.end());
      auto it = ref.find(k);
      EXPECT_TRUE(it != ref.end() && it->second == rec);
      out.push_back(std::move(k));
      return out.size() < limit;
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

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
        default:
          lo[d] = rng() % e;
          hi[d] = lo[d] + 1 + rng() % (e - lo[d] + 2);
      }
    }
    return {lo, hi};
  }

  std::shared_ptr<testutil::Disk> disk_ = std::make_shared<testutil::Disk>();
  testutil::FaultFile file_{disk_};
  Allocator alloc_;
  BlockStore store_{&file_, &alloc_};
  uint64_t data_begin_ = 0;
  IndexGeometry geo_;
};

TEST_P(OrderedWalkTest, VisitsTheBoxInCOrderAndStopsWhenTold) {
  std::mt19937_64 rng(3);
  std::unique_ptr<ChunkIndex> idx = Open();
  Reference ref;
  const uint64_t chunks = geo_.max_chunks();
  const size_t n = chunks < 64 ? chunks / 2 + 1 : 300;
  for (size_t i = 0; i < n; ++i) {
    // Half spread over the grid, half in clusters.
    Key k = RandomKey(rng);
    if (i % 2 == 1 && !ref.empty()) {
      k = std::next(ref.begin(), static_cast<long>(rng() % ref.size()))->first;
      k.back() = std::min(k.back() + 1 + rng() % 3, Extent(k.size() - 1) - 1);
    }
    const ChunkRecord rec = Rec(rng);
    ASSERT_OK(idx->Put(k, rec));
    ref[k] = rec;
  }
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

// On grids of a million chunks or more (the small ones of the suite above
// hold their records in the header or in a page or two).
class OrderedWalkOnLargeGridsTest : public OrderedWalkTest {};

TEST_P(OrderedWalkOnLargeGridsTest, ReadsOnlyThePagesThatHoldWhatItVisits) {
  ASSERT_TRUE(geo_.max_chunks() == U || geo_.max_chunks() >= (uint64_t{1} << 20));
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

INSTANTIATE_TEST_SUITE_P(
    Kinds, OrderedWalkTest,
    testing::Values(Case{"single", IndexKind::kSingle, {1, 1}}, Case{"compact", IndexKind::kCompact, {4, 8}},
                    Case{"compact_3d", IndexKind::kCompact, {3, 2, 5}},
                    Case{"fixed_1d", IndexKind::kFixedArray, {uint64_t{1} << 28}},
                    Case{"fixed_2d", IndexKind::kFixedArray, {uint64_t{1} << 12, uint64_t{1} << 16}},
                    Case{"fixed_3d_small", IndexKind::kFixedArray, {7, 9, 600}},
                    Case{"extensible_u0", IndexKind::kExtensibleArray, {U, 3}},
                    Case{"extensible_u0_1d", IndexKind::kExtensibleArray, {U}},
                    Case{"extensible_u1", IndexKind::kExtensibleArray, {5, U, 3}},
                    Case{"extensible_u2", IndexKind::kExtensibleArray, {7, 2, U}},
                    Case{"btree_2d", IndexKind::kBTree, {U, U}},
                    Case{"btree_fixed_3d", IndexKind::kBTree, {uint64_t{1} << 20, uint64_t{1} << 20, uint64_t{1} << 20}}),
    [](const testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

INSTANTIATE_TEST_SUITE_P(
    Kinds, OrderedWalkOnLargeGridsTest,
    testing::Values(Case{"fixed_1d", IndexKind::kFixedArray, {uint64_t{1} << 28}},
                    Case{"fixed_2d", IndexKind::kFixedArray, {uint64_t{1} << 12, uint64_t{1} << 16}},
                    Case{"extensible_u0", IndexKind::kExtensibleArray, {U, 3}},
                    Case{"extensible_u0_1d", IndexKind::kExtensibleArray, {U}},
                    Case{"extensible_u1", IndexKind::kExtensibleArray, {5, U, 3}},
                    Case{"extensible_u2", IndexKind::kExtensibleArray, {7, 2, U}},
                    Case{"btree_2d", IndexKind::kBTree, {U, U}},
                    Case{"btree_fixed_3d", IndexKind::kBTree, {uint64_t{1} << 20, uint64_t{1} << 20, uint64_t{1} << 20}}),
    [](const testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace slabfs::engine
