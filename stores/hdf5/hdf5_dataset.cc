#include "stores/hdf5/hdf5_dataset.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/cache/chunk_cache.h"
#include "engine/filter/decode_scratch.h"
#include "engine/io/os_error.h"
#include "engine/selection/boxes.h"
#include "engine/selection/hyperslab.h"
#include "engine/util/thread_pool.h"

namespace slabfs::stores {
namespace {

// A read whose chunks take at least this many bytes is spread over the
// thread pool even when nothing needs decompressing (pread of cold pages).
constexpr uint64_t kParallelBytes = 4 << 20;

void FillRun(char* dst, uint64_t n, const std::string& fill, bool zero) {
  if (zero) {
    std::memset(dst, 0, n * fill.size());
    return;
  }
  for (uint64_t i = 0; i < n; ++i) std::memcpy(dst + i * fill.size(), fill.data(), fill.size());
}

}  // namespace

void SwapBytes(char* data, uint64_t n, size_t item_size) {
  switch (item_size) {
    case 2:
      for (uint64_t i = 0; i < n; ++i) std::swap(data[2 * i], data[2 * i + 1]);
      break;
    case 4:
      for (uint64_t i = 0; i < n; ++i) {
        uint32_t v;
        std::memcpy(&v, data + 4 * i, 4);
        v = __builtin_bswap32(v);
        std::memcpy(data + 4 * i, &v, 4);
      }
      break;
    case 8:
      for (uint64_t i = 0; i < n; ++i) {
        uint64_t v;
        std::memcpy(&v, data + 8 * i, 8);
        v = __builtin_bswap64(v);
        std::memcpy(data + 8 * i, &v, 8);
      }
      break;
    default: break;
  }
}

// ------------------------------------------------------------ SourceFile

Result<std::shared_ptr<SourceFile>> SourceFile::Open(const std::string& path) {
  const int fd = engine::RetryOnEintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); });
  if (fd < 0) return Err(engine::StatusFromErrno(errno, path));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Status s = engine::StatusFromErrno(errno, path);
    ::close(fd);
    return Err(std::move(s));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Err(Status::InvalidArgument(path + ": not a regular file"));
  }
  return std::shared_ptr<SourceFile>(new SourceFile(path, fd, static_cast<uint64_t>(st.st_size), st.st_dev, st.st_ino));
}

SourceFile::~SourceFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status SourceFile::ReadAt(uint64_t addr, size_t n, char* out, std::string_view what) const {
  if (addr > size_ || n > size_ - addr) {
    return Status::Corruption(
        fmt::format("{}: stored at byte {}, {} bytes, past the end of the file ({} bytes)", what, addr, n, size_));
  }
  SLABFS_ASSIGN_OR_RETURN(size_t got, engine::ReadFully(fd_, out, n, what, addr));
  if (got != n) {
    return Status::Corruption(
        fmt::format("{}: the file ended at byte {} while reading {} bytes at {} (it has "
                    "become shorter since it was opened)",
                    what, addr + got, n, addr));
  }
  return Status::OK();
}

// ------------------------------------------------------------ DatasetLayout

const ChunkRecord* DatasetLayout::Find(uint64_t linear) const {
  auto it = std::lower_bound(keys.begin(), keys.end(), linear);
  if (it == keys.end() || *it != linear) return nullptr;
  return &records[static_cast<size_t>(it - keys.begin())];
}

uint64_t DatasetLayout::chunk_elements() const {
  uint64_t n = 1;
  for (uint64_t c : chunk) n *= c;
  return n;
}

// ------------------------------------------------------------ Hdf5Dataset

Hdf5Dataset::Hdf5Dataset(std::shared_ptr<const DatasetLayout> layout, std::shared_ptr<const SourceFile> file,
                         std::shared_ptr<engine::ChunkCache> cache, uint64_t cache_id)
    : layout_(std::move(layout)), file_(std::move(file)), cache_(std::move(cache)), cache_id_(cache_id) {
  const std::string& fill = layout_->info.dataset.fill;
  fill_is_zero_ = std::all_of(fill.begin(), fill.end(), [](char c) { return c == 0; });
}

std::string Hdf5Dataset::ChunkName(std::span<const uint64_t> coords) const {
  std::string s = fmt::format("{}: dataset {} chunk [", file_->path(), layout_->path);
  for (size_t i = 0; i < coords.size(); ++i) s += (i ? "," : "") + std::to_string(coords[i]);
  return s + "]";
}

Status Hdf5Dataset::LoadChunk(const ChunkRecord& rec, std::span<const uint64_t> coords, char* out) const {
  const DatasetLayout& l = *layout_;
  const uint64_t n = l.chunk_elements();
  const uint64_t bytes = n * l.item_size;
  if (l.pipeline.empty() || l.pipeline.AllSkipped(rec.filter_mask)) {
    if (rec.bytes != bytes) {
      return Status::Corruption(
          fmt::format("{}: stored as {} bytes, but an unfiltered chunk takes {}", ChunkName(coords), rec.bytes, bytes));
    }
    SLABFS_RETURN_IF_ERROR(file_->ReadAt(rec.addr, bytes, out, ChunkName(coords)));
  } else {
    if (rec.bytes == 0 || rec.bytes > l.pipeline.MaxStoredBytes(bytes)) {
      return Status::Corruption(fmt::format("{}: stored as {} bytes, which cannot hold a chunk of {} bytes",
                                            ChunkName(coords), rec.bytes, bytes));
    }
    char* raw = engine::DecodeScratch(engine::kScratchStored, rec.bytes);
    const std::string what = ChunkName(coords);
    SLABFS_RETURN_IF_ERROR(file_->ReadAt(rec.addr, rec.bytes, raw, what));
    SLABFS_RETURN_IF_ERROR(l.pipeline.Decode(std::string_view(raw, rec.bytes), rec.filter_mask, out, bytes, what));
  }
  if (l.swap_bytes) SwapBytes(out, n, l.item_size);
  return Status::OK();
}

Status Hdf5Dataset::Read(const Slab& sel, void* buf, const MemSpace* mem) const {
  try {
    const DatasetLayout& l = *layout_;
    engine::TransferPlan plan;
    const Dims limit(l.chunk.size(), kUnlimited);  // HDF5 stores edge chunks whole
    Status s = plan.Build(l.info.dataset.shape, l.chunk, sel, mem, &limit);
    if (!s.ok()) return s.WithContext(l.path);
    if (plan.num_elements() == 0) return Status::OK();
    char* out = static_cast<char*>(buf);
    if (l.contiguous()) return ReadContiguous(plan, out);
    const uint64_t touched = plan.chunks_touched();
    size_t stripes = 1;
    if (touched >= 2 && (l.pipeline.compresses() || touched * l.chunk_elements() * l.item_size >= kParallelBytes)) {
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

Status Hdf5Dataset::ReadContiguous(const engine::TransferPlan& plan, char* out) const {
  const DatasetLayout& l = *layout_;
  const size_t item = l.item_size;
  const std::string& fill = l.info.dataset.fill;
  engine::ChunkCursor cur(plan);
  const ChunkRecord* rec = l.Find(0);
  Status status;
  const std::string what = fmt::format("{}: dataset {}", file_->path(), l.path);
  // The cursor's runs are already merged where both sides are contiguous;
  // each is one pread.
  cur.ForEachRun([&](uint64_t coff, uint64_t moff, uint64_t n) {
    if (!status.ok()) return;
    char* dst = out + moff * item;
    if (rec == nullptr) {
      FillRun(dst, n, fill, fill_is_zero_);
      return;
    }
    status = file_->ReadAt(rec->addr + coff * item, n * item, dst, what);
    if (status.ok() && l.swap_bytes) SwapBytes(dst, n, item);
  });
  if (rec != nullptr && status.ok()) cache_->CountBytesRead(plan.num_elements() * item);
  return status;
}

Status Hdf5Dataset::ReadStripe(const engine::TransferPlan& plan, char* out, size_t stripe, size_t stripes) const {
  const DatasetLayout& l = *layout_;
  const size_t item = l.item_size;
  const uint64_t chunk_bytes = l.chunk_elements() * item;
  const std::string& fill = l.info.dataset.fill;
  uint64_t k = 0;
  for (engine::ChunkCursor cur(plan); !cur.done(); cur.Next(), ++k) {
    if (k % stripes != stripe) continue;
    const ChunkRecord* rec = l.Find(cur.linear());
    if (rec == nullptr) {
      cur.ForEachRun([&](uint64_t, uint64_t moff, uint64_t n) { FillRun(out + moff * item, n, fill, fill_is_zero_); });
      continue;
    }
    const engine::CacheKey key{cache_id_, cur.linear()};
    engine::ChunkCache::Entry* e = cache_->Lookup(key);
    if (e == nullptr && cur.covers_chunk() && cur.num_runs() == 1) {
      // The whole chunk lands in one run of the caller's buffer: decode it
      // there, and keep nothing (a streaming read would only evict what
      // the cache holds).
      uint64_t dst = 0;
      cur.ForEachRun([&](uint64_t, uint64_t moff, uint64_t) { dst = moff; });
      SLABFS_RETURN_IF_ERROR(LoadChunk(*rec, cur.coords(), out + dst * item));
      cache_->CountBypassRead();
      cache_->CountBytesRead(rec->bytes);
      continue;
    }
    if (e == nullptr && cur.covers_chunk()) {
      // Read whole but in several runs (a chunk narrower than the
      // selection): decode into a per-thread buffer and copy out; nothing
      // is cached, as above.
      char* chunk = engine::DecodeScratch(engine::kScratchChunk, chunk_bytes);
      SLABFS_RETURN_IF_ERROR(LoadChunk(*rec, cur.coords(), chunk));
      cur.ForEachRun([&](uint64_t coff, uint64_t moff, uint64_t n) {
        std::memcpy(out + moff * item, chunk + coff * item, n * item);
      });
      cache_->CountBypassRead();
      cache_->CountBytesRead(rec->bytes);
      continue;
    }
    if (e == nullptr) {
      std::unique_ptr<char[]> data = cache_->TakeBuffer(chunk_bytes);
      SLABFS_RETURN_IF_ERROR(LoadChunk(*rec, cur.coords(), data.get()));
      cache_->CountBytesRead(rec->bytes);
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

Result<std::vector<StoredChunk>> Hdf5Dataset::StoredChunks() const {
  const DatasetLayout& l = *layout_;
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
    c.addr = l.records[i].addr;
    c.bytes = l.records[i].bytes;
    c.filter_mask = l.records[i].filter_mask;
    out.push_back(std::move(c));
  }
  return out;
}

Result<std::vector<Box>> Hdf5Dataset::Defined(const Slab& sel) const {
  const DatasetLayout& l = *layout_;
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
  SLABFS_ASSIGN_OR_RETURN(std::vector<StoredChunk> chunks, StoredChunks());
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
