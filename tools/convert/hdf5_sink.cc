// An HDF5 / netCDF-4 file as the destination of a store copy (slab export;
// the mapping is written up in docs/interop.md).
//
// Begin sees the whole plan and decides which datasets become netCDF
// dimension scales (that needs every dataset's shape and
// _ARRAY_DIMENSIONS) and creates the file. Groups come next, then the
// placeholder dimensions, then each dataset with its attributes and the
// boxes of whole chunks the driver hands it (chunks the source never
// stored are never written, so they stay unallocated in the file and read
// as the fill value); Finish attaches the scales, closes and syncs.
#include <fcntl.h>
#include <hdf5.h>
#include <hdf5_hl.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "engine/io/os_error.h"
#include "tools/convert/hdf5_attrs.h"
#include "tools/convert/hdf5_netcdf.h"
#include "tools/convert/hdf5_util.h"
#include "tools/convert/scalar.h"
#include "tools/convert/store_copy.h"

namespace slabfs::tools::convert {
namespace {

// Creation order tracked and indexed on groups and attributes, as netCDF-4
// writes them (netCDF lists objects in creation order).
constexpr unsigned kCreationOrder = H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED;

class Hdf5Writer final : public DatasetWriter {
 public:
  Hdf5Writer(H5Handle h, ChunkGrid grid, DType dtype, std::string path, bool scalar)
      : h_(std::move(h)), grid_(std::move(grid)), dtype_(dtype), path_(std::move(path)), scalar_(scalar) {}
  const ChunkGrid& grid() const override { return grid_; }

  Status Write(const Dims& start, const Dims& count, const char* data) override {
    const std::string writing = fmt::format("{}: writing", path_);
    const hid_t memtype = Hdf5TypeOf(dtype_);
    if (scalar_) {
      return Checked(H5Dwrite(h_.get(), memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), Code::kIOError, writing);
    }
    if (!fspace_.valid()) {
      SLABFS_ASSIGN_OR_RETURN(fspace_, Checked(H5Dget_space(h_.get()), Code::kIOError, writing));
    }
    const std::vector<hsize_t> hstart = ToHsize(start), hcount = ToHsize(count);
    SLABFS_ASSIGN_OR_RETURN(
        H5Handle mspace,
        Checked(H5Screate_simple(static_cast<int>(hcount.size()), hcount.data(), nullptr), Code::kIOError, writing));
    SLABFS_RETURN_IF_ERROR(
        Checked(H5Sselect_hyperslab(fspace_.get(), H5S_SELECT_SET, hstart.data(), nullptr, hcount.data(), nullptr),
                Code::kIOError, writing));
    return Checked(H5Dwrite(h_.get(), memtype, mspace.get(), fspace_.get(), H5P_DEFAULT, data), Code::kIOError,
                   writing);
  }

  Status Close() override {
    fspace_.Reset();
    return h_.Close(path_);
  }

 private:
  H5Handle h_;
  H5Handle fspace_;
  ChunkGrid grid_;
  DType dtype_;
  std::string path_;
  bool scalar_;
};

class Hdf5SinkImpl final : public CopySink {
 public:
  Hdf5SinkImpl(std::string target, CopyReport& report) : target_(std::move(target)), report_(report) {}

  Status Begin(CopyPlan& plan) override {
    plan_ = &plan;
    std::vector<DimensionUser> users;
    for (const CopyDataset& d : plan.datasets) {
      DimensionUser u{d.dest, d.group, d.info.dataset.shape, d.info.dataset.max_shape, std::nullopt};
      if (d.scalar) u.shape = u.max_shape = {};
      for (const auto& [name, value] : d.attrs) {
        if (name == kArrayDimensions && value.kind == Attribute::Kind::kString) {
          u.dims = ParseDimensionsJson(value.data);
        }
      }
      users.push_back(std::move(u));
    }
    RenameNonCoordinateVariables(users);
    std::vector<std::string> group_paths;
    for (const CopyGroup& g : plan.groups) group_paths.push_back(g.dest);
    scales_ = PlanDimensionScales(users, group_paths);
    return CreateFile();
  }

  Status MakeGroup(const CopyGroup& g) override {
    H5Handle h(!g.create ? H5Gopen2(file_.get(), g.dest.c_str(), H5P_DEFAULT)
                         : H5Gcreate2(file_.get(), g.dest.c_str(), H5P_DEFAULT, gcpl_.get(), H5P_DEFAULT));
    if (!h.valid()) return Hdf5Error(Code::kIOError, fmt::format("creating group {}", g.dest));
    for (const auto& [name, value] : g.attrs) {
      SLABFS_RETURN_IF_ERROR(WriteHdf5Attribute(h.get(), g.dest, name, value));
    }
    return h.Close(g.dest);
  }

  Result<std::unique_ptr<DatasetWriter>> MakeDataset(const CopyDataset& d) override {
    if (!placeholders_written_) {
      for (const DimensionPlaceholder& p : scales_.placeholders) SLABFS_RETURN_IF_ERROR_R(WritePlaceholder(p));
      placeholders_written_ = true;
    }
    const size_t i = static_cast<size_t>(&d - plan_->datasets.data());
    const DatasetInfo& info = d.info.dataset;
    const bool is_scale = scales_.is_scale[i];
    std::vector<hsize_t> dims = ToHsize(info.shape), max = ToHsize(info.max_shape);
    for (hsize_t& m : max) {
      if (m == kUnlimited) m = H5S_UNLIMITED;
    }
    H5Handle space(d.scalar ? H5Screate(H5S_SCALAR)
                            : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), max.data()));
    if (!space.valid()) return Err(Hdf5Error(Code::kIOError, d.dest));
    SLABFS_ASSIGN_OR_RETURN(H5Handle dcpl, CreationList(d, d.scalar));
    SLABFS_ASSIGN_OR_RETURN(H5Handle dapl, Checked(H5Pcreate(H5P_DATASET_ACCESS), Code::kIOError, d.dest));
    // Every chunk is written whole by one write: no cache needed.
    SLABFS_RETURN_IF_ERROR_R(
        Checked(H5Pset_chunk_cache(dapl.get(), H5D_CHUNK_CACHE_NSLOTS_DEFAULT, 0, H5D_CHUNK_CACHE_W0_DEFAULT),
                Code::kIOError, d.dest));
    SLABFS_ASSIGN_OR_RETURN(H5Handle h, Checked(H5Dcreate2(file_.get(), d.dest.c_str(), Hdf5TypeOf(info.dtype),
                                                           space.get(), H5P_DEFAULT, dcpl.get(), dapl.get()),
                                                Code::kIOError, fmt::format("creating dataset {}", d.dest)));
    if (is_scale) {
      SLABFS_RETURN_IF_ERROR_R(Checked(H5DSset_scale(h.get(), BaseName(d.dest).c_str()), Code::kIOError,
                                       fmt::format("{}: making it a dimension scale", d.dest)));
    }
    for (const auto& [name, value] : d.attrs) {
      if (name == kArrayDimensions && scales_.named[i]) continue;
      // libhdf5's dimension scale attributes: a value of another type
      // under these names would mislead every reader of the file.
      const bool reserved =
          name == "DIMENSION_LIST" || name == "REFERENCE_LIST" || (is_scale && (name == "CLASS" || name == "NAME"));
      if (reserved) {
        report_.out() << fmt::format(
            "skipped attribute '{}' of {}: the dimension scales of the file use "
            "that name\n",
            name, d.src);
        continue;
      }
      std::optional<DType> as;
      if (name == "_FillValue" && value.kind == Attribute::Kind::kNumeric && value.count() == 1) {
        as = info.dtype;  // netCDF wants it in the variable's type
      }
      SLABFS_RETURN_IF_ERROR_R(WriteHdf5Attribute(h.get(), d.dest, name, value, as));
    }
    if (info.sparse) {
      report_.Note(fmt::format("{} is sparse: its undefined elements are written as the fill value {}", d.src,
                               FormatScalar(info.dtype, info.fill.data())));
    }
    ChunkGrid grid;
    grid.shape = info.shape;
    grid.chunks = d.info.layout == StoreLayout::kChunked ? info.chunks : BoundedChunks(info.shape, info.dtype);
    grid.blocks = true;
    return std::unique_ptr<DatasetWriter>(new Hdf5Writer(std::move(h), std::move(grid), info.dtype, d.dest, d.scalar));
  }

  Status Finish() override {
    if (!placeholders_written_) {
      for (const DimensionPlaceholder& p : scales_.placeholders) SLABFS_RETURN_IF_ERROR(WritePlaceholder(p));
    }
    SLABFS_RETURN_IF_ERROR(AttachScales());
    gcpl_.Reset();
    SLABFS_RETURN_IF_ERROR(file_.Close(fmt::format("{}: closing", target_)));
    return SyncFile();
  }

 private:
  // A dataset named like a dimension that datasets of its group use, but
  // which is not that dimension's coordinate variable (not 1-D over it), is
  // written as "_nc4_non_coord_NAME", as netCDF-4 does, so that the
  // dimension gets its own scale NAME; a netCDF reader shows the variable
  // as NAME again (and slab import strips the prefix).
  void RenameNonCoordinateVariables(std::vector<DimensionUser>& users) {
    std::set<std::pair<std::string, std::string>> used;  // (group, dimension name)
    for (const DimensionUser& u : users) {
      if (!u.dims) continue;
      for (const std::string& n : *u.dims) used.emplace(u.group, n);
    }
    for (size_t i = 0; i < users.size(); ++i) {
      DimensionUser& u = users[i];
      const std::string base = BaseName(u.path);
      if (!used.contains({u.group, base})) continue;
      const bool coordinate = u.shape.size() == 1 && (!u.dims || (u.dims->size() == 1 && (*u.dims)[0] == base));
      if (coordinate) continue;
      const std::string renamed = JoinPath(u.group, std::string(kNetcdfNonCoordPrefix) + base);
      u.path = renamed;
      plan_->datasets[i].dest = renamed;
    }
  }

  Status CreateFile() {
    const std::string what = fmt::format("{}: creating", target_);
    SLABFS_ASSIGN_OR_RETURN(H5Handle fcpl, Checked(H5Pcreate(H5P_FILE_CREATE), Code::kIOError, what));
    SLABFS_RETURN_IF_ERROR(Checked(H5Pset_link_creation_order(fcpl.get(), kCreationOrder), Code::kIOError, what));
    SLABFS_RETURN_IF_ERROR(Checked(H5Pset_attr_creation_order(fcpl.get(), kCreationOrder), Code::kIOError, what));
    SLABFS_ASSIGN_OR_RETURN(H5Handle fapl, Checked(H5Pcreate(H5P_FILE_ACCESS), Code::kIOError, what));
    // The 1.8 file format: readable by every libhdf5 since 1.8 and by
    // netCDF-4; attributes of any size go to dense storage.
    SLABFS_RETURN_IF_ERROR(
        Checked(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V18), Code::kIOError, what));
    SLABFS_ASSIGN_OR_RETURN(
        file_, Checked(H5Fcreate(target_.c_str(), H5F_ACC_EXCL, fcpl.get(), fapl.get()), Code::kIOError, what));
    SLABFS_ASSIGN_OR_RETURN(gcpl_, Checked(H5Pcreate(H5P_GROUP_CREATE), Code::kIOError, what));
    SLABFS_RETURN_IF_ERROR(Checked(H5Pset_link_creation_order(gcpl_.get(), kCreationOrder), Code::kIOError, what));
    SLABFS_RETURN_IF_ERROR(Checked(H5Pset_attr_creation_order(gcpl_.get(), kCreationOrder), Code::kIOError, what));
    return Status::OK();
  }

  // The creation property list of dataset `d`: chunks, fill, filters.
  Result<H5Handle> CreationList(const CopyDataset& d, bool scalar) {
    const DatasetInfo& info = d.info.dataset;
    SLABFS_ASSIGN_OR_RETURN(H5Handle dcpl, Checked(H5Pcreate(H5P_DATASET_CREATE), Code::kIOError, d.dest));
    SLABFS_RETURN_IF_ERROR_R(Checked(H5Pset_attr_creation_order(dcpl.get(), kCreationOrder), Code::kIOError, d.dest));
    SLABFS_RETURN_IF_ERROR_R(
        Checked(H5Pset_fill_value(dcpl.get(), Hdf5TypeOf(info.dtype), info.fill.data()), Code::kIOError, d.dest));
    if (scalar) return dcpl;  // contiguous: a scalar has no chunks
    // HDF5 wants chunks no larger than a fixed maximum dimension; such a
    // chunk covers the whole dimension either way.
    std::vector<hsize_t> chunks = ToHsize(info.chunks);
    for (size_t k = 0; k < chunks.size(); ++k) {
      if (info.max_shape[k] != kUnlimited) chunks[k] = std::min<hsize_t>(chunks[k], info.max_shape[k]);
    }
    // A contiguous source stays contiguous where its shape is fixed.
    if (d.info.layout == StoreLayout::kChunked || info.max_shape != info.shape) {
      SLABFS_RETURN_IF_ERROR_R(
          Checked(H5Pset_chunk(dcpl.get(), static_cast<int>(chunks.size()), chunks.data()), Code::kIOError, d.dest));
    } else if (!info.filters.empty()) {
      return Err(Status::NotSupported(fmt::format("{}: a contiguous dataset with filters", d.src)));
    }
    std::string_view rest = info.filters;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      std::string_view f = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      herr_t r;
      if (f == "shuffle") {
        r = H5Pset_shuffle(dcpl.get());
      } else if (f == "checksum") {
        r = H5Pset_fletcher32(dcpl.get());
      } else if (f.starts_with("deflate")) {
        unsigned level = 6;
        if (f.size() == 9 && f[7] == '=' && f[8] >= '1' && f[8] <= '9') level = f[8] - '0';
        r = H5Pset_deflate(dcpl.get(), level);
      } else {
        return Err(Status::NotSupported(fmt::format("{}: filter '{}' has no HDF5 counterpart", d.src, f)));
      }
      SLABFS_RETURN_IF_ERROR_R(Checked(r, Code::kIOError, d.dest));
    }
    return dcpl;
  }

  // A netCDF dimension without a variable, as netCDF-4 writes one: a 1-D
  // float dataset that is never written, made a dimension scale whose NAME
  // says what it is and how long the dimension is.
  Status WritePlaceholder(const DimensionPlaceholder& p) {
    const std::string what = fmt::format("creating dimension {}", p.path);
    const hsize_t dims[1] = {p.length};
    const hsize_t max[1] = {p.unlimited ? H5S_UNLIMITED : p.length};
    SLABFS_ASSIGN_OR_RETURN(H5Handle space, Checked(H5Screate_simple(1, dims, max), Code::kIOError, what));
    SLABFS_ASSIGN_OR_RETURN(H5Handle dcpl, Checked(H5Pcreate(H5P_DATASET_CREATE), Code::kIOError, what));
    SLABFS_RETURN_IF_ERROR(Checked(H5Pset_attr_creation_order(dcpl.get(), kCreationOrder), Code::kIOError, what));
    if (p.unlimited) {
      const hsize_t chunk[1] = {1024};
      SLABFS_RETURN_IF_ERROR(Checked(H5Pset_chunk(dcpl.get(), 1, chunk), Code::kIOError, what));
    }
    SLABFS_ASSIGN_OR_RETURN(H5Handle h, Checked(H5Dcreate2(file_.get(), p.path.c_str(), H5T_IEEE_F32BE, space.get(),
                                                           H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                                                Code::kIOError, what));
    const std::string name = fmt::format("{}{:10}", kNetcdfDimOnly, p.length);
    SLABFS_RETURN_IF_ERROR(Checked(H5DSset_scale(h.get(), name.c_str()), Code::kIOError, what));
    return h.Close(what);
  }

  Status AttachScales() {
    for (size_t i = 0; i < plan_->datasets.size(); ++i) {
      const std::vector<ScaleRef>& attach = scales_.attach[i];
      if (!scales_.named[i] || scales_.is_scale[i]) continue;
      const CopyDataset& d = plan_->datasets[i];
      SLABFS_ASSIGN_OR_RETURN(H5Handle h,
                              Checked(H5Dopen2(file_.get(), d.dest.c_str(), H5P_DEFAULT), Code::kIOError, d.dest));
      for (size_t k = 0; k < attach.size(); ++k) {
        if (attach[k].kind == ScaleRef::Kind::kNone) continue;
        const std::string& path = attach[k].kind == ScaleRef::Kind::kDataset
                                      ? plan_->datasets[attach[k].index].dest
                                      : scales_.placeholders[attach[k].index].path;
        SLABFS_ASSIGN_OR_RETURN(H5Handle scale,
                                Checked(H5Dopen2(file_.get(), path.c_str(), H5P_DEFAULT), Code::kIOError, path));
        SLABFS_RETURN_IF_ERROR(Checked(H5DSattach_scale(h.get(), scale.get(), static_cast<unsigned>(k)), Code::kIOError,
                                       fmt::format("{}: attaching {} as dimension {}", d.dest, path, k)));
      }
    }
    return Status::OK();
  }

  // libhdf5 writes but does not sync; the driver renames the file into place
  // next, which must not publish a file whose data is still in flight.
  Status SyncFile() {
    int fd = open(target_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return engine::StatusFromErrno(errno, target_);
    int r = fsync(fd);
    int err = errno;
    close(fd);
    return r == 0 ? Status::OK() : engine::StatusFromErrno(err, target_);
  }

  Hdf5Session session_;
  std::string target_;
  CopyReport& report_;
  CopyPlan* plan_ = nullptr;
  H5Handle file_;
  H5Handle gcpl_;
  ScalePlan scales_;
  bool placeholders_written_ = false;
};

}  // namespace

std::unique_ptr<CopySink> Hdf5Sink(const std::string& target, CopyReport& report) {
  return std::make_unique<Hdf5SinkImpl>(target, report);
}

}  // namespace slabfs::tools::convert
