#include "fusefs/sparse_ops.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fusefs/element_range.h"
#include "fusefs/log.h"
#include "fusefs/request.h"
#include "fusefs/seek.h"
#include "fusefs/stale_end_page.h"

namespace slabfs::fusefs {
namespace {

// Zero-range writes the fill value in pieces of at most this many bytes.
constexpr uint64_t kFillPieceBytes = 1 << 20;

// The dataset of ino: through the handle when the kernel passes one, else by
// id, else (removed while open) through an open handle.
Result<FileData> DatasetOf(Filesystem& fs, fuse_ino_t ino, const fuse_file_info* fi) {
  if (FileHandle* fh = AsFile(fi)) return fh->data;
  auto ds = OpenFileData(fs, ino);
  if (!ds && ds.error().code() == Code::kNotFound) {
    if (auto open = fs.inodes.OpenFileDataset(ino)) return FileData(*open);
  }
  return ds;
}

std::string FallocateOp(int mode) {
  if (mode & FALLOC_FL_PUNCH_HOLE) return "fallocate (punch hole)";
  if (mode & FALLOC_FL_ZERO_RANGE) return "fallocate (zero range)";
  return fmt::format("fallocate (mode {:#x})", static_cast<unsigned>(mode));
}

// Writes the fill value into elements [run.first, run.first + run.count).
Status WriteFill(Dataset& ds, const std::string& fill, ElementRun run) {
  const size_t item = fill.size();
  if (item == 0 || item != ds.item_size()) {
    return Status::Corruption(fmt::format("fill value has {} bytes, expected {}", item, ds.item_size()));
  }
  const uint64_t per_piece = std::max<uint64_t>(kFillPieceBytes / item, 1);
  const uint64_t n = std::min(run.count, per_piece);
  auto buf = std::make_unique_for_overwrite<char[]>(n * item);
  for (uint64_t i = 0; i < n; ++i) std::memcpy(buf.get() + i * item, fill.data(), item);
  for (uint64_t done = 0; done < run.count;) {
    const uint64_t k = std::min(n, run.count - done);
    SLABFS_RETURN_IF_ERROR(ds.WriteElements(run.first + done, k, buf.get()));
    done += k;
  }
  return Status::OK();
}

// The chunks the run holds whole go first, so that the engine frees them
// unread; then the run itself, which finds those chunks already gone.
Status Erase(Dataset& ds, const DatasetInfo& info, ElementRun run) {
  for (const Box& b : WholeChunkBoxes(info.shape, info.chunks, run.first, run.count)) {
    SLABFS_RETURN_IF_ERROR(ds.Erase(Slab::Box(b.start, b.count)));
  }
  for (const Box& b : LinearBoxes(info.shape, run.first, run.count)) {
    SLABFS_RETURN_IF_ERROR(ds.Erase(Slab::Box(b.start, b.count)));
  }
  return Status::OK();
}

// Drops bytes [offset, end) from the kernel's page cache. The kernel drops
// the whole pages of a punched or zeroed range itself after the answer, but
// it zeroes the cut pages at the ends in place, and the fill value (or an
// element the range cuts) need not be zero: the pages must be gone before
// the answer, so the kernel finds nothing to zero.
void DropCachedRange(Filesystem& fs, fuse_ino_t ino, uint64_t offset, uint64_t end) {
  if (end <= offset) return;
  const int err =
      fs.invalidator.Invalidate(ino, static_cast<int64_t>(offset), static_cast<int64_t>(end - offset), kInvalidateWait);
  if (err != 0 && err != -ENOENT) {
    Log().info("cache invalidation of {} [{}, {}) not confirmed: {}", Describe(fs, ino), offset, end,
               std::strerror(-err));
  }
}

// A read by another thread between that drop and the kernel's zeroing
// brings a cut end page back just in time to be zeroed. Once the answer is
// out, the end pages are dropped again, a little later (after the kernel's
// own step), so that such a page is not kept.
void DropCutPagesLater(Filesystem& fs, fuse_ino_t ino, uint64_t offset, uint64_t end) {
  static const auto kPage = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (end <= offset) return;
  if (offset % kPage != 0) fs.invalidator.Post(ino, static_cast<int64_t>(offset), 1, kRedropDelay);
  if (end % kPage != 0) fs.invalidator.Post(ino, static_cast<int64_t>(end - 1), 1, kRedropDelay);
}

}  // namespace

void Lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, fuse_file_info* fi) {
  Guard(req, "lseek", [&] {
    Filesystem& fs = Fs(req);
    // The kernel answers SEEK_SET, SEEK_CUR and SEEK_END itself.
    if (whence != SEEK_DATA && whence != SEEK_HOLE) {
      return RefuseErrno("lseek", Describe(fs, ino), EINVAL,
                         fmt::format("whence {} (only SEEK_DATA and SEEK_HOLE reach the daemon)", whence));
    }
    const char* op = whence == SEEK_DATA ? "lseek SEEK_DATA" : "lseek SEEK_HOLE";
    auto where = [&] { return fmt::format("{} at {}", Describe(fs, ino), off); };
    auto ds = DatasetOf(fs, ino, fi);
    if (!ds) return Refuse(op, where(), ds.error());
    const DatasetInfo info = ds->info();
    const SeekView view{.size_bytes = fs.inodes.ReportedSize(ino, info.size_bytes),
                        .num_elements = info.num_elements,
                        .item_size = ItemSize(info.dtype),
                        .zero_fill = std::ranges::all_of(info.fill, [](char b) { return b == 0; })};
    // A negative offset is past any end, as for local filesystems.
    if (off < 0 || static_cast<uint64_t>(off) >= view.size_bytes) {
      return QuietRefuseErrno(op, where, ENXIO, "at or past the end");
    }
    const FileData& d = *ds;
    // The walk costs what is stored between the offset and the answer,
    // which can still be long (a hole behind millions of stored chunks):
    // it asks before each chunk whether the kernel interrupted the request
    // (the caller got a signal), and then ends with EINTR.
    bool interrupted = false;
    const Dataset::WalkCheck check = [req, &interrupted]() -> Status {
      if (fuse_req_interrupted(req) == 0) return Status::OK();
      interrupted = true;
      return Status::IOError("interrupted");
    };
    const DefinedWalkFn walk = [&d, &check](uint64_t first, uint64_t count, const RunVisitor& fn) {
      return d.ForEachDefinedRun(first, count, fn, check);
    };
    auto at = Seek(whence == SEEK_DATA ? SeekKind::kData : SeekKind::kHole, static_cast<uint64_t>(off), view, walk);
    if (!at && interrupted) return QuietRefuseErrno(op, where, EINTR, "interrupted");
    if (!at) return Refuse(op, where(), at.error());
    // cp, tar and rsync walk until ENXIO: an ordinary answer.
    if (!at->has_value()) return QuietRefuseErrno(op, where, ENXIO, "no data after the offset");
    fuse_reply_lseek(req, static_cast<off_t>(**at));
    return 0;
  });
}

void Fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length, fuse_file_info* fi) {
  Guard(req, "fallocate", [&] {
    Filesystem& fs = Fs(req);
    const std::string op = FallocateOp(mode);
    auto where = [&] { return fmt::format("{} [{}, +{})", Describe(fs, ino), offset, length); };
    constexpr int kKnown = FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE;
    if ((mode & ~kKnown) != 0) {
      return Refuse(op, where(), Status::NotSupported("only punch-hole, zero-range and plain allocation"));
    }
    // The kernel checks these too.
    if (offset < 0 || length <= 0 || ((mode & FALLOC_FL_PUNCH_HOLE) && (mode & FALLOC_FL_ZERO_RANGE)) ||
        ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE))) {
      return Refuse(op, where(), Status::InvalidArgument("bad range or mode"));
    }
    if (fs.options.read_only) return Refuse(op, where(), Status::ReadOnly("the mount is read-only"));
    auto data = DatasetOf(fs, ino, fi);
    if (!data) return Refuse(op, where(), data.error());
    Dataset* ds = data->slab();  // a foreign store's mount refused fallocate before (Changing)
    if (ds == nullptr) return Refuse(op, where(), Status::ReadOnly("the mount is read-only"));
    const DatasetInfo info = ds->info();
    const auto off = static_cast<uint64_t>(offset);
    const uint64_t end = off + static_cast<uint64_t>(length);  // the kernel bounds both
    const bool keep_size = (mode & FALLOC_FL_KEEP_SIZE) != 0;
    if (!keep_size && end > info.size_bytes) {
      // Never EOPNOTSUPP here: glibc's posix_fallocate answers that by
      // writing a byte into every 4 KiB block of the range, which stores
      // chunks of zeros (and defines elements of a sparse dataset) before
      // it fails at the end. A fixed dataset cannot grow: EFBIG, as at a
      // file size limit. A growable one grows by whole rows (to at least
      // the end asked for), which store nothing: the new elements read as
      // the fill value.
      if (!info.length_resizable) {
        return Refuse(op, where(),
                      Status::OutOfRange(fmt::format(
                          "the dataset has a fixed size of {} bytes; fallocate cannot grow it", info.size_bytes)));
      }
      if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) {
        return Refuse(op, where(), Status::NotSupported("zero-range does not grow a dataset"));
      }
      // Whole rows, as a write past the end grows it: at least `end` bytes.
      uint64_t row_bytes = ItemSize(info.dtype);
      for (size_t d = 1; d < info.shape.size(); ++d) row_bytes *= info.shape[d];
      if (row_bytes == 0) return Refuse(op, where(), Status::InvalidArgument("a row of this dataset holds no bytes"));
      const uint64_t rows = end / row_bytes + (end % row_bytes != 0 ? 1 : 0);
      if (rows > UINT64_MAX / row_bytes) return Refuse(op, where(), Status::OutOfRange("too many rows"));
      const uint64_t told_size = fs.inodes.ReportedSize(ino, info.size_bytes);  // the end the kernel knows
      Status s = ds->SetSizeBytes(rows * row_bytes);
      if (!s.ok()) return Refuse(op, where(), s);
      if (FileHandle* fh = AsFile(fi)) fh->written.store(true, std::memory_order_relaxed);
      fs.inodes.ForgetAppendEnd(ino);
      fs.inodes.Touch(ino);
      // Everything past the old end reads as the fill value; fallocate holds
      // no page locked.
      DropStaleEndPage(fs, ino, info.fill, told_size, rows * row_bytes, 0, 0);
      fuse_reply_err(req, 0);
      return 0;
    }
    if (!(mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))) {
      fuse_reply_err(req, 0);  // plain allocation: nothing to reserve
      return 0;
    }
    const ElementRun run = WholeElementsIn(off, end - off, ItemSize(info.dtype), info.num_elements);
    if (run.count == 0) {
      fuse_reply_err(req, 0);
      return 0;
    }
    Status s = (mode & FALLOC_FL_PUNCH_HOLE) ? Erase(*ds, info, run) : WriteFill(*ds, info.fill, run);
    // Even a failure may have changed part of the range.
    if (FileHandle* fh = AsFile(fi)) fh->written.store(true, std::memory_order_relaxed);
    fs.inodes.Touch(ino);
    const uint64_t changed_end = std::min(end, info.size_bytes);
    DropCachedRange(fs, ino, off, changed_end);
    if (!s.ok()) return Refuse(op, where(), s);
    fuse_reply_err(req, 0);
    DropCutPagesLater(fs, ino, off, changed_end);
    return 0;
  });
}

}  // namespace slabfs::fusefs
