// View names, the layout of a view's bytes, and the element boxes a byte
// range covers (the daemon's views; test_mount_views.py mounts them).
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fusefs/views/view_layout.h"
#include "fusefs/views/view_name.h"
#include "fusefs/views/view_table.h"

namespace slabfs::fusefs::views {
namespace {

TEST(ViewNameTest, TheForms) {
  auto v = ParseViewName("ds[0:10, ::2]");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->dataset, "ds");
  EXPECT_EQ(v->slice, "0:10, ::2");
  EXPECT_EQ(v->kind, ViewKind::kRaw);
  v = ParseViewName("ds.npy");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->dataset, "ds");
  EXPECT_FALSE(v->slice.has_value());
  EXPECT_EQ(v->kind, ViewKind::kNpy);
  v = ParseViewName("a.b[...,-1].txt");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->dataset, "a.b");
  EXPECT_EQ(v->slice, "...,-1");
  EXPECT_EQ(v->kind, ViewKind::kText);
  v = ParseViewName("ds[]");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->slice, "");  // a view name; the slice is refused later
  for (const char* not_a_view : {"ds", "ds.csv", "[1]", ".npy", "ds]", "ds[1].bin", ""}) {
    EXPECT_FALSE(ParseViewName(not_a_view).has_value()) << not_a_view;
  }
}

DatasetInfo Info(DType t, Dims shape) {
  DatasetInfo i;
  i.dtype = t;
  i.shape = i.max_shape = shape;
  return i;
}

TEST(ViewLayoutTest, SizesOfEachKind) {
  auto raw = ResolveView(ViewKind::kRaw, std::string("1:3, ::2"), Info(DType::kF4, {6, 10}));
  ASSERT_TRUE(raw.has_value());
  EXPECT_EQ(raw->shape, (Dims{2, 5}));
  EXPECT_EQ(raw->size_bytes, 40u);
  auto npy = ResolveView(ViewKind::kNpy, std::nullopt, Info(DType::kU2, {3, 4}));
  ASSERT_TRUE(npy.has_value());
  EXPECT_EQ(npy->header.size() % 64, 0u);
  EXPECT_EQ(npy->size_bytes, npy->header.size() + 24);
  auto txt = ResolveView(ViewKind::kText, std::nullopt, Info(DType::kI4, {3, 4}));
  ASSERT_TRUE(txt.has_value());
  EXPECT_EQ(txt->row_elements, 4u);
  EXPECT_EQ(txt->size_bytes, 12u * (FieldWidth(DType::kI4) + 1));
  auto bad = ResolveView(ViewKind::kRaw, std::string("7"), Info(DType::kF4, {6, 10}));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), Code::kInvalidArgument);
}

TEST(ViewLayoutTest, FieldsHaveOneWidthAndReadBack) {
  auto field = [](DType t, auto v) {
    char b[8];
    std::memcpy(b, &v, sizeof v);
    return FormatField(t, b);
  };
  EXPECT_EQ(field(DType::kI1, int8_t{-128}), "-128");
  EXPECT_EQ(field(DType::kU8, uint64_t{18446744073709551615u}), "18446744073709551615");
  EXPECT_EQ(field(DType::kI4, int32_t{-7}), "         -7");
  EXPECT_EQ(field(DType::kF4, -3.0e38f).size(), FieldWidth(DType::kF4));
  EXPECT_EQ(std::stof(field(DType::kF4, 0.1f)), 0.1f);
  EXPECT_EQ(std::stod(field(DType::kF8, -2.2250738585072014e-308)), -2.2250738585072014e-308);
  EXPECT_EQ(field(DType::kF8, -1.7976931348623157e308).size(), FieldWidth(DType::kF8));
  EXPECT_EQ(field(DType::kF4, std::numeric_limits<float>::quiet_NaN()).find("nan") != std::string::npos, true);
  EXPECT_EQ(field(DType::kF8, -std::numeric_limits<double>::infinity()), std::string(20, ' ') + "-inf");
}

// Every element of the view, in C order, appears once, where it should.
TEST(ViewLayoutTest, ElementBoxesCoverTheRangeInOrder) {
  auto v = ResolveView(ViewKind::kRaw, std::string("1:9:2, 2:, ::3"), Info(DType::kU1, {10, 7, 8}));
  ASSERT_TRUE(v.has_value());
  ASSERT_EQ(v->shape, (Dims{4, 5, 3}));
  // The dataset index of view element k, directly.
  auto index_of = [&](uint64_t k) {
    const uint64_t a = k / 15, b = (k / 3) % 5, c = k % 3;
    return Dims{1 + 2 * a, 2 + b, 3 * c};
  };
  for (uint64_t first = 0; first < 60; first += 7) {
    for (uint64_t count : {1, 2, 3, 5, 14, 15, 16, 31, 60}) {
      if (first + count > 60) continue;
      std::vector<int> seen(count, 0);
      Status s = ForEachElementBox(*v, first, count, [&](const Slab& sub, uint64_t offset) {
        uint64_t k = offset;
        for (uint64_t i = 0; i < sub.dims[0].count; ++i)
          for (uint64_t j = 0; j < sub.dims[1].count; ++j)
            for (uint64_t l = 0; l < sub.dims[2].count; ++l, ++k) {
              const Dims want = index_of(first + k);
              const Dims got{sub.dims[0].start + i * sub.dims[0].stride, sub.dims[1].start + j * sub.dims[1].stride,
                             sub.dims[2].start + l * sub.dims[2].stride};
              EXPECT_EQ(got, want) << first << "+" << count << " at " << k;
              ++seen[k];
            }
        return Status::OK();
      });
      ASSERT_TRUE(s.ok());
      for (uint64_t k = 0; k < count; ++k) ASSERT_EQ(seen[k], 1) << first << "+" << count << " " << k;
    }
  }
}

TEST(ViewTableTest, InodesComeAndGo) {
  ViewTable t;
  const ViewRef a{5, ViewKind::kNpy, std::nullopt}, b{5, ViewKind::kRaw, std::string("1:2")};
  const uint64_t ia = t.Lookup(a);
  EXPECT_TRUE(IsViewIno(ia));
  EXPECT_EQ(t.Lookup(a), ia);  // the same view, the same inode
  const uint64_t ib = t.Lookup(b);
  EXPECT_NE(ia, ib);
  EXPECT_EQ(t.Find(ib)->slice, "1:2");
  t.Forget(ia, 1);
  EXPECT_TRUE(t.Find(ia).has_value());
  t.Forget(ia, 1);
  EXPECT_FALSE(t.Find(ia).has_value());
  EXPECT_EQ(t.size(), 1u);
  EXPECT_FALSE(IsViewIno(12345));
}

}  // namespace
}  // namespace slabfs::fusefs::views
