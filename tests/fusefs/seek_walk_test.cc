// lseek over the engine's walk (Dataset::ForEachDefinedRun), as the mount
// answers it: the same answers as the windowed seek on small datasets, and
// on a dataset of 2^62 bytes, answers in a few chunk visits however far the
// data lies (the calls of the walk's check bound them, not a clock).
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "fusefs/seek.h"
#include "tests/testutil/mem_container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::fusefs {
namespace {

constexpr uint64_t kHuge = uint64_t{1} << 62;
constexpr uint64_t kMi = uint64_t{1} << 20;

class SeekWalkTest : public testing::Test {
 protected:
  void SetUp() override {
    auto c = testutil::OpenOnDisk(testutil::NewDisk());
    ASSERT_TRUE(c.has_value()) << c.error().ToString();
    container_ = std::move(*c);
  }

  // The walk of ds, counting the chunks it visits into visits_.
  DefinedWalkFn Walk(const Dataset& ds) {
    return [this, &ds](uint64_t first, uint64_t count, const RunVisitor& fn) {
      return ds.ForEachDefinedRun(first, count, fn, [this] {
        ++visits_;
        return Status::OK();
      });
    };
  }

  std::optional<uint64_t> SeekOk(SeekKind kind, uint64_t off, const SeekView& v, const DefinedWalkFn& walk) {
    visits_ = 0;
    auto r = Seek(kind, off, v, walk);
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r.has_value() ? *r : std::nullopt;
  }

  std::unique_ptr<Container> container_;
  uint64_t visits_ = 0;
};

TEST_F(SeekWalkTest, AnswersAsTheWindowedSeekDoes) {
  std::mt19937_64 rng(9);
  for (bool sparse : {true, false}) {
    DatasetOptions o{.dtype = DType::kU2, .shape = {37, 23}, .chunks = {4, 5}};
    o.sparse = sparse;
    ASSERT_OK_AND_ASSIGN(Dataset ds, container_->CreateDataset(sparse ? "/s" : "/d", o));
    for (int i = 0; i < 25; ++i) {
      const uint64_t first = rng() % ds.num_elements();
      const uint64_t n = 1 + rng() % std::min<uint64_t>(30, ds.num_elements() - first);
      std::vector<uint16_t> v(n, 5);
      ASSERT_OK(ds.WriteElements(first, n, v.data()));
    }
    ASSERT_OK(ds.Erase(Slab::Box({10, 0}, {3, 23})));
    const DefinedRunsFn runs = [&ds](uint64_t first, uint64_t count) { return ds.DefinedRuns(first, count); };
    for (uint64_t region : {uint64_t{1}, uint64_t{8}, uint64_t{64}, kSeekRegionBytes}) {
      const SeekView v{
          .size_bytes = ds.size_bytes(), .num_elements = ds.num_elements(), .item_size = 2, .region_bytes = region};
      for (uint64_t off = 0; off <= ds.size_bytes(); ++off) {
        for (SeekKind kind : {SeekKind::kData, SeekKind::kHole}) {
          auto windowed = Seek(kind, off, v, runs, 7, 50);
          ASSERT_TRUE(windowed.has_value());
          ASSERT_EQ(SeekOk(kind, off, v, Walk(ds)), *windowed) << (sparse ? "sparse" : "dense") << " region " << region
                                                               << " off " << off << " kind " << static_cast<int>(kind);
        }
      }
    }
  }
}

TEST_F(SeekWalkTest, A2To62ByteFileAnswersInAFewChunkVisits) {
  DatasetOptions o{.dtype = DType::kU1, .shape = {kHuge}, .chunks = {kMi}};
  o.sparse = true;
  ASSERT_OK_AND_ASSIGN(Dataset ds, container_->CreateDataset("/huge", o));
  const std::vector<uint64_t> data = {uint64_t{1} << 30, (uint64_t{1} << 61) + 12345, kHuge - 1};
  for (uint64_t at : data) {
    const uint8_t b = 1;
    ASSERT_OK(ds.WriteElements(at, 1, &b));
  }
  const SeekView v{.size_bytes = kHuge, .num_elements = kHuge, .item_size = 1};
  const DefinedWalkFn walk = Walk(ds);
  const uint64_t r = kSeekRegionBytes;

  EXPECT_EQ(SeekOk(SeekKind::kHole, 0, v, walk), 0u);
  EXPECT_EQ(SeekOk(SeekKind::kData, 0, v, walk), uint64_t{1} << 30);
  EXPECT_LE(visits_, 1u);
  EXPECT_EQ(SeekOk(SeekKind::kData, (uint64_t{1} << 30) + 5, v, walk), (uint64_t{1} << 30) + 5);
  EXPECT_EQ(SeekOk(SeekKind::kHole, (uint64_t{1} << 30) + 5, v, walk), (uint64_t{1} << 30) + r);
  EXPECT_LE(visits_, 2u);  // the data's chunk, and the next stored one
  EXPECT_EQ(SeekOk(SeekKind::kData, (uint64_t{1} << 30) + r, v, walk), data[1] / r * r);
  EXPECT_LE(visits_, 2u);
  EXPECT_EQ(SeekOk(SeekKind::kData, data[1] + r, v, walk), kHuge - r);
  EXPECT_LE(visits_, 2u);
  EXPECT_EQ(SeekOk(SeekKind::kHole, kHuge - 1, v, walk), kHuge);  // the end is a hole
  EXPECT_EQ(SeekOk(SeekKind::kData, kHuge - 1, v, walk), kHuge - 1);
  EXPECT_EQ(SeekOk(SeekKind::kHole, kHuge - r, v, walk), kHuge);
  EXPECT_EQ(SeekOk(SeekKind::kHole, kHuge - r - 1, v, walk), kHuge - r - 1);
}

TEST_F(SeekWalkTest, AWalkThatIsStoppedEndsTheSeekWithItsError) {
  DatasetOptions o{.dtype = DType::kU1, .shape = {kHuge}, .chunks = {kMi}};
  ASSERT_OK_AND_ASSIGN(Dataset ds, container_->CreateDataset("/dense", o));
  std::vector<uint8_t> ones(4 * kMi, 1);
  ASSERT_OK(ds.WriteElements(0, ones.size(), ones.data()));
  int calls = 0;
  const DefinedWalkFn walk = [&](uint64_t first, uint64_t count, const RunVisitor& fn) {
    return ds.ForEachDefinedRun(first, count, fn, [&]() -> Status {
      if (++calls > 2) return Status::Busy("interrupted");
      return Status::OK();
    });
  };
  const SeekView v{.size_bytes = kHuge, .num_elements = kHuge, .item_size = 1};
  auto hole = Seek(SeekKind::kHole, 0, v, walk);  // through 4 stored chunks
  ASSERT_FALSE(hole.has_value());
  EXPECT_EQ(hole.error().code(), Code::kBusy);
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace slabfs::fusefs
