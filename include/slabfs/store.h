// Stores: one read-only view of groups, datasets and attributes over
// several formats, so that one front end (the mount's file view, `slab`'s
// reading commands, the Python binding's read-only File, and later import
// and export as copies between two stores) reads a slab container, an HDF5
// or netCDF-4 file and a Zarr store the same way.
//
//   auto store = slabfs::OpenContainerStore("data.slab");   // or OpenHdf5Store
//   auto id = (*store)->Resolve("/run1/temp");
//   auto ds = (*store)->OpenDataset(*id);
//   (*ds)->Read(slabfs::Slab::Box({0, 0}, {10, 2000}), buf);
//
// The model is the container's (include/slabfs/container.h): a tree of
// groups rooted at kRootId, named children sorted by name, datasets of one
// of the ten little-endian dtypes in C order with a shape, chunk shape and
// fill value, and attributes that are a string or numbers. A store shows
// what it can hold in that model and lists the rest as skipped (Skipped(),
// one line each: what, and why), never guessing: a foreign dataset whose
// type, layout or filters it cannot read is absent from the tree and named
// there. Elements read always come out as the dtype says (little-endian,
// native here), whatever the source's byte order.
//
// This header is the read side. A store that can be changed in place (a
// Zarr directory store opened for writing) also hands out a StoreWriter
// (writer(), include/slabfs/store_writer.h); the others answer null.
//
// Ids: an object's id is stable for as long as the store is open (a store
// made of a container uses the container's ids; other stores number the
// objects they found when they opened). kRootId is the root group.
//
// Thread safety: every method of Store and StoreDataset may be called from
// any number of threads at once. A StoreDataset stays valid after the
// Store that made it is destroyed (it shares what it needs).
//
// Errors: NotFound (no such object, attribute or name), NotAGroup /
// NotADataset (the wrong kind), InvalidArgument (a bad selection),
// Corruption (bytes of the file fail a check; the message names the file,
// dataset and chunk), IOError (the operating system refused a read).
#ifndef SLABFS_STORE_H_
#define SLABFS_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "slabfs/container.h"
#include "slabfs/status.h"
#include "slabfs/types.h"

namespace slabfs {

class StoreWriter;

// How a store keeps a dataset's elements.
enum class StoreLayout : unsigned char {
  kChunked = 1,     // chunks, each stored (possibly filtered) or not stored at all
  kContiguous = 2,  // one extent of the file in C order (one chunk, unfiltered)
};
std::string_view StoreLayoutName(StoreLayout layout);  // "chunked", "contiguous"

// What a dataset of a store is, beyond what DatasetInfo says.
struct StoreDatasetInfo {
  // dtype, shape, max shape, chunk shape (the shape itself for a contiguous
  // dataset), fill value (the store's own fill: what unstored elements read
  // as), the chunk grid's size and what is stored. `filters` holds the
  // pipeline in slab's spelling where it has one (HDF5's fletcher32 shows
  // as "checksum": a checksum verified at every read), so a copy into a
  // container can keep it (OptionsOf).
  DatasetInfo dataset;
  StoreLayout layout = StoreLayout::kChunked;
  // The pipeline in the store's own terms ("shuffle,deflate=4,fletcher32");
  // "" when there are no filters.
  std::string source_filters;
  // The source's element type in numpy's spelling with its byte order
  // (">f4", "<i2", "|u1"); elements are converted to `dataset.dtype`.
  std::string source_dtype;
  // An HDF5 scalar (a dataspace of rank 0): shown with shape {1}.
  bool scalar = false;
};

// One thing a store could not show, and why.
struct SkippedObject {
  std::string path;    // "/a/b", or "/a/b attribute 'c'"
  std::string reason;  // "variable-length string data", "compact layout", ...
  // Left out because its metadata is damaged (does not parse, contradicts
  // itself), not because the model cannot hold it: a copy refuses these.
  bool damaged = false;
};

// A dataset of a store, for reading.
class StoreDataset {
 public:
  virtual ~StoreDataset() = default;

  // What the dataset is now (a writable store's dataset can change shape
  // and stored chunks while open; the others' are fixed).
  virtual StoreDatasetInfo info() const = 0;
  // The store-wide path ("/a/b"), for messages.
  virtual const std::string& path() const = 0;

  // Reads the dataset selection `sel` into buf, as Dataset::Read does:
  // without `mem`, buf is a dense C-order array of sel.extents(); elements
  // never stored read as the fill value. Errors: InvalidArgument for a
  // selection of the wrong rank or outside the shape; Corruption naming the
  // chunk for stored bytes that fail a check (nothing of a damaged chunk is
  // copied out as data, though other chunks of the selection may already
  // be in buf); IOError.
  virtual Status Read(const Slab& sel, void* buf, const MemSpace* mem = nullptr) const = 0;
  // Elements [first, first + count) in C order into a dense buffer
  // (InvalidArgument past the end).
  Status ReadElements(uint64_t first, uint64_t count, void* buf) const;
  // Bytes [offset, offset + length) of the dataset's byte view (its
  // elements in C order), shortened at the end as read(2) is; 0 at or past
  // the end. Any byte offset, whole elements or not (Dataset::ReadBytes).
  Result<size_t> ReadBytes(uint64_t offset, size_t length, void* buf) const;

  // Every stored chunk, in C order of the chunk grid (a contiguous dataset
  // is one chunk at {0, ...} once allocated). `addr` and `bytes` are where
  // the store keeps it, `filter_mask` the store's mask of skipped filters.
  virtual Result<std::vector<StoredChunk>> StoredChunks() const = 0;
  // The elements of the stored chunks inside a box selection (no strides),
  // as disjoint boxes sorted in C order of their first element, merged
  // where they line up: SEEK_DATA / SEEK_HOLE and `cp --sparse` of a
  // foreign dataset. Its cost follows the stored chunks, not the box.
  virtual Result<std::vector<Box>> Defined(const Slab& sel) const = 0;
  // The same for elements [first, first + count) in C order, as sorted,
  // merged runs (Dataset::DefinedRuns). Its cost follows the stored chunks
  // and the rows of the range.
  Result<std::vector<ElementRun>> DefinedRuns(uint64_t first, uint64_t count) const;
  // Calls fn with the defined runs among [first, first + count), in order,
  // until it returns false (Dataset::ForEachDefinedRun): SEEK_DATA and
  // SEEK_HOLE, counting and copying. The walk jumps over the holes between
  // stored chunks, so its cost follows the stored chunks and the defined
  // elements, never the size of a hole; `check` (if given) runs before
  // each step and stops the walk with its error (an interrupted lseek).
  Status ForEachDefinedRun(uint64_t first, uint64_t count, const Dataset::RunVisitor& fn,
                           const Dataset::WalkCheck& check = {}) const;
  // How many elements are defined (those of the stored chunks; for a
  // container's sparse dataset, those written and not erased): the sum of
  // Defined's boxes over the whole dataset (Dataset::CountDefined).
  Result<uint64_t> CountDefined() const;

  // What ForEachDefinedRun jumps by, made once per walk: given an element
  // (C order), the first element at or after it that lies in a stored
  // chunk (the only elements Defined can name), or nullopt when none does.
  using NextStoredElement = std::function<Result<std::optional<uint64_t>>(uint64_t at)>;
  // The default takes the boxes of every stored chunk (StoredChunks(), once
  // per walk) and, per step, the few whose elements can reach past `at`. A
  // store that keeps its chunks in order overrides it to look at the
  // chunks near `at` only (stores/chunked_dataset.h), so a walk of one
  // step costs what those chunks do, not all of them.
  virtual Result<NextStoredElement> StoredElementFinder() const;

  // The bytes of the stored chunk at grid coordinates `coords` as the store
  // keeps them, for a copy into a container that stores them unchanged
  // (Dataset::WriteEncodedChunk, which checks them with one decode) when
  // they are exactly what a container with info().dataset.filters would
  // store for that chunk: little-endian elements in C order through that
  // pipeline. *filter_mask gets the store's mask of skipped filters.
  // NotSupported where the store's encoding is not the container's (the
  // default), NotFound for a chunk that is not stored, Corruption, IOError.
  virtual Result<std::string> ReadEncodedChunk(const Dims& coords, uint32_t* filter_mask) const;
};

// A tree of groups, datasets and attributes, read-only.
class Store {
 public:
  virtual ~Store() = default;

  // "slab", "hdf5".
  virtual std::string_view format() const = 0;
  virtual const std::string& path() const = 0;

  virtual Result<ObjectId> Lookup(ObjectId parent, std::string_view name) const = 0;
  // kind, id and, for a group, its number of children; for a dataset its
  // size in bytes and the bytes its stored chunks take.
  virtual Result<ObjectInfo> Stat(ObjectId id) const = 0;
  // The children of a group, sorted by name.
  virtual Result<std::vector<Entry>> List(ObjectId group) const = 0;
  virtual Result<std::string> PathOf(ObjectId id) const = 0;
  // Attribute names sorted; values as slabfs attributes.
  virtual Result<std::vector<std::string>> ListAttributes(ObjectId id) const = 0;
  virtual Result<Attribute> GetAttribute(ObjectId id, std::string_view name) const = 0;
  virtual Result<std::shared_ptr<const StoreDataset>> OpenDataset(ObjectId id) const = 0;
  // What the store leaves out, in the order it met them (empty for a
  // container, which holds nothing it cannot show).
  virtual std::vector<SkippedObject> Skipped() const = 0;
  // The store's chunk cache, as Container::cache_stats counts it.
  virtual CacheStats cache_stats() const = 0;
  // The change side (store_writer.h), or null for a store that is not
  // changed in place (the default).
  virtual StoreWriter* writer() { return nullptr; }

  // An absolute path ("/a/b"; "/" is the root) to an id, by Lookup.
  Result<ObjectId> Resolve(std::string_view path) const;
  Result<std::shared_ptr<const StoreDataset>> OpenDataset(std::string_view path) const;
};

// A slab container as a store (read-only; opened with options.read_only
// forced on). Its datasets read through the container's engine and cache.
Result<std::unique_ptr<Store>> OpenContainerStore(const std::string& path, OpenOptions options = {});
// The same over a container already open (read-only or not); the store
// shares it.
std::unique_ptr<Store> ContainerStore(std::shared_ptr<Container> container);

}  // namespace slabfs

#endif  // SLABFS_STORE_H_
