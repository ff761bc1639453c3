// slab export of datasets that are mostly holes: the blocks with nothing
// defined (sparse) or stored (dense) are written as the fill value without
// reading them, and the bytes are exactly those of the dataset's image,
// data across block edges and at the very end included.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/filesystem.hpp>

#include "slabfs/container.h"
#include "tests/testutil/status_matchers.h"
#include "tools/cmd_transfer.h"
#include "tools/commands.h"

namespace slabfs::tools {
namespace {
namespace fs = boost::filesystem;

class ExportHolesTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fs::unique_path("slab-export-%%%%-%%%%");
    fs::create_directories(dir_);
    file_ = (dir_ / "c.slab").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string ReadFile(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }

  fs::path dir_;
  std::string file_;
};

TEST_P(ExportHolesTest, WritesTheFillValueForHolesAndTheDataAsStored) {
  const bool sparse = GetParam();
  // u2 with fill 7: a hole is not zeros. Rows of 3 Mi elements, so that the
  // 16 MiB transfer blocks (8 Mi elements) start in the middle of rows.
  const uint64_t rows = 8, cols = 3 << 20, chunk = 1 << 16;
  const uint64_t n = rows * cols, block = kTransferBlockBytes / 2;
  const uint16_t fill = 7;
  std::vector<uint16_t> expect(n, fill);
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Container> c, Container::Open(file_, {.create = true}));
    DatasetOptions o{.dtype = DType::kU2, .shape = {rows, cols}, .chunks = {1, chunk}};
    o.fill = std::string(reinterpret_cast<const char*>(&fill), 2);
    o.sparse = sparse;
    ASSERT_OK_AND_ASSIGN(Dataset ds, c->CreateDataset("/d", o));
    // A run across a block edge, one in the middle of a block, the last
    // element; and a run of fill values (defined in a sparse dataset).
    const std::vector<std::pair<uint64_t, uint64_t>> runs = {
        {block - 3, 6}, {block + block / 2, 1}, {n - 1, 1}, {2 * block + 10, 5}};
    for (size_t i = 0; i < runs.size(); ++i) {
      const auto [first, count] = runs[i];
      std::vector<uint16_t> v(count, static_cast<uint16_t>(i == 3 ? fill : 100 + i));
      ASSERT_OK(ds.WriteElements(first, count, v.data()));
      for (uint64_t e = first; e < first + count; ++e) expect[e] = v[0];
    }
    ASSERT_OK(c->Close());
  }
  const std::string out = (dir_ / "d.raw").string();
  std::ostringstream report;
  ASSERT_OK(RunExport({.file = file_, .path = "/d", .output = out}, report));
  const std::string got = ReadFile(out);
  ASSERT_EQ(got.size(), n * 2);
  std::vector<uint16_t> back(n);
  std::memcpy(back.data(), got.data(), got.size());
  for (uint64_t e = 0; e < n; ++e) ASSERT_EQ(back[e], expect[e]) << "element " << e;
}

INSTANTIATE_TEST_SUITE_P(SparseAndDense, ExportHolesTest, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& i) { return i.param ? "sparse" : "dense"; });

}  // namespace
}  // namespace slabfs::tools
