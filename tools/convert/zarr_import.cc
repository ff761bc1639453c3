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
#include <sys/stat.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include "tools/byte_stream.h"
#include "tools/commands.h"
#include "tools/convert/convert.h"
#include "tools/convert/scalar.h"
#include "tools/convert/zarr_codecs.h"
#include "tools/convert/zarr_json.h"
#include "tools/convert/zarr_listing.h"
#include "tools/convert/zarr_metadata.h"

namespace slabfs::tools::convert {
namespace {

namespace fs = boost::filesystem;

std::string JoinPath(std::string_view parent, std::string_view name) {
  return parent == "/" || parent.empty() ? fmt::format("/{}", name) : fmt::format("{}/{}", parent, name);
}

bool IsDir(const fs::path& p) { return IsZarrDir(p.string()); }

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
    v3_ = IsZarrV3Store(root.string());
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
    SLABFS_ASSIGN_OR_RETURN(ZarrNodeKind k, ZarrNodeKindOf(dir.string(), v3_, store_path));
    return k == ZarrNodeKind::kArray ? 2 : k == ZarrNodeKind::kGroup ? 1 : 0;
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
      SLABFS_ASSIGN_OR_RETURN(ParsedArray p, ReadZarrArray(dir.string(), v3_));
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
    SLABFS_ASSIGN_OR_RETURN(item.attributes, ReadZarrGroupAttributes(dir.string(), v3_));
    items_.push_back(std::move(item));
    SLABFS_ASSIGN_OR_RETURN(std::vector<std::string> names, ListZarrDir(dir.string()));
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

  // Finds the chunk keys present under the array's directory.
  Status ListChunks(Item& item) {
    SLABFS_ASSIGN_OR_RETURN(ZarrChunkListing listed, ListZarrChunks(item.array, item.dir.string()));
    item.chunks = std::move(listed.chunks);
    if (listed.outside > 0) {
      out_ << fmt::format("{}: {} chunk{} outside the chunk grid of shape ({}) ignored\n", item.store_path,
                          listed.outside, listed.outside == 1 ? "" : "s", FormatDims(item.array.shape));
    }
    return Status::OK();
  }

  Status SetAttributes(ObjectId id, const Item& item, bool is_array) {
    for (const ZarrAttribute& a : ZarrAttributes(item.attributes, is_array ? &item.array : nullptr)) {
      const std::string what = fmt::format("{} (attribute '{}')", item.store_path, a.name);
      if (!a.value) {
        SLABFS_RETURN_IF_ERROR(Skip(what, a.why_not));
        continue;
      }
      Status s = dest_.SetAttribute(id, a.name, *a.value);
      if (s.code() == Code::kNoSpace || s.code() == Code::kInvalidArgument) {
        SLABFS_RETURN_IF_ERROR(Skip(what, s.message()));
        continue;
      }
      SLABFS_RETURN_IF_ERROR(AddContext(s, item.dest));
    }
    if (is_array && item.array.scalar) {
      Status s = dest_.SetAttribute(id, std::string(kScalarAttribute), ScalarMarker());
      SLABFS_RETURN_IF_ERROR(AddContext(s, item.dest));
    }
    return Status::OK();
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

  Status CopyArray(const Item& item) {
    const ZarrArray& a = item.array;
    DatasetOptions o;
    o.dtype = a.dtype;
    o.shape = a.shape;
    o.max_shape = ZarrMaxShape(a, item.attributes);
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
    const uint64_t limit = ZarrChunkFileLimit(expected);
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
      SLABFS_RETURN_IF_ERROR(ReadZarrChunkFile(path, limit, &stored));
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
