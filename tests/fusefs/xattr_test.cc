#include "fusefs/xattr.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace slabfs::fusefs {
namespace {

DatasetInfo SampleInfo() {
  DatasetInfo info;
  info.dtype = DType::kF4;
  info.shape = {200, 300};
  info.max_shape = {200, 300};
  info.chunks = {64, 64};
  float fill = 1.5f;
  info.fill.assign(reinterpret_cast<const char*>(&fill), sizeof fill);
  info.index = IndexKind::kFixedArray;
  info.stored_bytes = 12345;
  return info;
}

TEST(XattrTest, ClassifiesNamespaces) {
  EXPECT_EQ(ClassifyXattr("user.slab.dtype").space, XattrSpace::kSlab);
  EXPECT_EQ(ClassifyXattr("user.slab.dtype").name, "dtype");
  EXPECT_EQ(ClassifyXattr("user.units").space, XattrSpace::kUser);
  EXPECT_EQ(ClassifyXattr("user.units").name, "units");
  // "user.slab" itself (no dot after it) is an ordinary attribute name.
  EXPECT_EQ(ClassifyXattr("user.slab").space, XattrSpace::kUser);
  EXPECT_EQ(ClassifyXattr("user.slabby").space, XattrSpace::kUser);
  EXPECT_EQ(ClassifyXattr("security.selinux").space, XattrSpace::kOther);
  EXPECT_EQ(ClassifyXattr("system.posix_acl_access").space, XattrSpace::kOther);
  EXPECT_EQ(ClassifyXattr("trusted.x").space, XattrSpace::kOther);
}

TEST(XattrTest, DescribesADataset) {
  DatasetInfo info = SampleInfo();
  EXPECT_EQ(SlabXattrValue(info, "dtype").value(), "f4");
  EXPECT_EQ(SlabXattrValue(info, "shape").value(), "200,300");
  EXPECT_EQ(SlabXattrValue(info, "chunks").value(), "64,64");
  EXPECT_EQ(SlabXattrValue(info, "fill").value(), "1.5");
  EXPECT_EQ(SlabXattrValue(info, "stored").value(), "12345");
  EXPECT_TRUE(SlabXattrValue(info, "index").has_value());
}

TEST(XattrTest, FiltersAreNoneWithoutAPipeline) {
  DatasetInfo info = SampleInfo();
  ASSERT_TRUE(info.filters.empty());
  EXPECT_EQ(SlabXattrValue(info, "filters").value(), "none");
}

TEST(XattrTest, FiltersShowTheCanonicalPipeline) {
  DatasetInfo info = SampleInfo();
  info.filters = "shuffle,deflate=6,checksum";
  EXPECT_EQ(SlabXattrValue(info, "filters").value(), "shuffle,deflate=6,checksum");
  info.filters = "checksum";
  EXPECT_EQ(SlabXattrValue(info, "filters").value(), "checksum");
}

TEST(XattrTest, ListsFiltersWithTheOtherSlabNames) {
  const std::vector<std::string>& names = SlabXattrNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "user.slab.filters"), names.end());
  // Each name once.
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
}

TEST(XattrTest, UnknownSlabNameIsNotFound) {
  auto v = SlabXattrValue(SampleInfo(), "colour");
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code(), Code::kNotFound);
}

TEST(XattrTest, BadFillIsCorruptionNotACrash) {
  DatasetInfo info = SampleInfo();
  info.fill = "x";
  auto v = SlabXattrValue(info, "fill");
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code(), Code::kCorruption);
}

TEST(XattrTest, EveryListedNameHasAValue) {
  DatasetInfo info = SampleInfo();
  for (const std::string& full : SlabXattrNames()) {
    XattrName x = ClassifyXattr(full);
    ASSERT_EQ(x.space, XattrSpace::kSlab) << full;
    EXPECT_TRUE(SlabXattrValue(info, x.name, [] { return Result<uint64_t>(7); }).has_value()) << full;
  }
}

TEST(XattrTest, DefinedIsTheCountOfDefinedElements) {
  DatasetInfo info = SampleInfo();
  info.sparse = true;
  info.defined_elements = 3;  // as of the last write-back: the counter is asked
  int asked = 0;
  auto count = [&] {
    ++asked;
    return Result<uint64_t>(60000);
  };
  EXPECT_EQ(SlabXattrValue(info, "defined", count).value(), "60000");
  EXPECT_EQ(asked, 1);
}

TEST(XattrTest, DefinedIsCountedOnlyWhenAsked) {
  int asked = 0;
  auto count = [&] {
    ++asked;
    return Result<uint64_t>(1);
  };
  for (const char* name : {"dtype", "shape", "stored", "fill", "filters", "index", "chunks"}) {
    EXPECT_TRUE(SlabXattrValue(SampleInfo(), name, count).has_value()) << name;
  }
  EXPECT_EQ(asked, 0);
}

TEST(XattrTest, DefinedPassesCountErrorsOn) {
  auto v =
      SlabXattrValue(SampleInfo(), "defined", [] { return Result<uint64_t>(Err(Status::Corruption("chunk [1,2]"))); });
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.error().code(), Code::kCorruption);
}

TEST(XattrTest, ListsDefinedWithTheOtherSlabNames) {
  const std::vector<std::string>& names = SlabXattrNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "user.slab.defined"), names.end());
}

TEST(XattrTest, JoinsNamesWithNuls) {
  std::string joined = JoinXattrNames({"user.a", "user.bc"});
  EXPECT_EQ(joined, std::string("user.a\0user.bc\0", 15));
  EXPECT_EQ(JoinXattrNames({}), "");
}

TEST(XattrTest, TheRootShowsContainerFigures) {
  CacheStats c;
  c.hits = 5;
  c.misses = 2;
  c.budget_bytes = 64 << 20;
  SpaceInfo sp;
  sp.file_bytes = 4096;
  sp.held_bytes = 7;
  sp.generation = 9;
  auto cache = RootSlabXattrValue(c, sp, "cache");
  ASSERT_TRUE(cache.has_value());
  EXPECT_EQ(*cache,
            "hits=5 misses=2 bytes_read=0 bytes_written=0 evictions=0 bypass_reads=0 "
            "bypass_writes=0 extent_reads=0 resident_bytes=0 budget_bytes=67108864");
  EXPECT_EQ(RootSlabXattrValue(c, sp, "space").value(), "file_bytes=4096 free_bytes=0 held_bytes=7 objects=0");
  EXPECT_EQ(RootSlabXattrValue(c, sp, "generation").value(), "9");
  EXPECT_EQ(RootSlabXattrValue(c, sp, "dtype").error().code(), Code::kNotFound);
}

TEST(XattrTest, TheRootShowsTheLastRefusal) {
  const std::string line = "2026-11-26 10:00:00 write /a refused (EFBIG): out of range: /a: too long";
  EXPECT_EQ(RootSlabXattrValue({}, {}, "last_error", line).value(), line);
  EXPECT_EQ(RootSlabXattrValue({}, {}, "last_error").value(), "");
}

}  // namespace
}  // namespace slabfs::fusefs
