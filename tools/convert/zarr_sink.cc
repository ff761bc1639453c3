// A Zarr v2 / v3 directory store as the destination of a store copy (slab
// export; see docs/interop.md).
//
// Every dataset becomes an array with the dataset's chunk shape, so each
// chunk the driver hands over becomes one Zarr chunk: whole, padded with
// the fill value where it reaches past the shape (Zarr stores edge chunks
// full-size), encoded and written as one file. The v2 fill_value is the
// _FillValue attribute (the missing-value marker xarray reads it as) or
// null, never the storage fill value (FillForExport); where it is not the
// storage fill value, every chunk is written, else chunks the source does
// not store (and, for a sparse dataset, chunks without a defined element)
// are not, and Zarr reads them as the fill value. v2 stores get
// consolidated metadata (.zmetadata). Record variables of one group that
// share a growable named dimension are exported at its longest length,
// padded with their _FillValue (else the fill value), as netCDF reads them. A dataset that stands
// for a scalar (scalar.h) becomes a 0-d array.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "engine/io/os_error.h"
#include "tools/convert/scalar.h"
#include "tools/convert/store_copy.h"
#include "tools/convert/zarr_codecs.h"
#include "tools/convert/zarr_json.h"
#include "tools/convert/zarr_metadata.h"

namespace slabfs::tools::convert {
namespace {

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

class ZarrWriter final : public DatasetWriter {
 public:
  ZarrWriter(ChunkGrid grid, ExportEncoding enc, int format, bool scalar, std::string dir, std::string path,
             bool sparse, size_t item, CopyReport& report)
      : grid_(std::move(grid)),
        enc_(std::move(enc)),
        item_(item),
        dir_(std::move(dir)),
        path_(std::move(path)),
        sparse_(sparse),
        report_(report) {
    keys_.scalar = scalar;
    keys_.key_prefix_c = format == 3;
    keys_.separator = format == 3 ? '/' : '.';
  }
  const ChunkGrid& grid() const override { return grid_; }

  Status Write(const Dims& start, const Dims& count, const char* data) override {
    uint64_t n = 1;
    for (uint64_t c : count) n *= c;
    auto encoded = EncodeChunk(enc_.codecs, std::string(data, static_cast<size_t>(n) * item_));
    if (!encoded) return encoded.error();
    Dims c(start.size());
    for (size_t k = 0; k < start.size(); ++k) c[k] = start[k] / grid_.chunks[k];
    const std::string key = ChunkKey(keys_, c);
    // v3 keys are nested directories: c/0/1.
    for (size_t slash = key.find('/'); slash != std::string::npos; slash = key.find('/', slash + 1)) {
      const std::string sub = dir_ + "/" + key.substr(0, slash);
      if (made_dirs_.insert(sub).second) SLABFS_RETURN_IF_ERROR(MakeDir(sub));
    }
    ++written_;
    return WriteFile(dir_ + "/" + key, *encoded);
  }

  Status Close() override {
    if (sparse_) {
      report_.out() << fmt::format("{}: sparse; {} chunk{} written, undefined elements read as the fill value\n", path_,
                                   written_, written_ == 1 ? "" : "s");
    }
    return Status::OK();
  }

 private:
  ChunkGrid grid_;
  ExportEncoding enc_;
  size_t item_;
  ZarrArray keys_;
  std::string dir_, path_;
  bool sparse_;
  CopyReport& report_;
  std::set<std::string> made_dirs_;
  uint64_t written_ = 0;
};

class ZarrSinkImpl final : public CopySink {
 public:
  ZarrSinkImpl(std::string target, int format, CopyReport& report)
      : format_(format), root_(std::move(target)), report_(report) {}

  Status Begin(CopyPlan& plan) override {
    root_is_group_ = !plan.groups.empty();
    // One dataset alone is the store's root array.
    if (!root_is_group_ && plan.datasets.size() == 1) plan.datasets[0].dest = "/";
    for (const CopyGroup& g : plan.groups) SLABFS_RETURN_IF_ERROR(CheckName(g.dest, g.src));
    for (const CopyDataset& d : plan.datasets) SLABFS_RETURN_IF_ERROR(CheckName(d.dest, d.src));
    PadRecordVariables(plan);
    return Status::OK();
  }

  Status MakeGroup(const CopyGroup& g) override {
    const std::string dir = DirOf(g.dest);
    SLABFS_RETURN_IF_ERROR(MakeDir(dir));
    Json attrs = AttributesOf(g.attrs, g.src, 0, nullptr);
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
    return Status::OK();
  }

  Result<std::unique_ptr<DatasetWriter>> MakeDataset(const CopyDataset& d) override {
    auto pad = padded_.find(&d);
    return ExportArray(d, DirOf(d.dest), d.src, pad == padded_.end() ? nullptr : &pad->second);
  }

  Status Finish() override {
    if (format_ == 2 && root_is_group_) {
      // Consolidated metadata, as zarr.consolidate_metadata writes it:
      // xr.open_zarr and zarr.open_consolidated read the whole tree's
      // documents from this one file.
      const Json z = {{"zarr_consolidated_format", 1}, {"metadata", consolidated_}};
      SLABFS_RETURN_IF_ERROR(WriteFile(root_ + "/.zmetadata", DumpJson(z)));
    }
    // One sync for the whole tree before the driver renames it into place.
    int fd = open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return engine::StatusFromErrno(errno, root_);
    const int rc = syncfs(fd);
    const int e = errno;
    close(fd);
    if (rc != 0) return engine::StatusFromErrno(e, root_);
    return Status::OK();
  }

 private:
  std::string DirOf(const std::string& dest) const { return dest == "/" ? root_ : root_ + dest; }

  Status CheckName(const std::string& dest, const std::string& src) const {
    if (dest == "/") return Status::OK();
    if (ClashesWithMetadata(BaseName(dest))) {
      return Status::NotSupported(
          fmt::format("{}: its name would read as Zarr metadata; rename it to export this tree", src));
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
  Json AttributesOf(const Attrs& attributes, const std::string& path, size_t rank,
                    std::optional<Json>* dimension_names) {
    Json attrs = Json::object();
    for (const auto& [name, value] : attributes) {
      const Attribute* a = &value;
      if (!IsUtf8(name) || (a->kind == Attribute::Kind::kString && !IsUtf8(a->data))) {
        // JSON holds only Unicode text: DumpJson writes U+FFFD instead.
        report_.out() << fmt::format(
            "note: attribute {} of {} is not UTF-8 text; its other bytes are "
            "written as U+FFFD\n",
            Json(name).dump(-1, ' ', false, Json::error_handler_t::replace), path);
      }
      if (name == kDimensionsAttribute) {
        // xarray wants a list; slabfs keeps it as the list's JSON text.
        if (std::optional<Json> list = DimensionNamesList(*a, format_)) {
          if (format_ == 3 && dimension_names && list->size() == rank) {
            *dimension_names = std::move(*list);
          } else {
            attrs[name] = std::move(*list);
          }
          continue;
        }
      }
      attrs[name] = AttributeToJson(*a);
    }
    return attrs;
  }

  // The shape an array is exported with: its own, or, for an array whose
  // first dimensions can grow and that shares a named dimension with longer
  // arrays of its group (netCDF record variables of unequal length), that
  // longer length, so that every array of the group agrees on each
  // dimension as xarray requires. The rows it gains read as the fill value,
  // as netCDF pads a short record variable.
  void PadRecordVariables(const CopyPlan& plan) {
    struct Named {
      const CopyDataset* d;
      std::vector<std::string> dims;
    };
    std::map<std::string, std::vector<Named>> by_group;
    std::map<std::pair<std::string, std::string>, uint64_t> longest;  // (group, dimension) -> length
    for (const CopyDataset& d : plan.datasets) {
      if (d.scalar) continue;
      for (const auto& [name, value] : d.attrs) {
        if (name != kDimensionsAttribute || value.kind != Attribute::Kind::kString) continue;
        auto list = ParseJson(value.data, kDimensionsAttribute);
        if (!list || !list->is_array() || list->size() != d.info.dataset.shape.size()) continue;
        Named n{&d, {}};
        for (const Json& j : *list) n.dims.push_back(j.is_string() ? j.get<std::string>() : "");
        for (size_t k = 0; k < n.dims.size(); ++k) {
          if (n.dims[k].empty()) continue;
          uint64_t& l = longest[{d.group, n.dims[k]}];
          l = std::max(l, d.info.dataset.shape[k]);
        }
        by_group[d.group].push_back(std::move(n));
      }
    }
    for (const auto& [group, arrays] : by_group) {
      for (const Named& n : arrays) {
        const DatasetInfo& info = n.d->info.dataset;
        Dims padded = info.shape;
        bool changed = false;
        for (size_t k = 0; k < n.dims.size(); ++k) {
          if (n.dims[k].empty()) continue;
          const uint64_t want = longest[{group, n.dims[k]}];
          if (want > info.shape[k] && info.max_shape[k] > info.shape[k]) {  // only a dimension that can grow
            padded[k] = want;
            changed = true;
          }
        }
        if (changed) padded_.emplace(n.d, std::move(padded));
      }
    }
  }

  // Records a metadata document for .zmetadata (v2's consolidated metadata).
  void Consolidate(const std::string& dir, const char* file, const Json& doc) {
    std::string key = dir.size() > root_.size() ? dir.substr(root_.size() + 1) + "/" : "";
    consolidated_[key + file] = doc;
  }

  Result<std::unique_ptr<DatasetWriter>> ExportArray(const CopyDataset& d, const std::string& dir,
                                                     const std::string& path, const Dims* padded) {
    DatasetInfo info = d.info.dataset;
    if (d.info.layout != StoreLayout::kChunked) info.chunks = BoundedChunks(info.shape, info.dtype);
    const size_t rank = info.shape.size();
    const ExportEncoding enc = EncodingFor(info, format_);
    if (!enc.note.empty()) report_.out() << fmt::format("{}: {}\n", path, enc.note);
    const bool scalar = d.scalar;
    std::optional<Json> dimension_names;
    Json attrs = AttributesOf(d.attrs, path, scalar ? 0 : rank, &dimension_names);
    const Attribute* marker = nullptr;
    for (const auto& [name, value] : d.attrs) {
      if (name == kFillValueAttribute) marker = &value;
    }
    const ExportFill fill = FillForExport(info, marker, format_);
    if (fill.marker_used) attrs.erase(std::string(kFillValueAttribute));
    const Dims out_shape = padded != nullptr && !scalar ? *padded : info.shape;
    DatasetInfo shown = info;  // the shape and chunks the metadata gives
    shown.shape = out_shape;
    if (scalar) {
      shown.shape = shown.chunks = {};
      // xarray wants the (empty) dimension list of a 0-d variable.
      if (!dimension_names && !attrs.contains(kDimensionsAttribute)) {
        if (format_ == 3)
          dimension_names = Json::array();
        else
          attrs[std::string(kDimensionsAttribute)] = Json::array();
      }
    }
    Json max_shape;  // null unless the max shape is not the shape
    if (!scalar && info.max_shape != out_shape) {
      max_shape = Json::array();
      for (size_t k = 0; k < rank; ++k) {
        const uint64_t m = info.max_shape[k];
        if (m == kUnlimited)
          max_shape.push_back(nullptr);
        else
          max_shape.push_back(std::max(m, out_shape[k]));
      }
      if (format_ == 3) attrs[std::string(kMaxShapeAttribute)] = max_shape;
    }
    SLABFS_RETURN_IF_ERROR_R(MakeDir(dir));
    Json meta = ArrayMetadata(shown, enc, format_, attrs, dimension_names, fill.value);
    if (format_ == 2 && !max_shape.is_null()) meta[std::string(kMaxShapeAttribute)] = max_shape;
    if (format_ == 2) {
      SLABFS_RETURN_IF_ERROR_R(WriteFile(dir + "/.zarray", DumpJson(meta)));
      Consolidate(dir, ".zarray", meta);
      if (!attrs.empty()) {
        SLABFS_RETURN_IF_ERROR_R(WriteFile(dir + "/.zattrs", DumpJson(attrs)));
        Consolidate(dir, ".zattrs", attrs);
      }
    } else {
      SLABFS_RETURN_IF_ERROR_R(WriteFile(dir + "/zarr.json", DumpJson(meta)));
    }
    ChunkGrid grid;
    grid.chunks = info.chunks;
    grid.shape = out_shape;
    grid.every_chunk = fill.every_chunk;
    grid.skip_undefined = true;
    grid.padded = true;
    // The rows a record variable gains read as missing, as netCDF reads a
    // short record variable's (its storage fill is its _FillValue): the
    // marker, where there is one its type holds. Where that is not what
    // fill_value says (v3's fill_value is the storage fill value), every
    // chunk is written, so that no padded chunk is left to read as it.
    if (marker != nullptr && padded != nullptr && !scalar) {
      if (std::optional<std::string> bytes = ElementAs(info.dtype, *marker)) {
        if (*bytes != info.fill) grid.every_chunk = true;
        grid.pad_value = std::move(*bytes);
      }
    }
    const bool sparse = info.sparse && !grid.every_chunk;
    return std::unique_ptr<DatasetWriter>(
        new ZarrWriter(std::move(grid), enc, format_, scalar, dir, path, sparse, ItemSize(info.dtype), report_));
  }

  const int format_;
  std::string root_;  // the store's directory
  CopyReport& report_;
  bool root_is_group_ = true;
  Json consolidated_ = Json::object();  // v2: every document, for .zmetadata
  std::map<const CopyDataset*, Dims> padded_;
};

}  // namespace

std::unique_ptr<CopySink> ZarrSink(const std::string& target, int zarr_format, CopyReport& report) {
  return std::make_unique<ZarrSinkImpl>(target, zarr_format, report);
}

}  // namespace slabfs::tools::convert
