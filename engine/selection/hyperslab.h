// Hyperslab to chunks: the projection algorithm of the netCDF/Zarr note
// (shared/seeds 003) with HDF5's (start, stride, count, block) selections.
//
// Per dimension, the selected indices are projected onto the chunks they
// touch, as runs that are contiguous both in the chunk and in the caller's
// memory array (DimPlan). The cross product of the per-dimension chunk lists
// is walked with an odometer (ChunkCursor), and within one chunk the runs of
// the dimensions combine into contiguous element runs, merging dimensions
// where both sides are contiguous (ForEachRun), so that the copy loops move
// whole runs with memcpy.
#ifndef SLABFS_ENGINE_SELECTION_HYPERSLAB_H_
#define SLABFS_ENGINE_SELECTION_HYPERSLAB_H_

#include <array>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "slabfs/types.h"

namespace slabfs::engine {

// Checks a selection against an array shape: rank, block >= 1,
// stride >= block when count > 1, and every index inside the shape.
Status ValidateSlab(const Slab& sel, const Dims& shape, const char* what);
// The same selection with contiguous blocks folded into one block per
// dimension (stride == block, or count == 1), so planning costs O(chunks).
DimSlab NormalizeDim(const DimSlab& d);

struct Run {
  uint64_t chunk_off;  // index within the chunk along this dimension
  uint64_t mem_off;    // index within the memory array along this dimension
  uint64_t len;
};

struct DimPlan {
  struct ChunkSpan {
    uint64_t chunk;      // chunk grid coordinate
    uint32_t first_run;  // into runs
    uint32_t num_runs;
    uint64_t selected;  // selected indices in this chunk along this dim
  };
  std::vector<ChunkSpan> chunks;
  std::vector<Run> runs;
};

// The plan of one transfer: dataset geometry, both selections, per-dim plans.
class TransferPlan {
 public:
  // file_sel is checked against shape; mem (optional) against its shape and
  // for equal extents. Errors are InvalidArgument. Chunks are laid out
  // trimmed to max_shape (default: shape): a chunk that reaches past the
  // maximum shape holds only the elements inside it, while along a
  // dimension that can still grow it holds its whole extent.
  Status Build(const Dims& shape, const Dims& chunks, const Slab& file_sel, const MemSpace* mem,
               const Dims* max_shape = nullptr);

  int rank() const { return static_cast<int>(dims_.size()); }
  const std::vector<DimPlan>& dims() const { return dims_; }
  const Dims& shape() const { return shape_; }
  const Dims& chunk_shape() const { return chunks_; }
  const Dims& limit() const { return limit_; }  // chunks are trimmed to this
  const Dims& grid() const { return grid_; }    // chunks per dimension
  const Dims& mem_shape() const { return mem_shape_; }
  uint64_t num_elements() const { return num_elements_; }
  uint64_t chunks_touched() const;

 private:
  Dims shape_, chunks_, limit_, grid_, mem_shape_;
  std::vector<DimPlan> dims_;
  uint64_t num_elements_ = 0;
};

// One touched chunk, as the odometer stands.
class ChunkCursor {
 public:
  explicit ChunkCursor(const TransferPlan& plan);
  bool done() const { return done_; }
  void Next();

  uint64_t linear() const { return linear_; }  // position in the chunk grid
  // Grid coordinates, and the stored extent (trimmed to the plan's limit).
  std::span<const uint64_t> coords() const { return {coords_.data(), rank_}; }
  std::span<const uint64_t> extent() const { return {extent_.data(), rank_}; }
  uint64_t chunk_elements() const;  // product of extent
  uint64_t selected() const;        // elements selected in this chunk
  bool covers_chunk() const { return selected() == chunk_elements(); }
  // The number of contiguous runs ForEachRun will produce.
  uint64_t num_runs() const;
  // Offsets, in the chunk's element order, of the first selected element
  // and one past the last.
  std::pair<uint64_t, uint64_t> span() const;

  // Calls f(chunk_elem_offset, mem_elem_offset, count) for each run of
  // elements that is contiguous in the chunk (laid out C-order over extent())
  // and in the memory array (C-order over mem_shape()).
  template <typename F>
  void ForEachRun(F&& f) const;

 private:
  void Load();
  // Innermost dimension that cannot be merged with those inside it.
  int MergeLevel(uint64_t* unit) const;
  template <typename F>
  void Recurse(int d, int k, uint64_t unit, uint64_t coff, uint64_t moff, F& f) const;

  // Fixed arrays rather than vectors: a cursor is made for every transfer,
  // and a small read would otherwise spend as long in malloc as in copying.
  const TransferPlan& plan_;
  size_t rank_;
  // Only the first rank_ entries are set (and read).
  std::array<uint32_t, kMaxRank> idx_;
  std::array<uint64_t, kMaxRank> coords_, extent_, cstride_, mstride_;
  uint64_t linear_ = 0;
  bool done_ = false;
};

// Splits elements [first, first+count) of an array of `shape` (C order) into
// at most 2*rank-1 boxes; each comes with the offset of its first element
// from `first`. Boxes are in order and together cover the range exactly.
struct LinearBox {
  Slab box;
  uint64_t offset;
};
std::vector<LinearBox> DecomposeLinear(const Dims& shape, uint64_t first, uint64_t count);

// ---------------------------------------------------------------- inline

template <typename F>
void ChunkCursor::Recurse(int d, int k, uint64_t unit, uint64_t coff, uint64_t moff, F& f) const {
  const DimPlan& dp = plan_.dims()[d];
  const auto& span = dp.chunks[idx_[d]];
  const Run* runs = dp.runs.data() + span.first_run;
  if (d == k) {
    for (uint32_t i = 0; i < span.num_runs; ++i)
      f(coff + runs[i].chunk_off * cstride_[d], moff + runs[i].mem_off * mstride_[d], runs[i].len * unit);
    return;
  }
  if (d + 1 == k) {
    // The level above the contiguous runs (the rows of a window): one loop
    // instead of a call per row, which costs as much as a short row's copy.
    const DimPlan& ip = plan_.dims()[k];
    const auto& ispan = ip.chunks[idx_[k]];
    const Run* iruns = ip.runs.data() + ispan.first_run;
    const uint64_t ic = cstride_[k], im = mstride_[k], oc = cstride_[d], om = mstride_[d];
    for (uint32_t i = 0; i < span.num_runs; ++i) {
      uint64_t c = coff + runs[i].chunk_off * oc, m = moff + runs[i].mem_off * om;
      for (uint64_t j = 0; j < runs[i].len; ++j, c += oc, m += om) {
        for (uint32_t r = 0; r < ispan.num_runs; ++r)
          f(c + iruns[r].chunk_off * ic, m + iruns[r].mem_off * im, iruns[r].len * unit);
      }
    }
    return;
  }
  for (uint32_t i = 0; i < span.num_runs; ++i) {
    for (uint64_t j = 0; j < runs[i].len; ++j)
      Recurse(d + 1, k, unit, coff + (runs[i].chunk_off + j) * cstride_[d], moff + (runs[i].mem_off + j) * mstride_[d],
              f);
  }
}

template <typename F>
void ChunkCursor::ForEachRun(F&& f) const {
  uint64_t unit;
  int k = MergeLevel(&unit);
  Recurse(0, k, unit, 0, 0, f);
}

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_SELECTION_HYPERSLAB_H_
