// The one driver of import and export (see store_copy.h).
#include "tools/convert/store_copy.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "tools/block_walk.h"
#include "tools/commands.h"
#include "tools/convert/scalar.h"

namespace slabfs::tools::convert {

Status CopyReport::Skip(std::string_view what) {
  if (strict_) return Status::NotSupported(fmt::format("{} (--strict refuses what slabfs cannot hold)", what));
  out_ << "skipped " << what << "\n";
  return Status::OK();
}

void CopyReport::Note(std::string_view what) { out_ << "note: " << what << "\n"; }

Status DatasetWriter::WriteEncoded(const Dims&, std::string_view, uint32_t) {
  return Status::NotSupported("the destination takes decoded chunks");
}

Dims BoundedChunks(const Dims& shape, DType dtype) {
  Dims chunks = shape;
  uint64_t row = ItemSize(dtype);  // the bytes of one step along dimension k
  for (size_t k = chunks.size(); k-- > 0;) {
    const uint64_t fit = std::max<uint64_t>(1, kTransferBlockBytes / std::max<uint64_t>(1, row));
    if (chunks[k] > fit) {
      chunks[k] = fit;
      for (size_t j = 0; j < k; ++j) chunks[j] = 1;
      break;
    }
    row *= std::max<uint64_t>(1, chunks[k]);
  }
  for (uint64_t& c : chunks) c = std::max<uint64_t>(1, c);
  return chunks;
}

namespace {

// Whether `path` (a store path, or "PATH attribute 'NAME'") lies at or
// under `root`.
bool Under(std::string_view path, std::string_view root) {
  if (root == "/" || root.empty()) return true;
  if (!path.starts_with(root)) return false;
  return path.size() == root.size() || path[root.size()] == '/' || path[root.size()] == ' ';
}

class Planner {
 public:
  Planner(const Store& src, CopyPlan& plan) : src_(src), plan_(plan) {}

  Status Group(ObjectId id, const std::string& src, const std::string& dest, bool create) {
    SLABFS_RETURN_IF_ERROR(InterruptGuard::Check());
    CopyGroup g{src, dest, create, {}};
    SLABFS_ASSIGN_OR_RETURN(g.attrs, AttributesOf(id, src));
    plan_.groups.push_back(std::move(g));
    auto children = src_.List(id);
    if (!children) return AddContext(children.error(), src);
    for (const Entry& e : *children) {
      const std::string child_src = JoinPath(src, e.name), child_dest = JoinPath(dest, e.name);
      SLABFS_RETURN_IF_ERROR(e.kind == ObjectKind::kGroup ? Group(e.id, child_src, child_dest, true)
                                                          : Dataset(e.id, child_src, child_dest, dest));
    }
    return Status::OK();
  }

  Status Dataset(ObjectId id, const std::string& src, const std::string& dest, const std::string& group) {
    auto ds = src_.OpenDataset(id);
    if (!ds) return AddContext(ds.error(), src);
    CopyDataset d{src, dest, group, *ds, (*ds)->info(), false, {}};
    SLABFS_ASSIGN_OR_RETURN(d.attrs, AttributesOf(id, src));
    std::vector<std::string> names;
    for (const auto& [name, value] : d.attrs) names.push_back(name);
    d.scalar = d.info.scalar || IsExportedScalar(d.info.dataset, names);
    if (d.scalar) std::erase_if(d.attrs, [](const auto& a) { return a.first == kScalarAttribute; });
    plan_.datasets.push_back(std::move(d));
    return Status::OK();
  }

 private:
  Result<Attrs> AttributesOf(ObjectId id, std::string_view src) {
    Attrs attrs;
    auto names = src_.ListAttributes(id);
    if (!names) return Err(AddContext(names.error(), src));
    for (const std::string& name : *names) {
      auto value = src_.GetAttribute(id, name);
      if (!value) return Err(AddContext(value.error(), src));
      attrs.emplace_back(name, std::move(*value));
    }
    return attrs;
  }

  const Store& src_;
  CopyPlan& plan_;
};

// The chunk by chunk copy of one dataset.
class DataCopy {
 public:
  DataCopy(const CopyDataset& d, DatasetWriter& w, bool recompress, Progress& progress)
      : d_(d),
        info_(d.info.dataset),
        grid_(w.grid()),
        w_(w),
        progress_(progress),
        item_(ItemSize(info_.dtype)),
        encoded_(grid_.encoded && !recompress && !d.scalar && grid_.chunks == info_.chunks) {}

  Status Run() {
    if (d_.scalar) {
      if (!grid_.every_chunk && d_.info.dataset.allocated_chunks == 0) return Status::OK();
      std::string value(item_, '\0');
      SLABFS_RETURN_IF_ERROR(AddContext(d_.ds->Read(Slab::Box({0}, {1}), value.data()), d_.src));
      SLABFS_RETURN_IF_ERROR(AddContext(w_.Write({0}, {1}, value.data()), d_.dest));
      return progress_.Advance(item_, 1);
    }
    for (uint64_t n : grid_.shape) {
      if (n == 0) return Status::OK();
    }
    const size_t rank = grid_.shape.size();
    if (rank != info_.shape.size() || grid_.chunks.size() != rank) {
      return Status::InvalidArgument(fmt::format("{}: the destination's rank is not the source's", d_.dest));
    }
    // Blocks of one chunk unless the sink takes more and no chunk goes as
    // stored.
    const bool blocks = grid_.blocks && !grid_.padded && !encoded_;
    BlockWalk walk(grid_.shape, grid_.chunks, item_, blocks ? kTransferBlockBytes : 1);
    std::vector<uint64_t> wanted;  // chunk indexes of the grid, sorted; all when every_chunk
    if (!grid_.every_chunk) {
      SLABFS_ASSIGN_OR_RETURN(wanted, WantedChunks(walk));
    }
    const uint64_t num_blocks = grid_.every_chunk ? walk.num_blocks() : 0;
    std::vector<uint64_t> block_list;
    if (!grid_.every_chunk) {
      for (uint64_t c : wanted) block_list.push_back(walk.BlockOfChunk(c));
      block_list.erase(std::unique(block_list.begin(), block_list.end()), block_list.end());
    }
    const uint64_t n_blocks = grid_.every_chunk ? num_blocks : block_list.size();
    std::vector<Dims> parts;
    for (uint64_t i = 0; i < n_blocks; ++i) {
      SLABFS_RETURN_IF_ERROR(InterruptGuard::Check());
      const BlockWalk::Block b = walk.BlockAt(grid_.every_chunk ? i : block_list[i]);
      parts.clear();
      SLABFS_RETURN_IF_ERROR(walk.ForEachChunk(b, [&](const Dims& c) {
        if (grid_.every_chunk || std::binary_search(wanted.begin(), wanted.end(), walk.ChunkIndex(c))) {
          parts.push_back(c);
        }
        return Status::OK();
      }));
      if (parts.size() == b.chunks && !grid_.padded && b.chunks > 1) {
        SLABFS_RETURN_IF_ERROR(CopyBox(b.start, b.count, b.chunks));
        continue;
      }
      for (const Dims& c : parts) SLABFS_RETURN_IF_ERROR(CopyChunk(walk, c));
    }
    return Status::OK();
  }

 private:
  // The chunks of the grid that hold something the source stored.
  Result<std::vector<uint64_t>> WantedChunks(const BlockWalk& walk) {
    auto stored = d_.ds->StoredChunks();
    if (!stored) return Err(AddContext(stored.error(), d_.src));
    const size_t rank = info_.shape.size();
    std::vector<uint64_t> wanted;
    Dims lo(rank), hi(rank), start(rank), count(rank);
    for (const StoredChunk& s : *stored) {
      if (s.coords.size() != rank) {
        return Err(
            Status::Corruption(fmt::format("{}: a stored chunk has rank {}, not {}", d_.src, s.coords.size(), rank)));
      }
      // The source chunk's elements, as chunks of the grid.
      bool inside = true;
      for (size_t k = 0; k < rank && inside; ++k) {
        const uint64_t first = s.coords[k] * info_.chunks[k];
        if (first >= info_.shape[k]) inside = false;
        const uint64_t last = std::min(first + info_.chunks[k], info_.shape[k]) - 1;
        lo[k] = first / grid_.chunks[k];
        hi[k] = std::min(last / grid_.chunks[k], walk.grid()[k] - 1);
      }
      if (!inside) continue;  // a chunk cut off by a shrink may still be stored
      Dims c = lo;
      for (bool more = true; more;) {
        if (!grid_.skip_undefined || !info_.sparse || HasDefined(walk, c)) wanted.push_back(walk.ChunkIndex(c));
        more = false;
        for (size_t k = rank; k-- > 0;) {
          if (++c[k] <= hi[k]) {
            more = true;
            break;
          }
          c[k] = lo[k];
        }
      }
    }
    std::sort(wanted.begin(), wanted.end());
    wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
    return wanted;
  }

  bool HasDefined(const BlockWalk& walk, const Dims& c) {
    Dims start, count;
    walk.ChunkBox(c, &start, &count);
    if (!Clip(start, &count)) return false;
    auto defined = d_.ds->Defined(Slab::Box(start, count));
    return !defined || !defined->empty();  // an error shows when the chunk is read
  }

  // Clips a box of the grid to the source's shape; false when nothing is left.
  bool Clip(const Dims& start, Dims* count) const {
    bool any = true;
    for (size_t k = 0; k < start.size(); ++k) {
      (*count)[k] = start[k] >= info_.shape[k] ? 0 : std::min((*count)[k], info_.shape[k] - start[k]);
      any &= (*count)[k] > 0;
    }
    return any;
  }

  Status CopyBox(const Dims& start, Dims count, uint64_t chunks) {
    if (!Clip(start, &count)) return Status::OK();
    uint64_t n = 1;
    for (uint64_t c : count) n *= c;
    buf_.resize(static_cast<size_t>(n) * item_);
    SLABFS_RETURN_IF_ERROR(AddContext(d_.ds->Read(Slab::Box(start, count), buf_.data()), d_.src));
    SLABFS_RETURN_IF_ERROR(AddContext(w_.Write(start, count, buf_.data()), d_.dest));
    return progress_.Advance(buf_.size(), chunks);
  }

  Status CopyChunk(const BlockWalk& walk, const Dims& c) {
    Dims start, count;
    walk.ChunkBox(c, &start, &count);
    if (encoded_) {
      bool whole = true;
      for (size_t k = 0; k < c.size(); ++k) whole &= (c[k] + 1) * grid_.chunks[k] <= info_.shape[k];
      if (whole) {
        SLABFS_ASSIGN_OR_RETURN(bool done, CopyEncoded(c));
        if (done) return Status::OK();
      }
    }
    if (!grid_.padded) return CopyBox(start, count, 1);
    // A whole chunk, the fill value (or the pad value) past the source's
    // shape.
    uint64_t n = 1;
    for (uint64_t k : grid_.chunks) n *= k;
    buf_.resize(static_cast<size_t>(n) * item_);
    const std::string& pad = grid_.pad_value.size() == item_ ? grid_.pad_value : info_.fill;
    for (size_t i = 0; i < buf_.size(); i += item_) std::memcpy(buf_.data() + i, pad.data(), item_);
    Dims part = count;
    if (Clip(start, &part)) {
      MemSpace mem{grid_.chunks, Slab::Box(Dims(c.size(), 0), part)};
      SLABFS_RETURN_IF_ERROR(AddContext(d_.ds->Read(Slab::Box(start, part), buf_.data(), &mem), d_.src));
    }
    SLABFS_RETURN_IF_ERROR(AddContext(w_.Write(start, grid_.chunks, buf_.data()), d_.dest));
    return progress_.Advance(buf_.size(), 1);
  }

  // The chunk as the source stores it, when the sink takes it so: whether
  // it was copied.
  Result<bool> CopyEncoded(const Dims& c) {
    uint32_t mask = 0;
    auto bytes = d_.ds->ReadEncodedChunk(c, &mask);
    if (!bytes) {
      if (bytes.error().code() == Code::kNotSupported) {
        encoded_ = false;  // nor will the next chunk
        return false;
      }
      if (bytes.error().code() == Code::kNotFound) return false;
      return Err(AddContext(bytes.error(), d_.src));
    }
    Status s = w_.WriteEncoded(c, *bytes, mask);
    if (s.ok()) {
      uint64_t n = item_;
      for (uint64_t k : grid_.chunks) n *= k;
      SLABFS_RETURN_IF_ERROR_R(progress_.Advance(n, 1));
      return true;
    }
    if (s.code() == Code::kCorruption) return Err(Status::Corruption(fmt::format("{}: {}", d_.src, s.message())));
    if (s.code() != Code::kInvalidArgument && s.code() != Code::kNotSupported) return Err(AddContext(s, d_.dest));
    return false;
  }

  const CopyDataset& d_;
  const DatasetInfo& info_;
  const ChunkGrid& grid_;
  DatasetWriter& w_;
  Progress& progress_;
  const size_t item_;
  bool encoded_;
  std::vector<char> buf_;
};

// The bytes a copy of `d` moves, for the progress bar: its size times the
// share of its chunks the source stored.
uint64_t ExpectedBytes(const CopyDataset& d) {
  const DatasetInfo& info = d.info.dataset;
  if (info.num_chunks == 0) return 0;
  return static_cast<uint64_t>(
      static_cast<double>(info.size_bytes) *
      std::min(1.0, static_cast<double>(info.allocated_chunks) / static_cast<double>(info.num_chunks)));
}

}  // namespace

Status CopyStore(const Store& src, const CopyOptions& o, CopySink& sink, Progress& progress, CopyReport& report) {
  // What the source leaves out: damaged metadata ends the copy; the rest is
  // a line each, or --strict's refusal, before anything is written.
  const std::vector<SkippedObject> skipped = src.Skipped();
  for (const SkippedObject& s : skipped) {
    if (!Under(s.path, o.from)) continue;
    if (s.damaged) return Status::Corruption(fmt::format("{}: {}", s.path, s.reason));
  }
  auto id = src.Resolve(o.from);
  if (!id) {
    for (const SkippedObject& s : skipped) {
      if (s.path == o.from)
        return Status::NotSupported(fmt::format("{}: {}, which slabfs cannot hold", s.path, s.reason));
    }
    return Status::NotFound(fmt::format("--path {}: no such group or dataset in the source", o.from));
  }
  for (const SkippedObject& s : skipped) {
    if (Under(s.path, o.from)) SLABFS_RETURN_IF_ERROR(report.Skip(fmt::format("{}: {}", s.path, s.reason)));
  }
  SLABFS_ASSIGN_OR_RETURN(ObjectInfo info, src.Stat(*id));
  CopyPlan plan;
  Planner planner(src, plan);
  if (info.kind == ObjectKind::kGroup) {
    const bool whole = o.group_is_root || IsRootPath(o.from);
    SLABFS_RETURN_IF_ERROR(
        planner.Group(*id, o.from, whole ? o.into : JoinPath(o.into, BaseName(o.from)), /*create=*/!whole));
  } else {
    SLABFS_RETURN_IF_ERROR(planner.Dataset(*id, o.from, JoinPath(o.into, BaseName(o.from)), o.into));
  }
  if (plan.datasets.empty() && plan.groups.size() <= 1 && (plan.groups.empty() || plan.groups[0].attrs.empty())) {
    // Nothing would be copied but what the source left out (a Zarr store
    // whose root array slabfs cannot hold): that is the answer.
    for (const SkippedObject& s : skipped) {
      if (Under(s.path, o.from) && s.path.find(' ') == std::string::npos) {
        return Status::NotSupported(
            fmt::format("{} holds {}, which slabfs cannot store; nothing to copy", s.path, s.reason));
      }
    }
  }
  SLABFS_RETURN_IF_ERROR(sink.Begin(plan));
  uint64_t total = 0;
  for (const CopyDataset& d : plan.datasets) total += ExpectedBytes(d);
  progress.SetTotal(total, 0);
  for (const CopyGroup& g : plan.groups) {
    SLABFS_RETURN_IF_ERROR(InterruptGuard::Check());
    SLABFS_RETURN_IF_ERROR(sink.MakeGroup(g));
  }
  for (const CopyDataset& d : plan.datasets) {
    SLABFS_RETURN_IF_ERROR(InterruptGuard::Check());
    SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<DatasetWriter> w, sink.MakeDataset(d));
    DataCopy copy(d, *w, o.recompress, progress);
    SLABFS_RETURN_IF_ERROR(copy.Run());
    SLABFS_RETURN_IF_ERROR(w->Close());
  }
  return sink.Finish();
}

}  // namespace slabfs::tools::convert
