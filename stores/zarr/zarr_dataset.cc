#include "stores/zarr/zarr_dataset.h"

#include <cstring>

#include <fmt/format.h>

#include "tools/convert/zarr_codecs.h"
#include "tools/convert/zarr_listing.h"

namespace slabfs::stores {

namespace convert = tools::convert;

ZarrDataset::ZarrDataset(std::shared_ptr<const ZarrLayout> layout, std::shared_ptr<engine::ChunkCache> cache,
                         uint64_t cache_id)
    : ChunkedDataset(layout, std::move(cache), cache_id), layout_(std::move(layout)) {}

Status ZarrDataset::LoadChunk(size_t, std::span<const uint64_t> coords, char* out) const {
  const ZarrLayout& l = *layout_;
  const convert::ZarrArray& a = l.array;
  const uint64_t n = l.chunk_elements();
  const uint64_t expected = n * l.item_size;
  const std::string key = convert::ChunkKey(a, Dims(coords.begin(), coords.end()));
  const std::string what = fmt::format("{}: array {} chunk {}", l.store, l.path, key);
  if (a.codecs.empty() && a.transpose.empty()) {
    // Raw elements: read straight into the caller's buffer.
    Status s = convert::ReadRawZarrChunkFile(l.dir + "/" + key, expected, out);
    if (s.code() == Code::kNotFound) {
      Fill(out, n);
      return Status::OK();
    }
    if (!s.ok()) return s.WithContext(what);
    if (a.big_endian) convert::SwapBytes(out, expected, l.item_size);
    return Status::OK();
  }
  // Per thread: chunk reads run on the pool, each thread one chunk at once.
  thread_local std::string stored, raw;
  Status s = convert::ReadZarrChunkFile(l.dir + "/" + key, convert::ZarrChunkFileLimit(expected), &stored);
  if (s.code() == Code::kNotFound) {
    Fill(out, n);
    return Status::OK();
  }
  if (!s.ok()) return s.WithContext(what);
  if (a.transpose.empty()) {
    // Straight into the caller's buffer (the cache's, or the reader's).
    SLABFS_RETURN_IF_ERROR(convert::DecodeChunk(a.codecs, stored, expected, what, out));
    if (a.big_endian) convert::SwapBytes(out, expected, l.item_size);
    return Status::OK();
  }
  SLABFS_RETURN_IF_ERROR(convert::DecodeChunk(a.codecs, stored, expected, what, &raw));
  if (a.big_endian) convert::SwapBytes(raw.data(), raw.size(), l.item_size);
  convert::Untranspose(raw.data(), a.chunks, a.transpose, l.item_size, out);
  return Status::OK();
}

Result<std::string> ZarrDataset::ReadEncodedChunk(const Dims& coords, uint32_t* filter_mask) const {
  const ZarrLayout& l = *layout_;
  const convert::ZarrArray& a = l.array;
  const bool zlib_alone = a.codecs.size() == 1 && a.codecs[0].kind == convert::ZarrCodec::Kind::kZlib &&
                          l.info.dataset.filters == fmt::format("deflate={}", a.codecs[0].level);
  if (!zlib_alone || a.big_endian || !a.transpose.empty() || a.scalar || coords.size() != a.chunks.size()) {
    return StoreDataset::ReadEncodedChunk(coords, filter_mask);
  }
  const std::string key = convert::ChunkKey(a, coords);
  std::string stored;
  Status s = convert::ReadZarrChunkFile(l.dir + "/" + key,
                                        convert::ZarrChunkFileLimit(l.chunk_elements() * l.item_size), &stored);
  if (!s.ok()) return Err(s.WithContext(fmt::format("{}: array {} chunk {}", l.store, l.path, key)));
  *filter_mask = 0;
  return stored;
}

}  // namespace slabfs::stores
