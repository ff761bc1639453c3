// The container as the destination of a store copy (slab import): groups,
// datasets and attributes through the public API; whole chunks written
// without being read, or stored as the source stored them
// (Dataset::WriteEncodedChunk).
#include <fmt/format.h>

#include "tools/convert/scalar.h"
#include "tools/convert/store_copy.h"

namespace slabfs::tools::convert {
namespace {

// Chunks larger than this are not kept: the container chooses its own.
constexpr uint64_t kMaxKeptChunkBytes = uint64_t{1} << 30;

class ContainerWriter final : public DatasetWriter {
 public:
  ContainerWriter(Dataset ds, ChunkGrid grid) : ds_(std::move(ds)), grid_(std::move(grid)) {}
  const ChunkGrid& grid() const override { return grid_; }
  Status Write(const Dims& start, const Dims& count, const char* data) override {
    return ds_.Write(Slab::Box(start, count), data);
  }
  Status WriteEncoded(const Dims& coords, std::string_view bytes, uint32_t filter_mask) override {
    return ds_.WriteEncodedChunk(coords, bytes, filter_mask);
  }

 private:
  Dataset ds_;
  ChunkGrid grid_;
};

class ContainerSinkImpl final : public CopySink {
 public:
  ContainerSinkImpl(Container& dest, std::string path, CopyReport& report)
      : dest_(dest), path_(std::move(path)), report_(report) {}

  Status Begin(CopyPlan& plan) override {
    for (const CopyGroup& g : plan.groups) {
      if (g.create) SLABFS_RETURN_IF_ERROR(CheckFree(g.dest));
    }
    for (const CopyDataset& d : plan.datasets) SLABFS_RETURN_IF_ERROR(CheckFree(d.dest));
    return Status::OK();
  }

  Status MakeGroup(const CopyGroup& g) override {
    auto id = g.create ? dest_.MakeGroups(g.dest, /*parents=*/false) : dest_.Resolve(g.dest);
    if (!id) return AddContext(id.error(), g.dest);
    return SetAttributes(*id, g.dest, g.attrs);
  }

  Result<std::unique_ptr<DatasetWriter>> MakeDataset(const CopyDataset& d) override {
    const DatasetInfo& info = d.info.dataset;
    DatasetOptions o;
    o.dtype = info.dtype;
    o.fill = info.fill;
    o.filters = info.filters;
    if (d.scalar) {
      MakeScalarOptions(&o);
    } else {
      o.shape = info.shape;
      o.max_shape = info.max_shape;
      for (size_t k = 0; k < o.max_shape.size(); ++k) {
        if (o.max_shape[k] == 0) {
          report_.Note(fmt::format("{}: dimension {} has length 0 and cannot grow; in slabfs it can", d.src, k));
          o.max_shape[k] = kUnlimited;
        }
      }
      uint64_t chunk_bytes = ItemSize(info.dtype);
      for (uint64_t c : info.chunks)
        chunk_bytes = c != 0 && chunk_bytes > UINT64_MAX / c ? UINT64_MAX : chunk_bytes * c;
      if (d.info.layout == StoreLayout::kChunked && chunk_bytes <= kMaxKeptChunkBytes) {
        o.chunks = info.chunks;
      } else if (d.info.layout == StoreLayout::kChunked) {
        report_.Note(fmt::format("{}: chunks of more than 1 GiB; slabfs chooses smaller ones", d.src));
      }
    }
    auto made = dest_.CreateDataset(d.dest, o);
    if (!made) return Err(AddContext(made.error(), d.dest));
    Attrs attrs = d.attrs;
    if (d.scalar) attrs.emplace_back(std::string(kScalarAttribute), ScalarMarker());
    SLABFS_RETURN_IF_ERROR_R(SetAttributes(made->id(), d.dest, attrs));
    const DatasetInfo mine = made->info();
    ChunkGrid grid;
    grid.chunks = mine.chunks;
    grid.shape = mine.shape;
    grid.blocks = true;
    grid.encoded = !mine.filters.empty();
    return std::unique_ptr<DatasetWriter>(new ContainerWriter(std::move(*made), std::move(grid)));
  }

  Status Finish() override { return Status::OK(); }

 private:
  Status CheckFree(const std::string& dest) {
    if (dest_.Resolve(dest)) return Status::AlreadyExists(fmt::format("{} already exists in {}", dest, path_));
    return Status::OK();
  }

  Status SetAttributes(ObjectId id, const std::string& path, const Attrs& attrs) {
    for (const auto& [name, value] : attrs) {
      Status s = dest_.SetAttribute(id, name, value);
      if (s.code() == Code::kNoSpace || s.code() == Code::kInvalidArgument) {
        SLABFS_RETURN_IF_ERROR(report_.Skip(fmt::format("{} (attribute '{}'): {}", path, name, s.message())));
        continue;
      }
      SLABFS_RETURN_IF_ERROR(AddContext(s, path));
    }
    return Status::OK();
  }

  Container& dest_;
  std::string path_;
  CopyReport& report_;
};

}  // namespace

std::unique_ptr<CopySink> ContainerSink(Container& dest, const std::string& container_path, CopyReport& report) {
  return std::make_unique<ContainerSinkImpl>(dest, container_path, report);
}

}  // namespace slabfs::tools::convert
