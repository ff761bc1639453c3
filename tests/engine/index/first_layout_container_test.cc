// A container the build before the paged-array index wrote
// (tests/data/first_fixed_array_layout.slab, made as tests/data/README.md
// says): its two fixed arrays are in the first fixed-array layout (block
// types 3 and 4, one of them two node levels deep), its extensible array in
// the layout both kinds now write. It reads as written, and changes write
// the new blocks beside the old ones and leave a container fsck calls
// clean.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "slabfs/container.h"
#include "slabfs/fsck.h"
#include "tests/testutil/block_scan.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {
namespace first_layout_container_test {  // its own names in a unity batch

namespace fs = std::filesystem;
using engine::BlockType;

// What the fixture's datasets hold (the README's recipe): element i of
// /fixed_deep (u1, 140000 chunks of one element, fill 0) is i % 251 + 1
// where defined; /fixed_filtered (i4, 40 x 30 in 2 x 3 chunks, deflate,
// fill -1) holds (31 r + c) * 7 - 500 at (r, c) outside rows 10..19; /ext
// (u2, unlimited, chunks of 2, fill 7) holds 13 i % 65521 outside
// [100, 1100).
bool DeepDefined(uint64_t i) {
  return (i >= 5 && i < 10) || (i >= 70000 && i < 70005) || (i >= 131100 && i < 131111) || i >= 139995;
}
std::vector<uint8_t> Deep() {
  std::vector<uint8_t> v(140000, 0);
  for (uint64_t i = 0; i < v.size(); ++i)
    if (DeepDefined(i)) v[i] = static_cast<uint8_t>(i % 251 + 1);
  return v;
}
std::vector<int32_t> Filtered() {
  std::vector<int32_t> v(40 * 30, -1);
  for (int r = 0; r < 40; ++r)
    for (int c = 0; c < 30; ++c)
      if (r < 10 || r >= 20) v[r * 30 + c] = (r * 31 + c) * 7 - 500;
  return v;
}
std::vector<uint16_t> Ext() {
  std::vector<uint16_t> v(1500, 7);
  for (uint64_t i = 0; i < v.size(); ++i)
    if (i < 100 || i >= 1100) v[i] = static_cast<uint16_t>(i * 13 % 65521);
  return v;
}

class FirstFixedArrayLayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("slab-first-layout-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "old.slab").string();
    fs::copy_file(fs::path(SLABFS_TEST_DATA_DIR) / "first_fixed_array_layout.slab", path_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Image() const {
    std::ifstream f(path_, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }

  template <typename T>
  void ExpectContents(const Container& c, const std::string& name, IndexKind kind, const std::vector<T>& want) {
    SCOPED_TRACE(name);
    auto ds = c.OpenDataset(name);
    ASSERT_TRUE(ds.has_value()) << ds.error().ToString();
    EXPECT_EQ(ds->info().index, kind);
    ASSERT_EQ(ds->num_elements(), want.size());
    std::vector<T> got(want.size());
    ASSERT_OK(ds->ReadElements(0, got.size(), got.data()));
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;
  }

  void ExpectClean() {
    auto report = CheckContainer(path_);
    ASSERT_TRUE(report.has_value()) << report.error().ToString();
    std::string findings;
    for (const FsckFinding& f : report->findings) findings += f.where + ": " + f.what + "\n";
    EXPECT_TRUE(report->clean()) << findings;
  }

  fs::path dir_;
  std::string path_;
};

TEST_F(FirstFixedArrayLayoutTest, TheFixtureHoldsTheFirstLayout) {
  auto blocks = testutil::CountBlocksByType(Image());
  EXPECT_GE(blocks[BlockType::kFixedArrayLeaf], 5);  // four of /fixed_deep, one of /fixed_filtered
  EXPECT_GE(blocks[BlockType::kFixedArrayNode], 3);  // /fixed_deep's two levels
  EXPECT_GE(blocks[BlockType::kPagedLeaf], 2);       // /ext
}

TEST_F(FirstFixedArrayLayoutTest, ReadsEveryDatasetAsWritten) {
  {
    auto c = Container::Open(path_, {.read_only = true});
    ASSERT_TRUE(c.has_value()) << c.error().ToString();
    ExpectContents(**c, "/fixed_deep", IndexKind::kFixedArray, Deep());
    ExpectContents(**c, "/fixed_filtered", IndexKind::kFixedArray, Filtered());
    ExpectContents(**c, "/ext", IndexKind::kExtensibleArray, Ext());
    auto deep = (*c)->OpenDataset("/fixed_deep");
    ASSERT_TRUE(deep.has_value());
    ASSERT_OK_AND_ASSIGN(auto chunks, deep->StoredChunks());
    EXPECT_EQ(chunks.size(), 26u);
  }
  ExpectClean();
}

TEST_F(FirstFixedArrayLayoutTest, ChangesWriteTheNewBlocksAndStayClean) {
  std::vector<uint8_t> deep = Deep();
  std::vector<int32_t> filtered = Filtered();
  {
    auto c = Container::Open(path_);
    ASSERT_TRUE(c.has_value()) << c.error().ToString();
    ASSERT_OK_AND_ASSIGN(Dataset d, (*c)->OpenDataset("/fixed_deep"));
    // Into an old leaf (0), a leaf never stored (195) under the same old
    // node, and the last leaf (256) emptied, which drops its node too.
    const uint8_t v[] = {200, 201};
    ASSERT_OK(d.WriteElements(6, 2, v));
    ASSERT_OK(d.WriteElements(100000, 1, v));
    deep[6] = 200;
    deep[7] = 201;
    deep[100000] = 200;
    ASSERT_OK(d.Erase(Slab::Box({131100}, {11})));
    for (uint64_t i = 131100; i < 131111; ++i) deep[i] = 0;
    ASSERT_OK_AND_ASSIGN(Dataset f, (*c)->OpenDataset("/fixed_filtered"));
    std::vector<int32_t> row(30, 12345);
    ASSERT_OK(f.WriteElements(15 * 30, 30, row.data()));
    std::copy(row.begin(), row.end(), filtered.begin() + 15 * 30);
    ASSERT_OK((*c)->Close());
  }
  {
    auto c = Container::Open(path_, {.read_only = true});
    ASSERT_TRUE(c.has_value()) << c.error().ToString();
    ExpectContents(**c, "/fixed_deep", IndexKind::kFixedArray, deep);
    ExpectContents(**c, "/fixed_filtered", IndexKind::kFixedArray, filtered);
    ExpectContents(**c, "/ext", IndexKind::kExtensibleArray, Ext());
  }
  ExpectClean();
  // The rewritten pages are in the new layout: leaves 0 and 195 and their
  // node, the top of /fixed_deep, /fixed_filtered's leaf.
  auto blocks = testutil::CountBlocksByType(Image());
  EXPECT_GE(blocks[BlockType::kPagedLeaf], 2 + 3);
  EXPECT_GE(blocks[BlockType::kPagedNode], 1 + 2);
}

}  // namespace first_layout_container_test
}  // namespace
}  // namespace slabfs
