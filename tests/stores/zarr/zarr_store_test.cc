// The Zarr store on stores zarr-python makes (and v3 stores written by
// hand): every array read byte for byte as zarr-python reads it, whole and
// box by box; what it cannot hold skipped by name; attributes as the
// import maps them; damaged chunk files refused as Corruption naming the
// store, array and chunk key while the rest still reads; the cache bound.
// What every store does is checked by store_conformance_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "slabfs/store.h"
#include "stores/open_store.h"
#include "stores/zarr/zarr_store.h"
#include "tests/stores/store_fixtures.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::stores {
namespace {

namespace fs = std::filesystem;

Dims ParseDims(const std::string& s) {
  Dims out;
  for (size_t at = 0;;) {
    const size_t comma = s.find(',', at);
    out.push_back(std::stoull(s.substr(at, comma - at)));
    if (comma == std::string::npos) return out;
    at = comma + 1;
  }
}

class ZarrStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path;
    char tmpl[] = "/tmp/slabfs-zarrfix-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return;
    *dir_ = tmpl;
    const std::string cmd = std::string(SLABFS_PYTHON3) + " " + SLABFS_SOURCE_DIR +
                            "/tests/stores/zarr/make_fixtures.py " + (*dir_ / "f").string();
    const int rc = std::system(cmd.c_str());
    status_ = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(*dir_, ec);
    delete dir_;
  }
  void SetUp() override {
    if (status_ == 77) GTEST_SKIP() << "zarr, numcodecs or numpy is missing";
    ASSERT_EQ(status_, 0) << "make_fixtures.py failed";
  }
  static fs::path Fixtures() { return *dir_ / "f"; }
  static std::vector<std::vector<std::string>> Lines(const std::string& kind) {
    return testutil::StoreManifest(Fixtures(), kind);
  }
  const Store& StoreOf(const std::string& name, uint64_t cache_bytes = 64ull << 20) {
    auto it = stores_.find(name);
    if (it == stores_.end()) {
      auto s = OpenZarrStore((Fixtures() / name).string(), {.cache_bytes = cache_bytes});
      EXPECT_TRUE(s.has_value()) << name << ": " << (s ? "" : s.error().ToString());
      if (!s) std::abort();
      it = stores_.emplace(name, std::move(*s)).first;
    }
    return *it->second;
  }

  static fs::path* dir_;
  static int status_;
  std::map<std::string, std::unique_ptr<Store>> stores_;
};

fs::path* ZarrStoreTest::dir_ = nullptr;
int ZarrStoreTest::status_ = -1;

TEST_F(ZarrStoreTest, EveryArrayReadsAsZarrPythonReadsIt) {
  int checked = 0;
  for (const auto& f : Lines("read")) {
    SCOPED_TRACE(f[1] + " " + f[2]);
    const Store& store = StoreOf(f[1]);
    EXPECT_EQ(store.format(), "zarr");
    ASSERT_OK_AND_ASSIGN(auto ds, store.OpenDataset(std::string_view(f[2])));
    const DatasetInfo& d = ds->info().dataset;
    EXPECT_EQ(DTypeName(d.dtype), f[3]);
    EXPECT_EQ(d.shape, ParseDims(f[4]));
    const std::string want = testutil::ReadWhole(Fixtures() / f[5]);
    ASSERT_EQ(d.size_bytes, want.size());
    std::string got(want.size(), '\x5a');
    ASSERT_OK(ds->Read(Slab::All(d.shape), got.data()));
    EXPECT_TRUE(got == want) << "whole read differs";
    // Again: now partly from the cache.
    std::string again(want.size(), '\0');
    ASSERT_OK(ds->Read(Slab::All(d.shape), again.data()));
    EXPECT_TRUE(again == want);
    ASSERT_OK_AND_ASSIGN(std::vector<StoredChunk> chunks, ds->StoredChunks());
    EXPECT_EQ(chunks.size(), std::stoull(f[6]));
    EXPECT_EQ(d.allocated_chunks, chunks.size());
    ++checked;
  }
  EXPECT_GE(checked, 90);
}

TEST_F(ZarrStoreTest, BoxesReadAsTheirPartOfTheArray) {
  std::mt19937_64 rng(5);
  for (const auto& f : Lines("read")) {
    SCOPED_TRACE(f[1] + " " + f[2]);
    ASSERT_OK_AND_ASSIGN(auto ds, StoreOf(f[1]).OpenDataset(std::string_view(f[2])));
    const DatasetInfo& d = ds->info().dataset;
    if (d.num_elements == 0) continue;
    const std::string whole = testutil::ReadWhole(Fixtures() / f[5]);
    const size_t item = ItemSize(d.dtype);
    for (int i = 0; i < 8; ++i) {
      Dims start(d.shape.size()), count(d.shape.size());
      for (size_t k = 0; k < d.shape.size(); ++k) {
        start[k] = rng() % d.shape[k];
        count[k] = 1 + rng() % (d.shape[k] - start[k]);
      }
      const std::string want = testutil::BoxOf(whole, d.shape, start, count, item);
      std::string got(want.size(), '\0');
      ASSERT_OK(ds->Read(Slab::Box(start, count), got.data()));
      EXPECT_TRUE(got == want);
    }
  }
}

TEST_F(ZarrStoreTest, WhatItCannotHoldIsSkippedByName) {
  for (const auto& f : Lines("skip")) {
    SCOPED_TRACE(f[1] + " " + f[2]);
    const Store& store = StoreOf(f[1]);
    EXPECT_CODE(store.Resolve(f[2]), Code::kNotFound);
    const auto skipped = store.Skipped();
    auto it = std::find_if(skipped.begin(), skipped.end(), [&](const SkippedObject& s) { return s.path == f[2]; });
    ASSERT_NE(it, skipped.end());
    EXPECT_FALSE(it->reason.empty());
  }
  // The groups of skipped arrays stay.
  EXPECT_OK(StoreOf("v2.zarr").Resolve("/skip"));
}

TEST_F(ZarrStoreTest, AttributesAreMappedAsTheImportMapsThem) {
  int checked = 0;
  for (const auto& f : Lines("attr")) {
    SCOPED_TRACE(f[1] + " " + f[2] + " " + f[3]);
    const Store& store = StoreOf(f[1]);
    ASSERT_OK_AND_ASSIGN(ObjectId id, store.Resolve(f[2]));
    ASSERT_OK_AND_ASSIGN(Attribute a, store.GetAttribute(id, f[3]));
    EXPECT_EQ(a.ToText(), f[4]);
    ++checked;
  }
  EXPECT_GE(checked, 6);
  // The xarray dimension names stay a JSON list; the export's max shape
  // member is not an attribute.
  const Store& store = StoreOf("v2.zarr");
  ASSERT_OK_AND_ASSIGN(ObjectId xr, store.Resolve("/more/xr"));
  EXPECT_EQ(store.GetAttribute(xr, "_ARRAY_DIMENSIONS").value().ToText(), "[\"y\",\"x\"]");
}

TEST_F(ZarrStoreTest, DescribesArraysAndTheirCodecs) {
  const Store& store = StoreOf("v2.zarr");
  ASSERT_OK_AND_ASSIGN(auto big, store.OpenDataset(std::string_view("/more/big_f8")));
  EXPECT_EQ(big->info().source_dtype, ">f8");
  EXPECT_EQ(big->info().source_filters, "blosc(lz4,5,shuffle)");
  EXPECT_EQ(big->info().layout, StoreLayout::kChunked);
  ASSERT_OK_AND_ASSIGN(auto f, store.OpenDataset(std::string_view("/more/fortran")));
  EXPECT_EQ(f->info().source_filters, "transpose,gzip=1");
  ASSERT_OK_AND_ASSIGN(auto s, store.OpenDataset(std::string_view("/more/scalar")));
  EXPECT_TRUE(s->info().scalar);
  ASSERT_OK_AND_ASSIGN(auto fill, store.OpenDataset(std::string_view("/more/sparse_neg")));
  int16_t v = 0;
  std::memcpy(&v, fill->info().dataset.fill.data(), 2);
  EXPECT_EQ(v, -7);
  // A store whose root is an array shows it under the store's name.
  ASSERT_OK_AND_ASSIGN(std::vector<Entry> root, StoreOf("root.zarr").List(kRootId));
  ASSERT_EQ(root.size(), 1u);
  EXPECT_EQ(root[0].name, "root");
  // And the daemon's way in opens Zarr too.
  ASSERT_OK_AND_ASSIGN(StoreFormat format, DetectStoreFormat((Fixtures() / "v2.zarr").string()));
  EXPECT_EQ(format, StoreFormat::kZarr);
  ASSERT_OK_AND_ASSIGN(auto opened, OpenForeignStore((Fixtures() / "v3.zarr").string(), format));
  EXPECT_EQ(opened->format(), "zarr");
}

TEST_F(ZarrStoreTest, DamagedChunkFilesAreCorruptionNamingTheKey) {
  for (const auto& f : Lines("bad")) {
    SCOPED_TRACE(f[1] + " " + f[2]);
    const Store& store = StoreOf(f[1]);
    ASSERT_OK_AND_ASSIGN(auto ds, store.OpenDataset(std::string_view(f[2])));
    const DatasetInfo& d = ds->info().dataset;
    std::string buf(d.size_bytes, '\0');
    Status s = ds->Read(Slab::All(d.shape), buf.data());
    EXPECT_CODE(s, Code::kCorruption);
    EXPECT_NE(s.message().find(store.path()), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("array " + f[2]), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("chunk " + f[3]), std::string::npos) << s.message();
    // The chunks around it read.
    std::string one(16 * 16 * 4, '\0');
    const uint64_t row = f[3][0] == '0' ? 16 : 0;
    EXPECT_OK(ds->Read(Slab::Box({row, 0}, {16, 16}), one.data()));
  }
  const Store& store = StoreOf("damaged.zarr");
  ASSERT_OK_AND_ASSIGN(auto good, store.OpenDataset(std::string_view("/good")));
  std::string buf(good->info().dataset.size_bytes, '\0');
  EXPECT_OK(good->Read(Slab::All(good->info().dataset.shape), buf.data()));
}

TEST_F(ZarrStoreTest, TheCacheStaysWithinItsBudget) {
  const uint64_t budget = 64 << 10;
  auto s = OpenZarrStore((Fixtures() / "v2.zarr").string(), {.cache_bytes = budget});
  ASSERT_OK(s);
  ASSERT_OK_AND_ASSIGN(auto ds, (*s)->OpenDataset(std::string_view("/more/nested")));
  const DatasetInfo& d = ds->info().dataset;
  std::vector<char> buf(d.size_bytes);
  // Small boxes, so that chunks go through the cache.
  for (uint64_t r = 0; r + 3 <= d.shape[0]; r += 3) {
    ASSERT_OK(ds->Read(Slab::Box({r, 0}, {3, d.shape[1]}), buf.data()));
    EXPECT_LE((*s)->cache_stats().resident_bytes, budget);
  }
}

}  // namespace
}  // namespace slabfs::stores
