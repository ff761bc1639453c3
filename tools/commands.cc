#include "tools/commands.h"

#include <charconv>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "slabfs/container.h"

namespace slabfs::tools {

Status CheckObjectPath(std::string_view path) {
  if (!path.starts_with('/')) {
    return Status::InvalidArgument(fmt::format("'{}': object paths are absolute, like /group/dataset", path));
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

Result<Dims> ParseDimsOption(std::string_view option, std::string_view text, bool allow_unlimited, bool allow_zero) {
  auto dims = ParseDims(text, allow_unlimited, allow_zero);
  if (!dims) {
    return Err(Status::InvalidArgument(fmt::format("{} '{}': {}", option, text, dims.error().message())));
  }
  if (dims->empty()) return Err(Status::InvalidArgument(fmt::format("{} is empty", option)));
  if (dims->size() > static_cast<size_t>(kMaxRank)) {
    return Err(Status::InvalidArgument(fmt::format("{} has rank {}; the most is {}", option, dims->size(), kMaxRank)));
  }
  return dims;
}

namespace {

std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A deflate level: a whole number from 1 to 9, digits only.
std::optional<unsigned> ParseDeflateLevel(std::string_view text) {
  unsigned level = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), level);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || level < 1 || level > 9) {
    return std::nullopt;
  }
  return level;
}

// Checks --filters text item by item and writes it canonically, so that a
// bad pipeline is refused before a container is opened.
Result<std::string> CanonicalFilters(std::string_view text) {
  auto bad = [text](std::string_view why) {
    return Err(Status::InvalidArgument(fmt::format("--filters '{}': {}", text, why)));
  };
  std::string_view rest = TrimBlanks(text);
  if (rest.empty() || rest == "none") return std::string();
  std::vector<std::string> items;
  bool seen_shuffle = false, seen_deflate = false, seen_checksum = false;
  for (;;) {
    size_t comma = rest.find(',');
    std::string_view item = TrimBlanks(rest.substr(0, comma));
    bool* seen = nullptr;
    if (item == "shuffle") {
      seen = &seen_shuffle;
      items.emplace_back(item);
    } else if (item == "checksum") {
      seen = &seen_checksum;
      items.emplace_back(item);
    } else if (item == "deflate" || item.starts_with("deflate=")) {
      seen = &seen_deflate;
      std::string_view level_text = item == "deflate" ? "6" : item.substr(8);
      auto level = ParseDeflateLevel(level_text);
      if (!level) return bad(fmt::format("deflate level '{}' is not 1 to 9", level_text));
      items.push_back(fmt::format("deflate={}", *level));
    } else if (item.empty()) {
      return bad("an empty filter name (filters are separated by single commas)");
    } else if (item == "none") {
      return bad("'none' cannot be combined with filters");
    } else {
      return bad(
          fmt::format("unknown filter '{}' (the filters are shuffle, deflate, deflate=1..9 and checksum)", item));
    }
    if (*seen) return bad(fmt::format("'{}' appears twice", item));
    *seen = true;
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

}  // namespace

Result<std::string> MakeFilterPipeline(const FilterArgs& args) {
  if (args.filters) {
    if (args.shuffle || args.deflate || args.checksum) {
      return Err(
          Status::InvalidArgument("--filters gives the whole pipeline: it cannot be combined with --shuffle, "
                                  "--deflate or --checksum"));
    }
    return CanonicalFilters(*args.filters);
  }
  std::string out;
  if (args.shuffle) out = "shuffle";
  if (args.deflate) {
    auto level = ParseDeflateLevel(*args.deflate);
    if (!level) {
      return Err(Status::InvalidArgument(
          fmt::format("--deflate '{}': the level is a whole number from 1 to 9", *args.deflate)));
    }
    out += fmt::format("{}deflate={}", out.empty() ? "" : ",", *level);
  }
  if (args.checksum) out += out.empty() ? "checksum" : ",checksum";
  return out;
}

void AddFilterOptions(CLI::App* sub, FilterArgs* args, CLI::Option* needs) {
  // CLI11 2.1 binds no std::optional: the callbacks fill them when given.
  CLI::Option* shuffle = sub->add_flag("--shuffle", args->shuffle,
                                       "filter: shuffle the bytes of each chunk by element size (helps deflate)");
  CLI::Option* deflate = sub->add_option_function<std::string>(
      "--deflate", [args](const std::string& v) { args->deflate = v; },
      "filter: compress each chunk with deflate (zlib) at level N, 1 (fast) to 9 (small)");
  deflate->type_name("N");
  CLI::Option* checksum = sub->add_flag("--checksum", args->checksum,
                                        "filter: store a CRC-32C with each chunk and verify it on every read");
  CLI::Option* filters = sub->add_option_function<std::string>(
      "--filters", [args](const std::string& v) { args->filters = v; },
      "the whole filter pipeline in order, like shuffle,deflate=6,checksum, or none; "
      "not with --shuffle, --deflate or --checksum");
  filters->type_name("TEXT");
  filters->excludes(shuffle)->excludes(deflate)->excludes(checksum);
  if (needs != nullptr) {
    for (CLI::Option* opt : {shuffle, deflate, checksum, filters}) opt->needs(needs);
  }
}

std::string Counted(uint64_t n, std::string_view noun, std::string_view plural) {
  if (n == 1) return fmt::format("1 {}", noun);
  if (!plural.empty()) return fmt::format("{} {}", n, plural);
  return fmt::format("{} {}s", n, noun);
}

std::string FormatRatio(uint64_t logical_bytes, uint64_t stored_bytes) {
  if (stored_bytes == 0) return "-";
  return fmt::format("{:.2f}x", static_cast<double>(logical_bytes) / static_cast<double>(stored_bytes));
}

Result<DatasetOptions> MakeDatasetOptions(DType dtype, const Dims& shape, const LayoutText& layout) {
  const std::string_view chunks = layout.chunks, fill = layout.fill;
  DatasetOptions o;
  o.dtype = dtype;
  o.shape = shape;
  if (!layout.max_shape.empty()) {
    SLABFS_ASSIGN_OR_RETURN(o.max_shape, ParseDimsOption("--maxshape", layout.max_shape, true));
    if (o.max_shape.size() != shape.size()) {
      return Err(Status::InvalidArgument(fmt::format("--maxshape {} has rank {} but the shape {} has rank {}",
                                                     FormatDims(o.max_shape), o.max_shape.size(), FormatDims(shape),
                                                     shape.size())));
    }
    for (size_t d = 0; d < shape.size(); ++d) {
      if (o.max_shape[d] != kUnlimited && o.max_shape[d] < shape[d]) {
        return Err(Status::InvalidArgument(fmt::format("--maxshape {}: dimension {} is smaller than the shape's {}",
                                                       FormatDims(o.max_shape), d, shape[d])));
      }
    }
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    const bool can_grow = !o.max_shape.empty() && o.max_shape[d] != shape[d];
    if (shape[d] == 0 && !can_grow) {
      return Err(Status::InvalidArgument(
          fmt::format("shape {}: dimension {} is 0, which only a dimension that can grow (see --maxshape) may be",
                      FormatDims(shape), d)));
    }
  }
  if (!layout.index.empty()) {
    auto kind = ParseIndexKind(layout.index);
    if (!kind) {
      return Err(Status::InvalidArgument(fmt::format("--index '{}': {}", layout.index, kind.error().message())));
    }
    o.index = *kind;
  }
  if (!chunks.empty()) {
    SLABFS_ASSIGN_OR_RETURN(o.chunks, ParseDimsOption("--chunks", chunks));
    if (o.chunks.size() != shape.size()) {
      return Err(
          Status::InvalidArgument(fmt::format("--chunks {} has rank {} but the shape {} has rank {}",
                                              FormatDims(o.chunks), o.chunks.size(), FormatDims(shape), shape.size())));
    }
  }
  if (!fill.empty()) {
    auto bytes = EncodeScalar(dtype, fill);
    if (!bytes) {
      return Err(Status::InvalidArgument(
          fmt::format("--fill '{}' for dtype {}: {}", fill, DTypeName(dtype), bytes.error().message())));
    }
    o.fill = std::move(*bytes);
  }
  SLABFS_ASSIGN_OR_RETURN(o.filters, MakeFilterPipeline(layout.filters));
  o.sparse = layout.sparse;
  return o;
}

}  // namespace slabfs::tools
