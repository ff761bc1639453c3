// Relayout: a dataset takes a new layout (dtype, shape, chunks, filters,
// fill, sparse, index) and keeps its byte image, its id, its name, its
// attributes and its open handles. The mount uses it where a tool replaces
// a dataset's file with new bytes that fit the old layout (rename over it,
// or unlink and create again) and where a new file's layout is set through
// user.slab.* extended attributes.
//
// How: a private DatasetState with the new layout is filled with the bytes
// (through the chunk cache and the allocator, like any write), then every
// field that describes the contents is swapped between it and the live
// state, under the live state's write lock. The private state ends holding
// the old contents, which it frees. Nothing is committed here: the new
// chunks, the new header and the freed old chunks become durable together
// at the next commit, so a crash leaves either the old dataset or the new
// one, never a mix.
#include <algorithm>
#include <cstring>
#include <memory>

#include "engine/container_impl.h"

namespace slabfs::engine {
namespace {

// Bytes copied per step: a multiple of every item size.
constexpr uint64_t kCopyBlockBytes = 4 << 20;
// Dense layouts: a run of fill-valued elements shorter than this is written
// with its neighbours rather than skipped.
constexpr uint64_t kMinGapBytes = 4096;

uint64_t ProductOf(const Dims& shape) {
  slabfs_u128 n = 1;
  for (uint64_t d : shape) n *= d;
  return n > static_cast<slabfs_u128>(UINT64_MAX) ? UINT64_MAX : static_cast<uint64_t>(n);
}

}  // namespace

Status DatasetState::CopyImageLocked(DatasetState& to) {
  const uint64_t total = num_elements() * item_size_;
  const size_t isz = to.item_size_;
  const std::string& fill = to.meta_.fill;
  // Elements equal to the fill value need no storage: they read as it. A
  // sparse layout leaves every one of them undefined; a dense one writes
  // across fill gaps shorter than kMinGapBytes rather than split a write.
  const uint64_t min_gap = to.format_->tracks_defined() ? 1 : std::max<uint64_t>(1, kMinGapBytes / isz);
  auto buf = std::make_unique_for_overwrite<char[]>(static_cast<size_t>(std::min(total, kCopyBlockBytes)));
  auto is_fill = [&](uint64_t i) { return std::memcmp(buf.get() + i * isz, fill.data(), isz) == 0; };
  for (uint64_t off = 0; off < total; off += kCopyBlockBytes) {
    const uint64_t n = std::min(kCopyBlockBytes, total - off);
    SLABFS_RETURN_IF_ERROR(ReadElementsLocked(off / item_size_, n / item_size_, buf.get()));
    const uint64_t first = off / isz;
    const uint64_t count = n / isz;
    uint64_t i = 0;
    while (i < count) {
      while (i < count && is_fill(i)) ++i;
      if (i == count) break;
      const uint64_t start = i;
      uint64_t end = i;  // one past the last element that is not fill
      while (i < count) {
        if (!is_fill(i)) {
          end = ++i;
          continue;
        }
        uint64_t gap = i;
        while (gap < count && gap - i < min_gap && is_fill(gap)) ++gap;
        if (gap == count || gap - i >= min_gap) break;
        i = gap;
      }
      SLABFS_RETURN_IF_ERROR(to.WriteElementsLocked(first + start, end - start, buf.get() + start * isz));
      i = end;
    }
  }
  return Status::OK();
}

void DatasetState::ExchangeContentsLocked(DatasetState& other) {
  std::swap(cache_id_, other.cache_id_);
  std::swap(meta_, other.meta_);
  std::swap(index_, other.index_);
  std::swap(grid_, other.grid_);
  std::swap(format_, other.format_);
  std::swap(defined_, other.defined_);
  auto swap_atomic = [](auto& a, auto& b) {
    const auto t = a.load(std::memory_order_relaxed);
    a.store(b.load(std::memory_order_relaxed), std::memory_order_relaxed);
    b.store(t, std::memory_order_relaxed);
  };
  swap_atomic(item_size_, other.item_size_);
  swap_atomic(num_elements_, other.num_elements_);
  swap_atomic(size_bytes_, other.size_bytes_);
  swap_atomic(allocated_chunks_, other.allocated_chunks_);
  swap_atomic(stored_bytes_, other.stored_bytes_);
  for (auto& a : advised_) a.store(0, std::memory_order_relaxed);
  header_dirty_ = true;
  other.header_dirty_ = true;
}

void DatasetState::ReplaceContents(DatasetState& fresh) {
  AssertCommitExclusive();
  WriterLock lock(rw_);
  // fresh was loaded by the refresh and is reachable from it alone.
  WriterLock fresh_lock(fresh.rw_, kPrivateObject);
  ExchangeContentsLocked(fresh);
  header_dirty_ = false;
  // The chunks cached under the old contents' key, now fresh's.
  c_->cache().EraseDataset(fresh.cache_id_);
}

Status DatasetState::Relayout(DatasetRecord rec) {
  SLABFS_RETURN_IF_ERROR(CheckWritable());
  if (detached()) return Status::NotFound(what() + " was removed");
  ReaderLock cl(c_->commit_mu());
  WriterLock lock(rw_);
  const uint64_t old_bytes = num_elements() * item_size_;
  const slabfs_u128 new_bytes = static_cast<slabfs_u128>(ProductOf(rec.shape)) * ItemSize(rec.dtype);
  if (old_bytes != 0 && new_bytes != old_bytes)
    return Status::InvalidArgument(what() + ": the new layout holds " +
                                   std::to_string(static_cast<uint64_t>(std::min<slabfs_u128>(new_bytes, UINT64_MAX))) +
                                   " bytes, the dataset " + std::to_string(old_bytes));
  SLABFS_ASSIGN_OR_RETURN(std::shared_ptr<DatasetState> fresh, c_->NewDatasetState(id_, std::move(rec)));
  DatasetState& to = *fresh;
  // Private to this call: locked outside the order (it cannot deadlock)
  // to keep the "Locked" contracts.
  WriterLock fresh_lock(to.rw_, kPrivateObject);
  // A dataset that stores nothing (nothing written, or all of it erased:
  // no stored chunk and no change waiting in the cache) has no data to
  // keep; its elements read as the old fill value only because nothing is
  // there. It takes the new layout as it is and reads as the new fill
  // value, as an empty one does. (Typing a dataset one user.slab.* field
  // at a time, a fill set after the shape stored the old fill's bytes.)
  const bool stores_nothing =
      allocated_chunks_.load(std::memory_order_relaxed) == 0 && !c_->cache().HasChanges(cache_id_);
  Status s = stores_nothing ? Status::OK() : CopyImageLocked(to);
  if (!s.ok()) {
    // What the copy stored belongs to no one: give it back.
    Status r = to.Reclaim();
    if (!r.ok()) LogWarn(what() + ": freeing a failed relayout's chunks: " + r.ToString());
    return s.WithContext("relayout of " + what());
  }
  ExchangeContentsLocked(to);
  c_->NoteDirty(id_);
  // `to` now holds the old contents: their chunks are freed for the next
  // commit (the allocator reuses them only once that commit is durable).
  return to.Reclaim();
}

}  // namespace slabfs::engine
