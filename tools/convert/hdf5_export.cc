// slabfs -> HDF5 / netCDF-4: ExportHdf5 (see convert.h; the mapping is
// written up in docs/interop.md).
//
// The export plans first: the tree under --path, and which datasets become
// netCDF dimension scales (that needs every dataset's shape and
// _ARRAY_DIMENSIONS). It then writes the file: the groups, each dataset
// with its attributes and then its stored chunks, one block of whole
// chunks at a time, and last the scale attachments. Chunks the container
// never stored are not written, so they stay unallocated in the file too
// and read as the fill value.
#include <fcntl.h>
#include <hdf5.h>
#include <hdf5_hl.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "engine/io/os_error.h"
#include "tools/block_walk.h"
#include "tools/byte_stream.h"
#include "tools/commands.h"
#include "tools/convert/convert.h"
#include "tools/convert/hdf5_attrs.h"
#include "tools/convert/hdf5_netcdf.h"
#include "tools/convert/hdf5_util.h"
#include "tools/convert/scalar.h"

namespace slabfs::tools::convert {
namespace {

using Attrs = std::vector<std::pair<std::string, Attribute>>;

struct GroupOut {
  ObjectId id = 0;
  std::string src;   // path in the container
  std::string path;  // path in the file
  Attrs attrs;
};

struct DatasetOut {
  ObjectId id = 0;
  std::string src;
  std::string path;
  std::string group;  // the file path of its group
  DatasetInfo info;
  Attrs attrs;
  bool scalar = false;  // IsExportedScalar: written as a rank-0 dataset
};

// Creation order tracked and indexed on groups and attributes, as netCDF-4
// writes them (netCDF lists objects in creation order).
constexpr unsigned kCreationOrder = H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED;

class Exporter {
 public:
  Exporter(const TreeExportOptions& o, const Container& src, const std::string& target, Progress& progress,
           std::ostream& out)
      : o_(o), src_(src), target_(target), progress_(progress), out_(out) {}

  Status Run() {
    SLABFS_RETURN_IF_ERROR(Plan());
    std::vector<DimensionUser> users;
    for (const DatasetOut& d : datasets_) {
      DimensionUser u{d.path, d.group, d.info.shape, d.info.max_shape, std::nullopt};
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
    for (const GroupOut& g : groups_) group_paths.push_back(g.path);
    scales_ = PlanDimensionScales(users, group_paths);
    uint64_t total = 0;
    for (const DatasetOut& d : datasets_) {
      if (d.info.num_chunks == 0) continue;
      total += static_cast<uint64_t>(
          static_cast<double>(d.info.size_bytes) *
          std::min(1.0, static_cast<double>(d.info.allocated_chunks) / static_cast<double>(d.info.num_chunks)));
    }
    progress_.SetTotal(total, 0);

    SLABFS_RETURN_IF_ERROR(CreateFile());
    for (const GroupOut& g : groups_) SLABFS_RETURN_IF_ERROR(WriteGroup(g));
    for (const DimensionPlaceholder& p : scales_.placeholders) {
      SLABFS_RETURN_IF_ERROR(WritePlaceholder(p));
    }
    for (size_t i = 0; i < datasets_.size(); ++i) SLABFS_RETURN_IF_ERROR(WriteDataset(i));
    SLABFS_RETURN_IF_ERROR(AttachScales());
    SLABFS_RETURN_IF_ERROR(file_.Close(fmt::format("{}: closing", target_)));
    return SyncFile();
  }

 private:
  // ------------------------------------------------------------ the plan

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
      datasets_[i].path = renamed;
    }
  }

  Result<Attrs> AttributesOf(ObjectId id, std::string_view src) {
    Attrs attrs;
    auto names = src_.ListAttributes(id);
    if (!names) return Err(AddContext(names.error(), src));
    for (const std::string& name : *names) {
      auto value = src_.GetAttribute(id, name);
      if (!value) return Err(AddContext(value.error(), src));
      attrs.emplace_back(name, std::move(*value));
    }
    return attrs;
  }

  Status Plan() {
    SLABFS_ASSIGN_OR_RETURN(ObjectId id, src_.Resolve(o_.from));
    SLABFS_ASSIGN_OR_RETURN(ObjectInfo info, src_.Stat(id));
    if (info.kind == ObjectKind::kGroup) return PlanGroup(id, o_.from, "/");
    return PlanDataset(id, o_.from, JoinPath("/", BaseName(o_.from)), "/");
  }

  Status PlanGroup(ObjectId id, const std::string& src, const std::string& path) {
    SLABFS_RETURN_IF_ERROR(InterruptGuard::Check());
    if (!seen_.insert(id).second) {
      return Status::Corruption(fmt::format("{}: the group tree has a cycle", src));
    }
    GroupOut g{id, src, path, {}};
    SLABFS_ASSIGN_OR_RETURN(g.attrs, AttributesOf(id, src));
    groups_.push_back(std::move(g));
    auto children = src_.List(id);
    if (!children) return AddContext(children.error(), src);
    for (const Entry& e : *children) {
      const std::string child_src = JoinPath(src, e.name);
      const std::string child_path = JoinPath(path, e.name);
      if (e.kind == ObjectKind::kGroup) {
        SLABFS_RETURN_IF_ERROR(PlanGroup(e.id, child_src, child_path));
      } else {
        SLABFS_RETURN_IF_ERROR(PlanDataset(e.id, child_src, child_path, path));
      }
    }
    return Status::OK();
  }

  Status PlanDataset(ObjectId id, const std::string& src, const std::string& path, const std::string& group) {
    auto ds = src_.OpenDataset(id);
    if (!ds) return AddContext(ds.error(), src);
    DatasetOut d{id, src, path, group, ds->info(), {}, false};
    SLABFS_ASSIGN_OR_RETURN(d.attrs, AttributesOf(id, src));
    std::vector<std::string> names;
    for (const auto& [name, value] : d.attrs) names.push_back(name);
    d.scalar = IsExportedScalar(d.info, names);
    datasets_.push_back(std::move(d));
    return Status::OK();
  }

  // ------------------------------------------------------------ the file

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

  Status WriteGroup(const GroupOut& g) {
    H5Handle h(g.path == "/" ? H5Gopen2(file_.get(), "/", H5P_DEFAULT)
                             : H5Gcreate2(file_.get(), g.path.c_str(), H5P_DEFAULT, gcpl_.get(), H5P_DEFAULT));
    if (!h.valid()) return Hdf5Error(Code::kIOError, fmt::format("creating group {}", g.path));
    for (const auto& [name, value] : g.attrs) {
      SLABFS_RETURN_IF_ERROR(WriteHdf5Attribute(h.get(), g.path, name, value));
    }
    return h.Close(g.path);
  }

  // The creation property list of dataset `d`: chunks, fill, filters.
  Result<H5Handle> CreationList(const DatasetOut& d) {
    const DatasetInfo& info = d.info;
    SLABFS_ASSIGN_OR_RETURN(H5Handle dcpl, Checked(H5Pcreate(H5P_DATASET_CREATE), Code::kIOError, d.path));
    SLABFS_RETURN_IF_ERROR_R(Checked(H5Pset_attr_creation_order(dcpl.get(), kCreationOrder), Code::kIOError, d.path));
    SLABFS_RETURN_IF_ERROR_R(
        Checked(H5Pset_fill_value(dcpl.get(), Hdf5TypeOf(info.dtype), info.fill.data()), Code::kIOError, d.path));
    if (d.scalar) return dcpl;  // contiguous: a scalar has no chunks
    // HDF5 wants chunks no larger than a fixed maximum dimension; such a
    // chunk covers the whole dimension either way.
    std::vector<hsize_t> chunks = ToHsize(info.chunks);
    for (size_t k = 0; k < chunks.size(); ++k) {
      if (info.max_shape[k] != kUnlimited) chunks[k] = std::min<hsize_t>(chunks[k], info.max_shape[k]);
    }
    SLABFS_RETURN_IF_ERROR_R(
        Checked(H5Pset_chunk(dcpl.get(), static_cast<int>(chunks.size()), chunks.data()), Code::kIOError, d.path));
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
      SLABFS_RETURN_IF_ERROR_R(Checked(r, Code::kIOError, d.path));
    }
    return dcpl;
  }

  Status WriteDataset(size_t i) {
    SLABFS_RETURN_IF_ERROR(InterruptGuard::Check());
    const DatasetOut& d = datasets_[i];
    const DatasetInfo& info = d.info;
    const bool is_scale = scales_.is_scale[i];
    std::vector<hsize_t> dims = ToHsize(info.shape), max = ToHsize(info.max_shape);
    for (hsize_t& m : max) {
      if (m == kUnlimited) m = H5S_UNLIMITED;
    }
    H5Handle space(d.scalar ? H5Screate(H5S_SCALAR)
                            : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), max.data()));
    if (!space.valid()) return Hdf5Error(Code::kIOError, d.path);
    SLABFS_ASSIGN_OR_RETURN(H5Handle dcpl, CreationList(d));
    SLABFS_ASSIGN_OR_RETURN(H5Handle dapl, Checked(H5Pcreate(H5P_DATASET_ACCESS), Code::kIOError, d.path));
    // Every chunk is written whole by one write: no cache needed.
    SLABFS_RETURN_IF_ERROR(
        Checked(H5Pset_chunk_cache(dapl.get(), H5D_CHUNK_CACHE_NSLOTS_DEFAULT, 0, H5D_CHUNK_CACHE_W0_DEFAULT),
                Code::kIOError, d.path));
    SLABFS_ASSIGN_OR_RETURN(H5Handle h, Checked(H5Dcreate2(file_.get(), d.path.c_str(), Hdf5TypeOf(info.dtype),
                                                           space.get(), H5P_DEFAULT, dcpl.get(), dapl.get()),
                                                Code::kIOError, fmt::format("creating dataset {}", d.path)));
    if (is_scale) {
      SLABFS_RETURN_IF_ERROR(Checked(H5DSset_scale(h.get(), BaseName(d.path).c_str()), Code::kIOError,
                                     fmt::format("{}: making it a dimension scale", d.path)));
    }
    for (const auto& [name, value] : d.attrs) {
      if (d.scalar && name == kScalarAttribute) continue;
      if (name == kArrayDimensions && scales_.named[i]) continue;
      // libhdf5's dimension scale attributes: a value of another type
      // under these names would mislead every reader of the file.
      const bool reserved =
          name == "DIMENSION_LIST" || name == "REFERENCE_LIST" || (is_scale && (name == "CLASS" || name == "NAME"));
      if (reserved) {
        out_ << fmt::format(
            "skipped attribute '{}' of {}: the dimension scales of the file use "
            "that name\n",
            name, d.src);
        continue;
      }
      std::optional<DType> as;
      if (name == "_FillValue" && value.kind == Attribute::Kind::kNumeric && value.count() == 1) {
        as = info.dtype;  // netCDF wants it in the variable's type
      }
      SLABFS_RETURN_IF_ERROR(WriteHdf5Attribute(h.get(), d.path, name, value, as));
    }
    if (info.sparse) {
      out_ << fmt::format(
          "note: {} is sparse: its undefined elements are written as the fill "
          "value {}\n",
          d.src, FormatScalar(info.dtype, info.fill.data()));
    }
    SLABFS_RETURN_IF_ERROR(CopyData(d, h.get()));
    return h.Close(d.path);
  }

  Status CopyData(const DatasetOut& d, hid_t h) {
    auto ds = src_.OpenDataset(d.id);
    if (!ds) return AddContext(ds.error(), d.src);
    const DatasetInfo& info = d.info;
    const size_t item = ItemSize(info.dtype);
    const hid_t memtype = Hdf5TypeOf(info.dtype);
    const std::string writing = fmt::format("{}: writing", d.path);
    if (info.num_elements == 0 || info.allocated_chunks == 0) return Status::OK();
    if (d.scalar) {
      std::string value(item, '\0');
      SLABFS_RETURN_IF_ERROR(AddContext(ds->Read(Slab::Box({0}, {1}), value.data()), d.src));
      SLABFS_RETURN_IF_ERROR(
          Checked(H5Dwrite(h, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, value.data()), Code::kIOError, writing));
      return progress_.Advance(item, 1);
    }
    auto stored = ds->StoredChunks();
    if (!stored) return AddContext(stored.error(), d.src);
    const size_t rank = info.shape.size();
    BlockWalk walk(info.shape, info.chunks, item, kTransferBlockBytes);
    std::vector<uint64_t> wanted;
    for (const StoredChunk& c : *stored) {
      if (c.coords.size() != rank) {
        return Status::Corruption(fmt::format("{}: a stored chunk has rank {}, not {}", d.src, c.coords.size(), rank));
      }
      bool inside = true;
      for (size_t k = 0; k < rank; ++k) inside = inside && c.coords[k] < walk.grid()[k];
      if (inside) wanted.push_back(walk.ChunkIndex(c.coords));
    }
    std::sort(wanted.begin(), wanted.end());
    wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
    std::vector<uint64_t> blocks;
    for (uint64_t c : wanted) blocks.push_back(walk.BlockOfChunk(c));
    blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());

    SLABFS_ASSIGN_OR_RETURN(H5Handle fspace, Checked(H5Dget_space(h), Code::kIOError, writing));
    std::vector<char> buf;
    std::vector<Dims> parts;
    Dims part_start, part_count;
    for (uint64_t index : blocks) {
      const BlockWalk::Block b = walk.BlockAt(index);
      parts.clear();
      SLABFS_RETURN_IF_ERROR(walk.ForEachChunk(b, [&](const Dims& c) {
        if (std::binary_search(wanted.begin(), wanted.end(), walk.ChunkIndex(c))) parts.push_back(c);
        return Status::OK();
      }));
      buf.resize(static_cast<size_t>(b.elements) * item);
      SLABFS_RETURN_IF_ERROR(AddContext(ds->Read(Slab::Box(b.start, b.count), buf.data()), d.src));
      const std::vector<hsize_t> count = ToHsize(b.count);
      SLABFS_ASSIGN_OR_RETURN(H5Handle mspace, Checked(H5Screate_simple(static_cast<int>(rank), count.data(), nullptr),
                                                       Code::kIOError, writing));
      if (parts.size() == b.chunks) {
        const std::vector<hsize_t> start = ToHsize(b.start);
        SLABFS_RETURN_IF_ERROR(
            Checked(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr),
                    Code::kIOError, writing));
        SLABFS_RETURN_IF_ERROR(Checked(H5Dwrite(h, memtype, mspace.get(), fspace.get(), H5P_DEFAULT, buf.data()),
                                       Code::kIOError, writing));
      } else {
        for (const Dims& c : parts) {
          walk.ChunkBox(c, &part_start, &part_count);
          std::vector<hsize_t> offset(rank);
          for (size_t k = 0; k < rank; ++k) offset[k] = part_start[k] - b.start[k];
          const std::vector<hsize_t> fstart = ToHsize(part_start), pcount = ToHsize(part_count);
          SLABFS_RETURN_IF_ERROR(
              Checked(H5Sselect_hyperslab(mspace.get(), H5S_SELECT_SET, offset.data(), nullptr, pcount.data(), nullptr),
                      Code::kIOError, writing));
          SLABFS_RETURN_IF_ERROR(
              Checked(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, fstart.data(), nullptr, pcount.data(), nullptr),
                      Code::kIOError, writing));
          SLABFS_RETURN_IF_ERROR(Checked(H5Dwrite(h, memtype, mspace.get(), fspace.get(), H5P_DEFAULT, buf.data()),
                                         Code::kIOError, writing));
        }
      }
      SLABFS_RETURN_IF_ERROR(progress_.Advance(buf.size(), parts.size()));
    }
    return Status::OK();
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
    for (size_t i = 0; i < datasets_.size(); ++i) {
      const std::vector<ScaleRef>& attach = scales_.attach[i];
      if (!scales_.named[i] || scales_.is_scale[i]) continue;
      const DatasetOut& d = datasets_[i];
      SLABFS_ASSIGN_OR_RETURN(H5Handle h,
                              Checked(H5Dopen2(file_.get(), d.path.c_str(), H5P_DEFAULT), Code::kIOError, d.path));
      for (size_t k = 0; k < attach.size(); ++k) {
        if (attach[k].kind == ScaleRef::Kind::kNone) continue;
        const std::string& path = attach[k].kind == ScaleRef::Kind::kDataset
                                      ? datasets_[attach[k].index].path
                                      : scales_.placeholders[attach[k].index].path;
        SLABFS_ASSIGN_OR_RETURN(H5Handle scale,
                                Checked(H5Dopen2(file_.get(), path.c_str(), H5P_DEFAULT), Code::kIOError, path));
        SLABFS_RETURN_IF_ERROR(Checked(H5DSattach_scale(h.get(), scale.get(), static_cast<unsigned>(k)), Code::kIOError,
                                       fmt::format("{}: attaching {} as dimension {}", d.path, path, k)));
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

  const TreeExportOptions& o_;
  const Container& src_;
  const std::string& target_;
  Progress& progress_;
  std::ostream& out_;
  H5Handle file_;
  H5Handle gcpl_;
  std::vector<GroupOut> groups_;
  std::vector<DatasetOut> datasets_;
  ScalePlan scales_;
  std::unordered_set<ObjectId> seen_;
};

}  // namespace

Status ExportHdf5(const TreeExportOptions& o, const Container& src, const std::string& target, Progress& progress,
                  std::ostream& out) {
  Hdf5Session session;
  Exporter exporter(o, src, target, progress, out);
  return exporter.Run();
}

}  // namespace slabfs::tools::convert
