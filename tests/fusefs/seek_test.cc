#include "fusefs/seek.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testutil/mem_container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::fusefs {
namespace {

// A brute-force reference: one flag per element.
struct Mask {
  std::vector<bool> defined;

  // Runs inside [first, first + count), merged, as the engine answers.
  std::vector<ElementRun> Runs(uint64_t first, uint64_t count) const {
    std::vector<ElementRun> out;
    for (uint64_t e = first; e < first + count; ++e) {
      if (!defined[e]) continue;
      if (!out.empty() && out.back().first + out.back().count == e) {
        ++out.back().count;
      } else {
        out.push_back({e, 1});
      }
    }
    return out;
  }

  // lseek on the bytes, one byte at a time: a byte is data when any byte
  // of its region belongs to a defined element.
  std::optional<uint64_t> Expect(SeekKind kind, uint64_t off, uint64_t size, size_t item, uint64_t region = 1) const {
    if (off >= size) return std::nullopt;
    for (uint64_t b = off; b < size; ++b) {
      const uint64_t lo = b / region * region;
      const uint64_t hi = std::min(lo + region, size);
      bool data = false;
      for (uint64_t x = lo; x < hi && !data; ++x) data = defined[x / item];
      if (data == (kind == SeekKind::kData)) return b;
    }
    if (kind == SeekKind::kHole) return size;
    return std::nullopt;
  }
};

DefinedRunsFn RunsOf(const Mask& m, std::vector<uint64_t>* asked = nullptr) {
  return [&m, asked](uint64_t first, uint64_t count) -> Result<std::vector<ElementRun>> {
    if (asked != nullptr) asked->push_back(count);
    return m.Runs(first, count);
  };
}

std::optional<uint64_t> SeekOk(SeekKind kind, uint64_t off, const SeekView& v, const DefinedRunsFn& runs,
                               uint64_t first_window = kFirstSeekWindow, uint64_t max_window = kMaxSeekWindow) {
  auto r = Seek(kind, off, v, runs, first_window, max_window);
  EXPECT_TRUE(r.has_value());
  return r.has_value() ? *r : std::nullopt;
}

Mask MaskWith(uint64_t n, std::vector<ElementRun> runs) {
  Mask m{std::vector<bool>(n, false)};
  for (const ElementRun& r : runs)
    for (uint64_t e = r.first; e < r.first + r.count; ++e) m.defined[e] = true;
  return m;
}

TEST(SeekTest, DataAndHolesInBytes) {
  // 4-byte elements; elements 10..19 and 30..31 defined.
  Mask m = MaskWith(100, {{10, 10}, {30, 2}});
  const SeekView v{.size_bytes = 400, .num_elements = 100, .item_size = 4, .region_bytes = 1};
  EXPECT_EQ(SeekOk(SeekKind::kData, 0, v, RunsOf(m)), 40u);
  EXPECT_EQ(SeekOk(SeekKind::kHole, 40, v, RunsOf(m)), 80u);
  EXPECT_EQ(SeekOk(SeekKind::kData, 80, v, RunsOf(m)), 120u);
  EXPECT_EQ(SeekOk(SeekKind::kHole, 120, v, RunsOf(m)), 128u);
  EXPECT_EQ(SeekOk(SeekKind::kHole, 0, v, RunsOf(m)), 0u);
}

TEST(SeekTest, AnOffsetInsideAnElementBelongsToIt) {
  Mask m = MaskWith(100, {{10, 10}});
  const SeekView v{.size_bytes = 400, .num_elements = 100, .item_size = 4, .region_bytes = 1};
  EXPECT_EQ(SeekOk(SeekKind::kData, 42, v, RunsOf(m)), 42u);  // inside defined element 10
  EXPECT_EQ(SeekOk(SeekKind::kData, 39, v, RunsOf(m)), 40u);  // inside hole element 9
  EXPECT_EQ(SeekOk(SeekKind::kHole, 79, v, RunsOf(m)), 80u);  // inside data element 19
  EXPECT_EQ(SeekOk(SeekKind::kHole, 81, v, RunsOf(m)), 81u);
}

TEST(SeekTest, NoDataAfterTheOffsetIsEnxio) {
  Mask m = MaskWith(100, {{10, 10}});
  const SeekView v{.size_bytes = 400, .num_elements = 100, .item_size = 4, .region_bytes = 1};
  EXPECT_EQ(SeekOk(SeekKind::kData, 80, v, RunsOf(m)), std::nullopt);
  EXPECT_EQ(SeekOk(SeekKind::kData, 400, v, RunsOf(m)), std::nullopt);
  EXPECT_EQ(SeekOk(SeekKind::kHole, 400, v, RunsOf(m)), std::nullopt);
  EXPECT_EQ(SeekOk(SeekKind::kData, 1u << 30, v, RunsOf(m)), std::nullopt);
}

TEST(SeekTest, TheEndIsAHole) {
  Mask m = MaskWith(100, {{0, 100}});
  const SeekView v{.size_bytes = 400, .num_elements = 100, .item_size = 4, .region_bytes = 1};
  EXPECT_EQ(SeekOk(SeekKind::kHole, 0, v, RunsOf(m)), 400u);
  EXPECT_EQ(SeekOk(SeekKind::kHole, 399, v, RunsOf(m)), 400u);
  EXPECT_EQ(SeekOk(SeekKind::kData, 399, v, RunsOf(m)), 399u);
}

TEST(SeekTest, AnEmptyFileHasNothing) {
  Mask m;
  const SeekView v{.size_bytes = 0, .num_elements = 0, .item_size = 4, .region_bytes = 1};
  EXPECT_EQ(SeekOk(SeekKind::kData, 0, v, RunsOf(m)), std::nullopt);
  EXPECT_EQ(SeekOk(SeekKind::kHole, 0, v, RunsOf(m)), std::nullopt);
}

TEST(SeekTest, AReportedSizeShorterThanTheDatasetEndsTheFile) {
  // A partial row being appended: the file ends at byte 50 of 400.
  Mask m = MaskWith(100, {{0, 100}});
  const SeekView v{.size_bytes = 50, .num_elements = 100, .item_size = 4, .region_bytes = 1};
  EXPECT_EQ(SeekOk(SeekKind::kHole, 0, v, RunsOf(m)), 50u);
  EXPECT_EQ(SeekOk(SeekKind::kData, 50, v, RunsOf(m)), std::nullopt);
}

TEST(SeekTest, ANonzeroFillLeavesNoHoles) {
  // Tools recreate holes as zeros; fill 7 must be copied as data.
  Mask m = MaskWith(100, {{10, 10}});
  const SeekView v{.size_bytes = 400, .num_elements = 100, .item_size = 4, .zero_fill = false, .region_bytes = 1};
  std::vector<uint64_t> asked;
  EXPECT_EQ(SeekOk(SeekKind::kData, 0, v, RunsOf(m, &asked)), 0u);
  EXPECT_EQ(SeekOk(SeekKind::kData, 321, v, RunsOf(m, &asked)), 321u);
  EXPECT_EQ(SeekOk(SeekKind::kHole, 0, v, RunsOf(m, &asked)), 400u);
  EXPECT_EQ(SeekOk(SeekKind::kData, 400, v, RunsOf(m, &asked)), std::nullopt);
  EXPECT_EQ(SeekOk(SeekKind::kHole, 400, v, RunsOf(m, &asked)), std::nullopt);
  EXPECT_TRUE(asked.empty());
}

TEST(SeekTest, WalksWindowsAndNeverAsksForMoreThanTheLargest) {
  // Data far out: many windows of nothing first.
  const uint64_t n = 100000;
  Mask m = MaskWith(n, {{90001, 3}});
  const SeekView v{.size_bytes = n * 2, .num_elements = n, .item_size = 2, .region_bytes = 1};
  std::vector<uint64_t> asked;
  EXPECT_EQ(SeekOk(SeekKind::kData, 0, v, RunsOf(m, &asked), 16, 1024), 90001u * 2);
  ASSERT_FALSE(asked.empty());
  EXPECT_EQ(asked.front(), 16u);
  EXPECT_LE(*std::max_element(asked.begin(), asked.end()), 1024u);
  // The windows grew: far fewer requests than windows of the first size.
  EXPECT_LT(asked.size(), 200u);
  // A hole far out behind data.
  Mask full = MaskWith(n, {{0, 77777}});
  asked.clear();
  EXPECT_EQ(SeekOk(SeekKind::kHole, 0, v, RunsOf(full, &asked), 16, 1024), 77777u * 2);
  EXPECT_LE(*std::max_element(asked.begin(), asked.end()), 1024u);
}

TEST(SeekTest, ARunAcrossWindowsIsOneRegion) {
  Mask m = MaskWith(1000, {{5, 500}});
  const SeekView v{.size_bytes = 1000, .num_elements = 1000, .item_size = 1, .region_bytes = 1};
  EXPECT_EQ(SeekOk(SeekKind::kHole, 5, v, RunsOf(m), 7, 7), 505u);
  EXPECT_EQ(SeekOk(SeekKind::kData, 0, v, RunsOf(m), 3, 3), 5u);
}

TEST(SeekTest, ErrorsOfTheRunsPassThrough) {
  const SeekView v{.size_bytes = 400, .num_elements = 100, .item_size = 4, .region_bytes = 1};
  DefinedRunsFn failing = [](uint64_t, uint64_t) -> Result<std::vector<ElementRun>> {
    return Err(Status::Corruption("chunk [3]: checksum mismatch"));
  };
  auto r = Seek(SeekKind::kData, 0, v, failing);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kCorruption);
}

TEST(SeekTest, MatchesByteByByteReferenceOnRandomMasks) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    const size_t item = size_t{1} << (rng() % 4);
    const uint64_t n = 1 + rng() % 300;
    Mask m{std::vector<bool>(n)};
    // Runs of random lengths, alternating.
    bool on = rng() % 2;
    for (uint64_t e = 0; e < n;) {
      const uint64_t len = 1 + rng() % 20;
      for (uint64_t k = e; k < std::min(n, e + len); ++k) m.defined[k] = on;
      e += len;
      on = !on;
    }
    const SeekView v{.size_bytes = n * item, .num_elements = n, .item_size = item, .region_bytes = 1};
    const uint64_t window = 1 + rng() % 40;
    for (uint64_t off = 0; off <= n * item + 2; ++off) {
      for (SeekKind kind : {SeekKind::kData, SeekKind::kHole}) {
        ASSERT_EQ(SeekOk(kind, off, v, RunsOf(m), window, window * 4), m.Expect(kind, off, n * item, item))
            << "trial " << trial << " off " << off << " kind " << static_cast<int>(kind);
      }
    }
  }
}

TEST(SeekTest, RegionsRoundDataOutAndHolesIn) {
  // 2-byte elements in 64-byte regions; element 40 (bytes 80..81) defined.
  Mask m = MaskWith(200, {{40, 1}});
  const SeekView v{.size_bytes = 400, .num_elements = 200, .item_size = 2, .region_bytes = 64};
  EXPECT_EQ(SeekOk(SeekKind::kData, 0, v, RunsOf(m)), 64u);    // its region starts at 64
  EXPECT_EQ(SeekOk(SeekKind::kData, 70, v, RunsOf(m)), 70u);   // inside that region
  EXPECT_EQ(SeekOk(SeekKind::kHole, 64, v, RunsOf(m)), 128u);  // the region ends at 128
  EXPECT_EQ(SeekOk(SeekKind::kHole, 0, v, RunsOf(m)), 0u);
  EXPECT_EQ(SeekOk(SeekKind::kData, 128, v, RunsOf(m)), std::nullopt);
  // Data in every region: the only hole is the end.
  Mask dotted = MaskWith(200, {{0, 1}, {32, 1}, {64, 1}, {96, 1}, {128, 1}, {160, 1}, {199, 1}});
  EXPECT_EQ(SeekOk(SeekKind::kHole, 0, v, RunsOf(dotted)), 400u);
  EXPECT_EQ(SeekOk(SeekKind::kData, 5, v, RunsOf(dotted)), 5u);
}

TEST(SeekTest, RegionsMatchByteByByteReferenceOnRandomMasks) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 60; ++trial) {
    const size_t item = size_t{1} << (rng() % 4);
    const uint64_t region = uint64_t{8} << (rng() % 4);  // 8..64 bytes, a multiple of any item
    const uint64_t n = 1 + rng() % 400;
    Mask m{std::vector<bool>(n)};
    bool on = rng() % 2;
    for (uint64_t e = 0; e < n;) {
      const uint64_t len = 1 + rng() % 30;
      for (uint64_t k = e; k < std::min(n, e + len); ++k) m.defined[k] = on;
      e += len;
      on = !on;
    }
    const SeekView v{.size_bytes = n * item, .num_elements = n, .item_size = item, .region_bytes = region};
    const uint64_t window = 1 + rng() % 40;
    for (uint64_t off = 0; off <= n * item + 2; ++off) {
      for (SeekKind kind : {SeekKind::kData, SeekKind::kHole}) {
        ASSERT_EQ(SeekOk(kind, off, v, RunsOf(m), window, window * 4), m.Expect(kind, off, n * item, item, region))
            << "trial " << trial << " off " << off << " kind " << static_cast<int>(kind);
      }
    }
  }
}

// The same walk against the engine: a sparse dataset's defined elements and
// a dense dataset's stored chunks.
class SeekOnDatasetTest : public testing::Test {
 protected:
  void SetUp() override {
    auto c = testutil::OpenOnDisk(testutil::NewDisk());
    ASSERT_TRUE(c.has_value()) << c.error().ToString();
    container_ = std::move(*c);
  }

  // Every offset of the file against the reference built from Defined.
  void ExpectMatchesDefined(const Dataset& ds) {
    const uint64_t n = ds.num_elements();
    const size_t item = ds.item_size();
    auto boxes = ds.Defined(Slab::All(ds.info().shape));
    ASSERT_TRUE(boxes.has_value());
    auto all = ds.DefinedRuns(0, n);
    ASSERT_TRUE(all.has_value());
    Mask m{std::vector<bool>(n, false)};
    for (const ElementRun& r : *all)
      for (uint64_t e = r.first; e < r.first + r.count; ++e) m.defined[e] = true;
    const SeekView v{.size_bytes = n * item, .num_elements = n, .item_size = item, .region_bytes = 1};
    DefinedRunsFn runs = [&ds](uint64_t first, uint64_t count) { return ds.DefinedRuns(first, count); };
    for (uint64_t off = 0; off < n * item; off += 3) {
      for (SeekKind kind : {SeekKind::kData, SeekKind::kHole}) {
        ASSERT_EQ(SeekOk(kind, off, v, runs, 5, 40), m.Expect(kind, off, n * item, item))
            << "off " << off << " kind " << static_cast<int>(kind);
      }
    }
  }

  std::unique_ptr<Container> container_;
};

TEST_F(SeekOnDatasetTest, SparseDatasetHolesAreUndefinedElements) {
  DatasetOptions o{.dtype = DType::kU2, .shape = {12, 10}, .chunks = {4, 4}};
  o.sparse = true;
  ASSERT_OK_AND_ASSIGN(Dataset ds, container_->CreateDataset("/s", o));
  const uint16_t v[6] = {1, 2, 3, 4, 5, 6};
  ASSERT_OK(ds.WriteElements(3, 4, v));    // row 0, columns 3..6
  ASSERT_OK(ds.WriteElements(38, 6, v));   // row 3 end, row 4 start
  ASSERT_OK(ds.WriteElements(119, 1, v));  // the last element
  ASSERT_OK(ds.Erase(Slab::Box({3, 9}, {1, 1})));
  ExpectMatchesDefined(ds);
  // Spot checks in bytes.
  const SeekView sv{.size_bytes = 240, .num_elements = 120, .item_size = 2, .region_bytes = 1};
  DefinedRunsFn runs = [&ds](uint64_t first, uint64_t count) { return ds.DefinedRuns(first, count); };
  EXPECT_EQ(SeekOk(SeekKind::kData, 0, sv, runs), 6u);
  EXPECT_EQ(SeekOk(SeekKind::kHole, 6, sv, runs), 14u);
  EXPECT_EQ(SeekOk(SeekKind::kData, 14, sv, runs), 76u);
  EXPECT_EQ(SeekOk(SeekKind::kData, 90, sv, runs), 238u);
  EXPECT_EQ(SeekOk(SeekKind::kHole, 238, sv, runs), 240u);
}

TEST_F(SeekOnDatasetTest, DenseDatasetHolesAreChunksNotStored) {
  DatasetOptions o{.dtype = DType::kF4, .shape = {9, 7}, .chunks = {2, 3}};
  ASSERT_OK_AND_ASSIGN(Dataset ds, container_->CreateDataset("/d", o));
  const float one = 1.0f;
  ASSERT_OK(ds.Write(Slab::Box({0, 0}, {1, 1}), &one));  // chunk (0,0)
  ASSERT_OK(ds.Write(Slab::Box({5, 6}, {1, 1}), &one));  // chunk (2,2), the edge column
  ExpectMatchesDefined(ds);
}

}  // namespace
}  // namespace slabfs::fusefs
