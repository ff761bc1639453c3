// Filtered datasets end to end: the chunk format layer with the filter
// pipeline under every dtype and pipeline, edge chunks, variable chunk sizes
// in the index, the per-chunk filter mask, and damaged chunks on disk.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "engine/cache/chunk_cache.h"
#include "engine/chunk/chunk_format.h"
#include "tests/testutil/mem_container.h"
#include "tests/testutil/status_matchers.h"

namespace slabfs {
namespace {
namespace filtered_dataset_test {  // its own names in a unity batch

using testutil::Disk;
using testutil::NewDisk;
using testutil::OpenOnDisk;

// Bytes of an element at position i: smooth (compressible) below `split`,
// pseudo-random above it.
void ElementBytes(uint64_t i, size_t isz, uint64_t split, uint32_t salt, char* out) {
  uint64_t v;
  if (i < split) {
    v = static_cast<uint64_t>(1000.0 * (2.0 + std::sin(static_cast<double>(i) / 50.0)));
  } else {
    v = (i + salt) * 0x9E3779B97F4A7C15ull;
    v ^= v >> 29;
  }
  std::memcpy(out, &v, isz);
}

struct Reference {
  size_t isz;
  std::string bytes;
};

// The canonical text of a pipeline, as DatasetInfo shows it.
std::string Canonical(const char* filters) { return engine::FilterPipeline::Parse(filters)->ToString(); }

uint64_t Count(const Dims& d) {
  uint64_t n = 1;
  for (uint64_t x : d) n *= x;
  return n;
}

// Copies a box between a dense C-order array of `shape` and a buffer.
void ForBox(const Dims& shape, const Dims& start, const Dims& count, const std::function<void(uint64_t)>& f) {
  const size_t rank = shape.size();
  Dims idx(rank, 0);
  const uint64_t n = Count(count);
  for (uint64_t k = 0; k < n; ++k) {
    uint64_t off = 0;
    for (size_t d = 0; d < rank; ++d) off = off * shape[d] + start[d] + idx[d];
    f(off);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < count[d]) break;
      idx[d] = 0;
    }
  }
}

class PipelineRoundTrip : public ::testing::TestWithParam<std::tuple<const char*, DType>> {};

TEST_P(PipelineRoundTrip, RandomBoxesCommitAndReopen) {
  const auto [filters, dtype] = GetParam();
  const size_t isz = ItemSize(dtype);
  // 37 x 29 in 8 x 6 chunks: the last chunk row and column are trimmed.
  const Dims shape{37, 29}, chunks{8, 6};
  auto disk = NewDisk();
  std::unique_ptr<Container> c;
  ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(disk, {.cache_bytes = 8 << 10}));  // a small cache: many write-backs
  ASSERT_OK_AND_ASSIGN(Dataset ds,
                       c->CreateDataset("/d", {.dtype = dtype, .shape = shape, .chunks = chunks, .filters = filters}));
  EXPECT_EQ(ds.info().filters, Canonical(filters));
  const uint64_t n = Count(shape);
  std::string ref(n * isz, '\0');
  std::mt19937_64 rng(std::hash<std::string>()(filters) + static_cast<unsigned>(dtype));
  auto pick = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };

  auto check_all = [&](const char* when) {
    SCOPED_TRACE(when);
    std::string got(n * isz, '\x55');
    ASSERT_OK(ds.ReadElements(0, n, got.data()));
    ASSERT_TRUE(got == ref);
    // Stored bytes are exactly the chunks' file images, each no larger than
    // its trimmed extent plus a checksum.
    std::vector<StoredChunk> stored;
    ASSERT_OK_AND_ASSIGN(stored, ds.StoredChunks());
    uint64_t total = 0;
    for (const StoredChunk& sc : stored) {
      const uint64_t raw =
          std::min<uint64_t>(8, 37 - sc.coords[0] * 8) * std::min<uint64_t>(6, 29 - sc.coords[1] * 6) * isz;
      EXPECT_LE(sc.bytes, raw + 4);
      EXPECT_GT(sc.bytes, 0u);
      total += sc.bytes;
    }
    EXPECT_EQ(ds.info().stored_bytes, total);
    EXPECT_EQ(ds.info().allocated_chunks, stored.size());
  };

  uint32_t salt = 1;
  for (int step = 0; step < 60; ++step) {
    const uint64_t op = pick(0, 9);
    Dims start(2), count(2);
    for (size_t d = 0; d < 2; ++d) {
      start[d] = pick(0, shape[d] - 1);
      count[d] = pick(1, shape[d] - start[d]);
    }
    if (op < 5) {
      std::string data(Count(count) * isz, '\0');
      const uint64_t split = pick(0, 1) ? Count(count) : Count(count) / 2;
      for (uint64_t k = 0; k < Count(count); ++k) ElementBytes(k, isz, split, salt, &data[k * isz]);
      ++salt;
      ASSERT_OK(ds.Write(Slab::Box(start, count), data.data()));
      uint64_t k = 0;
      ForBox(shape, start, count, [&](uint64_t off) { std::memcpy(&ref[off * isz], &data[k++ * isz], isz); });
    } else if (op < 8) {
      std::string got(Count(count) * isz, '\0');
      ASSERT_OK(ds.Read(Slab::Box(start, count), got.data()));
      uint64_t k = 0;
      bool same = true;
      ForBox(shape, start, count,
             [&](uint64_t off) { same &= std::memcmp(&ref[off * isz], &got[k++ * isz], isz) == 0; });
      ASSERT_TRUE(same) << "read at step " << step;
    } else if (op == 8) {
      ASSERT_OK(c->Commit());
    } else {
      ASSERT_OK(c->Close());
      c.reset();
      ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(disk, {.cache_bytes = 8 << 10}));
      ASSERT_OK_AND_ASSIGN(ds, c->OpenDataset("/d"));
      EXPECT_EQ(ds.info().filters, Canonical(filters));
    }
  }
  check_all("before commit");
  ASSERT_OK(c->Close());
  c.reset();
  ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(disk, {.read_only = true}));
  ASSERT_OK_AND_ASSIGN(ds, c->OpenDataset("/d"));
  check_all("after reopen");
}

INSTANTIATE_TEST_SUITE_P(Pipelines, PipelineRoundTrip,
                         ::testing::Combine(::testing::Values("shuffle", "deflate=1", "deflate=9", "checksum",
                                                              "shuffle,deflate=6", "shuffle,deflate=6,checksum",
                                                              "checksum,shuffle,deflate=3", "deflate=2,shuffle"),
                                            ::testing::Values(DType::kU1, DType::kI2, DType::kU4, DType::kF4,
                                                              DType::kF8, DType::kI8)),
                         [](const ::testing::TestParamInfo<PipelineRoundTrip::ParamType>& p) {
                           std::string name =
                               std::string(std::get<0>(p.param)) + "_" + std::string(DTypeName(std::get<1>(p.param)));
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

// A dataset of `shape` with one filter pipeline, written with smooth data
// except for one chunk of noise, committed and closed.
struct Stored {
  std::shared_ptr<Disk> disk;
  std::vector<float> data;
};

Stored MakeStored(const char* filters) {
  Stored s{NewDisk(), std::vector<float>(64 * 64)};
  // Smooth and quantized to 1/64, as measured data often is: compressible.
  for (size_t i = 0; i < s.data.size(); ++i)
    s.data[i] =
        std::round(64.f * (std::sin(static_cast<float>(i / 64) / 10.f) + std::cos(static_cast<float>(i % 64) / 7.f))) /
        64.f;
  auto c = OpenOnDisk(s.disk);
  EXPECT_TRUE(c.has_value());
  auto ds = (*c)->CreateDataset("/g", {.dtype = DType::kF4, .shape = {64, 64}, .chunks = {16, 16}, .filters = filters});
  EXPECT_TRUE(ds.has_value());
  EXPECT_OK(ds->WriteElements(0, s.data.size(), s.data.data()));
  EXPECT_OK((*c)->Close());
  return s;
}

// The stored chunk at grid position (r, c).
StoredChunk ChunkAt(const std::shared_ptr<Disk>& disk, uint64_t r, uint64_t col) {
  auto c = OpenOnDisk(disk, {.read_only = true});
  EXPECT_TRUE(c.has_value());
  auto ds = (*c)->OpenDataset("/g");
  EXPECT_TRUE(ds.has_value());
  auto chunks = ds->StoredChunks();
  EXPECT_TRUE(chunks.has_value());
  for (const StoredChunk& sc : *chunks)
    if (sc.coords == Dims{r, col}) return sc;
  ADD_FAILURE() << "no chunk at " << r << "," << col;
  return {};
}

void Damage(const std::shared_ptr<Disk>& disk, uint64_t at, std::string_view bytes) {
  std::lock_guard lock(disk->mu);
  disk->durable.replace(at, bytes.size(), bytes);
  disk->current = disk->durable;
}

// The seed's sliding-window experiment in small: a W x W window moved
// row-major over 200 x 200 i4 in 10 x 10 chunks, with a cache of 25 chunks
// (a row of chunks is 20: the working set fits). Every chunk goes to the
// file exactly once and none is read back, for windows that divide the
// chunk and windows that straddle chunks (bench/bench_cache.cc measures
// the full-size one next to libhdf5).
TEST(FilteredDataset, SlidingWindowWritesEachChunkOnceWhenTheWorkingSetFits) {
  constexpr uint64_t n = 200, chunk = 10;
  constexpr uint64_t chunk_file_bytes = chunk * chunk * 4 + 4;  // + CRC-32C
  for (uint64_t w : {1, 3, 6, 10, 13, 25}) {
    SCOPED_TRACE(w);
    auto disk = NewDisk();
    {
      ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk, {.create = true, .cache_bytes = 25 * chunk * chunk * 4}));
      ASSERT_OK_AND_ASSIGN(
          Dataset ds,
          c->CreateDataset("/d",
                           {.dtype = DType::kI4, .shape = {n, n}, .chunks = {chunk, chunk}, .filters = "checksum"}));
      std::vector<int32_t> buf(w * w);
      for (uint64_t r = 0; r < n; r += w) {
        for (uint64_t q = 0; q < n; q += w) {
          const uint64_t rows = std::min(w, n - r), cols = std::min(w, n - q);
          for (uint64_t i = 0; i < rows; ++i)
            for (uint64_t j = 0; j < cols; ++j) buf[i * cols + j] = static_cast<int32_t>((r + i) * n + q + j);
          ASSERT_OK(ds.Write(Slab::Box({r, q}, {rows, cols}), buf.data()));
        }
      }
      ASSERT_OK(c->Commit());
      const CacheStats st = c->cache_stats();
      EXPECT_EQ(st.bytes_read, 0u);
      EXPECT_EQ(st.bytes_written, (n / chunk) * (n / chunk) * chunk_file_bytes);
      EXPECT_LE(st.resident_bytes, st.budget_bytes);
    }
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk, {.read_only = true}));
    ASSERT_OK_AND_ASSIGN(Dataset ds, c->OpenDataset("/d"));
    std::vector<int32_t> all(n * n);
    ASSERT_OK(ds.Read(Slab::All({n, n}), all.data()));
    for (uint64_t k = 0; k < n * n; ++k) ASSERT_EQ(all[k], static_cast<int32_t>(k)) << k;
  }
}

TEST(FilteredDataset, SmoothChunksShrinkAndNoiseIsStoredRaw) {
  Stored s = MakeStored("shuffle,deflate=6");
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(s.disk));
    ASSERT_OK_AND_ASSIGN(Dataset ds, c->OpenDataset("/g"));
    std::vector<uint32_t> noise(16 * 16);  // random bit patterns
    std::mt19937 rng(7);
    for (uint32_t& x : noise) x = static_cast<uint32_t>(rng());
    ASSERT_OK(ds.Write(Slab::Box({16, 32}, {16, 16}), noise.data()));
    ASSERT_OK(c->Close());
  }
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(s.disk, {.read_only = true}));
  ASSERT_OK_AND_ASSIGN(Dataset ds, c->OpenDataset("/g"));
  std::vector<StoredChunk> chunks;
  ASSERT_OK_AND_ASSIGN(chunks, ds.StoredChunks());
  ASSERT_EQ(chunks.size(), 16u);
  for (const StoredChunk& sc : chunks) {
    SCOPED_TRACE(FormatDims(sc.coords));
    if (sc.coords == Dims{1, 2}) {
      EXPECT_EQ(sc.filter_mask, 2u);  // deflate (filter 1) skipped
      EXPECT_EQ(sc.bytes, 16u * 16 * 4);
    } else {
      EXPECT_EQ(sc.filter_mask, 0u);
      EXPECT_LT(sc.bytes, 16u * 16 * 4 / 2);
    }
  }
  EXPECT_LT(ds.info().stored_bytes, ds.info().size_bytes / 2);
}

TEST(FilteredDataset, FlippedByteIsCaughtByTheChecksumAndOtherChunksStillRead) {
  Stored s = MakeStored("shuffle,deflate=6,checksum");
  const StoredChunk bad = ChunkAt(s.disk, 1, 2);
  ASSERT_GT(bad.bytes, 8u);
  {
    std::lock_guard lock(s.disk->mu);
    s.disk->durable[bad.addr + bad.bytes / 2] ^= 0x10;
    s.disk->current = s.disk->durable;
  }
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(s.disk, {.read_only = true}));
  ASSERT_OK_AND_ASSIGN(Dataset ds, c->OpenDataset("/g"));
  std::vector<float> all(64 * 64);
  Status st = ds.ReadElements(0, all.size(), all.data());
  EXPECT_EQ(st.code(), Code::kCorruption);
  EXPECT_NE(st.message().find("chunk [1,2]"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find("checksum"), std::string::npos) << st.ToString();
  // One element of the damaged chunk: still Corruption, never data.
  float one;
  EXPECT_EQ(ds.Read(Slab::Box({20, 40}, {1, 1}), &one).code(), Code::kCorruption);
  // Every other chunk reads back exactly.
  std::vector<float> band(16 * 64);
  ASSERT_OK(ds.Read(Slab::Box({32, 0}, {16, 64}), band.data()));
  EXPECT_EQ(0, std::memcmp(band.data(), s.data.data() + 32 * 64, band.size() * 4));
  std::vector<float> left(64 * 32);
  ASSERT_OK(ds.Read(Slab::Box({0, 0}, {64, 32}), left.data()));
  for (size_t r = 0; r < 64; ++r) ASSERT_EQ(0, std::memcmp(&left[r * 32], &s.data[r * 64], 32 * 4)) << "row " << r;
}

TEST(FilteredDataset, DamagedDeflateStreamIsCorruptionNotACrash) {
  Stored s = MakeStored("deflate=6");
  const StoredChunk bad = ChunkAt(s.disk, 2, 1);
  ASSERT_GT(bad.bytes, 16u);
  // Garbage over the middle of the stream, then a chunk cut short (zeros
  // after a valid-looking header).
  Damage(s.disk, bad.addr + bad.bytes / 3, std::string(bad.bytes / 3, '\xA7'));
  {
    ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(s.disk, {.read_only = true}));
    ASSERT_OK_AND_ASSIGN(Dataset ds, c->OpenDataset("/g"));
    std::vector<float> block(16 * 16);
    EXPECT_EQ(ds.Read(Slab::Box({32, 16}, {16, 16}), block.data()).code(), Code::kCorruption);
    ASSERT_OK(ds.Read(Slab::Box({0, 0}, {16, 16}), block.data()));
    EXPECT_EQ(block[17], s.data[64 + 1]);
  }
  Damage(s.disk, bad.addr + 2, std::string(bad.bytes - 2, '\0'));
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(s.disk));
  ASSERT_OK_AND_ASSIGN(Dataset ds, c->OpenDataset("/g"));
  std::vector<float> block(4);
  EXPECT_EQ(ds.Read(Slab::Box({33, 17}, {2, 2}), block.data()).code(), Code::kCorruption);
  // A partial write into the damaged chunk is accepted (write without
  // read), but cannot be merged when it is written back: it is dropped and
  // reported once, and the commit goes on with everything else.
  EXPECT_OK(ds.TakeLostWrites());
  ASSERT_OK(ds.Write(Slab::Box({33, 17}, {2, 2}), block.data()));
  std::vector<float> elsewhere(4, 5.f);
  ASSERT_OK(ds.Write(Slab::Box({1, 1}, {2, 2}), elsewhere.data()));
  ASSERT_OK(c->Commit());
  Status lost = ds.TakeLostWrites();
  EXPECT_EQ(lost.code(), Code::kCorruption);
  EXPECT_NE(lost.message().find("chunk [2,1]"), std::string::npos) << lost.ToString();
  EXPECT_OK(ds.TakeLostWrites());  // reported once
  EXPECT_EQ(ds.Read(Slab::Box({33, 17}, {2, 2}), block.data()).code(), Code::kCorruption);
  // Overwriting the whole damaged chunk needs nothing of it, and mends it.
  std::vector<float> whole(16 * 16, 2.5f);
  ASSERT_OK(ds.Write(Slab::Box({32, 16}, {16, 16}), whole.data()));
  ASSERT_OK(c->Close());
  ASSERT_OK_AND_ASSIGN(c, OpenOnDisk(s.disk, {.read_only = true}));
  ASSERT_OK_AND_ASSIGN(ds, c->OpenDataset("/g"));
  std::vector<float> all(64 * 64);
  ASSERT_OK(ds.ReadElements(0, all.size(), all.data()));
  EXPECT_EQ(all[33 * 64 + 17], 2.5f);
  EXPECT_EQ(all[1 * 64 + 1], 5.f);
}

TEST(FilteredDataset, AShrinkThatCutsADamagedChunkFailsAndLosesNothing) {
  Stored s = MakeStored("shuffle,deflate=6,checksum");
  const StoredChunk bad = ChunkAt(s.disk, 2, 1);
  {
    std::lock_guard lock(s.disk->mu);
    s.disk->durable[bad.addr + 3] ^= 0x01;
    s.disk->current = s.disk->durable;
  }
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(s.disk));
  ASSERT_OK_AND_ASSIGN(Dataset ds, c->OpenDataset("/g"));
  const uint64_t stored = ds.info().stored_bytes;
  // Rows 40.. go: chunk row 3 would be freed, chunk row 2 (with the damaged
  // chunk) cut.
  EXPECT_EQ(ds.Resize({40, 64}).code(), Code::kCorruption);
  EXPECT_EQ(ds.info().shape, (Dims{64, 64}));
  EXPECT_EQ(ds.info().stored_bytes, stored);
  std::vector<float> tail(16 * 64);
  ASSERT_OK(ds.Read(Slab::Box({48, 0}, {16, 64}), tail.data()));
  EXPECT_EQ(0, std::memcmp(tail.data(), s.data.data() + 48 * 64, tail.size() * 4));
  std::vector<float> cut_ok(16 * 16);
  ASSERT_OK(ds.Read(Slab::Box({32, 0}, {16, 16}), cut_ok.data()));
  EXPECT_EQ(cut_ok[0], s.data[32 * 64]);
  ASSERT_OK(c->Close());
}

TEST(FilteredDataset, ChecksumFilterMaskAndSizesAreValidated) {
  // A record claiming more than the chunk can hold is refused before the
  // file is touched; a dense chunk of the wrong size likewise.
  auto filtered = engine::ChunkFormat::ForDataset(4, std::string(4, '\0'),
                                                  *engine::FilterPipeline::Parse("shuffle,deflate=6,checksum"));
  auto dense = engine::ChunkFormat::ForDataset(4, std::string(4, '\0'), engine::FilterPipeline());
  EXPECT_TRUE(filtered->variable_size());
  EXPECT_FALSE(filtered->direct_io());
  EXPECT_FALSE(dense->variable_size());
  EXPECT_TRUE(dense->direct_io());
  EXPECT_EQ(filtered->MaxFileBytes(100), 404u);
  EXPECT_EQ(dense->MaxFileBytes(100), 400u);

  class NoReads final : public engine::File {
   public:
    Status ReadAt(uint64_t, void*, size_t) override {
      ++reads;
      return Status::IOError("must not be read");
    }
    Status WriteAt(uint64_t, const void*, size_t) override { return Status::IOError("no"); }
    Status Sync() override { return Status::OK(); }
    Result<uint64_t> Size() override { return uint64_t{1} << 40; }
    Status Truncate(uint64_t) override { return Status::OK(); }
    const std::string& name() const override { return name_; }
    int reads = 0;
    std::string name_ = "noreads";
  } file;
  engine::ChunkCache cache(1 << 20, 1 << 20);
  const engine::ChunkIo io{&file, &cache};
  std::vector<char> mem(400);
  EXPECT_EQ(filtered->Load(io, 4096, 405, 0, mem.data(), 100).code(), Code::kCorruption);
  EXPECT_EQ(filtered->Load(io, 4096, 0, 0, mem.data(), 100).code(), Code::kCorruption);
  EXPECT_EQ(filtered->Load(io, 4096, uint64_t{1} << 33, 0, mem.data(), 100).code(), Code::kCorruption);
  EXPECT_EQ(dense->Load(io, 4096, 401, 0, mem.data(), 100).code(), Code::kCorruption);
  EXPECT_EQ(file.reads, 0);

  // A chunk's own image round-trips; a mask naming a filter that cannot be
  // skipped is Corruption.
  std::vector<float> v(100);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 7);
  std::string scratch;
  const engine::FileImage img = filtered->MemToFile(reinterpret_cast<const char*>(v.data()), 100, &scratch);
  EXPECT_LT(img.bytes.size(), 400u);
  EXPECT_EQ(img.filter_mask, 0u);
}

TEST(FilteredDataset, GrowingAndShrinkingKeepsStoredBytesExact) {
  auto disk = NewDisk();
  ASSERT_OK_AND_ASSIGN(auto c, OpenOnDisk(disk));
  ASSERT_OK_AND_ASSIGN(Dataset ds, c->CreateDataset("/s", {.dtype = DType::kU2,
                                                           .shape = {0, 100},
                                                           .max_shape = {kUnlimited, 100},
                                                           .chunks = {10, 32},
                                                           .filters = "shuffle,deflate=1,checksum"}));
  std::vector<uint16_t> row(100);
  for (int r = 0; r < 95; ++r) {
    for (size_t i = 0; i < row.size(); ++i) row[i] = static_cast<uint16_t>(r * 3 + i);
    ASSERT_OK(ds.WriteBytes(ds.size_bytes(), row.size() * 2, row.data(), Dataset::Growth::kGrowRows));
  }
  ASSERT_OK(c->Commit());
  ASSERT_OK(ds.Resize({37, 70}));
  ASSERT_OK(ds.Resize({60, 100}));
  std::vector<uint16_t> got(60 * 100);
  ASSERT_OK(ds.ReadElements(0, got.size(), got.data()));
  for (size_t r = 0; r < 60; ++r)
    for (size_t i = 0; i < 100; ++i) {
      const uint16_t want = r < 37 && i < 70 ? static_cast<uint16_t>(r * 3 + i) : 0;
      ASSERT_EQ(got[r * 100 + i], want) << r << "," << i;
    }
  std::vector<StoredChunk> chunks;
  ASSERT_OK_AND_ASSIGN(chunks, ds.StoredChunks());
  uint64_t total = 0;
  for (const auto& sc : chunks) total += sc.bytes;
  EXPECT_EQ(ds.info().stored_bytes, total);
  EXPECT_EQ(chunks.size(), 4u * 3);  // rows 0-36: 4 chunk rows; columns 0-69: 3 chunk columns
  ASSERT_OK(c->Close());
}

}  // namespace filtered_dataset_test
}  // namespace
}  // namespace slabfs
