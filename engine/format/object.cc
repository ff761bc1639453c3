#include "engine/format/object.h"

#include <limits>

#include "engine/format/layout.h"
#include "engine/format/limits.h"
#include "engine/util/coding.h"

namespace slabfs::engine {
namespace {

constexpr size_t kMaxIndexRootBytes = 64 * 1024;

Status Bad(ObjectId id, std::string_view why) {
  return Status::Corruption("object " + std::to_string(id) + ": " + std::string(why));
}

}  // namespace

BlockType BlockTypeOf(ObjectKind k) { return k == ObjectKind::kGroup ? BlockType::kGroup : BlockType::kDataset; }

Status ValidateDatasetShape(DType dtype, const Dims& shape, const Dims& max_shape, const Dims& chunks) {
  size_t rank = shape.size();
  if (rank < 1 || rank > kMaxRank)
    return Status::InvalidArgument("rank must be 1 to " + std::to_string(kMaxRank) + ", not " + std::to_string(rank));
  if (max_shape.size() != rank)
    return Status::InvalidArgument("max shape has rank " + std::to_string(max_shape.size()) + ", shape has rank " +
                                   std::to_string(rank));
  if (chunks.size() != rank)
    return Status::InvalidArgument("chunk shape has rank " + std::to_string(chunks.size()) + ", shape has rank " +
                                   std::to_string(rank));
  slabfs_u128 bytes = ItemSize(dtype);
  slabfs_u128 chunk_bytes = ItemSize(dtype);
  constexpr auto kMaxBytes = static_cast<slabfs_u128>(std::numeric_limits<int64_t>::max());
  for (size_t d = 0; d < rank; ++d) {
    if (shape[d] == kUnlimited)
      return Status::InvalidArgument("dimension " + std::to_string(d) + " of the shape cannot be unlimited");
    if (max_shape[d] == 0)
      return Status::InvalidArgument("dimension " + std::to_string(d) + " of the max shape must be positive");
    if (max_shape[d] != kUnlimited && max_shape[d] < shape[d])
      return Status::InvalidArgument("max shape is smaller than the shape in dimension " + std::to_string(d));
    if (chunks[d] == 0 || chunks[d] == kUnlimited)
      return Status::InvalidArgument("dimension " + std::to_string(d) + " of the chunk shape must be positive");
    bytes *= shape[d];
    chunk_bytes *= chunks[d];
    if (bytes > kMaxBytes) return Status::InvalidArgument("dataset is larger than 2^63 bytes");
    if (chunk_bytes > kMaxChunkBytes)
      return Status::InvalidArgument("a chunk would be larger than " + std::to_string(kMaxChunkBytes >> 20) + " MiB");
  }
  return Status::OK();
}

uint8_t ObjectBlockVersion(const ObjectRecord& o) {
  if (o.kind == ObjectKind::kGroup) return !o.child_tables.empty() ? 3 : o.child_pages.empty() ? 1 : 2;
  return (o.dataset.flags & kDatasetFlagTrimmedEdge) ? 2 : 1;
}

namespace {

void PutChild(std::string* s, const ChildRecord& c) {
  PutShortString(s, c.name);
  PutU8(s, static_cast<uint8_t>(c.kind));
  PutU64(s, c.id);
  PutU64(s, c.block.addr);
  PutU32(s, c.block.len);
}

// Reads one child entry of group `group` and checks it (order against
// `prev`, the entry before it, if any).
Status ReadChild(Reader& r, ObjectId group, const ChildRecord* prev, uint64_t file_end, ChildRecord* c) {
  std::string_view name;
  uint8_t kind;
  if (!r.ShortString(&name) || !r.U8(&kind) || !r.U64(&c->id) || !r.U64(&c->block.addr) || !r.U32(&c->block.len))
    return Bad(group, "child entry is truncated");
  if (!ValidateName(name).ok()) return Bad(group, "bad child name");
  if (prev && prev->name >= name) return Bad(group, "children out of order");
  if (kind != 1 && kind != 2) return Bad(group, "bad child kind");
  if (c->id <= kRootId) return Bad(group, "bad child id");
  if (c->block.empty()) return Bad(group, "child without a block");
  SLABFS_RETURN_IF_ERROR(CheckBlockRef(c->block, file_end, "object " + std::to_string(group) + " child"));
  c->name = std::string(name);
  c->kind = static_cast<ObjectKind>(kind);
  return Status::OK();
}

void PutPageRef(std::string* s, const ChildPageRef& p) {
  PutShortString(s, p.key);
  PutU64(s, p.block.addr);
  PutU32(s, p.block.len);
  PutU32(s, p.entries);
}

// Reads `n` page references (a version 2 group's page table, a version 3
// group's table of tables, or a group page table's) into `out`: keys
// valid and increasing, the first `first_key` when given, else any name
// above `above` (when given); each with an entry count in 1..max_entries
// and a block in bounds. `total` adds up the entry counts.
Status ReadPageRefs(Reader& r, ObjectId group, uint32_t n, std::string_view what, const std::string* first_key,
                    uint64_t max_entries, uint64_t file_end, std::vector<ChildPageRef>* out, uint64_t* total) {
  for (uint32_t i = 0; i < n; ++i) {
    ChildPageRef p;
    std::string_view key;
    if (!r.ShortString(&key) || !r.U64(&p.block.addr) || !r.U32(&p.block.len) || !r.U32(&p.entries))
      return Bad(group, std::string(what) + " is truncated");
    const bool key_ok =
        i == 0 && first_key ? key == *first_key : ValidateName(key).ok() && (out->empty() || out->back().key < key);
    if (!key_ok) return Bad(group, "bad key in " + std::string(what));
    if (p.entries == 0 || p.entries > max_entries) return Bad(group, "bad entry count in " + std::string(what));
    if (p.block.empty()) return Bad(group, std::string(what) + " entry without a block");
    SLABFS_RETURN_IF_ERROR(CheckBlockRef(p.block, file_end, "object " + std::to_string(group) + " page"));
    *total += p.entries;
    if (*total > kLoadMaxChildren) return Bad(group, "bad child count");
    p.key = std::string(key);
    out->push_back(std::move(p));
  }
  return Status::OK();
}

}  // namespace

std::string EncodeGroupPageTable(ObjectId group, const ChildPageRef* pages, size_t n) {
  std::string s;
  PutU64(&s, group);
  PutU32(&s, static_cast<uint32_t>(n));
  for (size_t i = 0; i < n; ++i) PutPageRef(&s, pages[i]);
  return s;
}

Result<std::vector<ChildPageRef>> DecodeGroupPageTable(std::string_view payload, ObjectId group,
                                                       const ChildPageRef& ref, const std::string* next_key,
                                                       uint64_t file_end) {
  Reader r(payload);
  uint64_t id;
  uint32_t n;
  if (!r.U64(&id) || !r.U32(&n)) return Err(Bad(group, "group page table is truncated"));
  if (id != group) return Err(Bad(group, "group page table of object " + std::to_string(id)));
  if (n != ref.entries)
    return Err(Bad(group, "group page table holds " + std::to_string(n) + " pages, its group says " +
                              std::to_string(ref.entries)));
  std::vector<ChildPageRef> out;
  out.reserve(n);
  uint64_t total = 0;
  SLABFS_RETURN_IF_ERROR_R(
      ReadPageRefs(r, group, n, "group page table", &ref.key, kLoadMaxChildren, file_end, &out, &total));
  if (next_key && out.back().key >= *next_key) return Err(Bad(group, "group page table entry outside its table"));
  if (!r.done()) return Err(Bad(group, "trailing bytes in group page table"));
  return out;
}

std::string EncodeGroupPage(ObjectId group, const ChildRecord* children, size_t n) {
  std::string s;
  PutU64(&s, group);
  PutU32(&s, static_cast<uint32_t>(n));
  for (size_t i = 0; i < n; ++i) PutChild(&s, children[i]);
  return s;
}

Result<std::vector<ChildRecord>> DecodeGroupPage(std::string_view payload, ObjectId group, const ChildPageRef& ref,
                                                 const std::string* next_key, uint64_t file_end) {
  Reader r(payload);
  uint64_t id;
  uint32_t n;
  if (!r.U64(&id) || !r.U32(&n)) return Err(Bad(group, "group page is truncated"));
  if (id != group) return Err(Bad(group, "group page of object " + std::to_string(id)));
  if (n != ref.entries)
    return Err(Bad(
        group, "group page holds " + std::to_string(n) + " entries, its table says " + std::to_string(ref.entries)));
  std::vector<ChildRecord> out;
  out.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    ChildRecord c;
    SLABFS_RETURN_IF_ERROR_R(ReadChild(r, group, out.empty() ? nullptr : &out.back(), file_end, &c));
    if (c.name < ref.key || (next_key && c.name >= *next_key))
      return Err(Bad(group, "group page entry outside its page"));
    out.push_back(std::move(c));
  }
  if (!r.done()) return Err(Bad(group, "trailing bytes in group page"));
  return out;
}

std::string EncodeObject(const ObjectRecord& o) {
  std::string s;
  PutU64(&s, o.id);
  PutU32(&s, static_cast<uint32_t>(o.attrs.size()));
  for (const auto& a : o.attrs) {
    PutShortString(&s, a.name);
    PutU8(&s, static_cast<uint8_t>(a.value.kind));
    PutU8(&s, a.value.kind == Attribute::Kind::kNumeric ? static_cast<uint8_t>(a.value.dtype) : 0);
    PutLongString(&s, a.value.data);
  }
  if (o.kind == ObjectKind::kGroup && (!o.child_pages.empty() || !o.child_tables.empty())) {
    const std::vector<ChildPageRef>& refs = o.child_tables.empty() ? o.child_pages : o.child_tables;
    PutU32(&s, static_cast<uint32_t>(refs.size()));
    for (const ChildPageRef& p : refs) PutPageRef(&s, p);
  } else if (o.kind == ObjectKind::kGroup) {
    PutU32(&s, static_cast<uint32_t>(o.children.size()));
    for (const auto& c : o.children) PutChild(&s, c);
  } else {
    const DatasetRecord& d = o.dataset;
    PutU8(&s, static_cast<uint8_t>(d.dtype));
    PutU8(&s, static_cast<uint8_t>(d.shape.size()));
    PutU8(&s, static_cast<uint8_t>(d.index));
    PutU8(&s, d.flags);
    for (uint64_t v : d.shape) PutU64(&s, v);
    for (uint64_t v : d.max_shape) PutU64(&s, v);
    for (uint64_t v : d.chunks) PutU64(&s, v);
    s.append(d.fill);
    if (d.flags & kDatasetFlagFiltered) {
      PutU8(&s, static_cast<uint8_t>(d.filters.filters().size()));
      for (const Filter& f : d.filters.filters()) {
        PutU8(&s, static_cast<uint8_t>(f.id));
        PutU8(&s, f.level);
      }
    }
    if (d.flags & kDatasetFlagSparse) PutU64(&s, d.defined_elements);
    PutU64(&s, d.allocated_chunks);
    PutU64(&s, d.stored_bytes);
    PutLongString(&s, d.index_root);
  }
  return s;
}

Result<ObjectRecord> DecodeObject(std::string_view payload, BlockType type, uint64_t file_end, uint8_t version) {
  ObjectRecord o;
  o.kind = type == BlockType::kGroup ? ObjectKind::kGroup : ObjectKind::kDataset;
  Reader r(payload);
  if (!r.U64(&o.id)) return Err(Status::Corruption("object block is truncated"));
  if (o.id == 0) return Err(Bad(o.id, "object id 0"));
  uint32_t nattr;
  if (!r.U32(&nattr) || nattr > kLoadMaxAttributes) return Err(Bad(o.id, "bad attribute count"));
  for (uint32_t i = 0; i < nattr; ++i) {
    AttributeRecord a;
    std::string_view name, value;
    uint8_t kind, dtype;
    if (!r.ShortString(&name) || !r.U8(&kind) || !r.U8(&dtype) || !r.LongString(&value, kMaxAttributeBytes))
      return Err(Bad(o.id, "attribute is truncated"));
    if (!ValidateName(name).ok()) return Err(Bad(o.id, "bad attribute name"));
    if (!o.attrs.empty() && o.attrs.back().name >= name) return Err(Bad(o.id, "attributes out of order"));
    a.name = std::string(name);
    if (kind == 0) {
      if (dtype != 0) return Err(Bad(o.id, "string attribute with a dtype"));
      a.value = Attribute::String(std::string(value));
    } else if (kind == 1) {
      if (!IsValidDTypeCode(dtype)) return Err(Bad(o.id, "bad attribute dtype"));
      auto t = static_cast<DType>(dtype);
      if (value.empty() || value.size() % ItemSize(t) != 0) return Err(Bad(o.id, "bad attribute length"));
      a.value = Attribute::Numbers(t, std::string(value));
    } else {
      return Err(Bad(o.id, "bad attribute kind"));
    }
    o.attrs.push_back(std::move(a));
  }
  if (o.kind == ObjectKind::kGroup && version >= 2) {
    // Version 2: the page table; version 3: the table of page tables.
    const bool tables = version >= 3;
    const char* what = tables ? "group table of page tables" : "group page table";
    uint32_t n;
    if (!r.U32(&n) || n == 0 || n > kLoadMaxChildren) return Err(Bad(o.id, std::string("bad count in ") + what));
    const std::string first;  // the first key is ""
    uint64_t total = 0;
    SLABFS_RETURN_IF_ERROR_R(ReadPageRefs(r, o.id, n, what, &first, kLoadMaxChildren, file_end,
                                          tables ? &o.child_tables : &o.child_pages, &total));
  } else if (o.kind == ObjectKind::kGroup) {
    uint32_t n;
    if (!r.U32(&n) || n > kLoadMaxChildren) return Err(Bad(o.id, "bad child count"));
    for (uint32_t i = 0; i < n; ++i) {
      ChildRecord c;
      SLABFS_RETURN_IF_ERROR_R(ReadChild(r, o.id, o.children.empty() ? nullptr : &o.children.back(), file_end, &c));
      o.children.push_back(std::move(c));
    }
  } else {
    DatasetRecord& d = o.dataset;
    uint8_t dtype, rank, index;
    if (!r.U8(&dtype) || !r.U8(&rank) || !r.U8(&index) || !r.U8(&d.flags))
      return Err(Bad(o.id, "dataset header is truncated"));
    if (!IsValidDTypeCode(dtype)) return Err(Bad(o.id, "bad dtype"));
    d.dtype = static_cast<DType>(dtype);
    if (rank < 1 || rank > kMaxRank) return Err(Bad(o.id, "bad rank"));
    if (index < 1 || index > 5) return Err(Bad(o.id, "bad index kind"));
    d.index = static_cast<IndexKind>(index);
    if ((d.flags & ~kDatasetKnownFlags) != 0) return Err(Bad(o.id, "unknown dataset flags"));
    if (d.flags & kDatasetFlagTrimmedEdge) {
      // Version 1 blocks predate the flag; trimming is for dense chunks only.
      if (version < 2) return Err(Bad(o.id, "unknown dataset flags"));
      if (d.flags & (kDatasetFlagFiltered | kDatasetFlagSparse))
        return Err(Bad(o.id, "trimmed edge chunks on a filtered or sparse dataset"));
    }
    for (Dims* v : {&d.shape, &d.max_shape, &d.chunks}) {
      v->resize(rank);
      for (auto& x : *v)
        if (!r.U64(&x)) return Err(Bad(o.id, "dataset header is truncated"));
    }
    Status s = ValidateDatasetShape(d.dtype, d.shape, d.max_shape, d.chunks);
    if (!s.ok()) return Err(Bad(o.id, s.message()));
    std::string_view fill, root;
    if (!r.Bytes(ItemSize(d.dtype), &fill)) return Err(Bad(o.id, "dataset header is truncated"));
    if (d.flags & kDatasetFlagFiltered) {
      uint8_t n;
      if (!r.U8(&n)) return Err(Bad(o.id, "dataset header is truncated"));
      if (n == 0 || n > FilterPipeline::kMaxFilters) return Err(Bad(o.id, "bad filter count"));
      std::vector<Filter> filters(n);
      for (Filter& f : filters) {
        uint8_t id;
        if (!r.U8(&id) || !r.U8(&f.level)) return Err(Bad(o.id, "dataset header is truncated"));
        f.id = static_cast<FilterId>(id);
      }
      auto p = FilterPipeline::Make(std::move(filters));
      if (!p) return Err(Bad(o.id, "bad filter pipeline: " + p.error().message()));
      d.filters = std::move(*p);
    }
    if ((d.flags & kDatasetFlagSparse) && !r.U64(&d.defined_elements))
      return Err(Bad(o.id, "dataset header is truncated"));
    if (!r.U64(&d.allocated_chunks) || !r.U64(&d.stored_bytes) || !r.LongString(&root, kMaxIndexRootBytes))
      return Err(Bad(o.id, "dataset header is truncated"));
    d.fill = std::string(fill);
    d.index_root = std::string(root);
  }
  if (!r.done()) return Err(Bad(o.id, "trailing bytes in object block"));
  return o;
}

}  // namespace slabfs::engine
