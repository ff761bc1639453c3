// Lists of boxes of elements (slabfs::Box).
#ifndef SLABFS_ENGINE_SELECTION_BOXES_H_
#define SLABFS_ENGINE_SELECTION_BOXES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "slabfs/types.h"

namespace slabfs::engine {

// Joins disjoint boxes that together form a larger box (equal in every
// dimension but one, and touching in that one), until none can be joined:
// the same elements in no more boxes, sorted in C order of their first
// element. A region stored in several chunks becomes one box.
std::vector<Box> MergeBoxes(std::vector<Box> boxes);

// The first element at or after linear position `at` (in a dataset of
// `shape`, C order) that lies inside box b, or nullopt: the least
// coordinate tuple >= at's that is inside the box, lexicographically.
std::optional<uint64_t> NextElementInBox(const Dims& shape, const Box& b, uint64_t at);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_SELECTION_BOXES_H_
