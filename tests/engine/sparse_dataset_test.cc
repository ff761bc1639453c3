// Sparse datasets: the sparse chunk codec, and datasets checked against a
// reference (dense values plus a defined mask) under random writes, erases,
// reads, defined() queries, resizes, commits and reopens.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "engine/chunk/sparse_chunk.h"
#include "tests/testutil/mem_container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {
namespace sparse_dataset_test {  // its own names in a unity batch

using engine::CountBits;
using engine::DecodeSparse;
using engine::EncodeSparse;
using engine::SparseBits;
using engine::SparseMemBytes;
using testutil::NewDisk;
using testutil::OpenOnDisk;

// ------------------------------------------------------------------ codec

std::string MemChunk(const std::vector<bool>& defined, size_t isz, char fill) {
  const uint64_t n = defined.size();
  std::string mem(SparseMemBytes(n, isz), '\0');
  uint64_t* bits = SparseBits(mem.data(), n, isz);
  for (uint64_t i = 0; i < n; ++i) {
    if (defined[i]) {
      bits[i / 64] |= 1ull << (i % 64);
      for (size_t b = 0; b < isz; ++b) mem[i * isz + b] = static_cast<char>(i * 7 + b + 1);
    } else {
      std::memset(&mem[i * isz], fill, isz);
    }
  }
  return mem;
}

TEST(SparseCodecTest, RoundTripsRunsAndBitmaps) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    const uint64_t n = std::uniform_int_distribution<uint64_t>(1, 3000)(rng);
    const size_t isz = size_t{1} << std::uniform_int_distribution<int>(0, 3)(rng);
    // Few long runs (runs layout) or scattered bits (bitmap layout).
    const double p = trial % 2 ? 0.5 : 0.002;
    std::vector<bool> defined(n);
    bool any = false;
    bool on = false;
    for (uint64_t i = 0; i < n; ++i) {
      if (trial % 2)
        on = std::bernoulli_distribution(p)(rng);
      else if (std::bernoulli_distribution(p * 5)(rng))
        on = !on;
      defined[i] = on;
      any |= on;
    }
    if (!any) defined[n / 2] = true;
    const std::string fill(isz, '\x5A');
    const std::string mem = MemChunk(defined, isz, '\x5A');
    std::string enc;
    EncodeSparse(mem.data(), n, isz, &enc);
    EXPECT_LE(enc.size(), engine::MaxEncodedSparseBytes(n, isz));
    const uint64_t count = CountBits(SparseBits(mem.data(), n, isz), n);
    std::string back(mem.size(), '\x11');
    ASSERT_OK(DecodeSparse(enc, n, isz, fill, count, back.data()));
    // The values and the defined set (not the padding between them).
    ASSERT_EQ(back.substr(0, n * isz), mem.substr(0, n * isz)) << "trial " << trial;
    ASSERT_EQ(0, std::memcmp(SparseBits(back.data(), n, isz), SparseBits(mem.data(), n, isz),
                             engine::SparseBitmapWords(n) * 8))
        << "trial " << trial;
  }
}

TEST(SparseCodecTest, DamagedEncodingsAreCorruption) {
  const uint64_t n = 100;
  std::vector<bool> defined(n);
  for (uint64_t i = 10; i < 20; ++i) defined[i] = true;
  for (uint64_t i = 50; i < 53; ++i) defined[i] = true;
  const std::string mem = MemChunk(defined, 2, 0);
  std::string enc;
  EncodeSparse(mem.data(), n, 2, &enc);
  ASSERT_EQ(enc[0], 1);  // runs
  std::string out(mem.size(), '\0');
  const std::string fill(2, '\0');
  ASSERT_OK(DecodeSparse(enc, n, 2, fill, 13, out.data()));
  auto bad = [&](std::string e, uint64_t count, uint64_t nn = 100) {
    std::string o(SparseMemBytes(nn, 2), '\0');
    return DecodeSparse(e, nn, 2, fill, count, o.data()).code();
  };
  EXPECT_EQ(bad(enc, 12), Code::kCorruption);               // count disagrees with the runs
  EXPECT_EQ(bad(enc, 0), Code::kCorruption);                // nothing defined is never stored
  EXPECT_EQ(bad(enc, 101), Code::kCorruption);              // more than the chunk
  EXPECT_EQ(bad(enc.substr(0, 3), 13), Code::kCorruption);  // truncated
  EXPECT_EQ(bad(enc, 13, 40), Code::kCorruption);           // a run past a smaller chunk
  std::string layout = enc;
  layout[0] = 9;
  EXPECT_EQ(bad(layout, 13), Code::kCorruption);
  // Runs: 2 runs (10 at 10, 3 at 50): make the second touch the first.
  std::string touching = enc;
  touching[4] = 0;  // gap of the second run
  EXPECT_EQ(bad(touching, 13), Code::kCorruption);
  std::string extra = enc;
  extra.insert(6, 1, '\0');  // a byte between structure and values
  EXPECT_EQ(bad(extra, 13), Code::kCorruption);
  // Bitmap layout with a bit past the chunk.
  std::string bitmap(1 + 13, '\0');
  bitmap[0] = 2;
  bitmap[1 + 12] = static_cast<char>(0x10);  // bit 100: past n = 100
  bitmap.append(2, 'v');
  EXPECT_EQ(bad(bitmap, 1), Code::kCorruption);
}

// -------------------------------------------------------------- datasets

struct Case {
  const char* name;
  Dims shape, max_shape, chunks;
  const char* filters;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

uint64_t Count(const Dims& d) {
  uint64_t n = 1;
  for (uint64_t x : d) n *= x;
  return n;
}

uint64_t Offset(const Dims& shape, const Dims& idx) {
  uint64_t off = 0;
  for (size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + idx[d];
  return off;
}

template <typename F>
void ForIndices(const Slab& sel, F f) {
  const size_t rank = sel.dims.size();
  Dims idx(rank, 0);  // position in the selection's extents
  const Dims ext = sel.extents();
  if (Count(ext) == 0) return;
  for (;;) {
    Dims at(rank);
    for (size_t d = 0; d < rank; ++d) {
      const DimSlab& s = sel.dims[d];
      at[d] = s.start + (idx[d] / s.block) * s.stride + idx[d] % s.block;
    }
    f(at);
    size_t d = rank;
    while (d-- > 0) {
      if (++idx[d] < ext[d]) break;
      idx[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

constexpr uint32_t kFill = 0xDEADBEEF;

struct Model {
  Dims shape;
  std::vector<uint32_t> v;
  std::vector<bool> def;
  void Resize(const Dims& to) {
    std::vector<uint32_t> nv(Count(to), kFill);
    std::vector<bool> nd(Count(to), false);
    ForIndices(Slab::All(to), [&](const Dims& i) {
      bool inside = true;
      for (size_t d = 0; d < i.size(); ++d) inside &= i[d] < shape[d];
      if (inside) {
        nv[Offset(to, i)] = v[Offset(shape, i)];
        nd[Offset(to, i)] = def[Offset(shape, i)];
      }
    });
    shape = to;
    v = std::move(nv);
    def = std::move(nd);
  }
};

class SparseModelTest : public ::testing::TestWithParam<Case> {};

TEST_P(SparseModelTest, MatchesTheReference) {
  const Case& tc = GetParam();
  const size_t rank = tc.shape.size();
  auto disk = NewDisk();
  std::unique_ptr<Container> c;
  ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(disk, {.cache_bytes = 16 << 10}));
  std::string fill(4, '\0');
  std::memcpy(fill.data(), &kFill, 4);
  ASSERT_OK_AND_ASSIGN(Dataset ds, c->CreateDataset("/s", {.dtype = DType::kU4,
                                                           .shape = tc.shape,
                                                           .max_shape = tc.max_shape,
                                                           .chunks = tc.chunks,
                                                           .fill = fill,
                                                           .filters = tc.filters,
                                                           .sparse = true}));
  ASSERT_TRUE(ds.info().sparse);
  Model m{tc.shape, std::vector<uint32_t>(Count(tc.shape), kFill), std::vector<bool>(Count(tc.shape), false)};
  std::mt19937_64 rng(std::hash<std::string>()(tc.name));
  auto pick = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  uint32_t next = 1;

  auto random_box = [&](bool strided) {
    Slab s;
    s.dims.resize(rank);
    for (size_t d = 0; d < rank; ++d) {
      DimSlab& x = s.dims[d];
      x.start = pick(0, m.shape[d] - 1);
      if (strided && pick(0, 1)) {
        x.block = pick(1, 2);
        x.stride = x.block + pick(0, 2);
        x.count = std::max<uint64_t>(1, (m.shape[d] - x.start) / x.stride);
        while (x.count > 1 && x.start + (x.count - 1) * x.stride + x.block > m.shape[d]) --x.count;
        if (x.start + x.block > m.shape[d]) x.block = 1;
      } else {
        x.count = pick(1, m.shape[d] - x.start);
      }
    }
    return s;
  };

  auto check = [&](const char* after, int step) {
    SCOPED_TRACE(std::string(after) + " at step " + std::to_string(step));
    ASSERT_EQ(ds.info().shape, m.shape);
    const uint64_t n = Count(m.shape);
    std::vector<uint32_t> got(n);
    ASSERT_OK(ds.ReadElements(0, n, got.data()));
    for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], m.def[i] ? m.v[i] : kFill) << "element " << i;
    // defined() over the whole dataset and a random box: disjoint boxes
    // covering exactly the defined elements.
    for (int q = 0; q < 2 && n > 0; ++q) {
      Slab sel = q == 0 ? Slab::All(m.shape) : random_box(false);
      std::vector<Box> boxes;
      ASSERT_OK_AND_ASSIGN(boxes, ds.Defined(sel));
      std::vector<bool> seen(n, false);
      for (size_t k = 0; k < boxes.size(); ++k) {
        if (k > 0) {
          ASSERT_LT(boxes[k - 1].start, boxes[k].start);
        }
        ForIndices(Slab::Box(boxes[k].start, boxes[k].count), [&](const Dims& i) {
          const uint64_t off = Offset(m.shape, i);
          ASSERT_FALSE(seen[off]) << "boxes overlap";
          seen[off] = true;
        });
      }
      ForIndices(sel, [&](const Dims& i) {
        const uint64_t off = Offset(m.shape, i);
        ASSERT_EQ(seen[off], static_cast<bool>(m.def[off])) << "element " << off;
        seen[off] = false;
      });
      for (uint64_t i = 0; i < n; ++i) ASSERT_FALSE(seen[i]) << "box outside the selection at " << i;
    }
    // Runs of a random element range.
    if (n > 0) {
      const uint64_t first = pick(0, n - 1), count = pick(0, n - first);
      std::vector<ElementRun> runs;
      ASSERT_OK_AND_ASSIGN(runs, ds.DefinedRuns(first, count));
      std::vector<ElementRun> want;
      for (uint64_t i = first; i < first + count; ++i) {
        if (!m.def[i]) continue;
        if (!want.empty() && want.back().first + want.back().count == i)
          ++want.back().count;
        else
          want.push_back({i, 1});
      }
      ASSERT_EQ(runs, want);
    }
    uint64_t defined = 0;
    for (bool b : m.def) defined += b;
    ASSERT_OK_AND_ASSIGN(uint64_t counted, ds.CountDefined());
    ASSERT_EQ(counted, defined);
    ASSERT_EQ(ds.info().defined_elements, defined);
    if (defined == 0) {
      EXPECT_EQ(ds.info().allocated_chunks, 0u);
      EXPECT_EQ(ds.info().stored_bytes, 0u);
    }
    // No chunk is stored where nothing is defined.
    std::vector<StoredChunk> stored;
    ASSERT_OK_AND_ASSIGN(stored, ds.StoredChunks());
    for (const StoredChunk& sc : stored) {
      Dims lo(rank), cnt(rank);
      bool any = false;
      for (size_t d = 0; d < rank; ++d) {
        lo[d] = sc.coords[d] * tc.chunks[d];
        cnt[d] = lo[d] < m.shape[d] ? std::min(tc.chunks[d], m.shape[d] - lo[d]) : 0;
      }
      if (Count(cnt) > 0) ForIndices(Slab::Box(lo, cnt), [&](const Dims& i) { any |= m.def[Offset(m.shape, i)]; });
      EXPECT_TRUE(any) << "chunk " << FormatDims(sc.coords) << " stored with nothing defined";
    }
  };

  for (int step = 0; step < 120; ++step) {
    const uint64_t op = pick(0, 11);
    if (Count(m.shape) == 0 && op < 7) continue;
    if (op < 4) {  // write
      Slab sel = random_box(op == 3);
      std::vector<uint32_t> data(sel.num_elements());
      for (auto& x : data) x = next++;
      ASSERT_OK(ds.Write(sel, data.data()));
      uint64_t k = 0;
      ForIndices(sel, [&](const Dims& i) {
        m.v[Offset(m.shape, i)] = data[k++];
        m.def[Offset(m.shape, i)] = true;
      });
      check("write", step);
    } else if (op < 6) {  // erase
      Slab sel = random_box(op == 5);
      ASSERT_OK(ds.Erase(sel));
      ForIndices(sel, [&](const Dims& i) {
        m.v[Offset(m.shape, i)] = kFill;
        m.def[Offset(m.shape, i)] = false;
      });
      check("erase", step);
    } else if (op == 6) {  // erase everything
      ASSERT_OK(ds.Erase(Slab::All(m.shape)));
      std::fill(m.v.begin(), m.v.end(), kFill);
      std::fill(m.def.begin(), m.def.end(), false);
      check("erase all", step);
    } else if (op < 9) {  // resize
      Dims to(rank);
      for (size_t d = 0; d < rank; ++d) {
        if (tc.max_shape[d] == tc.shape[d])
          to[d] = tc.shape[d];
        else
          to[d] = pick(0, tc.max_shape[d] == kUnlimited ? 3 * tc.chunks[d] + 3 : tc.max_shape[d]);
      }
      ASSERT_OK(ds.Resize(to));
      m.Resize(to);
      check("resize", step);
    } else if (op == 9) {
      ASSERT_OK(c->Commit());
    } else {
      ASSERT_OK(c->Close());
      c.reset();
      ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(disk, {.cache_bytes = 16 << 10}));
      ASSERT_OK_AND_ASSIGN(ds, c->OpenDataset("/s"));
      check("reopen", step);
    }
  }
  ASSERT_OK(c->Close());
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, SparseModelTest,
    ::testing::Values(Case{"fixed_2d", {23, 17}, {23, 17}, {5, 4}, ""},
                      Case{"fixed_2d_filtered", {23, 17}, {23, 17}, {5, 4}, "shuffle,deflate=1,checksum"},
                      Case{"growing_rows", {6, 9}, {kUnlimited, 9}, {4, 4}, ""},
                      Case{"growing_both", {5, 5}, {kUnlimited, kUnlimited}, {3, 2}, "checksum"},
                      Case{"rank3", {6, 5, 7}, {6, 5, 7}, {2, 5, 3}, "deflate=1"},
                      Case{"rank1_long_chunks", {300}, {300}, {128}, ""}),
    [](const ::testing::TestParamInfo<Case>& p) { return std::string(p.param.name); });

TEST(SparseDefinedTest, DefinedReadsNoValuesOfUnfilteredChunks) {
  auto disk = NewDisk();
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
    ASSERT_OK_AND_ASSIGN(
        Dataset ds,
        c->CreateDataset("/s", {.dtype = DType::kU4, .shape = {64, 64}, .chunks = {64, 64}, .sparse = true}));
    std::vector<uint32_t> v(32 * 32, 6);
    ASSERT_OK(ds.Write(Slab::Box({16, 16}, {32, 32}), v.data()));
    ASSERT_OK(c->Close());
  }
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk, {.read_only = true}));
  ASSERT_OK_AND_ASSIGN(Dataset ds, c->OpenDataset("/s"));
  ASSERT_GT(ds.info().stored_bytes, 32u * 32 * 4);
  const uint64_t before = c->cache_stats().bytes_read;
  ASSERT_OK_AND_ASSIGN(std::vector<Box> boxes, ds.Defined(Slab::All({64, 64})));
  EXPECT_EQ(boxes, (std::vector<Box>{{{16, 16}, {32, 32}}}));
  // The header and the runs, not the 4 KiB of values.
  EXPECT_LT(c->cache_stats().bytes_read - before, 200u);
}

TEST(SparseDefinedTest, ADamagedDefinedSetIsCorruption) {
  auto disk = NewDisk();
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
    ASSERT_OK_AND_ASSIGN(
        Dataset ds, c->CreateDataset("/s", {.dtype = DType::kU2, .shape = {100}, .chunks = {100}, .sparse = true}));
    std::vector<uint16_t> v(10, 6);
    ASSERT_OK(ds.Write(Slab::Box({5}, {10}), v.data()));
    ASSERT_OK(ds.Write(Slab::Box({50}, {10}), v.data()));
    ASSERT_OK(c->Close());
  }
  StoredChunk sc;
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk, {.read_only = true}));
    ASSERT_OK_AND_ASSIGN(Dataset ds, c->OpenDataset("/s"));
    ASSERT_OK_AND_ASSIGN(std::vector<StoredChunk> chunks, ds.StoredChunks());
    ASSERT_EQ(chunks.size(), 1u);
    sc = chunks[0];
  }
  {
    // The second run's length (after header 8, layout, run count, gap 5,
    // length 10, gap 35): 10 -> 90 reaches past the chunk.
    std::lock_guard lock(disk->mu);
    ASSERT_EQ(disk->durable[sc.addr + 8 + 5], 10);
    disk->durable[sc.addr + 8 + 5] = 90;
    disk->current = disk->durable;
  }
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk, {.read_only = true}));
  ASSERT_OK_AND_ASSIGN(Dataset ds, c->OpenDataset("/s"));
  EXPECT_EQ(ds.Defined(Slab::All({100})).error().code(), Code::kCorruption);
  std::vector<uint16_t> got(100);
  EXPECT_EQ(ds.ReadElements(0, 100, got.data()).code(), Code::kCorruption);
}

TEST(DenseDefinedTest, StoredChunksAreDefinedAndEraseFreesWholeChunks) {
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(Dataset ds, c->CreateDataset("/d", {.dtype = DType::kU2, .shape = {10, 10}, .chunks = {4, 4}}));
  std::vector<uint16_t> one(1, 7);
  ASSERT_OK(ds.Write(Slab::Box({1, 1}, {1, 1}), one.data()));
  ASSERT_OK(ds.Write(Slab::Box({9, 9}, {1, 1}), one.data()));
  std::vector<Box> boxes;
  ASSERT_OK_AND_ASSIGN(boxes, ds.Defined(Slab::All({10, 10})));
  ASSERT_EQ(boxes.size(), 2u);
  EXPECT_EQ(boxes[0], (Box{{0, 0}, {4, 4}}));
  EXPECT_EQ(boxes[1], (Box{{8, 8}, {2, 2}}));
  ASSERT_OK_AND_ASSIGN(uint64_t n, ds.CountDefined());
  EXPECT_EQ(n, 20u);
  EXPECT_EQ(ds.info().defined_elements, 0u);  // counted only for sparse datasets
  // Erasing rows 0-5: chunk row 0 wholly (freed), chunk row 1 in part.
  std::vector<uint16_t> full(100, 3);
  ASSERT_OK(ds.Write(Slab::Box({0, 0}, {10, 10}), full.data()));
  ASSERT_OK(ds.Erase(Slab::Box({0, 0}, {6, 10})));
  EXPECT_EQ(ds.info().allocated_chunks, 9u - 3u);
  std::vector<uint16_t> got(100);
  ASSERT_OK(ds.ReadElements(0, 100, got.data()));
  for (size_t i = 0; i < 100; ++i) ASSERT_EQ(got[i], i < 60 ? 0 : 3) << i;
  // Strided selections are for Erase, not Defined.
  Slab strided = Slab::Box({0, 0}, {10, 10});
  strided.dims[1] = DimSlab{0, 2, 5, 1};
  EXPECT_EQ(ds.Defined(strided).error().code(), Code::kInvalidArgument);
  EXPECT_EQ(ds.Defined(Slab::Box({0, 0}, {11, 10})).error().code(), Code::kInvalidArgument);
}

}  // namespace sparse_dataset_test
}  // namespace
}  // namespace slabfs
