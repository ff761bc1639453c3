#include "fusefs/layout_edit.h"

#include <cstring>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "fusefs/layout_keeper.h"

namespace slabfs::fusefs {
namespace {

std::string Bytes(float f) {
  std::string s(sizeof f, '\0');
  std::memcpy(s.data(), &f, sizeof f);
  return s;
}

// A new file: 1-D u1, growable, holding `bytes` bytes.
DatasetInfo NewFile(uint64_t bytes) {
  DatasetInfo info;
  info.dtype = DType::kU1;
  info.shape = {bytes};
  info.max_shape = {kUnlimited};
  info.chunks = {1 << 20};
  info.fill = std::string(1, '\0');
  info.num_elements = bytes;
  info.size_bytes = bytes;
  info.length_resizable = true;
  return info;
}

// f4 100x8, rows growable to 1000, deflated, fill 1.5.
DatasetInfo Typed() {
  DatasetInfo info;
  info.dtype = DType::kF4;
  info.shape = {100, 8};
  info.max_shape = {1000, 8};
  info.chunks = {10, 8};
  info.fill = Bytes(1.5f);
  info.index = IndexKind::kExtensibleArray;
  info.num_elements = 800;
  info.size_bytes = 3200;
  info.length_resizable = true;
  info.filters = "shuffle,deflate=6";
  return info;
}

TEST(LayoutEditTest, KnowsTheLayoutFields) {
  for (const char* f : {"dtype", "shape", "maxshape", "chunks", "filters", "fill", "sparse", "index", "layout"}) {
    EXPECT_TRUE(IsLayoutField(f)) << f;
  }
  for (const char* f : {"stored", "defined", "", "Dtype", "colour"}) EXPECT_FALSE(IsLayoutField(f)) << f;
}

TEST(LayoutEditTest, ParsesEachField) {
  LayoutEdit e;
  ASSERT_TRUE(AddLayoutField("dtype", "f8", &e).ok());
  ASSERT_TRUE(AddLayoutField("shape", "10,20", &e).ok());
  ASSERT_TRUE(AddLayoutField("maxshape", "unlimited,20", &e).ok());
  ASSERT_TRUE(AddLayoutField("chunks", "5,20\n", &e).ok());  // setfattr may add a newline
  ASSERT_TRUE(AddLayoutField("filters", "none", &e).ok());
  ASSERT_TRUE(AddLayoutField("fill", "-2.5", &e).ok());
  ASSERT_TRUE(AddLayoutField("sparse", "yes", &e).ok());
  ASSERT_TRUE(AddLayoutField("index", "btree", &e).ok());
  EXPECT_EQ(e.dtype, DType::kF8);
  EXPECT_EQ(e.shape, (Dims{10, 20}));
  EXPECT_EQ(e.max_shape, (Dims{kUnlimited, 20}));
  EXPECT_EQ(e.chunks, (Dims{5, 20}));
  EXPECT_EQ(e.filters, "");
  EXPECT_EQ(e.fill, "-2.5");
  EXPECT_EQ(e.sparse, true);
  EXPECT_EQ(e.index, IndexKind::kBTree);
  EXPECT_FALSE(e.empty());
}

TEST(LayoutEditTest, RefusesBadValuesNamingTheField) {
  struct Case {
    const char* name;
    const char* value;
  };
  for (Case c : {Case{"dtype", "f3"}, Case{"dtype", ""}, Case{"shape", "-1,2"}, Case{"shape", "a"},
                 Case{"maxshape", "x"}, Case{"chunks", "0,4"}, Case{"chunks", "unlimited"}, Case{"sparse", "maybe"},
                 Case{"index", "tree"}, Case{"fill", ""}, Case{"stored", "5"}, Case{"colour", "red"}}) {
    LayoutEdit e;
    Status s = AddLayoutField(c.name, c.value, &e);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << c.name << "=" << c.value;
    EXPECT_NE(s.message().find(c.name), std::string::npos) << s.message();
    EXPECT_TRUE(e.empty()) << c.name;
  }
}

TEST(LayoutEditTest, ChecksEachValueOnItsOwn) {
  // What no other field can mend is refused at once: too many dimensions,
  // a filter pipeline that does not parse, a fill that is no number.
  struct Case {
    const char* name;
    const char* value;
  };
  std::string rank33 = "1";
  for (int i = 0; i < 32; ++i) rank33 += ",1";
  for (Case c : {Case{"shape", rank33.c_str()}, Case{"filters", "gzip=9"}, Case{"filters", "deflate=0"},
                 Case{"filters", "shuffle,shuffle"}, Case{"filters", "deflate=10"}, Case{"fill", "nan-ish"},
                 Case{"fill", "1,2"}}) {
    LayoutEdit e;
    Status s = AddLayoutField(c.name, c.value, &e);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << c.name << "=" << c.value;
    EXPECT_TRUE(e.empty()) << c.name << "=" << c.value;
  }
  // Combinations are left to ResolveLayout: chunks of another rank than
  // the shape, a fill the dtype cannot hold yet.
  for (Case c : {Case{"chunks", "8,16"}, Case{"fill", "-1.5"}, Case{"fill", "0x10"}, Case{"fill", "nan"},
                 Case{"filters", "shuffle,deflate:3,checksum"}, Case{"filters", "none"}}) {
    LayoutEdit e;
    EXPECT_TRUE(AddLayoutField(c.name, c.value, &e).ok()) << c.name << "=" << c.value;
  }
}

TEST(LayoutEditTest, CombinedLayoutIsAllOrNothing) {
  LayoutEdit e;
  ASSERT_TRUE(AddLayoutField("layout", " dtype=u2 ; shape=100,100;;chunks=10,10; sparse=1 ", &e).ok());
  EXPECT_EQ(e.dtype, DType::kU2);
  EXPECT_EQ(e.shape, (Dims{100, 100}));
  EXPECT_EQ(e.chunks, (Dims{10, 10}));
  EXPECT_EQ(e.sparse, true);
  EXPECT_FALSE(e.fill.has_value());

  for (const char* bad : {"dtype=u2;shape=oops", "dtype=u2;colour=red", "dtype", "layout=x", "", " ; "}) {
    LayoutEdit f;
    ASSERT_TRUE(AddLayoutField("dtype", "i4", &f).ok());
    EXPECT_EQ(AddLayoutField("layout", bad, &f).code(), Code::kInvalidArgument) << bad;
    EXPECT_EQ(f.dtype, DType::kI4) << bad;  // unchanged
    EXPECT_FALSE(f.shape.has_value()) << bad;
  }
}

TEST(LayoutEditTest, FormatLayoutReadsBack) {
  const DatasetInfo t = Typed();
  const std::string text = FormatLayout(t);
  EXPECT_EQ(text,
            "dtype=f4;shape=100,8;maxshape=1000,8;chunks=10,8;filters=shuffle,deflate=6;fill=1.5;sparse=0;"
            "index=extensible");
  LayoutEdit e;
  ASSERT_TRUE(AddLayoutField("layout", text, &e).ok());
  auto o = ResolveLayout(NewFile(3200), 3200, e);
  ASSERT_TRUE(o.has_value()) << o.error().message();
  EXPECT_TRUE(SameLayout(t, *o));
}

TEST(LayoutEditTest, DtypeAloneReinterpretsTheBytesOfA1DFile) {
  LayoutEdit e;
  ASSERT_TRUE(AddLayoutField("dtype", "f4", &e).ok());
  auto o = ResolveLayout(NewFile(400), 400, e);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->dtype, DType::kF4);
  EXPECT_EQ(o->shape, Dims{100});
  EXPECT_EQ(o->max_shape, Dims{kUnlimited});
  EXPECT_TRUE(o->fill.empty());  // the default, zero, when only the dtype changes

  auto odd = ResolveLayout(NewFile(401), 401, e);
  ASSERT_FALSE(odd.has_value());
  EXPECT_EQ(odd.error().code(), Code::kInvalidArgument);
}

TEST(LayoutEditTest, ShapeWithoutMaxShapeIsFixedExceptEmptyDimensions) {
  LayoutEdit e;
  ASSERT_TRUE(AddLayoutField("shape", "10,3", &e).ok());
  auto o = ResolveLayout(NewFile(30), 30, e);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->max_shape, (Dims{10, 3}));
  EXPECT_TRUE(o->chunks.empty());  // the geometry changed: chosen anew
  EXPECT_EQ(o->index, IndexKind::kAuto);

  LayoutEdit z;
  ASSERT_TRUE(AddLayoutField("shape", "0,3", &z).ok());
  o = ResolveLayout(NewFile(0), 0, z);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->max_shape, (Dims{kUnlimited, 3}));

  ASSERT_TRUE(AddLayoutField("maxshape", "50,3", &z).ok());
  o = ResolveLayout(NewFile(0), 0, z);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->max_shape, (Dims{50, 3}));
}

TEST(LayoutEditTest, FieldsNotGivenKeepTheCurrentLayout) {
  LayoutEdit e;
  ASSERT_TRUE(AddLayoutField("filters", "checksum", &e).ok());
  auto o = ResolveLayout(Typed(), 3200, e);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->dtype, DType::kF4);
  EXPECT_EQ(o->shape, (Dims{100, 8}));
  EXPECT_EQ(o->max_shape, (Dims{1000, 8}));
  EXPECT_EQ(o->chunks, (Dims{10, 8}));
  EXPECT_EQ(o->index, IndexKind::kExtensibleArray);
  EXPECT_EQ(o->fill, Bytes(1.5f));
  EXPECT_EQ(o->filters, "checksum");
  EXPECT_FALSE(SameLayout(Typed(), *o));

  LayoutEdit f;
  ASSERT_TRUE(AddLayoutField("fill", "-7", &f).ok());
  o = ResolveLayout(Typed(), 3200, f);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->fill, Bytes(-7.0f));

  LayoutEdit bad;
  EXPECT_FALSE(AddLayoutField("fill", "not-a-number", &bad).ok());  // no number at all
  ASSERT_TRUE(AddLayoutField("fill", "1e300", &bad).ok());          // a number; the dtype is checked later
  auto r = ResolveLayout(Typed(), 3200, bad);                       // f4 cannot hold it
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("fill"), std::string::npos);
}

TEST(LayoutEditTest, FitLayoutTakesTheSameSizeOrWholeRows) {
  const DatasetInfo t = Typed();  // rows of 32 bytes, at most 1000
  auto same = FitLayout(t, 3200);
  ASSERT_TRUE(same.has_value());
  EXPECT_TRUE(SameLayout(t, *same));

  auto more = FitLayout(t, 3200 + 64);
  ASSERT_TRUE(more.has_value());
  EXPECT_EQ(more->shape, (Dims{102, 8}));
  EXPECT_EQ(more->chunks, (Dims{10, 8}));
  EXPECT_EQ(more->filters, "shuffle,deflate=6");

  auto fewer = FitLayout(t, 32);
  ASSERT_TRUE(fewer.has_value());
  EXPECT_EQ(fewer->shape, (Dims{1, 8}));
  ASSERT_TRUE(FitLayout(t, 0).has_value());
  EXPECT_EQ(FitLayout(t, 0)->shape, (Dims{0, 8}));

  EXPECT_FALSE(FitLayout(t, 3201).has_value());       // not whole rows
  EXPECT_FALSE(FitLayout(t, 1001 * 32).has_value());  // past the max shape
  EXPECT_TRUE(FitLayout(t, 1000 * 32).has_value());

  DatasetInfo fixed = t;
  fixed.max_shape = fixed.shape;
  fixed.length_resizable = false;
  EXPECT_TRUE(FitLayout(fixed, 3200).has_value());
  EXPECT_FALSE(FitLayout(fixed, 3232).has_value());
}

TEST(LayoutEditTest, WithLengthOfTakesWholeRowsOfAGrowableLayout) {
  DatasetOptions o;
  o.dtype = DType::kI2;
  o.shape = {40, 16};
  o.max_shape = {kUnlimited, 16};
  o.chunks = {8, 16};
  auto grown = WithLengthOf(o, 42 * 32);
  ASSERT_TRUE(grown.has_value());
  EXPECT_EQ(grown->shape, (Dims{42, 16}));
  EXPECT_EQ(grown->chunks, (Dims{8, 16}));
  EXPECT_EQ(grown->length_resizable, true);
  EXPECT_FALSE(WithLengthOf(o, 42 * 32 + 2).has_value());  // not whole rows

  DatasetOptions capped = o;
  capped.max_shape = {50, 16};
  ASSERT_TRUE(WithLengthOf(capped, 50 * 32).has_value());
  EXPECT_EQ(WithLengthOf(capped, 50 * 32)->length_resizable, true);  // at the max, still growable
  EXPECT_FALSE(WithLengthOf(capped, 51 * 32).has_value());

  DatasetOptions fixed = o;
  fixed.max_shape = o.shape;
  EXPECT_FALSE(WithLengthOf(fixed, 42 * 32).has_value());
  fixed.max_shape.clear();
  EXPECT_FALSE(WithLengthOf(fixed, 42 * 32).has_value());
}

TEST(LayoutEditTest, DescribeLayoutForLogLines) {
  EXPECT_EQ(DescribeLayout(Typed()), "f4 100,8 (max 1000,8) shuffle,deflate=6");
  DatasetInfo s = NewFile(10);
  s.sparse = true;
  EXPECT_EQ(DescribeLayout(s), "u1 10 (max unlimited) sparse");
}

// ------------------------------------------------------------ LayoutKeeper

KeptLayout Kept(const char* path) {
  KeptLayout k;
  k.info = Typed();
  k.path = path;
  return k;
}

TEST(LayoutKeeperTest, CreatedFilesAreNewWhileOpenAndForTheWindow) {
  LayoutKeeper keeper(std::chrono::milliseconds(50));
  EXPECT_FALSE(keeper.IsNew(7));
  keeper.NoteCreated(1, "f", 7);
  EXPECT_TRUE(keeper.IsNew(7));
  keeper.Closed(7);
  EXPECT_TRUE(keeper.IsNew(7));
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  EXPECT_FALSE(keeper.IsNew(7));

  keeper.NoteCreated(1, "g", 8);
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  EXPECT_TRUE(keeper.IsNew(8));  // still open
  keeper.Settle(8);
  EXPECT_FALSE(keeper.IsNew(8));
}

TEST(LayoutKeeperTest, ANewFileTypedByItsFieldsStaysNewButIsNoLongerUntyped) {
  LayoutKeeper keeper(std::chrono::milliseconds(50));
  keeper.NoteCreated(1, "f", 7);
  EXPECT_TRUE(keeper.IsUntypedNew(7));
  keeper.MarkTyped(7);           // cp -a's user.slab.* fields applied
  EXPECT_TRUE(keeper.IsNew(7));  // more fields may still come
  EXPECT_FALSE(keeper.IsUntypedNew(7));
  keeper.Closed(7);
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  EXPECT_FALSE(keeper.IsNew(7));
  EXPECT_FALSE(keeper.IsUntypedNew(7));
  EXPECT_FALSE(keeper.IsUntypedNew(9));  // not created here
}

// An existing dataset emptied by O_TRUNC (cp -a over it) takes fields set
// after, like a new file, but is typed: its layout is kept like any
// dataset's, and a file already new keeps what it had.
TEST(LayoutKeeperTest, ADatasetEmptiedByOTruncIsNewAndTyped) {
  LayoutKeeper keeper(std::chrono::milliseconds(50));
  keeper.NoteTruncated(7);
  keeper.Opened(7);  // the open that truncated it
  EXPECT_TRUE(keeper.IsNew(7));
  EXPECT_FALSE(keeper.IsUntypedNew(7));
  EXPECT_FALSE(keeper.HasWork(7));
  EXPECT_TRUE(keeper.NeedsExactFit(7));  // its size is not what was written
  LayoutEdit e;
  ASSERT_TRUE(AddLayoutField("dtype", "u2", &e).ok());
  keeper.SetStaged(7, e);
  EXPECT_TRUE(keeper.HasWork(7));
  keeper.Closed(7);
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  EXPECT_FALSE(keeper.IsNew(7));

  keeper.Remember(1, "ds", Kept("/ds"));
  keeper.NoteCreated(1, "ds", 8);
  keeper.NoteTruncated(8);  // new already: unchanged
  EXPECT_TRUE(keeper.IsUntypedNew(8));
  EXPECT_FALSE(keeper.NeedsExactFit(8));
  EXPECT_TRUE(keeper.TakePending(8).has_value());
}

TEST(LayoutKeeperTest, ALayoutLeftAtANameGoesToTheNextFileCreatedThere) {
  LayoutKeeper keeper;
  keeper.Remember(1, "ds", Kept("/ds"));
  keeper.NoteCreated(1, "other", 5);
  EXPECT_FALSE(keeper.HasWork(5));
  keeper.NoteCreated(2, "ds", 6);  // another directory
  EXPECT_FALSE(keeper.HasWork(6));
  keeper.NoteCreated(1, "ds", 7);
  EXPECT_TRUE(keeper.HasWork(7));
  auto k = keeper.TakePending(7);
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->path, "/ds");
  EXPECT_FALSE(keeper.TakePending(7).has_value());
  keeper.KeepPending(7, std::move(*k));  // closed empty: it waits for a later close
  auto again = keeper.TakePending(7);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->path, "/ds");
  keeper.NoteCreated(1, "ds", 8);  // taken once only
  EXPECT_FALSE(keeper.HasWork(8));
}

TEST(LayoutKeeperTest, ALayoutLeftTooLongAgoIsNotUsed) {
  LayoutKeeper keeper(std::chrono::milliseconds(30));
  keeper.Remember(1, "ds", Kept("/ds"));
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  keeper.NoteCreated(1, "ds", 7);
  EXPECT_FALSE(keeper.HasWork(7));
}

TEST(LayoutKeeperTest, StagedFieldsBelongToNewFilesOnly) {
  LayoutKeeper keeper;
  LayoutEdit e;
  ASSERT_TRUE(AddLayoutField("dtype", "u2", &e).ok());
  keeper.SetStaged(9, e);  // not a new file: ignored
  EXPECT_TRUE(keeper.Staged(9).empty());
  keeper.NoteCreated(1, "n", 9);
  keeper.SetStaged(9, e);
  EXPECT_EQ(keeper.Staged(9).dtype, DType::kU2);
  EXPECT_TRUE(keeper.HasWork(9));
  keeper.Forget(9);
  EXPECT_TRUE(keeper.Staged(9).empty());
  EXPECT_FALSE(keeper.IsNew(9));
}

TEST(LayoutKeeperTest, RemembersANewFileTypedWhileEmpty) {
  LayoutKeeper keeper;
  keeper.MarkTypedWhileEmpty(3);  // not a new file: ignored
  EXPECT_FALSE(keeper.TypedWhileEmpty(3));
  keeper.NoteCreated(1, "t", 3);
  EXPECT_FALSE(keeper.TypedWhileEmpty(3));
  keeper.MarkTypedWhileEmpty(3);
  EXPECT_TRUE(keeper.TypedWhileEmpty(3));
  keeper.Forget(3);
  EXPECT_FALSE(keeper.TypedWhileEmpty(3));
}

}  // namespace
}  // namespace slabfs::fusefs
