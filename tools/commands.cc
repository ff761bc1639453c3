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

Result<Dims> ParseDimsOption(std::string_view option, std::string_view text) {
  auto dims = ParseDims(text);
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

Result<DatasetOptions> MakeDatasetOptions(DType dtype, const Dims& shape,
                                          std::string_view chunks, std::string_view fill) {
  DatasetOptions o;
  o.dtype = dtype;
  o.shape = shape;
  for (uint64_t d : shape) {
    if (d == 0) {
      return Err(Status::InvalidArgument(fmt::format(
          "shape {}: every dimension must be at least 1", FormatDims(shape))));
    }
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
