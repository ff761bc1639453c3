#include "tools/cmd_repack.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <boost/filesystem.hpp>

#include "slabfs/container.h"
#include "tools/block_walk.h"
#include "tools/byte_stream.h"
#include "tools/commands.h"
#include "tools/session.h"

namespace slabfs::tools {
namespace {

std::string ChildPath(std::string_view parent, std::string_view name) {
  return parent == "/" ? fmt::format("/{}", name) : fmt::format("{}/{}", parent, name);
}

// The sum of `f` over every dataset under group `id`.
Result<uint64_t> SumOverDatasetsUnder(const Container& c, ObjectId id, std::string_view path,
                                      const std::function<uint64_t(const DatasetInfo&)>& f,
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
      SLABFS_ASSIGN_OR_RETURN(uint64_t n, SumOverDatasetsUnder(c, e.id, child, f, seen));
      total += n;
    } else {
      auto ds = c.OpenDataset(e.id);
      if (!ds) return Err(AddContext(ds.error(), child));
      total += f(ds->info());
    }
  }
  return total;
}

Result<uint64_t> SumOverDatasets(const Container& c, const std::function<uint64_t(const DatasetInfo&)>& f) {
  std::unordered_set<ObjectId> seen;
  return SumOverDatasetsUnder(c, kRootId, "/", f, seen);
}

// The bytes of chunk data every dataset stores.
Result<uint64_t> StoredBytes(const Container& c) {
  return SumOverDatasets(c, [](const DatasetInfo& info) { return info.stored_bytes; });
}

// Copies a container's tree into an empty one.
class Copier {
 public:
  // `chunks`: --chunks, for datasets of its rank; `filters`: the pipeline
  // every dataset gets, or nullopt to keep each one's.
  Copier(const Container& from, Container& to, const std::optional<Dims>& chunks,
         const std::optional<std::string>& filters, std::ostream& notes, Progress* progress)
      : from_(from), to_(to), chunks_(chunks), filters_(filters), notes_(notes), progress_(progress) {}

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

  // One note for all the datasets --chunks did not apply to (a tree may hold
  // thousands), naming the first few.
  void NoteOtherRanks() const {
    if (other_rank_.empty()) return;
    constexpr size_t kNamed = 3;
    std::string names;
    for (size_t i = 0; i < std::min(kNamed, other_rank_.size()); ++i) {
      names += fmt::format("{}{}", i == 0 ? "" : ", ", other_rank_[i]);
    }
    if (other_rank_.size() > kNamed) names += fmt::format(" and {} more", other_rank_.size() - kNamed);
    notes_ << fmt::format("--chunks {} is for datasets of rank {}: {} of another rank kept {} ({})\n",
                          FormatDims(*chunks_), chunks_->size(), Counted(other_rank_.size(), "dataset"),
                          other_rank_.size() == 1 ? "its chunks" : "their chunks", names);
  }

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
  Status CopyDataset(ObjectId from_id, ObjectId to_parent, std::string_view name, std::string_view path) {
    auto from = from_.OpenDataset(from_id);
    if (!from) return AddContext(from.error(), path);
    const DatasetInfo info = from->info();

    DatasetOptions o = OptionsOf(info);
    if (chunks_ && chunks_->size() == info.shape.size()) {
      o.chunks = *chunks_;
    } else if (chunks_) {
      other_rank_.emplace_back(path);
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
  Status CopyElements(const Dataset& from, const DatasetInfo& info, Dataset& to, const Dims& chunks,
                      std::string_view path) {
    if (info.num_elements == 0) return Status::OK();
    auto stored = from.StoredChunks();
    if (!stored) return AddContext(stored.error(), path);
    const Dims& shape = info.shape;
    const size_t rank = shape.size();
    const BlockWalk walk(shape, chunks, ItemSize(info.dtype), kTransferBlockBytes);

    // The destination chunks to write, by C-order position.
    std::vector<uint64_t> wanted;
    for (const StoredChunk& ch : *stored) {
      if (ch.coords.size() != rank) {
        return Status::Corruption(fmt::format("{}: a stored chunk at ({}) has rank {}, not {}", path,
                                              FormatDims(ch.coords), ch.coords.size(), rank));
      }
      BlockWalk::Block overlap;  // the destination chunks the stored one overlaps
      overlap.lo.resize(rank);
      overlap.hi.resize(rank);
      bool inside = true;
      for (size_t d = 0; d < rank && inside; ++d) {
        uint64_t first = 0;
        // A cut chunk may reach past the shape; what lies outside is fill.
        if (__builtin_mul_overflow(ch.coords[d], info.chunks[d], &first) || first >= shape[d]) {
          inside = false;
          break;
        }
        uint64_t last = first + std::min(info.chunks[d] - 1, shape[d] - 1 - first);
        overlap.lo[d] = first / chunks[d];
        overlap.hi[d] = last / chunks[d];
      }
      if (!inside) continue;
      SLABFS_RETURN_IF_ERROR(walk.ForEachChunk(overlap, [&](const Dims& c) {
        wanted.push_back(walk.ChunkIndex(c));
        return Status::OK();
      }));
    }
    std::sort(wanted.begin(), wanted.end());
    wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
    std::vector<uint64_t> blocks;
    for (uint64_t w : wanted) blocks.push_back(walk.BlockOfChunk(w));
    blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());  // sorted already

    std::vector<char> buf;
    // Writes block `b`, read into `buf`: for a sparse dataset only its
    // defined elements, else the wanted chunks.
    auto write_block = [&](const BlockWalk::Block& b, const Slab& block) -> Status {
      auto write_part = [&](const Dims& start, const Dims& count) {
        Dims offset(rank);
        for (size_t d = 0; d < rank; ++d) offset[d] = start[d] - b.start[d];
        MemSpace mem{b.count, Slab::Box(offset, count)};
        return AddContext(to.Write(Slab::Box(start, count), buf.data(), &mem), path);
      };
      if (info.sparse) {
        // Only the defined elements are written, so they stay the only
        // defined ones.
        auto boxes = from.Defined(block);
        if (!boxes) return AddContext(boxes.error(), path);
        for (const Box& box : *boxes) SLABFS_RETURN_IF_ERROR(write_part(box.start, box.count));
        return Status::OK();
      }
      std::vector<Dims> parts;
      SLABFS_RETURN_IF_ERROR(walk.ForEachChunk(b, [&](const Dims& c) {
        if (std::binary_search(wanted.begin(), wanted.end(), walk.ChunkIndex(c))) parts.push_back(c);
        return Status::OK();
      }));
      if (parts.size() == b.chunks) return AddContext(to.Write(block, buf.data()), path);
      Dims start, count;
      for (const Dims& c : parts) {
        walk.ChunkBox(c, &start, &count);
        SLABFS_RETURN_IF_ERROR(write_part(start, count));
      }
      return Status::OK();
    };
    for (uint64_t index : blocks) {
      const BlockWalk::Block b = walk.BlockAt(index);
      buf.resize(static_cast<size_t>(b.elements) * ItemSize(info.dtype));
      const Slab block = Slab::Box(b.start, b.count);
      SLABFS_RETURN_IF_ERROR(AddContext(from.Read(block, buf.data()), path));
      SLABFS_RETURN_IF_ERROR(write_block(b, block));
      // Counted once written: the copy's cost is in the destination's
      // write-back, which the small cache of a copy session paces with it.
      if (progress_) SLABFS_RETURN_IF_ERROR(progress_->Advance(buf.size(), b.chunks));
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
  std::vector<std::string> other_rank_;  // paths of datasets --chunks did not fit
};

}  // namespace

Result<uint64_t> BytesToCopy(const Container& c) {
  return SumOverDatasets(c, [](const DatasetInfo& info) -> uint64_t {
    if (info.num_chunks == 0) return 0;
    const double share =
        std::min(1.0, static_cast<double>(info.allocated_chunks) / static_cast<double>(info.num_chunks));
    return static_cast<uint64_t>(static_cast<double>(info.size_bytes) * share);
  });
}

Result<CopyCounts> CopyContainer(const Container& from, Container& to, const std::optional<Dims>& chunks,
                                 const std::optional<std::string>& filters, std::ostream& notes, Progress* progress) {
  Copier copier(from, to, chunks, filters, notes, progress);
  SLABFS_RETURN_IF_ERROR_R(copier.CopyGroup(kRootId, kRootId, "/"));
  copier.NoteOtherRanks();
  return copier.counts();
}

Status RunRepack(const RepackOptions& o, std::ostream& out) {
  // Repacking makes a container of a container; `slab import` makes one of an HDF5 file.
  SLABFS_RETURN_IF_ERROR(ForeignFileStatus(o.file, /*changes=*/true));
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
    return Status::InvalidArgument(fmt::format("{}: the output is the input container itself", o.output));
  }
  boost::system::error_code ec;
  if (boost::filesystem::exists(boost::filesystem::symlink_status(o.output, ec))) {
    return Status::AlreadyExists(fmt::format("{}: already exists (slab repack never overwrites a file)", o.output));
  }
  boost::filesystem::path dir = boost::filesystem::path(o.output).parent_path();
  if (!dir.empty() && !boost::filesystem::is_directory(dir, ec)) {
    return Status::NotFound(fmt::format("{}: the directory {} does not exist", o.output, dir.string()));
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
    SLABFS_ASSIGN_OR_RETURN(counts, CopyContainer(*from, session.container(), chunks, filters, out, &progress));
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
  out << fmt::format("copied {}, {} and {}\n", Counted(counts.groups, "group"), Counted(counts.datasets, "dataset"),
                     Counted(counts.attributes, "attribute"));
  out << fmt::format("file bytes: {} -> {}\n", before.file_bytes, after.file_bytes);
  out << fmt::format("stored chunk bytes: {} -> {}\n", stored_before, stored_after);
  out << fmt::format("free bytes inside: {} -> {}\n", before.free_bytes, after.free_bytes);
  return Status::OK();
}

void AddRepackCommand(CLI::App& app, CommandTable& table) {
  auto o = std::make_shared<RepackOptions>();
  CLI::App* sub = app.add_subcommand(
      "repack", "Write a copy of a container with new chunks or filters and no free space inside it");
  sub->add_option("FILE", o->file, "container file to read")->required();
  sub->add_option("OUT", o->output, "container file to create; an existing file is an error")->required();
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
