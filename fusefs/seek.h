// lseek's SEEK_DATA and SEEK_HOLE over a dataset's file view.
//
// Data is the bytes of defined elements (a sparse dataset: written and not
// erased; a dense one: inside a stored chunk), holes are the rest, and the
// end of the file is an implicit hole. Every tool that skips holes (cp,
// tar, rsync) recreates them as zeros, so a dataset whose fill value is not
// all zero bytes has no holes: it is data from start to end. A byte offset inside an element
// belongs to that element, and a run of elements [first, first + count)
// covers bytes [first * item, (first + count) * item).
//
// Answers are rounded out to regions of SeekView::region_bytes (4 KiB, as
// file systems report holes in whole blocks): a region that holds any byte
// of data is data, whole; a hole is a run of regions without any. Element-
// sized holes made tar -S write archives that tar and Python's tarfile
// could not read back.
//
// The defined runs are asked for in windows that walk forward from the
// offset, so a seek into a huge dataset never asks the engine for all of it
// at once: the first window holds kFirstSeekWindow elements and each one
// that settles nothing (no data while looking for data, all data while
// looking for a hole) doubles the next, up to kMaxSeekWindow.
//
// Thread-safe if `runs` is.
#ifndef SLABFS_FUSEFS_SEEK_H_
#define SLABFS_FUSEFS_SEEK_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "slabfs/status.h"
#include "slabfs/types.h"

namespace slabfs::fusefs {

inline constexpr uint64_t kFirstSeekWindow = uint64_t{1} << 16;
inline constexpr uint64_t kMaxSeekWindow = uint64_t{1} << 22;
inline constexpr uint64_t kSeekRegionBytes = 4096;

// The defined elements among [first, first + count), as sorted, merged runs
// inside that range (Dataset::DefinedRuns).
using DefinedRunsFn = std::function<Result<std::vector<ElementRun>>(uint64_t first, uint64_t count)>;

enum class SeekKind { kData, kHole };

struct SeekView {
  uint64_t size_bytes = 0;    // the file size reported to the kernel
  uint64_t num_elements = 0;  // the dataset's elements (may reach past size_bytes)
  size_t item_size = 1;
  // The fill value is all zero bytes: undefined elements may be holes.
  bool zero_fill = true;
  // Data and holes are reported in whole regions of this many bytes
  // (aligned at multiples of it; 1: element by element).
  uint64_t region_bytes = kSeekRegionBytes;
};

// The offset lseek(fd, offset, SEEK_DATA or SEEK_HOLE) answers, or nullopt
// for ENXIO: an offset at or past the end, or SEEK_DATA with no data from
// the offset on. SEEK_HOLE with no hole before the end answers the size.
// Errors are the runs function's.
Result<std::optional<uint64_t>> Seek(SeekKind kind, uint64_t offset, const SeekView& view,
                                     const DefinedRunsFn& runs,
                                     uint64_t first_window = kFirstSeekWindow,
                                     uint64_t max_window = kMaxSeekWindow);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_SEEK_H_
