// Byte ranges of a dataset's file view as elements, and runs of elements in
// C order as boxes: how fallocate turns a byte range into selections.
//
// Pure functions: thread-safe.
#ifndef SLABFS_FUSEFS_ELEMENT_RANGE_H_
#define SLABFS_FUSEFS_ELEMENT_RANGE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "slabfs/types.h"

namespace slabfs::fusefs {

// The elements lying wholly inside bytes [offset, offset + length) of a
// dataset of num_elements elements of item_size bytes: an element cut by
// either end of the range, or past the last element, is not counted. An
// empty run (count 0) when there is none.
ElementRun WholeElementsIn(uint64_t offset, uint64_t length, size_t item_size, uint64_t num_elements);

// Elements [first, first + count) of an array of `shape`, in C order, as
// disjoint boxes in C order: at most 2 * rank - 1 of them (a partial row at
// each end of each dimension, and the whole rows between). Empty for count
// 0. The run must lie inside the shape.
std::vector<Box> LinearBoxes(const Dims& shape, uint64_t first, uint64_t count);

// The chunks (of shape `chunks`) whose elements all lie in elements
// [first, first + count) of an array of `shape`, as boxes of whole chunks in
// element coordinates (edge chunks cut at the shape), at most 2 * rank - 1
// of them. Erasing these boxes lets the engine free those chunks unread:
// the boxes of LinearBoxes may split a chunk that the range holds whole.
// (A chunk's elements lie between the positions of its first and last
// corners, and both grow with the chunk's place in the grid, so the chunks
// wanted are a run of the grid in C order.)
std::vector<Box> WholeChunkBoxes(const Dims& shape, const Dims& chunks, uint64_t first, uint64_t count);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_ELEMENT_RANGE_H_
