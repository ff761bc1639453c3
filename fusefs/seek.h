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
// A seek is one walk over the defined runs from the offset's region on
// (Dataset::ForEachDefinedRun), which stops at the answer: SEEK_DATA at the
// first run, SEEK_HOLE at the first region no run reaches. The engine's
// walk visits only stored chunks, so the cost follows the stored chunks
// between the offset and the answer, not the bytes: a hole of 2^62 bytes
// costs a few index lookups.
//
// Thread-safe if the walk is.
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

// Calls fn with the defined runs among [first, first + count), sorted and
// disjoint (touching ones may come apart), until fn returns false
// (Dataset::ForEachDefinedRun).
using RunVisitor = std::function<bool(const ElementRun& run)>;
using DefinedWalkFn = std::function<Status(uint64_t first, uint64_t count, const RunVisitor& fn)>;

// The defined elements among [first, first + count), as sorted, merged runs
// inside that range (Dataset::DefinedRuns).
using DefinedRunsFn = std::function<Result<std::vector<ElementRun>>(uint64_t first, uint64_t count)>;

// A walk made of a runs function asked in windows that move forward from
// `first`: the first holds first_window elements and each next one twice
// as many as the last, up to max_window; no window is asked for once fn
// has stopped the walk. For a source that can only answer ranges (tests,
// and the benchmark's before-and-after); the cost follows the windows, so
// it is O(bytes) over a hole.
DefinedWalkFn WalkInWindows(DefinedRunsFn runs, uint64_t first_window = kFirstSeekWindow,
                            uint64_t max_window = kMaxSeekWindow);

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
// Errors are the walk's (the engine's, or its check's: the mount stops a
// walk the kernel interrupted).
Result<std::optional<uint64_t>> Seek(SeekKind kind, uint64_t offset, const SeekView& view, const DefinedWalkFn& walk);
// The same over a runs function asked in windows (WalkInWindows).
Result<std::optional<uint64_t>> Seek(SeekKind kind, uint64_t offset, const SeekView& view, const DefinedRunsFn& runs,
                                     uint64_t first_window = kFirstSeekWindow, uint64_t max_window = kMaxSeekWindow);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_SEEK_H_
