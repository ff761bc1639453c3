// Reads of a chunked foreign dataset (stores/chunked_dataset.h) from many
// threads at once, as the kernel's read-ahead requests arrive: reads that
// miss the same chunks decode each chunk once (ChunkCache::ClaimLoad), and
// every read gets the chunk's bytes; a chunk whose load fails fails every
// read that needs it, and a later read tries again.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "engine/cache/chunk_cache.h"
#include "stores/chunked_dataset.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs::stores {
namespace {
namespace chunked_read_test {

constexpr uint64_t kSide = 64, kChunk = 8;

// A 64 x 64 u1 dataset in 8 x 8 chunks, all stored, that "decodes" each
// chunk slowly into bytes naming its grid position, counting the loads;
// the chunk at grid position `failing` fails while `fail` is set.
class SlowDataset final : public ChunkedDataset {
 public:
  using ChunkedDataset::ChunkedDataset;
  Status LoadChunk(size_t, std::span<const uint64_t> coords, char* out) const override {
    loads.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const uint64_t linear = coords[0] * (kSide / kChunk) + coords[1];
    if (fail.load() && linear == failing) return Status::Corruption("chunk " + std::to_string(linear) + " is damaged");
    for (uint64_t i = 0; i < kChunk * kChunk; ++i) out[i] = static_cast<char>(linear);
    return Status::OK();
  }
  mutable std::atomic<int> loads{0};
  std::atomic<bool> fail{false};
  uint64_t failing = 0;

 protected:
  uint64_t StoredBytes(size_t) const override { return kChunk * kChunk; }
};

std::shared_ptr<SlowDataset> MakeSlow() {
  auto layout = std::make_shared<ChunkedLayout>();
  layout->path = "/slow";
  layout->info.dataset.dtype = DType::kU1;
  layout->info.dataset.shape = {kSide, kSide};
  layout->info.dataset.chunks = {kChunk, kChunk};
  layout->info.dataset.num_elements = kSide * kSide;
  layout->info.dataset.fill = std::string(1, '\0');
  layout->info.layout = StoreLayout::kChunked;
  layout->chunk = {kChunk, kChunk};
  layout->decodes = true;
  for (uint64_t k = 0; k < (kSide / kChunk) * (kSide / kChunk); ++k) layout->keys.push_back(k);
  auto cache = std::make_shared<engine::ChunkCache>(1 << 20, 1 << 20);
  return std::make_shared<SlowDataset>(layout, cache, 1);
}

// Rows [row, row + 2) of the dataset, every column: a part of each chunk of
// the band, as a 1 MiB read-ahead request is of a band of larger chunks.
Status ReadRows(const SlowDataset& ds, uint64_t row, std::vector<char>* out) {
  out->assign(2 * kSide, 0);
  Slab sel;
  sel.dims = {DimSlab{row, 1, 2, 1}, DimSlab{0, 1, kSide, 1}};
  return ds.Read(sel, out->data());
}

bool RowsHoldTheirChunks(const std::vector<char>& rows, uint64_t row) {
  for (uint64_t c = 0; c < kSide; ++c) {
    const char want = static_cast<char>((row / kChunk) * (kSide / kChunk) + c / kChunk);
    if (rows[c] != want || rows[kSide + c] != want) return false;
  }
  return true;
}

TEST(ChunkedReadTest, ConcurrentReadsOfOneBandDecodeEachChunkOnce) {
  auto ds = MakeSlow();
  for (uint64_t band = 0; band < kSide / kChunk; ++band) {
    const int before = ds->loads.load();
    std::atomic<int> good{0};
    std::vector<std::thread> readers;
    for (uint64_t t = 0; t < 4; ++t) {
      readers.emplace_back([&, t] {
        std::vector<char> rows;
        const uint64_t row = band * kChunk + 2 * t;
        if (ReadRows(*ds, row, &rows).ok() && RowsHoldTheirChunks(rows, row)) good.fetch_add(1);
      });
    }
    for (std::thread& r : readers) r.join();
    EXPECT_EQ(good.load(), 4) << "band " << band;
    EXPECT_EQ(ds->loads.load() - before, static_cast<int>(kSide / kChunk)) << "band " << band;
  }
}

TEST(ChunkedReadTest, AFailedLoadFailsItsReadersAndALaterReadLoadsAgain) {
  auto ds = MakeSlow();
  ds->failing = 3;  // band 0, fourth chunk
  ds->fail = true;
  std::atomic<int> failed{0};
  std::vector<std::thread> readers;
  for (uint64_t t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      std::vector<char> rows;
      Status s = ReadRows(*ds, 2 * t, &rows);
      if (s.code() == Code::kCorruption && s.message().find("chunk 3 is damaged") != std::string::npos) {
        failed.fetch_add(1);
      }
    });
  }
  for (std::thread& r : readers) r.join();
  EXPECT_EQ(failed.load(), 4);
  ds->fail = false;
  std::vector<char> rows;
  ASSERT_OK(ReadRows(*ds, 0, &rows));
  EXPECT_TRUE(RowsHoldTheirChunks(rows, 0));
}

}  // namespace chunked_read_test
}  // namespace
}  // namespace slabfs::stores
