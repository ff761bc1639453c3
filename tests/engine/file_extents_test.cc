// Dataset::WithFileExtents on real files: the runs it names hold exactly
// the bytes ReadBytes returns, for random reads of row-shaped and square
// chunks; it declines (false, nothing called) for everything that is not
// plain file bytes; and the dataset cannot change while the runs are used.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "slabfs/container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {

class FileExtentsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "slabfs-extents-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/c.slab";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Container> Open(bool read_only) {
    OpenOptions o;
    o.create = !std::filesystem::exists(path_);
    o.read_only = read_only;
    auto c = Container::Open(path_, o);
    EXPECT_TRUE(c.has_value()) << c.error().ToString();
    return c ? std::move(*c) : nullptr;
  }

  // Makes /name (u4, every element its own index) and commits.
  void Make(Container& c, const std::string& name, Dims shape, Dims chunks, std::string filters = "",
            bool sparse = false) {
    DatasetOptions o;
    o.dtype = DType::kU4;
    o.shape = shape;
    o.chunks = std::move(chunks);
    o.filters = std::move(filters);
    o.sparse = sparse;
    ASSERT_OK_AND_ASSIGN(Dataset ds, c.CreateDataset(name, o));
    std::vector<uint32_t> v(ds.num_elements());
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint32_t>(i);
    ASSERT_OK(ds.WriteElements(0, v.size(), v.data()));
    ASSERT_OK(c.Commit());
  }

  // The bytes the runs name, read from the descriptor; "declined" if the
  // call answered false.
  static std::string ViaExtents(const Dataset& ds, uint64_t off, size_t len, size_t max_runs,
                                size_t* runs_seen = nullptr) {
    std::string out;
    bool called = false;
    auto r = ds.WithFileExtents(off, len, max_runs, [&](int fd, std::span<const Dataset::FileExtent> runs) {
      called = true;
      if (runs_seen) *runs_seen = runs.size();
      for (const auto& e : runs) {
        std::string piece(e.length, '\0');
        EXPECT_EQ(pread(fd, piece.data(), e.length, static_cast<off_t>(e.offset)), static_cast<ssize_t>(e.length));
        out += piece;
      }
    });
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    if (!r || !*r) {
      EXPECT_FALSE(called);
      return "declined";
    }
    EXPECT_TRUE(called);
    return out;
  }

  static std::string ViaRead(const Dataset& ds, uint64_t off, size_t len) {
    std::string out(len, '\0');
    auto n = ds.ReadBytes(off, len, out.data());
    EXPECT_TRUE(n.has_value());
    out.resize(n ? *n : 0);
    return out;
  }

  std::string dir_, path_;
};

TEST_F(FileExtentsTest, RunsHoldWhatReadBytesReturnsForRowChunks) {
  {
    auto w = Open(false);
    Make(*w, "/rows", {512, 1024}, {16, 1024});
  }
  auto r = Open(true);
  ASSERT_OK_AND_ASSIGN(Dataset ds, r->OpenDataset("/rows"));
  const uint64_t size = ds.size_bytes();
  // A whole 1 MiB request (a quarter of the dataset) is one run: the chunks
  // were written in order and lie one after another.
  size_t runs = 0;
  EXPECT_EQ(ViaExtents(ds, 1 << 20, 1 << 20, 16, &runs), ViaRead(ds, 1 << 20, 1 << 20));
  EXPECT_LE(runs, 16u);
  std::mt19937_64 rng(7);
  int answered = 0;
  for (int i = 0; i < 300; ++i) {
    uint64_t off = (rng() % (size / 4)) * 4;
    size_t len = (1 + rng() % (1 << 18)) * 4;
    std::string got = ViaExtents(ds, off, len, 32);
    if (got == "declined") continue;
    ++answered;
    ASSERT_EQ(got, ViaRead(ds, off, len)) << "offset " << off << " length " << len;
  }
  EXPECT_EQ(answered, 300);
  // The end shortens the answer as ReadBytes does.
  EXPECT_EQ(ViaExtents(ds, size - 40, 4096, 16), ViaRead(ds, size - 40, 4096));
  EXPECT_GT(r->cache_stats().extent_reads, 300u);
}

TEST_F(FileExtentsTest, SquareChunksAnswerOnlyWhenTheRunsAreFew) {
  {
    auto w = Open(false);
    Make(*w, "/sq", {256, 256}, {32, 32});
  }
  auto r = Open(true);
  ASSERT_OK_AND_ASSIGN(Dataset ds, r->OpenDataset("/sq"));
  // 32 elements of one row inside one chunk: one run.
  size_t runs = 0;
  EXPECT_EQ(ViaExtents(ds, 256 * 4 * 3 + 64 * 4, 32 * 4, 16, &runs), ViaRead(ds, 256 * 4 * 3 + 64 * 4, 32 * 4));
  EXPECT_EQ(runs, 1u);
  // One full row crosses 8 chunks: 8 runs.
  EXPECT_EQ(ViaExtents(ds, 256 * 4 * 5, 256 * 4, 16, &runs), ViaRead(ds, 256 * 4 * 5, 256 * 4));
  EXPECT_EQ(runs, 8u);
  // Eight rows: 64 runs, more than asked for.
  EXPECT_EQ(ViaExtents(ds, 0, 8 * 256 * 4, 16), "declined");
  std::mt19937_64 rng(11);
  for (int i = 0; i < 300; ++i) {
    uint64_t off = (rng() % (ds.size_bytes() / 4)) * 4;
    size_t len = (1 + rng() % 2048) * 4;
    std::string got = ViaExtents(ds, off, len, 16);
    if (got != "declined") {
      ASSERT_EQ(got, ViaRead(ds, off, len)) << "offset " << off << " length " << len;
    }
  }
}

TEST_F(FileExtentsTest, DeclinesWhatIsNotPlainFileBytes) {
  {
    auto w = Open(false);
    Make(*w, "/plain", {64, 256}, {8, 256});
    Make(*w, "/filtered", {64, 256}, {8, 256}, "shuffle,deflate=1");
    Make(*w, "/checked", {64, 256}, {8, 256}, "checksum");
    Make(*w, "/sparse", {64, 256}, {8, 256}, "", true);
    DatasetOptions o;
    o.dtype = DType::kU4;
    o.shape = {64, 256};
    o.chunks = {8, 256};
    ASSERT_TRUE(w->CreateDataset("/empty", o).has_value());
    ASSERT_OK(w->Commit());
  }
  auto w = Open(false);
  for (const char* name : {"/filtered", "/checked", "/sparse", "/empty"}) {
    ASSERT_OK_AND_ASSIGN(Dataset ds, w->OpenDataset(name));
    EXPECT_EQ(ViaExtents(ds, 0, 4096, 16), "declined") << name;
  }
  ASSERT_OK_AND_ASSIGN(Dataset ds, w->OpenDataset("/plain"));
  EXPECT_NE(ViaExtents(ds, 0, 4096, 16), "declined");
  EXPECT_EQ(ViaExtents(ds, 2, 4096, 16), "declined");                // inside an element
  EXPECT_EQ(ViaExtents(ds, 0, 4095, 16), "declined");                // ends inside one
  EXPECT_EQ(ViaExtents(ds, ds.size_bytes(), 4096, 16), "declined");  // at the end
  EXPECT_EQ(ViaExtents(ds, 0, 0, 16), "declined");
  EXPECT_EQ(ViaExtents(ds, 0, 4096, 0), "declined");
  // A chunk changed in the cache is newer than its file bytes: declined
  // until the change is committed and the chunk leaves the cache.
  std::vector<uint32_t> v(256, 0xABCDEF01);
  ASSERT_OK(ds.WriteElements(0, v.size(), v.data()));
  EXPECT_EQ(ViaExtents(ds, 0, 1024, 16), "declined");
  EXPECT_EQ(ViaRead(ds, 0, 1024), std::string(reinterpret_cast<const char*>(v.data()), 1024));
  // Other chunks still answer.
  EXPECT_EQ(ViaExtents(ds, 8 * 1024, 1024, 16), ViaRead(ds, 8 * 1024, 1024));
  // Written back, the chunk's file bytes are current again (its clean copy
  // may stay cached).
  ASSERT_OK(w->Commit());
  EXPECT_EQ(ViaExtents(ds, 0, 1024, 16), std::string(reinterpret_cast<const char*>(v.data()), 1024));
}

TEST_F(FileExtentsTest, NoWriteRunsWhileTheRunsAreUsed) {
  {
    auto w = Open(false);
    Make(*w, "/rows", {64, 256}, {8, 256});
  }
  auto w = Open(false);
  ASSERT_OK_AND_ASSIGN(Dataset ds, w->OpenDataset("/rows"));
  std::atomic<bool> written{false};
  std::thread writer;
  std::string seen;
  auto r = ds.WithFileExtents(0, 1024, 16, [&](int fd, std::span<const Dataset::FileExtent> runs) {
    writer = std::thread([&] {
      std::vector<uint32_t> v(256, 7);
      EXPECT_OK(ds.WriteElements(0, v.size(), v.data()));
      written = true;
    });
    // The writer waits for the dataset's lock, held until this returns.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_FALSE(written.load());
    seen.resize(runs[0].length);
    EXPECT_EQ(pread(fd, seen.data(), seen.size(), static_cast<off_t>(runs[0].offset)),
              static_cast<ssize_t>(seen.size()));
  });
  ASSERT_TRUE(r.has_value() && *r);
  writer.join();
  EXPECT_TRUE(written.load());
  uint32_t first;
  std::memcpy(&first, seen.data() + 4, 4);
  EXPECT_EQ(first, 1u);  // the element as it was before the write
  EXPECT_EQ(ViaRead(ds, 0, 4), std::string("\x07\0\0\0", 4));
}

}  // namespace
}  // namespace slabfs
