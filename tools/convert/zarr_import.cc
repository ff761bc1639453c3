// Zarr v2 / v3 directory store -> container (see convert.h and
// docs/interop.md).
//
// The import first walks the store and reads every metadata document and
// chunk listing (so a malformed store fails before anything is written and
// the progress bar knows the total), then creates each group and dataset
// and copies the chunks that exist, one whole chunk per write: each Zarr
// chunk becomes exactly one slabfs chunk (the chunk shapes are the same),
// which the cache writes without reading. Chunks the store lacks stay
// unwritten and read as the fill value. A 0-d array becomes a scalar
// dataset as scalar.h says.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include "engine/io/os_error.h"
#include "tools/byte_stream.h"
#include "tools/commands.h"
#include "tools/convert/convert.h"
#include "tools/convert/scalar.h"
#include "tools/convert/zarr_codecs.h"
#include "tools/convert/zarr_json.h"
#include "tools/convert/zarr_metadata.h"

namespace slabfs::tools::convert {
namespace {

namespace fs = boost::filesystem;

std::string JoinPath(std::string_view parent, std::string_view name) {
  return parent == "/" || parent.empty() ? fmt::format("/{}", name) : fmt::format("{}/{}", parent, name);
}

bool IsDir(const fs::path& p) {
  boost::system::error_code ec;
  return fs::is_directory(p, ec);
}

bool IsFile(const fs::path& p) {
  boost::system::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The entries of a directory, sorted by name.
Result<std::vector<std::string>> ListDir(const fs::path& dir) {
  boost::system::error_code ec;
  std::vector<std::string> names;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) names.push_back(it->path().filename().string());
  if (ec) return Err(Status::IOError(fmt::format("{}: {}", dir.string(), ec.message())));
  std::sort(names.begin(), names.end());
  return names;
}

// Reads a whole chunk file of at most `limit` bytes.
Status ReadChunkFile(const std::string& path, uint64_t limit, std::string* out) {
  // O_NONBLOCK: a FIFO planted in a store must not hang the import.
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
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
    out->resize(static_cast<size_t>(st.st_size));
    auto got = engine::ReadFully(fd, out->data(), out->size(), path);
    if (!got) {
      s = got.error();
    } else if (*got < out->size()) {
      s = Status::Corruption(fmt::format("{}: shorter than its size", path));
    }
  }
  close(fd);
  return s;
}

// One group or array of the store, in the order the import creates them.
struct Item {
  bool is_array = false;
  std::string store_path;  // "/a/b" inside the store, for messages
  std::string dest;        // its path in the container
  fs::path dir;
  Json attributes = Json::object();
  ZarrArray array;
  std::vector<Dims> chunks;  // the chunk keys present, C order
};

class ZarrImporter {
 public:
  ZarrImporter(const TreeImportOptions& o, Container& dest, Progress& progress, std::ostream& out)
      : o_(o), dest_(dest), progress_(progress), out_(out) {}

  Status Run() {
    const fs::path root(o_.source);
    v3_ = IsFile(root / "zarr.json");
    SLABFS_ASSIGN_OR_RETURN(std::vector<std::string> parts, SplitPath(o_.from));
    fs::path dir = root;
    for (const std::string& p : parts) dir /= p;
    std::string dest = o_.into;
    if (!parts.empty()) {
      dest = JoinPath(o_.into, parts.back());
    }
    SLABFS_ASSIGN_OR_RETURN(int kind, KindOf(dir, o_.from));
    if (kind == 0) {
      return Status::NotFound(fmt::format("{}: no Zarr group or array at {}", o_.source, o_.from));
    }
    if (kind == 2 && parts.empty()) {
      // A store whose root is an array: the dataset takes the store's name.
      std::string name = fs::path(o_.source).filename().string();
      if (name == "." || name.empty()) name = fs::absolute(root).parent_path().filename().string();
      if (name.ends_with(".zarr") && name.size() > 5) name.resize(name.size() - 5);
      SLABFS_RETURN_IF_ERROR(AddContext(ValidateName(name), o_.source));
      dest = JoinPath(o_.into, name);
    }
    SLABFS_RETURN_IF_ERROR(Plan(dir, o_.from, dest, kind, /*top=*/true));
    uint64_t bytes = 0, chunks = 0;
    for (const Item& it : items_) {
      if (!it.is_array) continue;
      chunks += it.chunks.size();
      bytes += it.chunks.size() * it.array.chunk_elements() * ItemSize(it.array.dtype);
    }
    progress_.SetTotal(bytes, chunks);
    for (const Item& it : items_) {
      SLABFS_RETURN_IF_ERROR(it.is_array ? CopyArray(it) : MakeGroup(it));
    }
    return Status::OK();
  }

 private:
  // 0: not a node, 1: a group, 2: an array.
  Result<int> KindOf(const fs::path& dir, std::string_view store_path) {
    if (!IsDir(dir)) return 0;
    if (v3_) {
      if (!IsFile(dir / "zarr.json")) return 0;
      SLABFS_ASSIGN_OR_RETURN(Json j, ReadJsonFile((dir / "zarr.json").string()));
      auto it = j.is_object() ? j.find("node_type") : j.end();
      if (it != j.end() && *it == "group") return 1;
      if (it != j.end() && *it == "array") return 2;
      return Err(Status::Corruption(
          fmt::format("{}: \"node_type\" is not \"group\" or \"array\"", (dir / "zarr.json").string())));
    }
    const bool array = IsFile(dir / ".zarray"), group = IsFile(dir / ".zgroup");
    if (array && group) {
      return Err(Status::Corruption(
          fmt::format("{}: {} holds both .zarray and .zgroup", o_.source, store_path.empty() ? "/" : store_path)));
    }
    return array ? 2 : group ? 1 : 0;
  }

  Status Skip(std::string_view store_path, std::string_view why) {
    if (o_.strict) {
      return Status::NotSupported(
          fmt::format("{}: {} holds {}, which slabfs cannot store (--strict)", o_.source, store_path, why));
    }
    out_ << fmt::format("skipped {}: {}\n", store_path, why);
    return Status::OK();
  }

  // Adds the node at `dir` (and, for a group, everything under it) to the
  // plan. `dest` is its container path.
  Status Plan(const fs::path& dir, const std::string& store_path, const std::string& dest, int kind, bool top) {
    // Walking a large store takes a while before the first chunk is copied.
    SLABFS_RETURN_IF_ERROR(InterruptGuard::Check());
    struct stat st {};
    if (stat(dir.c_str(), &st) == 0 && !visited_.insert({st.st_dev, st.st_ino}).second) {
      return Status::Corruption(fmt::format("{}: {} is reached twice (a symlink loop)", o_.source, store_path));
    }
    Item item;
    item.store_path = store_path.empty() ? "/" : store_path;
    item.dest = dest;
    item.dir = dir;
    if (kind == 2) {
      SLABFS_ASSIGN_OR_RETURN(ParsedArray p, ReadArray(dir));
      if (!p.unsupported.empty() && top) {
        // The one array asked for: nothing would be left to import.
        return Status::NotSupported(
            fmt::format("{}: {} holds {}, which slabfs cannot store", o_.source, item.store_path, p.unsupported));
      }
      if (!p.unsupported.empty()) return Skip(item.store_path, p.unsupported);
      item.is_array = true;
      item.array = std::move(p.array);
      item.attributes = std::move(item.array.attributes);
      SLABFS_RETURN_IF_ERROR(ListChunks(item));
      items_.push_back(std::move(item));
      return Status::OK();
    }
    SLABFS_ASSIGN_OR_RETURN(item.attributes, ReadGroupAttributes(dir));
    items_.push_back(std::move(item));
    SLABFS_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dir));
    for (const std::string& name : names) {
      if (name.starts_with(".") || name == "zarr.json") continue;
      const fs::path child = dir / name;
      if (!IsDir(child)) continue;
      const std::string child_store = JoinPath(store_path, name);
      if (!ValidateName(name).ok()) {
        SLABFS_RETURN_IF_ERROR(Skip(child_store, "a name slabfs does not accept"));
        continue;
      }
      SLABFS_ASSIGN_OR_RETURN(int child_kind, KindOf(child, child_store));
      if (child_kind == 0) {
        out_ << fmt::format("skipped {}: a directory that is not a Zarr group or array\n", child_store);
        continue;
      }
      SLABFS_RETURN_IF_ERROR(Plan(child, child_store, JoinPath(dest, name), child_kind, false));
    }
    return Status::OK();
  }

  Result<ParsedArray> ReadArray(const fs::path& dir) {
    if (v3_) {
      const std::string path = (dir / "zarr.json").string();
      SLABFS_ASSIGN_OR_RETURN(Json j, ReadJsonFile(path));
      return ParseV3Array(j, path);
    }
    const std::string path = (dir / ".zarray").string();
    SLABFS_ASSIGN_OR_RETURN(Json j, ReadJsonFile(path));
    SLABFS_ASSIGN_OR_RETURN(ParsedArray p, ParseZarray(j, path));
    SLABFS_ASSIGN_OR_RETURN(p.array.attributes, ReadV2Attributes(dir));
    return p;
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

  Result<Json> ReadGroupAttributes(const fs::path& dir) {
    if (!v3_) return ReadV2Attributes(dir);
    const std::string path = (dir / "zarr.json").string();
    SLABFS_ASSIGN_OR_RETURN(Json j, ReadJsonFile(path));
    return ParseV3Group(j, path);
  }

  // Finds the chunk keys present under the array's directory.
  Status ListChunks(Item& item) {
    const ZarrArray& a = item.array;
    if (a.scalar) {
      // As below, anything but a directory under the key is read as a chunk.
      const fs::path key = item.dir / ChunkKey(a, {0});
      boost::system::error_code ec;
      if (fs::exists(fs::symlink_status(key, ec)) && !IsDir(key)) item.chunks.push_back({0});
      return Status::OK();
    }
    const size_t rank = a.shape.size();
    Dims grid(rank);
    for (size_t d = 0; d < rank; ++d) grid[d] = a.shape[d] / a.chunks[d] + (a.shape[d] % a.chunks[d] != 0);
    uint64_t outside = 0;
    auto add = [&](const Dims& c) {
      for (size_t d = 0; d < rank; ++d) {
        if (c[d] >= grid[d]) {
          ++outside;
          return;
        }
      }
      item.chunks.push_back(c);
    };
    if (a.separator == '.') {
      SLABFS_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(item.dir));
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
        // Anything but a directory under a chunk key is read as a chunk, so
        // that a FIFO or device there is refused rather than skipped.
        if (!ok || c.size() != rank || IsDir(item.dir / name)) continue;
        add(c);
      }
    } else {
      fs::path base = a.key_prefix_c ? item.dir / "c" : item.dir;
      if (IsDir(base)) {
        Dims c;
        SLABFS_RETURN_IF_ERROR(ListNested(base, rank, c, add));
      }
    }
    std::sort(item.chunks.begin(), item.chunks.end());
    if (outside > 0) {
      out_ << fmt::format("{}: {} chunk{} outside the chunk grid of shape ({}) ignored\n", item.store_path, outside,
                          outside == 1 ? "" : "s", FormatDims(a.shape));
    }
    return Status::OK();
  }

  template <typename F>
  Status ListNested(const fs::path& dir, size_t rank, Dims& prefix, F& add) {
    SLABFS_ASSIGN_OR_RETURN(std::vector<std::string> names, ListDir(dir));
    const bool last = prefix.size() + 1 == rank;
    for (const std::string& name : names) {
      auto v = ParseKeyIndex(name);
      if (!v) continue;
      const fs::path p = dir / name;
      prefix.push_back(*v);
      if (last && !IsDir(p)) {
        add(prefix);
      } else if (!last && IsDir(p)) {
        SLABFS_RETURN_IF_ERROR(ListNested(p, rank, prefix, add));
      }
      prefix.pop_back();
    }
    return Status::OK();
  }

  Status SetAttributes(ObjectId id, const Item& item, bool is_array) {
    for (auto it = item.attributes.begin(); it != item.attributes.end(); ++it) {
      const std::string& name = it.key();
      if (is_array && name == kMaxShapeAttribute) continue;
      if (is_array && name == kDimensionsAttribute && item.array.dimension_names) continue;
      if (is_array && item.array.scalar) {
        // The marker is the import's own; an empty dimension list (what
        // xarray writes for a 0-d variable) would not fit shape (1).
        if (name == kScalarAttribute) continue;
        if (name == kDimensionsAttribute && it.value() == Json::array()) continue;
      }
      SLABFS_RETURN_IF_ERROR(SetOne(id, item, name, it.value()));
    }
    if (is_array && item.array.scalar) {
      Status s = dest_.SetAttribute(id, std::string(kScalarAttribute), ScalarMarker());
      SLABFS_RETURN_IF_ERROR(AddContext(s, item.dest));
    }
    const bool xarray_array = item.attributes.contains(kDimensionsAttribute) || item.array.dimension_names;
    if (is_array && xarray_array && item.array.fill_is_marker && !item.attributes.contains(kFillValueAttribute)) {
      // In a store xarray reads (its arrays name their dimensions in
      // _ARRAY_DIMENSIONS, which xarray requires of a v2 store), a v2
      // fill_value is what xarray masks as missing (it writes _FillValue
      // there, and reads it back from there): kept as the attribute, it
      // means the same to every reader of the container. In other stores
      // it is only what unwritten elements read as.
      Status s = dest_.SetAttribute(id, std::string(kFillValueAttribute),
                                    Attribute::Numbers(item.array.dtype, item.array.fill));
      SLABFS_RETURN_IF_ERROR(AddContext(s, item.dest));
    }
    if (is_array && item.array.dimension_names) {
      bool any = false;
      for (const Json& n : *item.array.dimension_names) any |= n.is_string();
      if (any) {
        SLABFS_RETURN_IF_ERROR(SetOne(id, item, std::string(kDimensionsAttribute), *item.array.dimension_names));
      }
    }
    return Status::OK();
  }

  Status SetOne(ObjectId id, const Item& item, const std::string& name, const Json& value) {
    const std::string what = fmt::format("{} (attribute '{}')", item.store_path, name);
    if (!ValidateName(name).ok()) return Skip(what, "an attribute name slabfs does not accept");
    auto a = AttributeFromJson(value);
    if (!a) return Skip(what, a.error().message());
    Status s = dest_.SetAttribute(id, name, *a);
    if (s.code() == Code::kNoSpace || s.code() == Code::kInvalidArgument) {
      return Skip(what, s.message());
    }
    return AddContext(s, item.dest);
  }

  Status MakeGroup(const Item& item) {
    ObjectId id = kRootId;
    if (item.dest == o_.into) {
      auto r = dest_.Resolve(item.dest);
      if (!r) return AddContext(r.error(), item.dest);
      id = *r;
    } else {
      const std::string parent = ParentPath(item.dest);
      auto parent_id = dest_.Resolve(parent);
      if (!parent_id) return AddContext(parent_id.error(), parent);
      auto r = dest_.CreateGroup(*parent_id, fs::path(item.dest).filename().string());
      if (!r) return AddContext(r.error(), item.dest);
      id = *r;
    }
    return SetAttributes(id, item, false);
  }

  // The dataset's max shape: from the attribute an export wrote, else the
  // shape (a dimension of length 0 stays able to grow).
  Dims MaxShapeOf(const Item& item) {
    const ZarrArray& a = item.array;
    Dims max = a.shape;
    if (a.scalar) return max;
    for (uint64_t& d : max) {
      if (d == 0) d = kUnlimited;
    }
    auto it = item.attributes.find(kMaxShapeAttribute);
    const Json* given = a.max_shape ? &*a.max_shape : it != item.attributes.end() ? &*it : nullptr;
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

  Status CopyArray(const Item& item) {
    const ZarrArray& a = item.array;
    DatasetOptions o;
    o.dtype = a.dtype;
    o.shape = a.shape;
    o.max_shape = MaxShapeOf(item);
    o.chunks = a.chunks;
    o.fill = a.fill;
    o.filters = FiltersFor(a);
    if (a.scalar) MakeScalarOptions(&o);
    const std::string parent = ParentPath(item.dest);
    auto parent_id = dest_.Resolve(parent);
    if (!parent_id) return AddContext(parent_id.error(), parent);
    auto ds = dest_.CreateDataset(*parent_id, fs::path(item.dest).filename().string(), o);
    if (!ds) return AddContext(ds.error(), item.dest);
    SLABFS_RETURN_IF_ERROR(SetAttributes(ds->id(), item, true));

    const size_t rank = a.shape.size();
    const size_t item_size = ItemSize(a.dtype);
    const uint64_t expected = a.chunk_elements() * item_size;
    // Compressed chunks are rarely much larger than raw ones; anything far
    // beyond is not a chunk of this array.
    const uint64_t limit = expected + expected / 2 + (1u << 20);
    std::string stored, raw, moved;
    Dims start(rank), count(rank), zero(rank, 0);
    // A zlib stream alone is what the container's deflate stores: whole
    // chunks are copied as stored (Dataset::WriteEncodedChunk checks them
    // with one decode) instead of being compressed again.
    const bool copy_encoded = !o_.recompress && !a.big_endian && a.transpose.empty() && !a.scalar &&
                              a.codecs.size() == 1 && a.codecs[0].kind == ZarrCodec::Kind::kZlib &&
                              o.filters == fmt::format("deflate={}", a.codecs[0].level);
    for (const Dims& c : item.chunks) {
      const std::string key = ChunkKey(a, c);
      const std::string path = (item.dir / key).string();
      SLABFS_RETURN_IF_ERROR(ReadChunkFile(path, limit, &stored));
      if (copy_encoded) {
        bool inside = true;
        for (size_t d = 0; d < rank; ++d) inside &= (c[d] + 1) * a.chunks[d] <= a.shape[d];
        if (inside) {
          Status copied = ds->WriteEncodedChunk(c, stored, 0);
          if (copied.ok()) {
            SLABFS_RETURN_IF_ERROR(progress_.Advance(expected, 1));
            continue;
          }
          if (copied.code() == Code::kCorruption)
            return Status::Corruption(fmt::format("{}: {}", path, copied.message()));
          if (copied.code() != Code::kInvalidArgument && copied.code() != Code::kNotSupported) {
            return AddContext(copied, item.dest);
          }
        }
      }
      SLABFS_RETURN_IF_ERROR(DecodeChunk(a.codecs, stored, expected, path, &raw));
      if (a.big_endian) SwapBytes(raw.data(), raw.size(), item_size);
      const char* data = raw.data();
      if (!a.transpose.empty()) {
        moved.resize(raw.size());
        Untranspose(raw.data(), a.chunks, a.transpose, item_size, moved.data());
        data = moved.data();
      }
      bool whole = true;
      for (size_t d = 0; d < rank; ++d) {
        start[d] = c[d] * a.chunks[d];
        count[d] = std::min(a.chunks[d], a.shape[d] - start[d]);
        whole &= count[d] == a.chunks[d];
      }
      Status s;
      if (whole) {
        s = ds->Write(Slab::Box(start, count), data);
      } else {
        // An edge chunk: Zarr stores it whole; only the part inside the
        // shape is written.
        MemSpace mem{a.chunks, Slab::Box(zero, count)};
        s = ds->Write(Slab::Box(start, count), data, &mem);
      }
      SLABFS_RETURN_IF_ERROR(AddContext(s, item.dest));
      SLABFS_RETURN_IF_ERROR(progress_.Advance(expected, 1));
    }
    return Status::OK();
  }

  const TreeImportOptions& o_;
  Container& dest_;
  Progress& progress_;
  std::ostream& out_;
  bool v3_ = false;
  std::vector<Item> items_;
  std::set<std::pair<dev_t, ino_t>> visited_;
};

}  // namespace

Status ImportZarr(const TreeImportOptions& o, Container& dest, Progress& progress, std::ostream& out) {
  ZarrImporter importer(o, dest, progress, out);
  return importer.Run();
}

}  // namespace slabfs::tools::convert
