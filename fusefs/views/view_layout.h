// A view resolved against its dataset's current shape: which elements it
// selects, the shape they have, and how its bytes map onto them. Pure
// functions: thread-safe.
//
// Raw bytes: the selected elements in C order over the view's shape.
// .npy: EncodeNpyHeader(dtype, shape), then the raw bytes.
// Text: each element printed right-aligned in a field of FieldWidth(dtype)
// characters; fields are separated by one space and each row (the last
// dimension) ends with a newline, so every byte offset maps to an element
// without scanning. Integers in decimal; f4 with 9 and f8 with 17
// significant digits (they read back exactly), nan, inf and -inf as numpy
// writes them.
// .png: the bytes of an encoded picture (png_view.h); ResolveView leaves
// `png` empty and size_bytes 0, AttachPicture sets them.
#ifndef SLABFS_FUSEFS_VIEWS_VIEW_LAYOUT_H_
#define SLABFS_FUSEFS_VIEWS_VIEW_LAYOUT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fusefs/views/spill_buffer.h"
#include "fusefs/views/view_name.h"
#include "slabfs/status.h"
#include "slabfs/types.h"

namespace slabfs::fusefs::views {

struct ViewLayout {
  ViewKind kind = ViewKind::kRaw;
  DType dtype = DType::kU1;
  Slab sel;    // in the dataset, block 1
  Dims shape;  // the view's shape: sel's counts (rank of the dataset)
  uint64_t elements = 0;
  std::string header;                      // .npy only
  uint64_t row_elements = 1;               // text: elements per line
  std::shared_ptr<const SpillBuffer> png;  // .png only, once encoded
  uint64_t size_bytes = 0;
};

// Resolves `slice` (nullopt: the whole dataset) against `info`.
// InvalidArgument (naming the slice) when it does not parse or is out of
// range.
Result<ViewLayout> ResolveView(ViewKind kind, const std::optional<std::string>& slice, const DatasetInfo& info);

// Text: characters of one field.
size_t FieldWidth(DType dtype);
// Text: the field of one element (FieldWidth characters).
std::string FormatField(DType dtype, const char* element);

// Calls fn(sub, offset) for boxes of the view's elements [first, first +
// count) in C order: `sub` is the part of v.sel they are, `offset` the
// position of the box's first element from `first`. At most 2 * rank - 1
// boxes. fn's first error stops the walk.
Status ForEachElementBox(const ViewLayout& v, uint64_t first, uint64_t count,
                         const std::function<Status(const Slab& sub, uint64_t offset)>& fn);

}  // namespace slabfs::fusefs::views

#endif  // SLABFS_FUSEFS_VIEWS_VIEW_LAYOUT_H_
