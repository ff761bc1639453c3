// The five chunk-index decoders: the first bytes give the kind and the
// geometry, then comes the root (as a dataset header holds it) and the
// image of the file from the data start on, holding its blocks. Every
// record is visited, every block named, and a few lookups made.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/format/layout.h"
#include "engine/index/chunk_index.h"
#include "engine/space/allocator.h"
#include "engine/txn/block_store.h"
#include "fuzz/mem_file.h"

using namespace slabfs;
using namespace slabfs::engine;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  size_t at = 0;
  auto byte = [&]() -> uint8_t { return at < size ? data[at++] : 0; };
  auto u16 = [&]() -> uint16_t { return static_cast<uint16_t>(byte() | (byte() << 8)); };
  const auto kind = static_cast<IndexKind>(1 + byte() % 5);
  const size_t rank = 1 + byte() % 4;
  IndexGeometry geo;
  geo.filtered = byte() & 1;
  geo.max_chunk_bytes = uint64_t{1} << 30;
  for (size_t d = 0; d < rank; ++d) {
    uint16_t n = u16();
    geo.max_grid.push_back(n == 0 ? kUnlimited : n);
  }
  // A grid of billions of chunks takes most of an execution to set up and
  // walk while teaching the fuzzer nothing new, so only one input in 16
  // (a zero high nibble in the first byte) keeps a grid past 2^20 chunks;
  // the others are clamped to at most 2^20 chunks in all.
  uint64_t product = 1;
  for (uint64_t n : geo.max_grid) product = n == kUnlimited || product > (1u << 20) ? (1u << 21) : product * n;
  if (product > (1u << 20) && size > 0 && (data[0] & 0xF0) != 0) {
    constexpr uint64_t kPerDim[] = {0, 1u << 20, 1024, 101, 32};
    for (uint64_t& n : geo.max_grid)
      if (n != kUnlimited) n = std::min<uint64_t>(n, kPerDim[rank]);
  }
  const size_t root_len = std::min<size_t>(u16() % 64, size - std::min(at, size));
  std::string root(reinterpret_cast<const char*>(data) + std::min(at, size), root_len);
  at = std::min(at + root_len, size);
  std::string image(kDataStart, '\0');
  image.append(reinterpret_cast<const char*>(data) + at, size - at);

  const uint64_t file_end = image.size();
  fuzz::MemFile file(std::move(image));
  Allocator alloc;
  alloc.Reset(file_end, {});
  BlockStore store(&file, &alloc);
  auto index = OpenChunkIndex(kind, geo, root, &store, "fuzz");
  if (!index) return 0;
  std::vector<BlockRef> blocks;
  (void)(*index)->CollectBlocks(&blocks);
  uint64_t seen = 0;
  (void)(*index)->ForEach(
      [&](ChunkCoord, const ChunkRecord&) { return ++seen < 100000 ? Status::OK() : Status::IOError("enough"); });
  std::vector<uint64_t> c(rank, 0);
  for (int i = 0; i < 8; ++i) {
    (void)(*index)->Get(ChunkCoord(c.data(), rank));
    for (size_t d = 0; d < rank; ++d) c[d] = c[d] * 3 + 1 + i;
  }
  std::vector<uint64_t> lo(rank, 1), hi(rank, 5);
  (void)(*index)->ForEachIn(ChunkCoord(lo.data(), rank), ChunkCoord(hi.data(), rank),
                            [](ChunkCoord, const ChunkRecord&) { return Status::OK(); });
  return 0;
}
