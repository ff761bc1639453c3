// The names of the mount's virtual files (views): a slice of a dataset, its
// .npy form, its text form, its picture, or a slice in one of the forms.
//
//   ds[0:100, ::2]      the selected elements, C order (read and write)
//   ds.npy              an NPY header, then the elements (read-only)
//   ds.txt              fixed-width text, one row per line (read-only)
//   ds.png              a picture of a 2-D view (read-only; png_view.h)
//   ds[0:10].npy        a slice in either form
//
// The slice grammar is slabfs/slice.h (as `slab erase` and `slab defined`
// take it). A view is never listed by readdir; a real child of the same
// name wins.
#ifndef SLABFS_FUSEFS_VIEWS_VIEW_NAME_H_
#define SLABFS_FUSEFS_VIEWS_VIEW_NAME_H_

#include <optional>
#include <string>
#include <string_view>

namespace slabfs::fusefs::views {

enum class ViewKind : unsigned char { kRaw, kNpy, kText, kPng };

struct ViewName {
  std::string dataset;               // the name of the dataset in the directory
  std::optional<std::string> slice;  // the text between the brackets
  ViewKind kind = ViewKind::kRaw;
};

// nullopt when `name` does not have a view's form: "ds[...]", "ds.npy",
// "ds.txt", "ds.png", and a slice "ds[...]" alone or with one of those
// suffixes, with a non-empty dataset name.
std::optional<ViewName> ParseViewName(std::string_view name);

}  // namespace slabfs::fusefs::views

#endif  // SLABFS_FUSEFS_VIEWS_VIEW_NAME_H_
