// The slabfs public API: a Container file holding a tree of groups and
// n-dimensional chunked datasets.
//
//   auto c = slabfs::Container::Open("data.slab", {.create = true});
//   auto id = (*c)->MakeGroups("/run1");
//   slabfs::DatasetOptions o{.dtype = slabfs::DType::kF4, .shape = {2000, 2000},
//                            .chunks = {100, 100}};
//   auto ds = (*c)->CreateDataset("/run1/temp", o);
//   (*ds).Write(slabfs::Slab::Box({0, 0}, {10, 2000}), buf);
//   (*c)->Commit();
//
// Thread safety: every method of Container and Dataset may be called from
// any number of threads at once. Readers of one dataset run in parallel;
// writes to one dataset are serialised; Commit waits for operations in
// flight and holds new ones back until it is durable.
//
// Durability: changes become durable and visible to a later Open only at
// Commit (or Close). A crash at any point leaves the container as of the last
// completed Commit.
//
// Concurrency between processes: opening for writing takes an exclusive lock
// on the file; a second writer (another process, or another Container in this
// process) gets Busy with a message naming the holder. A read-only open reads
// the last commit made before it opened, and keeps reading exactly that
// commit, whatever a writer does meanwhile, until Refresh moves it to the
// newest one: it registers the commit it reads (a shared byte-range lock),
// and a writer never reuses space a registered commit uses (see
// OpenOptions::reuse_delay_seconds for readers on other hosts).
#ifndef SLABFS_CONTAINER_H_
#define SLABFS_CONTAINER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "slabfs/status.h"
#include "slabfs/types.h"

namespace slabfs {

namespace engine {
class ApiAccess;
class DatasetState;
}  // namespace engine

// A handle to one dataset. Cheap to copy; stays valid while its Container is
// open, even if the dataset is renamed. If the dataset is removed while a
// handle is held, the handle keeps working on the detached data and its space
// is reclaimed when the last handle goes away.
class Dataset {
 public:
  Dataset() = default;

  ObjectId id() const;
  // Shape, dtype, chunking, fill and storage figures as of now.
  DatasetInfo info() const;
  size_t item_size() const;
  uint64_t num_elements() const;
  uint64_t size_bytes() const;

  // Hyperslab transfer between the dataset selection `sel` and `buf`.
  // Without `mem`, buf is a dense C-order array of sel.extents().
  // Unwritten elements read as the fill value. Errors: InvalidArgument for a
  // selection of the wrong rank or outside the shape, Corruption for bad
  // on-disk bytes, ReadOnly for writes to a read-only container.
  Status Read(const Slab& sel, void* buf, const MemSpace* mem = nullptr) const;
  Status Write(const Slab& sel, const void* buf, const MemSpace* mem = nullptr);

  // Elements [first, first+count) in C order, as a dense buffer.
  Status ReadElements(uint64_t first, uint64_t count, void* buf) const;
  Status WriteElements(uint64_t first, uint64_t count, const void* buf);

  // The byte view used by the mount: bytes [offset, offset+length) of the
  // dataset's C-order little-endian image. Reads past the end are shortened
  // (the count of bytes read is returned, 0 at or past the end). Writes may
  // start or end inside an element (the partial element is read, modified and
  // written back). A write that reaches past the end is OutOfRange and
  // changes nothing, unless growth is kGrowRows and the first dimension can
  // grow: then the dataset first grows by whole rows (a row is one step of
  // the first dimension) to hold the write, up to the maximum shape; the
  // rest of the last row, and any gap before the write, read as the fill
  // value. If the write then fails (NoSpace on a full disk), the dataset
  // shrinks back to the size it had.
  enum class Growth { kNone, kGrowRows };
  Result<size_t> ReadBytes(uint64_t offset, size_t length, void* buf) const;
  // Where bytes [offset, offset+length) of the byte view lie in the
  // container file, for a caller that moves file bytes without copying
  // them (the mount splices them into its replies). When every one of
  // them (shortened at the end, as ReadBytes does) is a stored byte of an
  // unfiltered dense chunk with no change in the cache not yet written
  // back, and they
  // make at most max_extents runs of the file, calls use(fd, extents) with
  // the file's descriptor and the runs in byte-view order, and returns
  // true. Nothing changes the dataset or reuses its space until `use`
  // returns (writes and commits wait), so `use` must only read. Otherwise
  // returns false without calling it, and the caller reads with ReadBytes:
  // filtered and sparse chunks, chunks not stored, chunks changed in the
  // cache and not written back, offsets inside an element, more runs, a
  // file with no descriptor.
  struct FileExtent {
    uint64_t offset = 0;
    uint64_t length = 0;
  };
  using FileExtentUser = std::function<void(int fd, std::span<const FileExtent> extents)>;
  Result<bool> WithFileExtents(uint64_t offset, size_t length, size_t max_extents, const FileExtentUser& use) const;
  Status WriteBytes(uint64_t offset, size_t length, const void* buf, Growth growth = Growth::kNone);
  // WriteBytes as write(2) does it at a file size limit: a write that
  // starts before the largest size the dataset may reach (its size, or
  // with kGrowRows its maximum shape) and reaches past it writes the bytes
  // that fit and returns their count; one that starts at or past that end
  // is OutOfRange and changes nothing. The mount's write uses it, so that
  // `cp` of a longer file over a fixed dataset stores what fits and fails
  // with EFBIG on the next write, as on a file system at its size limit.
  Result<size_t> WriteBytesUpTo(uint64_t offset, size_t length, const void* buf, Growth growth = Growth::kNone);

  // Stores the chunk at grid coordinates `chunk` (a whole chunk inside the
  // shape) from `image`, the chunk already encoded by this dataset's
  // filter pipeline with the filters whose bits are set in `filter_mask`
  // skipped (HDF5's H5Dread_chunk gives such images for a shuffle/deflate
  // source). The image is decoded once to check it (Corruption if it does
  // not decode to exactly the chunk) and then stored as it is, without
  // compressing again. NotSupported for a dataset without filters or a
  // sparse one; InvalidArgument for an edge chunk, a mask that names
  // filters the pipeline lacks, or an image larger than the pipeline would
  // store (give such chunks decoded, through Write).
  Status WriteEncodedChunk(std::span<const uint64_t> chunk, std::string_view image, uint32_t filter_mask);

  // Resets every element to the fill value and frees all chunks.
  Status Clear();

  // Changes the shape; every dimension stays within the maximum shape
  // (OutOfRange otherwise; InvalidArgument for a wrong rank). Growing
  // changes nothing stored: the new elements read as the fill value.
  // Shrinking frees every chunk wholly outside the new shape and resets the
  // elements of cut chunks that fall outside to the fill value, so they
  // read as fill if the dataset grows again.
  Status Resize(const Dims& shape);
  // The mount's truncate: sets the byte size of a dataset whose first
  // dimension can change to a whole number of rows (InvalidArgument for
  // any other size or a fixed first dimension, OutOfRange past the
  // maximum). The current size is always accepted.
  Status SetSizeBytes(uint64_t size);

  // Gives the dataset a new layout (every field of `options`: dtype, shape,
  // max shape, chunks, fill, filters, sparse, index) holding the same byte
  // image, so its byte view reads exactly as before. `options.shape` must
  // hold as many bytes as the dataset does now (InvalidArgument otherwise),
  // except that an empty dataset takes any layout (its elements then read
  // as the new fill value). A dataset that stores nothing (never written,
  // or all of it erased) has no image to keep: its elements read as the
  // new fill value. The id, name and attributes stay, and every
  // handle, open before or after, sees the new layout. The data is copied
  // once through the cache; elements equal to the new fill value are not
  // stored (in a sparse layout they stay undefined). Like any change it is
  // durable at the next commit, atomically with the old chunks' release.
  Status Relayout(const DatasetOptions& options);

  // Every stored chunk of the dataset, in no particular order. Cached
  // changes are written back first, so the list is current. For tools that
  // show the layout and for tests that damage one chunk on purpose.
  Result<std::vector<StoredChunk>> StoredChunks() const;

  // Writes that were accepted but could not be stored: a write that covers
  // part of a chunk is merged with the stored chunk when it is written back
  // (at a commit, or when the cache is full); if the stored chunk turns out
  // to be damaged then, the write is dropped (logged), so that one damaged
  // chunk does not stop every later commit. Returns the first such loss
  // since the last call (Corruption naming the chunk), then OK, as fsync
  // reports a failed page write-back once. The mount returns it to close
  // and fsync as EIO.
  Status TakeLostWrites();

  // ---- defined elements (see DatasetOptions::sparse)
  // The defined elements inside a box selection (no strides), as disjoint
  // boxes sorted in C order of their first element: for a sparse dataset
  // the elements written and not erased, for a dense one the elements of
  // its stored chunks. Reads no element values, except that a sparse
  // dataset with filters decodes each chunk (its defined set is inside the
  // filtered stream); the cost follows the stored chunks inside the box,
  // not the box's volume. Cached changes are written back first.
  Result<std::vector<Box>> Defined(const Slab& sel) const;
  // The same for elements [first, first + count) in C order, as sorted,
  // merged runs.
  Result<std::vector<ElementRun>> DefinedRuns(uint64_t first, uint64_t count) const;
  // A check that a long walk calls as it goes (before each stored chunk it
  // visits): OK to go on; any other Status ends the walk, which returns it.
  // The mount passes one that answers for a request the kernel interrupted.
  using WalkCheck = std::function<Status()>;
  // The runs of defined elements among [first, first + count), in C order,
  // handed to fn one by one until it returns false (lseek's SEEK_DATA and
  // SEEK_HOLE). Runs come sorted and disjoint, but two that touch may come
  // apart (DefinedRuns merges them). The walk goes only as far as fn asks
  // and visits only the stored chunks on its way, in C order of their
  // elements: a range of 2^62 elements holding three stored chunks costs
  // three chunk visits and a few index lookups, however far apart they lie.
  // Errors as for DefinedRuns, and the check's.
  using RunVisitor = std::function<bool(const ElementRun& run)>;
  Status ForEachDefinedRun(uint64_t first, uint64_t count, const RunVisitor& fn, const WalkCheck& check = {}) const;
  // How many elements are defined (sparse: a counter; dense: a walk of the
  // stored chunks, which calls `check` before each).
  Result<uint64_t> CountDefined(const WalkCheck& check = {}) const;
  // Makes the selected elements undefined: they read as the fill value.
  // Chunks wholly inside the selection are freed unread; in the others a
  // sparse dataset forgets the elements (a chunk left with none is freed
  // when written back) and a dense one stores the fill value. The cost
  // follows the chunks the selection touches that are stored or cached,
  // not the volume of the selection.
  Status Erase(const Slab& sel);

  bool valid() const { return state_ != nullptr; }

 private:
  friend class Container;
  explicit Dataset(std::shared_ptr<engine::DatasetState> s) : state_(std::move(s)) {}
  std::shared_ptr<engine::DatasetState> state_;
};

class Container {
 public:
  // Opens (or with options.create, creates) a container file. Errors:
  // NotFound (no file), AlreadyExists (create over an existing file),
  // Corruption (not a container, truncated, or no valid superblock),
  // Busy (another writer holds it), IOError.
  static Result<std::unique_ptr<Container>> Open(const std::string& path, const OpenOptions& options = {});

  // Commits if writable and dirty, then releases everything. Returns the
  // commit's status. Destroying an open Container calls Close and logs a
  // failure.
  ~Container();
  Status Close();
  // Closes without committing: every change since the last commit is
  // dropped, and the container stays exactly as that commit left it.
  void Discard();

  // Makes every change so far durable and atomic. A no-op when clean.
  Status Commit();
  // Read-only containers: moves to the newest commit. Dataset handles keep
  // working and see the new shape and contents; a handle of a dataset that
  // is gone answers NotFound; names, groups and attributes are those of the
  // new commit. Only what changed is read again. Waits for operations in
  // flight, and holds new ones back while it runs. On failure nothing
  // changes. A writable container always reads its own newest state: its
  // Refresh changes nothing.
  Result<RefreshInfo> Refresh();
  // Whether there are changes since the last commit.
  bool dirty() const;
  bool read_only() const;
  const std::string& path() const;

  // ---- names. Paths are absolute ("/a/b"); "/" is the root group.
  // Trailing and repeated slashes are tolerated; "." and ".." are not.
  Result<ObjectId> Resolve(std::string_view path) const;
  Result<ObjectId> Lookup(ObjectId parent, std::string_view name) const;
  Result<ObjectInfo> Stat(ObjectId id) const;
  // The children of a group, sorted by name.
  Result<std::vector<Entry>> List(ObjectId group) const;
  // One path of the object ("/a/b"), for messages and tools.
  Result<std::string> PathOf(ObjectId id) const;

  // ---- groups
  Result<ObjectId> CreateGroup(ObjectId parent, std::string_view name);
  // Creates the group at path and, with parents, any missing ancestors
  // (like mkdir -p: an existing group is fine then).
  Result<ObjectId> MakeGroups(std::string_view path, bool parents = true);

  // ---- datasets
  Result<Dataset> CreateDataset(ObjectId parent, std::string_view name, const DatasetOptions& options);
  Result<Dataset> CreateDataset(std::string_view path, const DatasetOptions& options);
  Result<Dataset> OpenDataset(ObjectId id) const;
  Result<Dataset> OpenDataset(std::string_view path) const;

  // Removes a dataset (its space is reclaimed) or an empty group (NotEmpty
  // otherwise).
  Status Remove(ObjectId parent, std::string_view name);
  Status Remove(std::string_view path);

  // Moves/renames like rename(2): an existing target is replaced if it is a
  // dataset being replaced by a dataset, or an empty group by a group;
  // otherwise AlreadyExists (or NotEmpty for a non-empty group). Moving a
  // group into itself or a descendant is InvalidArgument. With no_replace an
  // existing target is always AlreadyExists.
  Status Rename(ObjectId from_parent, std::string_view from_name, ObjectId to_parent, std::string_view to_name,
                bool no_replace = false);
  Status Rename(std::string_view from_path, std::string_view to_path);

  // ---- attributes (on groups and datasets)
  Result<std::vector<std::string>> ListAttributes(ObjectId id) const;
  Result<Attribute> GetAttribute(ObjectId id, std::string_view name) const;
  // Creates or replaces. InvalidArgument for a bad name or a value over
  // kMaxAttributeBytes.
  Status SetAttribute(ObjectId id, std::string_view name, const Attribute& value);
  Status DeleteAttribute(ObjectId id, std::string_view name);

  // ---- figures
  CacheStats cache_stats() const;
  SpaceInfo space() const;

  Container(const Container&) = delete;
  Container& operator=(const Container&) = delete;

 private:
  // The engine's state behind the handle, and the engine's way to it
  // (engine/api_access.h: containers on fake files for tests and fuzzing).
  friend class engine::ApiAccess;
  struct Rep;
  explicit Container(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

// The slabfs version, "MAJOR.MINOR.PATCH".
const char* Version();

// Splits an absolute path into its components, checking each with
// ValidateName. "/" gives no components.
Result<std::vector<std::string>> SplitPath(std::string_view path);

// Routes the engine's log lines (refused operations, corruption found,
// commits) to the given spdlog level name: "trace", "debug", "info", "warn",
// "error", "off". Logging goes to stderr.
Status SetLogLevel(std::string_view level);

}  // namespace slabfs

#endif  // SLABFS_CONTAINER_H_
