// Object blocks: one per group or dataset. A group's block lists its
// children with each child's id, kind and block reference, so the tree of
// blocks from the root is the whole namespace of one committed state.
//
// A group with many children (group block version 2) lists them in group
// pages instead (type kGroupPage), each a run of the sorted entries, and
// its block holds the page table: each page's key (the lowest name it may
// hold; the first page's is ""), reference and entry count. A page holds
// the names from its key up to the next page's key. A change to one child
// then rewrites one page and the table, not every entry
// (engine/txn/group_pages.h). A group with more pages than fit a small
// table (group block version 3) keeps the table itself in group page
// tables (type kGroupPageTable), each a run of the page references, and
// its block holds the table of those: each table's key (its first page's
// key), reference and page count. A change then rewrites one page, one
// table and the group block, whatever the group's size.
//
//   group page payload: u64 group id, u32 count, count x child entry
//   (the same entries as a version 1 group block's).
//   group page table payload: u64 group id, u32 count, count x page
//   reference (the same references as a version 2 group block's).
#ifndef SLABFS_ENGINE_FORMAT_OBJECT_H_
#define SLABFS_ENGINE_FORMAT_OBJECT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/filter/pipeline.h"
#include "engine/format/block.h"
#include "slabfs/types.h"

namespace slabfs::engine {

struct AttributeRecord {
  std::string name;
  Attribute value;
};

struct ChildRecord {
  std::string name;
  ObjectKind kind = ObjectKind::kGroup;
  ObjectId id = 0;
  BlockRef block;
};

// The first dimension was created able to change (max shape != shape), so
// the dataset's length as a file can change (appends, truncate). Kept apart
// from the max shape because a dataset that grew to its maximum, or a fixed
// one that shrank, looks the same by its shapes alone.
constexpr uint8_t kDatasetFlagLengthResizable = 1;
// The dataset has a filter pipeline: its list follows the fill value, and
// chunk records hold each chunk's stored size and filter mask.
constexpr uint8_t kDatasetFlagFiltered = 2;
// Sparse: chunks keep a set of defined elements (sparse_chunk.h); the
// defined count follows the filter list, and chunk records are 16 bytes.
constexpr uint8_t kDatasetFlagSparse = 4;
// Trimmed edge (dataset block version 2): a dense, unfiltered chunk stores
// only its leading steps of the first dimension that lay inside the shape
// when it was written (engine/chunk/trimmed_edge.h); the rest reads as the
// fill value, and chunk records are 16 bytes (address, stored size, a zero
// mask). Set at creation on dense datasets whose first dimension can grow,
// such as the mount's new files.
constexpr uint8_t kDatasetFlagTrimmedEdge = 8;
constexpr uint8_t kDatasetKnownFlags =
    kDatasetFlagLengthResizable | kDatasetFlagFiltered | kDatasetFlagSparse | kDatasetFlagTrimmedEdge;

struct DatasetRecord {
  DType dtype = DType::kU1;
  IndexKind index = IndexKind::kFixedArray;
  uint8_t flags = 0;  // kDatasetFlag*
  Dims shape, max_shape, chunks;
  std::string fill;        // ItemSize(dtype) bytes
  FilterPipeline filters;  // not empty exactly when kDatasetFlagFiltered is set
  std::string index_root;  // the index's own encoding of its root
  uint64_t allocated_chunks = 0;
  uint64_t stored_bytes = 0;
  uint64_t defined_elements = 0;  // sparse datasets
};

// One entry of a version 2 group's page table, of a group page table, or
// of a version 3 group's table of page tables (then `entries` counts the
// pages the table lists, and `key` is its first page's key).
struct ChildPageRef {
  std::string key;  // names >= key (and below the next page's key)
  BlockRef block;
  uint32_t entries = 0;
  bool operator==(const ChildPageRef&) const = default;
};

struct ObjectRecord {
  ObjectId id = 0;
  ObjectKind kind = ObjectKind::kGroup;
  std::vector<AttributeRecord> attrs;  // sorted by name, unique
  std::vector<ChildRecord> children;   // groups: sorted by name, unique
  // Groups: when not empty, the children live in these pages (block
  // version 2) and `children` is empty.
  std::vector<ChildPageRef> child_pages;
  // Groups: when not empty, the page table lives in these group page
  // tables (block version 3); `children` and `child_pages` are empty.
  std::vector<ChildPageRef> child_tables;
  DatasetRecord dataset;  // datasets
};

// Bytes one child entry takes in a group block or page.
inline size_t ChildEntryBytes(std::string_view name) { return name.size() + 23; }

// A group page of `children` (sorted, unique) of group `group`.
std::string EncodeGroupPage(ObjectId group, const ChildRecord* children, size_t n);
// Decodes a group page of group `group` listed in its table as `ref`: the
// group id, `ref.entries` entries, each name valid, sorted, >= ref.key and
// below `next_key` (none for the last page), child references in bounds.
Result<std::vector<ChildRecord>> DecodeGroupPage(std::string_view payload, ObjectId group, const ChildPageRef& ref,
                                                 const std::string* next_key, uint64_t file_end);

// A group page table of group `group` listed as `ref` in its group's table
// of tables: `ref.entries` page references, each key valid and increasing,
// the first equal to `ref.key`, all below `next_key` (none for the last
// table), each page's entry count >= 1 and its block in bounds.
std::string EncodeGroupPageTable(ObjectId group, const ChildPageRef* pages, size_t n);
Result<std::vector<ChildPageRef>> DecodeGroupPageTable(std::string_view payload, ObjectId group,
                                                       const ChildPageRef& ref, const std::string* next_key,
                                                       uint64_t file_end);

BlockType BlockTypeOf(ObjectKind k);
// The block version an object is written with: 2 for a dataset with
// kDatasetFlagTrimmedEdge (the flag is new in version 2, so a build that
// knows only version 1 refuses the block instead of misreading its chunks)
// and for a group with pages, 1 for everything else, which every build
// reads.
uint8_t ObjectBlockVersion(const ObjectRecord& o);
std::string EncodeObject(const ObjectRecord& o);
// Decodes and validates a payload of a block of the given type and
// version. Every number is checked: names, dtypes, ranks, shapes, chunk
// sizes, the fill value's length, child references against file_end, flags
// that the version knows and that go together. Corruption otherwise.
Result<ObjectRecord> DecodeObject(std::string_view payload, BlockType type, uint64_t file_end, uint8_t version = 1);

// Validation shared with dataset creation: InvalidArgument (for callers) is
// returned; decoders turn it into Corruption.
Status ValidateDatasetShape(DType dtype, const Dims& shape, const Dims& max_shape, const Dims& chunks);

}  // namespace slabfs::engine

#endif  // SLABFS_ENGINE_FORMAT_OBJECT_H_
