// Container -> Zarr v2 / v3 directory store (see convert.h and
// docs/interop.md).
//
// Every dataset becomes an array with the dataset's chunk shape, so each
// stored slabfs chunk becomes one Zarr chunk: read whole through the cache,
// padded with the fill value where it reaches past the shape (Zarr stores
// edge chunks full-size), encoded and written as one file. Chunks the
// dataset does not store (and, for a sparse dataset, chunks without a
// defined element) are not written, so Zarr reads them as the fill value.
// Memory holds one chunk at a time. A dataset that stands for a scalar
// (scalar.h) becomes a 0-d array.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <utility>
#include <vector>

#include <boost/filesystem.hpp>
#include <fmt/format.h>

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
  return parent == "/" ? fmt::format("/{}", name) : fmt::format("{}/{}", parent, name);
}

Status MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoStatus(path, errno);
  return Status::OK();
}

Status WriteFile(const std::string& path, std::string_view data) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(path, errno);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      close(fd);
      return ErrnoStatus(path, e);
    }
    done += static_cast<size_t>(n);
  }
  if (close(fd) != 0) return ErrnoStatus(path, errno);
  return Status::OK();
}

class ZarrExporter {
 public:
  ZarrExporter(const TreeExportOptions& o, Format f, const Container& src, Progress& progress,
               std::ostream& out)
      : o_(o), format_(f == Format::kZarr3 ? 3 : 2), src_(src), progress_(progress), out_(out) {}

  Status Run(const std::string& target) {
    auto id = src_.Resolve(o_.from);
    if (!id) return AddContext(id.error(), o_.from);
    auto st = src_.Stat(*id);
    if (!st) return AddContext(st.error(), o_.from);
    uint64_t bytes = 0, chunks = 0;
    std::set<ObjectId> seen;
    SLABFS_RETURN_IF_ERROR(Totals(*id, st->kind, o_.from, seen, &bytes, &chunks));
    progress_.SetTotal(bytes, chunks);
    seen.clear();
    SLABFS_RETURN_IF_ERROR(st->kind == ObjectKind::kGroup ? ExportGroup(*id, target, o_.from, seen)
                                                          : ExportArray(*id, target, o_.from));
    // One sync for the whole tree before the driver renames it into place.
    int fd = open(target.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus(target, errno);
    const int rc = syncfs(fd);
    const int e = errno;
    close(fd);
    if (rc != 0) return ErrnoStatus(target, e);
    return Status::OK();
  }

 private:
  // The chunk bytes and chunks the export writes, for the progress bar.
  Status Totals(ObjectId id, ObjectKind kind, const std::string& path, std::set<ObjectId>& seen,
                uint64_t* bytes, uint64_t* chunks) {
    if (kind == ObjectKind::kDataset) {
      auto ds = src_.OpenDataset(id);
      if (!ds) return AddContext(ds.error(), path);
      const DatasetInfo info = ds->info();
      uint64_t chunk_bytes = ItemSize(info.dtype);
      for (uint64_t c : info.chunks) chunk_bytes *= c;
      *bytes += info.allocated_chunks * chunk_bytes;
      *chunks += info.allocated_chunks;
      return Status::OK();
    }
    if (!seen.insert(id).second) {
      return Status::Corruption(fmt::format("{}: the group tree has a cycle", path));
    }
    auto children = src_.List(id);
    if (!children) return AddContext(children.error(), path);
    for (const Entry& e : *children) {
      SLABFS_RETURN_IF_ERROR(Totals(e.id, e.kind, JoinPath(path, e.name), seen, bytes, chunks));
    }
    return Status::OK();
  }

  // A child name that a Zarr reader would take for metadata.
  bool ClashesWithMetadata(std::string_view name) const {
    return format_ == 2 ? name.starts_with(".z") : name == "zarr.json";
  }

  // The attributes `names` of the object as Zarr JSON; the dimension
  // names, when they are a JSON list of one name per dimension, go to
  // `dimension_names` (v3).
  Result<Json> AttributesOf(ObjectId id, const std::string& path,
                            const std::vector<std::string>& names, size_t rank,
                            std::optional<Json>* dimension_names) {
    Json attrs = Json::object();
    for (const std::string& name : names) {
      auto a = src_.GetAttribute(id, name);
      if (!a) return Err(AddContext(a.error(), path));
      if (!IsUtf8(name) || (a->kind == Attribute::Kind::kString && !IsUtf8(a->data))) {
        // JSON holds only Unicode text: DumpJson writes U+FFFD instead.
        out_ << fmt::format("note: attribute {} of {} is not UTF-8 text; its other bytes are "
                            "written as U+FFFD\n",
                            Json(name).dump(-1, ' ', false, Json::error_handler_t::replace), path);
      }
      if (name == kDimensionsAttribute && a->kind == Attribute::Kind::kString) {
        // xarray wants a list; slabfs keeps it as the list's JSON text.
        auto list = ParseJson(a->data, name);
        bool names_only = list && list->is_array();
        if (names_only) {
          for (const Json& n : *list) names_only &= n.is_string() || (format_ == 3 && n.is_null());
        }
        if (names_only && format_ == 3 && dimension_names && list->size() == rank) {
          *dimension_names = *list;
          continue;
        }
        if (names_only) {
          attrs[name] = *list;
          continue;
        }
      }
      attrs[name] = AttributeToJson(*a);
    }
    return attrs;
  }

  Status ExportGroup(ObjectId id, const std::string& dir, const std::string& path,
                     std::set<ObjectId>& seen) {
    if (!seen.insert(id).second) {
      return Status::Corruption(fmt::format("{}: the group tree has a cycle", path));
    }
    SLABFS_RETURN_IF_ERROR(MakeDir(dir));
    auto names = src_.ListAttributes(id);
    if (!names) return AddContext(names.error(), path);
    SLABFS_ASSIGN_OR_RETURN(Json attrs, AttributesOf(id, path, *names, 0, nullptr));
    if (format_ == 2) {
      SLABFS_RETURN_IF_ERROR(WriteFile(dir + "/.zgroup", DumpJson(GroupMetadata(2, attrs))));
      if (!attrs.empty()) SLABFS_RETURN_IF_ERROR(WriteFile(dir + "/.zattrs", DumpJson(attrs)));
    } else {
      SLABFS_RETURN_IF_ERROR(WriteFile(dir + "/zarr.json", DumpJson(GroupMetadata(3, attrs))));
    }
    auto children = src_.List(id);
    if (!children) return AddContext(children.error(), path);
    for (const Entry& e : *children) {
      const std::string child = JoinPath(path, e.name);
      if (ClashesWithMetadata(e.name)) {
        return Status::NotSupported(fmt::format(
            "{}: its name would read as Zarr metadata; rename it to export this tree", child));
      }
      SLABFS_RETURN_IF_ERROR(e.kind == ObjectKind::kGroup
                                 ? ExportGroup(e.id, dir + "/" + e.name, child, seen)
                                 : ExportArray(e.id, dir + "/" + e.name, child));
    }
    return Status::OK();
  }

  Status ExportArray(ObjectId id, const std::string& dir, const std::string& path) {
    auto ds = src_.OpenDataset(id);
    if (!ds) return AddContext(ds.error(), path);
    const DatasetInfo info = ds->info();
    const size_t rank = info.shape.size();
    const ExportEncoding enc = EncodingFor(info, format_);
    if (!enc.note.empty()) out_ << fmt::format("{}: {}\n", path, enc.note);

    auto names = src_.ListAttributes(id);
    if (!names) return AddContext(names.error(), path);
    const bool scalar = IsExportedScalar(info, *names);
    std::optional<Json> dimension_names;
    SLABFS_ASSIGN_OR_RETURN(Json attrs, AttributesOf(id, path, *names, scalar ? 0 : rank,
                                                     &dimension_names));
    DatasetInfo shown = info;  // the shape and chunks the metadata gives
    if (scalar) {
      shown.shape = shown.chunks = {};
      attrs.erase(std::string(kScalarAttribute));
      // xarray wants the (empty) dimension list of a 0-d variable.
      if (!dimension_names && !attrs.contains(kDimensionsAttribute)) {
        if (format_ == 3) dimension_names = Json::array();
        else attrs[std::string(kDimensionsAttribute)] = Json::array();
      }
    }
    if (info.max_shape != info.shape) {
      Json max = Json::array();
      for (uint64_t d : info.max_shape) {
        if (d == kUnlimited) max.push_back(nullptr);
        else max.push_back(d);
      }
      attrs[std::string(kMaxShapeAttribute)] = max;
    }
    SLABFS_RETURN_IF_ERROR(MakeDir(dir));
    const Json meta = ArrayMetadata(shown, enc, format_, attrs, dimension_names);
    if (format_ == 2) {
      SLABFS_RETURN_IF_ERROR(WriteFile(dir + "/.zarray", DumpJson(meta)));
      if (!attrs.empty()) SLABFS_RETURN_IF_ERROR(WriteFile(dir + "/.zattrs", DumpJson(attrs)));
    } else {
      SLABFS_RETURN_IF_ERROR(WriteFile(dir + "/zarr.json", DumpJson(meta)));
    }
    if (info.num_elements == 0) return Status::OK();

    auto stored = ds->StoredChunks();
    if (!stored) return AddContext(stored.error(), path);
    std::vector<Dims> chunks;
    Dims start(rank), count(rank), zero(rank, 0);
    // The box of chunk `c` inside the shape; false when it lies outside (a
    // chunk cut by a shrink may still be stored).
    auto box_of = [&](const Dims& c) {
      bool whole = true;
      for (size_t d = 0; d < rank; ++d) {
        start[d] = c[d] * info.chunks[d];
        if (start[d] >= info.shape[d]) return std::optional<bool>();
        count[d] = std::min(info.chunks[d], info.shape[d] - start[d]);
        whole &= count[d] == info.chunks[d];
      }
      return std::optional<bool>(whole);
    };
    for (const StoredChunk& ch : *stored) {
      if (ch.coords.size() != rank || !box_of(ch.coords)) continue;
      if (info.sparse) {
        auto defined = ds->Defined(Slab::Box(start, count));
        if (!defined) return AddContext(defined.error(), path);
        if (defined->empty()) continue;
      }
      chunks.push_back(ch.coords);
    }
    std::sort(chunks.begin(), chunks.end());
    if (info.sparse) {
      out_ << fmt::format("{}: sparse; {} chunk{} with defined elements written, undefined "
                          "elements read as the fill value\n",
                          path, chunks.size(), chunks.size() == 1 ? "" : "s");
    }

    const size_t item = ItemSize(info.dtype);
    uint64_t chunk_elements = 1;
    for (uint64_t c : info.chunks) chunk_elements *= c;
    const size_t chunk_bytes = static_cast<size_t>(chunk_elements) * item;
    ZarrArray keys;
    keys.scalar = scalar;
    keys.key_prefix_c = format_ == 3;
    keys.separator = format_ == 3 ? '/' : '.';
    std::set<std::string> made_dirs;
    for (const Dims& c : chunks) {
      const bool whole = *box_of(c);
      std::string raw(chunk_bytes, '\0');
      Status s;
      if (whole) {
        s = ds->Read(Slab::Box(start, count), raw.data());
      } else {
        // Zarr stores edge chunks full-size: the part past the shape is fill.
        for (size_t i = 0; i < chunk_bytes; i += item) std::memcpy(raw.data() + i, info.fill.data(), item);
        MemSpace mem{info.chunks, Slab::Box(zero, count)};
        s = ds->Read(Slab::Box(start, count), raw.data(), &mem);
      }
      SLABFS_RETURN_IF_ERROR(AddContext(s, path));
      auto encoded = EncodeChunk(enc.codecs, std::move(raw));
      if (!encoded) return AddContext(encoded.error(), path);
      const std::string key = ChunkKey(keys, c);
      // v3 keys are nested directories: c/0/1.
      for (size_t slash = key.find('/'); slash != std::string::npos; slash = key.find('/', slash + 1)) {
        const std::string sub = dir + "/" + key.substr(0, slash);
        if (made_dirs.insert(sub).second) SLABFS_RETURN_IF_ERROR(MakeDir(sub));
      }
      SLABFS_RETURN_IF_ERROR(WriteFile(dir + "/" + key, *encoded));
      SLABFS_RETURN_IF_ERROR(progress_.Advance(chunk_bytes, 1));
    }
    return Status::OK();
  }

  const TreeExportOptions& o_;
  const int format_;
  const Container& src_;
  Progress& progress_;
  std::ostream& out_;
};

}  // namespace

Status ExportZarr(const TreeExportOptions& o, Format format, const Container& src,
                  const std::string& target, Progress& progress, std::ostream& out) {
  ZarrExporter exporter(o, format, src, progress, out);
  return exporter.Run(target);
}

}  // namespace slabfs::tools::convert
