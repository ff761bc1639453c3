// Layouts set and kept through the mount: the user.slab.* extended
// attributes that describe a dataset's layout, and the rule that decides
// whether new bytes fit the layout of a dataset they replace.
//
//   user.slab.dtype     f4, u2, ... (numpy spelling)
//   user.slab.shape     100,200
//   user.slab.maxshape  unlimited,200
//   user.slab.chunks    10,200
//   user.slab.filters   shuffle,deflate=6,checksum (or none)
//   user.slab.fill      -1.5
//   user.slab.sparse    1 / 0 (also yes/no, true/false)
//   user.slab.index     auto, single, compact, fixed, extensible, btree
//   user.slab.layout    all of them at once, "dtype=f4;shape=100,200;..."
//
// A LayoutEdit collects the fields given so far; Resolve turns it, on top of
// the dataset's current layout, into the creation options of the new one.
// Pure functions: thread-safe.
#ifndef SLABFS_FUSEFS_LAYOUT_EDIT_H_
#define SLABFS_FUSEFS_LAYOUT_EDIT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "slabfs/types.h"

namespace slabfs::fusefs {

struct LayoutEdit {
  std::optional<DType> dtype;
  std::optional<Dims> shape;
  std::optional<Dims> max_shape;
  std::optional<Dims> chunks;
  std::optional<std::string> filters;  // canonical text; "" for none
  std::optional<std::string> fill;     // as written: encoded once the dtype is known
  std::optional<bool> sparse;
  std::optional<IndexKind> index;

  bool empty() const { return !dtype && !shape && !max_shape && !chunks && !filters && !fill && !sparse && !index; }
};

// Whether user.slab.<name> is a layout field (the names above), as opposed
// to a figure (stored, defined).
bool IsLayoutField(std::string_view name);

// Adds user.slab.<name> = value to the edit; "layout" takes every field as
// "key=value" items separated by ';' (blanks around items ignored).
// InvalidArgument naming the field for a malformed value or an unknown key:
// each value is checked on its own (a dtype, at most 32 dimensions, chunks
// of at least 1, a filter pipeline, a number as the fill), so that what is
// left for ResolveLayout and the engine to refuse is a combination that
// does not hold together yet (chunks of another rank than the shape, a
// fill the dtype cannot hold), which more fields may complete.
Status AddLayoutField(std::string_view name, std::string_view value, LayoutEdit* edit);

// The options of the layout the edit asks for, on top of `current` (a
// dataset now holding `bytes` bytes). Fields not given keep their current
// value where that still makes sense: a new dtype alone turns a 1-D dataset
// into as many elements of the new type as its bytes make (InvalidArgument
// if they do not divide); a new shape without a max shape is fixed at that
// shape, except that a dimension of length 0 is unlimited; chunks and
// index are chosen anew when the geometry changes; the fill is zero when
// only the dtype changes. The engine checks the result (Dataset::Relayout).
Result<DatasetOptions> ResolveLayout(const DatasetInfo& current, uint64_t bytes, const LayoutEdit& edit);

// user.slab.layout of a dataset, in the form AddLayoutField reads.
std::string FormatLayout(const DatasetInfo& info);

// The options under which `bytes` new bytes keep the layout of a dataset
// described by `target`: the same size, or, where its first dimension can
// change, a whole number of rows within the maximum. nullopt when they do
// not fit.
std::optional<DatasetOptions> FitLayout(const DatasetInfo& target, uint64_t bytes);

// `o` with its first dimension set so that the layout holds exactly `bytes`
// bytes: whole rows (a row is every dimension but the first), within the
// max shape, where the first dimension can change (max shape larger than
// the shape there, or length_resizable). nullopt otherwise. A copy of a
// growable dataset that gained or lost rows since its user.slab.* fields
// were read keeps its type this way.
std::optional<DatasetOptions> WithLengthOf(DatasetOptions o, uint64_t bytes);

// Whether two layouts store the same bytes the same way (dtype, shape, max
// shape, chunks, fill, filters, sparse): a relayout between them would only
// copy.
bool SameLayout(const DatasetInfo& a, const DatasetOptions& b);

// "f4 100,200" for log lines.
std::string DescribeLayout(const DatasetInfo& info);

}  // namespace slabfs::fusefs

#endif  // SLABFS_FUSEFS_LAYOUT_EDIT_H_
