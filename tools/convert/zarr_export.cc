// Container -> Zarr v2 / v3 directory store (see convert.h and
// docs/interop.md).
//
// Every dataset becomes an array with the dataset's chunk shape, so each
// stored slabfs chunk becomes one Zarr chunk: read whole through the cache,
// padded with the fill value where it reaches past the shape (Zarr stores
// edge chunks full-size), encoded and written as one file. The v2
// fill_value is the _FillValue attribute (the missing-value marker xarray
// reads it as) or null, never the storage fill value (FillForExport); where
// it is not the storage fill value, every chunk is written, else chunks the
// dataset does not store (and, for a sparse dataset, chunks without a
// defined element) are not, and Zarr reads them as the fill value. v2
// stores get consolidated metadata (.zmetadata). Record variables of one
// group that share a growable named dimension are exported at its longest
// length, padded with the fill value, as netCDF reads them.
// Memory holds one chunk at a time. A dataset that stands for a scalar
// (scalar.h) becomes a 0-d array.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
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

uint64_t CeilDivide(uint64_t a, uint64_t b) { return b == 0 ? 0 : a / b + (a % b != 0 ? 1 : 0); }

std::string JoinPath(std::string_view parent, std::string_view name) {
  return parent == "/" ? fmt::format("/{}", name) : fmt::format("{}/{}", parent, name);
}

Status MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return engine::StatusFromErrno(errno, path);
  return Status::OK();
}

Status WriteFile(const std::string& path, std::string_view data) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return engine::StatusFromErrno(errno, path);
  Status s = engine::WriteFully(fd, data.data(), data.size(), path);
  if (!s.ok()) {
    close(fd);
    return s;
  }
  if (close(fd) != 0) return engine::StatusFromErrno(errno, path);
  return Status::OK();
}

class ZarrExporter {
 public:
  ZarrExporter(const TreeExportOptions& o, Format f, const Container& src, Progress& progress, std::ostream& out)
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
    root_ = target;
    SLABFS_RETURN_IF_ERROR(st->kind == ObjectKind::kGroup ? ExportGroup(*id, target, o_.from, seen)
                                                          : ExportArray(*id, target, o_.from));
    if (format_ == 2 && st->kind == ObjectKind::kGroup) {
      // Consolidated metadata, as zarr.consolidate_metadata writes it:
      // xr.open_zarr and zarr.open_consolidated read the whole tree's
      // documents from this one file.
      const Json z = {{"zarr_consolidated_format", 1}, {"metadata", consolidated_}};
      SLABFS_RETURN_IF_ERROR(WriteFile(target + "/.zmetadata", DumpJson(z)));
    }
    // One sync for the whole tree before the driver renames it into place.
    int fd = open(target.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return engine::StatusFromErrno(errno, target);
    const int rc = syncfs(fd);
    const int e = errno;
    close(fd);
    if (rc != 0) return engine::StatusFromErrno(e, target);
    return Status::OK();
  }

 private:
  // The chunk bytes and chunks the export writes, for the progress bar.
  Status Totals(ObjectId id, ObjectKind kind, const std::string& path, std::set<ObjectId>& seen, uint64_t* bytes,
                uint64_t* chunks) {
    if (kind == ObjectKind::kDataset) {
      auto ds = src_.OpenDataset(id);
      if (!ds) return AddContext(ds.error(), path);
      const DatasetInfo info = ds->info();
      uint64_t chunk_bytes = ItemSize(info.dtype);
      for (uint64_t c : info.chunks) chunk_bytes *= c;
      auto marker = src_.GetAttribute(id, kFillValueAttribute);
      uint64_t n = info.allocated_chunks;
      if (FillForExport(info, marker ? &*marker : nullptr, format_).every_chunk) {
        n = 1;  // every chunk of the grid (padding of record variables not counted)
        for (size_t d = 0; d < info.shape.size(); ++d) n *= CeilDivide(info.shape[d], info.chunks[d]);
      }
      *bytes += n * chunk_bytes;
      *chunks += n;
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
  Result<Json> AttributesOf(ObjectId id, const std::string& path, const std::vector<std::string>& names, size_t rank,
                            std::optional<Json>* dimension_names) {
    Json attrs = Json::object();
    for (const std::string& name : names) {
      auto a = src_.GetAttribute(id, name);
      if (!a) return Err(AddContext(a.error(), path));
      if (!IsUtf8(name) || (a->kind == Attribute::Kind::kString && !IsUtf8(a->data))) {
        // JSON holds only Unicode text: DumpJson writes U+FFFD instead.
        out_ << fmt::format(
            "note: attribute {} of {} is not UTF-8 text; its other bytes are "
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

  Status ExportGroup(ObjectId id, const std::string& dir, const std::string& path, std::set<ObjectId>& seen) {
    if (!seen.insert(id).second) {
      return Status::Corruption(fmt::format("{}: the group tree has a cycle", path));
    }
    SLABFS_RETURN_IF_ERROR(MakeDir(dir));
    auto names = src_.ListAttributes(id);
    if (!names) return AddContext(names.error(), path);
    SLABFS_ASSIGN_OR_RETURN(Json attrs, AttributesOf(id, path, *names, 0, nullptr));
    if (format_ == 2) {
      SLABFS_RETURN_IF_ERROR(WriteFile(dir + "/.zgroup", DumpJson(GroupMetadata(2, attrs))));
      Consolidate(dir, ".zgroup", GroupMetadata(2, attrs));
      if (!attrs.empty()) {
        SLABFS_RETURN_IF_ERROR(WriteFile(dir + "/.zattrs", DumpJson(attrs)));
        Consolidate(dir, ".zattrs", attrs);
      }
    } else {
      SLABFS_RETURN_IF_ERROR(WriteFile(dir + "/zarr.json", DumpJson(GroupMetadata(3, attrs))));
    }
    auto children = src_.List(id);
    if (!children) return AddContext(children.error(), path);
    SLABFS_ASSIGN_OR_RETURN(PaddedShapes padded, PadRecordVariables(*children, path));
    for (const Entry& e : *children) {
      const std::string child = JoinPath(path, e.name);
      if (ClashesWithMetadata(e.name)) {
        return Status::NotSupported(
            fmt::format("{}: its name would read as Zarr metadata; rename it to export this tree", child));
      }
      auto pad = padded.find(e.id);
      SLABFS_RETURN_IF_ERROR(e.kind == ObjectKind::kGroup ? ExportGroup(e.id, dir + "/" + e.name, child, seen)
                                                          : ExportArray(e.id, dir + "/" + e.name, child,
                                                                        pad == padded.end() ? nullptr : &pad->second));
    }
    return Status::OK();
  }

  // The shape an array is exported with: its own, or, for an array whose
  // first dimensions can grow and that shares a named dimension with longer
  // arrays of its group (netCDF record variables of unequal length), that
  // longer length, so that every array of the group agrees on each
  // dimension as xarray requires. The rows it gains read as the fill value,
  // as netCDF pads a short record variable.
  using PaddedShapes = std::map<ObjectId, Dims>;
  Result<PaddedShapes> PadRecordVariables(const std::vector<Entry>& children, const std::string& path) {
    struct Named {
      ObjectId id;
      Dims shape;
      Dims max_shape;
      std::vector<std::string> dims;
    };
    std::vector<Named> arrays;
    std::map<std::string, uint64_t> longest;
    for (const Entry& e : children) {
      if (e.kind != ObjectKind::kDataset) continue;
      auto a = src_.GetAttribute(e.id, kDimensionsAttribute);
      if (!a || a->kind != Attribute::Kind::kString) continue;
      auto list = ParseJson(a->data, kDimensionsAttribute);
      if (!list || !list->is_array()) continue;
      auto ds = src_.OpenDataset(e.id);
      if (!ds) return Err(AddContext(ds.error(), JoinPath(path, e.name)));
      const DatasetInfo info = ds->info();
      if (list->size() != info.shape.size()) continue;
      Named n{e.id, info.shape, info.max_shape, {}};
      for (const Json& name : *list) n.dims.push_back(name.is_string() ? name.get<std::string>() : "");
      for (size_t d = 0; d < n.dims.size(); ++d) {
        if (!n.dims[d].empty()) longest[n.dims[d]] = std::max(longest[n.dims[d]], n.shape[d]);
      }
      arrays.push_back(std::move(n));
    }
    PaddedShapes out;
    for (const Named& n : arrays) {
      Dims padded = n.shape;
      bool changed = false;
      for (size_t d = 0; d < n.dims.size(); ++d) {
        if (n.dims[d].empty()) continue;
        const uint64_t want = longest[n.dims[d]];
        if (want > n.shape[d] && n.max_shape[d] > n.shape[d]) {  // only a dimension that can grow
          padded[d] = want;
          changed = true;
        }
      }
      if (changed) out.emplace(n.id, std::move(padded));
    }
    return out;
  }

  // Records a metadata document for .zmetadata (v2's consolidated metadata).
  void Consolidate(const std::string& dir, const char* file, const Json& doc) {
    std::string key = dir.size() > root_.size() ? dir.substr(root_.size() + 1) + "/" : "";
    consolidated_[key + file] = doc;
  }

  Status ExportArray(ObjectId id, const std::string& dir, const std::string& path, const Dims* padded = nullptr) {
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
    SLABFS_ASSIGN_OR_RETURN(Json attrs, AttributesOf(id, path, *names, scalar ? 0 : rank, &dimension_names));
    std::optional<Attribute> marker;
    if (std::find(names->begin(), names->end(), kFillValueAttribute) != names->end()) {
      auto m = src_.GetAttribute(id, kFillValueAttribute);
      if (m) marker = *m;
    }
    const ExportFill fill = FillForExport(info, marker ? &*marker : nullptr, format_);
    if (fill.marker_used) attrs.erase(std::string(kFillValueAttribute));
    const Dims out_shape = padded != nullptr && !scalar ? *padded : info.shape;
    DatasetInfo shown = info;  // the shape and chunks the metadata gives
    shown.shape = out_shape;
    if (scalar) {
      shown.shape = shown.chunks = {};
      attrs.erase(std::string(kScalarAttribute));
      // xarray wants the (empty) dimension list of a 0-d variable.
      if (!dimension_names && !attrs.contains(kDimensionsAttribute)) {
        if (format_ == 3)
          dimension_names = Json::array();
        else
          attrs[std::string(kDimensionsAttribute)] = Json::array();
      }
    }
    Json max_shape;  // null unless the max shape is not the shape
    if (info.max_shape != out_shape) {
      max_shape = Json::array();
      for (size_t d = 0; d < rank; ++d) {
        const uint64_t m = info.max_shape[d];
        if (m == kUnlimited)
          max_shape.push_back(nullptr);
        else
          max_shape.push_back(std::max(m, out_shape[d]));
      }
      if (format_ == 3) attrs[std::string(kMaxShapeAttribute)] = max_shape;
    }
    SLABFS_RETURN_IF_ERROR(MakeDir(dir));
    Json meta = ArrayMetadata(shown, enc, format_, attrs, dimension_names, fill.value);
    if (format_ == 2 && !max_shape.is_null()) meta[std::string(kMaxShapeAttribute)] = max_shape;
    if (format_ == 2) {
      SLABFS_RETURN_IF_ERROR(WriteFile(dir + "/.zarray", DumpJson(meta)));
      Consolidate(dir, ".zarray", meta);
      if (!attrs.empty()) {
        SLABFS_RETURN_IF_ERROR(WriteFile(dir + "/.zattrs", DumpJson(attrs)));
        Consolidate(dir, ".zattrs", attrs);
      }
    } else {
      SLABFS_RETURN_IF_ERROR(WriteFile(dir + "/zarr.json", DumpJson(meta)));
    }
    uint64_t out_elements = 1;
    for (uint64_t n : out_shape) out_elements *= n;
    if (out_elements == 0) return Status::OK();

    std::vector<Dims> chunks;
    Dims start(rank), count(rank), rcount(rank), zero(rank, 0);
    // The box of chunk `c` inside the exported shape (start, count) and the
    // part of it inside the dataset (rcount, 0 where none); nullopt when
    // it lies outside (a chunk cut by a shrink may still be stored), else
    // whether the dataset fills the whole chunk.
    auto box_of = [&](const Dims& c) {
      bool whole = true;
      for (size_t d = 0; d < rank; ++d) {
        start[d] = c[d] * info.chunks[d];
        if (start[d] >= out_shape[d]) return std::optional<bool>();
        count[d] = std::min(info.chunks[d], out_shape[d] - start[d]);
        rcount[d] = start[d] < info.shape[d] ? std::min(count[d], info.shape[d] - start[d]) : 0;
        whole &= rcount[d] == info.chunks[d];
      }
      return std::optional<bool>(whole);
    };
    if (fill.every_chunk) {
      // Every chunk of the grid: a reader would not read a missing one as
      // the dataset's fill value (see FillForExport).
      Dims c(rank, 0);
      for (bool more = true; more;) {
        chunks.push_back(c);
        more = false;
        for (size_t d = rank; d-- > 0;) {
          if (++c[d] * info.chunks[d] < out_shape[d]) {
            more = true;
            break;
          }
          c[d] = 0;
        }
      }
    } else {
      auto stored = ds->StoredChunks();
      if (!stored) return AddContext(stored.error(), path);
      for (const StoredChunk& ch : *stored) {
        if (ch.coords.size() != rank || !box_of(ch.coords)) continue;
        bool inside = true;
        for (size_t d = 0; d < rank; ++d) inside &= rcount[d] > 0;
        if (!inside) continue;
        if (info.sparse) {
          auto defined = ds->Defined(Slab::Box(start, rcount));
          if (!defined) return AddContext(defined.error(), path);
          if (defined->empty()) continue;
        }
        chunks.push_back(ch.coords);
      }
      std::sort(chunks.begin(), chunks.end());
    }
    if (info.sparse) {
      out_ << fmt::format("{}: sparse; {} chunk{} written, undefined elements read as the fill value\n", path,
                          chunks.size(), chunks.size() == 1 ? "" : "s");
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
        s = ds->Read(Slab::Box(start, rcount), raw.data());
      } else {
        // Zarr stores edge chunks full-size: the part past the dataset is fill.
        for (size_t i = 0; i < chunk_bytes; i += item) std::memcpy(raw.data() + i, info.fill.data(), item);
        bool any = true;
        for (size_t d = 0; d < rank; ++d) any &= rcount[d] > 0;
        if (any) {
          MemSpace mem{info.chunks, Slab::Box(zero, rcount)};
          s = ds->Read(Slab::Box(start, rcount), raw.data(), &mem);
        }
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
  std::string root_;                    // the store's directory
  Json consolidated_ = Json::object();  // v2: every document, for .zmetadata
  const Container& src_;
  Progress& progress_;
  std::ostream& out_;
};

}  // namespace

Status ExportZarr(const TreeExportOptions& o, Format format, const Container& src, const std::string& target,
                  Progress& progress, std::ostream& out) {
  ZarrExporter exporter(o, format, src, progress, out);
  return exporter.Run(target);
}

}  // namespace slabfs::tools::convert
