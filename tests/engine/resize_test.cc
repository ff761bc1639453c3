// Datasets that grow and shrink, for every index kind, against a dense
// reference model: random box writes, resizes (to zero and back), byte
// writes that grow the first dimension, commits and reopens. Also the
// automatic choice of index kind and the refusals of kinds that cannot work.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tests/testutil/mem_container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {
namespace resize_test {  // its own names in a unity batch

using testutil::NewDisk;
using testutil::OpenOnDisk;

constexpr uint32_t kFill = 0xF111F111;

// A dense C-order array of the current shape; elements never written, or
// cut off by a shrink and grown back, hold the fill value.
struct Model {
  Dims shape;
  std::vector<uint32_t> v;

  static uint64_t Count(const Dims& s) {
    uint64_t n = 1;
    for (uint64_t d : s) n *= d;
    return n;
  }
  uint64_t Offset(const Dims& s, const Dims& idx) const {
    uint64_t o = 0;
    for (size_t d = 0; d < s.size(); ++d) o = o * s[d] + idx[d];
    return o;
  }
  // Calls f(index) for every index of a box, in C order.
  template <typename F>
  static void ForBox(const Dims& start, const Dims& count, F f) {
    if (Count(count) == 0) return;
    Dims idx = start;
    for (;;) {
      f(idx);
      size_t d = start.size();
      while (d-- > 0) {
        if (++idx[d] < start[d] + count[d]) break;
        idx[d] = start[d];
      }
      if (d == static_cast<size_t>(-1)) return;
    }
  }
  void Resize(const Dims& to) {
    std::vector<uint32_t> nv(Count(to), kFill);
    Dims keep(to.size());
    for (size_t d = 0; d < to.size(); ++d) keep[d] = std::min(to[d], shape[d]);
    ForBox(Dims(to.size(), 0), keep, [&](const Dims& i) { nv[Offset(to, i)] = v[Offset(shape, i)]; });
    shape = to;
    v = std::move(nv);
  }
  void Write(const Dims& start, const Dims& count, const std::vector<uint32_t>& data) {
    uint64_t k = 0;
    ForBox(start, count, [&](const Dims& i) { v[Offset(shape, i)] = data[k++]; });
  }
};

struct Case {
  const char* name;
  Dims shape, max_shape, chunks;
  IndexKind want;
  IndexKind request = IndexKind::kAuto;
  const char* filters = "";
};

std::string CaseName(const ::testing::TestParamInfo<Case>& p) { return p.param.name; }
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class ResizeModelTest : public ::testing::TestWithParam<Case> {};

TEST_P(ResizeModelTest, MatchesDenseReference) {
  const Case& tc = GetParam();
  auto disk = NewDisk();
  std::unique_ptr<Container> c;
  ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(disk));
  std::string fill(4, '\0');
  std::memcpy(fill.data(), &kFill, 4);
  ASSERT_OK_AND_ASSIGN(Dataset ds, c->CreateDataset("/d", {.dtype = DType::kU4,
                                                           .shape = tc.shape,
                                                           .max_shape = tc.max_shape,
                                                           .chunks = tc.chunks,
                                                           .fill = fill,
                                                           .index = tc.request,
                                                           .filters = tc.filters}));
  EXPECT_EQ(ds.info().index, tc.want);
  Model m{tc.shape, std::vector<uint32_t>(Model::Count(tc.shape), kFill)};
  std::mt19937_64 rng(std::hash<std::string>()(tc.name));
  auto pick = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  const size_t rank = tc.shape.size();
  uint32_t next = 1;

  auto check = [&](const char* after, int step) {
    DatasetInfo info = ds.info();
    ASSERT_EQ(info.shape, m.shape) << after << " step " << step;
    std::vector<uint32_t> got(m.v.size());
    ASSERT_OK(ds.ReadElements(0, got.size(), got.data()));
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got[i], m.v[i]) << "element " << i << " after " << after << " at step " << step;
    // Nothing is stored for chunks wholly outside the shape.
    uint64_t grid = 1;
    for (size_t d = 0; d < rank; ++d) grid *= (m.shape[d] + tc.chunks[d] - 1) / tc.chunks[d];
    EXPECT_LE(info.allocated_chunks, grid) << after << " step " << step;
  };

  for (int step = 0; step < 160; ++step) {
    const uint64_t op = pick(0, 9);
    if (op < 4) {  // write a random box
      if (Model::Count(m.shape) == 0) continue;
      Dims start(rank), count(rank);
      for (size_t d = 0; d < rank; ++d) {
        start[d] = pick(0, m.shape[d] - 1);
        count[d] = pick(1, m.shape[d] - start[d]);
      }
      std::vector<uint32_t> data(Model::Count(count));
      for (auto& x : data) x = next++;
      ASSERT_OK(ds.Write(Slab::Box(start, count), data.data()));
      m.Write(start, count, data);
      check("write", step);
    } else if (op < 7) {  // resize within the max shape
      Dims to(rank);
      for (size_t d = 0; d < rank; ++d) {
        if (tc.max_shape[d] == tc.shape[d] && tc.max_shape[d] != kUnlimited) {
          to[d] = tc.shape[d];
        } else {
          uint64_t cap = tc.max_shape[d] == kUnlimited ? 3 * tc.chunks[d] + 5 : tc.max_shape[d];
          to[d] = pick(0, 5) == 0 ? 0 : pick(0, cap);
        }
      }
      ASSERT_OK(ds.Resize(to));
      m.Resize(to);
      check("resize", step);
    } else if (op == 7) {  // bytes past the end grow the first dimension
      const bool growable = tc.max_shape[0] != tc.shape[0] || tc.max_shape[0] == kUnlimited;
      uint64_t row = 1;
      for (size_t d = 1; d < rank; ++d) row *= m.shape[d];
      if (!growable || row == 0) continue;
      const uint64_t cap = tc.max_shape[0] == kUnlimited ? m.shape[0] + 4 : tc.max_shape[0];
      if (m.shape[0] >= cap) continue;
      // A few elements somewhere in the rows after the end, starting mid-row.
      const uint64_t first = m.shape[0] * row + pick(0, (cap - m.shape[0]) * row - 1);
      const uint64_t n = std::min<uint64_t>(pick(1, 2 * row), cap * row - first);
      std::vector<uint32_t> data(n);
      for (auto& x : data) x = next++;
      ASSERT_OK(ds.WriteBytes(first * 4, n * 4, data.data(), Dataset::Growth::kGrowRows));
      Dims to = m.shape;
      to[0] = (first + n + row - 1) / row;
      m.Resize(to);
      std::copy(data.begin(), data.end(), m.v.begin() + static_cast<int64_t>(first));
      check("growing write", step);
    } else if (op == 8) {
      ASSERT_OK(c->Commit());
    } else {  // reopen
      ASSERT_OK(c->Close());
      c.reset();
      ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(disk));
      ASSERT_OK_AND_ASSIGN(ds, c->OpenDataset("/d"));
      EXPECT_EQ(ds.info().index, tc.want);
      check("reopen", step);
    }
  }
  ASSERT_OK(c->Close());
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, ResizeModelTest,
    ::testing::Values(
        Case{"single", {3, 2}, {4, 4}, {4, 4}, IndexKind::kSingle},
        Case{"compact", {2, 5}, {6, 6}, {3, 3}, IndexKind::kCompact},
        Case{"fixed_bounded_max", {5, 7}, {20, 30}, {3, 4}, IndexKind::kFixedArray},
        Case{"extensible_first", {0, 9}, {kUnlimited, 9}, {2, 4}, IndexKind::kExtensibleArray},
        Case{"extensible_middle", {3, 4, 5}, {3, kUnlimited, 5}, {2, 3, 2}, IndexKind::kExtensibleArray},
        Case{"extensible_rank1", {10}, {kUnlimited}, {3}, IndexKind::kExtensibleArray},
        Case{"btree_two_unlimited", {4, 5}, {kUnlimited, kUnlimited}, {3, 2}, IndexKind::kBTree},
        Case{"btree_requested", {6, 6}, {30, 30}, {4, 4}, IndexKind::kBTree, IndexKind::kBTree},
        Case{"btree_rank3", {2, 3, 4}, {kUnlimited, 7, kUnlimited}, {2, 2, 3}, IndexKind::kBTree},
        // Filtered chunks: variable sizes in every kind of record.
        Case{"single_filtered", {3, 2}, {4, 4}, {4, 4}, IndexKind::kSingle, IndexKind::kAuto, "deflate=1"},
        Case{"compact_filtered",
             {2, 5},
             {6, 6},
             {3, 3},
             IndexKind::kCompact,
             IndexKind::kAuto,
             "shuffle,deflate=1,checksum"},
        Case{"fixed_filtered", {5, 7}, {20, 30}, {3, 4}, IndexKind::kFixedArray, IndexKind::kAuto, "shuffle,deflate=6"},
        Case{"extensible_filtered",
             {0, 9},
             {kUnlimited, 9},
             {2, 4},
             IndexKind::kExtensibleArray,
             IndexKind::kAuto,
             "checksum,deflate=1"},
        Case{"btree_filtered",
             {4, 5},
             {kUnlimited, kUnlimited},
             {3, 2},
             IndexKind::kBTree,
             IndexKind::kAuto,
             "shuffle,checksum"}),
    CaseName);

// ------------------------------------------------------------ choosing kinds

Result<Dataset> Make(Container& c, const std::string& path, Dims shape, Dims max_shape, Dims chunks,
                     IndexKind index = IndexKind::kAuto, uint64_t compact_limit = 8) {
  return c.CreateDataset(path, {.dtype = DType::kU1,
                                .shape = std::move(shape),
                                .max_shape = std::move(max_shape),
                                .chunks = std::move(chunks),
                                .index = index,
                                .compact_limit = compact_limit});
}

TEST(IndexChoiceTest, AutoPicksTheKindThatFits) {
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  struct {
    Dims shape, max, chunks;
    IndexKind want;
  } cases[] = {
      {{10, 10}, {}, {10, 10}, IndexKind::kSingle},
      {{10, 10}, {}, {5, 5}, IndexKind::kCompact},
      {{10, 10}, {}, {4, 4}, IndexKind::kFixedArray},       // 9 chunks
      {{10, 10}, {10, 40}, {10, 10}, IndexKind::kCompact},  // 4 at the max shape
      {{10}, {kUnlimited}, {10}, IndexKind::kExtensibleArray},
      {{10, 10}, {kUnlimited, kUnlimited}, {10, 10}, IndexKind::kBTree},
      // Fixed dimensions whose maximum grid is too large for a fixed array.
      {{1}, {uint64_t{1} << 40}, {1}, IndexKind::kBTree},
  };
  int i = 0;
  for (const auto& tc : cases) {
    ASSERT_OK_AND_ASSIGN(Dataset d, Make(*c, "/d" + std::to_string(i++), tc.shape, tc.max, tc.chunks));
    EXPECT_EQ(d.info().index, tc.want) << FormatDims(tc.shape) << " max " << FormatDims(tc.max);
  }
  // The compact limit is configurable.
  ASSERT_OK_AND_ASSIGN(Dataset d, Make(*c, "/nine", {9}, {}, {1}, IndexKind::kAuto, 9));
  EXPECT_EQ(d.info().index, IndexKind::kCompact);
}

TEST(IndexChoiceTest, RefusesKindsThatCannotWork) {
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  struct {
    Dims shape, max, chunks;
    IndexKind kind;
    const char* why;
  } cases[] = {
      {{10, 10}, {}, {5, 5}, IndexKind::kSingle, "more than one chunk"},
      {{100}, {}, {1}, IndexKind::kCompact, "100 chunks"},
      {{10}, {kUnlimited}, {5}, IndexKind::kCompact, "unlimited"},
      {{10}, {kUnlimited}, {5}, IndexKind::kFixedArray, "unlimited"},
      {{10, 10}, {}, {5, 5}, IndexKind::kExtensibleArray, "exactly one unlimited"},
      {{10, 10}, {kUnlimited, kUnlimited}, {5, 5}, IndexKind::kExtensibleArray, "exactly one unlimited"},
  };
  for (const auto& tc : cases) {
    auto d = Make(*c, "/d", tc.shape, tc.max, tc.chunks, tc.kind);
    ASSERT_FALSE(d.has_value()) << IndexKindName(tc.kind);
    EXPECT_EQ(d.error().code(), Code::kInvalidArgument);
    EXPECT_NE(d.error().message().find(tc.why), std::string::npos) << d.error().message();
  }
  // Nothing was created.
  EXPECT_CODE(c->OpenDataset("/d"), Code::kNotFound);
}

// ------------------------------------------------------------ growth rules

TEST(GrowthTest, BytesPastTheEndGrowWholeRowsOnlyWhereTheFirstDimensionCanGrow) {
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(Dataset s, Make(*c, "/stream", {0, 4}, {kUnlimited, 4}, {2, 4}));
  EXPECT_EQ(s.size_bytes(), 0u);
  // Six bytes: one whole row and half of the next; the rest of it is fill.
  ASSERT_OK(s.WriteBytes(0, 6, "abcdef", Dataset::Growth::kGrowRows));
  EXPECT_EQ(s.info().shape, (Dims{2, 4}));
  std::string got(8, '?');
  ASSERT_OK_AND_ASSIGN(size_t n, s.ReadBytes(0, 8, got.data()));
  EXPECT_EQ(n, 8u);
  EXPECT_EQ(got, std::string("abcdef\0\0", 8));
  // A gap before the write reads as fill too.
  ASSERT_OK(s.WriteBytes(13, 1, "z", Dataset::Growth::kGrowRows));
  EXPECT_EQ(s.size_bytes(), 16u);
  // Without growth, past the end is OutOfRange and changes nothing.
  EXPECT_CODE(s.WriteBytes(16, 1, "y"), Code::kOutOfRange);
  EXPECT_EQ(s.size_bytes(), 16u);

  // Offsets so far out that the dataset would pass 2^63 bytes, or the end
  // of the write would pass 2^64, are OutOfRange (EFBIG) and change nothing.
  for (uint64_t off : {uint64_t{1} << 63, ~uint64_t{0} - 2, (uint64_t{1} << 63) - 2}) {
    SCOPED_TRACE(off);
    EXPECT_CODE(s.WriteBytes(off, 4, "abcd", Dataset::Growth::kGrowRows), Code::kOutOfRange);
  }
  EXPECT_EQ(s.size_bytes(), 16u);

  // Only the second dimension can grow: a write past the end is OutOfRange.
  ASSERT_OK_AND_ASSIGN(Dataset wide, Make(*c, "/wide", {2, 4}, {2, kUnlimited}, {2, 4}));
  EXPECT_CODE(wide.WriteBytes(8, 1, "x", Dataset::Growth::kGrowRows), Code::kOutOfRange);
  EXPECT_EQ(wide.info().shape, (Dims{2, 4}));
  // A bounded first dimension grows up to its maximum and no further.
  ASSERT_OK_AND_ASSIGN(Dataset bounded, Make(*c, "/bounded", {1, 2}, {3, 2}, {1, 2}));
  ASSERT_OK(bounded.WriteBytes(2, 4, "abcd", Dataset::Growth::kGrowRows));
  EXPECT_EQ(bounded.info().shape, (Dims{3, 2}));
  EXPECT_CODE(bounded.WriteBytes(6, 1, "x", Dataset::Growth::kGrowRows), Code::kOutOfRange);
  EXPECT_EQ(bounded.info().shape, (Dims{3, 2}));
}

TEST(GrowthTest, SetSizeBytesTakesWholeRowsOfAChangeableFirstDimension) {
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(Dataset s, Make(*c, "/s", {3, 4}, {kUnlimited, 4}, {2, 2}));
  ASSERT_OK(s.SetSizeBytes(8));
  EXPECT_EQ(s.info().shape, (Dims{2, 4}));
  EXPECT_CODE(s.SetSizeBytes(9), Code::kInvalidArgument);
  ASSERT_OK(s.SetSizeBytes(0));
  EXPECT_EQ(s.info().shape, (Dims{0, 4}));
  EXPECT_EQ(s.info().allocated_chunks, 0u);
  ASSERT_OK_AND_ASSIGN(Dataset b, Make(*c, "/b", {1, 4}, {2, 4}, {1, 4}));
  EXPECT_CODE(b.SetSizeBytes(12), Code::kOutOfRange);
  ASSERT_OK_AND_ASSIGN(Dataset f, Make(*c, "/f", {3, 4}, {}, {2, 2}));
  EXPECT_CODE(f.SetSizeBytes(8), Code::kInvalidArgument);
  ASSERT_OK(f.SetSizeBytes(12));  // its own size is always fine
}

TEST(GrowthTest, ResizeRefusesBadShapesAndChangesNothing) {
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(Dataset s, Make(*c, "/s", {3, 4}, {10, kUnlimited}, {2, 2}));
  EXPECT_CODE(s.Resize({3}), Code::kInvalidArgument);
  EXPECT_CODE(s.Resize({11, 4}), Code::kOutOfRange);
  EXPECT_CODE(s.Resize({3, kUnlimited}), Code::kInvalidArgument);
  EXPECT_EQ(s.info().shape, (Dims{3, 4}));
  // A dataset created fixed cannot grow past its shape; like HDF5's
  // H5Dset_extent it may shrink and grow back.
  ASSERT_OK_AND_ASSIGN(Dataset f, Make(*c, "/f", {3, 4}, {}, {2, 2}));
  EXPECT_CODE(f.Resize({3, 5}), Code::kOutOfRange);
  EXPECT_CODE(f.Resize({4, 4}), Code::kOutOfRange);
  ASSERT_OK(f.Resize({2, 4}));
  ASSERT_OK(f.Resize({3, 4}));
  // A read-only container refuses.
  ASSERT_OK(c->Close());
  ASSERT_OK_AND_ASSIGN(auto ro, OpenOnDisk(disk, {.read_only = true}));
  ASSERT_OK_AND_ASSIGN(Dataset r, ro->OpenDataset("/s"));
  EXPECT_CODE(r.Resize({4, 4}), Code::kReadOnly);
}

TEST(GrowthTest, ShrinkingFreesTheChunksOutside) {
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(Dataset s, Make(*c, "/s", {0, 64}, {kUnlimited, 64}, {4, 64}));
  std::vector<uint8_t> row(64 * 400, 5);
  ASSERT_OK(s.WriteBytes(0, row.size(), row.data(), Dataset::Growth::kGrowRows));
  EXPECT_EQ(s.info().allocated_chunks, 100u);
  EXPECT_EQ(s.info().stored_bytes, 400u * 64);
  ASSERT_OK(s.Resize({10, 64}));  // chunks 0, 1 whole, chunk 2 cut and stored 2 rows long
  EXPECT_EQ(s.info().allocated_chunks, 3u);
  EXPECT_EQ(s.info().stored_bytes, 10u * 64);
  ASSERT_OK(c->Commit());
  const SpaceInfo before = c->space();
  ASSERT_OK(s.Resize({0, 64}));
  ASSERT_OK(c->Commit());
  ASSERT_OK(c->SetAttribute(kRootId, "n", Attribute::Integer(1)));
  ASSERT_OK(c->Commit());  // the freed space is reusable once the freeing commit is durable
  EXPECT_EQ(s.info().allocated_chunks, 0u);
  // The three chunks left are free again: the file shrank or holds them
  // as free space (less what the metadata written since took: the free
  // list grows by an entry or two of 32 bytes).
  const SpaceInfo after = c->space();
  // The free list's own blocks (deltas that commits add) do not count.
  EXPECT_GE(static_cast<int64_t>(after.free_bytes + after.free_list_bytes) + static_cast<int64_t>(before.file_bytes) -
                static_cast<int64_t>(after.file_bytes),
            static_cast<int64_t>(before.free_bytes + before.free_list_bytes + 10 * 64 - 128))
      << "before: file " << before.file_bytes << " free " << before.free_bytes << "; after: file " << after.file_bytes
      << " free " << after.free_bytes;
}

TEST(GrowthTest, AppendingRowByRowCostsTheSameAtAnyLength) {
  // Appending rows never rewrites what was stored before: the writes a
  // commit makes for one more row do not grow with the number of rows.
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(Dataset s, Make(*c, "/s", {0, 1024}, {kUnlimited, 1024}, {1, 1024}));
  std::vector<uint8_t> row(1024, 1);
  std::vector<uint64_t> cost;
  for (int i = 0; i < 3000; ++i) {
    ASSERT_OK(s.WriteBytes(s.size_bytes(), row.size(), row.data(), Dataset::Growth::kGrowRows));
    if (i % 500 == 499) {
      ASSERT_OK(c->Commit());
      ASSERT_OK(s.WriteBytes(s.size_bytes(), row.size(), row.data(), Dataset::Growth::kGrowRows));
      const int64_t before = disk->writes;
      ASSERT_OK(c->Commit());
      cost.push_back(static_cast<uint64_t>(disk->writes - before));
    }
  }
  ASSERT_EQ(s.info().shape[0], 3006u);
  // One chunk, one index leaf and the nodes above it, the dataset header,
  // the group above it, the free list, the superblock and two syncs: the
  // same handful of writes whatever the length.
  for (uint64_t w : cost) EXPECT_LE(w, 12u) << "a commit of one appended row made " << w << " writes";
}

}  // namespace resize_test
}  // namespace
}  // namespace slabfs
