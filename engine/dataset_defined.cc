// Which elements a dataset holds (Defined, DefinedRuns, CountDefined) and
// erasing them (Erase): what sparse datasets add to the dense ones.
#include <algorithm>

#include "engine/container_impl.h"
#include "engine/selection/boxes.h"

namespace slabfs::engine {

Status DatasetState::WriteBackForQuery() {
  if (c_->read_only()) return Status::OK();
  return WriteBackEntries(c_->cache().DirtyEntries(cache_id_));
}

// A chunk's defined set, loaded when the chunk is not in the cache; reused
// from chunk to chunk.
struct DatasetState::DefinedScratch {
  std::unique_ptr<char[]> mem;
  uint64_t bytes = 0;
};

Status DatasetState::AppendChunkDefined(ChunkCoord c, const ChunkRecord& rec, const Dims& lo, const Dims& hi,
                                        DefinedScratch* scratch, std::vector<Box>* out) {
  const size_t rank = lo.size();
  // The chunk's part of the box, in dataset coordinates.
  Box part{Dims(rank), Dims(rank)};
  Dims first(rank), extent(rank);  // the chunk's first element, its stored extent
  for (size_t d = 0; d < rank; ++d) {
    const uint64_t C = meta_.chunks[d], limit = meta_.max_shape[d];
    first[d] = c[d] * C;
    extent[d] = limit == kUnlimited ? C : std::min(C, limit - first[d]);
    part.start[d] = std::max(lo[d], first[d]);
    const uint64_t end = std::min(hi[d], first[d] + extent[d]);
    if (end <= part.start[d]) return Status::OK();
    part.count[d] = end - part.start[d];
  }
  if (!format_->tracks_defined()) {
    out->push_back(std::move(part));
    return Status::OK();
  }
  const uint64_t n = BytesOfChunk(c) / item_size_;
  const uint64_t linear = LinearInGrid(c);
  // The chunk's defined set: from the cache (clean after the write-back)
  // or loaded into the scratch buffer.
  const char* data;
  ChunkCache::Entry* e = c_->cache().Lookup(CacheKey{cache_id_, linear});
  if (e) {
    data = e->data.get();
  } else {
    if (scratch->bytes < format_->MemBytes(n)) {
      scratch->bytes = format_->MemBytes(n);
      scratch->mem.reset(new char[scratch->bytes]);
    }
    // Only the defined set is needed, not the values.
    const uint64_t file_bytes = FileBytesOf(c, rec);
    SLABFS_RETURN_IF_ERROR(CheckExtent(rec.addr, file_bytes, linear));
    Status st = format_->LoadDefined(ChunkIo{c_->file(), &c_->cache()}, rec.addr, file_bytes, rec.filter_mask,
                                     scratch->mem.get(), n);
    if (!st.ok()) return Corrupt(st.WithContext(ChunkWhat(c)));
    data = scratch->mem.get();
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
  return Status::OK();
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
  DefinedScratch scratch;
  for (const auto& [coords, rec] : stored)
    SLABFS_RETURN_IF_ERROR(AppendChunkDefined(ChunkCoord(coords), rec, lo, hi, &scratch, out));
  return Status::OK();
}

namespace {

// Appends the runs of box b in C order over `shape`: a box is contiguous
// over its dimensions from the first one that is not whole (every later one
// spans the shape); one run for each index of the dimensions before that.
void AppendRuns(const Box& b, const Dims& shape, std::vector<ElementRun>* runs) {
  const size_t rank = shape.size();
  size_t d0 = rank - 1;
  while (d0 > 0 && b.start[d0] == 0 && b.count[d0] == shape[d0]) --d0;
  uint64_t run = 1;
  for (size_t d = d0; d < rank; ++d) run *= d == d0 ? b.count[d] : shape[d];
  Dims idx(d0, 0);
  for (;;) {
    uint64_t off = 0;
    for (size_t d = 0; d < rank; ++d) off = off * shape[d] + b.start[d] + (d < d0 ? idx[d] : 0);
    runs->push_back(ElementRun{off, run});
    size_t d = d0;
    while (d-- > 0) {
      if (++idx[d] < b.count[d]) break;
      idx[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) break;
  }
}

// Sorts runs and joins those that touch.
void SortAndMerge(std::vector<ElementRun>* runs) {
  std::sort(runs->begin(), runs->end(), [](const ElementRun& a, const ElementRun& b) { return a.first < b.first; });
  size_t out = 0;
  for (const ElementRun& r : *runs) {
    if (out > 0 && (*runs)[out - 1].first + (*runs)[out - 1].count == r.first)
      (*runs)[out - 1].count += r.count;
    else
      (*runs)[out++] = r;
  }
  runs->resize(out);
}

}  // namespace

Result<std::vector<Box>> DatasetState::Defined(const Slab& sel) {
  ReaderLock cl(c_->commit_mu());
  SLABFS_RETURN_IF_ERROR_R(CheckPresent());
  WriterLock lock(rw_);
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
      return Err(
          Status::InvalidArgument(what() + ": selection reaches past the shape in dimension " + std::to_string(d)));
    hi[d] = s.start + s.extent();
  }
  SLABFS_RETURN_IF_ERROR_R(WriteBackForQuery());
  std::vector<Box> out;
  SLABFS_RETURN_IF_ERROR_R(DefinedInBox(lo, hi, &out));
  // Chunk by chunk so far: a region spanning chunks becomes one box.
  return MergeBoxes(std::move(out));
}

Result<std::vector<ElementRun>> DatasetState::DefinedRuns(uint64_t first, uint64_t count) {
  std::vector<ElementRun> runs;
  SLABFS_RETURN_IF_ERROR_R(ForEachDefinedRun(first, count,
                                             [&runs](const ElementRun& r) {
                                               if (!runs.empty() && runs.back().first + runs.back().count == r.first)
                                                 runs.back().count += r.count;
                                               else
                                                 runs.push_back(r);
                                               return true;
                                             },
                                             {}));
  return runs;
}

Status DatasetState::ForEachDefinedRun(uint64_t first, uint64_t count, const Dataset::RunVisitor& fn,
                                       const Dataset::WalkCheck& check) {
  ReaderLock cl(c_->commit_mu());
  SLABFS_RETURN_IF_ERROR(CheckPresent());
  WriterLock lock(rw_);
  const uint64_t total = num_elements();
  if (first > total || count > total - first)
    return Status::InvalidArgument(what() + ": elements " + std::to_string(first) + "+" + std::to_string(count) +
                                   " outside " + std::to_string(total));
  SLABFS_RETURN_IF_ERROR(WriteBackForQuery());
  return WalkDefinedLocked(first, count, fn, check);
}

// The range splits into boxes (DecomposeLinear), each walked through the
// index in C order of the chunk grid, so only stored chunks are visited.
// Chunks whose elements interleave in C order (a row of the dataset passes
// through all of them) form a band: the chunks with the same coordinates in
// dimensions 0..j, where j is the first dimension in which a chunk spans
// more than one index of the box. A band's runs are sorted before they go
// out; bands, and boxes, follow each other in C order. So a walk that stops
// early has read only the bands before that point.
Status DatasetState::WalkDefinedLocked(uint64_t first, uint64_t count, const Dataset::RunVisitor& fn,
                                       const Dataset::WalkCheck& check) {
  const size_t rank = meta_.shape.size();
  DefinedScratch scratch;
  std::vector<std::pair<Dims, ChunkRecord>> band;
  std::vector<Box> boxes;
  std::vector<ElementRun> runs;
  bool stopped = false;
  for (const LinearBox& lb : DecomposeLinear(meta_.shape, first, count)) {
    Dims lo(rank), hi(rank), clo(rank), chi(rank);
    for (size_t d = 0; d < rank; ++d) {
      lo[d] = lb.box.dims[d].start;
      hi[d] = lo[d] + lb.box.dims[d].extent();
      if (lo[d] >= hi[d]) return Status::OK();  // an empty range
      clo[d] = lo[d] / meta_.chunks[d];
      chi[d] = (hi[d] - 1) / meta_.chunks[d] + 1;
    }
    size_t j = rank - 1;
    for (size_t d = 0; d < rank; ++d) {
      if (std::min(meta_.chunks[d], hi[d] - lo[d]) > 1) {
        j = d;
        break;
      }
    }
    auto flush = [&]() REQUIRES_SHARED(rw_) -> Result<bool> {
      boxes.clear();
      runs.clear();
      for (const auto& [coords, rec] : band)
        SLABFS_RETURN_IF_ERROR_R(AppendChunkDefined(ChunkCoord(coords), rec, lo, hi, &scratch, &boxes));
      band.clear();
      for (const Box& b : boxes) AppendRuns(b, meta_.shape, &runs);
      SortAndMerge(&runs);
      for (const ElementRun& r : runs)
        if (!fn(r)) return false;
      return true;
    };
    SLABFS_RETURN_IF_ERROR(index_->ForEachInOrder(
        ChunkCoord(clo), ChunkCoord(chi),
        [&](ChunkCoord c, const ChunkRecord& rec) REQUIRES_SHARED(rw_) -> Result<bool> {
          if (!band.empty() && !std::equal(c.begin(), c.begin() + j + 1, band.front().first.begin())) {
            SLABFS_ASSIGN_OR_RETURN(bool go, flush());
            if (!go) {
              stopped = true;
              return false;
            }
          }
          if (check) SLABFS_RETURN_IF_ERROR_R(check());
          band.emplace_back(Dims(c.begin(), c.end()), rec);
          return true;
        }));
    if (stopped) return Status::OK();
    SLABFS_ASSIGN_OR_RETURN(bool go, flush());
    if (!go) return Status::OK();
  }
  return Status::OK();
}

Result<uint64_t> DatasetState::CountDefined(const Dataset::WalkCheck& check) {
  ReaderLock cl(c_->commit_mu());
  SLABFS_RETURN_IF_ERROR_R(CheckPresent());
  WriterLock lock(rw_);
  SLABFS_RETURN_IF_ERROR_R(WriteBackForQuery());
  if (format_->tracks_defined()) return defined_;
  // Dense: every element of a stored chunk inside the shape.
  const size_t rank = meta_.shape.size();
  for (size_t d = 0; d < rank; ++d)
    if (meta_.shape[d] == 0) return uint64_t{0};
  const Dims lo(rank, 0);
  uint64_t n = 0;
  SLABFS_RETURN_IF_ERROR_R(
      index_->ForEachIn(ChunkCoord(lo), ChunkCoord(grid_), [&](ChunkCoord c, const ChunkRecord&) REQUIRES_SHARED(rw_) {
        if (check) SLABFS_RETURN_IF_ERROR(check());
        uint64_t v = 1;
        for (size_t d = 0; d < rank; ++d) v *= std::min(meta_.chunks[d], meta_.shape[d] - c[d] * meta_.chunks[d]);
        n += v;
        return Status::OK();
      }));
  return n;
}

namespace {

// Erase walks the chunk grid of its selection chunk by chunk when that grid
// is no bigger than this, or than a few times the chunks stored; past it,
// only the stored and cached chunks (EraseStoredIn).
constexpr uint64_t kEraseGridWalk = uint64_t{1} << 16;

// EraseStoredIn cuts the selection at chunk edges into up to three pieces
// per strided dimension, and plans every combination: past this many
// strided dimensions, Erase walks the grid instead.
constexpr int kEraseMaxStridedDims = 6;

// Chunks of the grid a selection's bounding box spans (saturating).
uint64_t BoundingChunks(const Slab& sel, const Dims& chunks) {
  uint64_t n = 1;
  for (size_t d = 0; d < sel.dims.size(); ++d) {
    const DimSlab s = NormalizeDim(sel.dims[d]);
    if (s.extent() == 0) return 0;
    const uint64_t last = s.start + (s.count - 1) * s.stride + s.block - 1;
    const uint64_t k = last / chunks[d] - s.start / chunks[d] + 1;
    if (n > UINT64_MAX / k) return UINT64_MAX;
    n *= k;
  }
  return n;
}

// The part of one dimension's selection s (normalized) inside [a, b), as at
// most three selections: the end of a block cut by a, the whole blocks, and
// the start of a block cut by b.
void DimPieces(const DimSlab& s, uint64_t a, uint64_t b, std::vector<DimSlab>* out) {
  out->clear();
  if (s.count == 1) {  // one block (NormalizeDim folds contiguous ones)
    const uint64_t lo = std::max(s.start, a), hi = std::min(s.start + s.block, b);
    if (lo < hi) out->push_back(DimSlab{lo, 1, 1, hi - lo});
    return;
  }
  if (b <= s.start) return;
  // Blocks j0..j1 meet [a, b).
  uint64_t j0 = a <= s.start ? 0 : (a - s.start) / s.stride;
  if (s.start + j0 * s.stride + s.block <= a) ++j0;
  const uint64_t j1 = std::min(s.count - 1, (b - 1 - s.start) / s.stride);
  if (j0 > j1) return;
  auto clipped = [&](uint64_t j) {
    const uint64_t lo = std::max(s.start + j * s.stride, a);
    const uint64_t hi = std::min(s.start + j * s.stride + s.block, b);
    return DimSlab{lo, 1, 1, hi - lo};
  };
  const bool head_cut = s.start + j0 * s.stride < a;
  const bool tail_cut = s.start + j1 * s.stride + s.block > b;
  if (j0 == j1) {
    out->push_back(clipped(j0));
    return;
  }
  const uint64_t whole_first = head_cut ? j0 + 1 : j0;
  const uint64_t whole_last = tail_cut ? j1 - 1 : j1;  // j1 > j0 >= 0
  if (head_cut) out->push_back(clipped(j0));
  if (whole_first <= whole_last && whole_last != UINT64_MAX)
    out->push_back(DimSlab{s.start + whole_first * s.stride, s.stride, whole_last - whole_first + 1, s.block});
  if (tail_cut) out->push_back(clipped(j1));
}

}  // namespace

Status DatasetState::EraseAt(const ChunkCursor& cur) {
  ChunkCache& cache = c_->cache();
  const CacheKey key{cache_id_, cur.linear()};
  ChunkCache::Entry* e = cache.Lookup(key);
  if (cur.covers_chunk()) {
    // Every element of the chunk goes: the chunk is freed, unread.
    if (e) cache.Drop(e);
    SLABFS_ASSIGN_OR_RETURN(ChunkRecord rec, index_->Get(cur.coords()));
    if (!rec.allocated()) return Status::OK();
    SLABFS_RETURN_IF_ERROR(CheckExtent(rec.addr, FileBytesOf(cur.coords(), rec), cur.linear()));
    uint64_t defined = 0;
    if (format_->tracks_defined()) {
      SLABFS_ASSIGN_OR_RETURN(defined, StoredDefinedOf(cur.coords(), rec));
    }
    SLABFS_RETURN_IF_ERROR(index_->Put(cur.coords(), ChunkRecord{}));
    FreeChunk(cur.coords(), rec, defined);
    return Status::OK();
  }
  if (!e) {
    SLABFS_ASSIGN_OR_RETURN(ChunkRecord rec, index_->Get(cur.coords()));
    if (!rec.allocated()) return Status::OK();  // nothing stored: already the fill value
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
  return s;
}

Status DatasetState::Erase(const Slab& sel) {
  SLABFS_RETURN_IF_ERROR(CheckWritable());
  ReaderLock cl(c_->commit_mu());
  WriterLock lock(rw_);
  SLABFS_RETURN_IF_ERROR(ValidateSlab(sel, meta_.shape, "dataset"));
  const uint64_t touched = BoundingChunks(sel, meta_.chunks);
  const uint64_t stored = allocated_chunks_.load(std::memory_order_relaxed);
  int strided = 0;
  for (const DimSlab& d : sel.dims) strided += NormalizeDim(d).count > 1 ? 1 : 0;
  // No MakeRoom: an erase frees space (a hole punched on a full disk), and
  // a failed shed must not refuse it; what it leaves dirty is shed after.
  Status s;
  if (touched <= kEraseGridWalk || touched / 4 <= stored || strided > kEraseMaxStridedDims) {
    TransferPlan plan;
    SLABFS_RETURN_IF_ERROR(plan.Build(meta_.shape, meta_.chunks, sel, nullptr, &meta_.max_shape));
    c_->NoteDirty(id_);
    for (ChunkCursor cur(plan); !cur.done() && s.ok(); cur.Next()) s = EraseAt(cur);
  } else {
    c_->NoteDirty(id_);
    s = EraseStoredIn(sel);
  }
  SLABFS_RETURN_IF_ERROR(s);
  ShedAfterChange();
  return Status::OK();
}

// The chunks of the selection's bounding box that are stored (from the
// index) or hold changes in the cache are the only ones an erase can
// change; each gets a plan of its own part of the selection.
Status DatasetState::EraseStoredIn(const Slab& sel) {
  const size_t rank = meta_.shape.size();
  std::vector<DimSlab> norm(rank);
  Dims clo(rank), chi(rank);
  for (size_t d = 0; d < rank; ++d) {
    norm[d] = NormalizeDim(sel.dims[d]);
    const DimSlab& s = norm[d];
    clo[d] = s.start / meta_.chunks[d];
    chi[d] = (s.start + (s.count - 1) * s.stride + s.block - 1) / meta_.chunks[d] + 1;
  }
  std::vector<uint64_t> targets;  // positions in the current grid
  SLABFS_RETURN_IF_ERROR(
      index_->ForEachIn(ChunkCoord(clo), ChunkCoord(chi), [&](ChunkCoord c, const ChunkRecord&) REQUIRES_SHARED(rw_) {
        targets.push_back(LinearInGrid(c));
        return Status::OK();
      }));
  ChunkCache& cache = c_->cache();
  uint64_t coords[kMaxRank];
  for (ChunkCache::Entry* e : cache.DirtyEntries(cache_id_)) {
    CoordsOf(e->key.chunk, coords);
    bool inside = true;
    for (size_t d = 0; d < rank && inside; ++d) inside = coords[d] >= clo[d] && coords[d] < chi[d];
    if (inside) targets.push_back(e->key.chunk);
    cache.Release(e, 0);
  }
  std::sort(targets.begin(), targets.end());
  targets.erase(std::unique(targets.begin(), targets.end()), targets.end());

  std::vector<std::vector<DimSlab>> pieces(rank);
  TransferPlan plan;
  Slab part;
  part.dims.resize(rank);
  for (uint64_t linear : targets) {
    CoordsOf(linear, coords);
    uint64_t combos = 1;
    for (size_t d = 0; d < rank && combos > 0; ++d) {
      const uint64_t a = coords[d] * meta_.chunks[d];
      DimPieces(norm[d], a, std::min(a + meta_.chunks[d], meta_.shape[d]), &pieces[d]);
      combos *= pieces[d].size();
    }
    // Several pieces in a dimension leave gaps: the chunk is not covered,
    // and each combination of pieces erases its own part of it.
    Dims at(rank, 0);
    for (uint64_t k = 0; k < combos; ++k) {
      for (size_t d = 0; d < rank; ++d) part.dims[d] = pieces[d][at[d]];
      SLABFS_RETURN_IF_ERROR(plan.Build(meta_.shape, meta_.chunks, part, nullptr, &meta_.max_shape));
      for (ChunkCursor cur(plan); !cur.done(); cur.Next()) SLABFS_RETURN_IF_ERROR(EraseAt(cur));
      for (size_t d = rank; d-- > 0;) {
        if (++at[d] < pieces[d].size()) break;
        at[d] = 0;
      }
    }
  }
  return Status::OK();
}

}  // namespace slabfs::engine
