#include "stores/chunked_dataset.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <shared_mutex>

#include <fmt/format.h>

#include "engine/cache/chunk_cache.h"
#include "engine/chunk/read_stripes.h"
#include "engine/filter/decode_scratch.h"
#include "engine/selection/boxes.h"
#include "engine/selection/hyperslab.h"
#include "engine/util/thread_pool.h"

namespace slabfs::stores {

// ------------------------------------------------------------ ChunkedLayout

ptrdiff_t ChunkedLayout::Find(uint64_t linear) const {
  auto it = std::lower_bound(keys.begin(), keys.end(), linear);
  if (it == keys.end() || *it != linear) return -1;
  return it - keys.begin();
}

uint64_t ChunkedLayout::chunk_elements() const {
  uint64_t n = 1;
  for (uint64_t c : chunk) n *= c;
  return n;
}

// ------------------------------------------------------------ ChunkedDataset

ChunkedDataset::ChunkedDataset(std::shared_ptr<const ChunkedLayout> layout, std::shared_ptr<engine::ChunkCache> cache,
                               uint64_t cache_id)
    : layout_(std::move(layout)), cache_(std::move(cache)), cache_id_(cache_id) {}

void ChunkedDataset::Fill(char* dst, uint64_t n) const {
  // Read each time, under the layout's lock the caller holds: a writable
  // store may change it (a Zarr v2 array's fill_value set as _FillValue).
  const std::string& fill = layout_->info.dataset.fill;
  if (std::all_of(fill.begin(), fill.end(), [](char c) { return c == 0; })) {
    std::memset(dst, 0, n * fill.size());
    return;
  }
  for (uint64_t i = 0; i < n; ++i) std::memcpy(dst + i * fill.size(), fill.data(), fill.size());
}

Status ChunkedDataset::ReadContiguous(const engine::TransferPlan&, char*) const {
  return Status::NotSupported(layout_->path + ": this store reads no contiguous datasets");
}

StoreDatasetInfo ChunkedDataset::info() const {
  std::shared_lock lock(layout_->mu);
  return layout_->info;
}

Status ChunkedDataset::Read(const Slab& sel, void* buf, const MemSpace* mem) const {
  try {
    const ChunkedLayout& l = *layout_;
    std::shared_lock lock(l.mu);
    engine::TransferPlan plan;
    const Dims limit(l.chunk.size(), kUnlimited);  // edge chunks are stored whole
    Status s = plan.Build(l.info.dataset.shape, l.chunk, sel, mem, &limit);
    if (!s.ok()) return s.WithContext(l.path);
    if (plan.num_elements() == 0) return Status::OK();
    char* out = static_cast<char*>(buf);
    if (l.contiguous()) return ReadContiguous(plan, out);
    // Chunks are loaded whole: that costs when they are decoded or large
    // (pread of cold pages).
    const uint64_t touched = plan.chunks_touched();
    const bool loads_cost = l.decodes || touched * l.chunk_elements() * l.item_size >= engine::kParallelBytes;
    const size_t stripes = engine::ReadStripes(*cache_, cache_id_, plan, l.item_size, loads_cost);
    if (stripes <= 1) return ReadStripe(plan, out, 0, 1);
    std::vector<Status> results(stripes);
    engine::ParallelFor(stripes, [&](size_t k) { results[k] = ReadStripe(plan, out, k, stripes); });
    for (Status& r : results)
      if (!r.ok()) return r;
    return Status::OK();
  } catch (const std::bad_alloc&) {
    return Status::IOError(layout_->path + ": no memory for the read");
  }
}

Status ChunkedDataset::ReadStripe(const engine::TransferPlan& plan, char* out, size_t stripe, size_t stripes) const {
  const ChunkedLayout& l = *layout_;
  const size_t item = l.item_size;
  const uint64_t chunk_bytes = l.chunk_elements() * item;
  uint64_t k = 0;
  for (engine::ChunkCursor cur(plan); !cur.done(); cur.Next(), ++k) {
    if (k % stripes != stripe) continue;
    const ptrdiff_t index = l.Find(cur.linear());
    if (index < 0) {
      cur.ForEachRun([&](uint64_t, uint64_t moff, uint64_t n) { Fill(out + moff * item, n); });
      continue;
    }
    const size_t at = static_cast<size_t>(index);
    const engine::CacheKey key{cache_id_, cur.linear()};
    engine::ChunkCache::Entry* e = cache_->Lookup(key);
    if (e == nullptr && cur.covers_chunk() && cur.num_runs() == 1) {
      // The whole chunk lands in one run of the caller's buffer: decode it
      // there, and keep nothing (a streaming read would only evict what
      // the cache holds).
      uint64_t dst = 0;
      cur.ForEachRun([&](uint64_t, uint64_t moff, uint64_t) { dst = moff; });
      SLABFS_RETURN_IF_ERROR(LoadChunk(at, cur.coords(), out + dst * item));
      cache_->CountBypassRead();
      cache_->CountBytesRead(StoredBytes(at));
      continue;
    }
    if (e == nullptr && cur.covers_chunk()) {
      // Read whole but in several runs (a chunk narrower than the
      // selection): decode into a per-thread buffer and copy out; nothing
      // is cached, as above.
      char* chunk = engine::DecodeScratch(engine::kScratchChunk, chunk_bytes);
      SLABFS_RETURN_IF_ERROR(LoadChunk(at, cur.coords(), chunk));
      cur.ForEachRun([&](uint64_t coff, uint64_t moff, uint64_t n) {
        std::memcpy(out + moff * item, chunk + coff * item, n * item);
      });
      cache_->CountBypassRead();
      cache_->CountBytesRead(StoredBytes(at));
      continue;
    }
    if (e == nullptr) {
      // Loaded into the cache once, however many reads want it at the
      // same time (the kernel's read-ahead requests cut across the same
      // chunks): the others wait for this load.
      engine::ChunkCache::Claim claim;
      e = cache_->ClaimLoad(key, &claim);
      if (e == nullptr) {
        std::unique_ptr<char[]> data = cache_->TakeBuffer(chunk_bytes);
        SLABFS_RETURN_IF_ERROR(LoadChunk(at, cur.coords(), data.get()));
        cache_->CountBytesRead(StoredBytes(at));
        e = claim.Fill(std::move(data), chunk_bytes);
      }
    }
    const char* src = e->data.get();
    cur.ForEachRun(
        [&](uint64_t coff, uint64_t moff, uint64_t n) { std::memcpy(out + moff * item, src + coff * item, n * item); });
    cache_->Release(e, cur.selected() * item);
    cache_->EvictToBudget();
  }
  return Status::OK();
}

Result<std::vector<StoredChunk>> ChunkedDataset::StoredChunks() const {
  std::shared_lock lock(layout_->mu);
  return StoredChunksLocked();
}

namespace {

// The chunk grid of a dataset: chunks per dimension, and how the sorted
// linear keys of ChunkedLayout map to grid coordinates and element boxes.
struct Grid {
  const Dims& shape;
  const Dims& chunk;
  Dims cells;  // chunks per dimension (ceil(shape / chunk))

  Grid(const Dims& s, const Dims& c) : shape(s), chunk(c), cells(s.size()) {
    for (size_t d = 0; d < s.size(); ++d) cells[d] = (s[d] + c[d] - 1) / c[d];
  }
  uint64_t KeyOf(const Dims& g) const {
    uint64_t k = 0;
    for (size_t d = 0; d < g.size(); ++d) k = k * cells[d] + g[d];
    return k;
  }
  // The grid coordinates of the chunk with key `key` into *g, or false
  // when the key lies past the grid (stale after a shrink) or the grid has
  // no cells.
  bool CoordsOf(uint64_t key, Dims* g) const {
    const size_t rank = shape.size();
    g->assign(rank, 0);
    for (size_t d = rank; d-- > 0;) {
      if (cells[d] == 0) return false;
      (*g)[d] = key % cells[d];
      key /= cells[d];
    }
    return key == 0;
  }
  // The box of the chunk with key `key` (clipped to the shape), or false
  // when it lies outside the shape.
  bool BoxOf(uint64_t key, Box* b) const {
    if (!CoordsOf(key, &b->start)) return false;
    const size_t rank = shape.size();
    b->count.assign(rank, 0);
    for (size_t d = 0; d < rank; ++d) {
      b->start[d] *= chunk[d];
      b->count[d] = std::min(chunk[d], shape[d] - b->start[d]);
    }
    return true;
  }
};

}  // namespace

std::vector<StoredChunk> ChunkedDataset::StoredChunksLocked() const {
  const ChunkedLayout& l = *layout_;
  std::vector<StoredChunk> out;
  if (l.chunk.size() != l.info.dataset.shape.size()) return out;
  const Grid grid(l.info.dataset.shape, l.chunk);
  out.reserve(l.keys.size());
  for (size_t i = 0; i < l.keys.size(); ++i) {
    StoredChunk c;
    if (!grid.CoordsOf(l.keys[i], &c.coords)) continue;  // past the grid: no chunk of this shape
    DescribeChunk(i, &c);
    out.push_back(std::move(c));
  }
  return out;
}

Result<std::vector<Box>> ChunkedDataset::Defined(const Slab& sel) const {
  const ChunkedLayout& l = *layout_;
  std::shared_lock lock(l.mu);
  const Dims& shape = l.info.dataset.shape;
  SLABFS_RETURN_IF_ERROR_R(engine::ValidateSlab(sel, shape, "dataset").WithContext(l.path));
  const size_t rank = shape.size();
  Dims lo(rank), hi(rank);
  for (size_t d = 0; d < rank; ++d) {
    const DimSlab n = engine::NormalizeDim(sel.dims[d]);
    if (n.count > 1) return Err(Status::InvalidArgument(l.path + ": Defined takes a box (no strides)"));
    lo[d] = n.start;
    hi[d] = n.start + n.extent();
    if (lo[d] == hi[d]) return std::vector<Box>{};
  }
  std::vector<Box> boxes;
  if (rank == 0 || l.chunk.size() != rank) {
    // A scalar (one box of no dimensions once stored), or no grid to look
    // chunks up in.
    if (rank == 0 && !l.keys.empty()) boxes.push_back(Box{});
    return boxes;
  }
  // Only the keys between the chunks of the box's first and last corners:
  // a chunk holding an element of the box lies between them in C order.
  const Grid grid(shape, l.chunk);
  Dims g0(rank), g1(rank);
  for (size_t d = 0; d < rank; ++d) {
    g0[d] = lo[d] / l.chunk[d];
    g1[d] = (hi[d] - 1) / l.chunk[d];
  }
  auto it = std::lower_bound(l.keys.begin(), l.keys.end(), grid.KeyOf(g0));
  const uint64_t last_key = grid.KeyOf(g1);
  Box cb;
  for (; it != l.keys.end() && *it <= last_key; ++it) {
    if (!grid.BoxOf(*it, &cb)) continue;
    Box b{Dims(rank), Dims(rank)};
    bool empty = false;
    for (size_t d = 0; d < rank && !empty; ++d) {
      const uint64_t a = std::max(cb.start[d], lo[d]), z = std::min(cb.start[d] + cb.count[d], hi[d]);
      empty = a >= z;
      b.start[d] = a;
      b.count[d] = empty ? 0 : z - a;
    }
    if (!empty) boxes.push_back(std::move(b));
  }
  return engine::MergeBoxes(std::move(boxes));
}

Result<StoreDataset::NextStoredElement> ChunkedDataset::StoredElementFinder() const {
  {
    std::shared_lock lock(layout_->mu);
    const ChunkedLayout& l = *layout_;
    if (l.info.dataset.shape.empty() || l.chunk.size() != l.info.dataset.shape.size())
      return StoreDataset::StoredElementFinder();
  }
  // Each call looks at the layout as it is then (a writable store's
  // dataset may change between the steps of a walk).
  return NextStoredElement([layout = layout_](uint64_t at) -> Result<std::optional<uint64_t>> {
    const ChunkedLayout& l = *layout;
    std::shared_lock lock(l.mu);
    const Dims& shape = l.info.dataset.shape;
    const size_t rank = shape.size();
    if (rank == 0 || l.chunk.size() != rank) return std::optional<uint64_t>();
    uint64_t total = 1;
    for (uint64_t s : shape) total *= s;
    if (at >= total) return std::optional<uint64_t>();
    const Grid grid(shape, l.chunk);
    // The chunks per band: every grid cell but the first dimension's.
    uint64_t per_band = 1;
    for (size_t d = 1; d < rank; ++d) per_band *= grid.cells[d];
    const uint64_t band = (at / (total / shape[0])) / l.chunk[0];
    std::optional<uint64_t> next;
    auto consider = [&](uint64_t key) {
      Box b;
      if (!grid.BoxOf(key, &b)) return;
      std::optional<uint64_t> n = engine::NextElementInBox(shape, b, at);
      if (n && (!next || *n < *next)) next = n;
    };
    // The stored chunks of at's band: any of them may hold elements at or
    // after it (later rows of the band).
    auto it = std::lower_bound(l.keys.begin(), l.keys.end(), band * per_band);
    for (; it != l.keys.end() && *it < (band + 1) * per_band; ++it) {
      consider(*it);
      if (next && *next == at) return next;
    }
    // Every element of a later band comes after every element of this one,
    // and within a band a lower key starts at a lower element: the first
    // stored chunk after the band starts the earliest of them.
    for (; it != l.keys.end() && !next; ++it) consider(*it);
    return next;
  });
}

}  // namespace slabfs::stores
