// How slab opens a file: HDF5 found by its signature (at 0 or after a user
// block) and read as a store, a container read through the container
// store, and the refusal that writing commands share for an HDF5 file.
#include "tools/session.h"

#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <boost/filesystem.hpp>

#include "slabfs/container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::tools {
namespace {
namespace fs = boost::filesystem;

const std::string kHdf5Signature("\x89HDF\r\n\x1a\n", 8);

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fs::unique_path("slab-session-%%%%-%%%%");
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A file of `size` zero bytes with `bytes` at offset `at`.
  std::string Make(const std::string& name, size_t size, size_t at = 0, const std::string& bytes = "") {
    std::string data(size, '\0');
    data.replace(at, bytes.size(), bytes);
    std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << data;
    return p;
  }

  fs::path dir_;
};

TEST_F(SessionTest, FindsHdf5AtZeroAndAfterAUserBlock) {
  EXPECT_TRUE(IsForeignStore(Make("a.h5", 4096, 0, kHdf5Signature)));
  for (size_t at : {512, 1024, 2048, 4096}) {
    EXPECT_TRUE(IsForeignStore(Make("u" + std::to_string(at) + ".h5", 8192, at, kHdf5Signature))) << at;
  }
  EXPECT_FALSE(IsForeignStore(Make("off.h5", 8192, 100, kHdf5Signature)));
  EXPECT_FALSE(IsForeignStore(Make("empty.h5", 0)));
  EXPECT_FALSE(IsForeignStore((dir_ / "missing.h5").string()));
  EXPECT_FALSE(IsForeignStore(dir_.string()));
  // A Zarr store is foreign too (a directory with its metadata).
  fs::create_directory(dir_ / "s.zarr");
  std::ofstream(dir_ / "s.zarr" / ".zgroup") << "{\"zarr_format\": 2}";
  EXPECT_TRUE(IsForeignStore((dir_ / "s.zarr").string()));
}

TEST_F(SessionTest, ReadsAContainerThroughTheContainerStore) {
  std::string p = (dir_ / "c.slab").string();
  OpenOptions o;
  o.create = true;
  auto c = Container::Open(p, o);
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  ASSERT_OK((*c)->Close());
  EXPECT_FALSE(IsForeignStore(p));
  auto store = OpenStoreForReading(p);
  ASSERT_TRUE(store.has_value()) << store.error().ToString();
  EXPECT_EQ((*store)->format(), "slab");
  EXPECT_OK(ForeignFileStatus(p, /*changes=*/true));
}

TEST_F(SessionTest, ChangesToAnHdf5FileAreRefusedByName) {
  std::string h5 = Make("x.h5", 4096, 0, kHdf5Signature);
  Status s = ForeignFileStatus(h5, /*changes=*/true);
  EXPECT_EQ(s.code(), Code::kNotSupported);
  EXPECT_EQ(s.message(), h5 + " is an HDF5 file: slab changes only slab containers; use `slab import` to copy it "
                              "into one");
  auto w = WriteSession::Open(h5, "mkgroup");
  ASSERT_FALSE(w.has_value());
  EXPECT_EQ(w.error().code(), Code::kNotSupported);
  auto r = OpenForReading(h5);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("works on slab containers only"), std::string::npos);
  EXPECT_OK(ForeignFileStatus((dir_ / "missing.slab").string(), true));
}

}  // namespace
}  // namespace slabfs::tools
