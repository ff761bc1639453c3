// HDF5 / netCDF-4 -> slabfs: ImportHdf5 (see convert.h; the mapping is
// written up in docs/interop.md).
//
// The import runs in two passes over the source. The plan walks the tree
// and decides everything without moving data: which objects become what,
// with which dtype, shapes, chunks, fill, filters and attributes, and what
// is skipped (each skip is one line on `out`, or with --strict the error
// that stops the import before anything is written). The copy then makes
// the groups and datasets and streams each dataset through one block of
// whole source chunks at a time.
#include <hdf5.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tools/block_walk.h"
#include "tools/commands.h"
#include "tools/convert/convert.h"
#include "tools/convert/hdf5_attrs.h"
#include "tools/convert/hdf5_netcdf.h"
#include "tools/convert/hdf5_util.h"
#include "tools/convert/scalar.h"

namespace slabfs::tools::convert {
namespace {

struct Link {
  std::string name;
  H5L_type_t type;
};

herr_t CollectLink(hid_t, const char* name, const H5L_info_t* info, void* data) {
  static_cast<std::vector<Link>*>(data)->push_back({name, info->type});
  return 0;
}

// One object to make in the container.
struct Step {
  bool dataset = false;
  std::string src;     // path in the source
  std::string dest;    // path in the container
  bool create = true;  // false for the receiving group (--into)
  std::vector<std::pair<std::string, Attribute>> attrs;
  // Datasets.
  DatasetOptions options;
  bool scalar = false;
  bool chunked = false;  // the container's chunks are the source's chunks
  // Chunks the source never allocated read as the fill value there and
  // here, so they are not copied (false when _FillValue overrides the
  // source's fill value).
  bool skip_unallocated = false;
  // The source's chunks are encoded as the container's are (its filters
  // are deflate, or shuffle then deflate, its elements little-endian):
  // whole chunks are copied as stored (Dataset::WriteEncodedChunk).
  bool copy_encoded = false;
};

class Importer {
 public:
  Importer(const TreeImportOptions& o, Container& dest, Progress& progress, std::ostream& out)
      : o_(o), dest_(dest), progress_(progress), out_(out) {}

  Status Run() {
    SLABFS_ASSIGN_OR_RETURN(H5Handle fapl,
                            Checked(H5Pcreate(H5P_FILE_ACCESS), Code::kIOError, "creating a file access list"));
    // Files on filesystems without locks (some NFS) still open.
    (void)H5Pset_file_locking(fapl.get(), true, true);
    H5Eclear2(H5E_DEFAULT);
    SLABFS_ASSIGN_OR_RETURN(file_, Checked(H5Fopen(o_.source.c_str(), H5F_ACC_RDONLY, fapl.get()), Code::kCorruption,
                                           "cannot open it as HDF5"));
    namer_.emplace(file_.get());
    SLABFS_RETURN_IF_ERROR(Plan());
    uint64_t total = 0;
    for (const auto& [bytes, _] : expected_) total += bytes;
    progress_.SetTotal(total, 0);
    for (const Step& s : steps_) SLABFS_RETURN_IF_ERROR(Execute(s));
    namer_.reset();
    return file_.Close("closing the source");
  }

 private:
  // ------------------------------------------------------------ the plan

  // Reports something the import leaves out: a line on `out`, or with
  // --strict the error that ends the import.
  Status Skip(const std::string& what) {
    if (o_.strict) {
      return Status::NotSupported(fmt::format("{} (--strict refuses what slabfs cannot hold)", what));
    }
    out_ << "skipped " << what << "\n";
    return Status::OK();
  }
  void Note(const std::string& what) { out_ << "note: " << what << "\n"; }

  Status Plan() {
    H5O_info_t info;
    if (o_.from == "/" || o_.from.empty()) {
      SLABFS_ASSIGN_OR_RETURN(
          H5Handle root, Checked(H5Gopen2(file_.get(), "/", H5P_DEFAULT), Code::kCorruption, "opening the root group"));
      return PlanGroup(root.get(), "/", o_.into, /*create=*/false);
    }
    if (H5Oget_info_by_name2(file_.get(), o_.from.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
      H5Eclear2(H5E_DEFAULT);
      return Status::NotFound(fmt::format("--path {}: no such group or dataset in the source", o_.from));
    }
    const std::string dest = JoinPath(o_.into, BaseName(o_.from));
    if (info.type == H5O_TYPE_GROUP) {
      SLABFS_ASSIGN_OR_RETURN(H5Handle g,
                              Checked(H5Gopen2(file_.get(), o_.from.c_str(), H5P_DEFAULT), Code::kCorruption, o_.from));
      return PlanGroup(g.get(), o_.from, dest, true);
    }
    if (info.type == H5O_TYPE_DATASET) {
      SLABFS_ASSIGN_OR_RETURN(H5Handle d,
                              Checked(H5Dopen2(file_.get(), o_.from.c_str(), H5P_DEFAULT), Code::kCorruption, o_.from));
      return PlanDataset(d.get(), o_.from, dest);
    }
    return Status::InvalidArgument(fmt::format("--path {}: not a group or dataset (a named datatype?)", o_.from));
  }

  Status CheckFree(const std::string& dest) {
    if (dest_.Resolve(dest)) {
      return Status::AlreadyExists(fmt::format("{} already exists in {}", dest, o_.container));
    }
    return Status::OK();
  }

  Status PlanGroup(hid_t g, const std::string& src, const std::string& dest, bool create) {
    SLABFS_RETURN_IF_ERROR(InterruptGuard::Check());
    H5O_info_t info;
    SLABFS_RETURN_IF_ERROR(Checked(H5Oget_info2(g, &info, H5O_INFO_BASIC), Code::kCorruption, src));
    seen_.emplace(info.addr, src);
    if (create) SLABFS_RETURN_IF_ERROR(CheckFree(dest));
    Step step;
    step.src = src;
    step.dest = dest;
    step.create = create;
    SLABFS_ASSIGN_OR_RETURN(step.attrs, PlanAttributes(g, src, false));
    steps_.push_back(std::move(step));

    std::vector<Link> links;
    if (H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, nullptr, CollectLink, &links) < 0) {
      return Hdf5Error(Code::kCorruption, fmt::format("{}: listing the group", src));
    }
    for (const Link& link : links) {
      const std::string child_src = JoinPath(src, link.name);
      // netCDF-4 stores a variable that shares its name with a dimension it
      // does not span as "_nc4_non_coord_NAME": the variable is NAME.
      const std::string child_dest = JoinPath(dest, NetcdfVariableName(link.name));
      if (Status v = ValidateName(link.name); !v.ok()) {
        SLABFS_RETURN_IF_ERROR(Skip(fmt::format("{}: the name is not valid in slabfs ({})", child_src, v.message())));
        continue;
      }
      if (link.type == H5L_TYPE_SOFT) {
        SLABFS_RETURN_IF_ERROR(
            Skip(fmt::format("{}: a soft link{} (slabfs has no links)", child_src, LinkTarget(g, link.name))));
        continue;
      }
      if (link.type != H5L_TYPE_HARD) {
        SLABFS_RETURN_IF_ERROR(Skip(fmt::format("{}: an {} link (other files are not read)", child_src,
                                                link.type == H5L_TYPE_EXTERNAL ? "external" : "user-defined")));
        continue;
      }
      if (H5Oget_info_by_name2(g, link.name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
        return Hdf5Error(Code::kCorruption, child_src);
      }
      if (auto it = seen_.find(info.addr); it != seen_.end()) {
        SLABFS_RETURN_IF_ERROR(Skip(
            fmt::format("{}: the same object as {} (a second hard link; slabfs has no links)", child_src, it->second)));
        continue;
      }
      if (info.type == H5O_TYPE_GROUP) {
        SLABFS_ASSIGN_OR_RETURN(H5Handle child,
                                Checked(H5Gopen2(g, link.name.c_str(), H5P_DEFAULT), Code::kCorruption, child_src));
        SLABFS_RETURN_IF_ERROR(PlanGroup(child.get(), child_src, child_dest, true));
      } else if (info.type == H5O_TYPE_DATASET) {
        seen_.emplace(info.addr, child_src);
        SLABFS_ASSIGN_OR_RETURN(H5Handle child,
                                Checked(H5Dopen2(g, link.name.c_str(), H5P_DEFAULT), Code::kCorruption, child_src));
        SLABFS_RETURN_IF_ERROR(PlanDataset(child.get(), child_src, child_dest));
      } else {
        Note(fmt::format("{}: a named datatype, not data; not copied", child_src));
      }
    }
    return Status::OK();
  }

  // " to /target" for a soft link, or "" when libhdf5 cannot say.
  std::string LinkTarget(hid_t g, const std::string& name) {
    H5L_info_t info;
    if (H5Lget_info(g, name.c_str(), &info, H5P_DEFAULT) < 0 || info.u.val_size == 0 || info.u.val_size > 4096) {
      H5Eclear2(H5E_DEFAULT);
      return "";
    }
    std::string target(info.u.val_size, '\0');
    if (H5Lget_val(g, name.c_str(), target.data(), target.size(), H5P_DEFAULT) < 0) {
      H5Eclear2(H5E_DEFAULT);
      return "";
    }
    target.resize(std::strlen(target.c_str()));
    return " to " + target;
  }

  Result<std::vector<std::pair<std::string, Attribute>>> PlanAttributes(hid_t obj, const std::string& src,
                                                                        bool is_scale) {
    std::vector<std::pair<std::string, Attribute>> attrs;
    SLABFS_ASSIGN_OR_RETURN(std::vector<std::string> names, Hdf5AttributeNames(obj, src));
    for (const std::string& name : names) {
      if (IsDimensionBookkeeping(name, is_scale)) continue;
      if (Status v = ValidateName(name); !v.ok()) {
        SLABFS_RETURN_IF_ERROR_R(
            Skip(fmt::format("attribute '{}' of {}: the name is not valid "
                             "in slabfs ({})",
                             name, src, v.message())));
        continue;
      }
      SLABFS_ASSIGN_OR_RETURN(Hdf5Attribute a, ReadHdf5Attribute(obj, src, name));
      if (!a.value) {
        SLABFS_RETURN_IF_ERROR_R(Skip(fmt::format("attribute '{}' of {}: {}", name, src, a.why_not)));
        continue;
      }
      attrs.emplace_back(name, std::move(*a.value));
    }
    return attrs;
  }

  // The filter pipeline of a source dataset as slabfs filters, or why not.
  Result<std::optional<std::string>> PlanFilters(hid_t dcpl, const std::string& src) {
    int n = H5Pget_nfilters(dcpl);
    if (n < 0) return Err(Hdf5Error(Code::kCorruption, src));
    std::vector<std::string> filters;
    for (int i = 0; i < n; ++i) {
      unsigned flags = 0, config = 0;
      unsigned cd[8] = {};
      size_t ncd = 8;
      char name[64] = {};
      H5Z_filter_t id = H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &ncd, cd, sizeof name, name, &config);
      if (id < 0) return Err(Hdf5Error(Code::kCorruption, src));
      std::string ours;
      if (id == H5Z_FILTER_DEFLATE) {
        unsigned level = ncd > 0 ? cd[0] : 6;
        if (level > 9) level = 9;
        // Level 0 stores the bytes as they are: no filter.
        if (level > 0) ours = fmt::format("deflate={}", level);
      } else if (id == H5Z_FILTER_SHUFFLE) {
        ours = "shuffle";
      } else if (id == H5Z_FILTER_FLETCHER32) {
        ours = "checksum";
      } else {
        SLABFS_RETURN_IF_ERROR_R(
            Skip(fmt::format("{}: filter {} (id {}) is not one slabfs has (deflate, shuffle, fletcher32)", src,
                             Hdf5FilterName(id, name), id)));
        return std::optional<std::string>();
      }
      if (ours.empty()) continue;
      const std::string kind = ours.substr(0, ours.find('='));
      for (const std::string& f : filters) {
        if (f.substr(0, f.find('=')) == kind) {
          SLABFS_RETURN_IF_ERROR_R(Skip(fmt::format("{}: its pipeline applies {} twice", src, kind)));
          return std::optional<std::string>();
        }
      }
      filters.push_back(ours);
    }
    std::string text;
    for (const std::string& f : filters) text += (text.empty() ? "" : ",") + f;
    return std::optional<std::string>(text);
  }

  Status PlanDataset(hid_t d, const std::string& src, const std::string& dest) {
    SLABFS_RETURN_IF_ERROR(InterruptGuard::Check());
    // netCDF's dimensions without a variable are placeholders, not data.
    if (namer_->IsPlaceholder(d)) return Status::OK();
    SLABFS_ASSIGN_OR_RETURN(H5Handle type, Checked(H5Dget_type(d), Code::kCorruption, src));
    TypeMatch m = MatchHdf5Type(type.get());
    if (!m.dtype) {
      return Skip(
          fmt::format("{}: {} data (slabfs datasets hold integers and floats of 1 to 8 bytes)", src, m.why_not));
    }
    const DType dtype = *m.dtype;
    const size_t item = ItemSize(dtype);
    SLABFS_ASSIGN_OR_RETURN(H5Handle space, Checked(H5Dget_space(d), Code::kCorruption, src));
    const H5S_class_t space_class = H5Sget_simple_extent_type(space.get());
    if (space_class == H5S_NULL) return Skip(fmt::format("{}: a dataset with no elements (null dataspace)", src));
    if (space_class != H5S_SCALAR && space_class != H5S_SIMPLE) {
      return Hdf5Error(Code::kCorruption, fmt::format("{}: reading its dataspace", src));
    }
    SLABFS_ASSIGN_OR_RETURN(H5Handle dcpl, Checked(H5Dget_create_plist(d), Code::kCorruption, src));
    const H5D_layout_t layout = H5Pget_layout(dcpl.get());
    if (layout == H5D_LAYOUT_ERROR) return Hdf5Error(Code::kCorruption, src);
    if (layout == H5D_VIRTUAL) {
      return Skip(fmt::format("{}: a virtual dataset (its source files are not read)", src));
    }
    if (H5Pget_external_count(dcpl.get()) != 0) {
      H5Eclear2(H5E_DEFAULT);
      return Skip(fmt::format("{}: its data lives in external files, which are not read", src));
    }
    SLABFS_ASSIGN_OR_RETURN(std::optional<std::string> filters, PlanFilters(dcpl.get(), src));
    if (!filters) return Status::OK();

    Step step;
    step.dataset = true;
    step.src = src;
    step.dest = dest;
    DatasetOptions& opt = step.options;
    opt.dtype = dtype;
    opt.filters = *filters;
    int rank = 0;
    if (space_class == H5S_SCALAR) {
      step.scalar = true;
      MakeScalarOptions(&opt);
    } else {
      rank = H5Sget_simple_extent_ndims(space.get());
      if (rank < 1 || rank > kMaxRank) return Hdf5Error(Code::kCorruption, src);
      hsize_t dims[H5S_MAX_RANK], maxdims[H5S_MAX_RANK];
      if (H5Sget_simple_extent_dims(space.get(), dims, maxdims) < 0) {
        return Hdf5Error(Code::kCorruption, src);
      }
      slabfs_u128 bytes = item;
      for (int i = 0; i < rank; ++i) {
        opt.shape.push_back(dims[i]);
        uint64_t max = maxdims[i] == H5S_UNLIMITED ? kUnlimited : maxdims[i];
        if (max == 0) {
          Note(fmt::format("{}: dimension {} has length 0 and cannot grow; in slabfs it can", src, i));
          max = kUnlimited;
        }
        opt.max_shape.push_back(max);
        bytes *= dims[i];
      }
      if (bytes > static_cast<slabfs_u128>(INT64_MAX)) {
        return Skip(fmt::format("{}: larger than 2^63 bytes", src));
      }
      if (layout == H5D_CHUNKED) {
        hsize_t chunk[H5S_MAX_RANK];
        if (H5Pget_chunk(dcpl.get(), rank, chunk) != rank) return Hdf5Error(Code::kCorruption, src);
        slabfs_u128 chunk_bytes = item;
        for (int i = 0; i < rank; ++i) chunk_bytes *= chunk[i];
        if (chunk_bytes <= (slabfs_u128{1} << 30)) {
          opt.chunks = FromHsize(chunk, static_cast<size_t>(rank));
          step.chunked = true;
        } else {
          Note(fmt::format("{}: chunks of more than 1 GiB; slabfs chooses smaller ones", src));
        }
      }
    }
    SLABFS_RETURN_IF_ERROR(PlanFill(d, dcpl.get(), dtype, src, &step));
    if (step.chunked && (opt.filters.starts_with("deflate=") || opt.filters.starts_with("shuffle,deflate=")) &&
        opt.filters.find(',', opt.filters.find("deflate=")) == std::string::npos) {
      // Byte for byte what the pipeline makes only from little-endian
      // elements of the same size (a big-endian source is converted).
      H5Handle ftype(H5Dget_type(d));
      const H5T_order_t order = ftype.valid() ? H5Tget_order(ftype.get()) : H5T_ORDER_ERROR;
      step.copy_encoded = ftype.valid() && H5Tget_size(ftype.get()) == item &&
                          (order == H5T_ORDER_LE || (item == 1 && order == H5T_ORDER_NONE));
      H5Eclear2(H5E_DEFAULT);
    }

    const bool is_scale = namer_->IsScale(d);
    SLABFS_ASSIGN_OR_RETURN(step.attrs, PlanAttributes(d, src, is_scale));
    if (step.scalar) {
      step.attrs.emplace_back(std::string(kScalarAttribute), ScalarMarker());
    } else {
      auto names = namer_->Names(d, src, rank);
      if (!names) {
        SLABFS_RETURN_IF_ERROR(Skip(fmt::format("the dimension names of {}: {}", src, names.error().message())));
      } else if (*names) {
        std::erase_if(step.attrs, [](const auto& a) { return a.first == kArrayDimensions; });
        step.attrs.emplace_back(std::string(kArrayDimensions), Attribute::String(DimensionsJson(**names)));
      }
    }
    SLABFS_RETURN_IF_ERROR(CheckFree(dest));
    SLABFS_ASSIGN_OR_RETURN(uint64_t bytes, ExpectedBytes(d, step));
    expected_.emplace_back(bytes, steps_.size());
    steps_.push_back(std::move(step));
    return Status::OK();
  }

  // The fill value: the source's, or its _FillValue attribute (netCDF's
  // fill, which netCDF also gives the HDF5 dataset).
  Status PlanFill(hid_t d, hid_t dcpl, DType dtype, const std::string& src, Step* step) {
    const size_t item = ItemSize(dtype);
    std::string fill(item, '\0');
    H5D_fill_value_t status;
    if (H5Pfill_value_defined(dcpl, &status) < 0) return Hdf5Error(Code::kCorruption, src);
    if (status != H5D_FILL_VALUE_UNDEFINED && H5Pget_fill_value(dcpl, Hdf5TypeOf(dtype), fill.data()) < 0) {
      return Hdf5Error(Code::kCorruption, fmt::format("{}: reading the fill value", src));
    }
    std::string chosen = fill;
    if (H5Aexists(d, "_FillValue") > 0) {
      H5Handle attr(H5Aopen(d, "_FillValue", H5P_DEFAULT));
      H5Handle type(attr.valid() ? H5Aget_type(attr.get()) : H5I_INVALID_HID);
      H5Handle space(attr.valid() ? H5Aget_space(attr.get()) : H5I_INVALID_HID);
      if (type.valid() && space.valid() && MatchHdf5Type(type.get()).dtype &&
          H5Sget_simple_extent_npoints(space.get()) == 1) {
        std::string value(item, '\0');
        if (H5Aread(attr.get(), Hdf5TypeOf(dtype), value.data()) >= 0) chosen = value;
      }
    }
    H5Eclear2(H5E_DEFAULT);
    step->options.fill = chosen;
    step->skip_unallocated = chosen == fill;
    return Status::OK();
  }

  // The bytes the copy of `step` will move, for the progress bar: the
  // dataset's size times the share of its chunks the source allocated.
  Result<uint64_t> ExpectedBytes(hid_t d, const Step& step) {
    uint64_t size = ItemSize(step.options.dtype);
    for (uint64_t n : step.options.shape) size *= n;
    if (!step.skip_unallocated || size == 0) return size;
    if (step.chunked) {
      hsize_t allocated = 0;
      H5Handle space(H5Dget_space(d));
      if (!space.valid() || H5Dget_num_chunks(d, space.get(), &allocated) < 0) {
        return Err(Hdf5Error(Code::kCorruption, fmt::format("{}: counting its chunks", step.src)));
      }
      BlockWalk walk(step.options.shape, step.options.chunks, 1, 1);
      return static_cast<uint64_t>(
          static_cast<double>(size) *
          std::min(1.0, static_cast<double>(allocated) / static_cast<double>(walk.num_chunks())));
    }
    H5D_space_status_t status;
    if (H5Dget_space_status(d, &status) < 0) return Err(Hdf5Error(Code::kCorruption, step.src));
    return status == H5D_SPACE_STATUS_NOT_ALLOCATED ? 0 : size;
  }

  // ------------------------------------------------------------ the copy

  Status Execute(const Step& s) {
    SLABFS_RETURN_IF_ERROR(InterruptGuard::Check());
    ObjectId id;
    Dataset ds;
    if (!s.dataset) {
      if (s.create) {
        auto made = dest_.MakeGroups(s.dest, /*parents=*/false);
        if (!made) return AddContext(made.error(), s.dest);
        id = *made;
      } else {
        auto found = dest_.Resolve(s.dest);
        if (!found) return AddContext(found.error(), s.dest);
        id = *found;
      }
    } else {
      auto made = dest_.CreateDataset(s.dest, s.options);
      if (!made) return AddContext(made.error(), s.dest);
      ds = *made;
      id = ds.id();
    }
    for (const auto& [name, value] : s.attrs) {
      SLABFS_RETURN_IF_ERROR(AddContext(dest_.SetAttribute(id, name, value), s.dest));
    }
    return s.dataset ? CopyData(s, ds) : Status::OK();
  }

  Status CopyData(const Step& s, Dataset& ds) {
    SLABFS_ASSIGN_OR_RETURN(H5Handle dapl, Checked(H5Pcreate(H5P_DATASET_ACCESS), Code::kIOError, s.src));
    // Each chunk is read once, by one read of whole chunks: no cache needed.
    SLABFS_RETURN_IF_ERROR(
        Checked(H5Pset_chunk_cache(dapl.get(), H5D_CHUNK_CACHE_NSLOTS_DEFAULT, 0, H5D_CHUNK_CACHE_W0_DEFAULT),
                Code::kIOError, s.src));
    SLABFS_ASSIGN_OR_RETURN(H5Handle d,
                            Checked(H5Dopen2(file_.get(), s.src.c_str(), dapl.get()), Code::kCorruption, s.src));
    const DatasetInfo info = ds.info();
    const size_t item = ItemSize(info.dtype);
    const hid_t memtype = Hdf5TypeOf(info.dtype);
    const std::string reading = fmt::format("{}: reading", s.src);
    if (s.scalar) {
      std::string value(item, '\0');
      SLABFS_RETURN_IF_ERROR(
          Checked(H5Dread(d.get(), memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, value.data()), Code::kCorruption, reading));
      SLABFS_RETURN_IF_ERROR(AddContext(ds.Write(Slab::Box({0}, {1}), value.data()), s.dest));
      return progress_.Advance(item, 1);
    }
    if (info.num_elements == 0) return Status::OK();
    if (s.copy_encoded && s.skip_unallocated && !o_.recompress) return CopyEncoded(s, d.get(), ds, info);
    const size_t rank = info.shape.size();
    BlockWalk walk(info.shape, info.chunks, item, kTransferBlockBytes);

    SLABFS_ASSIGN_OR_RETURN(H5Handle fspace, Checked(H5Dget_space(d.get()), Code::kCorruption, s.src));
    // Which chunks to copy: all, none, a list, or asked block by block.
    enum class Which { kAll, kNone, kListed, kAsked } which = Which::kAll;
    std::vector<uint64_t> listed;  // chunk indexes, sorted
    if (s.skip_unallocated && s.chunked) {
      hsize_t allocated = 0;
      if (H5Dget_num_chunks(d.get(), fspace.get(), &allocated) < 0) {
        return Hdf5Error(Code::kCorruption, fmt::format("{}: counting its chunks", s.src));
      }
      if (allocated == 0) {
        which = Which::kNone;
      } else if (allocated < walk.num_chunks() && allocated <= kMaxListedHdf5Chunks) {
        which = Which::kListed;
        std::vector<hsize_t> offset(rank);
        for (hsize_t i = 0; i < allocated; ++i) {
          unsigned mask;
          haddr_t addr;
          hsize_t size;
          if (H5Dget_chunk_info(d.get(), fspace.get(), i, offset.data(), &mask, &addr, &size) < 0) {
            return Hdf5Error(Code::kCorruption, fmt::format("{}: listing its chunks", s.src));
          }
          Dims coords(rank);
          bool inside = true;
          for (size_t k = 0; k < rank; ++k) {
            coords[k] = offset[k] / info.chunks[k];
            inside = inside && coords[k] < walk.grid()[k];
          }
          if (inside) listed.push_back(walk.ChunkIndex(coords));
        }
        std::sort(listed.begin(), listed.end());
        listed.erase(std::unique(listed.begin(), listed.end()), listed.end());
      } else if (allocated < walk.num_chunks()) {
        which = Which::kAsked;
      }
    } else if (s.skip_unallocated) {
      H5D_space_status_t status;
      if (H5Dget_space_status(d.get(), &status) < 0) return Hdf5Error(Code::kCorruption, s.src);
      if (status == H5D_SPACE_STATUS_NOT_ALLOCATED) which = Which::kNone;
    }
    if (which == Which::kNone) return Status::OK();

    std::vector<uint64_t> blocks;
    if (which == Which::kListed) {
      for (uint64_t c : listed) blocks.push_back(walk.BlockOfChunk(c));
      blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
    }
    std::vector<char> buf;
    std::vector<Dims> parts;
    Dims part_start, part_count;
    const uint64_t num_blocks = which == Which::kListed ? blocks.size() : walk.num_blocks();
    for (uint64_t i = 0; i < num_blocks; ++i) {
      const BlockWalk::Block b = walk.BlockAt(which == Which::kListed ? blocks[i] : i);
      parts.clear();
      if (which != Which::kAll) {
        SLABFS_RETURN_IF_ERROR(walk.ForEachChunk(b, [&](const Dims& c) -> Status {
          bool stored;
          if (which == Which::kListed) {
            stored = std::binary_search(listed.begin(), listed.end(), walk.ChunkIndex(c));
          } else {
            std::vector<hsize_t> offset(rank);
            for (size_t k = 0; k < rank; ++k) offset[k] = c[k] * info.chunks[k];
            unsigned mask = 0;
            haddr_t addr = HADDR_UNDEF;
            hsize_t bytes = 0;
            if (H5Dget_chunk_info_by_coord(d.get(), offset.data(), &mask, &addr, &bytes) < 0) {
              return Hdf5Error(Code::kCorruption, fmt::format("{}: finding its chunks", s.src));
            }
            stored = addr != HADDR_UNDEF && bytes > 0;
          }
          if (stored) parts.push_back(c);
          return Status::OK();
        }));
        if (parts.empty()) continue;
      }
      buf.resize(static_cast<size_t>(b.elements) * item);
      const std::vector<hsize_t> start = ToHsize(b.start), count = ToHsize(b.count);
      SLABFS_RETURN_IF_ERROR(
          Checked(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr),
                  Code::kCorruption, reading));
      SLABFS_ASSIGN_OR_RETURN(H5Handle mspace, Checked(H5Screate_simple(static_cast<int>(rank), count.data(), nullptr),
                                                       Code::kIOError, reading));
      SLABFS_RETURN_IF_ERROR(Checked(H5Dread(d.get(), memtype, mspace.get(), fspace.get(), H5P_DEFAULT, buf.data()),
                                     Code::kCorruption, reading));
      if (which == Which::kAll || parts.size() == b.chunks) {
        SLABFS_RETURN_IF_ERROR(AddContext(ds.Write(Slab::Box(b.start, b.count), buf.data()), s.dest));
      } else {
        for (const Dims& c : parts) {
          walk.ChunkBox(c, &part_start, &part_count);
          Dims offset(rank);
          for (size_t k = 0; k < rank; ++k) offset[k] = part_start[k] - b.start[k];
          MemSpace mem{b.count, Slab::Box(offset, part_count)};
          SLABFS_RETURN_IF_ERROR(AddContext(ds.Write(Slab::Box(part_start, part_count), buf.data(), &mem), s.dest));
        }
      }
      SLABFS_RETURN_IF_ERROR(progress_.Advance(buf.size(), which == Which::kAll ? b.chunks : parts.size()));
    }
    return Status::OK();
  }

  // The chunks of a source whose encoding the container shares: each
  // allocated whole chunk is read as stored (H5Dread_chunk) and stored as
  // it is after one decode that checks it; edge chunks (stored trimmed in
  // the container) and chunks the engine does not take are read through
  // libhdf5 and written. Unallocated chunks stay unallocated.
  Status CopyEncoded(const Step& s, hid_t d, Dataset& ds, const DatasetInfo& info) {
    const size_t rank = info.shape.size();
    const size_t item = ItemSize(info.dtype);
    const hid_t memtype = Hdf5TypeOf(info.dtype);
    Dims grid(rank);
    uint64_t chunk_elements = 1;
    for (size_t k = 0; k < rank; ++k) {
      grid[k] = info.shape[k] / info.chunks[k] + (info.shape[k] % info.chunks[k] != 0 ? 1 : 0);
      chunk_elements *= info.chunks[k];
    }
    const size_t chunk_bytes = static_cast<size_t>(chunk_elements) * item;
    std::vector<hsize_t> offset(rank), count(rank);
    std::vector<char> raw, decoded;
    Dims coords(rank, 0), start(rank), box(rank);
    SLABFS_ASSIGN_OR_RETURN(H5Handle fspace, Checked(H5Dget_space(d), Code::kCorruption, s.src));
    for (bool more = true; more;) {
      bool whole = true;
      for (size_t k = 0; k < rank; ++k) {
        start[k] = coords[k] * info.chunks[k];
        box[k] = std::min(info.chunks[k], info.shape[k] - start[k]);
        whole &= box[k] == info.chunks[k];
        offset[k] = start[k];
        count[k] = box[k];
      }
      unsigned mask = 0;
      haddr_t addr = HADDR_UNDEF;
      hsize_t stored = 0;
      if (H5Dget_chunk_info_by_coord(d, offset.data(), &mask, &addr, &stored) < 0) {
        return Hdf5Error(Code::kCorruption, fmt::format("{}: finding its chunks", s.src));
      }
      if (addr != HADDR_UNDEF && stored > 0) {
        Status copied = Status::NotSupported("");
        if (whole && stored <= chunk_bytes + chunk_bytes / 2 + 4096) {
          raw.resize(stored);
          uint32_t filters = 0;
          if (H5Dread_chunk(d, H5P_DEFAULT, offset.data(), &filters, raw.data()) < 0) {
            return Hdf5Error(Code::kCorruption, fmt::format("{}: reading a chunk as stored", s.src));
          }
          copied = ds.WriteEncodedChunk(coords, std::string_view(raw.data(), raw.size()), filters);
          if (copied.code() == Code::kCorruption) return AddContext(copied, s.dest);
          if (!copied.ok() && copied.code() != Code::kInvalidArgument && copied.code() != Code::kNotSupported) {
            return AddContext(copied, s.dest);
          }
        }
        if (!copied.ok()) {
          // Through libhdf5: decoded there, encoded again here.
          decoded.resize(static_cast<size_t>(chunk_elements) * item);
          SLABFS_RETURN_IF_ERROR(
              Checked(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, offset.data(), nullptr, count.data(), nullptr),
                      Code::kCorruption, s.src));
          SLABFS_ASSIGN_OR_RETURN(
              H5Handle mspace,
              Checked(H5Screate_simple(static_cast<int>(rank), count.data(), nullptr), Code::kIOError, s.src));
          SLABFS_RETURN_IF_ERROR(Checked(H5Dread(d, memtype, mspace.get(), fspace.get(), H5P_DEFAULT, decoded.data()),
                                         Code::kCorruption, fmt::format("{}: reading", s.src)));
          SLABFS_RETURN_IF_ERROR(AddContext(ds.Write(Slab::Box(start, box), decoded.data()), s.dest));
        }
        SLABFS_RETURN_IF_ERROR(progress_.Advance(chunk_bytes, 1));
      }
      more = false;
      for (size_t k = rank; k-- > 0;) {
        if (++coords[k] < grid[k]) {
          more = true;
          break;
        }
        coords[k] = 0;
      }
    }
    return Status::OK();
  }

  const TreeImportOptions& o_;
  Container& dest_;
  Progress& progress_;
  std::ostream& out_;
  H5Handle file_;
  std::optional<DimensionNamer> namer_;
  std::vector<Step> steps_;
  std::vector<std::pair<uint64_t, size_t>> expected_;  // bytes to copy, step
  std::unordered_map<haddr_t, std::string> seen_;      // object address -> source path
};

}  // namespace

Status ImportHdf5(const TreeImportOptions& o, Container& dest, Progress& progress, std::ostream& out) {
  Hdf5Session session;
  Importer importer(o, dest, progress, out);
  return importer.Run();
}

}  // namespace slabfs::tools::convert
