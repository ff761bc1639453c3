// Holes cost nothing: the walks over defined elements (ForEachDefinedRun,
// DefinedRuns, CountDefined, Defined) and Erase visit the stored chunks of
// their range, never the empty chunk grid. Datasets of 2^62 elements (and
// grids of up to 2^42 chunks) hold a few chunks far apart, under every index
// kind that can hold such a grid; each test checks the answers against a
// reference set of defined elements and bounds the chunks a walk visits
// (the calls of its check, or the chunk cache's lookups), not the time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/selection/hyperslab.h"
#include "tests/testutil/mem_container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {

using testutil::NewDisk;
using testutil::OpenOnDisk;

constexpr uint64_t kHuge = uint64_t{1} << 62;
constexpr uint64_t kMi = uint64_t{1} << 20;

uint64_t Lookups(const Container& c) {
  const CacheStats s = c.cache_stats();
  return s.hits + s.misses;
}

// A walk's runs, merged, and how many chunks it visited (its check's calls).
struct Walked {
  std::vector<ElementRun> runs;
  uint64_t visits = 0;
};

Walked WalkAll(const Dataset& ds, uint64_t first, uint64_t count) {
  Walked w;
  Status s = ds.ForEachDefinedRun(
      first, count,
      [&](const ElementRun& r) {
        EXPECT_GT(r.count, 0u);
        EXPECT_GE(r.first, first);
        EXPECT_LE(r.first + r.count, first + count);
        if (!w.runs.empty()) {
          EXPECT_GE(r.first, w.runs.back().first + w.runs.back().count);
        }
        if (!w.runs.empty() && w.runs.back().first + w.runs.back().count == r.first)
          w.runs.back().count += r.count;
        else
          w.runs.push_back(r);
        return true;
      },
      [&] {
        ++w.visits;
        return Status::OK();
      });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return w;
}

// SEEK_DATA on elements: the first defined element at or after e, and the
// chunks visited to find it.
std::optional<uint64_t> NextDefined(const Dataset& ds, uint64_t e, uint64_t* visits) {
  std::optional<uint64_t> at;
  *visits = 0;
  Status s = ds.ForEachDefinedRun(
      e, ds.num_elements() - e,
      [&](const ElementRun& r) {
        at = r.first;
        return false;
      },
      [&] {
        ++*visits;
        return Status::OK();
      });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return at;
}

// SEEK_HOLE on elements: the first undefined element at or after e (the
// number of elements if none).
uint64_t NextUndefined(const Dataset& ds, uint64_t e, uint64_t* visits) {
  uint64_t hole = e;
  *visits = 0;
  Status s = ds.ForEachDefinedRun(
      e, ds.num_elements() - e,
      [&](const ElementRun& r) {
        if (r.first > hole) return false;
        hole = r.first + r.count;
        return true;
      },
      [&] {
        ++*visits;
        return Status::OK();
      });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return hole;
}

// The reference: the defined elements by C-order position.
struct Reference {
  std::set<uint64_t> defined;

  std::vector<ElementRun> Runs(uint64_t first, uint64_t count) const {
    std::vector<ElementRun> out;
    for (auto it = defined.lower_bound(first); it != defined.end() && *it < first + count; ++it) {
      if (!out.empty() && out.back().first + out.back().count == *it)
        ++out.back().count;
      else
        out.push_back({*it, 1});
    }
    return out;
  }
  std::optional<uint64_t> NextDefined(uint64_t e) const {
    auto it = defined.lower_bound(e);
    if (it == defined.end()) return std::nullopt;
    return *it;
  }
  uint64_t NextUndefined(uint64_t e) const {
    while (defined.count(e)) ++e;
    return e;
  }
};

Dims Unlinear(const Dims& shape, uint64_t e) {
  Dims idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = e % shape[d];
    e /= shape[d];
  }
  return idx;
}

class DatasetDefinedTest : public testing::Test {
 protected:
  void SetUp() override { Reopen(); }

  void Reopen() {
    if (c_) ASSERT_OK(c_->Close());
    c_.reset();
    if (!disk_) disk_ = NewDisk();
    ASSERT_OK_AND_ASSIGN(c_, OpenOnDisk(disk_));
  }

  // Writes one element (value v) at C-order position e and notes it.
  void Define(Dataset& ds, Reference* ref, uint64_t e, uint8_t v = 7) {
    const Dims idx = Unlinear(ds.info().shape, e);
    ASSERT_OK(ds.Write(Slab::Box(idx, Dims(idx.size(), 1)), &v));
    ref->defined.insert(e);
  }

  std::shared_ptr<testutil::Disk> disk_;
  std::unique_ptr<Container> c_;
};

// Stored chunks of a sparse dataset whose defined elements are `e`, for a
// 1-D chunk length.
uint64_t ChunksOf(const std::set<uint64_t>& e, uint64_t chunk) {
  std::set<uint64_t> c;
  for (uint64_t x : e) c.insert(x / chunk);
  return c.size();
}

TEST_F(DatasetDefinedTest, A2To62ElementSparseDatasetWalksOnlyItsStoredChunks) {
  DatasetOptions o{.dtype = DType::kU1, .shape = {kHuge}, .chunks = {kMi}};
  o.sparse = true;
  ASSERT_OK_AND_ASSIGN(Dataset ds, c_->CreateDataset("/huge", o));
  EXPECT_EQ(ds.info().index, IndexKind::kBTree);
  Reference ref;
  // Far apart, at both ends, and a run across a chunk edge.
  for (uint64_t e : {uint64_t{3}, (uint64_t{1} << 40) + 5, (uint64_t{1} << 61) + kMi - 1, kHuge - 2})
    Define(ds, &ref, e);
  for (uint64_t e = (uint64_t{1} << 50) - 2; e < (uint64_t{1} << 50) + 2; ++e) Define(ds, &ref, e);
  const uint64_t stored = ChunksOf(ref.defined, kMi);
  ASSERT_EQ(stored, 6u);

  for (int pass = 0; pass < 2; ++pass) {  // from the cache, then from disk
    Walked w = WalkAll(ds, 0, kHuge);
    EXPECT_EQ(w.runs, ref.Runs(0, kHuge));
    EXPECT_LE(w.visits, stored);
    ASSERT_OK_AND_ASSIGN(std::vector<ElementRun> runs, ds.DefinedRuns(0, kHuge));
    EXPECT_EQ(runs, ref.Runs(0, kHuge));
    ASSERT_OK_AND_ASSIGN(uint64_t n, ds.CountDefined());
    EXPECT_EQ(n, ref.defined.size());
    ASSERT_OK_AND_ASSIGN(std::vector<Box> boxes, ds.Defined(Slab::All({kHuge})));
    EXPECT_EQ(boxes.size(), runs.size());

    // Seeks: each visits at most the chunks between the start and the answer.
    uint64_t visits = 0;
    EXPECT_EQ(NextDefined(ds, 0, &visits), 3u);
    EXPECT_LE(visits, 1u);
    EXPECT_EQ(NextDefined(ds, 4, &visits), (uint64_t{1} << 40) + 5);
    EXPECT_LE(visits, 2u);
    EXPECT_EQ(NextDefined(ds, (uint64_t{1} << 40) + 6, &visits), (uint64_t{1} << 50) - 2);
    EXPECT_LE(visits, 2u);
    EXPECT_EQ(NextDefined(ds, kHuge - 1, &visits), std::nullopt);
    EXPECT_LE(visits, 1u);
    // The run spans two chunks; the hole after it shows once the walk
    // reaches the next stored chunk, 2^61 elements on.
    EXPECT_EQ(NextUndefined(ds, (uint64_t{1} << 50) - 2, &visits), (uint64_t{1} << 50) + 2);
    EXPECT_LE(visits, 3u);
    EXPECT_EQ(NextUndefined(ds, 4, &visits), 4u);
    EXPECT_EQ(NextUndefined(ds, kHuge - 2, &visits), kHuge - 1);
    // A range in the middle of nothing.
    w = WalkAll(ds, 1000, (uint64_t{1} << 40) - 1000);
    EXPECT_TRUE(w.runs.empty());
    EXPECT_EQ(w.visits, 1u);  // chunk 0, which holds element 3
    ASSERT_OK(c_->Commit());
    Reopen();
    ASSERT_OK_AND_ASSIGN(ds, c_->OpenDataset("/huge"));
  }

  // Erase across all of it but the last element: the stored chunks only.
  const uint64_t before = Lookups(*c_);
  ASSERT_OK(ds.Erase(Slab::Box({1}, {kHuge - 3})));
  EXPECT_LE(Lookups(*c_) - before, 2 * stored);
  ref.defined = {kHuge - 2};
  EXPECT_EQ(ds.DefinedRuns(0, kHuge).value(), ref.Runs(0, kHuge));
  EXPECT_EQ(ds.info().allocated_chunks, 1u);
  ASSERT_OK(ds.Erase(Slab::All({kHuge})));
  EXPECT_EQ(ds.CountDefined().value(), 0u);
  EXPECT_EQ(ds.info().allocated_chunks, 0u);
  ASSERT_OK(c_->Commit());
}

TEST_F(DatasetDefinedTest, A2To62ByteDenseDatasetCountsAndErasesItsStoredChunks) {
  DatasetOptions o{.dtype = DType::kU1, .shape = {kHuge}, .chunks = {kMi}};
  ASSERT_OK_AND_ASSIGN(Dataset ds, c_->CreateDataset("/dense", o));
  const std::vector<uint64_t> at = {0, uint64_t{1} << 45, kHuge - 1};
  for (uint64_t e : at) {
    const uint8_t v = 1;
    ASSERT_OK(ds.Write(Slab::Box({e}, {1}), &v));
  }
  // Dense: the defined elements are those of the stored chunks.
  std::vector<ElementRun> expect;
  for (uint64_t e : at) expect.push_back({e / kMi * kMi, kMi});
  Walked w = WalkAll(ds, 0, kHuge);
  EXPECT_EQ(w.runs, expect);
  EXPECT_LE(w.visits, 3u);
  uint64_t calls = 0;
  ASSERT_OK_AND_ASSIGN(uint64_t n, ds.CountDefined([&] {
    ++calls;
    return Status::OK();
  }));
  EXPECT_EQ(n, 3 * kMi);
  EXPECT_LE(calls, 3u);
  uint64_t visits = 0;
  EXPECT_EQ(NextDefined(ds, kMi, &visits), uint64_t{1} << 45);
  EXPECT_LE(visits, 1u);
  EXPECT_EQ(NextUndefined(ds, 0, &visits), kMi);

  // Punching out whole chunks and part of one, over 2^62 elements.
  const uint64_t before = Lookups(*c_);
  ASSERT_OK(ds.Erase(Slab::Box({10}, {kHuge - 10})));
  EXPECT_LE(Lookups(*c_) - before, 6u);
  EXPECT_EQ(ds.info().allocated_chunks, 1u);  // chunk 0 keeps elements 0..9
  EXPECT_EQ(ds.CountDefined().value(), kMi);  // stored, and so defined, whole
  uint8_t back[2] = {9, 9};
  ASSERT_OK(ds.Read(Slab::Box({0}, {2}), back));
  EXPECT_EQ(back[0], 1);
  EXPECT_EQ(back[1], 0);
  ASSERT_OK(ds.Read(Slab::Box({kHuge - 2}, {2}), back));
  EXPECT_EQ(back[1], 0);
}

TEST_F(DatasetDefinedTest, AWalkStopsWhenItsCheckSaysSo) {
  DatasetOptions o{.dtype = DType::kU1, .shape = {kHuge}, .chunks = {kMi}};
  o.sparse = true;
  ASSERT_OK_AND_ASSIGN(Dataset ds, c_->CreateDataset("/huge", o));
  Reference ref;
  for (uint64_t k = 0; k < 10; ++k) Define(ds, &ref, k << 55);
  uint64_t calls = 0, runs = 0;
  Status s = ds.ForEachDefinedRun(
      0, kHuge,
      [&](const ElementRun&) {
        ++runs;
        return true;
      },
      [&]() -> Status {
        if (++calls > 3) return Status::Busy("interrupted");
        return Status::OK();
      });
  EXPECT_EQ(s.code(), Code::kBusy);
  EXPECT_EQ(calls, 4u);
  EXPECT_LE(runs, 3u);
  // The dense count stops the same way.
  DatasetOptions d{.dtype = DType::kU1, .shape = {kHuge}, .chunks = {kMi}};
  ASSERT_OK_AND_ASSIGN(Dataset dense, c_->CreateDataset("/dense", d));
  for (uint64_t k = 0; k < 10; ++k) {
    const uint8_t v = 1;
    ASSERT_OK(dense.Write(Slab::Box({k << 55}, {1}), &v));
  }
  calls = 0;
  auto n = dense.CountDefined([&]() -> Status {
    if (++calls > 5) return Status::Busy("interrupted");
    return Status::OK();
  });
  ASSERT_FALSE(n.has_value());
  EXPECT_EQ(n.error().code(), Code::kBusy);
  EXPECT_EQ(calls, 6u);
}

// ------------------------------------------------ every index kind

struct Case {
  const char* name;
  IndexKind kind;
  Dims shape, max_shape, chunks, grow_to;  // grow_to: Resize after creation
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class HugeGridTest : public DatasetDefinedTest, public testing::WithParamInterface<Case> {};

// The chunks that hold an element of the reference (those stored).
std::set<Dims> StoredChunks(const Reference& ref, const Dims& shape, const Dims& chunks) {
  std::set<Dims> c;
  for (uint64_t e : ref.defined) {
    Dims idx = Unlinear(shape, e);
    for (size_t d = 0; d < idx.size(); ++d) idx[d] /= chunks[d];
    c.insert(idx);
  }
  return c;
}

// The most chunks a walk over [first, first + count) may visit: the range
// splits into at most 2 x rank - 1 boxes, and the walk visits the stored
// chunks that meet each box, whatever the size of the box's grid.
uint64_t VisitBound(const std::set<Dims>& stored, const Dims& shape, const Dims& chunks, uint64_t first,
                    uint64_t count) {
  uint64_t n = 0;
  for (const engine::LinearBox& lb : engine::DecomposeLinear(shape, first, count)) {
    for (const Dims& c : stored) {
      bool meets = true;
      for (size_t d = 0; d < c.size() && meets; ++d) {
        const DimSlab& s = lb.box.dims[d];
        meets = c[d] * chunks[d] < s.start + s.extent() && s.start < (c[d] + 1) * chunks[d];
      }
      n += meets ? 1 : 0;
    }
  }
  return n;
}

TEST_P(HugeGridTest, WalksSeeksAndErasesMatchTheReferenceVisitingOnlyStoredChunks) {
  const Case& k = GetParam();
  DatasetOptions o{.dtype = DType::kU1, .shape = k.shape, .max_shape = k.max_shape, .chunks = k.chunks};
  o.sparse = true;
  ASSERT_OK_AND_ASSIGN(Dataset ds, c_->CreateDataset("/d", o));
  if (!k.grow_to.empty()) ASSERT_OK(ds.Resize(k.grow_to));
  EXPECT_EQ(ds.info().index, k.kind);
  const Dims shape = ds.info().shape;
  const uint64_t n = ds.num_elements();
  std::mt19937_64 rng(42);
  Reference ref;
  // Clusters far apart: a few elements around random places, some across
  // chunk edges.
  for (int cluster = 0; cluster < 12; ++cluster) {
    const uint64_t at = rng() % n;
    for (int i = 0; i < 6; ++i) {
      const uint64_t e = at + rng() % 3000;
      if (e < n) Define(ds, &ref, e);
    }
  }
  Define(ds, &ref, 0);
  Define(ds, &ref, n - 1);

  for (int pass = 0; pass < 2; ++pass) {
    // The whole range and random parts of it.
    std::vector<std::pair<uint64_t, uint64_t>> ranges = {{0, n}};
    for (int i = 0; i < 20; ++i) {
      const uint64_t a = rng() % n, b = rng() % n;
      ranges.push_back({std::min(a, b), std::max(a, b) - std::min(a, b) + 1});
    }
    for (uint64_t e : ref.defined) ranges.push_back({e, n - e});
    const std::set<Dims> stored = StoredChunks(ref, shape, k.chunks);
    for (auto [first, count] : ranges) {
      Walked w = WalkAll(ds, first, count);
      ASSERT_EQ(w.runs, ref.Runs(first, count)) << first << "+" << count;
      EXPECT_LE(w.visits, VisitBound(stored, shape, k.chunks, first, count)) << first << "+" << count;
    }
    EXPECT_LE(WalkAll(ds, 0, n).visits, stored.size());
    EXPECT_EQ(ds.info().allocated_chunks, stored.size());  // written back by the walks
    EXPECT_EQ(ds.DefinedRuns(0, n).value(), ref.Runs(0, n));
    EXPECT_EQ(ds.CountDefined().value(), ref.defined.size());
    for (int i = 0; i < 40; ++i) {
      const uint64_t e = i < 20 ? rng() % n : *std::next(ref.defined.begin(), rng() % ref.defined.size());
      uint64_t visits = 0;
      ASSERT_EQ(NextDefined(ds, e, &visits), ref.NextDefined(e)) << "from " << e;
      ASSERT_EQ(NextUndefined(ds, e, &visits), ref.NextUndefined(e)) << "from " << e;
    }
    ASSERT_OK(c_->Commit());
    Reopen();
    ASSERT_OK_AND_ASSIGN(ds, c_->OpenDataset("/d"));
  }

  // Erase boxes that span most of the grid, strided ones too, and see the
  // rest survive.
  const size_t rank = shape.size();
  for (int round = 0; round < 6; ++round) {
    Slab sel;
    sel.dims.resize(rank);
    for (size_t d = 0; d < rank; ++d) {
      const uint64_t start = rng() % (shape[d] / 4 + 1);
      const uint64_t len = shape[d] - start - rng() % (shape[d] / 4 + 1);
      if (round % 2 == 1 && len > 10) {
        const uint64_t stride = 2 + rng() % 9, block = 1 + rng() % (stride - 1);
        sel.dims[d] = DimSlab{start, stride, (len - block) / stride + 1, block};
      } else {
        sel.dims[d] = DimSlab{start, 1, 1, std::max<uint64_t>(len, 1)};
      }
    }
    // Each stored or cached chunk of the selection is planned in at most
    // 3^rank pieces, one cache lookup each.
    const uint64_t before = Lookups(*c_);
    ASSERT_OK(ds.Erase(sel));
    EXPECT_LE(Lookups(*c_) - before, 27 * StoredChunks(ref, shape, k.chunks).size()) << "round " << round;
    for (auto it = ref.defined.begin(); it != ref.defined.end();) {
      const Dims idx = Unlinear(shape, *it);
      bool in = true;
      for (size_t d = 0; d < rank && in; ++d) {
        const DimSlab& s = sel.dims[d];
        in = idx[d] >= s.start && idx[d] - s.start < (s.count - 1) * s.stride + s.block &&
             (idx[d] - s.start) % s.stride < s.block;
      }
      it = in ? ref.defined.erase(it) : std::next(it);
    }
    ASSERT_EQ(ds.DefinedRuns(0, n).value(), ref.Runs(0, n)) << "round " << round;
    // Elements that stay keep their value.
    for (uint64_t e : ref.defined) {
      uint8_t v = 0;
      const Dims idx = Unlinear(shape, e);
      ASSERT_OK(ds.Read(Slab::Box(idx, Dims(rank, 1)), &v));
      ASSERT_EQ(v, 7);
    }
    if (round == 2) {
      ASSERT_OK(c_->Commit());
      Reopen();
      ASSERT_OK_AND_ASSIGN(ds, c_->OpenDataset("/d"));
    }
    // Some new elements for the next round, written but not written back:
    // the erase must find them in the cache.
    for (int i = 0; i < 8; ++i) Define(ds, &ref, rng() % n);
  }
}

const uint64_t kU = kUnlimited;

INSTANTIATE_TEST_SUITE_P(
    Kinds, HugeGridTest,
    testing::Values(
        // 2^28 chunks of 1 KiB: the largest fixed array.
        Case{"fixed_1d", IndexKind::kFixedArray, {uint64_t{1} << 38}, {}, {1024}, {}},
        Case{"fixed_2d", IndexKind::kFixedArray, {uint64_t{1} << 24, uint64_t{1} << 24}, {}, {1024, 1024}, {}},
        // 2^40 chunks along the one unlimited dimension, first or second.
        Case{"extensible_u0", IndexKind::kExtensibleArray, {0}, {kU}, {1024}, {uint64_t{1} << 50}},
        Case{"extensible_u1", IndexKind::kExtensibleArray, {4, 0}, {4, kU}, {1, 1024}, {4, uint64_t{1} << 48}},
        Case{"extensible_u1_3d",
             IndexKind::kExtensibleArray,
             {6, 0, 5},
             {6, kU, 5},
             {2, 256, 2},
             {6, uint64_t{1} << 40, 5}},
        // 2^42 chunks in two and three dimensions.
        Case{"btree_2d", IndexKind::kBTree, {uint64_t{1} << 31, uint64_t{1} << 31}, {}, {1024, 1024}, {}},
        Case{"btree_unlimited",
             IndexKind::kBTree,
             {0, 0},
             {kU, kU},
             {1024, 1024},
             {uint64_t{1} << 30, uint64_t{1} << 30}},
        Case{"btree_3d",
             IndexKind::kBTree,
             {uint64_t{1} << 20, uint64_t{1} << 21, uint64_t{1} << 21},
             {},
             {16, 64, 64},
             {}}),
    [](const testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace slabfs
