#include "fusefs/xattr.h"

#include <iterator>
#include <string>

#include <fmt/format.h>

#include "fusefs/layout_edit.h"

namespace slabfs::fusefs {

XattrName ClassifyXattr(std::string_view full_name) {
  if (full_name.starts_with(kTypePrefix) && full_name.size() > kTypePrefix.size()) {
    return {XattrSpace::kType, full_name.substr(kTypePrefix.size())};
  }
  if (full_name.starts_with(kSlabPrefix)) {
    return {XattrSpace::kSlab, full_name.substr(kSlabPrefix.size())};
  }
  if (full_name.starts_with(kUserPrefix)) {
    return {XattrSpace::kUser, full_name.substr(kUserPrefix.size())};
  }
  return {XattrSpace::kOther, full_name};
}

const std::vector<std::string>& SlabXattrNames() {
  static const std::vector<std::string> names = {
      "user.slab.dtype",  "user.slab.shape",   "user.slab.maxshape", "user.slab.chunks",
      "user.slab.fill",   "user.slab.filters", "user.slab.sparse",   "user.slab.index",
      "user.slab.layout", "user.slab.stored",  "user.slab.defined",
  };
  return names;
}

Result<std::string> SlabXattrValue(const DatasetInfo& info, std::string_view name,
                                   const CountDefinedFn& count_defined) {
  if (name == "dtype") return std::string(DTypeName(info.dtype));
  if (name == "shape") return FormatDims(info.shape);
  if (name == "maxshape") return FormatDims(info.max_shape);
  if (name == "chunks") return FormatDims(info.chunks);
  if (name == "sparse") return std::string(info.sparse ? "1" : "0");
  if (name == "layout") return FormatLayout(info);
  if (name == "fill") {
    if (info.fill.size() != ItemSize(info.dtype)) {
      return Err(Status::Corruption(
          fmt::format("fill value has {} bytes, expected {}", info.fill.size(), ItemSize(info.dtype))));
    }
    return FormatScalar(info.dtype, info.fill.data());
  }
  if (name == "filters") return info.filters.empty() ? std::string("none") : info.filters;
  if (name == "index") return std::string(IndexKindName(info.index));
  if (name == "stored") return std::to_string(info.stored_bytes);
  if (name == "defined") {
    if (!count_defined) return Err(Status::InvalidArgument("no count of defined elements"));
    SLABFS_ASSIGN_OR_RETURN(uint64_t n, count_defined());
    return std::to_string(n);
  }
  return Err(Status::NotFound(fmt::format("no attribute user.slab.{}", name)));
}

Result<std::string> RootSlabXattrValue(const CacheStats& c, const SpaceInfo& s, std::string_view name,
                                       std::string_view last_error, std::string_view format,
                                       const std::vector<SkippedObject>& skipped) {
  if (name == "cache") {
    std::string out;
    VisitFields(c, [&out](std::string_view field, uint64_t value) {
      if (!out.empty()) out.push_back(' ');
      fmt::format_to(std::back_inserter(out), "{}={}", field, value);
    });
    return out;
  }
  // A short summary, in its own order and with its own name for
  // num_objects ("objects"), not every SpaceInfo field.
  if (name == "space") {
    return fmt::format("file_bytes={} free_bytes={} held_bytes={} objects={}", s.file_bytes, s.free_bytes, s.held_bytes,
                       s.num_objects);
  }
  if (name == "generation") return std::to_string(s.generation);
  if (name == "last_error") return std::string(last_error);
  if (name == "format") return std::string(format);
  if (name == "skipped") {
    std::string out;
    for (const SkippedObject& k : skipped) fmt::format_to(std::back_inserter(out), "{}: {}\n", k.path, k.reason);
    return out;
  }
  return Err(Status::NotFound(fmt::format("no attribute user.slab.{} on the root", name)));
}

std::string JoinXattrNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    out += n;
    out.push_back('\0');
  }
  return out;
}

}  // namespace slabfs::fusefs
