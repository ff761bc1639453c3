#include "slabfs/slice.h"

#include <algorithm>
#include <limits>
#include <utility>

#include <fmt/format.h>

namespace slabfs {
namespace {

constexpr std::string_view kSyntaxHint =
    "an item is an index i, a range start:stop or start:stop:step (parts may be omitted), "
    "or ...";

std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Status Bad(std::string_view text, std::string_view why) {
  return Status::InvalidArgument(fmt::format("slice '{}': {}", text, why));
}

// An optionally signed decimal integer, digits only, saturated to int64 (a
// bound that large is clamped, an index that large is out of range anyway).
std::optional<int64_t> ParseInteger(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  constexpr uint64_t kLimit = uint64_t{std::numeric_limits<int64_t>::max()} + 1;
  uint64_t v = 0;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return std::nullopt;
    const uint64_t digit = static_cast<uint64_t>(ch - '0');
    v = v > (std::numeric_limits<uint64_t>::max() - 9) / 10 ? kLimit : std::min(kLimit, v * 10 + digit);
  }
  if (negative) return v == kLimit ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(v);
  return static_cast<int64_t>(std::min(v, kLimit - 1));
}

// One item, already trimmed and non-empty.
Result<SliceItem> ParseItem(std::string_view text, std::string_view item) {
  SliceItem out;
  out.text = std::string(item);
  if (item == "...") {
    out.kind = SliceItem::Kind::kEllipsis;
    return out;
  }
  std::vector<std::string_view> parts;
  for (std::string_view rest = item;;) {
    size_t colon = rest.find(':');
    parts.push_back(TrimBlanks(rest.substr(0, colon)));
    if (colon == std::string_view::npos) break;
    rest = rest.substr(colon + 1);
  }
  if (parts.size() == 1) {
    auto index = ParseInteger(parts[0]);
    if (!index) {
      return Err(Bad(text, fmt::format("'{}' is not an index or a range ({})", item, kSyntaxHint)));
    }
    out.kind = SliceItem::Kind::kIndex;
    out.start = index;
    return out;
  }
  if (parts.size() > 3) {
    return Err(Bad(text, fmt::format("'{}' has {} colons; a range is start:stop or "
                                     "start:stop:step",
                                     item, parts.size() - 1)));
  }
  std::optional<int64_t>* fields[3] = {&out.start, &out.stop, &out.step};
  static constexpr std::string_view kNames[3] = {"start", "stop", "step"};
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].empty()) continue;
    auto v = ParseInteger(parts[i]);
    if (!v) {
      return Err(Bad(text, fmt::format("'{}': the {} '{}' is not a whole number", item, kNames[i], parts[i])));
    }
    *fields[i] = v;
  }
  if (out.step && *out.step == 0) {
    return Err(Bad(text, fmt::format("'{}': the step cannot be zero", item)));
  }
  if (out.step && *out.step < 0) {
    return Err(Bad(text, fmt::format("'{}': negative steps are not supported", item)));
  }
  out.kind = SliceItem::Kind::kRange;
  return out;
}

// A range bound as numpy adjusts it for a positive step: negative counts
// from the end, then clamped to [0, n].
uint64_t AdjustBound(int64_t v, uint64_t n) {
  slabfs_i128 x = v;
  if (x < 0) x += n;
  if (x < 0) x = 0;
  if (x > static_cast<slabfs_i128>(n)) x = n;
  return static_cast<uint64_t>(x);
}

DimSlab Full(uint64_t n) { return DimSlab{.start = 0, .stride = 1, .count = n, .block = 1}; }

}  // namespace

Result<std::vector<SliceItem>> ParseSliceItems(std::string_view text) {
  if (TrimBlanks(text).empty()) {
    return Err(Bad(text, "the slice is empty (':' or '...' selects everything)"));
  }
  std::vector<SliceItem> items;
  bool seen_ellipsis = false;
  size_t number = 0;
  for (std::string_view rest = text;;) {
    size_t comma = rest.find(',');
    std::string_view item = TrimBlanks(rest.substr(0, comma));
    ++number;
    if (item.empty()) {
      return Err(Bad(text, fmt::format("item {} is empty (items are separated by single commas; "
                                       "':' selects a whole dimension)",
                                       number)));
    }
    SLABFS_ASSIGN_OR_RETURN(SliceItem parsed, ParseItem(text, item));
    if (parsed.kind == SliceItem::Kind::kEllipsis) {
      if (seen_ellipsis) return Err(Bad(text, "'...' may appear only once"));
      seen_ellipsis = true;
    }
    items.push_back(std::move(parsed));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return items;
}

Result<Slab> ResolveSlice(std::string_view text, const std::vector<SliceItem>& items, const Dims& shape) {
  const size_t rank = shape.size();
  size_t explicit_items = 0;
  for (const SliceItem& item : items) explicit_items += item.kind != SliceItem::Kind::kEllipsis;
  if (explicit_items > rank) {
    // The first item that has no dimension left.
    size_t seen = 0;
    std::string_view extra;
    for (const SliceItem& item : items) {
      if (item.kind == SliceItem::Kind::kEllipsis) continue;
      if (++seen == rank + 1) {
        extra = item.text;
        break;
      }
    }
    return Err(Bad(text, fmt::format("{} items for a dataset of rank {} (shape {}): '{}' has no "
                                     "dimension",
                                     explicit_items, rank, FormatDims(shape), extra)));
  }
  Slab sel;
  sel.dims.reserve(rank);
  for (const SliceItem& item : items) {
    if (item.kind == SliceItem::Kind::kEllipsis) {
      for (size_t k = 0; k < rank - explicit_items; ++k) {
        sel.dims.push_back(Full(shape[sel.dims.size()]));
      }
      continue;
    }
    const size_t d = sel.dims.size();
    const uint64_t n = shape[d];
    if (item.kind == SliceItem::Kind::kIndex) {
      slabfs_i128 i = *item.start;
      if (i < 0) i += n;
      if (i < 0 || i >= static_cast<slabfs_i128>(n)) {
        std::string valid = n == 0 ? "it is empty" : fmt::format("valid indices are -{} to {}", n, n - 1);
        return Err(Bad(text, fmt::format("index '{}' is out of range for dimension {} of "
                                         "extent {} ({})",
                                         item.text, d, n, valid)));
      }
      sel.dims.push_back(DimSlab{.start = static_cast<uint64_t>(i), .stride = 1, .count = 1, .block = 1});
      continue;
    }
    const uint64_t start = item.start ? AdjustBound(*item.start, n) : 0;
    const uint64_t stop = item.stop ? AdjustBound(*item.stop, n) : n;
    const uint64_t step = item.step ? static_cast<uint64_t>(*item.step) : 1;
    const uint64_t count = stop > start ? (stop - start - 1) / step + 1 : 0;
    sel.dims.push_back(DimSlab{.start = start, .stride = count > 1 ? step : 1, .count = count, .block = 1});
  }
  while (sel.dims.size() < rank) sel.dims.push_back(Full(shape[sel.dims.size()]));
  return sel;
}

Result<Slab> ParseSlice(std::string_view text, const Dims& shape) {
  SLABFS_ASSIGN_OR_RETURN(std::vector<SliceItem> items, ParseSliceItems(text));
  return ResolveSlice(text, items, shape);
}

std::string FormatSlice(const Slab& sel) {
  std::string out;
  for (const DimSlab& d : sel.dims) {
    if (!out.empty()) out += ", ";
    if (d.count == 0) {
      out += fmt::format("{}:{}", d.start, d.start);
      continue;
    }
    const uint64_t last = d.start + (d.count - 1) * d.stride;
    out += fmt::format("{}:{}", d.start, last + 1);
    if (d.count > 1 && d.stride > 1) out += fmt::format(":{}", d.stride);
  }
  return out;
}

bool IsBox(const Slab& sel) {
  return std::all_of(sel.dims.begin(), sel.dims.end(), [](const DimSlab& d) { return d.stride == 1 || d.count <= 1; });
}

Slab BoundingBox(const Slab& sel) {
  Slab box;
  for (const DimSlab& d : sel.dims) {
    const uint64_t count = d.count == 0 ? 0 : (d.count - 1) * d.stride + 1;
    box.dims.push_back(DimSlab{.start = d.start, .stride = 1, .count = count, .block = 1});
  }
  return box;
}

std::optional<Slab> IntersectBox(const Slab& sel, const Dims& start, const Dims& count) {
  Slab out;
  for (size_t k = 0; k < sel.dims.size(); ++k) {
    const DimSlab& d = sel.dims[k];
    const uint64_t step = d.count > 1 ? d.stride : 1;
    const uint64_t lo = start[k];
    const uint64_t hi = start[k] + count[k];  // exclusive
    // Selected indices are d.start + i*step for 0 <= i < d.count; keep the
    // i with lo <= index < hi.
    const uint64_t first = lo <= d.start ? 0 : (lo - d.start + step - 1) / step;
    const uint64_t end = hi <= d.start ? 0 : std::min(d.count, (hi - d.start + step - 1) / step);
    if (end <= first) return std::nullopt;
    const uint64_t n = end - first;
    out.dims.push_back(DimSlab{.start = d.start + first * step, .stride = n > 1 ? step : 1, .count = n, .block = 1});
  }
  return out;
}

}  // namespace slabfs
