// Finding a store's format by its signature (stores/store_format.h) and
// opening foreign stores by format (stores/open_store.h).
#include "stores/store_format.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "stores/open_store.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::stores {
namespace {

class StoreFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/slabfs-format-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  std::string dir_;
};

const std::string kHdf5Magic("\x89HDF\r\n\x1a\n", 8);

TEST_F(StoreFormatTest, SignaturesName) {
  EXPECT_EQ(DetectStoreFormat(Write("c.slab", std::string("\x89SLABFS\n", 8) + std::string(8192, '\0'))).value(),
            StoreFormat::kSlab);
  // A young container: only the second superblock slot written.
  EXPECT_EQ(DetectStoreFormat(
                Write("young.slab", std::string(4096, '\0') + std::string("\x89SLABFS\n", 8) + std::string(4096, '\0')))
                .value(),
            StoreFormat::kSlab);
  EXPECT_EQ(DetectStoreFormat(Write("a.h5", kHdf5Magic + std::string(100, '\0'))).value(), StoreFormat::kHdf5);
  // After a user block of 512 and of 4096 bytes.
  EXPECT_EQ(DetectStoreFormat(Write("u1.h5", std::string(512, 'u') + kHdf5Magic)).value(), StoreFormat::kHdf5);
  EXPECT_EQ(DetectStoreFormat(Write("u4.h5", std::string(4096, 'u') + kHdf5Magic + "rest")).value(),
            StoreFormat::kHdf5);
  EXPECT_EQ(DetectStoreFormat(Write("c.nc", std::string("CDF\x01", 4) + std::string(60, '\0'))).value(),
            StoreFormat::kNetcdf3);
  EXPECT_EQ(DetectStoreFormat(Write("c64.nc", std::string("CDF\x02", 4) + std::string(60, '\0'))).value(),
            StoreFormat::kNetcdf3);
  for (const char* meta : {".zgroup", ".zarray", "zarr.json"}) {
    const std::string store = dir_ + "/" + meta + ".zarr";
    std::filesystem::create_directory(store);
    std::ofstream(store + "/" + meta) << "{}";
    EXPECT_EQ(DetectStoreFormat(store).value(), StoreFormat::kZarr) << meta;
  }
}

TEST_F(StoreFormatTest, WhatIsNoneOfThemIsSaidSo) {
  // The magic at an offset that is not a user block's, text, nothing.
  EXPECT_CODE(DetectStoreFormat(Write("odd.h5", std::string(100, 'x') + kHdf5Magic)), Code::kNotSupported);
  EXPECT_CODE(DetectStoreFormat(Write("t.txt", "hello\n")), Code::kNotSupported);
  EXPECT_CODE(DetectStoreFormat(Write("empty", "")), Code::kNotSupported);
  EXPECT_CODE(DetectStoreFormat(dir_ + "/missing"), Code::kNotFound);
  auto plain_dir = DetectStoreFormat(dir_);
  EXPECT_CODE(plain_dir, Code::kNotSupported);
  EXPECT_NE(plain_dir.error().message().find("not a Zarr store"), std::string::npos);
}

TEST(StoreFormatNamesTest, ParseAndName) {
  EXPECT_EQ(ParseStoreFormat("slab").value(), StoreFormat::kSlab);
  for (const char* hdf5 : {"hdf5", "h5", "netcdf", "nc"}) EXPECT_EQ(ParseStoreFormat(hdf5).value(), StoreFormat::kHdf5);
  EXPECT_EQ(ParseStoreFormat("zarr").value(), StoreFormat::kZarr);
  auto bad = ParseStoreFormat("parquet");
  EXPECT_CODE(bad, Code::kInvalidArgument);
  EXPECT_NE(bad.error().message().find("slab, hdf5, netcdf or zarr"), std::string::npos);
  EXPECT_EQ(StoreFormatName(StoreFormat::kHdf5), "hdf5");
  EXPECT_EQ(StoreFormatName(StoreFormat::kNetcdf3), "netcdf3");
}

TEST_F(StoreFormatTest, ForeignStoresOpenByFormatOrSayWhyNot) {
  EXPECT_TRUE(StoreFormatBuilt(StoreFormat::kSlab));
  EXPECT_TRUE(StoreFormatBuilt(StoreFormat::kHdf5));  // this binary links the HDF5 store
  EXPECT_TRUE(StoreFormatBuilt(StoreFormat::kZarr));  // and the Zarr store
  EXPECT_FALSE(StoreFormatBuilt(StoreFormat::kNetcdf3));
  EXPECT_CODE(OpenForeignStore(dir_ + "/c.slab", StoreFormat::kSlab), Code::kInvalidArgument);
  auto zarr = OpenForeignStore(dir_, StoreFormat::kZarr);  // a directory that is no Zarr store
  EXPECT_CODE(zarr, Code::kNotSupported);
  auto classic = OpenForeignStore(Write("c.nc", "CDF\x01"), StoreFormat::kNetcdf3);
  EXPECT_CODE(classic, Code::kNotSupported);
  EXPECT_NE(classic.error().message().find("nccopy -k nc4"), std::string::npos);
  // Not HDF5, opened as HDF5: the store's own refusal, no crash.
  EXPECT_FALSE(OpenForeignStore(Write("t.txt", std::string(2048, 't')), StoreFormat::kHdf5).has_value());
}

}  // namespace
}  // namespace slabfs::stores
