#include "engine/chunk/chunk_format.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/cache/chunk_cache.h"
#include "engine/chunk/sparse_chunk.h"
#include "engine/util/coding.h"

namespace slabfs::engine {
namespace {

// Gaps up to this size inside one scatter read are read into a scratch
// buffer rather than splitting the read in two.
constexpr uint64_t kMaxGapBytes = 64 * 1024;
// Per-thread staging buffers for the two cases below are at most this large
// (larger chunks use the vectored calls), so they cost little memory.
constexpr uint64_t kMaxStagingBytes = 4 << 20;
// A direct read of more runs than this reads their span into one buffer.
constexpr uint64_t kMaxReadIovecs = 16;
// A whole-chunk write of more runs than this is gathered into one buffer.
constexpr size_t kMaxWriteIovecs = 16;

char* ScratchBuffer() {
  static thread_local std::unique_ptr<char[]> buf(new char[kMaxGapBytes]);
  return buf.get();
}

// A per-thread buffer of at least n bytes, kept for the next call.
char* StagingBuffer(uint64_t n) {
  thread_local std::unique_ptr<char[]> buf;
  thread_local uint64_t size = 0;
  if (size < n) {
    buf.reset(new char[n]);
    size = n;
  }
  return buf.get();
}

// Dense chunks: memory and file hold the same bytes, the elements in C order.
class DenseFormat final : public ChunkFormat {
 public:
  DenseFormat(size_t item_size, std::string fill) : ChunkFormat(item_size, std::move(fill)) {}

  std::string_view name() const override { return "dense"; }
  bool variable_size() const override { return false; }
  bool direct_io() const override { return true; }
  uint64_t MaxFileBytes(uint64_t n) const override { return MemBytes(n); }

  Status Load(const ChunkIo& io, uint64_t addr, uint64_t file_bytes, uint32_t, char* mem, uint64_t n) const override {
    if (file_bytes != MemBytes(n))
      return Status::Corruption("stored as " + std::to_string(file_bytes) + " bytes, not " +
                                std::to_string(MemBytes(n)));
    SLABFS_RETURN_IF_ERROR(io.file->ReadAt(addr, mem, file_bytes));
    io.cache->CountBytesRead(file_bytes);
    return Status::OK();
  }

  FileImage MemToFile(const char* mem, uint64_t n, std::string*) const override {
    return FileImage{std::string_view(mem, MemBytes(n)), 0};
  }

  Status FileRead(const ChunkIo& io, uint64_t addr, const ChunkCursor& cur, char* buf) const override;
  Status FileWrite(const ChunkIo& io, uint64_t addr, const ChunkCursor& cur, const char* buf) const override;
};

// Filtered chunks: the memory chunk is dense; the file chunk is what the
// dataset's filter pipeline makes of it.
class FilteredFormat final : public ChunkFormat {
 public:
  FilteredFormat(size_t item_size, std::string fill, FilterPipeline filters)
      : ChunkFormat(item_size, std::move(fill)), filters_(std::move(filters)) {}

  std::string_view name() const override { return "dense filtered"; }
  bool variable_size() const override { return true; }
  bool direct_io() const override { return false; }
  uint64_t MaxFileBytes(uint64_t n) const override { return filters_.MaxEncodedBytes(MemBytes(n)); }

  Status Load(const ChunkIo& io, uint64_t addr, uint64_t file_bytes, uint32_t filter_mask, char* mem,
              uint64_t n) const override {
    // The size comes from an index record: bound it before reading.
    if (file_bytes == 0 || file_bytes > MaxFileBytes(n))
      return Status::Corruption("record claims " + std::to_string(file_bytes) + " stored bytes, more than a chunk of " +
                                std::to_string(n) + " elements can take");
    std::unique_ptr<char[]> big;  // chunks above the staging size are rare
    char* stored =
        file_bytes <= kMaxStagingBytes ? StagingBuffer(file_bytes) : (big.reset(new char[file_bytes]), big.get());
    SLABFS_RETURN_IF_ERROR(io.file->ReadAt(addr, stored, file_bytes));
    io.cache->CountBytesRead(file_bytes);
    return filters_.Decode(std::string_view(stored, file_bytes), filter_mask, item_size(), mem, MemBytes(n), "");
  }

  FileImage MemToFile(const char* mem, uint64_t n, std::string* scratch) const override {
    uint32_t mask = 0;
    filters_.Encode(mem, MemBytes(n), item_size(), scratch, &mask);
    return FileImage{*scratch, mask};
  }

 private:
  const FilterPipeline filters_;
};

// Sparse chunks: values plus the defined set in memory; in the file, a
// header (u32 encoded size, u32 defined count) and the encoding of
// sparse_chunk.h through the dataset's filters (if any).
class SparseFormat final : public ChunkFormat {
 public:
  static constexpr uint64_t kHeaderBytes = 8;

  SparseFormat(size_t item_size, std::string fill, FilterPipeline filters)
      : ChunkFormat(item_size, std::move(fill)), filters_(std::move(filters)) {}

  std::string_view name() const override { return "sparse"; }
  bool variable_size() const override { return true; }
  bool direct_io() const override { return false; }
  bool tracks_defined() const override { return true; }
  uint64_t MemBytes(uint64_t n) const override { return SparseMemBytes(n, item_size()); }
  uint64_t MaxFileBytes(uint64_t n) const override {
    return kHeaderBytes + filters_.MaxEncodedBytes(MaxEncodedSparseBytes(n, item_size()));
  }

  void MemFill(char* mem, uint64_t n) const override {
    FillBytes(mem, n);
    std::memset(SparseBits(mem, n, item_size()), 0, SparseBitmapWords(n) * 8);
  }

  void MemWrite(char* mem, uint64_t n, const ChunkCursor& cur, const char* buf) const override {
    const uint64_t isz = item_size();
    uint64_t* bits = SparseBits(mem, n, isz);
    cur.ForEachRun([&](uint64_t co, uint64_t mo, uint64_t k) {
      std::memcpy(mem + co * isz, buf + mo * isz, k * isz);
      SetBitRange(bits, co, k, true);
    });
  }

  void MemEraseRange(char* mem, uint64_t n, uint64_t first, uint64_t count) const override {
    FillBytes(mem + first * item_size(), count);
    SetBitRange(SparseBits(mem, n, item_size()), first, count, false);
  }

  void MemDefinedRuns(const char* mem, uint64_t n, uint64_t first, uint64_t end,
                      const std::function<void(uint64_t, uint64_t)>& f) const override {
    ForEachSetRun(SparseBits(mem, n, item_size()), first, end, f);
  }

  Result<uint64_t> StoredDefined(const ChunkIo& io, uint64_t addr, uint64_t file_bytes, uint64_t n) const override {
    if (file_bytes < kHeaderBytes || file_bytes > MaxFileBytes(n))
      return Err(Status::Corruption("record claims " + std::to_string(file_bytes) + " stored bytes"));
    char header[kHeaderBytes];
    SLABFS_RETURN_IF_ERROR_R(io.file->ReadAt(addr, header, sizeof header));
    const uint64_t defined = LoadU32(header + 4);
    if (defined == 0 || defined > n)
      return Err(Status::Corruption("sparse chunk claims " + std::to_string(defined) + " defined elements"));
    return defined;
  }

  Status Load(const ChunkIo& io, uint64_t addr, uint64_t file_bytes, uint32_t filter_mask, char* mem,
              uint64_t n) const override {
    if (file_bytes < kHeaderBytes + 1 || file_bytes > MaxFileBytes(n))
      return Status::Corruption("record claims " + std::to_string(file_bytes) +
                                " stored bytes, not possible for a "
                                "sparse chunk of " +
                                std::to_string(n) + " elements");
    std::string stored(file_bytes, '\0');
    SLABFS_RETURN_IF_ERROR(io.file->ReadAt(addr, stored.data(), file_bytes));
    io.cache->CountBytesRead(file_bytes);
    const uint64_t raw_size = LoadU32(stored.data());
    const uint64_t defined = LoadU32(stored.data() + 4);
    if (raw_size == 0 || raw_size > MaxEncodedSparseBytes(n, item_size()))
      return Status::Corruption("sparse chunk claims an encoding of " + std::to_string(raw_size) + " bytes");
    const std::string_view body = std::string_view(stored).substr(kHeaderBytes);
    if (filters_.empty()) {
      if (body.size() != raw_size) return Status::Corruption("sparse chunk is not the size its header says");
      return DecodeSparse(body, n, item_size(), fill(), defined, mem);
    }
    std::string raw(raw_size, '\0');
    SLABFS_RETURN_IF_ERROR(filters_.Decode(body, filter_mask, item_size(), raw.data(), raw_size, ""));
    return DecodeSparse(raw, n, item_size(), fill(), defined, mem);
  }

  Status LoadDefined(const ChunkIo& io, uint64_t addr, uint64_t file_bytes, uint32_t filter_mask, char* mem,
                     uint64_t n) const override {
    // With filters the set is inside the filtered stream: decode it all.
    if (!filters_.empty()) return Load(io, addr, file_bytes, filter_mask, mem, n);
    if (file_bytes < kHeaderBytes + 1 || file_bytes > MaxFileBytes(n))
      return Status::Corruption("record claims " + std::to_string(file_bytes) +
                                " stored bytes, not possible for a "
                                "sparse chunk of " +
                                std::to_string(n) + " elements");
    char header[kHeaderBytes];
    SLABFS_RETURN_IF_ERROR(io.file->ReadAt(addr, header, sizeof header));
    const uint64_t raw_size = LoadU32(header), defined = LoadU32(header + 4);
    if (raw_size != file_bytes - kHeaderBytes)
      return Status::Corruption("sparse chunk is not the size its header says");
    if (defined == 0 || defined > n || raw_size < 1 + defined * item_size())
      return Status::Corruption("sparse chunk claims " + std::to_string(defined) + " defined elements");
    // The values are at the end of the encoding: read only what is before.
    std::string structure(raw_size - defined * item_size(), '\0');
    SLABFS_RETURN_IF_ERROR(io.file->ReadAt(addr + kHeaderBytes, structure.data(), structure.size()));
    io.cache->CountBytesRead(kHeaderBytes + structure.size());
    return DecodeSparseSet(structure, n, defined, SparseBits(mem, n, item_size()));
  }

  FileImage MemToFile(const char* mem, uint64_t n, std::string* scratch) const override {
    const uint64_t defined = CountBits(SparseBits(mem, n, item_size()), n);
    if (defined == 0) return FileImage{};
    std::string raw;
    EncodeSparse(mem, n, item_size(), &raw);
    uint32_t mask = 0;
    scratch->clear();
    PutU32(scratch, static_cast<uint32_t>(raw.size()));
    PutU32(scratch, static_cast<uint32_t>(defined));
    if (filters_.empty()) {
      scratch->append(raw);
    } else {
      std::string enc;
      filters_.Encode(raw.data(), raw.size(), item_size(), &enc, &mask);
      scratch->append(enc);
    }
    return FileImage{*scratch, mask, defined};
  }

 private:
  const FilterPipeline filters_;
};

Status DenseFormat::FileRead(const ChunkIo& io, uint64_t addr, const ChunkCursor& cur, char* buf) const {
  const uint64_t isz = item_size();
  uint64_t lo = UINT64_MAX, hi = 0;
  if (cur.num_runs() > kMaxReadIovecs) {
    cur.ForEachRun([&](uint64_t co, uint64_t, uint64_t n) {
      lo = std::min(lo, co * isz);
      hi = std::max(hi, (co + n) * isz);
    });
  }
  if (cur.num_runs() > kMaxReadIovecs && hi - lo <= kMaxStagingBytes) {
    // Many short runs: read the span they cover in one piece into a buffer
    // that stays in the CPU's cache, then copy the runs out of it. The
    // kernel copies one contiguous range instead of walking an iovec per run.
    char* span = StagingBuffer(hi - lo);
    SLABFS_RETURN_IF_ERROR(io.file->ReadAt(addr + lo, span, hi - lo));
    const char* src = span - lo;
    cur.ForEachRun([&](uint64_t co, uint64_t mo, uint64_t n) { std::memcpy(buf + mo * isz, src + co * isz, n * isz); });
    io.cache->CountBytesRead(hi - lo);
    io.cache->CountBypassRead();
    return Status::OK();
  }
  std::vector<struct iovec> iov;
  uint64_t batch_start = 0, cursor = 0;
  Status status;
  char* scratch = ScratchBuffer();
  auto flush = [&]() {
    if (!iov.empty() && status.ok()) {
      status = io.file->ReadvAt(addr + batch_start, iov.data(), static_cast<int>(iov.size()));
      io.cache->CountBytesRead(cursor - batch_start);
    }
    iov.clear();
  };
  cur.ForEachRun([&](uint64_t co, uint64_t mo, uint64_t n) {
    uint64_t off = co * isz, len = n * isz;
    if (iov.empty()) {
      batch_start = cursor = off;
    } else if (off != cursor) {
      uint64_t gap = off - cursor;
      if (gap <= kMaxGapBytes) {
        iov.push_back({scratch, gap});
      } else {
        flush();
        batch_start = off;
      }
      cursor = off;
    }
    char* dst = buf + mo * isz;
    if (!iov.empty() && static_cast<char*>(iov.back().iov_base) + iov.back().iov_len == dst &&
        iov.back().iov_base != scratch)
      iov.back().iov_len += len;
    else
      iov.push_back({dst, len});
    cursor += len;
  });
  flush();
  io.cache->CountBypassRead();
  return status;
}

Status DenseFormat::FileWrite(const ChunkIo& io, uint64_t addr, const ChunkCursor& cur, const char* buf) const {
  // Only whole chunks are written directly: a chunk's bytes are contiguous
  // in the file, so the runs are gathered back to back from addr.
  const uint64_t isz = item_size();
  const uint64_t bytes = cur.chunk_elements() * isz;
  std::vector<struct iovec> iov;
  iov.reserve(cur.num_runs());
  cur.ForEachRun([&](uint64_t, uint64_t mo, uint64_t n) {
    char* src = const_cast<char*>(buf + mo * isz);
    if (!iov.empty() && static_cast<char*>(iov.back().iov_base) + iov.back().iov_len == src)
      iov.back().iov_len += n * isz;
    else
      iov.push_back({src, n * isz});
  });
  Status s;
  if (iov.size() > kMaxWriteIovecs && bytes <= kMaxStagingBytes) {
    // Many short runs: gathering them here (the buffer stays in the CPU's
    // cache) and writing once costs less than the kernel copying run by run
    // into fresh page-cache pages.
    char* gather = StagingBuffer(bytes);
    char* q = gather;
    for (const auto& v : iov) {
      std::memcpy(q, v.iov_base, v.iov_len);
      q += v.iov_len;
    }
    s = io.file->WriteAt(addr, gather, bytes);
  } else {
    s = io.file->WritevAt(addr, iov.data(), static_cast<int>(iov.size()));
  }
  SLABFS_RETURN_IF_ERROR(s);
  io.cache->CountBytesWritten(bytes);
  io.cache->CountBypassWrite();
  return Status::OK();
}

}  // namespace

ChunkFormat::ChunkFormat(size_t item_size, std::string fill)
    : item_size_(item_size),
      fill_(std::move(fill)),
      fill_is_zero_(std::all_of(fill_.begin(), fill_.end(), [](char ch) { return ch == 0; })) {}

std::unique_ptr<ChunkFormat> ChunkFormat::ForDataset(size_t item_size, std::string fill, FilterPipeline filters,
                                                     bool sparse) {
  if (sparse) return std::make_unique<SparseFormat>(item_size, std::move(fill), std::move(filters));
  if (filters.empty()) return std::make_unique<DenseFormat>(item_size, std::move(fill));
  return std::make_unique<FilteredFormat>(item_size, std::move(fill), std::move(filters));
}

void ChunkFormat::FillBytes(char* dst, uint64_t n) const {
  const uint64_t total = n * item_size_;
  if (fill_is_zero_) {
    std::memset(dst, 0, total);
    return;
  }
  if (total == 0) return;
  std::memcpy(dst, fill_.data(), item_size_);
  for (uint64_t done = item_size_; done < total;) {
    uint64_t k = std::min(done, total - done);
    std::memcpy(dst + done, dst, k);
    done += k;
  }
}

void ChunkFormat::FillSelected(const ChunkCursor& cur, char* buf) const {
  cur.ForEachRun([&](uint64_t, uint64_t mo, uint64_t n) { FillBytes(buf + mo * item_size_, n); });
}

namespace {

// A run of n bytes. Runs of one element (a column, a strided selection)
// are a single move here rather than a call into the C library, which
// costs more than the move.
inline void CopyRun(char* dst, const char* src, uint64_t n) {
  switch (n) {
    case 1: *dst = *src; return;
    case 2: std::memcpy(dst, src, 2); return;
    case 4: std::memcpy(dst, src, 4); return;
    case 8: std::memcpy(dst, src, 8); return;
    default: std::memcpy(dst, src, n);
  }
}

}  // namespace

void ChunkFormat::MemRead(const char* mem, const ChunkCursor& cur, char* buf) const {
  const uint64_t isz = item_size_;
  cur.ForEachRun([&](uint64_t co, uint64_t mo, uint64_t n) { CopyRun(buf + mo * isz, mem + co * isz, n * isz); });
}

void ChunkFormat::MemWrite(char* mem, uint64_t, const ChunkCursor& cur, const char* buf) const {
  const uint64_t isz = item_size_;
  cur.ForEachRun([&](uint64_t co, uint64_t mo, uint64_t n) { CopyRun(mem + co * isz, buf + mo * isz, n * isz); });
}

void ChunkFormat::MemEraseRange(char* mem, uint64_t, uint64_t first, uint64_t count) const {
  FillBytes(mem + first * item_size_, count);
}

void ChunkFormat::MemErase(char* mem, uint64_t n, const ChunkCursor& cur) const {
  cur.ForEachRun([&](uint64_t co, uint64_t, uint64_t k) { MemEraseRange(mem, n, co, k); });
}

void ChunkFormat::MemDefinedRuns(const char*, uint64_t, uint64_t first, uint64_t end,
                                 const std::function<void(uint64_t, uint64_t)>& f) const {
  if (end > first) f(first, end - first);
}

Result<uint64_t> ChunkFormat::StoredDefined(const ChunkIo&, uint64_t, uint64_t, uint64_t n) const { return n; }

Status ChunkFormat::FileRead(const ChunkIo&, uint64_t, const ChunkCursor&, char*) const {
  return Status::NotSupported("the " + std::string(name()) + " chunk format has no direct reads");
}

Status ChunkFormat::FileWrite(const ChunkIo&, uint64_t, const ChunkCursor&, const char*) const {
  return Status::NotSupported("the " + std::string(name()) + " chunk format has no direct writes");
}

}  // namespace slabfs::engine
