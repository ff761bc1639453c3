// SLICE arguments: numpy basic indexing as text ("10:20,::2,5", "...,-1")
// turned into a Slab, and Slabs written back in the same syntax.
//
// A slice is comma-separated items, one per dimension from the first:
//   i                 one index, kept as a dimension of extent 1; negative
//                     counts from the end (-1 is the last); out of range is
//                     an error, as numpy's IndexError
//   start:stop        a half-open range; either may be omitted (":", "5:",
//   start:stop:step   ":7", "::2"); negative bounds count from the end and
//                     bounds past either end are clamped, as numpy does;
//                     the step is at least 1 (0 is an error, negative steps
//                     are not supported)
//   ...               as many full dimensions as needed to reach the rank;
//                     at most once
// Fewer items than the rank leave the remaining dimensions full. Blanks
// around items and around the parts of a range are ignored. An empty range
// ("5:5") is allowed and selects nothing; an empty slice text or an empty
// item ("1,,2", "1,") is refused.
//
// Errors are InvalidArgument with a message that starts with "slice 'TEXT'"
// and names the offending item. The functions are pure and thread-safe.
#ifndef SLABFS_SLICE_H_
#define SLABFS_SLICE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "slabfs/status.h"
#include "slabfs/types.h"

namespace slabfs {

// One item of a slice as written, before the shape is known. Numbers past
// the range of int64 are saturated (they are clamped or out of range later).
struct SliceItem {
  enum class Kind : unsigned char { kIndex, kRange, kEllipsis };
  Kind kind = Kind::kRange;
  std::string text;              // the item as written, trimmed, for messages
  std::optional<int64_t> start;  // kIndex: the index; kRange: absent when omitted
  std::optional<int64_t> stop;   // kRange
  std::optional<int64_t> step;   // kRange; never 0 or negative once parsed
};

// Checks the syntax of a slice without a shape, so that a command can refuse
// a malformed SLICE before it opens a container.
Result<std::vector<SliceItem>> ParseSliceItems(std::string_view text);

// Applies parsed items to a shape. `text` is the original slice, for
// messages. The result has one DimSlab per dimension with block 1, and
// stride 1 wherever count <= 1.
Result<Slab> ResolveSlice(std::string_view text, const std::vector<SliceItem>& items, const Dims& shape);

// ParseSliceItems then ResolveSlice.
Result<Slab> ParseSlice(std::string_view text, const Dims& shape);

// The inverse of ParseSlice for a non-empty selection with block 1:
// "10:20, 0:5" for a box, "10:20:2, 3:4" with a step, each stop the last
// selected index + 1 (so ParseSlice gives the same Slab back).
std::string FormatSlice(const Slab& sel);

// Whether every dimension of a block-1 selection is contiguous (stride 1 or
// count <= 1), the form Dataset::Defined takes.
bool IsBox(const Slab& sel);

// The smallest box holding a selection with block 1: start, and count =
// the distance from the first to the last selected index + 1 (0 for an
// empty dimension).
Slab BoundingBox(const Slab& sel);

// The elements of `sel` (block 1) inside the box start .. start+count-1, as
// a selection with sel's strides (stride 1 wherever count <= 1), or nothing
// when they do not meet. The ranks must match.
std::optional<Slab> IntersectBox(const Slab& sel, const Dims& start, const Dims& count);

}  // namespace slabfs

#endif  // SLABFS_SLICE_H_
