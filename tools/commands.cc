#include "tools/commands.h"

#include <utility>

#include <fmt/format.h>

#include "slabfs/container.h"

namespace slabfs::tools {

Status CheckObjectPath(std::string_view path) {
  if (!path.starts_with('/')) {
    return Status::InvalidArgument(
        fmt::format("'{}': object paths are absolute, like /group/dataset", path));
  }
  auto parts = SplitPath(path);
  if (!parts) return AddContext(parts.error(), path);
  return Status::OK();
}

std::string ParentPath(std::string_view path) {
  auto parts = SplitPath(path);
  std::string parent;
  if (parts) {
    for (size_t i = 0; i + 1 < parts->size(); ++i) parent += "/" + (*parts)[i];
  }
  return parent.empty() ? "/" : parent;
}

bool IsRootPath(std::string_view path) {
  auto parts = SplitPath(path);
  return parts && parts->empty();
}

Status AddContext(Status s, std::string_view context) {
  if (s.ok() || context.empty()) return s;
  if (s.message().find(context) != std::string::npos) return s;
  return s.WithContext(context);
}

Result<Dims> ParseDimsOption(std::string_view option, std::string_view text, bool allow_unlimited,
                             bool allow_zero) {
  auto dims = ParseDims(text, allow_unlimited, allow_zero);
  if (!dims) {
    return Err(Status::InvalidArgument(
        fmt::format("{} '{}': {}", option, text, dims.error().message())));
  }
  if (dims->empty()) return Err(Status::InvalidArgument(fmt::format("{} is empty", option)));
  if (dims->size() > static_cast<size_t>(kMaxRank)) {
    return Err(Status::InvalidArgument(
        fmt::format("{} has rank {}; the most is {}", option, dims->size(), kMaxRank)));
  }
  return dims;
}

Result<DatasetOptions> MakeDatasetOptions(DType dtype, const Dims& shape, const LayoutText& layout) {
  const std::string_view chunks = layout.chunks, fill = layout.fill;
  DatasetOptions o;
  o.dtype = dtype;
  o.shape = shape;
  if (!layout.max_shape.empty()) {
    SLABFS_ASSIGN_OR_RETURN(o.max_shape, ParseDimsOption("--maxshape", layout.max_shape, true));
    if (o.max_shape.size() != shape.size()) {
      return Err(Status::InvalidArgument(fmt::format(
          "--maxshape {} has rank {} but the shape {} has rank {}", FormatDims(o.max_shape),
          o.max_shape.size(), FormatDims(shape), shape.size())));
    }
    for (size_t d = 0; d < shape.size(); ++d) {
      if (o.max_shape[d] != kUnlimited && o.max_shape[d] < shape[d]) {
        return Err(Status::InvalidArgument(fmt::format(
            "--maxshape {}: dimension {} is smaller than the shape's {}", FormatDims(o.max_shape), d,
            shape[d])));
      }
    }
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    const bool can_grow = !o.max_shape.empty() && o.max_shape[d] != shape[d];
    if (shape[d] == 0 && !can_grow) {
      return Err(Status::InvalidArgument(fmt::format(
          "shape {}: dimension {} is 0, which only a dimension that can grow (see --maxshape) may be",
          FormatDims(shape), d)));
    }
  }
  if (!layout.index.empty()) {
    auto kind = ParseIndexKind(layout.index);
    if (!kind) {
      return Err(Status::InvalidArgument(fmt::format("--index '{}': {}", layout.index,
                                                     kind.error().message())));
    }
    o.index = *kind;
  }
  if (!chunks.empty()) {
    SLABFS_ASSIGN_OR_RETURN(o.chunks, ParseDimsOption("--chunks", chunks));
    if (o.chunks.size() != shape.size()) {
      return Err(Status::InvalidArgument(fmt::format(
          "--chunks {} has rank {} but the shape {} has rank {}", FormatDims(o.chunks),
          o.chunks.size(), FormatDims(shape), shape.size())));
    }
  }
  if (!fill.empty()) {
    auto bytes = EncodeScalar(dtype, fill);
    if (!bytes) {
      return Err(Status::InvalidArgument(fmt::format("--fill '{}' for dtype {}: {}", fill,
                                                     DTypeName(dtype),
                                                     bytes.error().message())));
    }
    o.fill = std::move(*bytes);
  }
  return o;
}

}  // namespace slabfs::tools
