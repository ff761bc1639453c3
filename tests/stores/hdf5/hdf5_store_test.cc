// The HDF5 store against h5py: files made by h5py and netCDF4 in the test
// (make_fixtures.py), every dataset read through the store and compared
// byte for byte with what h5py reads; what the store cannot read is
// skipped by name; damaged files and chunks are errors, never crashes.
#include "stores/hdf5/hdf5_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "engine/cache/chunk_cache.h"
#include "stores/hdf5/hdf5_dataset.h"
#include "tests/stores/store_fixtures.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::stores {
namespace {

namespace fs = std::filesystem;

using testutil::BoxOf;
using testutil::ReadWhole;

using Hdf5StoreTest = testutil::StoreFixtureSuite<::testing::Test>;

TEST_F(Hdf5StoreTest, ReadsEveryDatasetAsH5pyDoes) {
  std::mt19937_64 rng(42);
  int checked = 0;
  for (const auto& f : Manifest("read")) {
    SCOPED_TRACE(f[1] + " " + f[2]);
    ASSERT_OK_AND_ASSIGN(auto store, OpenHdf5Store(File(f[1])));
    ASSERT_OK_AND_ASSIGN(auto ds, store->OpenDataset(std::string_view(f[2])));
    const DatasetInfo& info = ds->info().dataset;
    EXPECT_EQ(DTypeName(info.dtype), f[3]);
    ASSERT_OK_AND_ASSIGN(Dims shape, ParseDims(f[4], false, true));
    ASSERT_EQ(info.shape, shape);
    const std::string expected = ReadWhole(*dir_ / f[5]);
    const size_t item = ItemSize(info.dtype);
    ASSERT_EQ(expected.size(), info.size_bytes);
    EXPECT_EQ(ds->info().dataset.allocated_chunks, std::stoull(f[6]));

    // Whole, twice (the second time partly from the cache when it holds chunks).
    for (int pass = 0; pass < 2; ++pass) {
      std::string got(expected.size(), '\x5a');
      ASSERT_OK(ds->Read(Slab::All(shape), got.data()));
      EXPECT_TRUE(got == expected) << "pass " << pass;
    }
    if (info.num_elements == 0) continue;
    // Random boxes, partial chunks included.
    for (int i = 0; i < 20; ++i) {
      Dims start(shape.size()), count(shape.size());
      for (size_t d = 0; d < shape.size(); ++d) {
        start[d] = rng() % shape[d];
        count[d] = 1 + rng() % (shape[d] - start[d]);
      }
      std::string got(BoxOf(expected, shape, start, count, item).size(), '\0');
      ASSERT_OK(ds->Read(Slab::Box(start, count), got.data()));
      EXPECT_TRUE(got == BoxOf(expected, shape, start, count, item)) << "box " << i;
    }
    // A strided selection into the middle of a larger memory array.
    {
      Slab sel = Slab::All(shape);
      Dims mem_shape = shape;
      sel.dims[0] = {0, 2, (shape[0] + 1) / 2, 1};
      mem_shape[0] = sel.dims[0].count + 2;
      MemSpace mem{mem_shape, Slab::All(mem_shape)};
      mem.selection.dims[0] = {1, 1, sel.dims[0].count, 1};
      uint64_t row = item;
      for (size_t d = 1; d < shape.size(); ++d) row *= shape[d];
      std::string got(mem_shape[0] * row, '\x77');
      ASSERT_OK(ds->Read(sel, got.data(), &mem));
      for (uint64_t r = 0; r < sel.dims[0].count; ++r)
        EXPECT_EQ(got.substr((r + 1) * row, row), expected.substr(2 * r * row, row)) << "row " << 2 * r;
      EXPECT_EQ(got.substr(0, row), std::string(row, '\x77'));
    }
    // Elements in C order across rows.
    const uint64_t first = info.num_elements / 3, count = info.num_elements - first - info.num_elements / 5;
    std::string elems(count * item, '\0');
    ASSERT_OK(ds->ReadElements(first, count, elems.data()));
    EXPECT_TRUE(elems == expected.substr(first * item, count * item));
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

TEST_F(Hdf5StoreTest, SkipsWhatItCannotReadByName) {
  ASSERT_OK_AND_ASSIGN(auto store, OpenHdf5Store(File("basic.h5")));
  const std::vector<SkippedObject> skipped = store->Skipped();
  for (const auto& f : Manifest("skip")) {
    SCOPED_TRACE(f[2]);
    EXPECT_CODE(store->Resolve(f[3]), Code::kNotFound);
    bool listed = false;
    for (const SkippedObject& s : skipped) listed = listed || (s.path == f[2] && !s.reason.empty());
    EXPECT_TRUE(listed);
  }
  std::string all;
  for (const SkippedObject& s : skipped) all += s.path + ": " + s.reason + "\n";
  EXPECT_NE(all.find("/strings: variable-length string"), std::string::npos) << all;
  EXPECT_NE(all.find("/lzf: filter lzf"), std::string::npos) << all;
  EXPECT_NE(all.find("/compound: compound"), std::string::npos) << all;
  EXPECT_NE(all.find("/soft: a soft link"), std::string::npos) << all;
}

TEST_F(Hdf5StoreTest, ShowsTheTreeAndAttributes) {
  ASSERT_OK_AND_ASSIGN(auto store, OpenHdf5Store(File("basic.h5")));
  EXPECT_EQ(store->format(), "hdf5");
  ASSERT_OK_AND_ASSIGN(std::vector<Entry> root, store->List(kRootId));
  std::vector<std::string> names;
  for (const Entry& e : root) names.push_back(e.name);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_NE(std::find(names.begin(), names.end(), "g"), names.end());
  ASSERT_OK_AND_ASSIGN(ObjectId g, store->Resolve("/g"));
  ASSERT_OK_AND_ASSIGN(ObjectInfo gi, store->Stat(g));
  EXPECT_EQ(gi.kind, ObjectKind::kGroup);
  EXPECT_EQ(gi.num_children, 3u);  // sub, r3, r4
  ASSERT_OK_AND_ASSIGN(ObjectId r1, store->Resolve("/g/sub/r1"));
  EXPECT_EQ(store->PathOf(r1).value(), "/g/sub/r1");
  EXPECT_CODE(store->List(r1), Code::kNotAGroup);
  EXPECT_CODE(store->OpenDataset(g), Code::kNotADataset);

  ASSERT_OK_AND_ASSIGN(Attribute title, store->GetAttribute(kRootId, "title"));
  EXPECT_EQ(title.ToText(), "store fixtures");
  ASSERT_OK_AND_ASSIGN(Attribute numbers, store->GetAttribute(kRootId, "numbers"));
  EXPECT_EQ(numbers.ToText(), "1,2,3");
  ASSERT_OK_AND_ASSIGN(ObjectId ds, store->Resolve("/deflate_shuffle"));
  EXPECT_EQ(store->GetAttribute(ds, "units").value().ToText(), "K");
  EXPECT_CODE(store->GetAttribute(ds, "nope"), Code::kNotFound);

  ASSERT_OK_AND_ASSIGN(auto d, store->OpenDataset(ds));
  EXPECT_EQ(d->info().layout, StoreLayout::kChunked);
  EXPECT_EQ(d->info().source_filters, "shuffle,deflate=4");
  EXPECT_EQ(d->info().dataset.filters, "shuffle,deflate=4");
  EXPECT_EQ(d->info().dataset.chunks, (Dims{32, 16}));
  ASSERT_OK_AND_ASSIGN(auto be, store->OpenDataset(std::string_view("/big_endian")));
  EXPECT_EQ(be->info().source_dtype, ">f8");
  ASSERT_OK_AND_ASSIGN(auto fl, store->OpenDataset(std::string_view("/fletcher_deflate")));
  EXPECT_EQ(fl->info().source_filters, "deflate=4,fletcher32");
  EXPECT_EQ(fl->info().dataset.filters, "deflate=4,checksum");
  ASSERT_OK_AND_ASSIGN(auto sc, store->OpenDataset(std::string_view("/scalar")));
  EXPECT_TRUE(sc->info().scalar);
  EXPECT_EQ(sc->info().layout, StoreLayout::kContiguous);
  ASSERT_OK_AND_ASSIGN(auto rs, store->OpenDataset(std::string_view("/resizable")));
  EXPECT_EQ(rs->info().dataset.max_shape, (Dims{kUnlimited, 8}));
  EXPECT_TRUE(rs->info().dataset.length_resizable);
}

TEST_F(Hdf5StoreTest, ReportsStoredChunksAndDefinedBoxes) {
  ASSERT_OK_AND_ASSIGN(auto store, OpenHdf5Store(File("basic.h5")));
  ASSERT_OK_AND_ASSIGN(auto sp, store->OpenDataset(std::string_view("/sparse")));
  ASSERT_OK_AND_ASSIGN(std::vector<StoredChunk> chunks, sp->StoredChunks());
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].coords, (Dims{0, 0}));
  EXPECT_EQ(chunks[1].coords, (Dims{2, 3}));
  ASSERT_OK_AND_ASSIGN(std::vector<Box> boxes, sp->Defined(Slab::Box({5, 5}, {30, 35})));
  ASSERT_EQ(boxes.size(), 2u);
  EXPECT_EQ(boxes[0], (Box{{5, 5}, {5, 5}}));
  EXPECT_EQ(boxes[1], (Box{{20, 30}, {10, 10}}));
  ASSERT_OK_AND_ASSIGN(auto none, store->OpenDataset(std::string_view("/contiguous_unwritten")));
  EXPECT_TRUE(none->Defined(Slab::All({10})).value().empty());
  EXPECT_EQ(none->info().dataset.fill, std::string("\xf9\xff", 2));  // -7
}

TEST_F(Hdf5StoreTest, ReadsNetcdfAsTheImportDoes) {
  ASSERT_OK_AND_ASSIGN(auto store, OpenHdf5Store(File("netcdf.nc")));
  for (const auto& f : Manifest("gone")) EXPECT_CODE(store->Resolve(f[2]), Code::kNotFound);
  for (const SkippedObject& s : store->Skipped()) ADD_FAILURE() << "skipped " << s.path << ": " << s.reason;
  ASSERT_OK_AND_ASSIGN(ObjectId temp, store->Resolve("/temp"));
  EXPECT_EQ(store->GetAttribute(temp, "_ARRAY_DIMENSIONS").value().ToText(), R"(["time","lat","lon"])");
  EXPECT_EQ(store->GetAttribute(temp, "units").value().ToText(), "K");
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> attrs, store->ListAttributes(temp));
  for (const std::string& a : attrs) {
    EXPECT_NE(a, "DIMENSION_LIST");
    EXPECT_NE(a, "_Netcdf4Coordinates");
  }
  ASSERT_OK_AND_ASSIGN(ObjectId x, store->Resolve("/x"));
  EXPECT_EQ(store->GetAttribute(x, "_ARRAY_DIMENSIONS").value().ToText(), R"(["lat"])");
  ASSERT_OK_AND_ASSIGN(ObjectId lat, store->Resolve("/lat"));
  EXPECT_EQ(store->GetAttribute(lat, "_ARRAY_DIMENSIONS").value().ToText(), R"(["lat"])");
  EXPECT_CODE(store->GetAttribute(lat, "CLASS"), Code::kNotFound);
  EXPECT_CODE(store->GetAttribute(kRootId, "_NCProperties"), Code::kNotFound);
  EXPECT_EQ(store->GetAttribute(kRootId, "title").value().ToText(), "netcdf fixture");
}

TEST_F(Hdf5StoreTest, DamagedChunksAreCorruptionNamingTheChunk) {
  for (const char* name : {"bad_inflate.h5", "bad_fletcher.h5"}) {
    SCOPED_TRACE(name);
    ASSERT_OK_AND_ASSIGN(auto store, OpenHdf5Store(File(name)));
    ASSERT_OK_AND_ASSIGN(auto ds, store->OpenDataset(std::string_view("/d")));
    std::string buf(64 * 64 * 4, '\0');
    Status s = ds->Read(Slab::All({64, 64}), buf.data());
    ASSERT_EQ(s.code(), Code::kCorruption) << s.ToString();
    EXPECT_NE(s.message().find("dataset /d chunk [0,1]"), std::string::npos) << s.ToString();
    if (std::string(name) == "bad_fletcher.h5") {
      EXPECT_NE(s.message().find("Fletcher-32"), std::string::npos) << s.ToString();
    }
    // The other chunks still read.
    std::string one(16 * 16 * 4, '\0');
    ASSERT_OK(ds->Read(Slab::Box({16, 16}, {16, 16}), one.data()));
    int32_t v;
    std::memcpy(&v, one.data(), 4);
    EXPECT_EQ(v, 16 * 64 + 16);
  }
}

TEST_F(Hdf5StoreTest, BadFilesAreErrorsNotCrashes) {
  EXPECT_CODE(OpenHdf5Store(File("truncated.h5")), Code::kCorruption);
  EXPECT_CODE(OpenHdf5Store(File("not_hdf5.h5")), Code::kCorruption);
  EXPECT_CODE(OpenHdf5Store(File("no_such_file.h5")), Code::kNotFound);
  EXPECT_CODE(OpenHdf5Store(dir_->string()), Code::kInvalidArgument);  // a directory
}

TEST_F(Hdf5StoreTest, ChunkRecordsPastTheEndOfTheFileAreCorruption) {
  // A chunk map that names bytes the file does not have (as a damaged
  // index or a file cut short after libhdf5 checked it would).
  ASSERT_OK_AND_ASSIGN(auto file, SourceFile::Open(File("basic.h5")));
  auto layout = std::make_shared<DatasetLayout>();
  layout->path = "/made_up";
  layout->item_size = 4;
  layout->chunk = {4};
  layout->info.dataset.dtype = DType::kI4;
  layout->info.dataset.shape = {8};
  layout->info.dataset.num_elements = 8;
  layout->info.dataset.size_bytes = 32;
  layout->info.dataset.fill = std::string(4, '\0');
  layout->keys = {0, 1};
  layout->records = {{file->size() - 8, 16, 0}, {UINT64_MAX - 4, 16, 0}};
  auto cache = std::make_shared<engine::ChunkCache>(1 << 20, 1 << 20);
  Hdf5Dataset ds(layout, file, cache, 1);
  std::string buf(32, '\0');
  for (uint64_t c : {0, 1}) {
    Status s = ds.Read(Slab::Box({c * 4}, {4}), buf.data());
    ASSERT_EQ(s.code(), Code::kCorruption) << s.ToString();
    EXPECT_NE(s.message().find("past the end of the file"), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("chunk [" + std::to_string(c) + "]"), std::string::npos) << s.ToString();
  }
  // A filtered chunk whose stored size cannot be the chunk's.
  ASSERT_OK_AND_ASSIGN(layout->pipeline, Hdf5Pipeline::Make({{Hdf5Filter::Kind::kDeflate, 4, 1}}));
  layout->records = {{0, uint64_t{1} << 40, 0}, {0, 0, 0}};
  Hdf5Dataset filtered(layout, file, cache, 2);
  for (uint64_t c : {0, 1}) EXPECT_CODE(filtered.Read(Slab::Box({c * 4}, {4}), buf.data()), Code::kCorruption);
}

TEST_F(Hdf5StoreTest, ContiguousDatasetsNeverFillTheCache) {
  ASSERT_OK_AND_ASSIGN(auto store, OpenHdf5Store(File("basic.h5"), {.cache_bytes = 4096}));
  for (const char* path : {"/contiguous", "/deflate_shuffle", "/g/r4"}) {
    ASSERT_OK_AND_ASSIGN(auto ds, store->OpenDataset(std::string_view(path)));
    std::string buf(ds->info().dataset.size_bytes, '\0');
    ASSERT_OK(ds->Read(Slab::All(ds->info().dataset.shape), buf.data()));
    EXPECT_LE(store->cache_stats().resident_bytes, 4096u + 32 * 16 * 4) << path;
  }
}

}  // namespace
}  // namespace slabfs::stores
