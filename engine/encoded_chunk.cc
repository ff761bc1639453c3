// DatasetState::WriteEncodedChunk: a chunk that arrives already encoded the
// way this dataset encodes it (an HDF5 import whose source shuffled and
// deflated it the same way: the same byte shuffle, a zlib stream, the same
// filter mask bits) is stored as it is, after one decode that checks it.
// Compressing again is the costly part of a copy; decoding runs several
// times faster.
#include <memory>

#include "engine/container_impl.h"

namespace slabfs::engine {

Status DatasetState::WriteEncodedChunk(ChunkCoord coords, std::string_view image, uint32_t filter_mask) {
  SLABFS_RETURN_IF_ERROR(CheckWritable());
  ReaderLock cl(c_->commit_mu());
  SLABFS_RETURN_IF_ERROR(CheckPresent());
  WriterLock lock(rw_);
  // The layout is read under the lock: a relayout swaps it.
  if (!index_->geometry().filtered || format_->tracks_defined() || meta_.filters.empty()) {
    return Status::NotSupported(what() + ": only a dense dataset with filters stores encoded chunks");
  }
  const size_t rank = meta_.shape.size();
  if (coords.size() != rank) {
    return Status::InvalidArgument(what() + ": chunk coordinates of rank " + std::to_string(coords.size()) +
                                   ", the dataset has rank " + std::to_string(rank));
  }
  uint64_t elements = 1;
  for (size_t d = 0; d < rank; ++d) {
    // A whole chunk inside the shape: edge chunks are stored trimmed,
    // which an encoding of the full chunk does not match.
    const uint64_t c = meta_.chunks[d];
    if (coords[d] >= grid_[d] || coords[d] * c > meta_.shape[d] || meta_.shape[d] - coords[d] * c < c) {
      return Status::InvalidArgument(ChunkWhat(coords) + ": not a whole chunk inside the dataset's shape");
    }
    elements *= c;
  }
  const uint64_t bytes = elements * item_size_;
  if (BytesOfChunk(coords) != bytes) {
    return Status::InvalidArgument(ChunkWhat(coords) + ": stored trimmed, not as a whole chunk");
  }
  if (image.size() > format_->MaxFileBytes(elements)) {
    // Another encoder may store a deflate stream larger than the chunk;
    // this pipeline skips deflate there instead. The caller gives it
    // decoded.
    return Status::InvalidArgument(ChunkWhat(coords) + ": an encoded chunk of " + std::to_string(image.size()) +
                                   " bytes, more than this dataset stores for it");
  }
  if (meta_.filters.filters().size() < 32 && (filter_mask >> meta_.filters.filters().size()) != 0) {
    return Status::InvalidArgument(ChunkWhat(coords) + ": filter mask names filters the pipeline does not have");
  }
  ChunkCache& cache = c_->cache();
  {
    // The check: it must decode to exactly the chunk.
    std::unique_ptr<char[]> scratch = cache.TakeBuffer(bytes);
    SLABFS_RETURN_IF_ERROR(
        meta_.filters.Decode(image, filter_mask, item_size_, scratch.get(), bytes, ChunkWhat(coords)));
  }
  SLABFS_RETURN_IF_ERROR(CheckRoomForChunks(1));
  SLABFS_ASSIGN_OR_RETURN(ChunkRecord rec, index_->Get(coords));
  if (rec.allocated()) {
    SLABFS_RETURN_IF_ERROR(CheckExtent(rec.addr, FileBytesOf(coords, rec), LinearInGrid(coords)));
  }
  c_->NoteDirty(id_);
  // A cached copy of the chunk, written or not, is replaced whole, but only
  // once the new image is stored: a store that fails (a full disk) leaves
  // the chunk as it was, its unwritten changes in the cache included. The
  // entry stays pinned meanwhile, so it is not written back over the image.
  ChunkCache::Entry* cached = cache.Lookup(CacheKey{cache_id_, LinearInGrid(coords)});
  Status s = StoreChunkImage(coords, rec, FileImage{image, filter_mask, 0});
  if (cached != nullptr) {
    if (s.ok())
      cache.Drop(cached);
    else
      cache.Release(cached, 0);
  }
  return s;
}

}  // namespace slabfs::engine
