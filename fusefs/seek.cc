#include "fusefs/seek.h"

#include <algorithm>

namespace slabfs::fusefs {
namespace {

// The first element at or after e that is defined (kData) or undefined
// (kHole); n when there is none before n.
Result<uint64_t> FindElement(SeekKind kind, uint64_t e, uint64_t n, const DefinedRunsFn& runs,
                             uint64_t window, uint64_t max_window) {
  while (e < n) {
    const uint64_t end = n - e > window ? e + window : n;
    Result<std::vector<ElementRun>> got = runs(e, end - e);
    if (!got) return Err(got.error());
    const std::vector<ElementRun>& found = *got;
    if (kind == SeekKind::kData) {
      if (!found.empty()) return std::max(found.front().first, e);
    } else {
      // The runs are merged: a hole is before the first run, or right
      // after it unless it reaches the window's end.
      if (found.empty() || found.front().first > e) return e;
      const uint64_t after = found.front().first + found.front().count;
      if (after < end) return after;
    }
    e = end;
    window = std::min(window * 2, max_window);
  }
  return n;
}

// Seek element by element: data is the bytes of defined elements.
Result<std::optional<uint64_t>> SeekElements(SeekKind kind, uint64_t offset, const SeekView& view,
                                             const DefinedRunsFn& runs, uint64_t first_window,
                                             uint64_t max_window) {
  if (offset >= view.size_bytes) return std::optional<uint64_t>();
  const uint64_t item = view.item_size;
  const uint64_t n = std::min(view.num_elements, (view.size_bytes + item - 1) / item);
  const uint64_t e = offset / item;
  const uint64_t window = std::max<uint64_t>(first_window, 1);
  Result<uint64_t> where = FindElement(kind, e, n, runs, window, std::max(max_window, window));
  if (!where) return Err(where.error());
  const uint64_t found = *where;
  // The offset itself when its own element qualifies.
  const uint64_t at = found == e ? offset : found * item;
  if (kind == SeekKind::kData) {
    if (found >= n || at >= view.size_bytes) return std::optional<uint64_t>();
    return std::optional<uint64_t>(at);
  }
  return std::optional<uint64_t>(std::min(at, view.size_bytes));
}

}  // namespace

Result<std::optional<uint64_t>> Seek(SeekKind kind, uint64_t offset, const SeekView& view,
                                     const DefinedRunsFn& runs, uint64_t first_window,
                                     uint64_t max_window) {
  using Answer = std::optional<uint64_t>;
  const uint64_t size = view.size_bytes;
  if (offset >= size || view.item_size == 0) return Answer();
  if (!view.zero_fill) return Answer(kind == SeekKind::kData ? offset : size);
  const uint64_t region = std::max<uint64_t>(view.region_bytes, 1);
  if (region == 1) return SeekElements(kind, offset, view, runs, first_window, max_window);
  auto elements = [&](SeekKind k, uint64_t at) {
    return SeekElements(k, at, view, runs, first_window, max_window);
  };
  const uint64_t start = offset / region * region;  // the offset's region
  if (kind == SeekKind::kData) {
    // The offset itself if its region holds data; else the region of the
    // next data.
    SLABFS_ASSIGN_OR_RETURN(Answer data, elements(SeekKind::kData, start));
    if (!data) return Answer();
    if (*data - start < region) return Answer(offset);
    return Answer(*data / region * region);
  }
  // The first region from the offset's on that holds no data; a hole that
  // reaches the end from inside a region counts from the end.
  for (uint64_t at = start; at < size;) {
    SLABFS_ASSIGN_OR_RETURN(Answer hole, elements(SeekKind::kHole, at));
    if (!hole) break;
    const uint64_t candidate = (*hole + region - 1) / region * region;  // no overflow: below 2^63
    if (candidate >= size) break;
    SLABFS_ASSIGN_OR_RETURN(Answer data, elements(SeekKind::kData, candidate));
    if (!data || *data - candidate >= region) return Answer(std::max(offset, candidate));
    at = candidate + region;
  }
  return Answer(size);
}

}  // namespace slabfs::fusefs
