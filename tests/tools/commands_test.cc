// Argument checking and value parsing shared by the slab subcommands.
#include "tools/commands.h"

#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tools/cmd_attr.h"
#include "tools/slab_app.h"

namespace slabfs::tools {
namespace {

bool Mentions(const Status& s, std::string_view text) { return s.message().find(text) != std::string::npos; }

TEST(CheckObjectPathTest, AcceptsAbsolutePaths) {
  EXPECT_TRUE(CheckObjectPath("/").ok());
  EXPECT_TRUE(CheckObjectPath("/a").ok());
  EXPECT_TRUE(CheckObjectPath("/a/b/c").ok());
}

TEST(CheckObjectPathTest, RejectsRelativeAndBadNames) {
  for (const char* p : {"", "a", "a/b", "/a/../b", "/a/./b", "/..", "/."}) {
    Status s = CheckObjectPath(p);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << "'" << p << "'";
  }
  EXPECT_TRUE(Mentions(CheckObjectPath("a/b"), "absolute"));
}

TEST(ParseDimsOptionTest, RejectsBadShapesNamingTheOption) {
  for (const char* text : {"", "0", "0,5", "-3", "a,b", "5,,5", "1.5", ","}) {
    auto dims = ParseDimsOption("--shape", text);
    ASSERT_FALSE(dims.has_value()) << "'" << text << "'";
    EXPECT_EQ(dims.error().code(), Code::kInvalidArgument);
    EXPECT_TRUE(Mentions(dims.error(), "--shape")) << dims.error().message();
  }
}

TEST(ParseDimsOptionTest, RejectsRankOver32) {
  std::string text = "1";
  for (int i = 0; i < kMaxRank; ++i) text += ",1";
  auto dims = ParseDimsOption("--shape", text);
  ASSERT_FALSE(dims.has_value());
  EXPECT_TRUE(Mentions(dims.error(), "32"));
}

TEST(ParseDimsOptionTest, ParsesShapes) {
  auto dims = ParseDimsOption("--shape", "2000,3,1");
  ASSERT_TRUE(dims.has_value()) << dims.error().ToString();
  EXPECT_EQ(*dims, (Dims{2000, 3, 1}));
}

TEST(MakeDatasetOptionsTest, RejectsChunksOfTheWrongRank) {
  auto o = MakeDatasetOptions(DType::kF4, {10, 10}, {.chunks = "5"});
  ASSERT_FALSE(o.has_value());
  EXPECT_EQ(o.error().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Mentions(o.error(), "rank"));
}

TEST(MakeDatasetOptionsTest, RejectsFillOutOfRange) {
  for (auto [t, text] : {std::pair{DType::kU1, "256"},
                         {DType::kU1, "-1"},
                         {DType::kI1, "128"},
                         {DType::kI4, "abc"},
                         {DType::kU8, "1e30"},
                         {DType::kI2, "1.5"}}) {
    auto o = MakeDatasetOptions(t, {4}, {.fill = text});
    ASSERT_FALSE(o.has_value()) << DTypeName(t) << " " << text;
    EXPECT_TRUE(Mentions(o.error(), "--fill")) << o.error().message();
  }
}

TEST(MakeDatasetOptionsTest, RejectsZeroDimension) {
  auto o = MakeDatasetOptions(DType::kU1, {4, 0}, {});
  ASSERT_FALSE(o.has_value());
  EXPECT_TRUE(Mentions(o.error(), "--maxshape")) << o.error().message();
  // A zero dimension that can grow is fine.
  auto growable = MakeDatasetOptions(DType::kU1, {0, 4}, {.max_shape = "unlimited,4"});
  ASSERT_TRUE(growable.has_value()) << growable.error().ToString();
  EXPECT_EQ(growable->max_shape, (Dims{kUnlimited, 4}));
}

TEST(MakeDatasetOptionsTest, ChecksMaxShapeAndIndex) {
  for (const char* bad : {"unlimited", "5,unlimited,3", "3,unlimited", "x,4", "0,4"}) {
    auto o = MakeDatasetOptions(DType::kU1, {4, 4}, {.max_shape = bad});
    ASSERT_FALSE(o.has_value()) << bad;
    EXPECT_EQ(o.error().code(), Code::kInvalidArgument);
    EXPECT_TRUE(Mentions(o.error(), "--maxshape")) << o.error().message();
  }
  auto bad_index = MakeDatasetOptions(DType::kU1, {4}, {.index = "hash"});
  ASSERT_FALSE(bad_index.has_value());
  EXPECT_TRUE(Mentions(bad_index.error(), "--index")) << bad_index.error().message();
  auto ok = MakeDatasetOptions(DType::kU1, {4, 4}, {.max_shape = "unlimited,8", .index = "btree"});
  ASSERT_TRUE(ok.has_value()) << ok.error().ToString();
  EXPECT_EQ(ok->index, IndexKind::kBTree);
  EXPECT_EQ(ok->max_shape, (Dims{kUnlimited, 8}));
}

TEST(MakeDatasetOptionsTest, EncodesFillAndChunks) {
  auto o = MakeDatasetOptions(DType::kI2, {100, 50}, {.chunks = "10,5", .fill = "-1"});
  ASSERT_TRUE(o.has_value()) << o.error().ToString();
  EXPECT_EQ(o->dtype, DType::kI2);
  EXPECT_EQ(o->shape, (Dims{100, 50}));
  EXPECT_EQ(o->chunks, (Dims{10, 5}));
  EXPECT_EQ(o->fill, std::string("\xff\xff", 2));
  auto none = MakeDatasetOptions(DType::kF8, {7}, {});
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->chunks.empty());
  EXPECT_TRUE(none->fill.empty());
}

FilterArgs Flags(bool shuffle, std::optional<std::string> deflate, bool checksum) {
  FilterArgs f;
  f.shuffle = shuffle;
  f.deflate = std::move(deflate);
  f.checksum = checksum;
  return f;
}

FilterArgs Text(std::string text) {
  FilterArgs f;
  f.filters = std::move(text);
  return f;
}

TEST(MakeFilterPipelineTest, FlagsGoInTheFixedOrder) {
  struct Case {
    FilterArgs args;
    const char* want;
  };
  for (const Case& c :
       {Case{Flags(false, std::nullopt, false), ""}, Case{Flags(true, std::nullopt, false), "shuffle"},
        Case{Flags(false, "1", false), "deflate=1"}, Case{Flags(false, std::nullopt, true), "checksum"},
        Case{Flags(true, "9", false), "shuffle,deflate=9"}, Case{Flags(true, std::nullopt, true), "shuffle,checksum"},
        Case{Flags(false, "6", true), "deflate=6,checksum"},
        Case{Flags(true, "6", true), "shuffle,deflate=6,checksum"}}) {
    auto p = MakeFilterPipeline(c.args);
    ASSERT_TRUE(p.has_value()) << c.want << ": " << p.error().ToString();
    EXPECT_EQ(*p, c.want);
    EXPECT_EQ(c.args.given(), *c.want != '\0');
  }
}

TEST(MakeFilterPipelineTest, RejectsBadLevelsNamingTheOption) {
  for (const char* level : {"0", "10", "x", "", "-1", "+5", " 5", "5.0", "99999999999999999999"}) {
    auto p = MakeFilterPipeline(Flags(false, level, false));
    ASSERT_FALSE(p.has_value()) << "'" << level << "'";
    EXPECT_EQ(p.error().code(), Code::kInvalidArgument);
    EXPECT_TRUE(Mentions(p.error(), "--deflate")) << p.error().message();
    EXPECT_TRUE(Mentions(p.error(), "1 to 9")) << p.error().message();
  }
}

TEST(MakeFilterPipelineTest, FiltersTextKeepsItsOrderInCanonicalForm) {
  struct Case {
    const char* text;
    const char* want;
  };
  for (const Case& c : {Case{"none", ""}, Case{"", ""}, Case{" none ", ""}, Case{"deflate", "deflate=6"},
                        Case{"checksum,shuffle", "checksum,shuffle"}, Case{"deflate=3, shuffle", "deflate=3,shuffle"},
                        Case{"shuffle,deflate=6,checksum", "shuffle,deflate=6,checksum"},
                        Case{"checksum,deflate=1", "checksum,deflate=1"}}) {
    auto p = MakeFilterPipeline(Text(c.text));
    ASSERT_TRUE(p.has_value()) << c.text << ": " << p.error().ToString();
    EXPECT_EQ(*p, c.want) << c.text;
  }
  EXPECT_TRUE(Text("none").given());
}

TEST(MakeFilterPipelineTest, RejectsBadFiltersText) {
  struct Case {
    const char* text;
    const char* reason;
  };
  for (const Case& c :
       {Case{"zstd", "unknown filter 'zstd'"}, Case{"shuffle,gzip", "'gzip'"}, Case{"deflate=0", "not 1 to 9"},
        Case{"deflate=10", "not 1 to 9"}, Case{"deflate=", "not 1 to 9"}, Case{"deflate=x", "'x'"},
        Case{"shuffle,shuffle", "twice"}, Case{"deflate,deflate=2", "twice"}, Case{"shuffle,,checksum", "empty"},
        Case{"shuffle,", "empty"}, Case{"none,shuffle", "none"}, Case{"Shuffle", "unknown"}}) {
    auto p = MakeFilterPipeline(Text(c.text));
    ASSERT_FALSE(p.has_value()) << c.text;
    EXPECT_EQ(p.error().code(), Code::kInvalidArgument);
    EXPECT_TRUE(Mentions(p.error(), "--filters")) << p.error().message();
    EXPECT_TRUE(Mentions(p.error(), c.reason)) << p.error().message();
  }
}

TEST(MakeFilterPipelineTest, FiltersExcludeTheFlags) {
  for (FilterArgs f : {Flags(true, std::nullopt, false), Flags(false, "5", false), Flags(false, std::nullopt, true)}) {
    f.filters = "checksum";
    auto p = MakeFilterPipeline(f);
    ASSERT_FALSE(p.has_value());
    EXPECT_TRUE(Mentions(p.error(), "--filters")) << p.error().message();
  }
}

TEST(MakeDatasetOptionsTest, CarriesTheFilterPipeline) {
  auto o = MakeDatasetOptions(DType::kF4, {10}, {.filters = Flags(true, "6", true)});
  ASSERT_TRUE(o.has_value()) << o.error().ToString();
  EXPECT_EQ(o->filters, "shuffle,deflate=6,checksum");
  auto none = MakeDatasetOptions(DType::kF4, {10}, {});
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->filters, "");
  auto bad = MakeDatasetOptions(DType::kF4, {10}, {.filters = Flags(false, "0", false)});
  ASSERT_FALSE(bad.has_value());
  EXPECT_TRUE(Mentions(bad.error(), "--deflate")) << bad.error().message();
}

TEST(MakeDatasetOptionsTest, CarriesSparse) {
  auto sparse = MakeDatasetOptions(DType::kU2, {10, 10}, {.sparse = true});
  ASSERT_TRUE(sparse.has_value()) << sparse.error().ToString();
  EXPECT_TRUE(sparse->sparse);
  auto dense = MakeDatasetOptions(DType::kU2, {10, 10}, {});
  ASSERT_TRUE(dense.has_value());
  EXPECT_FALSE(dense->sparse);
}

TEST(FormatRatioTest, TwoDecimalsOrADash) {
  EXPECT_EQ(FormatRatio(1000, 0), "-");
  EXPECT_EQ(FormatRatio(0, 0), "-");
  EXPECT_EQ(FormatRatio(1000, 1000), "1.00x");
  EXPECT_EQ(FormatRatio(342, 100), "3.42x");
  EXPECT_EQ(FormatRatio(100, 300), "0.33x");
  EXPECT_EQ(FormatRatio(16000000, 1), "16000000.00x");
}

TEST(MakeAttributeTest, InfersKindFromText) {
  auto i = MakeAttribute("1,2,3", false, "");
  ASSERT_TRUE(i.has_value());
  EXPECT_EQ(i->kind, Attribute::Kind::kNumeric);
  EXPECT_EQ(i->dtype, DType::kI8);
  EXPECT_EQ(i->count(), 3u);
  auto s = MakeAttribute("m/s", false, "");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->kind, Attribute::Kind::kString);
}

TEST(MakeAttributeTest, StringFlagKeepsNumbersAsText) {
  auto a = MakeAttribute("42", true, "");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->kind, Attribute::Kind::kString);
  EXPECT_EQ(a->data, "42");
}

TEST(MakeAttributeTest, DtypeEncodesEachValue) {
  auto a = MakeAttribute("1, 2,3", false, "u2");
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  EXPECT_EQ(a->dtype, DType::kU2);
  EXPECT_EQ(a->data, std::string("\x01\x00\x02\x00\x03\x00", 6));
  EXPECT_FALSE(MakeAttribute("1,300", false, "u1").has_value());
  EXPECT_FALSE(MakeAttribute("1,,2", false, "i4").has_value());
  EXPECT_FALSE(MakeAttribute("1", false, "c8").has_value());
}

TEST(MakeAttributeTest, RejectsOversizedValues) {
  std::string big(kMaxAttributeBytes + 1, 'x');
  auto a = MakeAttribute(big, true, "");
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().code(), Code::kInvalidArgument);
}

TEST(PathHelpersTest, ParentAndRoot) {
  EXPECT_EQ(ParentPath("/a"), "/");
  EXPECT_EQ(ParentPath("/a/b/c"), "/a/b");
  EXPECT_EQ(ParentPath("/a//b/"), "/a");
  EXPECT_TRUE(IsRootPath("/"));
  EXPECT_TRUE(IsRootPath("//"));
  EXPECT_FALSE(IsRootPath("/a"));
}

TEST(AddContextTest, PrefixesOnlyWhenMissing) {
  EXPECT_EQ(AddContext(Status::NotFound("no such object"), "/a").message(), "/a: no such object");
  EXPECT_EQ(AddContext(Status::NotFound("/a: no such object"), "/a").message(), "/a: no such object");
  EXPECT_TRUE(AddContext(Status::OK(), "/a").ok());
}

TEST(FailureLineTest, NamesCommandAndMessage) {
  EXPECT_EQ(FailureLine("mkdset", Status::AlreadyExists("/a/ds: already exists")),
            "slab: mkdset: /a/ds: already exists");
  EXPECT_EQ(FailureLine("ls", Status(Code::kCorruption, "")), fmt::format("slab: ls: {}", CodeName(Code::kCorruption)));
}

}  // namespace
}  // namespace slabfs::tools
