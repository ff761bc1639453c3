// What the store tests share: the HDF5 / netCDF-4 files make_fixtures.py
// makes with h5py and netCDF4 (and what h5py reads from each dataset), the
// manifest that lists them, and the expected bytes of a box.
#ifndef SLABFS_TESTS_STORES_STORE_FIXTURES_H_
#define SLABFS_TESTS_STORES_STORE_FIXTURES_H_

#include <stdlib.h>
#include <sys/wait.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "slabfs/selection.h"

namespace slabfs::testutil {

// Runs make_fixtures.py into a new temporary directory: its exit status (0,
// 77 when h5py, netCDF4 or numpy is missing) and the directory.
inline int MakeStoreFixtures(std::filesystem::path* dir) {
  char tmpl[] = "/tmp/slabfs-storefix-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return -1;
  *dir = tmpl;
  const std::string cmd =
      std::string(SLABFS_PYTHON3) + " " + SLABFS_SOURCE_DIR + "/tests/stores/hdf5/make_fixtures.py " + dir->string();
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

inline std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string f; std::getline(ss, f, '\t');) out.push_back(f);
  return out;
}

// The manifest's lines of one kind ("read", "skip", "gone"), split.
inline std::vector<std::vector<std::string>> StoreManifest(const std::filesystem::path& dir, const std::string& kind) {
  std::vector<std::vector<std::string>> out;
  std::ifstream in(dir / "manifest.txt");
  for (std::string line; std::getline(in, line);) {
    auto f = SplitTabs(line);
    if (!f.empty() && f[0] == kind) out.push_back(f);
  }
  return out;
}

inline std::string ReadWhole(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// What a box of an array of `shape` holds, from the whole array's bytes.
inline std::string BoxOf(const std::string& whole, const Dims& shape, const Dims& start, const Dims& count,
                         size_t item) {
  const size_t rank = shape.size();
  uint64_t n = 1;
  for (uint64_t c : count) n *= c;
  std::string out;
  out.reserve(n * item);
  Dims idx(rank, 0);
  for (uint64_t e = 0; e < n; ++e) {
    uint64_t lin = 0;
    for (size_t d = 0; d < rank; ++d) lin = lin * shape[d] + start[d] + idx[d];
    out.append(whole, lin * item, item);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < count[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// A gtest fixture base (over ::testing::Test or TestWithParam<T>) that
// makes the fixture files once per suite and removes them after it; every
// test of the suite skips when h5py, netCDF4 or numpy is missing and fails
// when make_fixtures.py does.
template <class Base>
class StoreFixtureSuite : public Base {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path;
    status_ = MakeStoreFixtures(dir_);
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    std::filesystem::remove_all(*dir_, ec);
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (status_ == 77) GTEST_SKIP() << "h5py, netCDF4 or numpy is missing";
    ASSERT_EQ(status_, 0) << "make_fixtures.py failed";
  }

  static std::vector<std::vector<std::string>> Manifest(const std::string& kind) { return StoreManifest(*dir_, kind); }
  static std::string File(const std::string& name) { return (*dir_ / name).string(); }

  inline static std::filesystem::path* dir_ = nullptr;
  inline static int status_ = -1;
};

}  // namespace slabfs::testutil

#endif  // SLABFS_TESTS_STORES_STORE_FIXTURES_H_
