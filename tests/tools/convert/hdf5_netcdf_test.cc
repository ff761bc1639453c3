// The netCDF conventions: the JSON of _ARRAY_DIMENSIONS, which attributes
// are bookkeeping, and which datasets of an export become dimension scales
// (PlanDimensionScales against hand-worked cases).
#include "tools/convert/hdf5_netcdf.h"

#include <gtest/gtest.h>

namespace slabfs::tools::convert {
namespace {

using Names = std::vector<std::string>;

TEST(DimensionsJsonTest, RoundTripsAndRefusesAnythingButAListOfStrings) {
  EXPECT_EQ(DimensionsJson({"time", "lat", "lon"}), R"(["time","lat","lon"])");
  EXPECT_EQ(ParseDimensionsJson(R"(["time", "lat"])"), (Names{"time", "lat"}));
  EXPECT_EQ(ParseDimensionsJson("[]"), Names{});
  EXPECT_EQ(ParseDimensionsJson(R"(["a", 1])"), std::nullopt);
  EXPECT_EQ(ParseDimensionsJson(R"({"a": 1})"), std::nullopt);
  EXPECT_EQ(ParseDimensionsJson("time"), std::nullopt);
  EXPECT_EQ(ParseDimensionsJson(R"(["unterminated)"), std::nullopt);
}

TEST(DimensionBookkeepingTest, NamesNetcdfAndScaleAttributes) {
  for (const char* name :
       {"DIMENSION_LIST", "REFERENCE_LIST", "_Netcdf4Dimid", "_Netcdf4Coordinates", "_nc3_strict", "_NCProperties"}) {
    EXPECT_TRUE(IsDimensionBookkeeping(name, false)) << name;
  }
  EXPECT_TRUE(IsDimensionBookkeeping("CLASS", true));
  EXPECT_TRUE(IsDimensionBookkeeping("NAME", true));
  EXPECT_FALSE(IsDimensionBookkeeping("CLASS", false));  // PyTables uses it
  EXPECT_FALSE(IsDimensionBookkeeping("units", true));
  EXPECT_FALSE(IsDimensionBookkeeping("_FillValue", false));
  EXPECT_EQ(DimensionNameOfScale("_nc4_non_coord_lat"), "lat");
  EXPECT_EQ(DimensionNameOfScale("lat"), "lat");
}

DimensionUser User(std::string path, std::string group, Dims shape, std::optional<Names> dims, Dims max = {}) {
  return {std::move(path), std::move(group), shape, max.empty() ? shape : max, std::move(dims)};
}

TEST(PlanDimensionScalesTest, CoordinateVariablesAndPlaceholders) {
  const std::vector<DimensionUser> users = {
      User("/x", "/", {4}, Names{"x"}),             // 0: its own dimension
      User("/data", "/", {4, 3}, Names{"x", "y"}),  // 1: x and a placeholder y
      User("/g/sub", "/g", {4}, Names{"x"}),        // 2: x from the root
      User("/plain", "/", {4}, std::nullopt),       // 3: no names
  };
  ScalePlan plan = PlanDimensionScales(users, {"/", "/g"});
  EXPECT_EQ(plan.is_scale, (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(plan.named, (std::vector<bool>{true, true, true, false}));
  ASSERT_EQ(plan.placeholders.size(), 1u);
  EXPECT_EQ(plan.placeholders[0].path, "/y");
  EXPECT_EQ(plan.placeholders[0].length, 3u);
  EXPECT_FALSE(plan.placeholders[0].unlimited);
  EXPECT_EQ(plan.attach[1][0].kind, ScaleRef::Kind::kDataset);
  EXPECT_EQ(plan.attach[1][0].index, 0u);
  EXPECT_EQ(plan.attach[1][1].kind, ScaleRef::Kind::kPlaceholder);
  EXPECT_EQ(plan.attach[2][0].kind, ScaleRef::Kind::kDataset);
  EXPECT_EQ(plan.attach[0][0].kind, ScaleRef::Kind::kNone);  // a scale has none
}

TEST(PlanDimensionScalesTest, InconsistentNamesGiveNoScalesAtAll) {
  const std::vector<DimensionUser> users = {
      User("/x", "/", {4}, std::nullopt),          // 0: a scale when someone uses it
      User("/bad", "/", {5, 2}, Names{"x", "w"}),  // 1: x has length 4, not 5
      User("/z1", "/", {2}, Names{"z"}),           // 2: z is 2 here
      User("/z2", "/", {3}, Names{"z"}),           // 3: and 3 here
      User("/m", "/", {2, 2}, Names{"w", "w2"}),   // 4: fine on its own
      User("/grp", "/", {6}, Names{"g"}),          // 5: g is a group
      User("/d2", "/", {3}, Names{"d2x"}, {kUnlimited}),
      User("/d3", "/", {3}, Names{"d2x"}),  // 7: unlimited in one, fixed in the other
  };
  ScalePlan plan = PlanDimensionScales(users, {"/", "/g"});
  EXPECT_EQ(plan.named, (std::vector<bool>{false, false, false, false, true, false, false, false}));
  EXPECT_EQ(plan.is_scale, (std::vector<bool>(8, false)));
  // /bad asked for w but got no scales, so only /m's placeholders exist.
  ASSERT_EQ(plan.placeholders.size(), 2u);
  EXPECT_EQ(plan.placeholders[0].path, "/w");
  EXPECT_EQ(plan.placeholders[1].path, "/w2");
  for (const ScaleRef& r : plan.attach[1]) EXPECT_EQ(r.kind, ScaleRef::Kind::kNone);
}

TEST(PlanDimensionScalesTest, UnlimitedDimensionsMayDifferInLength) {
  const std::vector<DimensionUser> users = {
      User("/time", "/", {5}, Names{"time"}, {kUnlimited}),
      User("/temp", "/", {3, 2}, Names{"time", "n"}, {kUnlimited, 2}),
      User("/rain", "/", {4, 2}, Names{"rec", "n"}, {kUnlimited, 2}),
      User("/snow", "/", {7}, Names{"rec"}, {kUnlimited}),
  };
  ScalePlan plan = PlanDimensionScales(users, {"/"});
  EXPECT_EQ(plan.named, (std::vector<bool>{true, true, true, true}));
  EXPECT_EQ(plan.is_scale, (std::vector<bool>{true, false, false, false}));
  ASSERT_EQ(plan.placeholders.size(), 2u);
  EXPECT_EQ(plan.placeholders[0].path, "/n");
  EXPECT_EQ(plan.placeholders[1].path, "/rec");
  EXPECT_TRUE(plan.placeholders[1].unlimited);
  EXPECT_EQ(plan.placeholders[1].length, 7u);  // the longest
}

TEST(PlanDimensionScalesTest, TheNearestDatasetOfTheNameDecides) {
  const std::vector<DimensionUser> users = {
      User("/x", "/", {4}, std::nullopt),
      User("/g/x", "/g", {2, 2}, std::nullopt),  // shadows /x for /g, and is not 1-D
      User("/g/v", "/g", {4}, Names{"x"}),
      User("/h/v", "/h", {4}, Names{"x"}),
  };
  ScalePlan plan = PlanDimensionScales(users, {"/", "/g", "/h"});
  EXPECT_EQ(plan.named, (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(plan.is_scale, (std::vector<bool>{true, false, false, false}));
  EXPECT_TRUE(plan.placeholders.empty());
}

}  // namespace
}  // namespace slabfs::tools::convert
