#include "fusefs/seek.h"

#include <algorithm>
#include <utility>

namespace slabfs::fusefs {

DefinedWalkFn WalkInWindows(DefinedRunsFn runs, uint64_t first_window, uint64_t max_window) {
  return [runs = std::move(runs), first_window, max_window](uint64_t first, uint64_t count,
                                                            const RunVisitor& fn) -> Status {
    uint64_t window = std::max<uint64_t>(first_window, 1);
    const uint64_t largest = std::max(max_window, window);
    const uint64_t end = first + count;
    for (uint64_t e = first; e < end;) {
      const uint64_t until = end - e > window ? e + window : end;
      SLABFS_ASSIGN_OR_RETURN(std::vector<ElementRun> got, runs(e, until - e));
      for (const ElementRun& r : got)
        if (!fn(r)) return Status::OK();
      e = until;
      window = std::min(window * 2, largest);
    }
    return Status::OK();
  };
}

Result<std::optional<uint64_t>> Seek(SeekKind kind, uint64_t offset, const SeekView& view, const DefinedWalkFn& walk) {
  using Answer = std::optional<uint64_t>;
  const uint64_t size = view.size_bytes;
  if (offset >= size || view.item_size == 0) return Answer();
  if (!view.zero_fill) return Answer(kind == SeekKind::kData ? offset : size);
  const uint64_t item = view.item_size;
  const uint64_t region = std::max<uint64_t>(view.region_bytes, 1);
  // Elements past the reported size (a row being appended) are not in the
  // file.
  const uint64_t n = std::min(view.num_elements, (size - 1) / item + 1);
  const uint64_t start = offset / region * region;  // the offset's region
  const uint64_t e0 = start / item;                 // the element holding its first byte
  // A run's bytes inside [start, size), as the regions they reach:
  // [first, last], or false when they lie past the end.
  auto regions = [&](const ElementRun& r, uint64_t* first, uint64_t* last) {
    const uint64_t lo = std::max(r.first * item, start);
    const uint64_t hi = std::min((r.first + r.count) * item, size);  // below 2^63: no overflow
    if (lo >= hi) return false;
    *first = lo / region;
    *last = (hi - 1) / region;
    return true;
  };
  // No element from the offset's region on: nothing to walk.
  const DefinedWalkFn none = [](uint64_t, uint64_t, const RunVisitor&) { return Status::OK(); };
  const DefinedWalkFn& runs = e0 < n ? walk : none;
  const uint64_t count = e0 < n ? n - e0 : 0;
  if (kind == SeekKind::kData) {
    // The offset itself if its region holds data; else the start of the
    // first region that does.
    Answer data;
    SLABFS_RETURN_IF_ERROR_R(runs(e0, count, [&](const ElementRun& r) {
      uint64_t first, last;
      if (regions(r, &first, &last)) data = first * region <= offset ? offset : first * region;
      return false;  // runs come in order: the first one decides
    }));
    return data;
  }
  // The first region from the offset's on that no run reaches; a hole that
  // reaches the end from inside a region counts from the end.
  uint64_t hole = start / region;
  SLABFS_RETURN_IF_ERROR_R(runs(e0, count, [&](const ElementRun& r) {
    uint64_t first, last;
    if (!regions(r, &first, &last)) return false;  // past the end
    if (first > hole) return false;                // region `hole` holds no data
    hole = std::max(hole, last + 1);
    return true;
  }));
  const uint64_t at = hole * region;
  if (at >= size) return Answer(size);
  return Answer(std::max(offset, at));
}

Result<std::optional<uint64_t>> Seek(SeekKind kind, uint64_t offset, const SeekView& view, const DefinedRunsFn& runs,
                                     uint64_t first_window, uint64_t max_window) {
  return Seek(kind, offset, view, WalkInWindows(runs, first_window, max_window));
}

}  // namespace slabfs::fusefs
