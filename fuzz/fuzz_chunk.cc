// The chunk decoders: dense chunks through every filter pipeline, and
// sparse chunks (the defined set, runs or bitmap, then the values) with and
// without filters. The first bytes pick the format, the item size, the
// chunk's element count and the filter mask; the rest is the stored chunk.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/cache/chunk_cache.h"
#include "engine/chunk/chunk_format.h"
#include "engine/filter/pipeline.h"
#include "engine/format/layout.h"
#include "fuzz/mem_file.h"

using namespace slabfs;
using namespace slabfs::engine;

namespace {
const char* const kPipelines[] = {"",
                                  "checksum",
                                  "deflate=1",
                                  "shuffle",
                                  "shuffle,deflate=6",
                                  "deflate=1,checksum",
                                  "shuffle,deflate=1,checksum",
                                  "checksum,deflate=9"};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 5) return 0;
  const bool sparse = data[0] & 1;
  const char* pipeline = kPipelines[(data[0] >> 1) & 7];
  const size_t item = size_t{1} << ((data[0] >> 4) & 3);
  const uint64_t n = 1 + (static_cast<uint64_t>(data[1]) | (static_cast<uint64_t>(data[2]) << 8));
  const uint32_t mask = data[3] & 7;
  auto filters = FilterPipeline::Parse(pipeline);
  if (!filters) return 0;
  auto format = ChunkFormat::ForDataset(item, std::string(item, '\x5a'), *filters, sparse);
  std::string image(kDataStart, '\0');
  image.append(reinterpret_cast<const char*>(data) + 4, size - 4);
  fuzz::MemFile file(std::move(image));
  ChunkCache cache(1 << 20, 1 << 20);
  ChunkIo io{&file, &cache};
  const uint64_t stored = size - 4;
  std::vector<char> mem(format->MemBytes(n));
  (void)format->Load(io, kDataStart, stored, mask, mem.data(), n);
  if (format->tracks_defined()) (void)format->StoredDefined(io, kDataStart, stored, n);
  return 0;
}
