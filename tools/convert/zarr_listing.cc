#include "tools/convert/zarr_listing.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include "engine/io/os_error.h"
#include "slabfs/object.h"
#include "tools/convert/scalar.h"

namespace slabfs::tools::convert {
namespace {

namespace fs = boost::filesystem;

bool IsFile(const fs::path& p) {
  boost::system::error_code ec;
  return fs::is_regular_file(p, ec);
}

Result<Json> ReadV2Attributes(const fs::path& dir) {
  const fs::path path = dir / ".zattrs";
  if (!IsFile(path)) return Json::object();
  SLABFS_ASSIGN_OR_RETURN(Json j, ReadJsonFile(path.string()));
  if (!j.is_object()) {
    return Err(Status::Corruption(fmt::format("{}: not a JSON object", path.string())));
  }
  return j;
}

template <typename F>
Status ListNested(const fs::path& dir, size_t rank, Dims& prefix, F& add) {
  SLABFS_ASSIGN_OR_RETURN(std::vector<std::string> names, ListZarrDir(dir.string()));
  const bool last = prefix.size() + 1 == rank;
  for (const std::string& name : names) {
    auto v = ParseKeyIndex(name);
    if (!v) continue;
    const fs::path p = dir / name;
    prefix.push_back(*v);
    if (last && !IsZarrDir(p.string())) {
      add(prefix);
    } else if (!last && IsZarrDir(p.string())) {
      SLABFS_RETURN_IF_ERROR(ListNested(p, rank, prefix, add));
    }
    prefix.pop_back();
  }
  return Status::OK();
}

}  // namespace

bool IsZarrDir(const std::string& path) {
  boost::system::error_code ec;
  return fs::is_directory(path, ec);
}

bool IsZarrV3Store(const std::string& root) { return IsFile(fs::path(root) / "zarr.json"); }

Result<ZarrNodeKind> ZarrNodeKindOf(const std::string& dir_name, bool v3, std::string_view store_path) {
  const fs::path dir(dir_name);
  if (!IsZarrDir(dir_name)) return ZarrNodeKind::kNone;
  if (v3) {
    if (!IsFile(dir / "zarr.json")) return ZarrNodeKind::kNone;
    SLABFS_ASSIGN_OR_RETURN(Json j, ReadJsonFile((dir / "zarr.json").string()));
    auto it = j.is_object() ? j.find("node_type") : j.end();
    if (it != j.end() && *it == "group") return ZarrNodeKind::kGroup;
    if (it != j.end() && *it == "array") return ZarrNodeKind::kArray;
    return Err(Status::Corruption(
        fmt::format("{}: \"node_type\" is not \"group\" or \"array\"", (dir / "zarr.json").string())));
  }
  const bool array = IsFile(dir / ".zarray"), group = IsFile(dir / ".zgroup");
  if (array && group) {
    return Err(Status::Corruption(
        fmt::format("{}: {} holds both .zarray and .zgroup", dir_name, store_path.empty() ? "/" : store_path)));
  }
  return array ? ZarrNodeKind::kArray : group ? ZarrNodeKind::kGroup : ZarrNodeKind::kNone;
}

Result<std::vector<std::string>> ListZarrDir(const std::string& dir) {
  boost::system::error_code ec;
  std::vector<std::string> names;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) names.push_back(it->path().filename().string());
  if (ec) return Err(Status::IOError(fmt::format("{}: {}", dir, ec.message())));
  std::sort(names.begin(), names.end());
  return names;
}

Result<ParsedArray> ReadZarrArray(const std::string& dir, bool v3) {
  if (v3) {
    const std::string path = (fs::path(dir) / "zarr.json").string();
    SLABFS_ASSIGN_OR_RETURN(Json j, ReadJsonFile(path));
    return ParseV3Array(j, path);
  }
  const std::string path = (fs::path(dir) / ".zarray").string();
  SLABFS_ASSIGN_OR_RETURN(Json j, ReadJsonFile(path));
  SLABFS_ASSIGN_OR_RETURN(ParsedArray p, ParseZarray(j, path));
  SLABFS_ASSIGN_OR_RETURN(p.array.attributes, ReadV2Attributes(dir));
  return p;
}

Result<Json> ReadZarrGroupAttributes(const std::string& dir, bool v3) {
  if (!v3) return ReadV2Attributes(dir);
  const std::string path = (fs::path(dir) / "zarr.json").string();
  SLABFS_ASSIGN_OR_RETURN(Json j, ReadJsonFile(path));
  return ParseV3Group(j, path);
}

Result<ZarrChunkListing> ListZarrChunks(const ZarrArray& a, const std::string& dir_name) {
  const fs::path dir(dir_name);
  ZarrChunkListing out;
  if (a.scalar) {
    const fs::path key = dir / ChunkKey(a, {0});
    boost::system::error_code ec;
    if (fs::exists(fs::symlink_status(key, ec)) && !IsZarrDir(key.string())) out.chunks.push_back({0});
    return out;
  }
  const size_t rank = a.shape.size();
  Dims grid(rank);
  for (size_t d = 0; d < rank; ++d) grid[d] = a.shape[d] / a.chunks[d] + (a.shape[d] % a.chunks[d] != 0);
  auto add = [&](const Dims& c) {
    for (size_t d = 1; d < rank; ++d) {
      if (c[d] >= grid[d]) {
        ++out.outside;
        return;
      }
    }
    if (rank > 0 && c[0] >= grid[0]) {
      ++out.outside;
      out.past_end.push_back(c);
      return;
    }
    out.chunks.push_back(c);
  };
  if (a.separator == '.') {
    SLABFS_ASSIGN_OR_RETURN(std::vector<std::string> names, ListZarrDir(dir_name));
    for (const std::string& name : names) {
      std::string_view key = name;
      if (a.key_prefix_c) {
        if (!key.starts_with("c.")) continue;
        key.remove_prefix(2);
      }
      Dims c;
      bool ok = true;
      while (ok) {
        const size_t dot = key.find('.');
        auto v = ParseKeyIndex(key.substr(0, dot));
        ok = v.has_value();
        if (ok) c.push_back(*v);
        if (dot == std::string_view::npos) break;
        key.remove_prefix(dot + 1);
      }
      if (!ok || c.size() != rank || IsZarrDir((dir / name).string())) continue;
      add(c);
    }
  } else {
    fs::path base = a.key_prefix_c ? dir / "c" : dir;
    if (IsZarrDir(base.string())) {
      Dims c;
      SLABFS_RETURN_IF_ERROR_R(ListNested(base, rank, c, add));
    }
  }
  std::sort(out.chunks.begin(), out.chunks.end());
  std::sort(out.past_end.begin(), out.past_end.end());
  return out;
}

uint64_t ZarrChunkFileLimit(uint64_t expected) { return expected + expected / 2 + (1u << 20); }

namespace {

// Reads the chunk file at `path` into the buffer `place(size)` gives once
// its size is known: the checks and errors of ReadZarrChunkFile.
template <typename Place>
Status ReadChunkFileWith(const std::string& path, uint64_t limit, Place place) {
  // O_NONBLOCK: a FIFO planted in a store must not hang the reader.
  int fd = engine::RetryOnEintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK); });
  if (fd < 0) return engine::StatusFromErrno(errno, path);
  struct stat st {};
  Status s;
  if (fstat(fd, &st) != 0) {
    s = engine::StatusFromErrno(errno, path);
  } else if (!S_ISREG(st.st_mode)) {
    s = Status::Corruption(fmt::format("{}: a chunk key that is not a regular file", path));
  } else if (static_cast<uint64_t>(st.st_size) > limit) {
    s = Status::Corruption(fmt::format(
        "{}: {} bytes is far more than a chunk of this array can hold ({} bytes at most)", path, st.st_size, limit));
  } else {
    const size_t size = static_cast<size_t>(st.st_size);
    Result<char*> buf = place(size);
    if (!buf) {
      s = buf.error();
    } else {
      auto got = engine::ReadFully(fd, *buf, size, path);
      if (!got) {
        s = got.error();
      } else if (*got < size) {
        s = Status::Corruption(fmt::format("{}: shorter than its size", path));
      }
    }
  }
  ::close(fd);
  return s;
}

}  // namespace

Status ReadZarrChunkFile(const std::string& path, uint64_t limit, std::string* out) {
  return ReadChunkFileWith(path, limit, [&](size_t size) -> Result<char*> {
    out->resize(size);
    return out->data();
  });
}

Status ReadRawZarrChunkFile(const std::string& path, uint64_t bytes, char* out) {
  return ReadChunkFileWith(path, ZarrChunkFileLimit(bytes), [&](size_t size) -> Result<char*> {
    if (size != bytes) {
      return Err(
          Status::Corruption(fmt::format("{}: {} bytes, but an uncompressed chunk takes {}", path, size, bytes)));
    }
    return out;
  });
}

Dims ZarrMaxShape(const ZarrArray& a, const Json& attributes) {
  Dims max = a.shape;
  if (a.scalar) return max;
  for (uint64_t& d : max) {
    if (d == 0) d = kUnlimited;
  }
  auto it = attributes.is_object() ? attributes.find(kMaxShapeAttribute) : attributes.end();
  const Json* given = a.max_shape ? &*a.max_shape : it != attributes.end() ? &*it : nullptr;
  if (given == nullptr || !given->is_array() || given->size() != a.shape.size()) return max;
  Dims from(a.shape.size());
  for (size_t d = 0; d < a.shape.size(); ++d) {
    const Json& v = (*given)[d];
    if (v.is_null()) {
      from[d] = kUnlimited;
    } else if (v.is_number_unsigned() && v.get<uint64_t>() >= a.shape[d] && v.get<uint64_t>() > 0) {
      from[d] = v.get<uint64_t>();
    } else {
      return max;
    }
  }
  return from;
}

std::vector<ZarrAttribute> ZarrAttributes(const Json& attributes, const ZarrArray* array) {
  std::vector<ZarrAttribute> out;
  auto add = [&](const std::string& name, const Json& value) {
    ZarrAttribute z;
    z.name = name;
    if (!ValidateName(name).ok()) {
      z.why_not = "an attribute name slabfs does not accept";
    } else if (auto a = AttributeFromJson(value); a) {
      z.value = std::move(*a);
    } else {
      z.why_not = a.error().message();
    }
    out.push_back(std::move(z));
  };
  // In a store xarray reads (its arrays name their dimensions in
  // _ARRAY_DIMENSIONS, which xarray requires of a v2 store), a v2
  // fill_value is what xarray masks as missing: it writes _FillValue there,
  // and reads it from there even where .zattrs holds a _FillValue of its
  // own. Shown as the attribute, it means the same to every reader. In
  // other stores it is only what unwritten elements read as.
  const bool fill_is_shown_marker =
      array != nullptr && array->fill_is_marker &&
      ((attributes.is_object() && attributes.contains(kDimensionsAttribute)) || array->dimension_names);
  if (attributes.is_object()) {
    for (auto it = attributes.begin(); it != attributes.end(); ++it) {
      const std::string& name = it.key();
      if (array != nullptr) {
        if (name == kMaxShapeAttribute) continue;
        if (name == kFillValueAttribute && fill_is_shown_marker) {
          // xarray reads fill_value, not this: said where it differs.
          if (it.value() != FillToJson(array->dtype, array->fill, 2)) {
            ZarrAttribute z;
            z.name = name;
            z.why_not = "a _FillValue in .zattrs that xarray ignores: the array's fill_value is its _FillValue";
            out.push_back(std::move(z));
          }
          continue;
        }
        if (name == kDimensionsAttribute && array->dimension_names) continue;
        // The import's own marker; an empty dimension list (what xarray
        // writes for a 0-d variable) would not fit shape (1).
        if (array->scalar && name == kScalarAttribute) continue;
        if (array->scalar && name == kDimensionsAttribute && it.value() == Json::array()) continue;
      }
      add(name, it.value());
    }
  }
  if (array == nullptr) return out;
  if (fill_is_shown_marker) {
    ZarrAttribute z;
    z.name = std::string(kFillValueAttribute);
    z.value = Attribute::Numbers(array->dtype, array->fill);
    out.push_back(std::move(z));
  }
  if (array->dimension_names) {
    bool any = false;
    for (const Json& n : *array->dimension_names) any |= n.is_string();
    if (any) add(std::string(kDimensionsAttribute), *array->dimension_names);
  }
  return out;
}

}  // namespace slabfs::tools::convert
