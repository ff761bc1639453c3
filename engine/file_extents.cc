// Dataset::WithFileExtents: a byte-view read answered with where the bytes
// lie in the container file instead of the bytes themselves, so that the
// mount can splice them from the file into its reply without copying them
// through a buffer of its own.
//
// Only the plainest case qualifies: every byte in a stored chunk of an
// unfiltered dense dataset (its file image is its elements in C order), no
// change to any of those chunks in the cache that is not yet written back
// (a clean cached copy holds the file's bytes), and few runs of the file. Everything else is left
// to ReadBytes; answering false costs no I/O.
#include <algorithm>
#include <vector>

#include "engine/container_impl.h"
#include "engine/selection/hyperslab.h"

namespace slabfs::engine {

namespace {

// One run of the answer: `length` bytes at byte-view position `view` (from
// the start of the read) that lie at `file` in the container.
struct Piece {
  uint64_t view;
  uint64_t file;
  uint64_t length;
};

}  // namespace

Result<bool> DatasetState::WithFileExtents(uint64_t offset, size_t length, size_t max_extents,
                                           const Dataset::FileExtentUser& use) {
  const int fd = c_->file()->native_fd();
  if (fd < 0 || max_extents == 0) return false;
  ReaderLock cl(c_->commit_mu());
  SLABFS_RETURN_IF_ERROR_R(CheckPresent());
  ReaderLock lock(rw_);
  // The format is read under the lock: a relayout swaps it.
  if (!format_->direct_io()) return false;
  const uint64_t isz = item_size_;
  const uint64_t size = num_elements() * isz;
  if (offset >= size || length == 0 || offset % isz != 0) return false;
  const uint64_t bytes = std::min<uint64_t>(length, size - offset);
  if (bytes % isz != 0) return false;

  ChunkCache& cache = c_->cache();
  // Runs arrive in chunk order; a bound on them before sorting ends the
  // walk early for layouts that can never qualify (a 1 MiB read of
  // 256 x 256 chunks makes a thousand runs).
  const size_t most_pieces = 4 * max_extents;
  thread_local std::vector<Piece> pieces;
  pieces.clear();
  thread_local TransferPlan plan;
  for (const LinearBox& b : DecomposeLinear(meta_.shape, offset / isz, bytes / isz)) {
    SLABFS_RETURN_IF_ERROR_R(plan.Build(meta_.shape, meta_.chunks, b.box, nullptr, &meta_.max_shape));
    for (ChunkCursor cur(plan); !cur.done(); cur.Next()) {
      if (pieces.size() + cur.num_runs() > most_pieces) return false;
      if (cache.HoldsChanges(CacheKey{cache_id_, cur.linear()})) return false;
      SLABFS_ASSIGN_OR_RETURN(ChunkRecord rec, index_->Get(cur.coords()));
      if (!rec.allocated()) return false;
      const uint64_t stored = FileBytesOf(cur.coords(), rec);
      SLABFS_RETURN_IF_ERROR_R(CheckExtent(rec.addr, stored, cur.linear()));
      const uint64_t base = b.offset * isz;
      // A trimmed chunk (engine/chunk/trimmed_edge.h) holds only its first
      // `stored` bytes; the rest of it reads as the fill value.
      bool inside = true;
      cur.ForEachRun([&](uint64_t co, uint64_t mo, uint64_t n) {
        inside = inside && (co + n) * isz <= stored;
        pieces.push_back(Piece{base + mo * isz, rec.addr + co * isz, n * isz});
      });
      if (!inside) return false;
    }
  }
  std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.view < b.view; });
  thread_local std::vector<Dataset::FileExtent> extents;
  extents.clear();
  uint64_t next_view = 0;
  for (const Piece& p : pieces) {
    // The runs tile the read exactly; anything else is a bug here, and the
    // caller can still read the bytes the ordinary way.
    if (p.view != next_view) return false;
    next_view += p.length;
    if (!extents.empty() && extents.back().offset + extents.back().length == p.file) {
      extents.back().length += p.length;
    } else {
      if (extents.size() == max_extents) return false;
      extents.push_back(Dataset::FileExtent{p.file, p.length});
    }
  }
  if (next_view != bytes) return false;
  cache.CountBytesRead(bytes);
  cache.CountExtentRead();
  use(fd, std::span<const Dataset::FileExtent>(extents.data(), extents.size()));
  return true;
}

}  // namespace slabfs::engine
