#include "slabfs/slice.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {
namespace slice_test {  // its own names in a unity batch

// {start, stride, count} of one dimension.
using Dim = std::tuple<uint64_t, uint64_t, uint64_t>;
using Point3 = std::array<uint64_t, 3>;

std::vector<Dim> DimsOf(const Slab& s) {
  std::vector<Dim> out;
  for (const DimSlab& d : s.dims) {
    EXPECT_EQ(d.block, 1u);
    out.emplace_back(d.start, d.stride, d.count);
  }
  return out;
}

std::vector<Dim> Parsed(std::string_view text, const Dims& shape) {
  auto s = ParseSlice(text, shape);
  EXPECT_TRUE(s.has_value()) << "'" << text << "': " << s.error().ToString();
  return s ? DimsOf(*s) : std::vector<Dim>{};
}

// The error message for a slice that must be refused.
std::string Refused(std::string_view text, const Dims& shape) {
  auto s = ParseSlice(text, shape);
  EXPECT_FALSE(s.has_value()) << "'" << text << "' was accepted: " << FormatSlice(*s);
  if (s) return "";
  EXPECT_EQ(s.error().code(), Code::kInvalidArgument) << s.error().ToString();
  EXPECT_TRUE(s.error().message().starts_with(fmt::format("slice '{}'", text))) << s.error().message();
  return s.error().message();
}

bool Mentions(const std::string& message, std::string_view part) { return message.find(part) != std::string::npos; }

TEST(ParseSliceTest, SingleIndicesKeepTheirDimension) {
  EXPECT_EQ(Parsed("3", {10}), (std::vector<Dim>{{3, 1, 1}}));
  EXPECT_EQ(Parsed("0,9", {10, 10}), (std::vector<Dim>{{0, 1, 1}, {9, 1, 1}}));
  EXPECT_EQ(Parsed("-1", {10}), (std::vector<Dim>{{9, 1, 1}}));
  EXPECT_EQ(Parsed("-10", {10}), (std::vector<Dim>{{0, 1, 1}}));
  EXPECT_EQ(Parsed("+4", {10}), (std::vector<Dim>{{4, 1, 1}}));
}

TEST(ParseSliceTest, RangesWithPartsOmitted) {
  const Dims shape{20};
  EXPECT_EQ(Parsed(":", shape), (std::vector<Dim>{{0, 1, 20}}));
  EXPECT_EQ(Parsed("::", shape), (std::vector<Dim>{{0, 1, 20}}));
  EXPECT_EQ(Parsed("5:", shape), (std::vector<Dim>{{5, 1, 15}}));
  EXPECT_EQ(Parsed(":7", shape), (std::vector<Dim>{{0, 1, 7}}));
  EXPECT_EQ(Parsed("::2", shape), (std::vector<Dim>{{0, 2, 10}}));
  EXPECT_EQ(Parsed("1::3", shape), (std::vector<Dim>{{1, 3, 7}}));
  EXPECT_EQ(Parsed("10:20", shape), (std::vector<Dim>{{10, 1, 10}}));
  EXPECT_EQ(Parsed("10:20:", shape), (std::vector<Dim>{{10, 1, 10}}));
  EXPECT_EQ(Parsed("10:20:4", shape), (std::vector<Dim>{{10, 4, 3}}));
}

TEST(ParseSliceTest, NegativeBoundsCountFromTheEndAndBoundsClamp) {
  const Dims shape{10};
  EXPECT_EQ(Parsed("-3:", shape), (std::vector<Dim>{{7, 1, 3}}));
  EXPECT_EQ(Parsed(":-1", shape), (std::vector<Dim>{{0, 1, 9}}));
  EXPECT_EQ(Parsed("-100:3", shape), (std::vector<Dim>{{0, 1, 3}}));
  EXPECT_EQ(Parsed("5:100", shape), (std::vector<Dim>{{5, 1, 5}}));
  EXPECT_EQ(Parsed("5:99999999999999999999999", shape), (std::vector<Dim>{{5, 1, 5}}));
  EXPECT_EQ(Parsed("-99999999999999999999999:2", shape), (std::vector<Dim>{{0, 1, 2}}));
  EXPECT_EQ(Parsed("::99999999999999999999999", shape), (std::vector<Dim>{{0, 1, 1}}));
}

TEST(ParseSliceTest, EmptyRangesSelectNothing) {
  EXPECT_EQ(Parsed("5:5", {10}), (std::vector<Dim>{{5, 1, 0}}));
  EXPECT_EQ(Parsed("7:3", {10}), (std::vector<Dim>{{7, 1, 0}}));
  EXPECT_EQ(Parsed("20:", {10}), (std::vector<Dim>{{10, 1, 0}}));
  EXPECT_EQ(Parsed(":", {0, 4}), (std::vector<Dim>{{0, 1, 0}, {0, 1, 4}}));
  auto s = ParseSlice("2,5:5", {4, 10});
  ASSERT_OK(s);
  EXPECT_EQ(s->num_elements(), 0u);
}

TEST(ParseSliceTest, EllipsisAndMissingItemsAreFullDimensions) {
  const Dims shape{4, 5, 6};
  const std::vector<Dim> all{{0, 1, 4}, {0, 1, 5}, {0, 1, 6}};
  EXPECT_EQ(Parsed("...", shape), all);
  EXPECT_EQ(Parsed(":", shape), all);
  EXPECT_EQ(Parsed("...,1", shape), (std::vector<Dim>{{0, 1, 4}, {0, 1, 5}, {1, 1, 1}}));
  EXPECT_EQ(Parsed("1,...", shape), (std::vector<Dim>{{1, 1, 1}, {0, 1, 5}, {0, 1, 6}}));
  EXPECT_EQ(Parsed("1,...,2", shape), (std::vector<Dim>{{1, 1, 1}, {0, 1, 5}, {2, 1, 1}}));
  EXPECT_EQ(Parsed("1", shape), (std::vector<Dim>{{1, 1, 1}, {0, 1, 5}, {0, 1, 6}}));
  // An ellipsis may stand for no dimension at all.
  EXPECT_EQ(Parsed("1,...,2,3", shape), (std::vector<Dim>{{1, 1, 1}, {2, 1, 1}, {3, 1, 1}}));
  EXPECT_EQ(Parsed("...,1,2,3", shape), (std::vector<Dim>{{1, 1, 1}, {2, 1, 1}, {3, 1, 1}}));
}

TEST(ParseSliceTest, IgnoresBlanksAroundItemsAndParts) {
  EXPECT_EQ(Parsed(" 10 : 20 ,\t::2 , 5 ", {30, 6, 8}), (std::vector<Dim>{{10, 1, 10}, {0, 2, 3}, {5, 1, 1}}));
  EXPECT_EQ(Parsed(" ... , -1", {3, 3}), (std::vector<Dim>{{0, 1, 3}, {2, 1, 1}}));
}

TEST(ParseSliceTest, StrideIsOneWhereAtMostOneIndexIsSelected) {
  EXPECT_EQ(Parsed("3::100", {10}), (std::vector<Dim>{{3, 1, 1}}));
  EXPECT_EQ(Parsed("3:3:5", {10}), (std::vector<Dim>{{3, 1, 0}}));
  EXPECT_EQ(Parsed("8::2", {10}), (std::vector<Dim>{{8, 1, 1}}));
}

TEST(ParseSliceTest, RefusesStepZeroAndNegativeSteps) {
  std::string m = Refused("::0", {10});
  EXPECT_TRUE(Mentions(m, "'::0'")) << m;
  EXPECT_TRUE(Mentions(m, "step cannot be zero")) << m;
  m = Refused("1,5:1:-1", {10, 10});
  EXPECT_TRUE(Mentions(m, "'5:1:-1'")) << m;
  EXPECT_TRUE(Mentions(m, "negative steps are not supported")) << m;
  m = Refused("::-99999999999999999999", {10});
  EXPECT_TRUE(Mentions(m, "negative steps")) << m;
}

TEST(ParseSliceTest, RefusesIndicesOutOfRange) {
  std::string m = Refused("10", {10});
  EXPECT_TRUE(Mentions(m, "index '10' is out of range for dimension 0 of extent 10")) << m;
  EXPECT_TRUE(Mentions(m, "-10 to 9")) << m;
  m = Refused("0,-6", {10, 5});
  EXPECT_TRUE(Mentions(m, "index '-6' is out of range for dimension 1 of extent 5")) << m;
  m = Refused("...,7", {10, 5});
  EXPECT_TRUE(Mentions(m, "dimension 1")) << m;
  m = Refused("0", {0, 5});
  EXPECT_TRUE(Mentions(m, "extent 0")) << m;
  m = Refused("99999999999999999999999", {10});
  EXPECT_TRUE(Mentions(m, "'99999999999999999999999' is out of range")) << m;
  m = Refused("-99999999999999999999999", {10});
  EXPECT_TRUE(Mentions(m, "out of range")) << m;
  m = Refused("-9223372036854775808", {10});
  EXPECT_TRUE(Mentions(m, "out of range")) << m;
}

TEST(ParseSliceTest, RefusesMoreItemsThanTheRank) {
  std::string m = Refused("1,2,3", {4, 4});
  EXPECT_TRUE(Mentions(m, "3 items for a dataset of rank 2 (shape 4,4)")) << m;
  EXPECT_TRUE(Mentions(m, "'3' has no dimension")) << m;
  m = Refused("...,1,:,2", {4, 4});
  EXPECT_TRUE(Mentions(m, "'2' has no dimension")) << m;
}

TEST(ParseSliceTest, RefusesTwoEllipses) {
  std::string m = Refused("...,1,...", {4, 4, 4});
  EXPECT_TRUE(Mentions(m, "'...' may appear only once")) << m;
  Refused("...,...", {4, 4, 4});
}

TEST(ParseSliceTest, RefusesEmptySlicesAndEmptyItems) {
  EXPECT_TRUE(Mentions(Refused("", {4}), "the slice is empty"));
  EXPECT_TRUE(Mentions(Refused("  ", {4}), "the slice is empty"));
  std::string m = Refused("1,,2", {4, 4, 4});
  EXPECT_TRUE(Mentions(m, "item 2 is empty")) << m;
  EXPECT_TRUE(Mentions(Refused("1,", {4, 4}), "item 2 is empty"));
  EXPECT_TRUE(Mentions(Refused(",1", {4, 4}), "item 1 is empty"));
  EXPECT_TRUE(Mentions(Refused(", ", {4, 4}), "item 1 is empty"));
}

TEST(ParseSliceTest, RefusesGarbageNamingTheItem) {
  struct Case {
    const char* text;
    const char* reason;
  };
  for (const Case& c : {
           Case{"a", "'a' is not an index or a range"},
           Case{"1,x", "'x' is not an index or a range"},
           Case{"1.5", "'1.5' is not an index"},
           Case{"1e3", "'1e3'"},
           Case{"0x10", "'0x10'"},
           Case{"--1", "'--1'"},
           Case{"-", "'-'"},
           Case{"+", "'+'"},
           Case{"1 2", "'1 2'"},
           Case{"None", "'None'"},
           Case{"[1]", "'[1]'"},
           Case{"(1,2)", "'(1'"},
           Case{"..", "'..'"},
           Case{"....", "'....'"},
           Case{"1:2:3:4", "'1:2:3:4' has 3 colons"},
           Case{":::", "':::' has 3 colons"},
           Case{"a:3", "the start 'a' is not a whole number"},
           Case{"1:b", "the stop 'b' is not a whole number"},
           Case{"1:2:c", "the step 'c' is not a whole number"},
           Case{"1:2:1.5", "the step '1.5'"},
           Case{"1 : 2 3", "the stop '2 3'"},
           Case{"1_000", "'1_000'"},
       }) {
    std::string m = Refused(c.text, {4, 4});
    EXPECT_TRUE(Mentions(m, c.reason)) << c.text << ": " << m;
  }
}

TEST(ParseSliceItemsTest, SaturatesNumbersPastInt64) {
  ASSERT_OK_AND_ASSIGN(auto items, ParseSliceItems("9223372036854775807:-9223372036854775808:"
                                                   "9223372036854775808, 9223372036854775806"));
  EXPECT_EQ(items[0].start, INT64_MAX);
  EXPECT_EQ(items[0].stop, INT64_MIN);
  EXPECT_EQ(items[0].step, INT64_MAX);
  EXPECT_EQ(items[1].start, INT64_MAX - 1);
  ASSERT_OK_AND_ASSIGN(items, ParseSliceItems("-99999999999999999999999:99999999999999999999999"));
  EXPECT_EQ(items[0].start, INT64_MIN);
  EXPECT_EQ(items[0].stop, INT64_MAX);
}

TEST(ParseSliceItemsTest, ChecksSyntaxWithoutAShape) {
  ASSERT_OK_AND_ASSIGN(std::vector<SliceItem> items, ParseSliceItems("10:20, ::2, -5, ..."));
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[0].kind, SliceItem::Kind::kRange);
  EXPECT_EQ(items[0].start, 10);
  EXPECT_EQ(items[0].stop, 20);
  EXPECT_FALSE(items[0].step.has_value());
  EXPECT_EQ(items[1].text, "::2");
  EXPECT_FALSE(items[1].start.has_value());
  EXPECT_EQ(items[1].step, 2);
  EXPECT_EQ(items[2].kind, SliceItem::Kind::kIndex);
  EXPECT_EQ(items[2].start, -5);
  EXPECT_EQ(items[3].kind, SliceItem::Kind::kEllipsis);
  // Shape-dependent checks wait for the shape.
  EXPECT_OK(ParseSliceItems("1,2,3,4,5,99"));
  EXPECT_CODE(ParseSliceItems("::0"), Code::kInvalidArgument);
  EXPECT_CODE(ParseSliceItems("1,,2"), Code::kInvalidArgument);
}

// A numpy-computed table (gen_slice_cases.py): ParseSlice selects exactly
// what numpy's basic indexing selects, an index keeping its dimension.
struct NumpyCase {
  const char* text;
  Dims shape;
  std::vector<Dim> want;
};

const std::vector<NumpyCase>& NumpyCases() {
  static const std::vector<NumpyCase> cases = {
#include "tests/engine/selection/slice_numpy_cases.inc"
  };
  return cases;
}

TEST(ParseSliceTest, MatchesNumpyOnRandomSlices) {
  ASSERT_GE(NumpyCases().size(), 300u);
  for (const NumpyCase& c : NumpyCases()) {
    auto s = ParseSlice(c.text, c.shape);
    ASSERT_TRUE(s.has_value()) << c.text << " on " << FormatDims(c.shape) << ": " << s.error().ToString();
    EXPECT_EQ(DimsOf(*s), c.want) << c.text << " on " << FormatDims(c.shape);
  }
}

TEST(FormatSliceTest, WritesHalfOpenRangesThatParseBack) {
  EXPECT_EQ(FormatSlice(Slab::Box({10, 0}, {10, 5})), "10:20, 0:5");
  Slab strided;
  strided.dims = {{.start = 10, .stride = 2, .count = 5, .block = 1},
                  {.start = 3, .stride = 1, .count = 1, .block = 1}};
  EXPECT_EQ(FormatSlice(strided), "10:19:2, 3:4");
  for (const NumpyCase& c : NumpyCases()) {
    ASSERT_OK_AND_ASSIGN(Slab s, ParseSlice(c.text, c.shape));
    if (s.num_elements() == 0) continue;
    std::string text = FormatSlice(s);
    auto again = ParseSlice(text, c.shape);
    ASSERT_TRUE(again.has_value()) << text << ": " << again.error().ToString();
    EXPECT_EQ(DimsOf(*again), DimsOf(s)) << c.text << " -> " << text;
  }
}

TEST(BoundingBoxTest, SpansFirstToLastIndex) {
  ASSERT_OK_AND_ASSIGN(Slab s, ParseSlice("10:20:3, 4, ::5, 2:2", {30, 6, 11, 5}));
  EXPECT_FALSE(IsBox(s));
  Slab b = BoundingBox(s);
  EXPECT_TRUE(IsBox(b));
  EXPECT_EQ(DimsOf(b), (std::vector<Dim>{{10, 1, 10}, {4, 1, 1}, {0, 1, 11}, {2, 1, 0}}));
  ASSERT_OK_AND_ASSIGN(Slab box, ParseSlice("1:3, 4, 7::100", {30, 6, 11}));
  EXPECT_TRUE(IsBox(box));
}

// The selected indices of one dimension, by brute force.
std::set<uint64_t> Indices(const DimSlab& d) {
  std::set<uint64_t> out;
  for (uint64_t i = 0; i < d.count; ++i) out.insert(d.start + i * d.stride);
  return out;
}

TEST(IntersectBoxTest, MatchesBruteForce) {
  std::mt19937_64 rng(5);
  auto pick = [&rng](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  int met = 0;
  for (int trial = 0; trial < 5000; ++trial) {
    const size_t rank = pick(1, 3);
    Slab sel;
    Dims start, count;
    for (size_t d = 0; d < rank; ++d) {
      uint64_t c = pick(0, 6);
      uint64_t stride = c > 1 ? pick(1, 5) : 1;
      sel.dims.push_back({.start = pick(0, 20), .stride = stride, .count = c, .block = 1});
      start.push_back(pick(0, 30));
      count.push_back(pick(1, 12));
    }
    std::optional<Slab> got = IntersectBox(sel, start, count);
    std::vector<std::set<uint64_t>> want(rank);
    bool empty = false;
    for (size_t d = 0; d < rank; ++d) {
      for (uint64_t i : Indices(sel.dims[d])) {
        if (i >= start[d] && i < start[d] + count[d]) want[d].insert(i);
      }
      empty = empty || want[d].empty();
    }
    for (size_t d = 0; d < rank && !empty; ++d) {
      ASSERT_TRUE(got.has_value()) << "trial " << trial;
      const DimSlab& g = got->dims[d];
      EXPECT_EQ(Indices(g), want[d]) << "trial " << trial << " dim " << d;
      EXPECT_EQ(g.block, 1u);
      if (g.count <= 1) {
        EXPECT_EQ(g.stride, 1u);
      }
    }
    if (empty) {
      EXPECT_FALSE(got.has_value()) << "trial " << trial;
    } else {
      ++met;
    }
  }
  EXPECT_GT(met, 500);
}

}  // namespace slice_test
}  // namespace
}  // namespace slabfs
