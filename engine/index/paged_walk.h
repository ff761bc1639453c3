// The box walk of the paged-array index (engine/index/paged_array.h): the
// positions of a box of a grid in lexicographic order, where a position's
// key is its C-order place in the grid (key = sum of c[d] * strides[d]) and
// the records sit in pages of 2^shift consecutive keys that either exist or
// do not.
//
// Only positions inside pages that exist are looked at. From a position
// whose page does not exist, the walk asks for the first page at or after it
// that does, and moves to the first position of the box at or after that
// page's first key (SeekInBox). So a walk looks at no more than
// min(box volume, 2^shift x pages it meets) positions, asks for the next
// page about twice per page it meets, and never steps through the empty
// grid between pages.
#ifndef SLABFS_ENGINE_INDEX_PAGED_WALK_H_
#define SLABFS_ENGINE_INDEX_PAGED_WALK_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "engine/index/chunk_index.h"

namespace slabfs::engine {

struct PagedGrid {
  size_t rank = 0;
  // key = sum of c[d] * strides[d]; strides[d] is the product of the grid
  // after d (dimension 0 may be unbounded). Every key of the box is below
  // 2^63.
  const uint64_t* strides = nullptr;
  int shift = 0;  // log2 of the keys per page
};

// Walks the box [lo, hi) (not empty, inside the grid), in order.
//   next_page(n, last) -> Result<std::pair<uint64_t, const P*>>: the first
//     page numbered n to last that exists, with its number; a null page if
//     none (pages past last hold no key of the box: they need not be read).
//   visit(const uint64_t* c, uint64_t key, const P& page) -> Result<bool>:
//     the position c (key, in page number key >> shift); false ends the
//     walk.
// Errors of either end the walk and are returned.
template <typename P, typename NextPage, typename Visit>
Status WalkPagedBox(const PagedGrid& g, ChunkCoord lo, ChunkCoord hi, NextPage&& next_page, Visit&& visit) {
  const size_t rank = g.rank;
  std::array<uint64_t, kMaxRank> c{}, k{};
  std::copy(lo.begin(), lo.end(), c.begin());
  uint64_t page_no = ~uint64_t{0};
  const P* page = nullptr;
  // The last page next_page answered, which the position after a jump
  // usually falls in.
  uint64_t known_no = ~uint64_t{0};
  const P* known = nullptr;
  uint64_t last_key = 0;
  for (size_t d = 0; d < rank; ++d) last_key += (hi[d] - 1) * g.strides[d];
  const uint64_t last_page = last_key >> g.shift;
  for (;;) {
    uint64_t key = 0;
    for (size_t d = 0; d < rank; ++d) key += c[d] * g.strides[d];
    const uint64_t n = key >> g.shift;
    if (n != page_no) {
      if (n != known_no) {
        SLABFS_ASSIGN_OR_RETURN(auto found, next_page(n, last_page));
        if (!found.second) return Status::OK();
        known_no = found.first;
        known = found.second;
      }
      if (known_no != n) {
        // Nothing stored from here to page known_no: jump to the box's
        // first position at or after that page's first key.
        uint64_t rem = known_no << g.shift;
        for (size_t d = 0; d < rank; ++d) {
          k[d] = rem / g.strides[d];
          rem %= g.strides[d];
        }
        if (!SeekInBox(k.data(), lo, hi, c.data())) return Status::OK();
        continue;
      }
      page_no = n;
      page = known;
    }
    SLABFS_ASSIGN_OR_RETURN(bool go, visit(c.data(), key, *page));
    if (!go) return Status::OK();
    size_t d = rank;
    while (d-- > 0) {
      if (++c[d] < hi[d]) break;
      c[d] = lo[d];
    }
    if (d == static_cast<size_t>(-1)) return Status::OK();
  }
}

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_INDEX_PAGED_WALK_H_
