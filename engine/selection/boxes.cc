#include "engine/selection/boxes.h"

#include <algorithm>

namespace slabfs::engine {

std::vector<Box> MergeBoxes(std::vector<Box> boxes) {
  if (boxes.empty()) return boxes;
  const size_t rank = boxes.front().start.size();
  // Merging along one dimension can line boxes up along another, so passes
  // repeat until one merges nothing; each merge removes a box.
  for (bool merged = true; merged;) {
    merged = false;
    for (size_t d = rank; d-- > 0;) {
      // Sorted by everything but dimension d, then by start in d: boxes that
      // can merge along d end up next to each other.
      auto key_less = [d, rank](const Box& a, const Box& b) {
        for (size_t k = 0; k < rank; ++k) {
          if (k == d) continue;
          if (a.start[k] != b.start[k]) return a.start[k] < b.start[k];
          if (a.count[k] != b.count[k]) return a.count[k] < b.count[k];
        }
        return false;
      };
      std::sort(boxes.begin(), boxes.end(), [&key_less, d](const Box& a, const Box& b) {
        if (key_less(a, b)) return true;
        if (key_less(b, a)) return false;
        return a.start[d] < b.start[d];
      });
      size_t out = 0;
      for (size_t i = 1; i < boxes.size(); ++i) {
        Box& last = boxes[out];
        const Box& next = boxes[i];
        if (!key_less(last, next) && !key_less(next, last) && last.start[d] + last.count[d] == next.start[d]) {
          last.count[d] += next.count[d];
          merged = true;
        } else if (++out != i) {
          boxes[out] = std::move(boxes[i]);
        }
      }
      boxes.resize(out + 1);
    }
  }
  std::sort(boxes.begin(), boxes.end(), [](const Box& a, const Box& b) { return a.start < b.start; });
  return boxes;
}

std::optional<uint64_t> NextElementInBox(const Dims& shape, const Box& b, uint64_t at) {
  const size_t rank = shape.size();
  for (uint64_t c : b.count)
    if (c == 0) return std::nullopt;
  Dims c(rank);
  for (size_t d = rank, rest = at; d-- > 0;) {
    c[d] = rest % shape[d];
    rest /= shape[d];
  }
  Dims x(rank);
  size_t d = 0;
  for (; d < rank; ++d) {
    const uint64_t lo = b.start[d], hi = b.start[d] + b.count[d];  // [lo, hi)
    if (c[d] < lo) {
      x[d] = lo;
      break;
    }
    if (c[d] >= hi) {
      // Past the box in this dimension: the last earlier dimension that can
      // still move one up, the rest from the box's start.
      size_t k = d;
      while (k-- > 0 && x[k] + 1 >= b.start[k] + b.count[k]) {
      }
      if (k == static_cast<size_t>(-1)) return std::nullopt;
      ++x[k];
      d = k;
      break;
    }
    x[d] = c[d];
  }
  if (d == rank) return at;  // inside the box
  for (size_t e = d + 1; e < rank; ++e) x[e] = b.start[e];
  uint64_t linear = 0;
  for (size_t e = 0; e < rank; ++e) linear = linear * shape[e] + x[e];
  return linear;
}

}  // namespace slabfs::engine
