#include "stores/zarr/zarr_writer.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <new>
#include <set>
#include <shared_mutex>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "engine/cache/chunk_cache.h"
#include "engine/io/os_error.h"
#include "engine/selection/hyperslab.h"
#include "engine/util/expensive_checks.h"
#include "slabfs/object.h"
#include "stores/zarr/zarr_dataset.h"
#include "stores/zarr/zarr_tree.h"
#include "tools/convert/zarr_codecs.h"
#include "tools/convert/zarr_json.h"

namespace slabfs::stores {
namespace {

namespace convert = tools::convert;
using convert::Json;

std::string ParentOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

// A name no other writer picks: 64 random bits and a process-wide count.
std::string TempSuffix() {
  static std::atomic<uint64_t> counter{0};
  uint64_t r = 0;
  if (::getrandom(&r, sizeof r, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof r)) r = 0;
  return fmt::format(".tmp.{:016x}{:x}.{}", r, counter.fetch_add(1, std::memory_order_relaxed), ::getpid());
}

// Makes the directories of a nested chunk key under `base` ("0/3" needs
// base/0), noting each parent whose entries changed.
Status MakeKeyDirs(const std::string& base, const std::string& key, DirtyDirs* dirty) {
  for (size_t slash = key.find('/'); slash != std::string::npos; slash = key.find('/', slash + 1)) {
    const std::string dir = base + "/" + key.substr(0, slash);
    if (::mkdir(dir.c_str(), 0777) == 0) {
      dirty->Add(ParentOf(dir));
    } else if (errno != EEXIST) {
      return engine::StatusFromErrno(errno, dir);
    }
  }
  return Status::OK();
}

uint64_t GridAlong(const Dims& shape, const Dims& chunk, size_t d) {
  return shape[d] / chunk[d] + (shape[d] % chunk[d] != 0);
}

}  // namespace

std::string ZarrReadOnlyReason(const convert::ZarrArray& a) {
  if (a.codecs.empty()) return "";
  auto trial = convert::EncodeChunk(a.codecs, std::string(ItemSize(a.dtype), '\0'));
  if (trial) return "";
  std::string codecs;
  for (const convert::ZarrCodec& c : a.codecs) {
    if (!codecs.empty()) codecs += ",";
    switch (c.kind) {
      case convert::ZarrCodec::Kind::kZlib: codecs += "zlib"; break;
      case convert::ZarrCodec::Kind::kGzip: codecs += "gzip"; break;
      case convert::ZarrCodec::Kind::kBlosc: codecs += "blosc(" + c.cname + ")"; break;
      case convert::ZarrCodec::Kind::kCrc32c: codecs += "crc32c"; break;
      case convert::ZarrCodec::Kind::kShuffle: codecs += "shuffle"; break;
    }
  }
  return fmt::format("its codecs ({}) decode but cannot be encoded by this build: {}", codecs, trial.error().message());
}

// ------------------------------------------------------------ files

DirtyDirs::DirtyDirs(std::function<int(int fd)> fsync_dir) : fsync_dir_(std::move(fsync_dir)) {
  if (!fsync_dir_) fsync_dir_ = [](int fd) { return ::fsync(fd); };
}

void DirtyDirs::Add(std::string dir) {
  std::lock_guard lock(mu_);
  dirs_.insert(std::move(dir));
}

Status DirtyDirs::SyncAll() {
  // Held until the failed directories are back in dirs_: a second caller
  // neither returns while these are still being fsynced nor misses a
  // failure (it retries them).
  std::lock_guard sync(sync_mu_);
  std::set<std::string> todo;
  {
    std::lock_guard lock(mu_);
    todo.swap(dirs_);
  }
  Status first;
  for (auto it = todo.begin(); it != todo.end();) {
    const int fd = engine::RetryOnEintr([&] { return ::open(it->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
    Status s;
    if (fd < 0) {
      s = engine::StatusFromErrno(errno, *it);
    } else {
      if (fsync_dir_(fd) != 0) s = engine::StatusFromErrno(errno, "fsync " + *it);
      ::close(fd);
    }
    if (s.ok() || s.code() == Code::kNotFound) {
      it = todo.erase(it);
      continue;
    }
    spdlog::warn("zarr store: directory {} not synced, kept for the next sync: {}", *it, s.message());
    if (first.ok()) first = s;
    ++it;
  }
  if (!todo.empty()) {
    std::lock_guard lock(mu_);
    dirs_.merge(todo);
  }
  return first;
}

Status ReplaceFileAtomically(const std::string& path, std::string_view bytes, DirtyDirs* dirty) {
  const std::string tmp = path + TempSuffix();
  const int fd =
      engine::RetryOnEintr([&] { return ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666); });
  if (fd < 0) return engine::StatusFromErrno(errno, tmp);
  Status s = engine::WriteFully(fd, bytes.data(), bytes.size(), tmp);
  // The bytes are on disk before the name points at them: after a crash
  // the key names the old chunk or the whole new one.
  if (s.ok() && ::fsync(fd) != 0) s = engine::StatusFromErrno(errno, "fsync " + tmp);
  if (::close(fd) != 0 && s.ok()) s = engine::StatusFromErrno(errno, "close " + tmp);
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) s = engine::StatusFromErrno(errno, "rename to " + path);
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  dirty->Add(ParentOf(path));
  return Status::OK();
}

Status UpdateConsolidated(ZarrWriteContext* ctx, const std::string& file, const Json& doc) {
  const std::string& root = ctx->store;
  if (!file.starts_with(root)) return Status::OK();
  std::string rel = file.substr(root.size());
  while (rel.starts_with("/")) rel.erase(0, 1);
  if (ctx->v3) {
    // The key of a node is its path ("a", "g/b"); the root holds the rest.
    if (rel == "zarr.json") return Status::OK();
    if (!rel.ends_with("/zarr.json")) return Status::OK();
    rel.resize(rel.size() - std::string_view("/zarr.json").size());
  }
  const std::string holder = root + (ctx->v3 ? "/zarr.json" : "/.zmetadata");
  auto read = convert::ReadJsonFile(holder);
  if (!read) {
    if (!ctx->v3 && read.error().code() == Code::kNotFound) return Status::OK();
    if (ctx->v3) return read.error().WithContext("the store's consolidated metadata");
  }
  auto drop = [&](std::string why) -> Status {
    spdlog::warn("zarr store {}: consolidated metadata in {} {}: removed rather than left stale", root, holder, why);
    if (!ctx->v3) {
      if (::unlink(holder.c_str()) != 0 && errno != ENOENT) return engine::StatusFromErrno(errno, holder);
      ctx->dirty.Add(ParentOf(holder));
      return Status::OK();
    }
    Json top = std::move(*read);
    top.erase("consolidated_metadata");
    return ReplaceFileAtomically(holder, convert::DumpJson(top), &ctx->dirty);
  };
  if (!read) return drop("cannot be read (" + read.error().message() + ")");
  Json& top = *read;
  if (!top.is_object()) {
    if (ctx->v3) return Status::Corruption(holder + ": not a JSON object");
    return drop("is not a JSON object");
  }
  Json* entries = nullptr;
  if (ctx->v3) {
    auto it = top.find("consolidated_metadata");
    if (it == top.end() || it->is_null()) return Status::OK();  // not consolidated
    if (!it->is_object() || !it->contains("metadata") || !(*it)["metadata"].is_object()) {
      return drop("has no \"metadata\" object");
    }
    entries = &(*it)["metadata"];
  } else {
    if (!top.contains("metadata") || !top["metadata"].is_object()) return drop("has no \"metadata\" object");
    entries = &top["metadata"];
  }
  (*entries)[rel] = doc;
  return ReplaceFileAtomically(holder, convert::DumpJson(top), &ctx->dirty);
}

MetadataWrite WriteMetadataDocument(ZarrWriteContext* ctx, const std::string& file, const Json& doc) {
  MetadataWrite w;
  w.status = ReplaceFileAtomically(file, convert::DumpJson(doc), &ctx->dirty);
  if (!w.status.ok()) return w;
  w.written = true;
  w.status = UpdateConsolidated(ctx, file, doc);
  return w;
}

namespace {

// ------------------------------------------------------------ one array

class ZarrArrayWriter final : public WritableStoreDataset {
 public:
  ZarrArrayWriter(std::shared_ptr<ZarrLayout> layout, std::shared_ptr<ZarrDataset> reader,
                  std::shared_ptr<engine::ChunkCache> cache, uint64_t cache_id, std::shared_ptr<ZarrWriteContext> ctx)
      : layout_(std::move(layout)),
        reader_(std::move(reader)),
        cache_(std::move(cache)),
        cache_id_(cache_id),
        ctx_(std::move(ctx)) {}

  StoreDatasetInfo info() const override { return reader_->info(); }
  const std::string& path() const override { return layout_->path; }
  Status Read(const Slab& sel, void* buf, const MemSpace* mem) const override { return reader_->Read(sel, buf, mem); }
  Result<std::vector<StoredChunk>> StoredChunks() const override { return reader_->StoredChunks(); }
  Result<std::vector<Box>> Defined(const Slab& sel) const override { return reader_->Defined(sel); }
  std::string read_only_reason() const override { return layout_->read_only_reason; }

  Status Write(const Slab& sel, const void* buf, const MemSpace* mem) override {
    SLABFS_RETURN_IF_ERROR(CheckWritable("write"));
    ZarrLayout& l = *layout_;
    try {
      std::unique_lock lock(l.mu);
      engine::TransferPlan plan;
      const Dims limit(l.chunk.size(), kUnlimited);  // edge chunks are stored whole
      Status s = plan.Build(l.info.dataset.shape, l.chunk, sel, mem, &limit);
      if (!s.ok()) return s.WithContext(l.path);
      if (plan.num_elements() == 0) return Status::OK();
      const size_t item = l.item_size;
      const char* in = static_cast<const char*>(buf);
      std::unique_ptr<char[]> image(new char[l.chunk_elements() * item]);
      for (engine::ChunkCursor cur(plan); !cur.done(); cur.Next()) {
        const ptrdiff_t index = l.Find(cur.linear());
        if (!cur.covers_chunk()) {
          if (index >= 0) {
            SLABFS_RETURN_IF_ERROR(reader_->LoadChunk(static_cast<size_t>(index), cur.coords(), image.get()));
          } else {
            reader_->Fill(image.get(), l.chunk_elements());
          }
        }
        cur.ForEachRun([&](uint64_t coff, uint64_t moff, uint64_t n) {
          std::memcpy(image.get() + coff * item, in + moff * item, n * item);
        });
        SLABFS_RETURN_IF_ERROR(PutChunkLocked(cur.coords(), cur.linear(), image.get()));
      }
      return Status::OK();
    } catch (const std::bad_alloc&) {
      return Status::IOError(l.path + ": no memory for the write");
    }
  }

  Status Resize(uint64_t rows) override {
    SLABFS_RETURN_IF_ERROR(CheckWritable("resize"));
    ZarrLayout& l = *layout_;
    try {
      std::unique_lock lock(l.mu);
      const DatasetInfo& d = l.info.dataset;
      if (d.shape.empty() || !d.length_resizable) {
        return Status::InvalidArgument(l.path + ": its first dimension cannot change");
      }
      if (rows > d.max_shape[0]) {
        return Status::OutOfRange(fmt::format("{}: {} rows is more than the maximum {}", l.path, rows, d.max_shape[0]));
      }
      // The sizes must stay within what the store opens (under 2^63 bytes).
      uint64_t row_bytes = l.item_size;
      for (size_t i = 1; i < d.shape.size(); ++i) {
        row_bytes = d.shape[i] != 0 && row_bytes > UINT64_MAX / d.shape[i] ? UINT64_MAX : row_bytes * d.shape[i];
      }
      if (row_bytes != 0 && rows > static_cast<uint64_t>(INT64_MAX) / row_bytes) {
        return Status::OutOfRange(
            fmt::format("{}: {} rows of {} bytes is 2^63 bytes or more", l.path, rows, row_bytes));
      }
      const uint64_t old = d.shape[0];
      if (rows == old) return Status::OK();
      Dims shape = d.shape;
      shape[0] = rows;
      if (rows < old) {
        // The chunks of the row that will be cut are read first: a damaged
        // one refuses the truncate before anything changes (EIO, and the
        // store as it was).
        if (rows % l.chunk[0] != 0) SLABFS_RETURN_IF_ERROR(ClearRowsFromLocked(rows, /*check_only=*/true));
        // The shape next: a crash after it leaves chunks past the shape,
        // which every reader ignores.
        SLABFS_RETURN_IF_ERROR(WriteShapeLocked(shape));
        SLABFS_RETURN_IF_ERROR(RemoveChunksFromLocked((rows + l.chunk[0] - 1) / l.chunk[0]));
        if (rows % l.chunk[0] != 0) SLABFS_RETURN_IF_ERROR(ClearRowsFromLocked(rows));
        return Status::OK();
      }
      // Chunk files past the old end would come back into the shape: those
      // a shrink left in the keys (its removal failed partway) and those
      // found past the end when the store opened (a shrink interrupted).
      const uint64_t old_grid = GridAlong(d.shape, l.chunk, 0);
      SLABFS_RETURN_IF_ERROR(RemoveChunksFromLocked(old_grid));
      SLABFS_RETURN_IF_ERROR(RemovePastEndLocked(old_grid));
      if (old % l.chunk[0] != 0) SLABFS_RETURN_IF_ERROR(ClearRowsFromLocked(old));
      return WriteShapeLocked(shape);
    } catch (const std::bad_alloc&) {
      return Status::IOError(l.path + ": no memory for the resize");
    }
  }

 protected:
  Status Exclusively(const std::function<Status()>& fn) override {
    std::lock_guard lock(layout_->change_mu);
    return fn();
  }

 private:
  Status CheckWritable(std::string_view op) const {
    if (layout_->read_only_reason.empty()) return Status::OK();
    return Status::ReadOnly(fmt::format("{}: array {} cannot be changed ({}): {}", layout_->store, layout_->path, op,
                                        layout_->read_only_reason));
  }

  // Drops the cached chunk at `linear` (replaced or removed). Under mu,
  // exclusively, so no reader holds it pinned: one that does is a broken
  // invariant, logged, and fatal where the expensive checks are on.
  void ForgetCached(uint64_t linear) {
    if (cache_->Erase(engine::CacheKey{cache_id_, linear})) return;
    spdlog::error(
        "zarr store {}: array {}: chunk {} was replaced while pinned in the cache; a reader may see the old one",
        layout_->store, layout_->path, linear);
    assert(false && "a replaced Zarr chunk was pinned in the cache");
    if (engine::ExpensiveChecks()) std::abort();
  }

  // The grid coordinates of the chunk at linear position `linear`.
  Dims CoordsOf(uint64_t linear) const {
    const ZarrLayout& l = *layout_;
    const size_t rank = l.chunk.size();
    Dims c(rank, 0);
    for (size_t d = rank; d-- > 1;) {
      const uint64_t g = GridAlong(l.info.dataset.shape, l.chunk, d);
      if (g == 0) return c;
      c[d] = linear % g;
      linear /= g;
    }
    c[0] = linear;
    return c;
  }

  // Stores the chunk at `coords` (linear position `linear`) from `image`,
  // the whole chunk in C order: encoded into its key by temporary file and
  // rename, or removed when it holds only the fill value and the array
  // allows it (unless `keep_fill_chunk`). Under mu, exclusively.
  Status PutChunkLocked(std::span<const uint64_t> coords, uint64_t linear, const char* image,
                        bool keep_fill_chunk = false) {
    ZarrLayout& l = *layout_;
    const convert::ZarrArray& a = l.array;
    const size_t item = l.item_size;
    const uint64_t n = l.chunk_elements();
    const uint64_t bytes = n * item;
    const std::string key = convert::ChunkKey(a, Dims(coords.begin(), coords.end()));
    const std::string file = l.dir + "/" + key;
    const ptrdiff_t index = l.Find(linear);
    DatasetInfo& d = l.info.dataset;
    l.written = true;
    if (!keep_fill_chunk && l.drop_fill_chunks && HoldsOnlyFill(image, n)) {
      if (index >= 0) {
        if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
          return engine::StatusFromErrno(errno, file).WithContext(fmt::format("{}: array {}", l.store, l.path));
        }
        ctx_->dirty.Add(ParentOf(file));
        d.stored_bytes -= std::min(d.stored_bytes, l.file_bytes[index]);
        l.keys.erase(l.keys.begin() + index);
        l.file_bytes.erase(l.file_bytes.begin() + index);
        d.allocated_chunks = l.keys.size();
      } else if (::unlink(file.c_str()) == 0) {
        // Not a key the store knows, but a file there (past the end when
        // the store opened, or another program's) would be read as data.
        ctx_->dirty.Add(ParentOf(file));
      } else if (errno != ENOENT) {
        return engine::StatusFromErrno(errno, file).WithContext(fmt::format("{}: array {}", l.store, l.path));
      }
      ForgetCached(linear);
      l.left_out.insert(linear);
      return Status::OK();
    }
    l.left_out.erase(linear);
    std::string raw(image, bytes);
    if (!a.transpose.empty()) {
      std::string stored_order(bytes, '\0');
      convert::Transpose(raw.data(), a.chunks, a.transpose, item, stored_order.data());
      raw = std::move(stored_order);
    }
    if (a.big_endian) convert::SwapBytes(raw.data(), raw.size(), item);
    std::string stored;
    if (a.codecs.empty()) {
      stored = std::move(raw);
    } else {
      auto encoded = convert::EncodeChunk(a.codecs, std::move(raw));
      if (!encoded) return encoded.error().WithContext(fmt::format("{}: array {} chunk {}", l.store, l.path, key));
      stored = std::move(*encoded);
    }
    const std::string what = fmt::format("{}: array {} chunk {}", l.store, l.path, key);
    SLABFS_RETURN_IF_ERROR(MakeKeyDirs(l.dir, key, &ctx_->dirty).WithContext(what));
    SLABFS_RETURN_IF_ERROR(ReplaceFileAtomically(file, stored, &ctx_->dirty).WithContext(what));
    // The cache held the old chunk: readers are shut out (mu) until it is
    // gone, so none can see it or put it back.
    ForgetCached(linear);
    cache_->CountBytesWritten(stored.size());
    if (index >= 0) {
      d.stored_bytes = d.stored_bytes - std::min(d.stored_bytes, l.file_bytes[index]) + stored.size();
      l.file_bytes[index] = stored.size();
    } else {
      auto at = std::lower_bound(l.keys.begin(), l.keys.end(), linear);
      const auto pos = at - l.keys.begin();
      l.keys.insert(at, linear);
      l.file_bytes.insert(l.file_bytes.begin() + pos, stored.size());
      d.stored_bytes += stored.size();
      d.allocated_chunks = l.keys.size();
    }
    return Status::OK();
  }

 public:
  // Stores every chunk of the grid that is not stored as a file holding
  // the fill value, so that a new fill value changes no element (chunks
  // left out for holding only the old one, and chunks never written, would
  // read as the new one). At most kMaxChunksStoredForAFillChange of them:
  // more is PermissionDenied, before anything is written. Each chunk is
  // replaced atomically; a crash part way leaves chunks that read as they
  // did. Under mu, exclusively.
  Status StoreMissingChunksLocked() {
    SLABFS_RETURN_IF_ERROR(CheckWritable("a new fill value"));
    ZarrLayout& l = *layout_;
    const size_t rank = l.chunk.size();
    slabfs_u128 grid = 1;
    for (size_t d = 0; d < rank; ++d) {
      grid = std::min<slabfs_u128>(grid * GridAlong(l.info.dataset.shape, l.chunk, d), slabfs_u128{UINT64_MAX});
    }
    const slabfs_u128 missing = grid - std::min<slabfs_u128>(grid, l.keys.size());
    // Chunks left out by writes since the store opened hold data and are
    // stored whatever their number (their writes paid for as much); only
    // those never written count against the limit.
    const slabfs_u128 unwritten = missing - std::min<slabfs_u128>(missing, l.left_out.size());
    if (unwritten > kMaxChunksStoredForAFillChange) {
      return Status::PermissionDenied(fmt::format(
          "{}: {}: a new _FillValue (the Zarr v2 array's fill_value) would change the {} chunks never written, "
          "which read as the old value; storing them first is done for at most {}",
          l.store, l.path, static_cast<uint64_t>(std::min<slabfs_u128>(unwritten, UINT64_MAX)),
          kMaxChunksStoredForAFillChange));
    }
    if (missing == 0) return Status::OK();
    try {
      std::unique_ptr<char[]> image(new char[l.chunk_elements() * l.item_size]);
      reader_->Fill(image.get(), l.chunk_elements());
      for (uint64_t linear = 0; linear < static_cast<uint64_t>(grid); ++linear) {
        if (l.Find(linear) >= 0) continue;
        SLABFS_RETURN_IF_ERROR(PutChunkLocked(CoordsOf(linear), linear, image.get(), true));
      }
    } catch (const std::bad_alloc&) {
      return Status::IOError(l.path + ": no memory for a chunk");
    }
    return Status::OK();
  }

 private:
  bool HoldsOnlyFill(const char* image, uint64_t n) const {
    const std::string& fill = layout_->info.dataset.fill;
    const size_t item = fill.size();
    for (uint64_t i = 0; i < n; ++i)
      if (std::memcmp(image + i * item, fill.data(), item) != 0) return false;
    return true;
  }

  // Removes every stored chunk whose first coordinate is `from` or more
  // (and forgets those left out there).
  Status RemoveChunksFromLocked(uint64_t from) {
    ZarrLayout& l = *layout_;
    DatasetInfo& d = l.info.dataset;
    std::erase_if(l.left_out, [&](uint64_t linear) { return CoordsOf(linear)[0] >= from; });
    for (size_t i = l.keys.size(); i-- > 0;) {
      const Dims c = CoordsOf(l.keys[i]);
      if (c[0] < from) continue;
      const std::string file = l.dir + "/" + convert::ChunkKey(l.array, c);
      if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
        return engine::StatusFromErrno(errno, file).WithContext(fmt::format("{}: array {}", l.store, l.path));
      }
      ctx_->dirty.Add(ParentOf(file));
      ForgetCached(l.keys[i]);
      d.stored_bytes -= std::min(d.stored_bytes, l.file_bytes[i]);
      l.keys.erase(l.keys.begin() + static_cast<ptrdiff_t>(i));
      l.file_bytes.erase(l.file_bytes.begin() + static_cast<ptrdiff_t>(i));
    }
    d.allocated_chunks = l.keys.size();
    return Status::OK();
  }

  // Removes the chunk files found past the end when the store opened whose
  // first coordinate is `from` or more (one already gone is fine); those
  // that cannot be removed stay noted, for the next grow to try again.
  Status RemovePastEndLocked(uint64_t from) {
    ZarrLayout& l = *layout_;
    Status first;
    std::vector<Dims> kept;
    for (Dims& c : l.past_end) {
      if (c[0] < from) {
        kept.push_back(std::move(c));
        continue;
      }
      const std::string file = l.dir + "/" + convert::ChunkKey(l.array, c);
      if (::unlink(file.c_str()) == 0) {
        ctx_->dirty.Add(ParentOf(file));
      } else if (errno != ENOENT) {
        Status s = engine::StatusFromErrno(errno, file).WithContext(fmt::format("{}: array {}", l.store, l.path));
        spdlog::warn("{} (a chunk past the old end; the array keeps its size)", s.message());
        if (first.ok()) first = std::move(s);
        kept.push_back(std::move(c));
      }
    }
    l.past_end = std::move(kept);
    return first;
  }

  // Sets rows `row` onwards of the chunk row holding `row` to the fill
  // value, in every stored chunk of that chunk row (those that change).
  // `check_only`: reads (decodes) those chunks and changes nothing, so that
  // a damaged one is found before a truncate changes anything.
  Status ClearRowsFromLocked(uint64_t row, bool check_only = false) {
    ZarrLayout& l = *layout_;
    const uint64_t c0 = row / l.chunk[0], r = row % l.chunk[0];
    const uint64_t per_row = l.chunk_elements() / l.chunk[0];
    const size_t item = l.item_size;
    std::unique_ptr<char[]> image(new char[l.chunk_elements() * item]);
    std::vector<uint64_t> linears;
    for (uint64_t linear : l.keys)
      if (CoordsOf(linear)[0] == c0) linears.push_back(linear);
    for (uint64_t linear : linears) {
      const Dims c = CoordsOf(linear);
      const ptrdiff_t index = l.Find(linear);
      if (index < 0) continue;
      SLABFS_RETURN_IF_ERROR(reader_->LoadChunk(static_cast<size_t>(index), c, image.get()));
      if (check_only) continue;
      char* tail = image.get() + r * per_row * item;
      const uint64_t n = (l.chunk[0] - r) * per_row;
      if (HoldsOnlyFill(tail, n)) continue;
      reader_->Fill(tail, n);
      SLABFS_RETURN_IF_ERROR(PutChunkLocked(c, linear, image.get()));
    }
    return Status::OK();
  }

  // Writes `shape` into the array's metadata document (members slabfs does
  // not know kept) and, once that is replaced, into the layout (also when
  // the consolidated metadata then fails, which is returned).
  Status WriteShapeLocked(const Dims& shape) {
    const ZarrLayout& l = *layout_;
    std::lock_guard meta(ctx_->meta_mu);
    const std::string file = l.dir + (l.v3 ? "/zarr.json" : "/.zarray");
    SLABFS_ASSIGN_OR_RETURN(Json doc, convert::ReadJsonFile(file));
    if (!doc.is_object()) return Status::Corruption(file + ": not a JSON object");
    doc["shape"] = shape;
    MetadataWrite w = WriteMetadataDocument(ctx_.get(), file, doc);
    if (w.written) SetShapeLocked(shape);
    return w.status;
  }

  void SetShapeLocked(const Dims& shape) {
    ZarrLayout& l = *layout_;
    DatasetInfo& d = l.info.dataset;
    d.shape = shape;
    l.array.shape = shape;
    d.num_elements = 1;
    d.num_chunks = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
      d.num_elements *= shape[i];
      const uint64_t g = GridAlong(shape, l.chunk, i);
      d.num_chunks = g != 0 && d.num_chunks > UINT64_MAX / g ? UINT64_MAX : d.num_chunks * g;
    }
    d.size_bytes = d.num_elements * l.item_size;
  }

  std::shared_ptr<ZarrLayout> layout_;
  std::shared_ptr<ZarrDataset> reader_;
  std::shared_ptr<engine::ChunkCache> cache_;
  const uint64_t cache_id_;
  std::shared_ptr<ZarrWriteContext> ctx_;
};

std::string ChildPath(std::string_view parent, std::string_view name) {
  return parent == "/" || parent.empty() ? fmt::format("/{}", name) : fmt::format("{}/{}", parent, name);
}

}  // namespace

// ------------------------------------------------------------ the writer

ZarrWriter::ZarrWriter(ZarrStore* store) : store_(store), ctx_(std::make_shared<ZarrWriteContext>()) {
  ctx_->store = store->path();
  ctx_->v3 = store->v3();
}

Result<std::shared_ptr<WritableStoreDataset>> ZarrWriter::OpenDatasetForWriting(ObjectId id) {
  std::shared_ptr<ZarrLayout> layout;
  {
    std::shared_lock lock(store_->tree_mu());
    if (id < 1 || id > store_->num_nodes()) {
      return Err(Status::NotFound(fmt::format("{}: no object {}", store_->path(), id)));
    }
    const StoreNode& n = store_->node(id);
    if (!n.layout) return Err(Status::NotADataset(n.path + ": not a dataset"));
    layout = std::static_pointer_cast<ZarrLayout>(n.layout);
  }
  auto reader = std::make_shared<ZarrDataset>(layout, store_->cache(), id);
  return std::shared_ptr<WritableStoreDataset>(
      std::make_shared<ZarrArrayWriter>(std::move(layout), std::move(reader), store_->cache(), id, ctx_));
}

Result<std::string> ZarrWriter::DirOf(ObjectId id) {
  std::shared_lock lock(store_->tree_mu());
  if (id < 1 || id > store_->num_nodes()) {
    return Err(Status::NotFound(fmt::format("{}: no object {}", store_->path(), id)));
  }
  const StoreNode& n = store_->node(id);
  if (n.location.empty()) {
    return Err(Status::NotSupported(fmt::format(
        "{}: the store's root is an array, so its root group is made up and has no attributes or members of its "
        "own",
        store_->path())));
  }
  return n.location;
}

MetadataWrite ZarrWriter::EditAttributes(const std::string& dir, const std::function<Status(Json&)>& change) {
  const bool v3 = store_->v3();
  const std::string file = dir + (v3 ? "/zarr.json" : "/.zattrs");
  Json doc = Json::object();
  auto read = convert::ReadJsonFile(file);
  if (read) {
    doc = std::move(*read);
  } else if (v3 || read.error().code() != Code::kNotFound) {
    return {false, read.error()};
  }
  if (!doc.is_object()) return {false, Status::Corruption(file + ": not a JSON object")};
  Json* attrs = &doc;
  if (v3) {
    if (!doc.contains("attributes")) doc["attributes"] = Json::object();
    attrs = &doc["attributes"];
    if (!attrs->is_object()) return {false, Status::Corruption(file + ": \"attributes\" is not an object")};
  }
  if (Status s = change(*attrs); !s.ok()) return {false, std::move(s)};
  return WriteMetadataDocument(ctx_.get(), file, doc);
}

Status ZarrWriter::SetAttribute(ObjectId id, std::string_view name, const Attribute& value) {
  if (name == convert::kMaxShapeAttribute) {
    return Status::NotSupported(
        fmt::format("{}: {} is kept by slabfs's export, not set by hand", store_->path(), convert::kMaxShapeAttribute));
  }
  if (name.empty()) return Status::InvalidArgument("an attribute needs a name");
  // What the store would not show when opened again is refused, not
  // written: a name slabfs does not accept (a '/'), and text that is not
  // UTF-8 (JSON holds text only; it would be stored with U+FFFD in place of
  // the bytes).
  SLABFS_RETURN_IF_ERROR(ValidateName(name).WithContext(fmt::format("{}: attribute '{}'", store_->path(), name)));
  if (value.kind == Attribute::Kind::kString && !convert::IsUtf8(value.data)) {
    return Status::InvalidArgument(fmt::format(
        "{}: attribute '{}': a Zarr attribute is JSON text, and this value is not UTF-8 (a container keeps bytes)",
        store_->path(), name));
  }
  SLABFS_ASSIGN_OR_RETURN(std::string dir, DirOf(id));
  SLABFS_ASSIGN_OR_RETURN(const Special special, SpecialOf(id, name));
  if (special == Special::kFillValue) return SetFillMarker(id, value);
  if (special == Special::kDimensionNames) return SetDimensionNames(id, &value);
  // _ARRAY_DIMENSIONS (v2) as the list xarray reads, not the list's text;
  // on an array, one name per dimension, or xarray cannot open the store.
  std::optional<Json> dims;
  if (name == convert::kDimensionsAttribute) {
    dims = convert::DimensionNamesList(value, 2);
    SLABFS_ASSIGN_OR_RETURN(const std::optional<size_t> rank, ArrayRankOf(id));
    // xarray names each dimension once.
    const bool repeated = dims && std::set<Json>(dims->begin(), dims->end()).size() != dims->size();
    if (rank && (!dims || dims->size() != *rank || repeated)) {
      return Status::InvalidArgument(fmt::format(
          "{}: {}: _ARRAY_DIMENSIONS names the Zarr v2 array's dimensions for xarray, so it must be a JSON list of "
          "{} different strings, such as [\"time\",\"lat\"]",
          store_->path(), PathOf(id), *rank));
    }
  }
  const Json json = dims ? std::move(*dims) : convert::AttributeToJson(value);
  // What a reader of the store makes of it (numbers read back as i8, u8 or
  // f8): the tree shows what opening the store again would show.
  SLABFS_ASSIGN_OR_RETURN(Attribute shown, convert::AttributeFromJson(json));
  Json after;
  MetadataWrite w;
  {
    std::lock_guard meta(ctx_->meta_mu);
    w = EditAttributes(dir, [&](Json& attrs) {
      attrs[std::string(name)] = json;
      after = attrs;
      return Status::OK();
    });
    if (!w.written) return w.status;
    std::unique_lock tree(store_->tree_mu());
    store_->node(id).attrs.insert_or_assign(std::string(name), std::move(shown));
  }
  if (name == convert::kDimensionsAttribute) ReshowFillValue(id, after);
  return w.status;
}

Status ZarrWriter::RemoveAttribute(ObjectId id, std::string_view name) {
  if (name == convert::kMaxShapeAttribute) {
    return Status::NotSupported(fmt::format("{}: {} is kept by slabfs's export, not removed by hand", store_->path(),
                                            convert::kMaxShapeAttribute));
  }
  SLABFS_ASSIGN_OR_RETURN(std::string dir, DirOf(id));
  SLABFS_ASSIGN_OR_RETURN(const Special special, SpecialOf(id, name));
  if (special == Special::kFillValue) {
    return Status::NotSupported(fmt::format(
        "{}: {}: _FillValue is the Zarr v2 array's fill_value (what xarray masks as missing, and what chunks never "
        "written read as): set a new value instead; without one zarr-python reads unwritten chunks as "
        "uninitialised memory",
        store_->path(), PathOf(id)));
  }
  if (special == Special::kDimensionNames) return SetDimensionNames(id, nullptr);
  Json after;
  MetadataWrite w;
  {
    std::lock_guard meta(ctx_->meta_mu);
    w = EditAttributes(dir, [&](Json& attrs) {
      auto it = attrs.find(std::string(name));
      if (it == attrs.end()) {
        return Status::NotFound(
            fmt::format("{}: no attribute '{}' in the store's attributes of {}", store_->path(), name, dir));
      }
      attrs.erase(it);
      after = attrs;
      return Status::OK();
    });
    if (!w.written) return w.status;
    std::unique_lock tree(store_->tree_mu());
    auto& attrs = store_->node(id).attrs;
    if (auto it = attrs.find(name); it != attrs.end()) attrs.erase(it);
  }
  if (name == convert::kDimensionsAttribute) ReshowFillValue(id, after);
  return w.status;
}

void ZarrWriter::ReshowFillValue(ObjectId id, const Json& attrs_doc) {
  std::shared_ptr<ZarrLayout> layout;
  {
    std::shared_lock lock(store_->tree_mu());
    if (id >= 1 && id <= store_->num_nodes()) layout = std::static_pointer_cast<ZarrLayout>(store_->node(id).layout);
  }
  if (!layout || layout->v3 || !layout->array.fill_is_marker) return;
  std::string fill;
  {
    std::shared_lock lock(layout->mu);
    fill = layout->info.dataset.fill;
  }
  const std::string key(convert::kFillValueAttribute);
  std::optional<Attribute> shown;
  if (attrs_doc.is_object() && attrs_doc.contains(convert::kDimensionsAttribute)) {
    shown = Attribute::Numbers(layout->info.dataset.dtype, std::move(fill));
  } else if (auto it = attrs_doc.is_object() ? attrs_doc.find(key) : attrs_doc.end(); it != attrs_doc.end()) {
    if (auto a = convert::AttributeFromJson(*it)) shown = std::move(*a);
  }
  std::unique_lock tree(store_->tree_mu());
  auto& attrs = store_->node(id).attrs;
  if (shown) {
    attrs.insert_or_assign(key, std::move(*shown));
  } else {
    attrs.erase(key);
  }
}

std::string ZarrWriter::PathOf(ObjectId id) {
  std::shared_lock lock(store_->tree_mu());
  return id >= 1 && id <= store_->num_nodes() ? store_->node(id).path : std::string("?");
}

Result<std::optional<size_t>> ZarrWriter::ArrayRankOf(ObjectId id) {
  std::shared_lock lock(store_->tree_mu());
  if (id < 1 || id > store_->num_nodes()) {
    return Err(Status::NotFound(fmt::format("{}: no object {}", store_->path(), id)));
  }
  const auto layout = std::static_pointer_cast<const ZarrLayout>(store_->node(id).layout);
  if (!layout) return std::optional<size_t>();
  // Fixed once the store is open.
  return std::optional<size_t>(layout->array.scalar ? 0 : layout->chunk.size());
}

Result<ZarrWriter::Special> ZarrWriter::SpecialOf(ObjectId id, std::string_view name) {
  if (name != convert::kFillValueAttribute && name != convert::kDimensionsAttribute) return Special::kNone;
  std::shared_ptr<const ZarrLayout> layout;
  {
    std::shared_lock lock(store_->tree_mu());
    if (id < 1 || id > store_->num_nodes()) {
      return Err(Status::NotFound(fmt::format("{}: no object {}", store_->path(), id)));
    }
    layout = std::static_pointer_cast<const ZarrLayout>(store_->node(id).layout);
  }
  if (!layout) return Special::kNone;
  const ZarrLayout& l = *layout;
  // What the tree shows for these names comes from the array's metadata
  // (convert::ZarrAttributes); array.fill_is_marker and v3 are fixed once
  // the store is open.
  if (name == convert::kDimensionsAttribute) return l.v3 ? Special::kDimensionNames : Special::kNone;
  if (l.v3 || !l.array.fill_is_marker) return Special::kNone;
  // Decided as the listing decides, from .zattrs itself (a 0-d variable's
  // empty _ARRAY_DIMENSIONS names it xarray's, though the tree hides it).
  auto attrs = convert::ReadJsonFile(l.dir + "/.zattrs");
  if (!attrs) {
    if (attrs.error().code() == Code::kNotFound) return Special::kNone;
    return Err(attrs.error());
  }
  return attrs->is_object() && attrs->contains(convert::kDimensionsAttribute) ? Special::kFillValue : Special::kNone;
}

Status ZarrWriter::SetFillMarker(ObjectId id, const Attribute& value) {
  std::shared_ptr<ZarrLayout> layout;
  {
    std::shared_lock lock(store_->tree_mu());
    layout = std::static_pointer_cast<ZarrLayout>(store_->node(id).layout);
  }
  ZarrLayout& l = *layout;
  const DType dtype = l.info.dataset.dtype;  // fixed once the store is open
  std::optional<std::string> bytes = convert::ElementAs(dtype, value);
  if (!bytes) {
    return Status::InvalidArgument(fmt::format(
        "{}: {}: _FillValue is the Zarr v2 array's fill_value (what xarray masks as missing), so it must be one "
        "number that the array's type {} holds exactly",
        store_->path(), l.path, convert::V2DTypeName(dtype)));
  }
  SLABFS_ASSIGN_OR_RETURN(std::shared_ptr<WritableStoreDataset> writable, OpenDatasetForWriting(id));
  auto& array = static_cast<ZarrArrayWriter&>(*writable);
  // Under the array's lock: no read or write of it sees the old fill value
  // in one chunk and the new one in another.
  std::unique_lock lock(l.mu);
  if (!l.keys.empty() || l.written) {
    // The array holds data: every element keeps its value, as ncatted
    // keeps a netCDF-3 variable's data when it changes _FillValue. The
    // chunks it does not store (left out because they held only the old
    // value, or never written) would read as the new value, so they are
    // stored first, holding the old one. (cp -a over an array writes the
    // bytes, then sets the source's _FillValue: this is what makes the
    // copy mean what the source meant.)
    SLABFS_RETURN_IF_ERROR(array.StoreMissingChunksLocked());
  }
  Status result;
  {
    std::lock_guard meta(ctx_->meta_mu);
    const std::string file = l.dir + "/.zarray";
    SLABFS_ASSIGN_OR_RETURN(Json doc, convert::ReadJsonFile(file));
    if (!doc.is_object()) return Status::Corruption(file + ": not a JSON object");
    doc["fill_value"] = convert::FillToJson(dtype, *bytes, 2);
    MetadataWrite w = WriteMetadataDocument(ctx_.get(), file, doc);
    if (!w.written) return w.status;
    // .zarray says it now: so does the layout, whatever the consolidated
    // metadata did.
    result = w.status;
    l.info.dataset.fill = *bytes;
    l.array.fill = *bytes;
    // A _FillValue in .zattrs is hidden by fill_value (xarray ignores it
    // too); it goes, so that the store says one thing. Failing that is no
    // failure of the change.
    MetadataWrite e = EditAttributes(l.dir, [](Json& attrs) {
      attrs.erase(std::string(convert::kFillValueAttribute));
      return Status::OK();
    });
    if (!e.status.ok()) {
      spdlog::warn("{}: {}: the old _FillValue in .zattrs stays (hidden): {}", store_->path(), l.path,
                   e.status.ToString());
    }
  }
  std::unique_lock tree(store_->tree_mu());
  store_->node(id).attrs.insert_or_assign(std::string(convert::kFillValueAttribute), Attribute::Numbers(dtype, *bytes));
  return result;
}

Status ZarrWriter::SetDimensionNames(ObjectId id, const Attribute* value) {
  std::shared_ptr<ZarrLayout> layout;
  {
    std::shared_lock lock(store_->tree_mu());
    layout = std::static_pointer_cast<ZarrLayout>(store_->node(id).layout);
  }
  ZarrLayout& l = *layout;
  const size_t rank = l.array.scalar ? 0 : l.chunk.size();  // fixed once the store is open
  std::optional<Json> names;
  if (value != nullptr) {
    names = convert::DimensionNamesList(*value, 3);
    if (!names || names->size() != rank) {
      return Status::InvalidArgument(fmt::format(
          "{}: {}: _ARRAY_DIMENSIONS is the Zarr v3 array's dimension_names, so it must be a JSON list of {} "
          "names (strings, or null for an unnamed dimension), such as [\"time\",\"lat\"]",
          store_->path(), l.path, rank));
    }
  }
  Status result;
  std::unique_lock lock(l.mu);
  {
    std::lock_guard meta(ctx_->meta_mu);
    const std::string file = l.dir + "/zarr.json";
    SLABFS_ASSIGN_OR_RETURN(Json doc, convert::ReadJsonFile(file));
    if (!doc.is_object()) return Status::Corruption(file + ": not a JSON object");
    // One document holds both: the list written as dimension_names, and an
    // attribute of that name (which the tree hides behind it) dropped.
    bool had = doc.contains("dimension_names") && !doc["dimension_names"].is_null();
    if (auto it = doc.find("attributes"); it != doc.end() && it->is_object()) {
      had |= it->erase(std::string(convert::kDimensionsAttribute)) != 0;
    }
    if (!names && !had) {
      return Status::NotFound(fmt::format("{}: {} has no dimension_names", store_->path(), l.path));
    }
    if (names) {
      doc["dimension_names"] = *names;
    } else {
      doc.erase("dimension_names");
    }
    MetadataWrite w = WriteMetadataDocument(ctx_.get(), file, doc);
    if (!w.written) return w.status;
    result = w.status;
    l.array.dimension_names = names;
  }
  // Shown as the listing shows it: when any dimension has a name.
  bool any = false;
  if (names) {
    for (const Json& n : *names) any |= n.is_string();
  }
  std::unique_lock tree(store_->tree_mu());
  auto& attrs = store_->node(id).attrs;
  if (any) {
    attrs.insert_or_assign(std::string(convert::kDimensionsAttribute), Attribute::String(names->dump()));
  } else if (auto it = attrs.find(convert::kDimensionsAttribute); it != attrs.end()) {
    attrs.erase(it);
  }
  return result;
}

Result<ObjectId> ZarrWriter::CreateGroup(ObjectId parent, std::string_view name) {
  SLABFS_RETURN_IF_ERROR_R(ValidateName(name));
  if (name.starts_with(".") || name == "zarr.json" || name.find_first_of("/") != std::string_view::npos) {
    return Err(Status::InvalidArgument(fmt::format("'{}' is not a Zarr node name", name)));
  }
  std::string parent_path;
  {
    std::shared_lock lock(store_->tree_mu());
    if (parent < 1 || parent > store_->num_nodes()) {
      return Err(Status::NotFound(fmt::format("{}: no object {}", store_->path(), parent)));
    }
    const StoreNode& p = store_->node(parent);
    if (p.kind != ObjectKind::kGroup) return Err(Status::NotAGroup(p.path + ": not a group"));
    if (p.children.contains(name)) {
      return Err(Status::AlreadyExists(fmt::format("{}: {} exists", store_->path(), ChildPath(p.path, name))));
    }
    parent_path = p.path;
  }
  SLABFS_ASSIGN_OR_RETURN(std::string dir, DirOf(parent));
  std::lock_guard meta(ctx_->meta_mu);
  const std::string child = dir + "/" + std::string(name);
  if (::mkdir(child.c_str(), 0777) != 0) {
    if (errno == EEXIST) {
      return Err(Status::AlreadyExists(fmt::format(
          "{}: {} is taken in the store's directory (by something slabfs does not show)", store_->path(), child)));
    }
    return Err(engine::StatusFromErrno(errno, child));
  }
  ctx_->dirty.Add(dir);
  const bool v3 = store_->v3();
  const std::string meta_file = child + (v3 ? "/zarr.json" : "/.zgroup");
  const Json group = convert::GroupMetadata(v3 ? 3 : 2, Json::object());
  Status s = ReplaceFileAtomically(meta_file, convert::DumpJson(group), &ctx_->dirty);
  if (!s.ok()) {
    ::rmdir(child.c_str());
    return Err(std::move(s));
  }
  s = UpdateConsolidated(ctx_.get(), meta_file, group);
  std::unique_lock tree(store_->tree_mu());
  const ObjectId id = store_->AddNode(parent, std::string(name), ChildPath(parent_path, name), ObjectKind::kGroup);
  store_->node(id).location = child;
  // The group is made; consolidated metadata that could not be updated is
  // reported all the same.
  if (!s.ok()) return Err(std::move(s));
  return id;
}

Status ZarrWriter::Sync() { return ctx_->dirty.SyncAll(); }

}  // namespace slabfs::stores
