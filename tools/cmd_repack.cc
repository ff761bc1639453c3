#include "tools/cmd_repack.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

#include <boost/filesystem.hpp>
#include <fmt/format.h>

#include "slabfs/container.h"
#include "tools/byte_stream.h"
#include "tools/session.h"

namespace slabfs::tools {
namespace {

uint64_t CeilDiv(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

// The C-order position of `coords` in a grid of `grid` (whose product fits
// in 64 bits: it is at most the dataset's element count), and back.
uint64_t Linear(const Dims& coords, const Dims& grid) {
  uint64_t v = 0;
  for (size_t d = 0; d < grid.size(); ++d) v = v * grid[d] + coords[d];
  return v;
}

Dims Delinear(uint64_t v, const Dims& grid) {
  Dims coords(grid.size());
  for (size_t d = grid.size(); d-- > 0;) {
    coords[d] = v % grid[d];
    v /= grid[d];
  }
  return coords;
}

// Calls f for every coordinate in the box lo..hi (inclusive), in C order.
template <typename F>
Status ForEachCoord(const Dims& lo, const Dims& hi, F&& f) {
  Dims c = lo;
  for (;;) {
    SLABFS_RETURN_IF_ERROR(f(c));
    size_t d = c.size();
    for (;;) {
      if (d == 0) return Status::OK();
      --d;
      if (c[d] < hi[d]) {
        ++c[d];
        break;
      }
      c[d] = lo[d];
    }
  }
}

std::string ChildPath(std::string_view parent, std::string_view name) {
  return parent == "/" ? fmt::format("/{}", name) : fmt::format("{}/{}", parent, name);
}

// The bytes of chunk data every dataset under group `id` stores.
Result<uint64_t> StoredBytesUnder(const Container& c, ObjectId id, std::string_view path,
                                  std::unordered_set<ObjectId>& seen) {
  if (!seen.insert(id).second) {
    return Err(Status::Corruption(fmt::format("{}: the group tree has a cycle", path)));
  }
  auto children = c.List(id);
  if (!children) return Err(AddContext(children.error(), path));
  uint64_t total = 0;
  for (const Entry& e : *children) {
    std::string child = ChildPath(path, e.name);
    if (e.kind == ObjectKind::kGroup) {
      SLABFS_ASSIGN_OR_RETURN(uint64_t n, StoredBytesUnder(c, e.id, child, seen));
      total += n;
    } else {
      auto ds = c.OpenDataset(e.id);
      if (!ds) return Err(AddContext(ds.error(), child));
      total += ds->info().stored_bytes;
    }
  }
  return total;
}

Result<uint64_t> StoredBytes(const Container& c) {
  std::unordered_set<ObjectId> seen;
  return StoredBytesUnder(c, kRootId, "/", seen);
}

Result<uint64_t> BytesToCopyUnder(const Container& c, ObjectId id, std::string_view path,
                                  std::unordered_set<ObjectId>& seen) {
  if (!seen.insert(id).second) {
    return Err(Status::Corruption(fmt::format("{}: the group tree has a cycle", path)));
  }
  auto children = c.List(id);
  if (!children) return Err(AddContext(children.error(), path));
  uint64_t total = 0;
  for (const Entry& e : *children) {
    std::string child = ChildPath(path, e.name);
    if (e.kind == ObjectKind::kGroup) {
      SLABFS_ASSIGN_OR_RETURN(uint64_t n, BytesToCopyUnder(c, e.id, child, seen));
      total += n;
      continue;
    }
    auto ds = c.OpenDataset(e.id);
    if (!ds) return Err(AddContext(ds.error(), child));
    const DatasetInfo info = ds->info();
    if (info.num_chunks == 0) continue;
    const double share = std::min(1.0, static_cast<double>(info.allocated_chunks) /
                                           static_cast<double>(info.num_chunks));
    total += static_cast<uint64_t>(static_cast<double>(info.size_bytes) * share);
  }
  return total;
}

// Copies a container's tree into an empty one.
class Copier {
 public:
  // `chunks`: --chunks, for datasets of its rank; `filters`: the pipeline
  // every dataset gets, or nullopt to keep each one's.
  Copier(const Container& from, Container& to, const std::optional<Dims>& chunks,
         const std::optional<std::string>& filters, std::ostream& notes, Progress* progress)
      : from_(from), to_(to), chunks_(chunks), filters_(filters), notes_(notes),
        progress_(progress) {}

  // Copies the attributes and children of group `from_id` (at `path`) into
  // group `to_id`, depth first.
  Status CopyGroup(ObjectId from_id, ObjectId to_id, std::string_view path) {
    if (!seen_.insert(from_id).second) {
      return Status::Corruption(fmt::format("{}: the group tree has a cycle", path));
    }
    SLABFS_RETURN_IF_ERROR(CopyAttributes(from_id, to_id, path));
    auto children = from_.List(from_id);
    if (!children) return AddContext(children.error(), path);
    for (const Entry& e : *children) {
      std::string child = ChildPath(path, e.name);
      if (e.kind == ObjectKind::kGroup) {
        auto id = to_.CreateGroup(to_id, e.name);
        if (!id) return AddContext(id.error(), child);
        ++counts_.groups;
        SLABFS_RETURN_IF_ERROR(CopyGroup(e.id, *id, child));
      } else {
        SLABFS_RETURN_IF_ERROR(CopyDataset(e.id, to_id, e.name, child));
      }
    }
    return Status::OK();
  }

  const CopyCounts& counts() const { return counts_; }

 private:
  Status CopyAttributes(ObjectId from_id, ObjectId to_id, std::string_view path) {
    auto names = from_.ListAttributes(from_id);
    if (!names) return AddContext(names.error(), path);
    for (const std::string& name : *names) {
      auto value = from_.GetAttribute(from_id, name);
      if (!value) return AddContext(value.error(), path);
      SLABFS_RETURN_IF_ERROR(AddContext(to_.SetAttribute(to_id, name, *value), path));
      ++counts_.attributes;
    }
    return Status::OK();
  }

  // Creates the copy of one dataset and writes all its elements before the
  // next object, so each chunk of the copy is written once, whole.
  Status CopyDataset(ObjectId from_id, ObjectId to_parent, std::string_view name,
                     std::string_view path) {
    auto from = from_.OpenDataset(from_id);
    if (!from) return AddContext(from.error(), path);
    const DatasetInfo info = from->info();

    DatasetOptions o = OptionsOf(info);
    if (chunks_ && chunks_->size() == info.shape.size()) {
      o.chunks = *chunks_;
    } else if (chunks_) {
      notes_ << fmt::format("{}: rank {} is not the rank of --chunks {}; it keeps its chunks {}\n",
                          path, info.shape.size(), FormatDims(*chunks_), FormatDims(info.chunks));
    }
    // The source's index kind fits its own chunk grid; a new grid may need
    // another kind, which the engine chooses.
    o.index = o.chunks == info.chunks ? info.index : IndexKind::kAuto;
    o.filters = filters_ ? *filters_ : info.filters;
    auto to = to_.CreateDataset(to_parent, name, o);
    if (!to) return AddContext(to.error(), path);
    ++counts_.datasets;
    SLABFS_RETURN_IF_ERROR(CopyAttributes(from_id, to->id(), path));
    return CopyElements(*from, info, *to, o.chunks, path);
  }

  // Copies the elements in blocks of whole destination chunks (see
  // CopyBlockChunks), writing only the destination chunks that overlap a
  // chunk the source stores.
  Status CopyElements(const Dataset& from, const DatasetInfo& info, Dataset& to,
                      const Dims& chunks, std::string_view path) {
    if (info.num_elements == 0) return Status::OK();
    auto stored = from.StoredChunks();
    if (!stored) return AddContext(stored.error(), path);
    const Dims& shape = info.shape;
    const size_t rank = shape.size();
    Dims grid(rank);
    for (size_t d = 0; d < rank; ++d) grid[d] = CeilDiv(shape[d], chunks[d]);

    // The destination chunks to write, by C-order position.
    std::vector<uint64_t> wanted;
    for (const StoredChunk& ch : *stored) {
      if (ch.coords.size() != rank) {
        return Status::Corruption(fmt::format("{}: a stored chunk at ({}) has rank {}, not {}",
                                              path, FormatDims(ch.coords), ch.coords.size(),
                                              rank));
      }
      Dims lo(rank), hi(rank);
      bool inside = true;
      for (size_t d = 0; d < rank && inside; ++d) {
        uint64_t first = 0;
        // A cut chunk may reach past the shape; what lies outside is fill.
        if (__builtin_mul_overflow(ch.coords[d], info.chunks[d], &first) || first >= shape[d]) {
          inside = false;
          break;
        }
        uint64_t last = first + std::min(info.chunks[d] - 1, shape[d] - 1 - first);
        lo[d] = first / chunks[d];
        hi[d] = last / chunks[d];
      }
      if (!inside) continue;
      SLABFS_RETURN_IF_ERROR(ForEachCoord(lo, hi, [&](const Dims& c) {
        wanted.push_back(Linear(c, grid));
        return Status::OK();
      }));
    }
    std::sort(wanted.begin(), wanted.end());
    wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
    if (wanted.empty()) return Status::OK();

    const size_t item = ItemSize(info.dtype);
    const Dims per_block = CopyBlockChunks(shape, chunks, item, kTransferBlockBytes);
    Dims block_grid(rank);
    for (size_t d = 0; d < rank; ++d) block_grid[d] = CeilDiv(grid[d], per_block[d]);
    std::vector<uint64_t> blocks;
    for (uint64_t w : wanted) {
      Dims c = Delinear(w, grid);
      for (size_t d = 0; d < rank; ++d) c[d] /= per_block[d];
      blocks.push_back(Linear(c, block_grid));
    }
    std::sort(blocks.begin(), blocks.end());
    blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());

    // The element box of chunks lo..hi (inclusive), clipped to the shape.
    auto box_of = [&](const Dims& lo, const Dims& hi, Dims* start, Dims* count) {
      for (size_t d = 0; d < rank; ++d) {
        (*start)[d] = lo[d] * chunks[d];
        uint64_t end = hi[d] + 1 == grid[d] ? shape[d] : (hi[d] + 1) * chunks[d];
        (*count)[d] = end - (*start)[d];
      }
    };
    std::vector<char> buf;
    Dims lo(rank), hi(rank), start(rank), count(rank), part_start(rank), part_count(rank);
    // Writes the block in `buf` (chunks lo..hi, elements start/count): for a
    // sparse dataset only its defined elements, else the wanted chunks.
    auto write_block = [&](const Slab& block) -> Status {
      if (info.sparse) {
        // Only the defined elements are written, so they stay the only
        // defined ones.
        auto boxes = from.Defined(block);
        if (!boxes) return AddContext(boxes.error(), path);
        for (const Box& box : *boxes) {
          Dims offset(rank);
          for (size_t d = 0; d < rank; ++d) offset[d] = box.start[d] - start[d];
          MemSpace mem{count, Slab::Box(offset, box.count)};
          SLABFS_RETURN_IF_ERROR(
              AddContext(to.Write(Slab::Box(box.start, box.count), buf.data(), &mem), path));
        }
        return Status::OK();
      }
      std::vector<Dims> parts;
      bool all = true;
      SLABFS_RETURN_IF_ERROR(ForEachCoord(lo, hi, [&](const Dims& c) {
        if (std::binary_search(wanted.begin(), wanted.end(), Linear(c, grid))) {
          parts.push_back(c);
        } else {
          all = false;
        }
        return Status::OK();
      }));
      if (all) return AddContext(to.Write(block, buf.data()), path);
      for (const Dims& c : parts) {
        box_of(c, c, &part_start, &part_count);
        Dims offset(rank);
        for (size_t d = 0; d < rank; ++d) offset[d] = part_start[d] - start[d];
        MemSpace mem{count, Slab::Box(offset, part_count)};
        SLABFS_RETURN_IF_ERROR(
            AddContext(to.Write(Slab::Box(part_start, part_count), buf.data(), &mem), path));
      }
      return Status::OK();
    };
    for (uint64_t b : blocks) {
      Dims bc = Delinear(b, block_grid);
      for (size_t d = 0; d < rank; ++d) {
        lo[d] = bc[d] * per_block[d];
        hi[d] = std::min(lo[d] + per_block[d], grid[d]) - 1;
      }
      box_of(lo, hi, &start, &count);
      uint64_t elements = 1;
      for (uint64_t n : count) elements *= n;
      buf.resize(static_cast<size_t>(elements) * item);
      const Slab block = Slab::Box(start, count);
      SLABFS_RETURN_IF_ERROR(AddContext(from.Read(block, buf.data()), path));
      SLABFS_RETURN_IF_ERROR(write_block(block));
      // Counted once written: the copy's cost is in the destination's
      // write-back, which the small cache of a copy session paces with it.
      if (progress_) {
        uint64_t block_chunks = 1;
        for (size_t d = 0; d < rank; ++d) block_chunks *= hi[d] - lo[d] + 1;
        SLABFS_RETURN_IF_ERROR(progress_->Advance(buf.size(), block_chunks));
      }
    }
    return Status::OK();
  }

  const Container& from_;
  Container& to_;
  const std::optional<Dims>& chunks_;
  const std::optional<std::string>& filters_;
  std::ostream& notes_;
  Progress* progress_;
  std::unordered_set<ObjectId> seen_;
  CopyCounts counts_;
};

}  // namespace

Result<uint64_t> BytesToCopy(const Container& c) {
  std::unordered_set<ObjectId> seen;
  return BytesToCopyUnder(c, kRootId, "/", seen);
}

Result<CopyCounts> CopyContainer(const Container& from, Container& to,
                                 const std::optional<Dims>& chunks,
                                 const std::optional<std::string>& filters, std::ostream& notes,
                                 Progress* progress) {
  Copier copier(from, to, chunks, filters, notes, progress);
  SLABFS_RETURN_IF_ERROR_R(copier.CopyGroup(kRootId, kRootId, "/"));
  return copier.counts();
}

Dims CopyBlockChunks(const Dims& shape, const Dims& chunks, size_t item_size,
                     uint64_t budget_bytes) {
  const size_t rank = shape.size();
  Dims per_block(rank, 1);
  // Bytes of one element times the extent of one chunk in each dimension
  // before d. Every product stays below 2^70: shapes multiply to at most
  // 2^64 elements, and chunk extents are clipped to the shape.
  slabfs_u128 lead = item_size;
  for (size_t d = 0; d < rank; ++d) {
    const uint64_t grid = CeilDiv(shape[d], chunks[d]);
    slabfs_u128 rest = 1;  // elements of the dimensions after d, whole
    for (size_t e = d + 1; e < rank; ++e) rest *= shape[e];
    const uint64_t extent = std::min(chunks[d], shape[d]);
    const slabfs_u128 unit = lead * extent * rest;  // one chunk along d, whole after d
    if (unit <= budget_bytes) {
      per_block[d] = static_cast<uint64_t>(std::min<slabfs_u128>(grid, budget_bytes / unit));
      for (size_t e = d + 1; e < rank; ++e) per_block[e] = CeilDiv(shape[e], chunks[e]);
      return per_block;
    }
    lead *= extent;
  }
  return per_block;
}

Status RunRepack(const RepackOptions& o, std::ostream& out) {
  std::optional<Dims> chunks;
  if (!o.chunks.empty()) {
    SLABFS_ASSIGN_OR_RETURN(chunks, ParseDimsOption("--chunks", o.chunks));
  }
  std::optional<std::string> filters;
  if (o.filters.given()) {
    SLABFS_ASSIGN_OR_RETURN(filters, MakeFilterPipeline(o.filters));
  }
  if (o.output.empty()) return Status::InvalidArgument("the output path is empty");
  if (IsSameFile(o.output, o.file)) {
    return Status::InvalidArgument(
        fmt::format("{}: the output is the input container itself", o.output));
  }
  boost::system::error_code ec;
  if (boost::filesystem::exists(boost::filesystem::symlink_status(o.output, ec))) {
    return Status::AlreadyExists(
        fmt::format("{}: already exists (slab repack never overwrites a file)", o.output));
  }
  boost::filesystem::path dir = boost::filesystem::path(o.output).parent_path();
  if (!dir.empty() && !boost::filesystem::is_directory(dir, ec)) {
    return Status::NotFound(
        fmt::format("{}: the directory {} does not exist", o.output, dir.string()));
  }
  SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Container> from, OpenForReading(o.file));
  const SpaceInfo before = from->space();
  SLABFS_ASSIGN_OR_RETURN(uint64_t stored_before, StoredBytes(*from));

  // Built under a temporary name; it becomes OUT only once committed.
  const std::string temp = TempPathNextTo(o.output);
  CopyCounts counts;
  Progress progress("repacking", o.quiet);
  SLABFS_ASSIGN_OR_RETURN(uint64_t to_copy, BytesToCopy(*from));
  progress.SetTotal(to_copy, 0);
  Status s = [&]() -> Status {
    SLABFS_ASSIGN_OR_RETURN(WriteSession session, WriteSession::Open(temp, "repack", true, /*pack=*/true));
    SLABFS_ASSIGN_OR_RETURN(counts, CopyContainer(*from, session.container(), chunks, filters, out,
                                                  &progress));
    SLABFS_RETURN_IF_ERROR(InterruptGuard::Check());
    // One commit, after every dataset is written in full.
    return session.Finish();
  }();
  if (s.ok()) s = LinkIntoPlace(temp, o.output);
  progress.Done();
  if (!s.ok()) {
    RemoveQuietly(temp);
    return AddContext(std::move(s), o.output);
  }

  SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Container> result, OpenForReading(o.output));
  const SpaceInfo after = result->space();
  SLABFS_ASSIGN_OR_RETURN(uint64_t stored_after, StoredBytes(*result));
  auto count = [](uint64_t n, std::string_view what) {
    return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s");
  };
  out << fmt::format("copied {}, {} and {}\n", count(counts.groups, "group"),
                     count(counts.datasets, "dataset"), count(counts.attributes, "attribute"));
  out << fmt::format("file bytes: {} -> {}\n", before.file_bytes, after.file_bytes);
  out << fmt::format("stored chunk bytes: {} -> {}\n", stored_before, stored_after);
  out << fmt::format("free bytes inside: {} -> {}\n", before.free_bytes, after.free_bytes);
  return Status::OK();
}

void AddRepackCommand(CLI::App& app, CommandTable& table) {
  auto o = std::make_shared<RepackOptions>();
  CLI::App* sub = app.add_subcommand(
      "repack",
      "Write a copy of a container with new chunks or filters and no free space inside it");
  sub->add_option("FILE", o->file, "container file to read")->required();
  sub->add_option("OUT", o->output, "container file to create; an existing file is an error")
      ->required();
  sub->add_option("--chunks", o->chunks,
                  "new chunk shape for every dataset of the same rank, like 64,64 (default: "
                  "each keeps its chunks)");
  AddFilterOptions(sub, &o->filters);
  sub->add_flag("-q,--quiet", o->quiet, "no progress bar");
  sub->footer(
      "Without a filter option each dataset keeps its filters; with any, every dataset gets "
      "exactly that pipeline (--filters none removes them).\n");
  table.Add(sub, [o](std::ostream& out) { return RunRepack(*o, out); });
}

}  // namespace slabfs::tools
