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

// ------------------------------------------------------------ Hdf5Dataset

Hdf5Dataset::Hdf5Dataset(std::shared_ptr<const DatasetLayout> layout, std::shared_ptr<const SourceFile> file,
                         std::shared_ptr<engine::ChunkCache> cache, uint64_t cache_id)
    : ChunkedDataset(layout, std::move(cache), cache_id), layout_(std::move(layout)), file_(std::move(file)) {}

std::string Hdf5Dataset::ChunkName(std::span<const uint64_t> coords) const {
  std::string s = fmt::format("{}: dataset {} chunk [", file_->path(), layout_->path);
  for (size_t i = 0; i < coords.size(); ++i) s += (i ? "," : "") + std::to_string(coords[i]);
  return s + "]";
}

void Hdf5Dataset::DescribeChunk(size_t index, StoredChunk* c) const {
  const ChunkRecord& rec = layout_->records[index];
  c->addr = rec.addr;
  c->bytes = rec.bytes;
  c->filter_mask = rec.filter_mask;
}

Status Hdf5Dataset::LoadChunk(size_t index, std::span<const uint64_t> coords, char* out) const {
  const DatasetLayout& l = *layout_;
  const ChunkRecord& rec = l.records[index];
  const uint64_t n = l.chunk_elements();
  const uint64_t bytes = n * l.item_size;
  if (l.in_header) {
    if (l.header_data.size() != bytes) return Status::Corruption(ChunkName(coords) + ": compact data of another size");
    std::memcpy(out, l.header_data.data(), bytes);
    return Status::OK();
  }
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

Result<std::string> Hdf5Dataset::ReadEncodedChunk(const Dims& coords, uint32_t* filter_mask) const {
  const DatasetLayout& l = *layout_;
  const std::string& filters = l.info.dataset.filters;
  const bool deflate_last = (filters.starts_with("deflate=") || filters.starts_with("shuffle,deflate=")) &&
                            filters.find(',', filters.find("deflate=")) == std::string::npos;
  if (l.contiguous() || l.swap_bytes || !deflate_last || coords.size() != l.chunk.size()) {
    return StoreDataset::ReadEncodedChunk(coords, filter_mask);
  }
  uint64_t linear = 0;
  for (size_t d = 0; d < coords.size(); ++d) {
    const uint64_t grid = l.info.dataset.shape[d] / l.chunk[d] + (l.info.dataset.shape[d] % l.chunk[d] != 0);
    if (coords[d] >= grid) return Err(Status::InvalidArgument(ChunkName(coords) + ": outside the chunk grid"));
    linear = linear * grid + coords[d];
  }
  const ptrdiff_t index = l.Find(linear);
  if (index < 0) return Err(Status::NotFound(ChunkName(coords) + ": not stored"));
  const ChunkRecord& rec = l.records[static_cast<size_t>(index)];
  const uint64_t bytes = l.chunk_elements() * l.item_size;
  if (rec.bytes == 0 || rec.bytes > l.pipeline.MaxStoredBytes(bytes)) {
    return Err(Status::Corruption(fmt::format("{}: stored as {} bytes, which cannot hold a chunk of {} bytes",
                                              ChunkName(coords), rec.bytes, bytes)));
  }
  std::string out(rec.bytes, '\0');
  SLABFS_RETURN_IF_ERROR_R(file_->ReadAt(rec.addr, rec.bytes, out.data(), ChunkName(coords)));
  *filter_mask = rec.filter_mask;
  return out;
}

Status Hdf5Dataset::ReadContiguous(const engine::TransferPlan& plan, char* out) const {
  const DatasetLayout& l = *layout_;
  const size_t item = l.item_size;
  engine::ChunkCursor cur(plan);
  const ptrdiff_t index = l.Find(0);
  const ChunkRecord* rec = index < 0 ? nullptr : &l.records[static_cast<size_t>(index)];
  Status status;
  const std::string what = fmt::format("{}: dataset {}", file_->path(), l.path);
  // The cursor's runs are already merged where both sides are contiguous;
  // each is one pread.
  cur.ForEachRun([&](uint64_t coff, uint64_t moff, uint64_t n) {
    if (!status.ok()) return;
    char* dst = out + moff * item;
    if (rec == nullptr) {
      Fill(dst, n);
      return;
    }
    if (l.in_header) {
      if ((coff + n) * item > l.header_data.size()) {
        status = Status::Corruption(what + ": a read past its compact data");
        return;
      }
      std::memcpy(dst, l.header_data.data() + coff * item, n * item);
      return;
    }
    status = file_->ReadAt(rec->addr + coff * item, n * item, dst, what);
    if (status.ok() && l.swap_bytes) SwapBytes(dst, n, item);
  });
  if (rec != nullptr && status.ok()) cache().CountBytesRead(plan.num_elements() * item);
  return status;
}

}  // namespace slabfs::stores
