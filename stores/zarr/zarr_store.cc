// The Zarr store: opening (the one walk of the directory) and the tree it
// found. Reads go through ZarrDataset (zarr_dataset.cc) alone.
#include "stores/zarr/zarr_store.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/cache/chunk_cache.h"
#include "engine/io/os_error.h"
#include "stores/object_path.h"
#include "stores/store_tree.h"
#include "stores/zarr/zarr_dataset.h"
#include "stores/zarr/zarr_tree.h"
#include "stores/zarr/zarr_writer.h"
#include "tools/convert/zarr_listing.h"
#include "tools/convert/zarr_metadata.h"

namespace slabfs::stores {
namespace {

namespace convert = tools::convert;
using convert::Json;
using convert::ZarrNodeKind;

// Groups nested deeper than this are not walked (a hostile store).
constexpr int kMaxDepth = 256;

// How the codecs encode a chunk, in the store's own terms
// ("blosc(lz4,5,shuffle)", "zlib=4", "crc32c"; "transpose" first).
std::string CodecsText(const convert::ZarrArray& a) {
  std::string s = a.transpose.empty() ? "" : "transpose";
  for (const convert::ZarrCodec& c : a.codecs) {
    if (!s.empty()) s += ",";
    switch (c.kind) {
      case convert::ZarrCodec::Kind::kZlib: s += fmt::format("zlib={}", c.level); break;
      case convert::ZarrCodec::Kind::kGzip: s += fmt::format("gzip={}", c.level); break;
      case convert::ZarrCodec::Kind::kBlosc:
        s += fmt::format("blosc({},{},{})", c.cname, c.level,
                         c.shuffle == 1   ? "shuffle"
                         : c.shuffle == 2 ? "bitshuffle"
                                          : "noshuffle");
        break;
      case convert::ZarrCodec::Kind::kCrc32c: s += "crc32c"; break;
      case convert::ZarrCodec::Kind::kShuffle: s += "shuffle"; break;
    }
  }
  return s;
}

// The one walk of the directory.
class Walker {
 public:
  Walker(std::string root, ZarrStore* store, bool writable)
      : root_(std::move(root)), store_(store), v3_(store->v3()), writable_(writable) {}

  Status WalkRoot() {
    SLABFS_ASSIGN_OR_RETURN(ZarrNodeKind kind, convert::ZarrNodeKindOf(root_, v3_, "/"));
    store_->AddRoot();
    if (kind == ZarrNodeKind::kNone) {
      return Status::NotSupported(fmt::format("{}: neither a Zarr group nor a Zarr array", root_));
    }
    if (!Visit(root_)) return Status::Corruption(root_ + ": cannot be visited");
    if (kind == ZarrNodeKind::kGroup) {
      SLABFS_ASSIGN_OR_RETURN(Json attrs, convert::ReadZarrGroupAttributes(root_, v3_));
      store_->node(kRootId).location = root_;
      SetAttributes(kRootId, attrs, nullptr);
      return WalkGroup(root_, kRootId, 0);
    }
    // A store whose root is an array: the dataset takes the store's name,
    // as the import names it.
    std::string name = std::filesystem::path(root_).lexically_normal().filename().string();
    if (name.empty() || name == ".") {
      std::error_code ec;
      name = std::filesystem::absolute(root_, ec).lexically_normal().parent_path().filename().string();
    }
    if (name.ends_with(".zarr") && name.size() > 5) name.resize(name.size() - 5);
    if (Status v = ValidateName(name); !v.ok()) name = "array";
    SLABFS_ASSIGN_OR_RETURN(convert::ParsedArray p, convert::ReadZarrArray(root_, v3_));
    AddArray(kRootId, name, root_, std::move(p));
    return Status::OK();
  }

 private:
  void Skip(std::string path, std::string reason) { store_->Skip(std::move(path), std::move(reason)); }
  void SkipDamaged(std::string path, const Status& why) { store_->SkipDamaged(std::move(path), why.message()); }

  // False for a directory met before (a symlink loop).
  bool Visit(const std::string& dir) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return true;
    return visited_.insert({st.st_dev, st.st_ino}).second;
  }

  ObjectId AddNode(ObjectId parent, const std::string& name, ObjectKind kind) {
    return store_->AddNode(parent, name, JoinPath(store_->node(parent).path, name), kind);
  }

  void SetAttributes(ObjectId id, const Json& attrs, const convert::ZarrArray* array) {
    for (convert::ZarrAttribute& a : convert::ZarrAttributes(attrs, array)) {
      if (!a.value) {
        Skip(fmt::format("{} attribute '{}'", store_->node(id).path, a.name), a.why_not);
        continue;
      }
      store_->node(id).attrs.insert_or_assign(a.name, std::move(*a.value));
    }
  }

  Status WalkGroup(const std::string& dir, ObjectId id, int depth) {
    const std::string shown = store_->node(id).path;
    auto names = convert::ListZarrDir(dir);
    if (!names) {
      SkipDamaged(shown + " (its members)", names.error());
      return Status::OK();
    }
    for (const std::string& name : *names) {
      if (name.starts_with(".") || name == "zarr.json") continue;
      const std::string child_dir = dir + "/" + name;
      if (!convert::IsZarrDir(child_dir)) continue;
      const std::string child = JoinPath(shown, name);
      if (Status v = ValidateName(name); !v.ok()) {
        Skip(child, "the name is not valid in slabfs: " + v.message());
        continue;
      }
      auto kind = convert::ZarrNodeKindOf(child_dir, v3_, child);
      if (!kind) {
        SkipDamaged(child, kind.error());
        continue;
      }
      if (*kind == ZarrNodeKind::kNone) {
        Skip(child, "a directory that is neither a Zarr group nor a Zarr array");
        continue;
      }
      if (!Visit(child_dir)) {
        Skip(child, "reached a second time (a symlink loop or a second link)");
        continue;
      }
      if (*kind == ZarrNodeKind::kGroup) {
        if (depth + 1 > kMaxDepth) {
          Skip(child, fmt::format("groups nested deeper than {}", kMaxDepth));
          continue;
        }
        auto attrs = convert::ReadZarrGroupAttributes(child_dir, v3_);
        if (!attrs) {
          SkipDamaged(child, attrs.error());
          continue;
        }
        const ObjectId cid = AddNode(id, name, ObjectKind::kGroup);
        store_->node(cid).location = child_dir;
        SetAttributes(cid, *attrs, nullptr);
        SLABFS_RETURN_IF_ERROR(WalkGroup(child_dir, cid, depth + 1));
        continue;
      }
      auto p = convert::ReadZarrArray(child_dir, v3_);
      if (!p) {
        SkipDamaged(child, p.error());
        continue;
      }
      AddArray(id, name, child_dir, std::move(*p));
    }
    return Status::OK();
  }

  void AddArray(ObjectId parent, const std::string& name, const std::string& dir, convert::ParsedArray p) {
    const std::string shown = JoinPath(store_->node(parent).path, name);
    if (!p.unsupported.empty()) {
      Skip(shown, p.unsupported);
      return;
    }
    auto l = Learn(shown, dir, std::move(p.array));
    if (!l) {
      SkipDamaged(shown, l.error());
      return;
    }
    if (*l == nullptr) return;
    const ObjectId id = AddNode(parent, name, ObjectKind::kDataset);
    store_->node(id).layout = *l;
    store_->node(id).location = dir;
    SetAttributes(id, (*l)->array.attributes, &(*l)->array);
  }

  // Everything a read needs of one array, or null (skipped with its reason).
  Result<std::shared_ptr<ZarrLayout>> Learn(const std::string& shown, const std::string& dir, convert::ZarrArray a) {
    auto l = std::make_shared<ZarrLayout>();
    l->path = shown;
    l->store = store_->path();
    l->dir = dir;
    l->v3 = v3_;
    l->item_size = ItemSize(a.dtype);
    l->chunk = a.chunks;
    l->decodes = !a.codecs.empty() || !a.transpose.empty();
    StoreDatasetInfo& si = l->info;
    si.layout = StoreLayout::kChunked;
    si.scalar = a.scalar;
    si.source_filters = CodecsText(a);
    si.source_dtype = (l->item_size == 1 ? "|" : a.big_endian ? ">" : "<") + std::string(DTypeName(a.dtype));
    DatasetInfo& info = si.dataset;
    info.dtype = a.dtype;
    info.shape = a.shape;
    info.max_shape = convert::ZarrMaxShape(a, a.attributes);
    if (writable_) {
      // Any Zarr array can be resized: its first dimension can grow
      // unless an export fixed a maximum shape.
      if (!a.scalar && !a.max_shape && !a.attributes.contains(convert::kMaxShapeAttribute)) {
        info.max_shape[0] = kUnlimited;
      }
      l->read_only_reason = ZarrReadOnlyReason(a);
      l->drop_fill_chunks = a.zarr_format == 3 || a.fill_is_marker;
    }
    info.chunks = a.chunks;
    info.fill = a.fill;
    info.filters = convert::FiltersFor(a);
    slabfs_u128 bytes = l->item_size;
    info.num_elements = 1;
    info.num_chunks = 1;
    for (size_t d = 0; d < a.shape.size(); ++d) {
      bytes *= a.shape[d];
      info.num_elements *= a.shape[d];
      const uint64_t g = a.shape[d] / a.chunks[d] + (a.shape[d] % a.chunks[d] != 0);
      info.num_chunks = g != 0 && info.num_chunks > UINT64_MAX / g ? UINT64_MAX : info.num_chunks * g;
    }
    if (bytes > static_cast<slabfs_u128>(INT64_MAX)) {
      Skip(shown, "larger than 2^63 bytes");
      return std::shared_ptr<ZarrLayout>();
    }
    info.size_bytes = info.num_elements * l->item_size;
    info.length_resizable = info.max_shape[0] != info.shape[0];

    SLABFS_ASSIGN_OR_RETURN(convert::ZarrChunkListing listed, convert::ListZarrChunks(a, dir));
    if (listed.outside > 0) {
      spdlog::info("zarr store {}: {}: {} chunk key(s) outside the chunk grid ignored", store_->path(), shown,
                   listed.outside);
    }
    if (writable_) l->past_end = std::move(listed.past_end);
    const size_t rank = a.shape.size();
    l->keys.reserve(listed.chunks.size());
    l->file_bytes.reserve(listed.chunks.size());
    for (const Dims& c : listed.chunks) {
      uint64_t linear = 0;
      for (size_t d = 0; d < rank; ++d) {
        const uint64_t g = a.shape[d] / a.chunks[d] + (a.shape[d] % a.chunks[d] != 0);
        linear = linear * g + c[d];
      }
      struct stat st {};
      const std::string file = dir + "/" + convert::ChunkKey(a, c);
      const uint64_t size = ::stat(file.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
      l->keys.push_back(linear);
      l->file_bytes.push_back(size);
      info.stored_bytes += size;
    }
    // Listed in C order of the coordinates, which is the linear order.
    info.allocated_chunks = l->keys.size();
    l->array = std::move(a);
    return l;
  }

  std::string root_;
  ZarrStore* store_;
  const bool v3_;
  const bool writable_;
  std::set<std::pair<dev_t, ino_t>> visited_;
};

}  // namespace

ZarrStore::ZarrStore(std::string path, std::shared_ptr<engine::ChunkCache> cache, bool v3)
    : TreeStore(std::move(path), std::move(cache)), v3_(v3) {}

ZarrStore::~ZarrStore() = default;

StoreWriter* ZarrStore::writer() { return writer_.get(); }

void ZarrStore::MakeWritable() { writer_ = std::make_unique<ZarrWriter>(this); }

Result<std::unique_ptr<Store>> OpenZarrStore(const std::string& path, const ZarrStoreOptions& options) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Err(engine::StatusFromErrno(errno, path));
  if (!S_ISDIR(st.st_mode)) return Err(Status::NotSupported(path + ": not a directory (a Zarr directory store)"));
  auto cache = std::make_shared<engine::ChunkCache>(options.cache_bytes, options.cache_bytes);
  auto store = std::make_unique<ZarrStore>(path, std::move(cache), convert::IsZarrV3Store(path));
  Walker walker(path, store.get(), options.writable);
  SLABFS_RETURN_IF_ERROR_R(walker.WalkRoot());
  if (options.writable) store->MakeWritable();
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace slabfs::stores
