#include "fusefs/views/view_name.h"

namespace slabfs::fusefs::views {

std::optional<ViewName> ParseViewName(std::string_view name) {
  ViewName v;
  if (name.ends_with(".npy")) {
    v.kind = ViewKind::kNpy;
    name.remove_suffix(4);
  } else if (name.ends_with(".txt")) {
    v.kind = ViewKind::kText;
    name.remove_suffix(4);
  } else if (name.ends_with(".png")) {
    v.kind = ViewKind::kPng;
    name.remove_suffix(4);
  }
  if (name.ends_with(']')) {
    const size_t open = name.find('[');
    if (open == std::string_view::npos || open == 0) return std::nullopt;
    v.dataset = std::string(name.substr(0, open));
    v.slice = std::string(name.substr(open + 1, name.size() - open - 2));
    return v;
  }
  // Without a slice only the typed forms are views.
  if (v.kind == ViewKind::kRaw || name.empty()) return std::nullopt;
  v.dataset = std::string(name);
  return v;
}

}  // namespace slabfs::fusefs::views
