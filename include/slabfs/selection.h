// Selections of elements: hyperslabs (DimSlab, Slab), the memory side of a
// transfer (MemSpace), runs in C order (ElementRun) and boxes (Box).
#ifndef SLABFS_SELECTION_H_
#define SLABFS_SELECTION_H_

#include <cstdint>
#include <vector>

#include "slabfs/dims.h"

namespace slabfs {

// One dimension of a hyperslab, as in HDF5: the selected indices are
// start + i*stride + j for 0 <= i < count, 0 <= j < block.
// Requires block >= 1 and, when count > 1, stride >= block.
struct DimSlab {
  uint64_t start = 0;
  uint64_t stride = 1;
  uint64_t count = 0;
  uint64_t block = 1;

  uint64_t extent() const { return count * block; }  // selected indices
};

// A hyperslab: one DimSlab per dimension.
struct Slab {
  std::vector<DimSlab> dims;

  // A box: start[d] .. start[d]+count[d]-1 in every dimension.
  static Slab Box(const Dims& start, const Dims& count);
  // Everything in an array of this shape.
  static Slab All(const Dims& shape);
  int rank() const { return static_cast<int>(dims.size()); }
  uint64_t num_elements() const;  // product of extents (saturates)
  Dims extents() const;           // per-dimension extent()
};

// The memory side of a transfer: the caller's buffer is a dense C-order
// array of `shape`, and the elements move to or from `selection` inside it.
// The selection's per-dimension extents must equal the dataset selection's.
// Without a MemSpace, the buffer is the dataset selection's extents, dense.
struct MemSpace {
  Dims shape;
  Slab selection;
};

// Elements [first, first + count) in C order.
struct ElementRun {
  uint64_t first = 0;
  uint64_t count = 0;
  bool operator==(const ElementRun&) const = default;
};

// A box of elements: start[d] .. start[d]+count[d]-1 in every dimension.
struct Box {
  Dims start;
  Dims count;
  bool operator==(const Box&) const = default;
};

}  // namespace slabfs

#endif  // SLABFS_SELECTION_H_
