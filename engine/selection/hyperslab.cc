#include "engine/selection/hyperslab.h"
#include "engine/util/math.h"

#include <algorithm>
#include <string>

namespace slabfs::engine {
namespace {}  // namespace

DimSlab NormalizeDim(const DimSlab& d) {
  if (d.count == 0 || d.block == 0) return DimSlab{d.start, 1, 0, 1};
  if (d.count == 1 || d.stride == d.block) return DimSlab{d.start, 1, 1, d.count * d.block};
  return d;
}

Status ValidateSlab(const Slab& sel, const Dims& shape, const char* what) {
  if (sel.dims.size() != shape.size())
    return Status::InvalidArgument(std::string(what) + " selection has rank " + std::to_string(sel.dims.size()) +
                                   ", array has rank " + std::to_string(shape.size()));
  for (size_t d = 0; d < shape.size(); ++d) {
    const DimSlab& s = sel.dims[d];
    if (s.count == 0) continue;
    if (s.block == 0)
      return Status::InvalidArgument(std::string(what) + " selection: block 0 in dimension " + std::to_string(d));
    if (s.count > 1 && s.stride < s.block)
      return Status::InvalidArgument(std::string(what) + " selection: stride smaller than block in dimension " +
                                     std::to_string(d));
    slabfs_u128 last = static_cast<slabfs_u128>(s.start) + static_cast<slabfs_u128>(s.count - 1) * s.stride + s.block;
    if (last > shape[d])
      return Status::InvalidArgument(std::string(what) + " selection reaches index " +
                                     std::to_string(static_cast<uint64_t>(last > UINT64_MAX ? UINT64_MAX : last) - 1) +
                                     " in dimension " + std::to_string(d) + " of size " + std::to_string(shape[d]));
  }
  return Status::OK();
}

Status TransferPlan::Build(const Dims& shape, const Dims& chunks, const Slab& file_sel, const MemSpace* mem,
                           const Dims* max_shape) {
  shape_ = shape;
  chunks_ = chunks;
  size_t rank = shape.size();
  // ChunkCursor holds up to kMaxRank dimensions inline.
  if (rank == 0 || rank > static_cast<size_t>(kMaxRank)) {
    return Status::InvalidArgument("rank must be 1 to " + std::to_string(kMaxRank));
  }
  if (max_shape && max_shape->size() != rank) return Status::InvalidArgument("max shape of the wrong rank");
  limit_ = max_shape ? *max_shape : shape;
  SLABFS_RETURN_IF_ERROR(ValidateSlab(file_sel, shape, "dataset"));
  // Without a memory space the memory side is the whole of a dense array
  // of the selection's extents (built in place: a plan reused for many
  // small transfers allocates nothing once its vectors have grown).
  Slab mem_sel;
  if (mem) {
    SLABFS_RETURN_IF_ERROR(ValidateSlab(mem->selection, mem->shape, "memory"));
    for (size_t d = 0; d < rank; ++d)
      if (mem->selection.dims[d].extent() != file_sel.dims[d].extent())
        return Status::InvalidArgument("memory selection extent " + std::to_string(mem->selection.dims[d].extent()) +
                                       " differs from dataset selection extent " +
                                       std::to_string(file_sel.dims[d].extent()) + " in dimension " +
                                       std::to_string(d));
    mem_shape_ = mem->shape;
    mem_sel = mem->selection;
  } else {
    mem_shape_.resize(rank);
    for (size_t d = 0; d < rank; ++d) mem_shape_[d] = file_sel.dims[d].extent();
  }
  grid_.resize(rank);
  dims_.resize(rank);
  for (DimPlan& p : dims_) {
    p.chunks.clear();
    p.runs.clear();
  }
  num_elements_ = 1;
  for (size_t d = 0; d < rank; ++d) {
    grid_[d] = CeilDiv(shape[d], chunks[d]);
    DimSlab fs = NormalizeDim(file_sel.dims[d]);
    DimSlab ms = NormalizeDim(mem ? mem_sel.dims[d] : DimSlab{0, 1, mem_shape_[d], 1});
    uint64_t n = fs.extent();
    num_elements_ *= n;
    DimPlan& p = dims_[d];
    const uint64_t C = chunks[d];
    for (uint64_t k = 0; k < n;) {
      uint64_t f = fs.start + (k / fs.block) * fs.stride + k % fs.block;
      uint64_t m = ms.start + (k / ms.block) * ms.stride + k % ms.block;
      uint64_t chunk = f / C;
      uint64_t len = std::min({fs.block - k % fs.block, ms.block - k % ms.block, (chunk + 1) * C - f, n - k});
      uint64_t off = f - chunk * C;
      if (p.chunks.empty() || p.chunks.back().chunk != chunk) {
        p.chunks.push_back({chunk, static_cast<uint32_t>(p.runs.size()), 0, 0});
      }
      auto& span = p.chunks.back();
      Run* last = span.num_runs ? &p.runs.back() : nullptr;
      if (last && last->chunk_off + last->len == off && last->mem_off + last->len == m) {
        last->len += len;
      } else {
        p.runs.push_back({off, m, len});
        ++span.num_runs;
      }
      span.selected += len;
      k += len;
    }
  }
  if (num_elements_ == 0)
    for (auto& p : dims_) p.chunks.clear();
  return Status::OK();
}

uint64_t TransferPlan::chunks_touched() const {
  uint64_t n = 1;
  for (const auto& p : dims_) n *= p.chunks.size();
  return n;
}

ChunkCursor::ChunkCursor(const TransferPlan& plan) : plan_(plan), rank_(static_cast<size_t>(plan.rank())) {
  int r = plan.rank();
  std::fill_n(idx_.begin(), rank_, 0u);
  uint64_t s = 1;
  for (int d = r - 1; d >= 0; --d) {
    mstride_[d] = s;
    s *= plan.mem_shape()[d];
  }
  done_ = r == 0;
  for (const auto& p : plan.dims())
    if (p.chunks.empty()) done_ = true;
  if (!done_) Load();
}

void ChunkCursor::Load() {
  int r = plan_.rank();
  linear_ = 0;
  for (int d = 0; d < r; ++d) {
    uint64_t c = plan_.dims()[d].chunks[idx_[d]].chunk;
    coords_[d] = c;
    linear_ = linear_ * plan_.grid()[d] + c;
    uint64_t C = plan_.chunk_shape()[d];
    const uint64_t limit = plan_.limit()[d];
    extent_[d] = limit == kUnlimited ? C : std::min(C, limit - c * C);
  }
  uint64_t s = 1;
  for (int d = r - 1; d >= 0; --d) {
    cstride_[d] = s;
    s *= extent_[d];
  }
}

void ChunkCursor::Next() {
  for (int d = plan_.rank() - 1; d >= 0; --d) {
    if (++idx_[d] < plan_.dims()[d].chunks.size()) {
      Load();
      return;
    }
    idx_[d] = 0;
  }
  done_ = true;
}

uint64_t ChunkCursor::chunk_elements() const {
  uint64_t n = 1;
  for (size_t d = 0; d < rank_; ++d) n *= extent_[d];
  return n;
}

uint64_t ChunkCursor::selected() const {
  uint64_t n = 1;
  for (int d = 0; d < plan_.rank(); ++d) n *= plan_.dims()[d].chunks[idx_[d]].selected;
  return n;
}

int ChunkCursor::MergeLevel(uint64_t* unit) const {
  // Dimension d merges into the one outside it when it is selected whole in
  // the chunk and spans the whole memory row: then consecutive indices of the
  // outer dimension are adjacent on both sides.
  int k = plan_.rank() - 1;
  uint64_t u = 1;
  while (k > 0) {
    const DimPlan& dp = plan_.dims()[k];
    const auto& span = dp.chunks[idx_[k]];
    if (span.num_runs != 1) break;
    const Run& r = dp.runs[span.first_run];
    if (r.chunk_off != 0 || r.len != extent_[k] || r.mem_off != 0 || plan_.mem_shape()[k] != r.len) break;
    u *= r.len;
    --k;
  }
  *unit = u;
  return k;
}

std::pair<uint64_t, uint64_t> ChunkCursor::span() const {
  // Each dimension's runs in a chunk are in increasing order.
  uint64_t first = 0, last = 0;
  for (int d = 0; d < plan_.rank(); ++d) {
    const DimPlan& dp = plan_.dims()[d];
    const auto& span = dp.chunks[idx_[d]];
    const Run& a = dp.runs[span.first_run];
    const Run& b = dp.runs[span.first_run + span.num_runs - 1];
    first += a.chunk_off * cstride_[d];
    last += (b.chunk_off + b.len - 1) * cstride_[d];
  }
  return {first, last + 1};
}

uint64_t ChunkCursor::num_runs() const {
  uint64_t unit;
  int k = MergeLevel(&unit);
  uint64_t n = 1;
  for (int d = 0; d < k; ++d) n *= plan_.dims()[d].chunks[idx_[d]].selected;
  return n * plan_.dims()[k].chunks[idx_[k]].num_runs;
}

std::vector<LinearBox> DecomposeLinear(const Dims& shape, uint64_t first, uint64_t count) {
  std::vector<LinearBox> out;
  if (count == 0) return out;
  int r = static_cast<int>(shape.size());
  // inner[d]: elements in one index step of dimension d.
  Dims inner(r);
  uint64_t s = 1;
  for (int d = r - 1; d >= 0; --d) {
    inner[d] = s;
    s *= shape[d];
  }
  // prefix: fixed indices of the dimensions outside d.
  Dims prefix;
  auto emit = [&](int d, uint64_t lo, uint64_t hi) {
    // Box: prefix fixed, [lo, hi) in dimension d, everything inside.
    Dims start(r, 0), cnt(r, 0);
    for (int i = 0; i < d; ++i) {
      start[i] = prefix[i];
      cnt[i] = 1;
    }
    start[d] = lo;
    cnt[d] = hi - lo;
    for (int i = d + 1; i < r; ++i) cnt[i] = shape[i];
    uint64_t pos = 0;
    for (int i = 0; i < r; ++i) pos += start[i] * inner[i];
    out.push_back({Slab::Box(start, cnt), pos - first});
  };
  // Elements [a, b) of the sub-array at dimension d whose outer indices are
  // `prefix`, given relative to that sub-array.
  auto rec = [&](auto&& self, int d, uint64_t a, uint64_t b) -> void {
    uint64_t in = inner[d];
    uint64_t ia = a / in, oa = a % in, ib = b / in, ob = b % in;
    if (ia == ib) {  // within one index of d: go inside
      prefix.push_back(ia);
      self(self, d + 1, oa, ob);
      prefix.pop_back();
      return;
    }
    if (oa != 0) {
      prefix.push_back(ia);
      self(self, d + 1, oa, in);
      prefix.pop_back();
      ++ia;
    }
    if (ib > ia) emit(d, ia, ib);
    if (ob != 0) {
      prefix.push_back(ib);
      self(self, d + 1, 0, ob);
      prefix.pop_back();
    }
  };
  rec(rec, 0, first, first + count);
  return out;
}

}  // namespace slabfs::engine
