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

}  // namespace

Result<std::optional<uint64_t>> Seek(SeekKind kind, uint64_t offset, const SeekView& view,
                                     const DefinedRunsFn& runs, uint64_t first_window,
                                     uint64_t max_window) {
  if (offset >= view.size_bytes || view.item_size == 0) return std::optional<uint64_t>();
  if (!view.zero_fill) {
    return std::optional<uint64_t>(kind == SeekKind::kData ? offset : view.size_bytes);
  }
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

}  // namespace slabfs::fusefs
