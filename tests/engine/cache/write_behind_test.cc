// Write-behind through the container API: a streaming write keeps the
// chunks it is filling and the write-behind window resident, not the whole
// cache budget, and what it stored reads back, before and after a commit,
// for unfiltered and compressed chunks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "slabfs/container.h"
#include "tests/testutil/mem_container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {
namespace write_behind_test {

constexpr uint64_t kN = 1024;          // 1024 x 1024 f4: 4 MiB
constexpr uint64_t kChunk = 64;        // 64 x 64 chunks of 16 KiB; a band of 16 is 256 KiB
constexpr uint64_t kRows = 16;         // rows per write: a quarter of a band
constexpr uint64_t kBudget = 2 << 20;  // window: 256 KiB

std::vector<float> Rows(uint64_t first, uint64_t n) {
  std::vector<float> v(n * kN);
  for (uint64_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(first * kN + i) * 0.5f;
  return v;
}

class WriteBehindTest : public ::testing::TestWithParam<std::string> {};

TEST_P(WriteBehindTest, AStreamingWriteKeepsABandAndTheWindowResident) {
  auto disk = testutil::NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, testutil::OpenOnDisk(disk, {.cache_bytes = kBudget}));
  ASSERT_OK_AND_ASSIGN(
      Dataset d,
      c->CreateDataset("/d",
                       {.dtype = DType::kF4, .shape = {kN, kN}, .chunks = {kChunk, kChunk}, .filters = GetParam()}));
  uint64_t most = 0;
  for (uint64_t r = 0; r < kN; r += kRows) {
    std::vector<float> v = Rows(r, kRows);
    ASSERT_OK(d.Write(Slab::Box({r, 0}, {kRows, kN}), v.data()));
    most = std::max(most, c->cache_stats().resident_bytes);
  }
  // The band being filled (256 KiB) and at most a window (256 KiB) of
  // finished chunks; without write-behind the whole budget (2 MiB) fills
  // with dirty chunks first.
  const uint64_t band = (kN / kChunk) * kChunk * kChunk * 4;
  EXPECT_LE(most, 2 * band + band);
  EXPECT_GT(c->cache_stats().bytes_written, 0u);  // stored before any commit
  std::vector<float> back(kN * kN);
  ASSERT_OK(d.ReadElements(0, back.size(), back.data()));
  EXPECT_EQ(back, Rows(0, kN));
  d = Dataset();
  ASSERT_OK(c->Close());
  c.reset();
  ASSERT_OK_AND_ASSIGN(auto again, testutil::OpenOnDisk(disk, {.cache_bytes = kBudget}));
  ASSERT_OK_AND_ASSIGN(Dataset reopened, again->OpenDataset("/d"));
  std::fill(back.begin(), back.end(), 0.0f);
  ASSERT_OK(reopened.ReadElements(0, back.size(), back.data()));
  EXPECT_EQ(back, Rows(0, kN));
}

// A chunk written out of order or over again (rows in any order, sliding
// windows that overlap) is never stored by write-behind, which would store it again at
// the next write: it stays in the cache until a commit or the budget needs
// it, and is stored once.
TEST_P(WriteBehindTest, AChunkWrittenOverAgainIsStoredOnce) {
  auto disk = testutil::NewDisk();
  // Window: one chunk. Each write is one row (1/64 of the chunk).
  ASSERT_OK_AND_ASSIGN(auto c, testutil::OpenOnDisk(disk, {.cache_bytes = 8 * kChunk * kChunk * 4}));
  ASSERT_OK_AND_ASSIGN(
      Dataset d,
      c->CreateDataset(
          "/d", {.dtype = DType::kF4, .shape = {kChunk, kChunk}, .chunks = {kChunk, kChunk}, .filters = GetParam()}));
  // Rows in the order 0, 7, 14, ..., 63, 6, 13, ...: each row is written
  // three times or more, and never as a stream.
  std::vector<float> row(kChunk), model(kChunk * kChunk, 0.0f);
  for (uint64_t k = 0; k < 200; ++k) {
    const uint64_t r = (k * 7) % kChunk;
    std::fill(row.begin(), row.end(), static_cast<float>(k));
    std::fill(model.begin() + r * kChunk, model.begin() + (r + 1) * kChunk, static_cast<float>(k));
    ASSERT_OK(d.Write(Slab::Box({r, 0}, {1, kChunk}), row.data()));
  }
  EXPECT_EQ(c->cache_stats().bytes_written, 0u);
  ASSERT_OK(c->Commit());
  const uint64_t stored = c->cache_stats().bytes_written;
  EXPECT_GT(stored, 0u);
  EXPECT_LE(stored, kChunk * kChunk * 4);
  std::vector<float> back(kChunk * kChunk);
  ASSERT_OK(d.ReadElements(0, back.size(), back.data()));
  EXPECT_EQ(back, model);
}

// A chunk streamed in full and then written over again (a header patched
// after the body) is no longer finished: write-behind does not store it
// early only to store it again, and the commit stores each chunk once.
TEST_P(WriteBehindTest, AChunkRewrittenAfterItWasStreamedIsLeftToTheCommit) {
  constexpr uint64_t kC = 4096;  // elements per chunk: 16 KiB
  auto disk = testutil::NewDisk();
  // Budget 16 chunks: the window is 2.
  ASSERT_OK_AND_ASSIGN(auto c, testutil::OpenOnDisk(disk, {.cache_bytes = 16 * kC * 4}));
  ASSERT_OK_AND_ASSIGN(
      Dataset d,
      c->CreateDataset("/d", {.dtype = DType::kF4, .shape = {2 * kC}, .chunks = {kC}, .filters = GetParam()}));
  std::vector<float> model(2 * kC, 0.0f);
  auto write = [&](uint64_t first, uint64_t n, float v) {
    std::fill(model.begin() + first, model.begin() + first + n, v);
    ASSERT_OK(d.Write(Slab::Box({first}, {n}), model.data() + first));
  };
  write(0, kC / 2, 1.0f);  // chunk 0 streamed in two halves: finished
  write(kC / 2, kC / 2, 2.0f);
  write(0, 1, 3.0f);        // the header patched: no longer finished
  write(kC, kC / 2, 4.0f);  // chunk 1 streamed: one finished chunk, under the window
  write(kC + kC / 2, kC / 2, 5.0f);
  EXPECT_EQ(c->cache_stats().bytes_written, 0u);
  ASSERT_OK(c->Commit());
  if (GetParam().empty()) {
    EXPECT_EQ(c->cache_stats().bytes_written, 2 * kC * 4);
  }
  std::vector<float> back(2 * kC);
  ASSERT_OK(d.ReadElements(0, back.size(), back.data()));
  EXPECT_EQ(back, model);
}

// A write-behind store that fails (the disk fails every write from some
// point) fails no write: the chunks stay dirty in the cache, read back,
// and the commit reports the failure.
TEST_P(WriteBehindTest, AFailedWriteBehindFailsNoWriteAndTheCommitReportsIt) {
  auto disk = testutil::NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, testutil::OpenOnDisk(disk, {.cache_bytes = kBudget}));
  // 1 MiB: half the budget, four times the window.
  constexpr uint64_t kRowsHere = 256;
  ASSERT_OK_AND_ASSIGN(
      Dataset d,
      c->CreateDataset(
          "/d", {.dtype = DType::kF4, .shape = {kRowsHere, kN}, .chunks = {kChunk, kChunk}, .filters = GetParam()}));
  ASSERT_OK(c->Commit());
  {
    std::lock_guard lock(disk->mu);
    disk->crash_after = disk->writes;
  }
  for (uint64_t r = 0; r < kRowsHere; r += kRows) {
    std::vector<float> v = Rows(r, kRows);
    ASSERT_OK(d.Write(Slab::Box({r, 0}, {kRows, kN}), v.data()));
  }
  std::vector<float> back(kRowsHere * kN);
  ASSERT_OK(d.ReadElements(0, back.size(), back.data()));
  EXPECT_EQ(back, Rows(0, kRowsHere));
  EXPECT_FALSE(c->Commit().ok());
}

INSTANTIATE_TEST_SUITE_P(Filters, WriteBehindTest, ::testing::Values(std::string(), std::string("shuffle,deflate")),
                         [](const auto& p) { return p.param.empty() ? "unfiltered" : "deflate"; });

}  // namespace write_behind_test
}  // namespace
}  // namespace slabfs
