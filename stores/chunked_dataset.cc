#include "stores/chunked_dataset.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <shared_mutex>

#include <fmt/format.h>

#include "engine/cache/chunk_cache.h"
#include "engine/filter/decode_scratch.h"
#include "engine/selection/boxes.h"
#include "engine/selection/hyperslab.h"
#include "engine/util/thread_pool.h"

namespace slabfs::stores {
namespace {

// A read whose chunks take at least this many bytes is spread over the
// thread pool even when nothing needs decoding (pread of cold pages).
constexpr uint64_t kParallelBytes = 4 << 20;

}  // namespace

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
    : layout_(std::move(layout)), cache_(std::move(cache)), cache_id_(cache_id) {
  const std::string& fill = layout_->info.dataset.fill;
  fill_is_zero_ = std::all_of(fill.begin(), fill.end(), [](char c) { return c == 0; });
}

void ChunkedDataset::Fill(char* dst, uint64_t n) const {
  const std::string& fill = layout_->info.dataset.fill;
  if (fill_is_zero_) {
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
    const uint64_t touched = plan.chunks_touched();
    size_t stripes = 1;
    if (touched >= 2 && (l.decodes || touched * l.chunk_elements() * l.item_size >= kParallelBytes)) {
      stripes = static_cast<size_t>(std::min<uint64_t>(engine::ParallelWidth(), touched));
    }
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
      std::unique_ptr<char[]> data = cache_->TakeBuffer(chunk_bytes);
      SLABFS_RETURN_IF_ERROR(LoadChunk(at, cur.coords(), data.get()));
      cache_->CountBytesRead(StoredBytes(at));
      e = cache_->Insert(key, std::move(data), chunk_bytes, /*dirty=*/false);
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

std::vector<StoredChunk> ChunkedDataset::StoredChunksLocked() const {
  const ChunkedLayout& l = *layout_;
  const Dims& shape = l.info.dataset.shape;
  const size_t rank = shape.size();
  std::vector<StoredChunk> out;
  out.reserve(l.keys.size());
  for (size_t i = 0; i < l.keys.size(); ++i) {
    StoredChunk c;
    c.coords.assign(rank, 0);
    uint64_t linear = l.keys[i];
    for (size_t d = rank; d-- > 0;) {
      const uint64_t g = (shape[d] + l.chunk[d] - 1) / l.chunk[d];
      if (g == 0) break;
      c.coords[d] = linear % g;
      linear /= g;
    }
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
  const std::vector<StoredChunk> chunks = StoredChunksLocked();
  std::vector<Box> boxes;
  for (const StoredChunk& c : chunks) {
    Box b{Dims(rank), Dims(rank)};
    bool empty = false;
    for (size_t d = 0; d < rank && !empty; ++d) {
      const uint64_t c0 = c.coords[d] * l.chunk[d];
      const uint64_t c1 = std::min(c0 + l.chunk[d], shape[d]);
      const uint64_t a = std::max(c0, lo[d]), z = std::min(c1, hi[d]);
      empty = a >= z;
      b.start[d] = a;
      b.count[d] = empty ? 0 : z - a;
    }
    if (!empty) boxes.push_back(std::move(b));
  }
  return engine::MergeBoxes(std::move(boxes));
}

}  // namespace slabfs::stores
