// Value types of the slabfs data model: element types, shapes, selections,
// dataset creation options and descriptions, attributes, object ids.
#ifndef SLABFS_TYPES_H_
#define SLABFS_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "slabfs/status.h"

// 128-bit integers for overflow-safe size arithmetic (GNU extension).
__extension__ typedef unsigned __int128 slabfs_u128;
__extension__ typedef __int128 slabfs_i128;

namespace slabfs {

// ---------------------------------------------------------------- dtypes

// Element types, little-endian, spelled as numpy spells them ("f4", "u2").
enum class DType : unsigned char {
  kI1 = 1, kI2 = 2, kI4 = 3, kI8 = 4,
  kU1 = 5, kU2 = 6, kU4 = 7, kU8 = 8,
  kF4 = 9, kF8 = 10,
};

size_t ItemSize(DType t);           // 1, 2, 4 or 8
std::string_view DTypeName(DType t);  // "f4"
bool IsFloat(DType t);
bool IsSigned(DType t);
// Accepts "f4", "<f4", "float32", "int16", "uint8", ... Unknown names are
// InvalidArgument with a message listing the valid ones.
Result<DType> ParseDType(std::string_view name);
// Whether a raw byte is a valid DType code (for decoding untrusted bytes).
bool IsValidDTypeCode(unsigned code);

// Encodes one value given as text ("1.5", "-3", "nan", "0x10") as the
// little-endian bytes of an element of type t. Out-of-range or malformed
// text is InvalidArgument.
Result<std::string> EncodeScalar(DType t, std::string_view text);
// The text form of one element (shortest round-trip form for floats).
std::string FormatScalar(DType t, const void* element);

// ---------------------------------------------------------------- shapes

constexpr int kMaxRank = 32;
// A max-shape dimension that can grow without bound.
constexpr uint64_t kUnlimited = std::numeric_limits<uint64_t>::max();

using Dims = std::vector<uint64_t>;

// "2000,2000" -> {2000, 2000}; "unlimited" (or "u", "none") gives kUnlimited
// when allow_unlimited. Zero (unless allow_zero), negative, empty or
// malformed entries are InvalidArgument.
Result<Dims> ParseDims(std::string_view text, bool allow_unlimited = false, bool allow_zero = false);
// {2000, 2000} -> "2000,2000"; kUnlimited prints as "unlimited".
std::string FormatDims(const Dims& dims);

// ------------------------------------------------------------ selections

// One dimension of a hyperslab, as in HDF5: the selected indices are
// start + i*stride + j for 0 <= i < count, 0 <= j < block.
// Requires block >= 1 and, when count > 1, stride >= block.
struct DimSlab {
  uint64_t start = 0;
  uint64_t stride = 1;
  uint64_t count = 0;
  uint64_t block = 1;

  uint64_t extent() const { return count * block; }  // selected indices
};

// A hyperslab: one DimSlab per dimension.
struct Slab {
  std::vector<DimSlab> dims;

  // A box: start[d] .. start[d]+count[d]-1 in every dimension.
  static Slab Box(const Dims& start, const Dims& count);
  // Everything in an array of this shape.
  static Slab All(const Dims& shape);
  int rank() const { return static_cast<int>(dims.size()); }
  uint64_t num_elements() const;  // product of extents (saturates)
  Dims extents() const;           // per-dimension extent()
};

// The memory side of a transfer: the caller's buffer is a dense C-order
// array of `shape`, and the elements move to or from `selection` inside it.
// The selection's per-dimension extents must equal the dataset selection's.
// Without a MemSpace, the buffer is the dataset selection's extents, dense.
struct MemSpace {
  Dims shape;
  Slab selection;
};

// ------------------------------------------------------------ datasets

enum class IndexKind : unsigned char {
  kAuto = 0,  // chosen from the shape at creation
  kSingle = 1,
  kCompact = 2,
  kFixedArray = 3,
  kExtensibleArray = 4,
  kBTree = 5,
};
std::string_view IndexKindName(IndexKind k);  // "fixed", "btree", ...
Result<IndexKind> ParseIndexKind(std::string_view name);

struct DatasetOptions {
  DType dtype = DType::kU1;
  Dims shape;            // rank 1..32; a dimension may be 0 only if it can grow
  Dims max_shape;        // empty: same as shape (fixed); kUnlimited or >= shape
  Dims chunks;           // empty: chosen automatically; else same rank, all >= 1
  std::string fill;      // empty: zero; else exactly ItemSize(dtype) bytes
  IndexKind index = IndexKind::kAuto;
  // kAuto picks the compact index for at most this many chunks (at most 64).
  uint64_t compact_limit = 8;
  // The filter pipeline each chunk goes through, in order, on its way to the
  // file: "shuffle" (byte shuffle by element size), "deflate=N" (zlib level
  // 1-9; plain "deflate" is 6), "checksum" (CRC-32C of the stored chunk,
  // verified on every read), comma-separated, each at most once, e.g.
  // "shuffle,deflate=6,checksum". Empty or "none": no filters.
  std::string filters;
  // Whether the length of the byte view can change (DatasetInfo::
  // length_resizable); unset: when max_shape[0] differs from shape[0].
  // Copies set it from the source, whose shapes alone may not tell.
  std::optional<bool> length_resizable;
  // Sparse: only elements written (and not erased) are defined; the others
  // read as the fill value and take no space (see Dataset::Defined, Erase).
  bool sparse = false;
};

struct DatasetInfo {
  DType dtype = DType::kU1;
  Dims shape;
  Dims max_shape;
  Dims chunks;
  std::string fill;           // ItemSize(dtype) bytes
  IndexKind index = IndexKind::kAuto;
  uint64_t num_elements = 0;  // product of shape
  uint64_t size_bytes = 0;    // num_elements * item size
  uint64_t num_chunks = 0;    // chunks in the chunk grid
  uint64_t allocated_chunks = 0;  // chunks stored in the container (as of now)
  uint64_t stored_bytes = 0;  // bytes of chunk data stored (as of now)
  uint64_t index_bytes = 0;   // bytes the chunk index takes on disk (last commit)
  // The first dimension was created able to change (max shape != shape):
  // the length of the dataset's byte view changes with writes past the end
  // and SetSizeBytes.
  bool length_resizable = false;
  // The filter pipeline in the canonical form of DatasetOptions::filters
  // ("shuffle,deflate=6,checksum"); empty when the dataset has none.
  std::string filters;
  bool sparse = false;
  // Sparse datasets: elements defined (written and not erased), counting
  // cached changes once they are written back (at the latest at a commit).
  // 0 for dense datasets; Dataset::CountDefined counts for both.
  uint64_t defined_elements = 0;
};

// The creation options of a dataset with the layout `info` describes (its
// dtype, shape, max shape, chunks, fill, filters, sparse, index and
// whether its length can change), to make a copy or to relayout another.
DatasetOptions OptionsOf(const DatasetInfo& info);

// Elements [first, first + count) in C order.
struct ElementRun {
  uint64_t first = 0;
  uint64_t count = 0;
  bool operator==(const ElementRun&) const = default;
};

// A box of elements: start[d] .. start[d]+count[d]-1 in every dimension.
struct Box {
  Dims start;
  Dims count;
  bool operator==(const Box&) const = default;
};

// Where one chunk is stored, for tools and tests (see Dataset::StoredChunks).
struct StoredChunk {
  Dims coords;               // position in the chunk grid
  uint64_t addr = 0;         // byte offset in the container file
  uint64_t bytes = 0;        // bytes stored there
  uint32_t filter_mask = 0;  // bit i: filter i of the pipeline was skipped
};

// ------------------------------------------------------------ attributes

// A small named value on a group or dataset: a string, or a number or short
// array of numbers of one dtype.
struct Attribute {
  enum class Kind : unsigned char { kString = 0, kNumeric = 1 };
  Kind kind = Kind::kString;
  DType dtype = DType::kF8;  // for kNumeric
  std::string data;          // the string, or count * ItemSize(dtype) bytes

  static Attribute String(std::string s);
  static Attribute Integer(int64_t v);  // i8
  static Attribute Float(double v);     // f8
  static Attribute Numbers(DType t, std::string raw_bytes);

  uint64_t count() const;  // elements (1 for a string)
  // "m/s", "2.5", or "1,2,3".
  std::string ToText() const;
  // Infers the kind from text the way the CLI does: all-integer
  // comma-separated values are i8, all-numeric are f8, anything else a string.
  static Attribute FromText(std::string_view text);
};

// Attribute values are at most this many bytes, names at most 255 bytes.
constexpr size_t kMaxAttributeBytes = 64 * 1024;
constexpr size_t kMaxNameBytes = 255;

// Checks a group, dataset or attribute name: non-empty, at most 255 bytes,
// no '/', no NUL, not "." or "..".
Status ValidateName(std::string_view name);

// ------------------------------------------------------------ objects

// Every group and dataset has an id that never changes while it exists
// (across renames and reopenings) and is never reused for another object.
// The root group's id is kRootId.
using ObjectId = uint64_t;
constexpr ObjectId kRootId = 1;

enum class ObjectKind : unsigned char { kGroup = 1, kDataset = 2 };

struct ObjectInfo {
  ObjectId id = 0;
  ObjectKind kind = ObjectKind::kGroup;
  uint64_t num_children = 0;  // groups
  uint64_t size_bytes = 0;    // datasets: elements * item size
  uint64_t stored_bytes = 0;  // datasets: bytes of chunk data stored
};

struct Entry {
  std::string name;
  ObjectId id = 0;
  ObjectKind kind = ObjectKind::kGroup;
};

// ------------------------------------------------------------ containers

struct OpenOptions {
  bool read_only = false;
  bool create = false;          // create the file (fails if it exists)
  // The chunk cache's budget: a hard bound on the memory its chunks take,
  // unless cache_max_bytes allows more.
  uint64_t cache_bytes = 64ull << 20;
  // How far the cache may grow past cache_bytes when the working set does
  // not fit (a chunk evicted and wanted again grows the budget by one
  // chunk's worth). 0, or anything not above cache_bytes: it never grows.
  uint64_t cache_max_bytes = 0;
  // Place new extents back to back instead of aligning chunks to 4 KiB
  // (and blocks to 64 bytes): no gaps, so a container written once has no
  // free space inside (slab repack's output). Direct partial reads of
  // unaligned chunks touch one more page now and then.
  bool pack = false;
  // A program name recorded in the container's lock record while it is open
  // for writing, so that a refused second writer can name the holder.
  std::string holder = "slab";
  // The mount point a daemon holding the container serves (recorded with
  // the holder): an open that finds the container held by a slabfs daemon
  // whose mount point is gone waits for its last commit (at most a
  // minute) instead of failing or reading the commit before it.
  std::string holder_mount;
  // Readers that follow a writer. A writer reuses the space a commit no
  // longer references only once no read-only open (in any process that
  // shares the kernel's locks) still reads an older commit. Where locks may
  // not reach readers on other hosts, it also waits this many seconds after
  // the commit: a reader there must Refresh within that time. -1 (auto):
  // 60 on network and FUSE filesystems, 0 on local ones.
  int reuse_delay_seconds = -1;
  // A writer derives the free list from what the committed tree references
  // instead of reading it, and the next commit writes it (slab fsck
  // --repair): leaked space is free again. A free list that cannot be read
  // (a damaged block) is rebuilt this way by every writer, with a warning,
  // and ignored by a reader, which allocates nothing.
  bool rebuild_free_list = false;
};

// What Container::Refresh found.
struct RefreshInfo {
  uint64_t generation = 0;  // the commit the container now reads
  bool changed = false;     // it is newer than the one read before
  // Objects that are new, or whose attributes, children (groups) or
  // contents and shape (datasets) changed; a group whose descendant changed
  // is listed too. Sorted.
  std::vector<ObjectId> changed_objects;
  // Objects that are gone. Sorted.
  std::vector<ObjectId> removed_objects;
  // Names of the commit read before that no longer lead to the same object
  // (removed, renamed, moved or replaced), for caches of names such as the
  // kernel's dentries.
  struct Name {
    ObjectId parent = 0;
    std::string name;
  };
  std::vector<Name> dropped_names;
};

struct CacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t bytes_read = 0;     // chunk bytes read from the container file
  uint64_t bytes_written = 0;  // chunk bytes written to the container file
  uint64_t evictions = 0;
  uint64_t bypass_reads = 0;   // chunk reads that went straight to the caller
  uint64_t bypass_writes = 0;  // chunk writes that went straight to the file
  // Byte-view reads answered with file extents instead of bytes
  // (Dataset::WithFileExtents: the mount's spliced replies).
  uint64_t extent_reads = 0;
  uint64_t resident_bytes = 0;
  uint64_t budget_bytes = 0;
};

struct SpaceInfo {
  uint64_t file_bytes = 0;       // size of the container file
  uint64_t free_bytes = 0;       // free extents inside it
  uint64_t disk_free_bytes = 0;  // free on the filesystem holding it
  uint64_t disk_total_bytes = 0;
  uint64_t num_objects = 0;
  uint64_t generation = 0;       // commits so far
  // Free extents a writer keeps back because a reader may still read an
  // older commit that uses them (included in free_bytes).
  uint64_t held_bytes = 0;
  // Bytes the free list itself takes: a base and the deltas of the commits
  // since it was written (engine/txn/free_list_log.h; at most 64 deltas).
  uint64_t free_list_bytes = 0;
};

}  // namespace slabfs

#endif  // SLABFS_TYPES_H_
