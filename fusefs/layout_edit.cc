#include "fusefs/layout_edit.h"

#include <array>
#include <string>

#include <fmt/format.h>

namespace slabfs::fusefs {
namespace {

constexpr std::array<std::string_view, 9> kLayoutFields = {"dtype", "shape",  "maxshape", "chunks", "filters",
                                                           "fill",  "sparse", "index",    "layout"};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\0'))
    s.remove_suffix(1);
  return s;
}

// A shape, max shape or chunk shape on its own: at most kMaxRank
// dimensions (whether it matches the other fields is checked when they
// are resolved together).
Result<Dims> ParseLayoutDims(std::string_view v, bool allow_unlimited, bool allow_zero) {
  SLABFS_ASSIGN_OR_RETURN(Dims d, ParseDims(v, allow_unlimited, allow_zero));
  if (d.size() > static_cast<size_t>(kMaxRank)) {
    return Err(Status::InvalidArgument(fmt::format("{} dimensions, at most {}", d.size(), kMaxRank)));
  }
  return d;
}

// A filter pipeline in the grammar of DatasetOptions::filters: shuffle,
// deflate (=N or :N, 1 to 9), checksum, each at most once, or none.
Status CheckFilters(std::string_view text) {
  text = Trim(text);
  if (text.empty() || text == "none") return Status::OK();
  bool shuffle = false, deflate = false, checksum = false;
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view item = Trim(text.substr(0, comma));
    bool* seen = nullptr;
    if (item == "shuffle") {
      seen = &shuffle;
    } else if (item == "checksum") {
      seen = &checksum;
    } else if (item.starts_with("deflate")) {
      std::string_view level = item.substr(7);
      if (!level.empty()) {
        if (level.size() != 2 || (level[0] != '=' && level[0] != ':') || level[1] < '1' || level[1] > '9') {
          return Status::InvalidArgument(fmt::format("'{}': the deflate level is 1 to 9", item));
        }
      }
      seen = &deflate;
    } else {
      return Status::InvalidArgument(fmt::format("unknown filter '{}' (shuffle, deflate=1..9, checksum)", item));
    }
    if (*seen) return Status::InvalidArgument(fmt::format("'{}' appears twice", item));
    *seen = true;
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return Status::OK();
}

Result<bool> ParseFlag(std::string_view v) {
  if (v == "1" || v == "yes" || v == "true") return true;
  if (v == "0" || v == "no" || v == "false") return false;
  return Err(Status::InvalidArgument(fmt::format("'{}' is not 1/0, yes/no or true/false", v)));
}

Status AddOne(std::string_view name, std::string_view value, LayoutEdit* edit) {
  value = Trim(value);
  auto bad = [&](const Status& why) {
    return Status::InvalidArgument(fmt::format("user.slab.{} '{}': {}", name, value, why.message()));
  };
  if (name == "dtype") {
    auto t = ParseDType(value);
    if (!t) return bad(t.error());
    edit->dtype = *t;
  } else if (name == "shape") {
    auto d = ParseLayoutDims(value, false, true);
    if (!d) return bad(d.error());
    edit->shape = *d;
  } else if (name == "maxshape") {
    auto d = ParseLayoutDims(value, true, true);
    if (!d) return bad(d.error());
    edit->max_shape = *d;
  } else if (name == "chunks") {
    auto d = ParseLayoutDims(value, false, false);
    if (!d) return bad(d.error());
    edit->chunks = *d;
  } else if (name == "filters") {
    Status f = CheckFilters(value);
    if (!f.ok()) return bad(f);
    edit->filters = value == "none" ? std::string() : std::string(value);
  } else if (name == "fill") {
    if (value.empty()) return bad(Status::InvalidArgument("empty"));
    // A number of some dtype; whether it fits the dataset's dtype is
    // checked with the dtype, which may come later.
    if (!EncodeScalar(DType::kF8, value) && !EncodeScalar(DType::kI8, value) && !EncodeScalar(DType::kU8, value)) {
      return bad(Status::InvalidArgument("not a number"));
    }
    edit->fill = std::string(value);
  } else if (name == "sparse") {
    auto f = ParseFlag(value);
    if (!f) return bad(f.error());
    edit->sparse = *f;
  } else if (name == "index") {
    auto k = ParseIndexKind(value);
    if (!k) return bad(k.error());
    edit->index = *k;
  } else {
    return Status::InvalidArgument(fmt::format("user.slab.{} is not a layout field", name));
  }
  return Status::OK();
}

uint64_t Product(const Dims& d) {
  slabfs_u128 n = 1;
  for (uint64_t v : d) n *= v;
  return n > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(n);
}

}  // namespace

bool IsLayoutField(std::string_view name) {
  for (std::string_view f : kLayoutFields)
    if (f == name) return true;
  return false;
}

Status AddLayoutField(std::string_view name, std::string_view value, LayoutEdit* edit) {
  if (name != "layout") return AddOne(name, value, edit);
  LayoutEdit staged = *edit;  // all or nothing
  std::string_view rest = value;
  bool any = false;
  while (!rest.empty()) {
    const size_t semi = rest.find(';');
    std::string_view item = Trim(rest.substr(0, semi));
    rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Status::InvalidArgument(
          fmt::format("user.slab.layout: '{}' is not key=value (keys: dtype, shape, maxshape, "
                      "chunks, filters, fill, sparse, index)",
                      item));
    }
    const std::string_view key = Trim(item.substr(0, eq));
    if (key == "layout" || !IsLayoutField(key)) {
      return Status::InvalidArgument(fmt::format("user.slab.layout: unknown key '{}'", key));
    }
    SLABFS_RETURN_IF_ERROR(AddOne(key, item.substr(eq + 1), &staged));
    any = true;
  }
  if (!any) return Status::InvalidArgument("user.slab.layout: no field given");
  *edit = std::move(staged);
  return Status::OK();
}

Result<DatasetOptions> ResolveLayout(const DatasetInfo& current, uint64_t bytes, const LayoutEdit& edit) {
  DatasetOptions o;
  o.dtype = edit.dtype.value_or(current.dtype);
  const bool dtype_changed = o.dtype != current.dtype;
  if (edit.shape) {
    o.shape = *edit.shape;
    if (edit.max_shape) {
      o.max_shape = *edit.max_shape;
    } else {
      // Fixed at the shape, but a dimension of length 0 could then hold
      // nothing: it is unlimited (set user.slab.maxshape to say otherwise).
      o.max_shape = o.shape;
      for (auto& d : o.max_shape) {
        if (d == 0) d = kUnlimited;
      }
    }
  } else if (dtype_changed && current.shape.size() == 1) {
    const size_t isz = ItemSize(o.dtype);
    if (bytes % isz != 0) {
      return Err(Status::InvalidArgument(fmt::format(
          "{} bytes are not a whole number of {} elements; give user.slab.shape too", bytes, DTypeName(o.dtype))));
    }
    o.shape = {bytes / isz};
    o.max_shape = edit.max_shape.value_or(current.max_shape);
  } else {
    o.shape = current.shape;
    o.max_shape = edit.max_shape.value_or(current.max_shape);
  }
  const bool geometry_changed = o.shape.size() != current.shape.size() || o.max_shape != current.max_shape;
  if (edit.chunks)
    o.chunks = *edit.chunks;
  else if (!geometry_changed)
    o.chunks = current.chunks;
  // else: chosen by the engine
  o.index = edit.index.value_or(geometry_changed || edit.chunks ? IndexKind::kAuto : current.index);
  o.filters = edit.filters.value_or(current.filters);
  o.sparse = edit.sparse.value_or(current.sparse);
  if (edit.fill) {
    auto f = EncodeScalar(o.dtype, *edit.fill);
    if (!f) {
      return Err(Status::InvalidArgument(
          fmt::format("user.slab.fill '{}' for dtype {}: {}", *edit.fill, DTypeName(o.dtype), f.error().message())));
    }
    o.fill = std::move(*f);
  } else if (!dtype_changed) {
    o.fill = current.fill;
  }
  return o;
}

std::string FormatLayout(const DatasetInfo& info) {
  return fmt::format(
      "dtype={};shape={};maxshape={};chunks={};filters={};fill={};sparse={};index={}", DTypeName(info.dtype),
      FormatDims(info.shape), FormatDims(info.max_shape), FormatDims(info.chunks),
      info.filters.empty() ? "none" : info.filters,
      info.fill.size() == ItemSize(info.dtype) ? FormatScalar(info.dtype, info.fill.data()) : std::string("0"),
      info.sparse ? 1 : 0, IndexKindName(info.index));
}

std::optional<DatasetOptions> FitLayout(const DatasetInfo& target, uint64_t bytes) {
  DatasetOptions o = OptionsOf(target);
  if (bytes == target.size_bytes) return o;
  if (!target.length_resizable) return std::nullopt;
  return WithLengthOf(std::move(o), bytes);
}

std::optional<DatasetOptions> WithLengthOf(DatasetOptions o, uint64_t bytes) {
  if (o.shape.empty()) return std::nullopt;
  const Dims& max = o.max_shape.empty() ? o.shape : o.max_shape;
  if (max.size() != o.shape.size()) return std::nullopt;
  const bool growable = o.length_resizable.value_or(max[0] != o.shape[0]);
  if (!growable) return std::nullopt;
  Dims row(o.shape.begin() + 1, o.shape.end());
  const uint64_t row_bytes = Product(row) * ItemSize(o.dtype);
  if (row_bytes == 0 || bytes % row_bytes != 0) return std::nullopt;
  const uint64_t rows = bytes / row_bytes;
  if (rows > max[0]) return std::nullopt;
  o.shape[0] = rows;
  // It stays growable even where the rows now reach the max shape.
  o.length_resizable = true;
  return o;
}

bool SameLayout(const DatasetInfo& a, const DatasetOptions& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.max_shape == b.max_shape && a.chunks == b.chunks &&
         a.fill == b.fill && a.filters == b.filters && a.sparse == b.sparse;
}

std::string DescribeLayout(const DatasetInfo& info) {
  std::string s = fmt::format("{} {}", DTypeName(info.dtype), FormatDims(info.shape));
  if (info.max_shape != info.shape) s += fmt::format(" (max {})", FormatDims(info.max_shape));
  if (!info.filters.empty()) s += " " + info.filters;
  if (info.sparse) s += " sparse";
  return s;
}

}  // namespace slabfs::fusefs
