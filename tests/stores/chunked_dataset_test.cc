// The walk over a chunked foreign dataset's defined elements
// (stores/chunked_dataset.h): ChunkedDataset finds the next stored element
// from its sorted chunk keys, looking at the chunks of one band, and
// answers Defined from the keys between a box's corners. Checked against
// the generic answers (StoreDataset's own finder over every stored chunk's
// box, and the boxes of StoredChunks) on grids of many chunks, 1-D to 3-D,
// with random stored chunks, edge chunks and chunks left past a shrink.
#include "stores/chunked_dataset.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <random>
#include <set>
#include <vector>

#include "engine/cache/chunk_cache.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::stores {
namespace {

// A chunked dataset of `shape` in `chunk`s with the stored chunks `keys`
// (linear grid positions), whose chunks hold nothing anyone reads here.
class GridDataset final : public ChunkedDataset {
 public:
  using ChunkedDataset::ChunkedDataset;
  Status LoadChunk(size_t, std::span<const uint64_t>, char*) const override {
    return Status::NotSupported("no chunk bytes here");
  }

 protected:
  uint64_t StoredBytes(size_t) const override { return 1; }
};

std::shared_ptr<GridDataset> MakeGrid(const Dims& shape, const Dims& chunk, std::vector<uint64_t> keys) {
  auto layout = std::make_shared<ChunkedLayout>();
  layout->path = "/grid";
  layout->info.dataset.dtype = DType::kU1;
  layout->info.dataset.shape = shape;
  layout->info.dataset.chunks = chunk;
  uint64_t n = 1;
  for (uint64_t s : shape) n *= s;
  layout->info.dataset.num_elements = n;
  layout->info.dataset.fill = std::string(1, '\0');
  layout->info.layout = StoreLayout::kChunked;
  layout->chunk = chunk;
  std::sort(keys.begin(), keys.end());
  layout->keys = std::move(keys);
  auto cache = std::make_shared<engine::ChunkCache>(1 << 20, 1 << 20);
  return std::make_shared<GridDataset>(layout, cache, 1);
}

uint64_t Cells(const Dims& shape, const Dims& chunk) {
  uint64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) n *= (shape[d] + chunk[d] - 1) / chunk[d];
  return n;
}

// Random `at`s (and the chunk starts and ends around stored chunks): the
// fast finder and StoreDataset's generic one agree.
void ExpectFindersAgree(const GridDataset& ds, std::mt19937_64& rng) {
  ASSERT_OK_AND_ASSIGN(auto fast, ds.StoredElementFinder());
  ASSERT_OK_AND_ASSIGN(auto generic, ds.StoreDataset::StoredElementFinder());
  const uint64_t n = ds.info().dataset.num_elements;
  for (int i = 0; i < 400; ++i) {
    const uint64_t at = i < 4 ? (i == 0 ? 0 : n - static_cast<uint64_t>(i)) : rng() % (n + 2);
    ASSERT_OK_AND_ASSIGN(std::optional<uint64_t> a, fast(at));
    ASSERT_OK_AND_ASSIGN(std::optional<uint64_t> b, generic(at));
    ASSERT_EQ(a, b) << "at " << at;
  }
}

// Defined over random boxes is the stored chunks' boxes cut to the box.
void ExpectDefinedAgrees(const GridDataset& ds, std::mt19937_64& rng) {
  const DatasetInfo d = ds.info().dataset;
  const size_t rank = d.shape.size();
  ASSERT_OK_AND_ASSIGN(std::vector<StoredChunk> chunks, ds.StoredChunks());
  for (int i = 0; i < 60; ++i) {
    Dims lo(rank), cnt(rank);
    for (size_t k = 0; k < rank; ++k) {
      lo[k] = rng() % d.shape[k];
      cnt[k] = 1 + rng() % (d.shape[k] - lo[k]);
    }
    ASSERT_OK_AND_ASSIGN(std::vector<Box> boxes, ds.Defined(Slab::Box(lo, cnt)));
    uint64_t got = 0, want = 0;
    for (const Box& b : boxes) {
      uint64_t e = 1;
      for (uint64_t c : b.count) e *= c;
      got += e;
    }
    for (const StoredChunk& c : chunks) {
      uint64_t e = 1;
      for (size_t k = 0; k < rank; ++k) {
        const uint64_t s = c.coords[k] * d.chunks[k];
        const uint64_t z = std::min({s + d.chunks[k], d.shape[k], lo[k] + cnt[k]});
        const uint64_t a = std::max(s, lo[k]);
        e *= z > a ? z - a : 0;
      }
      want += e;
    }
    EXPECT_EQ(got, want) << "box " << i;
  }
}

TEST(ChunkedDatasetWalkTest, FindersAndDefinedAgreeWithTheGenericAnswers) {
  std::mt19937_64 rng(21);
  struct Geometry {
    Dims shape, chunk;
  };
  const std::vector<Geometry> geometries = {
      {{1000}, {7}},               // 1-D, an edge chunk
      {{300, 500}, {16, 32}},      // 2-D, edge chunks both ways
      {{40, 50, 60}, {3, 7, 11}},  // 3-D
      {{20, 1, 33}, {1, 1, 4}},    // a dimension of one
      {{64, 64}, {64, 64}},        // one chunk
  };
  for (const Geometry& g : geometries) {
    const uint64_t cells = Cells(g.shape, g.chunk);
    for (double density : {0.0, 0.01, 0.2, 1.0}) {
      SCOPED_TRACE(::testing::Message() << "shape " << g.shape.size() << "-D, " << cells << " chunks, density "
                                        << density);
      std::set<uint64_t> keys;
      for (uint64_t k = 0; k < cells; ++k)
        if (std::uniform_real_distribution<double>(0, 1)(rng) < density) keys.insert(k);
      auto ds = MakeGrid(g.shape, g.chunk, std::vector<uint64_t>(keys.begin(), keys.end()));
      ASSERT_NO_FATAL_FAILURE(ExpectFindersAgree(*ds, rng));
      ASSERT_NO_FATAL_FAILURE(ExpectDefinedAgrees(*ds, rng));
    }
  }
}

TEST(ChunkedDatasetWalkTest, KeysPastTheGridAreNotElements) {
  // Keys a store should never hold (past its grid): the walk does not trust
  // them to be elements, and StoredChunks leaves them out.
  auto ds = MakeGrid({10, 10}, {4, 4}, {0, 4, 8, 9, 12, 100});  // a 3 x 3 grid: 9, 12, 100 lie past it
  ASSERT_OK_AND_ASSIGN(auto fast, ds->StoredElementFinder());
  EXPECT_EQ(fast(0).value(), std::optional<uint64_t>(0));
  EXPECT_EQ(fast(4).value(), std::optional<uint64_t>(10));   // row 1 of chunk (0, 0)
  EXPECT_EQ(fast(40).value(), std::optional<uint64_t>(44));  // chunk (1, 1) starts at (4, 4)
  EXPECT_EQ(fast(99).value(), std::optional<uint64_t>(99));  // chunk (2, 2) holds (9, 9)
  EXPECT_EQ(fast(100).value(), std::nullopt);
  ASSERT_OK_AND_ASSIGN(std::vector<StoredChunk> chunks, ds->StoredChunks());
  EXPECT_EQ(chunks.size(), 3u);
}

// A walk over a grid of a million chunks, one stored near each end: its
// steps look at the chunks of one band, so the whole walk visits two runs.
TEST(ChunkedDatasetWalkTest, AWalkOverAMillionChunksFindsTheTwoStored) {
  const uint64_t side = 1000;  // 1000 x 1000 chunks of 4 x 4
  auto ds = MakeGrid({side * 4, side * 4}, {4, 4}, {3, side * side - 2});
  std::vector<ElementRun> runs;
  ASSERT_OK(ds->ForEachDefinedRun(0, side * side * 16, [&](const ElementRun& r) {
    runs.push_back(r);
    return true;
  }));
  ASSERT_EQ(runs.size(), 8u);  // each chunk's 4 rows of 4
  EXPECT_EQ(runs.front().first, 3u * 4);
  EXPECT_EQ(runs.back().first, (side * 4 - 1) * side * 4 + (side - 2) * 4);
}

}  // namespace
}  // namespace slabfs::stores
