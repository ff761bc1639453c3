// The HDF5 store: opening (the one walk of the file with libhdf5) and the
// tree it found. Reads go through Hdf5Dataset (hdf5_dataset.cc) alone.
#include "stores/hdf5/hdf5_store.h"

#include <hdf5.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/cache/chunk_cache.h"
#include "stores/hdf5/hdf5_dataset.h"
#include "stores/store_tree.h"
#include "tools/convert/hdf5_attrs.h"
#include "tools/convert/hdf5_netcdf.h"
#include "tools/convert/hdf5_util.h"

namespace slabfs::stores {
namespace {

using tools::convert::Checked;
using tools::convert::H5Handle;
using tools::convert::Hdf5Error;

constexpr uint64_t kMaxGridAsked = uint64_t{1} << 24;
// Groups nested deeper than this are not walked (a hostile file).
constexpr int kMaxDepth = 256;

// libhdf5 is not thread-safe (Debian builds it without its global lock):
// every store's open takes this lock around all of its libhdf5 calls.
std::mutex& Hdf5Mutex() {
  static std::mutex mu;
  return mu;
}

struct Link {
  std::string name;
  H5L_type_t type;
};

herr_t CollectLink(hid_t, const char* name, const H5L_info_t* info, void* data) {
  static_cast<std::vector<Link>*>(data)->push_back({name, info->type});
  return 0;
}

// A source element type as a slabfs dtype, with its byte order, or why not.
struct TypeInfo {
  std::optional<DType> dtype;
  bool big_endian = false;
  std::string source;  // ">f4"
  std::string why_not;
};

TypeInfo ReadType(hid_t type) {
  TypeInfo t;
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  const H5T_order_t order = H5Tget_order(type);
  if (cls == H5T_INTEGER) {
    const size_t precision = H5Tget_precision(type);
    const int offset = H5Tget_offset(type);
    if ((size == 1 || size == 2 || size == 4 || size == 8) && (precision != size * 8 || offset != 0)) {
      t.why_not = fmt::format("{}-bit integer in {} bytes", precision, size);
      H5Eclear2(H5E_DEFAULT);
      return t;
    }
  } else if (cls == H5T_FLOAT) {
    const bool ieee = H5Tequal(type, H5T_IEEE_F32LE) > 0 || H5Tequal(type, H5T_IEEE_F32BE) > 0 ||
                      H5Tequal(type, H5T_IEEE_F64LE) > 0 || H5Tequal(type, H5T_IEEE_F64BE) > 0;
    H5Eclear2(H5E_DEFAULT);
    if (!ieee && (size == 4 || size == 8)) {
      t.why_not = fmt::format("{}-byte float that is not IEEE 754", size);
      return t;
    }
  }
  tools::convert::TypeMatch m = tools::convert::MatchHdf5Type(type);
  if (!m.dtype) {
    t.why_not = m.why_not;
    return t;
  }
  if (size > 1 && order != H5T_ORDER_LE && order != H5T_ORDER_BE) {
    t.why_not = "an element byte order other than little- or big-endian";
    return t;
  }
  t.dtype = m.dtype;
  t.big_endian = size > 1 && order == H5T_ORDER_BE;
  t.source = (size == 1 ? "|" : t.big_endian ? ">" : "<") + std::string(DTypeName(*m.dtype));
  return t;
}

class Hdf5Store final : public TreeStore {
 public:
  Hdf5Store(std::string path, std::shared_ptr<SourceFile> file, std::shared_ptr<engine::ChunkCache> cache)
      : TreeStore(std::move(path), std::move(cache)), file_(std::move(file)) {}

  std::string_view format() const override { return "hdf5"; }

 private:
  std::shared_ptr<const StoreDataset> MakeDataset(const StoreNode& n, ObjectId id) const override {
    return std::make_shared<Hdf5Dataset>(std::static_pointer_cast<const DatasetLayout>(n.layout), file_, cache(), id);
  }

  std::shared_ptr<SourceFile> file_;
};

// The one walk of the file with libhdf5.
class Walker {
 public:
  Walker(hid_t file, Hdf5Store* store) : file_(file), store_(store), namer_(file) {}

  Status WalkRoot() {
    // libhdf5's chunk addresses are relative to the superblock's base
    // address, which is past the user block (H5Dget_offset's are not).
    SLABFS_ASSIGN_OR_RETURN(H5Handle fcpl,
                            Checked(H5Fget_create_plist(file_), Code::kCorruption, "reading the file's properties"));
    hsize_t userblock = 0;
    if (H5Pget_userblock(fcpl.get(), &userblock) < 0) return Hdf5Error(Code::kCorruption, "reading its user block");
    base_ = userblock;
    SLABFS_ASSIGN_OR_RETURN(H5Handle root,
                            Checked(H5Gopen2(file_, "/", H5P_DEFAULT), Code::kCorruption, "opening the root group"));
    store_->AddRoot();
    H5O_info_t info;
    SLABFS_RETURN_IF_ERROR(Checked(H5Oget_info2(root.get(), &info, H5O_INFO_BASIC), Code::kCorruption, "/"));
    seen_.emplace(info.addr, "/");
    return WalkGroup(root.get(), kRootId, "/", 0);
  }

 private:
  void Skip(std::string path, std::string reason) { store_->Skip(std::move(path), std::move(reason)); }

  ObjectId AddNode(ObjectId parent, const std::string& name, const std::string& path, ObjectKind kind) {
    return store_->AddNode(parent, name, path, kind);
  }

  // Attributes of obj (the source path `src`, shown as `shown`) onto node id.
  Status ReadAttributes(hid_t obj, const std::string& src, ObjectId id, bool is_scale) {
    SLABFS_ASSIGN_OR_RETURN(std::vector<std::string> names, tools::convert::Hdf5AttributeNames(obj, src));
    for (const std::string& name : names) {
      if (tools::convert::IsDimensionBookkeeping(name, is_scale)) continue;
      const std::string& shown = store_->node(id).path;
      if (Status v = ValidateName(name); !v.ok()) {
        Skip(fmt::format("{} attribute '{}'", shown, name), "the name is not valid in slabfs: " + v.message());
        continue;
      }
      auto a = tools::convert::ReadHdf5Attribute(obj, src, name);
      if (!a) {
        Skip(fmt::format("{} attribute '{}'", shown, name), a.error().message());
        continue;
      }
      if (!a->value) {
        Skip(fmt::format("{} attribute '{}'", shown, name), a->why_not);
        continue;
      }
      store_->node(id).attrs.insert_or_assign(name, std::move(*a->value));
    }
    return Status::OK();
  }

  Status WalkGroup(hid_t g, ObjectId id, const std::string& src, int depth) {
    const std::string shown = store_->node(id).path;
    if (Status s = ReadAttributes(g, src, id, false); !s.ok()) Skip(shown + " (its attributes)", s.message());
    std::vector<Link> links;
    if (H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, nullptr, CollectLink, &links) < 0) {
      Skip(shown + " (its members)", Hdf5Error(Code::kCorruption, "listing the group").message());
      return Status::OK();
    }
    for (const Link& link : links) {
      const std::string child_src = tools::convert::JoinPath(src, link.name);
      // netCDF-4 keeps a variable named like a dimension it does not span
      // as "_nc4_non_coord_NAME": it is NAME.
      const std::string name = tools::convert::NetcdfVariableName(link.name);
      const std::string child = tools::convert::JoinPath(shown, name);
      if (Status v = ValidateName(name); !v.ok()) {
        Skip(child_src, "the name is not valid in slabfs: " + v.message());
        continue;
      }
      if (link.type == H5L_TYPE_SOFT) {
        Skip(child_src, "a soft link (stores show no links)");
        continue;
      }
      if (link.type != H5L_TYPE_HARD) {
        Skip(child_src,
             link.type == H5L_TYPE_EXTERNAL ? "an external link (other files are not read)" : "a user-defined link");
        continue;
      }
      H5O_info_t info;
      if (H5Oget_info_by_name2(g, link.name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
        Skip(child_src, Hdf5Error(Code::kCorruption, "reading its object header").message());
        continue;
      }
      if (auto it = seen_.find(info.addr); it != seen_.end()) {
        Skip(child_src, fmt::format("the same object as {} (a second hard link)", it->second));
        continue;
      }
      auto taken = [&] {
        if (!store_->node(id).children.contains(name)) return false;
        Skip(child_src, fmt::format("{} is taken by another member of the group", child));
        return true;
      };
      if (info.type == H5O_TYPE_GROUP) {
        if (taken()) continue;
        if (depth + 1 > kMaxDepth) {
          Skip(child_src, fmt::format("groups nested deeper than {}", kMaxDepth));
          continue;
        }
        auto opened = Checked(H5Gopen2(g, link.name.c_str(), H5P_DEFAULT), Code::kCorruption, "opening the group");
        if (!opened) {
          Skip(child_src, opened.error().message());
          continue;
        }
        seen_.emplace(info.addr, child_src);
        const ObjectId cid = AddNode(id, name, child, ObjectKind::kGroup);
        SLABFS_RETURN_IF_ERROR(WalkGroup(opened->get(), cid, child_src, depth + 1));
      } else if (info.type == H5O_TYPE_DATASET) {
        seen_.emplace(info.addr, child_src);
        auto opened = Checked(H5Dopen2(g, link.name.c_str(), H5P_DEFAULT), Code::kCorruption, "opening the dataset");
        if (!opened) {
          Skip(child_src, opened.error().message());
          continue;
        }
        // netCDF's dimensions without a variable are placeholders, not data.
        if (namer_.IsPlaceholder(opened->get())) continue;
        if (taken()) continue;
        auto layout = LearnDataset(opened->get(), child_src, child);
        if (!layout) {
          Skip(child_src, layout.error().message());
          continue;
        }
        if (!*layout) continue;  // skipped with its reason
        const ObjectId cid = AddNode(id, name, child, ObjectKind::kDataset);
        const bool is_scale = namer_.IsScale(opened->get());
        if (Status s = ReadAttributes(opened->get(), child_src, cid, is_scale); !s.ok())
          Skip(child + " (its attributes)", s.message());
        AddDimensionNames(opened->get(), child_src, cid, **layout);
        store_->node(cid).layout = std::move(*layout);
      } else {
        Skip(child_src, "a named datatype, not data");
      }
    }
    return Status::OK();
  }

  void AddDimensionNames(hid_t d, const std::string& src, ObjectId id, const DatasetLayout& l) {
    if (l.info.scalar) return;
    auto names = namer_.Names(d, src, static_cast<int>(l.info.dataset.shape.size()));
    if (!names) {
      Skip(store_->node(id).path + " (its dimension names)", names.error().message());
      return;
    }
    if (*names) {
      store_->node(id).attrs.insert_or_assign(std::string(tools::convert::kArrayDimensions),
                                              Attribute::String(tools::convert::DimensionsJson(**names)));
    }
  }

  // The filters of a chunked dataset, or nullopt (skipped with its reason).
  Result<std::optional<Hdf5Pipeline>> LearnFilters(hid_t dcpl, const std::string& src, size_t item) {
    const int n = H5Pget_nfilters(dcpl);
    if (n < 0) return Err(Hdf5Error(Code::kCorruption, "reading its filters"));
    std::vector<Hdf5Filter> filters;
    for (int i = 0; i < n; ++i) {
      unsigned flags = 0, config = 0;
      unsigned cd[8] = {};
      size_t ncd = 8;
      char name[64] = {};
      const H5Z_filter_t id =
          H5Pget_filter2(dcpl, static_cast<unsigned>(i), &flags, &ncd, cd, sizeof name, name, &config);
      if (id < 0) return Err(Hdf5Error(Code::kCorruption, "reading its filters"));
      Hdf5Filter f;
      if (id == H5Z_FILTER_DEFLATE) {
        f.kind = Hdf5Filter::Kind::kDeflate;
        f.level = ncd > 0 ? cd[0] : 6;
      } else if (id == H5Z_FILTER_SHUFFLE) {
        f.kind = Hdf5Filter::Kind::kShuffle;
        // libhdf5 records the element size when the dataset is made.
        f.shuffle_item = ncd > 0 && cd[0] > 0 ? cd[0] : static_cast<uint32_t>(item);
      } else if (id == H5Z_FILTER_FLETCHER32) {
        f.kind = Hdf5Filter::Kind::kFletcher32;
      } else {
        Skip(src, fmt::format("filter {} (id {}), which the store does not decode (deflate, shuffle, fletcher32)",
                              tools::convert::Hdf5FilterName(id, name), id));
        return std::optional<Hdf5Pipeline>();
      }
      filters.push_back(f);
    }
    auto p = Hdf5Pipeline::Make(std::move(filters));
    if (!p) {
      Skip(src, "its filter pipeline: " + p.error().message());
      return std::optional<Hdf5Pipeline>();
    }
    return std::optional<Hdf5Pipeline>(std::move(*p));
  }

  // Everything a read needs of one dataset, or null (skipped with its
  // reason). `shown` is its path in the store.
  Result<std::shared_ptr<DatasetLayout>> LearnDataset(hid_t d, const std::string& src, const std::string& shown) {
    using Out = std::shared_ptr<DatasetLayout>;
    SLABFS_ASSIGN_OR_RETURN(H5Handle type, Checked(H5Dget_type(d), Code::kCorruption, "reading its type"));
    const TypeInfo t = ReadType(type.get());
    if (!t.dtype) {
      Skip(src, t.why_not + " data (the store reads integers and IEEE floats of 1 to 8 bytes)");
      return Out();
    }
    auto l = std::make_shared<DatasetLayout>();
    l->path = shown;
    l->item_size = ItemSize(*t.dtype);
    l->swap_bytes = t.big_endian;
    l->info.source_dtype = t.source;
    DatasetInfo& info = l->info.dataset;
    info.dtype = *t.dtype;

    SLABFS_ASSIGN_OR_RETURN(H5Handle space, Checked(H5Dget_space(d), Code::kCorruption, "reading its dataspace"));
    const H5S_class_t space_class = H5Sget_simple_extent_type(space.get());
    if (space_class == H5S_NULL) {
      Skip(src, "a dataset with no elements (null dataspace)");
      return Out();
    }
    if (space_class == H5S_SCALAR) {
      l->info.scalar = true;
      info.shape = {1};
      info.max_shape = {1};
    } else if (space_class == H5S_SIMPLE) {
      const int rank = H5Sget_simple_extent_ndims(space.get());
      if (rank < 1 || rank > kMaxRank) {
        Skip(src, fmt::format("rank {} (slabfs datasets have 1 to {} dimensions)", rank, kMaxRank));
        return Out();
      }
      hsize_t dims[H5S_MAX_RANK], maxdims[H5S_MAX_RANK];
      if (H5Sget_simple_extent_dims(space.get(), dims, maxdims) < 0)
        return Err(Hdf5Error(Code::kCorruption, "reading its dataspace"));
      slabfs_u128 bytes = l->item_size;
      for (int i = 0; i < rank; ++i) {
        info.shape.push_back(dims[i]);
        info.max_shape.push_back(maxdims[i] == H5S_UNLIMITED ? kUnlimited : maxdims[i]);
        bytes *= dims[i];
      }
      if (bytes > static_cast<slabfs_u128>(INT64_MAX)) {
        Skip(src, "larger than 2^63 bytes");
        return Out();
      }
    } else {
      return Err(Hdf5Error(Code::kCorruption, "reading its dataspace"));
    }
    const size_t rank = info.shape.size();
    info.num_elements = 1;
    for (uint64_t n : info.shape) info.num_elements *= n;
    info.size_bytes = info.num_elements * l->item_size;
    info.length_resizable = info.max_shape[0] != info.shape[0];

    SLABFS_ASSIGN_OR_RETURN(H5Handle dcpl,
                            Checked(H5Dget_create_plist(d), Code::kCorruption, "reading its creation properties"));
    const H5D_layout_t layout = H5Pget_layout(dcpl.get());
    if (H5Pget_external_count(dcpl.get()) > 0) {
      Skip(src, "its data lives in external files, which are not read");
      return Out();
    }
    H5Eclear2(H5E_DEFAULT);
    switch (layout) {
      case H5D_CHUNKED: break;
      case H5D_CONTIGUOUS: break;
      case H5D_COMPACT: break;
      case H5D_VIRTUAL: Skip(src, "a virtual dataset (its source files are not read)"); return Out();
      default: return Err(Hdf5Error(Code::kCorruption, "reading its layout"));
    }
    SLABFS_RETURN_IF_ERROR_R(LearnFill(dcpl.get(), l.get()));

    if (layout == H5D_COMPACT) {
      // At most 64 KiB inside the object header: read now, with libhdf5
      // (converted to little-endian), and kept.
      l->info.layout = StoreLayout::kContiguous;
      for (uint64_t n : info.shape) l->chunk.push_back(std::max<uint64_t>(n, 1));
      info.chunks = l->chunk;
      info.num_chunks = 1;
      if (info.size_bytes > (uint64_t{1} << 16)) return Err(Status::Corruption("a compact dataset larger than 64 KiB"));
      l->in_header = true;
      l->swap_bytes = false;
      l->header_data.assign(info.size_bytes, '\0');
      if (info.size_bytes > 0) {
        if (H5Dread(d, tools::convert::Hdf5TypeOf(info.dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, l->header_data.data()) <
            0) {
          return Err(Hdf5Error(Code::kCorruption, "reading its compact data"));
        }
        l->keys.push_back(0);
        l->records.push_back({0, info.size_bytes, 0});
        info.allocated_chunks = 1;
        info.stored_bytes = info.size_bytes;
      }
      return l;
    }
    if (layout == H5D_CONTIGUOUS) {
      l->info.layout = StoreLayout::kContiguous;
      for (uint64_t n : info.shape) l->chunk.push_back(std::max<uint64_t>(n, 1));
      info.chunks = l->chunk;
      info.num_chunks = 1;
      const haddr_t addr = H5Dget_offset(d);
      H5Eclear2(H5E_DEFAULT);
      if (addr != HADDR_UNDEF && info.size_bytes > 0) {
        l->keys.push_back(0);
        l->records.push_back({addr, info.size_bytes, 0});
        info.allocated_chunks = 1;
        info.stored_bytes = info.size_bytes;
      }
      return l;
    }

    l->info.layout = StoreLayout::kChunked;
    unsigned opts = 0;
    if (H5Pget_chunk_opts(dcpl.get(), &opts) >= 0 && (opts & H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS) != 0) {
      Skip(src, "its edge chunks are stored unfiltered (H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS; not read yet)");
      return Out();
    }
    H5Eclear2(H5E_DEFAULT);
    hsize_t chunk[H5S_MAX_RANK];
    if (H5Pget_chunk(dcpl.get(), static_cast<int>(rank), chunk) != static_cast<int>(rank))
      return Err(Hdf5Error(Code::kCorruption, "reading its chunk shape"));
    slabfs_u128 chunk_bytes = l->item_size;
    for (size_t i = 0; i < rank; ++i) {
      if (chunk[i] == 0) return Err(Status::Corruption("a chunk dimension of 0"));
      l->chunk.push_back(chunk[i]);
      chunk_bytes *= chunk[i];
    }
    if (chunk_bytes > (slabfs_u128{1} << 32)) {
      Skip(src, "chunks of more than 4 GiB");
      return Out();
    }
    info.chunks = l->chunk;
    SLABFS_ASSIGN_OR_RETURN(std::optional<Hdf5Pipeline> pipeline, LearnFilters(dcpl.get(), src, l->item_size));
    if (!pipeline) return Out();
    l->pipeline = std::move(*pipeline);
    l->decodes = l->pipeline.compresses();
    l->info.source_filters = l->pipeline.ToString();
    info.filters = l->pipeline.SlabFilters();
    SLABFS_RETURN_IF_ERROR_R(LearnChunks(d, space.get(), l.get()));
    return l;
  }

  // The fill value, in little-endian elements (libhdf5 converts it).
  Status LearnFill(hid_t dcpl, DatasetLayout* l) {
    DatasetInfo& info = l->info.dataset;
    info.fill.assign(l->item_size, '\0');
    H5D_fill_value_t status;
    if (H5Pfill_value_defined(dcpl, &status) < 0) return Hdf5Error(Code::kCorruption, "reading its fill value");
    if (status != H5D_FILL_VALUE_UNDEFINED &&
        H5Pget_fill_value(dcpl, tools::convert::Hdf5TypeOf(info.dtype), info.fill.data()) < 0) {
      return Hdf5Error(Code::kCorruption, "reading its fill value");
    }
    return Status::OK();
  }

  // The chunk map: where each stored chunk is, in grid order.
  Status LearnChunks(hid_t d, hid_t space, DatasetLayout* l) {
    DatasetInfo& info = l->info.dataset;
    const size_t rank = info.shape.size();
    Dims grid(rank);
    uint64_t grid_total = 1;
    for (size_t k = 0; k < rank; ++k) {
      grid[k] = (info.shape[k] + l->chunk[k] - 1) / l->chunk[k];
      grid_total = grid[k] != 0 && grid_total > UINT64_MAX / grid[k] ? UINT64_MAX : grid_total * grid[k];
    }
    info.num_chunks = grid_total;
    hsize_t n = 0;
    if (H5Dget_num_chunks(d, space, &n) < 0) return Hdf5Error(Code::kCorruption, "counting its chunks");
    if (n == 0 || grid_total == 0) return Status::OK();
    std::vector<std::pair<uint64_t, ChunkRecord>> found;
    std::vector<hsize_t> offset(rank);
    auto add = [&](unsigned mask, haddr_t addr, hsize_t size) -> Status {
      if (addr == HADDR_UNDEF || size == 0) return Status::OK();
      uint64_t linear = 0;
      for (size_t k = 0; k < rank; ++k) {
        if (offset[k] % l->chunk[k] != 0)
          return Status::Corruption(
              fmt::format("a chunk at element {} of dimension {}, not on a chunk boundary", offset[k], k));
        const uint64_t c = offset[k] / l->chunk[k];
        if (c >= grid[k]) return Status::OK();  // outside the current shape (after a shrink)
        linear = linear * grid[k] + c;
      }
      if (addr > UINT64_MAX - base_) return Status::Corruption("a chunk address past 2^64");
      found.emplace_back(linear, ChunkRecord{addr + base_, size, mask});
      return Status::OK();
    };
    if (n <= tools::convert::kMaxListedHdf5Chunks || grid_total > kMaxGridAsked) {
      if (n > tools::convert::kMaxListedHdf5Chunks) {
        spdlog::warn("hdf5 store {}: {} has {} chunks in a grid of {}: listing them costs n^2 with libhdf5 1.10",
                     store_->path(), l->path, n, grid_total);
      }
      for (hsize_t i = 0; i < n; ++i) {
        unsigned mask = 0;
        haddr_t addr = HADDR_UNDEF;
        hsize_t size = 0;
        if (H5Dget_chunk_info(d, space, i, offset.data(), &mask, &addr, &size) < 0)
          return Hdf5Error(Code::kCorruption, "listing its chunks");
        SLABFS_RETURN_IF_ERROR(add(mask, addr, size));
      }
    } else {
      Dims c(rank, 0);
      for (bool more = true; more;) {
        for (size_t k = 0; k < rank; ++k) offset[k] = c[k] * l->chunk[k];
        unsigned mask = 0;
        haddr_t addr = HADDR_UNDEF;
        hsize_t size = 0;
        if (H5Dget_chunk_info_by_coord(d, offset.data(), &mask, &addr, &size) < 0)
          return Hdf5Error(Code::kCorruption, "finding its chunks");
        SLABFS_RETURN_IF_ERROR(add(mask, addr, size));
        more = false;
        for (size_t k = rank; k-- > 0;) {
          if (++c[k] < grid[k]) {
            more = true;
            break;
          }
          c[k] = 0;
        }
      }
    }
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < found.size(); ++i) {
      if (i > 0 && found[i].first == found[i - 1].first)
        return Status::Corruption("its chunk map names one chunk twice");
      l->keys.push_back(found[i].first);
      l->records.push_back(found[i].second);
      info.stored_bytes += found[i].second.bytes;
    }
    info.allocated_chunks = l->keys.size();
    return Status::OK();
  }

  hid_t file_;
  Hdf5Store* store_;
  tools::convert::DimensionNamer namer_;
  std::unordered_map<haddr_t, std::string> seen_;  // object address -> first source path
  uint64_t base_ = 0;                              // the superblock's base address
};

}  // namespace

Result<std::unique_ptr<Store>> OpenHdf5Store(const std::string& path, const Hdf5StoreOptions& options) {
  SLABFS_ASSIGN_OR_RETURN(std::shared_ptr<SourceFile> file, SourceFile::Open(path));
  auto cache = std::make_shared<engine::ChunkCache>(options.cache_bytes, options.cache_bytes);
  auto store = std::make_unique<Hdf5Store>(path, file, std::move(cache));
  std::lock_guard<std::mutex> lock(Hdf5Mutex());
  tools::convert::Hdf5Session session;
  SLABFS_ASSIGN_OR_RETURN(H5Handle fapl,
                          Checked(H5Pcreate(H5P_FILE_ACCESS), Code::kIOError, path + ": a file access list"));
  // libhdf5's file lock refuses a file a writer holds; where the
  // filesystem has no locks (some NFS), the file still opens.
  (void)H5Pset_file_locking(fapl.get(), true, true);
  H5Eclear2(H5E_DEFAULT);
  SLABFS_ASSIGN_OR_RETURN(H5Handle h5, Checked(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), Code::kCorruption,
                                               path + ": cannot open it as HDF5"));
  // The file libhdf5 opened is the one the store preads, not another one
  // renamed into its place meanwhile.
  void* handle = nullptr;
  struct stat st;
  if (H5Fget_vfd_handle(h5.get(), H5P_DEFAULT, &handle) >= 0 && handle != nullptr &&
      ::fstat(*static_cast<int*>(handle), &st) == 0 && !file->SameFile(st.st_dev, st.st_ino)) {
    return Err(Status::IOError(path + ": the file was replaced while it was being opened; try again"));
  }
  H5Eclear2(H5E_DEFAULT);
  Walker walker(h5.get(), store.get());
  SLABFS_RETURN_IF_ERROR_R(walker.WalkRoot().WithContext(path));
  SLABFS_RETURN_IF_ERROR_R(h5.Close(path + ": closing"));
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace slabfs::stores
