// Hyperslab reads and writes against a brute-force dense reference, over
// randomised shapes, chunk shapes with partial edges, strides, blocks,
// memory-side selections, dtypes and cache budgets.
#include "engine/selection/hyperslab.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>

#include "tests/testutil/mem_container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::engine {
namespace {

using testutil::NewDisk;
using testutil::OpenOnDisk;

struct Rng {
  std::mt19937_64 g;
  explicit Rng(uint64_t seed) : g(seed) {}
  uint64_t Uniform(uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(g); }
  bool OneIn(int n) { return Uniform(0, n - 1) == 0; }
};

// A random hyperslab inside `shape`.
Slab RandomSlab(Rng& rng, const Dims& shape) {
  Slab s;
  for (uint64_t n : shape) {
    DimSlab d;
    d.start = rng.Uniform(0, n - 1);
    uint64_t room = n - d.start;
    d.block = rng.Uniform(1, std::min<uint64_t>(room, rng.OneIn(2) ? 3 : room));
    d.stride = d.block + (rng.OneIn(2) ? 0 : rng.Uniform(0, 3));
    uint64_t max_count = (room - d.block) / d.stride + 1;
    d.count = rng.Uniform(1, std::min<uint64_t>(max_count, 6));
    s.dims.push_back(d);
  }
  return s;
}

// Index lists of a selection along each dimension.
std::vector<std::vector<uint64_t>> Indices(const Slab& s) {
  std::vector<std::vector<uint64_t>> out;
  for (const auto& d : s.dims) {
    std::vector<uint64_t> v;
    for (uint64_t i = 0; i < d.count; ++i)
      for (uint64_t j = 0; j < d.block; ++j) v.push_back(d.start + i * d.stride + j);
    out.push_back(v);
  }
  return out;
}

// Calls f(file_linear, mem_linear) for each selected element pair.
template <typename F>
void ForEachPair(const Dims& shape, const Slab& fsel, const Dims& mshape, const Slab& msel, F f) {
  auto fi = Indices(fsel), mi = Indices(msel);
  size_t r = shape.size();
  std::vector<size_t> k(r, 0);
  if (fsel.num_elements() == 0) return;
  while (true) {
    uint64_t fl = 0, ml = 0;
    for (size_t d = 0; d < r; ++d) {
      fl = fl * shape[d] + fi[d][k[d]];
      ml = ml * mshape[d] + mi[d][k[d]];
    }
    f(fl, ml);
    size_t d = r;
    while (d > 0) {
      --d;
      if (++k[d] < fi[d].size()) break;
      k[d] = 0;
      if (d == 0) return;
    }
  }
}

TEST(HyperslabTest, MatchesDenseReferenceOnRandomSelections) {
  Rng rng(20261121);
  const DType kTypes[] = {DType::kU1, DType::kI2, DType::kF4, DType::kF8, DType::kI8};
  int cases = 0;
  for (int trial = 0; trial < 60; ++trial) {
    auto disk = NewDisk();
    // A small cache makes evictions and write-backs happen during the run.
    OpenOptions o;
    o.cache_bytes = rng.OneIn(2) ? 4096 : (1 << 20);
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk, o));
    int rank = static_cast<int>(rng.Uniform(1, 4));
    DatasetOptions opt;
    opt.dtype = kTypes[rng.Uniform(0, 4)];
    for (int d = 0; d < rank; ++d) {
      uint64_t n = rng.Uniform(1, rank == 1 ? 200 : (rank == 2 ? 40 : 12));
      opt.shape.push_back(n);
      opt.chunks.push_back(rng.Uniform(1, n + 2));  // larger than n: one partial chunk
    }
    size_t isz = ItemSize(opt.dtype);
    std::string fill(isz, '\0');
    for (auto& ch : fill) ch = static_cast<char>(rng.Uniform(0, 255));
    opt.fill = fill;
    ASSERT_OK_AND_ASSIGN(Dataset ds, c->CreateDataset("/d", opt));
    uint64_t n = 1;
    for (auto v : opt.shape) n *= v;
    std::string ref(n * isz, '\0');
    for (uint64_t i = 0; i < n; ++i) std::memcpy(ref.data() + i * isz, fill.data(), isz);

    for (int op = 0; op < 40; ++op, ++cases) {
      Slab fsel = RandomSlab(rng, opt.shape);
      Dims ext = fsel.extents();
      // Memory side: either dense, or a selection inside a larger array.
      bool use_mem = rng.OneIn(2);
      MemSpace mem;
      if (use_mem) {
        for (int d = 0; d < rank; ++d) {
          DimSlab m;
          m.block = ext[d];
          m.count = 1;
          // Split the extent into blocks of a divisor size, spread out.
          for (uint64_t b = std::min<uint64_t>(ext[d], 3); b >= 1; --b)
            if (ext[d] % b == 0 && rng.OneIn(2)) {
              m.block = b;
              m.count = ext[d] / b;
              break;
            }
          m.stride = m.block + rng.Uniform(0, 2);
          m.start = rng.Uniform(0, 2);
          mem.shape.push_back(m.start + (m.count - 1) * m.stride + m.block + rng.Uniform(0, 2));
          mem.selection.dims.push_back(m);
        }
      } else {
        mem.shape = ext;
        mem.selection = Slab::All(ext);
      }
      uint64_t mn = 1;
      for (auto v : mem.shape) mn *= v;
      if (rng.OneIn(2)) {
        std::string buf(mn * isz, '\0');
        for (auto& ch : buf) ch = static_cast<char>(rng.Uniform(0, 255));
        ASSERT_OK(ds.Write(fsel, buf.data(), use_mem ? &mem : nullptr));
        ForEachPair(opt.shape, fsel, mem.shape, mem.selection,
                    [&](uint64_t f, uint64_t m) { std::memcpy(ref.data() + f * isz, buf.data() + m * isz, isz); });
      } else {
        std::string sentinel(mn * isz, '\x5a');
        std::string buf = sentinel;
        ASSERT_OK(ds.Read(fsel, buf.data(), use_mem ? &mem : nullptr));
        std::string expect = sentinel;
        ForEachPair(opt.shape, fsel, mem.shape, mem.selection,
                    [&](uint64_t f, uint64_t m) { std::memcpy(expect.data() + m * isz, ref.data() + f * isz, isz); });
        ASSERT_EQ(buf, expect) << "trial " << trial << " op " << op;
      }
      if (rng.OneIn(10)) ASSERT_OK(c->Commit());
    }
    // Everything survives a reopen.
    ASSERT_OK(c->Close());
    c.reset();
    ASSERT_OK_AND_ASSIGN(auto c2, OpenOnDisk(disk, {.read_only = true}));
    ASSERT_OK_AND_ASSIGN(Dataset d2, c2->OpenDataset("/d"));
    std::string all(n * isz, '\0');
    ASSERT_OK(d2.ReadElements(0, n, all.data()));
    ASSERT_EQ(all, ref) << "after reopen, trial " << trial;
  }
  EXPECT_GE(cases, 2000);
}

// span() is the first selected element of each touched chunk and one past
// the last, as the runs ForEachRun produces place them (write-behind
// decides from it whether writes come in order).
TEST(HyperslabTest, SpanBoundsTheRunsOfEachChunk) {
  Rng rng(20261128);
  int chunks = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int rank = static_cast<int>(rng.Uniform(1, 4));
    Dims shape, chunk;
    for (int d = 0; d < rank; ++d) {
      shape.push_back(rng.Uniform(1, 30));
      chunk.push_back(rng.Uniform(1, shape.back() + 2));
    }
    const Slab sel = RandomSlab(rng, shape);
    // Half the time the chunks are laid out to a larger max shape (some
    // dimensions unlimited: edge chunks keep their whole extent), and the
    // memory side is a larger array with the selection at an offset.
    Dims max_shape = shape;
    MemSpace mem;
    const bool wide = rng.OneIn(2);
    if (wide) {
      const Dims ext = sel.extents();
      for (int d = 0; d < rank; ++d) {
        max_shape[d] = rng.OneIn(2) ? kUnlimited : shape[d] + rng.Uniform(0, 9);
        DimSlab m;
        m.start = rng.Uniform(0, 2);
        m.block = ext[d];
        m.stride = ext[d];
        m.count = 1;
        mem.shape.push_back(m.start + ext[d] + rng.Uniform(0, 2));
        mem.selection.dims.push_back(m);
      }
    }
    TransferPlan plan;
    ASSERT_OK(plan.Build(shape, chunk, sel, wide ? &mem : nullptr, wide ? &max_shape : nullptr));
    for (ChunkCursor cur(plan); !cur.done(); cur.Next(), ++chunks) {
      uint64_t lo = UINT64_MAX, hi = 0, n = 0;
      cur.ForEachRun([&](uint64_t co, uint64_t, uint64_t len) {
        lo = std::min(lo, co);
        hi = std::max(hi, co + len);
        n += len;
      });
      ASSERT_EQ(n, cur.selected());
      ASSERT_EQ(cur.span(), std::make_pair(lo, hi)) << "trial " << trial;
      ASSERT_LE(hi - lo, cur.chunk_elements());
    }
  }
  EXPECT_GE(chunks, 300);
}

TEST(HyperslabTest, DecomposeLinearCoversRangeExactly) {
  Rng rng(7);
  for (int trial = 0; trial < 3000; ++trial) {
    int rank = static_cast<int>(rng.Uniform(1, 5));
    Dims shape;
    uint64_t n = 1;
    for (int d = 0; d < rank; ++d) {
      shape.push_back(rng.Uniform(1, 7));
      n *= shape.back();
    }
    uint64_t first = rng.Uniform(0, n - 1);
    uint64_t count = rng.Uniform(0, n - first);
    auto boxes = DecomposeLinear(shape, first, count);
    ASSERT_LE(boxes.size(), static_cast<size_t>(2 * rank - 1));
    uint64_t expect_off = 0;
    for (const auto& b : boxes) {
      ASSERT_EQ(b.offset, expect_off);
      // The box's elements are consecutive in C order from first + offset.
      uint64_t pos = first + b.offset;
      ForEachPair(shape, b.box, b.box.extents(), Slab::All(b.box.extents()), [&](uint64_t f, uint64_t) {
        ASSERT_EQ(f, pos);
        ++pos;
      });
      expect_off += b.box.num_elements();
    }
    ASSERT_EQ(expect_off, count);
  }
}

TEST(HyperslabTest, RejectsBadSelections) {
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(Dataset ds, c->CreateDataset("/d", {.dtype = DType::kU2, .shape = {10, 10}, .chunks = {4, 4}}));
  std::vector<uint16_t> buf(1000);
  EXPECT_CODE(ds.Read(Slab::Box({0}, {5}), buf.data()), Code::kInvalidArgument);        // wrong rank
  EXPECT_CODE(ds.Read(Slab::Box({8, 0}, {3, 1}), buf.data()), Code::kInvalidArgument);  // past the end
  Slab overlap = Slab::Box({0, 0}, {2, 2});
  overlap.dims[0] = {0, 1, 2, 2};  // stride < block
  EXPECT_CODE(ds.Read(overlap, buf.data()), Code::kInvalidArgument);
  Slab huge = Slab::Box({0, 0}, {1, 1});
  huge.dims[1] = {UINT64_MAX - 1, UINT64_MAX / 2, 3, 1};  // overflowing arithmetic
  EXPECT_CODE(ds.Write(huge, buf.data()), Code::kInvalidArgument);
  MemSpace mem{{3, 3}, Slab::Box({0, 0}, {3, 3})};
  EXPECT_CODE(ds.Read(Slab::Box({0, 0}, {2, 2}), buf.data(), &mem), Code::kInvalidArgument);  // extents differ
  EXPECT_CODE(ds.ReadElements(95, 10, buf.data()), Code::kInvalidArgument);
  EXPECT_CODE(ds.WriteBytes(199, 2, buf.data()), Code::kOutOfRange);
  // Nothing was written by the refused calls.
  EXPECT_EQ(ds.info().allocated_chunks, 0u);
}

}  // namespace
}  // namespace slabfs::engine
