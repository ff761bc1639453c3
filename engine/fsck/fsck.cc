// slab fsck (include/slabfs/fsck.h): walks the last commit from the
// superblock down with the engine's own decoders, which check every byte
// they read, and then accounts for every byte of the data area.
//
// The walk never stops at the first problem: a damaged subtree is reported
// and skipped, and the rest is still checked. Nothing is written.
#include "slabfs/fsck.h"

#include <algorithm>
#include <memory>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "engine/cache/chunk_cache.h"
#include "engine/chunk/chunk_format.h"
#include "engine/chunk/trimmed_edge.h"
#include "engine/format/block.h"
#include "engine/format/free_list.h"
#include "engine/format/layout.h"
#include "engine/format/limits.h"
#include "engine/format/object.h"
#include "engine/format/superblock.h"
#include "engine/fsck/check_file.h"
#include "engine/fsck/extent_map.h"
#include "engine/index/chunk_index.h"
#include "engine/index/dataset_geometry.h"
#include "engine/io/file.h"
#include "engine/io/writer_lock.h"
#include "engine/space/allocator.h"
#include "engine/txn/block_store.h"
#include "engine/txn/free_list_log.h"
#include "engine/txn/group_pages.h"
#include "engine/txn/newest_state.h"
#include "engine/txn/reader_table.h"

namespace slabfs {

bool FsckReport::damaged() const {
  return std::any_of(findings.begin(), findings.end(),
                     [](const FsckFinding& f) { return f.kind == FsckFinding::Kind::kDamage; });
}

bool FsckReport::leaks() const {
  return std::any_of(findings.begin(), findings.end(),
                     [](const FsckFinding& f) { return f.kind == FsckFinding::Kind::kLeak; });
}

std::string_view FindingKindName(FsckFinding::Kind k) {
  switch (k) {
    case FsckFinding::Kind::kDamage: return "damage";
    case FsckFinding::Kind::kLeak: return "leak";
    case FsckFinding::Kind::kWarning: return "warning";
  }
  return "?";
}

namespace engine {
namespace {

// Chunk buffers are reused; one chunk is at most 1 GiB before filters.
constexpr uint64_t kCheckCacheBytes = 8 << 20;
// Findings listed per kind; past it they are only counted.
constexpr uint64_t kMaxListed = 1000;

std::string ChildPath(const std::string& parent, const std::string& name) {
  return parent == "/" ? "/" + name : parent + "/" + name;
}

std::string CoordsText(ChunkCoord c) {
  std::string s = "[";
  for (size_t i = 0; i < c.size(); ++i) s += (i ? "," : "") + std::to_string(c[i]);
  return s + "]";
}

struct DatasetToCheck {
  std::string path;
  ObjectId id = 0;
  DatasetRecord rec;
};

class Checker {
 public:
  Checker(std::unique_ptr<File> file, const FsckOptions& o)
      : file_(std::move(file)), options_(o), store_(file_.get(), &alloc_), cache_(kCheckCacheBytes, kCheckCacheBytes) {}

  FsckReport Run();

 private:
  void Add(FsckFinding::Kind kind, std::string where, std::string what, uint64_t addr = 0, uint64_t bytes = 0) {
    // A badly damaged file could yield millions: list the first ones only.
    if (++listed_[static_cast<int>(kind)] > kMaxListed) return;
    report_.findings.push_back({kind, std::move(where), std::move(what), addr, bytes});
  }
  // Damage to a structure: what it owns is unknown, so unclaimed space is
  // no longer evidence of a leak.
  void Damage(std::string where, std::string what, uint64_t addr = 0, uint64_t bytes = 0) {
    structure_damaged_ = true;
    Add(FsckFinding::Kind::kDamage, std::move(where), std::move(what), addr, bytes);
  }

  bool LoadSuperblock();
  void WalkObject(const BlockRef& ref, ObjectKind kind, ObjectId expect_id, const std::string& path, int depth);
  void CheckDataset(const DatasetToCheck& d);
  void CheckChunk(const DatasetToCheck& d, const ChunkFormat& format, ChunkCoord c, const ChunkRecord& rec,
                  uint64_t* defined);
  void CheckFreeList();
  void CheckSpace();

  std::unique_ptr<File> file_;
  const FsckOptions& options_;
  Allocator alloc_;
  BlockStore store_;
  ChunkCache cache_;
  Superblock sb_;
  ExtentMap extents_;
  std::set<ObjectId> seen_ids_;
  std::vector<DatasetToCheck> datasets_;
  std::vector<char> scratch_;
  uint64_t total_chunk_bytes_ = 0;
  uint64_t done_chunk_bytes_ = 0;
  FsckReport report_;
  uint64_t listed_[3] = {0, 0, 0};
  bool structure_damaged_ = false;

 public:
  bool stopped_ = false;        // the progress callback asked to stop
  bool not_container_ = false;  // no superblock magic in either slot
};

bool Checker::LoadSuperblock() {
  auto size = file_->Size();
  if (!size) {
    Damage("file", size.error().message());
    return false;
  }
  report_.stats.file_bytes = *size;
  auto newest = FindNewestState(file_.get());
  if (!newest) {
    if (newest.error().code() == Code::kNotSupported &&
        newest.error().message().find("is not a slabfs container") != std::string::npos) {
      not_container_ = true;  // nothing to check: an error, not a finding
      return false;
    }
    Damage("superblock", newest.error().message());
    return false;
  }
  std::optional<Superblock> best = newest->sb;
  const auto& errors = newest->slot_errors;
  if (newest->incomplete_generation) {
    Add(FsckFinding::Kind::kWarning, "commit",
        fmt::format("the commit of generation {} did not reach the disk whole (a power failure while it was "
                    "made), which is harmless: generation {}, the commit before it, is intact",
                    *newest->incomplete_generation, newest->sb.generation));
  }
  sb_ = *best;
  report_.stats.generation = sb_.generation;
  report_.stats.file_end = sb_.file_end;
  const int older = static_cast<int>((sb_.generation + 1) % 2);
  if (sb_.generation > 1 && !errors[older].empty() && !newest->incomplete_generation) {
    Add(FsckFinding::Kind::kWarning, fmt::format("superblock slot {}", older),
        fmt::format("the older superblock is not valid ({}); a commit was interrupted, which is "
                    "harmless: generation {} is intact",
                    errors[older], sb_.generation));
  }
  if (*size < sb_.file_end) {
    Damage("file", fmt::format("truncated: {} bytes, the last commit needs {}", *size, sb_.file_end), *size,
           sb_.file_end - *size);
  } else if (*size > sb_.file_end) {
    Add(FsckFinding::Kind::kWarning, "file",
        fmt::format("{} bytes past the file end of the last commit (left by an interrupted "
                    "commit or a full disk; the next commit cuts them off)",
                    *size - sb_.file_end),
        sb_.file_end, *size - sb_.file_end);
  }
  alloc_.Reset(sb_.file_end, {});
  return true;
}

void Checker::WalkObject(const BlockRef& ref, ObjectKind kind, ObjectId expect_id, const std::string& path, int depth) {
  const std::string where = path + (kind == ObjectKind::kGroup ? " (group)" : " (dataset)");
  if (depth > kLoadMaxDepth) {
    Damage(where, fmt::format("groups nested deeper than {}", kLoadMaxDepth));
    return;
  }
  if (depth == kMaxDepth + 1) {
    Add(FsckFinding::Kind::kWarning, where,
        fmt::format("nested deeper than the {} levels writers allow (an older version let it "
                    "happen); it opens, but move it higher with mv or slab mv",
                    kMaxDepth));
  }
  if (Status s = CheckBlockRef(ref, sb_.file_end, "object block"); !s.ok()) {
    Damage(where, s.message(), ref.addr, ref.len);
    return;
  }
  extents_.Claim(ref.addr, ref.len, where + " object block");
  ++report_.stats.object_blocks;
  report_.stats.object_bytes += ref.len;
  uint8_t version = 1;
  auto payload = store_.Read(ref, BlockTypeOf(kind), "object block", &version);
  if (!payload) {
    Damage(where, payload.error().message(), ref.addr, ref.len);
    return;
  }
  auto rec = DecodeObject(*payload, BlockTypeOf(kind), sb_.file_end, version);
  if (!rec) {
    Damage(where, rec.error().message(), ref.addr, ref.len);
    return;
  }
  if (rec->id != expect_id) {
    Damage(where, fmt::format("the block holds object {}, its parent names {}", rec->id, expect_id), ref.addr, ref.len);
    return;
  }
  if (rec->id >= sb_.next_object_id) {
    Damage(where, fmt::format("object id {} is not below the superblock's next id {}", rec->id, sb_.next_object_id));
  }
  if (!seen_ids_.insert(rec->id).second) {
    Damage(where, fmt::format("object {} appears twice in the tree", rec->id), ref.addr, ref.len);
    return;
  }
  report_.stats.attributes += rec->attrs.size();
  if (kind == ObjectKind::kDataset) {
    ++report_.stats.datasets;
    total_chunk_bytes_ += rec->dataset.stored_bytes;
    datasets_.push_back({path, rec->id, std::move(rec->dataset)});
    return;
  }
  ++report_.stats.groups;
  std::vector<BlockRef> pages;
  auto children = ReadGroupChildren(store_, *rec, sb_.file_end, &pages);
  for (const BlockRef& b : pages) {
    extents_.Claim(b.addr, b.len, where + " group page or page table");
    ++report_.stats.object_blocks;
    report_.stats.object_bytes += b.len;
  }
  if (!children) {
    Damage(where, children.error().message(), ref.addr, ref.len);
    return;
  }
  for (const ChildRecord& c : *children) WalkObject(c.block, c.kind, c.id, ChildPath(path, c.name), depth + 1);
}

void Checker::CheckChunk(const DatasetToCheck& d, const ChunkFormat& format, ChunkCoord c, const ChunkRecord& rec,
                         uint64_t* defined) {
  // Records of filtered, sparse and trimmed chunks hold the stored size.
  const bool sized = format.variable_size() || TrimsEdge(d.rec);
  const uint64_t raw_bytes = StoredChunkBytes(d.rec, c);
  const uint64_t file_bytes = sized ? rec.size : raw_bytes;
  const std::string where = d.path + " chunk " + CoordsText(c);
  ++report_.stats.chunks;
  report_.stats.chunk_bytes += file_bytes;
  if (rec.addr < kDataStart || rec.addr > sb_.file_end || sb_.file_end - rec.addr < file_bytes) {
    Damage(where, fmt::format("extent of {} bytes at {} lies outside the container", file_bytes, rec.addr), rec.addr,
           file_bytes);
    return;
  }
  extents_.Claim(rec.addr, file_bytes, d.path + " chunk");
  uint64_t n = raw_bytes / format.item_size();
  if (TrimsEdge(d.rec)) {
    // A trimmed chunk holds its leading elements, a whole number of steps
    // of the first dimension.
    if (Status s = CheckTrimmedChunk(d.rec, c, file_bytes, rec.filter_mask); !s.ok()) {
      Damage(where, s.message(), rec.addr, file_bytes);
      return;
    }
    n = file_bytes / format.item_size();
  }
  ChunkIo io{file_.get(), &cache_};
  if (format.tracks_defined()) {
    auto k = format.StoredDefined(io, rec.addr, file_bytes, n);
    if (!k) {
      Damage(where, k.error().message(), rec.addr, file_bytes);
      return;
    }
    *defined += *k;
  }
  if (options_.verify_data) {
    scratch_.resize(format.MemBytes(n));
    Status s = format.Load(io, rec.addr, file_bytes, rec.filter_mask, scratch_.data(), n);
    if (!s.ok()) {
      Add(FsckFinding::Kind::kDamage, where, s.message(), rec.addr, file_bytes);
    } else {
      ++report_.stats.chunks_verified;
    }
  }
  done_chunk_bytes_ += file_bytes;
  if (options_.progress && !options_.progress(done_chunk_bytes_, total_chunk_bytes_)) stopped_ = true;
}

void Checker::CheckDataset(const DatasetToCheck& d) {
  const std::string where = d.path + " (dataset)";
  const DatasetRecord& rec = d.rec;
  auto index = OpenChunkIndex(rec.index, GeometryOf(rec), rec.index_root, &store_, "dataset " + std::to_string(d.id));
  if (!index) {
    Damage(where, "chunk index: " + index.error().message());
    return;
  }
  std::vector<BlockRef> blocks;
  if (Status s = (*index)->CollectBlocks(&blocks); !s.ok()) {
    Damage(where, "chunk index: " + s.message());
  }
  uint64_t index_bytes = 0;
  for (const BlockRef& b : blocks) {
    extents_.Claim(b.addr, b.len, d.path + " index block");
    index_bytes += b.len;
  }
  report_.stats.index_blocks += blocks.size();
  report_.stats.index_bytes += index_bytes;
  if (index_bytes != (*index)->disk_bytes()) {
    Damage(where, fmt::format("the index root counts {} bytes of index blocks, its blocks hold {}",
                              (*index)->disk_bytes(), index_bytes));
  }

  const bool sparse = (rec.flags & kDatasetFlagSparse) != 0;
  auto format = ChunkFormat::ForDataset(ItemSize(rec.dtype), rec.fill, rec.filters, sparse);
  uint64_t chunks = 0, stored = 0, defined = 0;
  Status s = (*index)->ForEach([&](ChunkCoord c, const ChunkRecord& r) {
    ++chunks;
    stored += format->variable_size() || TrimsEdge(rec) ? r.size : StoredChunkBytes(rec, c);
    CheckChunk(d, *format, c, r, &defined);
    return stopped_ ? Status::IOError("stopped") : Status::OK();
  });
  if (stopped_) return;
  if (!s.ok()) {
    Damage(where, "chunk index: " + s.message());
    return;
  }
  if (chunks != rec.allocated_chunks) {
    Damage(where, fmt::format("the header counts {} stored chunks, the index holds {}", rec.allocated_chunks, chunks));
  }
  if (stored != rec.stored_bytes) {
    Damage(where, fmt::format("the header counts {} stored chunk bytes, the chunks hold {}", rec.stored_bytes, stored));
  }
  if (sparse && defined != rec.defined_elements) {
    Damage(where,
           fmt::format("the header counts {} defined elements, the chunks hold {}", rec.defined_elements, defined));
  }
}

void Checker::CheckFreeList() {
  if (sb_.free_list.empty()) return;
  const BlockRef& ref = sb_.free_list;
  if (Status s = CheckBlockRef(ref, sb_.file_end, "free list"); !s.ok()) {
    Damage("free list", s.message(), ref.addr, ref.len);
    return;
  }
  FreeListChain chain;
  auto free = ReadFreeListChain(store_, sb_, &chain);
  // Every block read belongs to the list, also when a later one is damaged.
  for (const BlockRef& b : chain.blocks)
    extents_.Claim(b.addr, b.len, b == chain.blocks.front() ? "free-list block" : "free-list delta block");
  if (!free) {
    Damage("free list", free.error().message(), ref.addr, ref.len);
    return;
  }
  report_.stats.free_list_blocks = chain.blocks.size();
  // Extents a writer still keeps back for readers of older commits are
  // free space like any other (they are unreferenced by this commit).
  for (const FreedExtent& e : *free) {
    if (e.len == 0) continue;
    extents_.Claim(e.addr, e.len, "free space");
    ++report_.stats.free_extents;
    report_.stats.free_bytes += e.len;
    if (e.generation != 0) report_.stats.held_bytes += e.len;
  }
}

void Checker::CheckSpace() {
  extents_.Settle(
      kDataStart, sb_.file_end,
      [&](const ExtentMap::Owned& a, const ExtentMap::Owned& b) {
        const uint64_t start = std::max(a.addr, b.addr);
        const uint64_t end = std::min(a.addr + a.len, b.addr + b.len);
        Damage("space",
               fmt::format("{} ({} bytes at {}) overlaps {} ({} bytes at {})", a.owner, a.len, a.addr, b.owner, b.len,
                           b.addr),
               start, end - start);
      },
      [&](uint64_t addr, uint64_t len) {
        if (structure_damaged_) {
          Add(FsckFinding::Kind::kWarning, "space",
              fmt::format("{} bytes at {} are unaccounted for; the damaged structures above may "
                          "own them",
                          len, addr),
              addr, len);
          return;
        }
        report_.stats.leaked_bytes += len;
        Add(FsckFinding::Kind::kLeak, "space", fmt::format("{} bytes at {} are neither referenced nor free", len, addr),
            addr, len);
      });
}

FsckReport Checker::Run() {
  // Registered as a reader (engine/txn/reader_table.h), so that a writer
  // at work reuses nothing of the commit this check walks.
  ReaderSlot reader(file_.get());
  CheckedCommit checked;
  auto held = reader.HoldNewest([&]() -> Result<uint64_t> {
    SLABFS_ASSIGN_OR_RETURN(NewestState newest, FindNewestState(file_.get(), &checked));
    return newest.sb.generation;
  });
  if (!LoadSuperblock()) return std::move(report_);
  const bool registered = held && *held == sb_.generation;
  if (!sb_.root.empty())
    WalkObject(sb_.root, ObjectKind::kGroup, kRootId, "/", 0);
  else
    report_.stats.groups = 1;
  for (const DatasetToCheck& d : datasets_) {
    CheckDataset(d);
    if (stopped_) return std::move(report_);
  }
  CheckFreeList();
  if (report_.stats.file_bytes >= sb_.file_end) CheckSpace();
  for (int k = 0; k < 3; ++k) {
    if (listed_[k] <= kMaxListed) continue;
    auto kind = static_cast<FsckFinding::Kind>(k);
    report_.findings.push_back(
        {kind, "report", fmt::format("{} more findings of this kind are not listed", listed_[k] - kMaxListed)});
  }
  auto locked = WriterPresent(file_.get());
  if (locked && *locked) {
    Add(FsckFinding::Kind::kWarning, "lock",
        registered ? fmt::format("a writer holds the container: this check read generation {}, which "
                                 "the writer keeps intact while a reader reads it; commits made since "
                                 "are not checked",
                                 sb_.generation)
                   : std::string("a writer holds the container and this check could not register as a "
                                 "reader: findings may come from racing its next commit; check again "
                                 "when it is closed"));
  }
  return std::move(report_);
}

}  // namespace

Result<FsckReport> CheckFile(std::unique_ptr<File> file, const FsckOptions& options) {
  const std::string name = file->name();
  Checker checker(std::move(file), options);
  FsckReport report = checker.Run();
  if (checker.stopped_) return Err(Status::IOError("stopped"));
  if (checker.not_container_) {
    return Err(Status::InvalidArgument(name + " is not a slabfs container (no superblock in either slot)"));
  }
  return report;
}

}  // namespace engine

Result<FsckReport> CheckContainer(const std::string& path, const FsckOptions& options) {
  SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<engine::File> file, engine::OpenPosixFile(path, engine::OpenFileOptions{}));
  return engine::CheckFile(std::move(file), options);
}

}  // namespace slabfs
