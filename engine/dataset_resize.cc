// Dataset resize: a new shape (Dataset::Resize, the byte view's truncate),
// with the chunks past the new end freed, and those it cuts given the fill
// value past it (or, where edge chunks are trimmed, stored shorter).
#include <algorithm>

#include "engine/chunk/trimmed_edge.h"
#include "engine/container_impl.h"

namespace slabfs::engine {

Status DatasetState::Resize(const Dims& shape) {
  SLABFS_RETURN_IF_ERROR(CheckWritable());
  ReaderLock cl(c_->commit_mu());
  WriterLock lock(rw_);
  return ResizeLocked(shape);
}

Status DatasetState::SetSizeBytes(uint64_t size) {
  SLABFS_RETURN_IF_ERROR(CheckWritable());
  ReaderLock cl(c_->commit_mu());
  WriterLock lock(rw_);
  const uint64_t current = num_elements() * item_size_;
  if (size == current) return Status::OK();
  const uint64_t row_bytes = RowElements() * item_size_;
  if ((meta_.flags & kDatasetFlagLengthResizable) == 0) {
    return Status::InvalidArgument(what() + ": its first dimension was created fixed, so its size stays " +
                                   std::to_string(current) + " bytes");
  }
  if (row_bytes == 0 || size % row_bytes != 0)
    return Status::InvalidArgument(what() + ": " + std::to_string(size) + " bytes is not a whole number of rows of " +
                                   std::to_string(row_bytes) + " bytes");
  const uint64_t rows = size / row_bytes;
  if (rows > meta_.max_shape[0])
    return Status::OutOfRange(what() + ": " + std::to_string(rows) + " rows is more than the maximum " +
                              std::to_string(meta_.max_shape[0]));
  Dims shape = meta_.shape;
  shape[0] = rows;
  return ResizeLocked(shape);
}

Status DatasetState::ResizeLocked(const Dims& shape) {
  const size_t rank = meta_.shape.size();
  if (shape.size() != rank)
    return Status::InvalidArgument(what() + ": new shape has rank " + std::to_string(shape.size()) + ", not " +
                                   std::to_string(rank));
  for (size_t d = 0; d < rank; ++d) {
    if (meta_.max_shape[d] != kUnlimited && shape[d] > meta_.max_shape[d])
      return Status::OutOfRange(what() + ": dimension " + std::to_string(d) + " cannot grow to " +
                                std::to_string(shape[d]) + ", its maximum is " + std::to_string(meta_.max_shape[d]));
  }
  SLABFS_RETURN_IF_ERROR(ValidateDatasetShape(meta_.dtype, shape, meta_.max_shape, meta_.chunks));
  if (shape == meta_.shape) return Status::OK();
  c_->NoteDirty(id_);
  header_dirty_ = true;
  bool only_first_grows = shape[0] >= meta_.shape[0];
  for (size_t d = 1; d < rank; ++d) only_first_grows = only_first_grows && shape[d] == meta_.shape[d];
  if (only_first_grows) {
    // Appending: the chunk grid gains rows at its end, so every cached
    // chunk keeps its position and nothing stored changes (the elements a
    // stored chunk holds past the old end are the fill value already; a
    // cached chunk filled only up to the old end gets it over the rows the
    // growth makes visible).
    FillGrownEntries(meta_.shape[0], shape[0]);
    SetShape(shape);
    return Status::OK();
  }
  // Positions in the chunk grid change: bring the stored chunks up to date
  // and start the cache afresh for this dataset.
  SLABFS_RETURN_IF_ERROR(WriteBackEntries(c_->cache().DirtyEntries(cache_id_)));
  c_->cache().EraseDataset(cache_id_);
  // Chunks wholly outside the new shape are freed; chunks cut by it get the
  // fill value past the new end, so that the elements read as fill if the
  // dataset grows again.
  std::vector<std::pair<Dims, ChunkRecord>> outside, cut;
  for (size_t d = 0; d < rank; ++d) {
    if (shape[d] >= meta_.shape[d]) continue;
    Dims lo(rank, 0), hi(rank, kUnlimited);
    lo[d] = shape[d] / meta_.chunks[d];
    SLABFS_RETURN_IF_ERROR(
        index_->ForEachIn(ChunkCoord(lo), ChunkCoord(hi), [&](ChunkCoord c, const ChunkRecord& r) REQUIRES_SHARED(rw_) {
          Dims coords(c.begin(), c.end());
          bool whole = false, partial = false;
          for (size_t k = 0; k < rank; ++k) {
            if (c[k] * meta_.chunks[k] >= shape[k])
              whole = true;
            else if ((c[k] + 1) * meta_.chunks[k] > shape[k])
              partial = true;
          }
          if (whole)
            outside.emplace_back(std::move(coords), r);
          else if (partial)
            cut.emplace_back(std::move(coords), r);
          return Status::OK();
        }));
  }
  // A chunk can be listed once per shrinking dimension.
  auto dedupe = [](std::vector<std::pair<Dims, ChunkRecord>>* v) {
    std::sort(v->begin(), v->end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    v->erase(std::unique(v->begin(), v->end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
             v->end());
  };
  dedupe(&outside);
  dedupe(&cut);
  // Nothing may be lost if the resize fails: a cut chunk that cannot be
  // read (damaged) fails it before anything is freed or rewritten.
  for (const auto& [coords, rec] : cut) {
    const ChunkCoord c(coords);
    SLABFS_RETURN_IF_ERROR(CheckExtent(rec.addr, FileBytesOf(c, rec), LinearInGrid(c)));
    if (TrimsEdge(meta_)) {
      Status s = CheckTrimmedChunk(meta_, c, FileBytesOf(c, rec), rec.filter_mask);
      if (!s.ok()) return Corrupt(s.WithContext(ChunkWhat(c)));
    }
    if (!format_->direct_io()) {
      std::unique_ptr<char[]> probe = c_->cache().TakeBuffer(format_->MemBytes(BytesOfChunk(c) / item_size_));
      SLABFS_RETURN_IF_ERROR(LoadChunk(c, rec, LinearInGrid(c), BytesOfChunk(c) / item_size_, probe.get()));
    }
  }
  for (const auto& [coords, rec] : cut) SLABFS_RETURN_IF_ERROR(FillPastEnd(ChunkCoord(coords), rec, shape));
  for (const auto& [coords, rec] : outside) {
    const ChunkCoord c(coords);
    uint64_t defined = 0;
    if (format_->tracks_defined()) {
      SLABFS_ASSIGN_OR_RETURN(defined, StoredDefinedOf(c, rec));
    }
    SLABFS_RETURN_IF_ERROR(index_->Put(c, ChunkRecord{}));
    FreeChunk(c, rec, defined);
  }
  SetShape(shape);
  return Status::OK();
}

Status DatasetState::FillPastEnd(ChunkCoord coords, const ChunkRecord& rec, const Dims& shape) {
  const size_t rank = coords.size();
  const uint64_t bytes = BytesOfChunk(coords);
  std::unique_ptr<char[]> data = c_->cache().TakeBuffer(format_->MemBytes(bytes / item_size_));
  SLABFS_RETURN_IF_ERROR(LoadChunk(coords, rec, LinearInGrid(coords), bytes / item_size_, data.get()));
  // The chunk's stored extent and, per dimension, how much of it stays.
  Dims extent(rank), keep(rank);
  for (size_t d = 0; d < rank; ++d) {
    const uint64_t C = meta_.chunks[d], limit = meta_.max_shape[d], first = coords[d] * C;
    extent[d] = limit == kUnlimited ? C : std::min(C, limit - first);
    keep[d] = std::min(extent[d], shape[d] - first);
  }
  // Walk the chunk in C order: an element is kept only if it is inside in
  // every dimension; each innermost row contributes one kept run at most.
  const uint64_t isz = item_size_;
  const uint64_t inner = extent[rank - 1];
  Dims idx(rank, 0);
  for (uint64_t row = 0;; ++row) {
    bool inside = true;
    for (size_t d = 0; d + 1 < rank && inside; ++d) inside = idx[d] < keep[d];
    const uint64_t kept = inside ? keep[rank - 1] : 0;
    format_->MemEraseRange(data.get(), bytes / isz, row * inner + kept, inner - kept);
    size_t d = rank - 1;
    while (d-- > 0) {
      if (++idx[d] < extent[d]) break;
      idx[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) break;
  }
  std::string scratch;
  FileImage img = format_->MemToFile(data.get(), bytes / isz, &scratch);
  // A trimmed chunk keeps only the steps of the first dimension inside the
  // new shape (engine/chunk/trimmed_edge.h).
  if (TrimsEdge(meta_)) img.bytes = img.bytes.substr(0, TrimmedChunkBytes(meta_, coords, shape[0]));
  uint64_t before = 0;
  if (format_->tracks_defined()) {
    SLABFS_ASSIGN_OR_RETURN(before, StoredDefinedOf(coords, rec));
  }
  if (img.bytes.empty()) {  // nothing defined is left inside the new shape
    SLABFS_RETURN_IF_ERROR(index_->Put(coords, ChunkRecord{}));
    FreeChunk(coords, rec, before);
    return Status::OK();
  }
  SLABFS_RETURN_IF_ERROR(StoreChunkImage(coords, rec, img));
  if (format_->tracks_defined()) defined_ += img.defined - before;
  return Status::OK();
}

}  // namespace slabfs::engine
