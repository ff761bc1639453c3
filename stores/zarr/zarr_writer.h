// The change side of the Zarr store (include/slabfs/store_writer.h): a
// Zarr v2 or v3 directory store written in place.
//
// Chunks. A write of part of a chunk reads and decodes the chunk as it is
// stored (or takes the fill value for a chunk not stored), merges the new
// elements in, and encodes the whole chunk again with the array's own
// codecs (tools/convert/zarr_codecs.h: the ones reads decode with); a write
// of a whole chunk encodes it without reading. The encoded chunk goes to a
// new file beside it, `<key>.tmp.<random>`, which is fsynced and renamed
// over the chunk's key (v2's "." or "/" separators, v3's "c/..." keys; the
// directories of nested keys made as needed). A reader, through the mount
// or any other program, sees the old chunk file or the new one, never a
// torn one. A chunk that comes to hold only the fill value is removed
// instead (Zarr reads a missing chunk as the fill value), except in a v2
// array whose fill_value is null, where zarr-python would read a missing
// chunk as uninitialised memory: there it is written like any other.
//
// Metadata. Attributes (.zattrs, or zarr.json's "attributes"), a new
// shape (.zarray or zarr.json) and a new group (.zgroup, or a zarr.json of
// node_type "group") are written the same way: the document is read, the
// one member changed, the whole written to a temporary file, fsynced and
// renamed over it; members slabfs does not know are kept. A store with
// consolidated metadata (v2's root .zmetadata, v3's root zarr.json
// "consolidated_metadata") has the document's entry there updated the same
// way, under the same lock (UpdateConsolidated).
//
// Resizing (first dimension only): shrinking writes the new shape, then
// removes the chunks wholly outside it and resets the cut rows of the last
// chunk row to the fill value; growing first removes chunk files past the
// old end (a shrink interrupted, or failed partway, leaves them), resets
// the rows past the old end in the old last chunk row (Zarr keeps edge
// chunks whole, and what lay past the end must read as fill), then writes
// the new shape.
//
// Crash safety: each chunk file and each metadata file is replaced whole,
// atomically; nothing spans two files. A crash in the middle of a write
// that touches several chunks can leave some of them new and some old,
// and a crash during a resize can leave the shape and the chunks out of
// step (a shrink interrupted leaves chunks past the shape, which readers
// ignore; a grow interrupted leaves the old shape). Renames are durable
// once the directories that hold them are fsynced: Sync() does that, and
// the mount calls it at fsync(2) and at the close of a written file.
// Temporary files a crash leaves behind (`*.tmp.*`) are not chunk keys and
// are ignored by readers.
//
// Codecs: every codec the store reads it also encodes today (zlib, gzip,
// blosc, shuffle, crc32c, transpose, big-endian bytes). An array whose
// codecs this build cannot encode (checked once, with a trial encode, when
// the store opens) is read-only: its writes and resizes answer ReadOnly
// naming the codec.
//
// Concurrency: writes and resizes of one array are serialised by its
// layout's lock (ZarrLayout::mu, held exclusively while chunks are
// replaced and the cache is told), so two writes to one chunk never lose
// each other's elements; reads hold it shared. Metadata rewrites are
// serialised store-wide (after any array's lock, before the tree's). Other
// programs writing the store at the same time are not coordinated with.
#ifndef SLABFS_STORES_ZARR_ZARR_WRITER_H_
#define SLABFS_STORES_ZARR_ZARR_WRITER_H_

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "slabfs/store_writer.h"
#include "tools/convert/zarr_metadata.h"

namespace slabfs::stores {

class ZarrStore;

// Why array `a` cannot be written by this build ("" when it can): a codec
// it decodes but cannot encode.
std::string ZarrReadOnlyReason(const tools::convert::ZarrArray& a);

// The directories where files were renamed or made since the last Sync.
class DirtyDirs {
 public:
  // `fsync_dir` fsyncs one open directory, as fsync(2) does (-1 and errno
  // on failure); null for fsync(2) itself (tests pass their own).
  explicit DirtyDirs(std::function<int(int fd)> fsync_dir = nullptr);

  void Add(std::string dir);
  // fsyncs each. One call at a time: a call returns only once every
  // directory noted before it is fsynced, or has failed (a call that
  // waited retries those the call before it failed). Those that fail stay
  // for the next call and the first failure is returned. IOError.
  Status SyncAll();

 private:
  std::function<int(int fd)> fsync_dir_;
  std::mutex sync_mu_;  // held through SyncAll, before mu_
  std::mutex mu_;       // guards dirs_
  std::set<std::string> dirs_;
};

// Replaces the file at `path` with `bytes`: a temporary file beside it,
// written, fsynced and renamed over it; its directory noted in *dirty.
// IOError, NoSpace; the temporary file is removed on failure.
Status ReplaceFileAtomically(const std::string& path, std::string_view bytes, DirtyDirs* dirty);

// What the store's writer and its datasets share (they outlive the store).
struct ZarrWriteContext {
  std::string store;  // the store's path (its root directory)
  bool v3 = false;
  // One metadata rewrite at a time: after any ZarrLayout::mu, before the
  // tree's lock.
  std::mutex meta_mu;
  DirtyDirs dirty;
};

// After the metadata document `file` (a .zarray, .zattrs, .zgroup or
// zarr.json under the store's root) was rewritten as `doc`: its entry in
// the store's consolidated metadata, if the store has any (v2's root
// .zmetadata, v3's root zarr.json "consolidated_metadata"), is set to
// `doc` (added when missing), the document replaced as ReplaceFileAtomically
// does. Consolidated metadata that cannot be parsed is logged and removed
// (v3: the member dropped) rather than left stale. Under meta_mu.
Status UpdateConsolidated(ZarrWriteContext* ctx, const std::string& file, const tools::convert::Json& doc);

// What writing a metadata document did: `written` once the document itself
// was replaced (the change is made, and what the writer holds in memory
// must follow it), `status` the first failure, of the document or then of
// the consolidated metadata (reported, but the change stands).
struct MetadataWrite {
  bool written = false;
  Status status;
};
// Replaces `file` with `doc` (ReplaceFileAtomically), then its entry in the
// consolidated metadata (UpdateConsolidated). Under meta_mu.
MetadataWrite WriteMetadataDocument(ZarrWriteContext* ctx, const std::string& file, const tools::convert::Json& doc);

// The most chunks a new _FillValue of a v2 array holding data stores
// first, holding the old value, so that no element changes
// (ZarrWriter::SetFillMarker).
inline constexpr uint64_t kMaxChunksStoredForAFillChange = 4096;

class ZarrWriter final : public StoreWriter {
 public:
  explicit ZarrWriter(ZarrStore* store);

  Result<std::shared_ptr<WritableStoreDataset>> OpenDatasetForWriting(ObjectId id) override;
  Status SetAttribute(ObjectId id, std::string_view name, const Attribute& value) override;
  Status RemoveAttribute(ObjectId id, std::string_view name) override;
  Result<ObjectId> CreateGroup(ObjectId parent, std::string_view name) override;
  Status Sync() override;

 private:
  // The directory of group or array `id` (NotSupported for the root a
  // store whose root is an array shows: it has none).
  Result<std::string> DirOf(ObjectId id);
  // Reads the attributes document of the object in `dir`, lets `change`
  // edit its attributes object, writes it back. Under meta_mu.
  MetadataWrite EditAttributes(const std::string& dir, const std::function<Status(tools::convert::Json&)>& change);

  // Attributes the tree shows from an array's metadata, not its attributes
  // (tools/convert/zarr_listing.h), are changed there: _FillValue of a v2
  // array xarray reads whose fill_value is set is that fill_value, and
  // _ARRAY_DIMENSIONS of a v3 array is its dimension_names.
  enum class Special { kNone, kFillValue, kDimensionNames };
  Result<Special> SpecialOf(ObjectId id, std::string_view name);
  // Writes .zarray's fill_value (what chunks never written read as too),
  // under the array's lock. While the array stores no chunk and nothing was
  // written to it since the store opened, every element then reads as the
  // new value. Once it holds data every element keeps its value: the
  // chunks it does not store are stored first, holding the old value (at
  // most kMaxChunksStoredForAFillChange, else PermissionDenied with
  // nothing changed). InvalidArgument unless `value` is one number the
  // array's type holds.
  Status SetFillMarker(ObjectId id, const Attribute& value);
  // Writes zarr.json's dimension_names (null `value`: removes them);
  // InvalidArgument unless a JSON list of one name or null per dimension.
  Status SetDimensionNames(ObjectId id, const Attribute* value);
  // v2: after _ARRAY_DIMENSIONS was set or removed, the tree's _FillValue
  // as reopening would show it from `attrs_doc`, the .zattrs written
  // (fill_value once the array is xarray's, else the .zattrs value, if
  // any). Holds no lock when called.
  void ReshowFillValue(ObjectId id, const tools::convert::Json& attrs_doc);
  std::string PathOf(ObjectId id);
  // The rank of the array `id` (0 for a 0-d array), nullopt for a group.
  Result<std::optional<size_t>> ArrayRankOf(ObjectId id);

  ZarrStore* store_;
  std::shared_ptr<ZarrWriteContext> ctx_;
};

}  // namespace slabfs::stores

#endif  // SLABFS_STORES_ZARR_ZARR_WRITER_H_
