#include "fusefs/element_range.h"

#include <algorithm>

namespace slabfs::fusefs {
namespace {

// Appends the boxes of elements [first, first + count) of the subarray that
// fixes dimensions [0, d) at prefix, where `inner[d]` is the number of
// elements in one step of dimension d.
void Decompose(const Dims& shape, const Dims& inner, size_t d, Dims& prefix, uint64_t first, uint64_t count,
               std::vector<Box>* out) {
  const size_t rank = shape.size();
  const uint64_t step = inner[d];
  auto whole_steps = [&](uint64_t start, uint64_t n) {
    Box b{Dims(rank, 0), Dims(rank, 1)};
    for (size_t k = 0; k < d; ++k) b.start[k] = prefix[k];
    b.start[d] = start;
    b.count[d] = n;
    for (size_t k = d + 1; k < rank; ++k) b.count[k] = shape[k];
    out->push_back(std::move(b));
  };
  auto within_step = [&](uint64_t index, uint64_t off, uint64_t n) {
    prefix.push_back(index);
    Decompose(shape, inner, d + 1, prefix, off, n, out);
    prefix.pop_back();
  };
  if (count == 0) return;
  if (first % step != 0) {  // a partial step at the front
    const uint64_t n = std::min(count, step - first % step);
    within_step(first / step, first % step, n);
    first += n;
    count -= n;
  }
  if (count >= step) {  // whole steps in the middle
    const uint64_t n = count / step;
    whole_steps(first / step, n);
    first += n * step;
    count -= n * step;
  }
  if (count > 0) within_step(first / step, 0, count);  // a partial step at the back
}

// The C-order position of the first (last: false) or last (last: true)
// element of chunk g of the grid.
uint64_t CornerPosition(const Dims& shape, const Dims& chunks, const Dims& grid, uint64_t g, bool last) {
  const size_t rank = shape.size();
  Dims coords(rank);
  for (size_t d = rank; d-- > 0;) {
    coords[d] = g % grid[d];
    g /= grid[d];
  }
  uint64_t pos = 0;
  for (size_t d = 0; d < rank; ++d) {
    uint64_t x = coords[d] * chunks[d];
    if (last) x = std::min(x + chunks[d], shape[d]) - 1;
    pos = pos * shape[d] + x;
  }
  return pos;
}

// The smallest g in [0, n] with CornerPosition(g) >= pos (n if none).
uint64_t FirstChunkFrom(const Dims& shape, const Dims& chunks, const Dims& grid, uint64_t n, uint64_t pos, bool last) {
  uint64_t lo = 0, hi = n;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (CornerPosition(shape, chunks, grid, mid, last) >= pos) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

}  // namespace

ElementRun WholeElementsIn(uint64_t offset, uint64_t length, size_t item_size, uint64_t num_elements) {
  if (item_size == 0) return {};
  const uint64_t first = offset / item_size + (offset % item_size != 0 ? 1 : 0);
  // offset + length may overflow for a range that reaches "to the end".
  const uint64_t end_byte = length > UINT64_MAX - offset ? UINT64_MAX : offset + length;
  const uint64_t end = std::min(end_byte / item_size, num_elements);
  if (first >= end) return {first < num_elements ? first : num_elements, 0};
  return {first, end - first};
}

std::vector<Box> LinearBoxes(const Dims& shape, uint64_t first, uint64_t count) {
  std::vector<Box> out;
  if (shape.empty() || count == 0) return out;
  const size_t rank = shape.size();
  Dims inner(rank, 1);
  for (size_t d = rank - 1; d > 0; --d) inner[d - 1] = inner[d] * shape[d];
  Dims prefix;
  prefix.reserve(rank);
  Decompose(shape, inner, 0, prefix, first, count, &out);
  return out;
}

std::vector<Box> WholeChunkBoxes(const Dims& shape, const Dims& chunks, uint64_t first, uint64_t count) {
  std::vector<Box> out;
  const size_t rank = shape.size();
  if (rank == 0 || chunks.size() != rank || count == 0) return out;
  Dims grid(rank);
  uint64_t n = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (shape[d] == 0 || chunks[d] == 0) return out;
    grid[d] = (shape[d] - 1) / chunks[d] + 1;
    n *= grid[d];
  }
  // Chunks [g0, g1): the first corner at or after `first`, the last corner
  // before the end of the range.
  const uint64_t g0 = FirstChunkFrom(shape, chunks, grid, n, first, false);
  const uint64_t g1 = FirstChunkFrom(shape, chunks, grid, n, first + count, true);
  if (g1 <= g0) return out;
  for (Box& b : LinearBoxes(grid, g0, g1 - g0)) {
    for (size_t d = 0; d < rank; ++d) {
      const uint64_t start = b.start[d] * chunks[d];
      const uint64_t end = std::min((b.start[d] + b.count[d]) * chunks[d], shape[d]);
      b.start[d] = start;
      b.count[d] = end - start;
    }
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace slabfs::fusefs
