// Which elements a dataset holds (Defined, DefinedRuns, CountDefined) and
// erasing them (Erase): what sparse datasets add to the dense ones.
#include <algorithm>
#include <mutex>
#include <shared_mutex>

#include "engine/container_impl.h"
#include "engine/selection/boxes.h"

namespace slabfs::engine {

Status DatasetState::WriteBackForQuery() {
  if (c_->read_only()) return Status::OK();
  return WriteBackEntries(c_->cache().DirtyEntries(cache_id_));
}

Status DatasetState::DefinedInBox(const Dims& lo, const Dims& hi, std::vector<Box>* out) {
  const size_t rank = lo.size();
  for (size_t d = 0; d < rank; ++d)
    if (lo[d] >= hi[d]) return Status::OK();
  Dims clo(rank), chi(rank);
  for (size_t d = 0; d < rank; ++d) {
    clo[d] = lo[d] / meta_.chunks[d];
    chi[d] = (hi[d] - 1) / meta_.chunks[d] + 1;
  }
  std::vector<std::pair<Dims, ChunkRecord>> stored;
  SLABFS_RETURN_IF_ERROR(index_->ForEachIn(ChunkCoord(clo), ChunkCoord(chi), [&](ChunkCoord c, const ChunkRecord& r) {
    stored.emplace_back(Dims(c.begin(), c.end()), r);
    return Status::OK();
  }));
  std::unique_ptr<char[]> mem;
  uint64_t mem_bytes = 0;
  for (const auto& [coords, rec] : stored) {
    // The chunk's part of the box, in dataset coordinates.
    Box part{Dims(rank), Dims(rank)};
    Dims first(rank), extent(rank);  // the chunk's first element, its stored extent
    for (size_t d = 0; d < rank; ++d) {
      const uint64_t C = meta_.chunks[d], limit = meta_.max_shape[d];
      first[d] = coords[d] * C;
      extent[d] = limit == kUnlimited ? C : std::min(C, limit - first[d]);
      part.start[d] = std::max(lo[d], first[d]);
      part.count[d] = std::min(hi[d], first[d] + extent[d]) - part.start[d];
    }
    if (!format_->tracks_defined()) {
      out->push_back(std::move(part));
      continue;
    }
    const ChunkCoord c(coords);
    const uint64_t n = BytesOfChunk(c) / item_size_;
    const uint64_t linear = LinearInGrid(c);
    // The chunk's defined set: from the cache (clean after the write-back)
    // or loaded into a scratch buffer.
    const char* data;
    ChunkCache::Entry* e = c_->cache().Lookup(CacheKey{cache_id_, linear});
    if (e) {
      data = e->data.get();
    } else {
      if (mem_bytes < format_->MemBytes(n)) {
        mem_bytes = format_->MemBytes(n);
        mem.reset(new char[mem_bytes]);
      }
      // Only the defined set is needed, not the values.
      const uint64_t file_bytes = FileBytesOf(c, rec);
      SLABFS_RETURN_IF_ERROR(CheckExtent(rec.addr, file_bytes, linear));
      Status st = format_->LoadDefined(ChunkIo{c_->file(), &c_->cache()}, rec.addr, file_bytes, rec.filter_mask,
                                       mem.get(), n);
      if (!st.ok()) return Corrupt(st.WithContext(ChunkWhat(c)));
      data = mem.get();
    }
    // Runs along the innermost dimension, row by row of the part.
    std::vector<Box> boxes;
    Dims idx(rank, 0);  // position inside part, outer dimensions
    const size_t last = rank - 1;
    for (;;) {
      uint64_t off = 0;
      for (size_t d = 0; d < rank; ++d) off = off * extent[d] + (part.start[d] + (d < last ? idx[d] : 0) - first[d]);
      format_->MemDefinedRuns(data, n, off, off + part.count[last], [&](uint64_t s, uint64_t len) {
        Box b{Dims(rank), Dims(rank, 1)};
        for (size_t d = 0; d < last; ++d) b.start[d] = part.start[d] + idx[d];
        b.start[last] = part.start[last] + (s - off);
        b.count[last] = len;
        boxes.push_back(std::move(b));
      });
      size_t d = last;
      while (d-- > 0) {
        if (++idx[d] < part.count[d]) break;
        idx[d] = 0;
      }
      if (d == static_cast<size_t>(-1)) break;
    }
    if (e) c_->cache().Release(e, 0);
    for (Box& b : MergeBoxes(std::move(boxes))) out->push_back(std::move(b));
  }
  return Status::OK();
}

Result<std::vector<Box>> DatasetState::Defined(const Slab& sel) {
  std::shared_lock cl(c_->commit_mu());
  SLABFS_RETURN_IF_ERROR_R(CheckPresent());
  std::unique_lock lock(rw_);
  const size_t rank = meta_.shape.size();
  if (static_cast<size_t>(sel.rank()) != rank)
    return Err(Status::InvalidArgument(what() + ": selection has rank " + std::to_string(sel.rank()) + ", not " +
                                       std::to_string(rank)));
  Dims lo(rank), hi(rank);
  for (size_t d = 0; d < rank; ++d) {
    const DimSlab& s = sel.dims[d];
    if (s.count > 1 && s.stride != s.block)
      return Err(Status::InvalidArgument(what() + ": defined() takes a box; dimension " + std::to_string(d) +
                                         " has a stride"));
    lo[d] = s.start;
    if (s.extent() > meta_.shape[d] || s.start > meta_.shape[d] - s.extent())
      return Err(Status::InvalidArgument(what() + ": selection reaches past the shape in dimension " +
                                         std::to_string(d)));
    hi[d] = s.start + s.extent();
  }
  SLABFS_RETURN_IF_ERROR_R(WriteBackForQuery());
  std::vector<Box> out;
  SLABFS_RETURN_IF_ERROR_R(DefinedInBox(lo, hi, &out));
  // Chunk by chunk so far: a region spanning chunks becomes one box.
  return MergeBoxes(std::move(out));
}

Result<std::vector<ElementRun>> DatasetState::DefinedRuns(uint64_t first, uint64_t count) {
  std::shared_lock cl(c_->commit_mu());
  SLABFS_RETURN_IF_ERROR_R(CheckPresent());
  std::unique_lock lock(rw_);
  const uint64_t total = num_elements();
  if (first > total || count > total - first)
    return Err(Status::InvalidArgument(what() + ": elements " + std::to_string(first) + "+" + std::to_string(count) +
                                       " outside " + std::to_string(total)));
  SLABFS_RETURN_IF_ERROR_R(WriteBackForQuery());
  const size_t rank = meta_.shape.size();
  std::vector<ElementRun> runs;
  for (const LinearBox& lb : DecomposeLinear(meta_.shape, first, count)) {
    Dims lo(rank), hi(rank);
    for (size_t d = 0; d < rank; ++d) {
      lo[d] = lb.box.dims[d].start;
      hi[d] = lo[d] + lb.box.dims[d].extent();
    }
    std::vector<Box> boxes;
    SLABFS_RETURN_IF_ERROR_R(DefinedInBox(lo, hi, &boxes));
    // A box is contiguous in C order over its dimensions from the first one
    // that is not whole (every later one spans the shape); one run for each
    // index of the dimensions before that.
    for (const Box& b : boxes) {
      size_t d0 = rank - 1;
      while (d0 > 0 && b.start[d0] == 0 && b.count[d0] == meta_.shape[d0]) --d0;
      uint64_t run = 1;
      for (size_t d = d0; d < rank; ++d) run *= d == d0 ? b.count[d] : meta_.shape[d];
      Dims idx(d0, 0);
      for (;;) {
        uint64_t off = 0;
        for (size_t d = 0; d < rank; ++d) off = off * meta_.shape[d] + b.start[d] + (d < d0 ? idx[d] : 0);
        runs.push_back(ElementRun{off, run});
        size_t d = d0;
        while (d-- > 0) {
          if (++idx[d] < b.count[d]) break;
          idx[d] = 0;
        }
        if (d == static_cast<size_t>(-1)) break;
      }
    }
  }
  std::sort(runs.begin(), runs.end(), [](const ElementRun& a, const ElementRun& b) { return a.first < b.first; });
  std::vector<ElementRun> merged;
  for (const ElementRun& r : runs) {
    if (!merged.empty() && merged.back().first + merged.back().count == r.first) merged.back().count += r.count;
    else merged.push_back(r);
  }
  return merged;
}

Result<uint64_t> DatasetState::CountDefined() {
  {
    std::shared_lock cl(c_->commit_mu());
    SLABFS_RETURN_IF_ERROR_R(CheckPresent());
    std::unique_lock lock(rw_);
    SLABFS_RETURN_IF_ERROR_R(WriteBackForQuery());
    if (format_->tracks_defined()) return defined_;
  }
  SLABFS_ASSIGN_OR_RETURN(std::vector<Box> boxes, Defined(Slab::All(meta_.shape)));
  uint64_t n = 0;
  for (const Box& b : boxes) {
    uint64_t v = 1;
    for (uint64_t x : b.count) v *= x;
    n += v;
  }
  return n;
}

Status DatasetState::Erase(const Slab& sel) {
  SLABFS_RETURN_IF_ERROR(CheckWritable());
  std::shared_lock cl(c_->commit_mu());
  std::unique_lock lock(rw_);
  TransferPlan plan;
  SLABFS_RETURN_IF_ERROR(plan.Build(meta_.shape, meta_.chunks, sel, nullptr, &meta_.max_shape));
  ChunkCache& cache = c_->cache();
  c_->NoteDirty();
  for (ChunkCursor cur(plan); !cur.done(); cur.Next()) {
    const CacheKey key{cache_id_, cur.linear()};
    ChunkCache::Entry* e = cache.Lookup(key);
    if (cur.covers_chunk()) {
      // Every element of the chunk goes: the chunk is freed, unread.
      if (e) cache.Drop(e);
      SLABFS_ASSIGN_OR_RETURN(ChunkRecord rec, index_->Get(cur.coords()));
      if (!rec.allocated()) continue;
      SLABFS_RETURN_IF_ERROR(CheckExtent(rec.addr, FileBytesOf(cur.coords(), rec), cur.linear()));
      uint64_t defined = 0;
      if (format_->tracks_defined()) {
        SLABFS_ASSIGN_OR_RETURN(defined, StoredDefinedOf(cur.coords(), rec));
      }
      SLABFS_RETURN_IF_ERROR(index_->Put(cur.coords(), ChunkRecord{}));
      FreeChunk(cur.coords(), rec, defined);
      continue;
    }
    if (!e) {
      SLABFS_ASSIGN_OR_RETURN(ChunkRecord rec, index_->Get(cur.coords()));
      if (!rec.allocated()) continue;  // nothing stored: already the fill value
      SLABFS_RETURN_IF_ERROR(CheckExtent(rec.addr, FileBytesOf(cur.coords(), rec), cur.linear()));
      SLABFS_ASSIGN_OR_RETURN(e, NewEntry(cur, rec, false));
    } else {
      cache.MarkDirty(e);
    }
    // A chunk written without being read is merged first: the erased
    // elements must not be taken for written ones.
    Status s = CompleteEntry(e);
    if (s.ok()) format_->MemErase(e->data.get(), cur.chunk_elements(), cur);
    cache.Release(e, 0);
    SLABFS_RETURN_IF_ERROR(s);
  }
  SLABFS_RETURN_IF_ERROR(ShedDirty());
  cache.EvictToBudget();
  return Status::OK();
}

}  // namespace slabfs::engine
