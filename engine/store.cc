// The parts of the store interface (include/slabfs/store.h) that every
// store shares, and the slab container as a store.
#include "slabfs/store.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "engine/selection/boxes.h"
#include "engine/selection/hyperslab.h"

namespace slabfs {

std::string_view StoreLayoutName(StoreLayout layout) {
  switch (layout) {
    case StoreLayout::kChunked: return "chunked";
    case StoreLayout::kContiguous: return "contiguous";
  }
  return "unknown";
}

Result<std::string> StoreDataset::ReadEncodedChunk(const Dims&, uint32_t*) const {
  return Err(Status::NotSupported(path() + ": chunks are not kept as a container keeps them"));
}

Status StoreDataset::ReadElements(uint64_t first, uint64_t count, void* buf) const {
  const StoreDatasetInfo si = info();
  const DatasetInfo& d = si.dataset;
  if (first > d.num_elements || count > d.num_elements - first) {
    return Status::InvalidArgument(path() + ": elements " + std::to_string(first) + "+" + std::to_string(count) +
                                   " outside " + std::to_string(d.num_elements));
  }
  const size_t item = ItemSize(d.dtype);
  char* out = static_cast<char*>(buf);
  // Each box's elements are dense and in C order within the range.
  for (const engine::LinearBox& b : engine::DecomposeLinear(d.shape, first, count)) {
    SLABFS_RETURN_IF_ERROR(Read(b.box, out + b.offset * item));
  }
  return Status::OK();
}

Result<size_t> StoreDataset::ReadBytes(uint64_t offset, size_t length, void* buf) const {
  const StoreDatasetInfo si = info();
  const DatasetInfo& d = si.dataset;
  const uint64_t item = ItemSize(d.dtype);
  const uint64_t size = d.num_elements * item;
  if (offset >= size || length == 0) return size_t{0};
  const uint64_t end = std::min<uint64_t>(size, offset + std::min<uint64_t>(length, size - offset));
  const uint64_t first = offset / item, last = (end + item - 1) / item;  // whole elements [first, last)
  char* out = static_cast<char*>(buf);
  const uint64_t head = offset - first * item, tail = last * item - end;
  if (head == 0 && tail == 0) {
    SLABFS_RETURN_IF_ERROR_R(ReadElements(first, last - first, out));
    return static_cast<size_t>(end - offset);
  }
  // Partial elements at either end: the whole elements through a buffer of
  // their own for the ends, straight into buf for the middle.
  std::vector<char> edge(item);
  uint64_t at = first;
  size_t done = 0;
  if (head != 0) {
    SLABFS_RETURN_IF_ERROR_R(ReadElements(at, 1, edge.data()));
    const uint64_t n = std::min<uint64_t>(item - head, end - offset);
    std::memcpy(out, edge.data() + head, n);
    done += n;
    ++at;
  }
  const uint64_t middle_end = tail != 0 ? last - 1 : last;
  if (middle_end > at) {
    SLABFS_RETURN_IF_ERROR_R(ReadElements(at, middle_end - at, out + done));
    done += (middle_end - at) * item;
    at = middle_end;
  }
  if (at < last) {
    SLABFS_RETURN_IF_ERROR_R(ReadElements(at, 1, edge.data()));
    std::memcpy(out + done, edge.data(), end - offset - done);
  }
  return static_cast<size_t>(end - offset);
}

namespace {

// The runs of the elements of box b (inside a dataset of `shape`), one per
// row of its last dimension, appended in C order.
void AppendRunsOf(const Dims& shape, const Box& b, std::vector<ElementRun>* runs) {
  const size_t rank = shape.size();
  if (rank == 0) return;
  for (uint64_t c : b.count)
    if (c == 0) return;
  std::vector<uint64_t> stride(rank, 1);
  for (size_t d = rank - 1; d-- > 0;) stride[d] = stride[d + 1] * shape[d + 1];
  const size_t last = rank - 1;
  Dims idx(rank, 0);
  for (;;) {
    uint64_t first = 0;
    for (size_t d = 0; d < rank; ++d) first += (b.start[d] + idx[d]) * stride[d];
    runs->push_back(ElementRun{first, b.count[last]});
    size_t d = last;
    while (d-- > 0) {
      if (++idx[d] < b.count[d]) break;
      idx[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) break;
  }
}

}  // namespace

Result<std::vector<ElementRun>> StoreDataset::DefinedRuns(uint64_t first, uint64_t count) const {
  const StoreDatasetInfo si = info();
  const DatasetInfo& d = si.dataset;
  if (first > d.num_elements || count > d.num_elements - first) {
    return Err(Status::InvalidArgument(path() + ": elements " + std::to_string(first) + "+" + std::to_string(count) +
                                       " outside " + std::to_string(d.num_elements)));
  }
  std::vector<ElementRun> runs;
  for (const engine::LinearBox& lb : engine::DecomposeLinear(d.shape, first, count)) {
    SLABFS_ASSIGN_OR_RETURN(std::vector<Box> boxes, Defined(lb.box));
    for (const Box& b : boxes) AppendRunsOf(d.shape, b, &runs);
  }
  // Boxes side by side (two chunks of one row of chunks) interleave their
  // rows: sort, then merge what touches.
  std::sort(runs.begin(), runs.end(), [](const ElementRun& a, const ElementRun& b) { return a.first < b.first; });
  std::vector<ElementRun> merged;
  for (const ElementRun& r : runs) {
    if (!merged.empty() && merged.back().first + merged.back().count >= r.first) {
      merged.back().count =
          std::max(merged.back().first + merged.back().count, r.first + r.count) - merged.back().first;
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

namespace {

// The most elements one step of ForEachDefinedRun asks Defined about.
constexpr uint64_t kDefinedWalkWindow = uint64_t{1} << 22;

}  // namespace

Result<StoreDataset::NextStoredElement> StoreDataset::StoredElementFinder() const {
  const DatasetInfo d = info().dataset;
  const size_t rank = d.shape.size();
  if (rank == 0) {
    return NextStoredElement([n = d.num_elements](uint64_t at) -> Result<std::optional<uint64_t>> {
      return at < n ? std::optional<uint64_t>(at) : std::nullopt;
    });
  }
  // The stored chunks' boxes, with their first and last elements, sorted
  // by the first: a box can hold an element at or after `at` only if its
  // last is, and the ones that start no earlier than `at - span` (span:
  // the most any box's last lies past its first) are the only ones whose
  // last can; a box that starts after the best found so far cannot beat it.
  struct Span {
    uint64_t first, last;
    Box box;
  };
  auto spans = std::make_shared<std::vector<Span>>();
  SLABFS_ASSIGN_OR_RETURN(std::vector<StoredChunk> chunks, StoredChunks());
  const bool gridded =
      d.chunks.size() == rank && std::all_of(d.chunks.begin(), d.chunks.end(), [](uint64_t c) { return c != 0; });
  auto linear = [&](const Dims& x) {
    uint64_t l = 0;
    for (size_t i = 0; i < rank; ++i) l = l * d.shape[i] + x[i];
    return l;
  };
  for (const StoredChunk& sc : chunks) {
    Box b{Dims(rank), Dims(rank)};
    if (!gridded || sc.coords.size() != rank) {
      b = Box{Dims(rank, 0), d.shape};  // the whole dataset
      spans->assign(1, Span{0, d.num_elements == 0 ? 0 : d.num_elements - 1, b});
      break;
    }
    bool inside = true;
    for (size_t i = 0; i < rank; ++i) {
      const uint64_t start = sc.coords[i] * d.chunks[i];
      if (sc.coords[i] > d.shape[i] / d.chunks[i] || start >= d.shape[i]) {
        inside = false;
        break;
      }
      b.start[i] = start;
      b.count[i] = std::min(d.chunks[i], d.shape[i] - start);
    }
    if (!inside) continue;
    Dims end(rank);
    for (size_t i = 0; i < rank; ++i) end[i] = b.start[i] + b.count[i] - 1;
    spans->push_back(Span{linear(b.start), linear(end), std::move(b)});
  }
  std::sort(spans->begin(), spans->end(), [](const Span& x, const Span& y) { return x.first < y.first; });
  uint64_t span = 0;
  for (const Span& s : *spans) span = std::max(span, s.last - s.first);
  return NextStoredElement([spans, span, shape = d.shape](uint64_t at) -> Result<std::optional<uint64_t>> {
    const uint64_t from = at > span ? at - span : 0;
    auto it =
        std::lower_bound(spans->begin(), spans->end(), from, [](const Span& s, uint64_t v) { return s.first < v; });
    std::optional<uint64_t> next;
    for (; it != spans->end(); ++it) {
      if (next && it->first >= *next) break;
      if (it->last < at) continue;
      std::optional<uint64_t> n = engine::NextElementInBox(shape, it->box, at);
      if (n && (!next || *n < *next)) next = n;
      if (next && *next == at) break;
    }
    return next;
  });
}

Status StoreDataset::ForEachDefinedRun(uint64_t first, uint64_t count, const Dataset::RunVisitor& fn,
                                       const Dataset::WalkCheck& check) const {
  const DatasetInfo d = info().dataset;  // a writable store's dataset may change size meanwhile
  if (first > d.num_elements || count > d.num_elements - first) {
    return Status::InvalidArgument(path() + ": elements " + std::to_string(first) + "+" + std::to_string(count) +
                                   " outside " + std::to_string(d.num_elements));
  }
  if (count == 0) return Status::OK();
  // No element outside a stored chunk is defined, so a step starts at the
  // first of their elements at or after where the last ended.
  SLABFS_ASSIGN_OR_RETURN(NextStoredElement next_stored, StoredElementFinder());
  const uint64_t end = first + count;
  for (uint64_t at = first; at < end;) {
    if (check) SLABFS_RETURN_IF_ERROR(check());
    SLABFS_ASSIGN_OR_RETURN(std::optional<uint64_t> next, next_stored(at));
    if (!next || *next >= end) return Status::OK();
    at = *next;
    // A dataset cut shorter since the walk began (a truncate beside an
    // lseek) ends the walk where it ends now: the first dimension is the
    // outermost, so the elements before keep their places.
    const uint64_t now = at == first ? d.num_elements : info().dataset.num_elements;
    if (at >= now) return Status::OK();
    const uint64_t n = std::min({kDefinedWalkWindow, end - at, now - at});
    SLABFS_ASSIGN_OR_RETURN(std::vector<ElementRun> runs, DefinedRuns(at, n));
    for (const ElementRun& r : runs)
      if (!fn(r)) return Status::OK();
    at += n;
  }
  return Status::OK();
}

Result<uint64_t> StoreDataset::CountDefined() const {
  const DatasetInfo d = info().dataset;
  uint64_t total = 0;
  if (d.num_elements == 0) return total;
  SLABFS_ASSIGN_OR_RETURN(std::vector<Box> boxes, Defined(Slab::All(d.shape)));
  for (const Box& b : boxes) {
    uint64_t n = 1;
    for (uint64_t c : b.count) n *= c;
    total += n;
  }
  return total;
}

Result<ObjectId> Store::Resolve(std::string_view path) const {
  SLABFS_ASSIGN_OR_RETURN(std::vector<std::string> parts, SplitPath(path));
  ObjectId id = kRootId;
  for (const std::string& name : parts) {
    SLABFS_ASSIGN_OR_RETURN(id, Lookup(id, name));
  }
  return id;
}

Result<std::shared_ptr<const StoreDataset>> Store::OpenDataset(std::string_view path) const {
  SLABFS_ASSIGN_OR_RETURN(ObjectId id, Resolve(path));
  return OpenDataset(id);
}

namespace {

// A container's dataset: a Dataset handle and what it was when opened.
class ContainerDataset final : public StoreDataset {
 public:
  ContainerDataset(std::shared_ptr<Container> c, Dataset ds, std::string path)
      : container_(std::move(c)), ds_(std::move(ds)), path_(std::move(path)) {
    info_.dataset = ds_.info();
    info_.layout = StoreLayout::kChunked;
    info_.source_filters = info_.dataset.filters;
    info_.source_dtype = "<" + std::string(DTypeName(info_.dataset.dtype));
    if (ItemSize(info_.dataset.dtype) == 1) info_.source_dtype[0] = '|';
  }

  StoreDatasetInfo info() const override { return info_; }
  const std::string& path() const override { return path_; }
  Status Read(const Slab& sel, void* buf, const MemSpace* mem) const override { return ds_.Read(sel, buf, mem); }
  Result<std::vector<StoredChunk>> StoredChunks() const override {
    SLABFS_ASSIGN_OR_RETURN(std::vector<StoredChunk> chunks, ds_.StoredChunks());
    std::sort(chunks.begin(), chunks.end(),
              [](const StoredChunk& a, const StoredChunk& b) { return a.coords < b.coords; });
    return chunks;
  }
  Result<std::vector<Box>> Defined(const Slab& sel) const override { return ds_.Defined(sel); }

 private:
  std::shared_ptr<Container> container_;  // keeps the container open
  Dataset ds_;
  std::string path_;
  StoreDatasetInfo info_;
};

class ContainerStoreImpl final : public Store {
 public:
  explicit ContainerStoreImpl(std::shared_ptr<Container> c) : c_(std::move(c)) {}

  std::string_view format() const override { return "slab"; }
  const std::string& path() const override { return c_->path(); }
  Result<ObjectId> Lookup(ObjectId parent, std::string_view name) const override { return c_->Lookup(parent, name); }
  Result<ObjectInfo> Stat(ObjectId id) const override { return c_->Stat(id); }
  Result<std::vector<Entry>> List(ObjectId group) const override { return c_->List(group); }
  Result<std::string> PathOf(ObjectId id) const override { return c_->PathOf(id); }
  Result<std::vector<std::string>> ListAttributes(ObjectId id) const override { return c_->ListAttributes(id); }
  Result<Attribute> GetAttribute(ObjectId id, std::string_view name) const override {
    return c_->GetAttribute(id, name);
  }
  Result<std::shared_ptr<const StoreDataset>> OpenDataset(ObjectId id) const override {
    SLABFS_ASSIGN_OR_RETURN(Dataset ds, c_->OpenDataset(id));
    SLABFS_ASSIGN_OR_RETURN(std::string p, c_->PathOf(id));
    return std::shared_ptr<const StoreDataset>(std::make_shared<ContainerDataset>(c_, std::move(ds), std::move(p)));
  }
  std::vector<SkippedObject> Skipped() const override { return {}; }
  CacheStats cache_stats() const override { return c_->cache_stats(); }

 private:
  std::shared_ptr<Container> c_;
};

}  // namespace

Result<std::unique_ptr<Store>> OpenContainerStore(const std::string& path, OpenOptions options) {
  options.read_only = true;
  options.create = false;
  SLABFS_ASSIGN_OR_RETURN(std::unique_ptr<Container> c, Container::Open(path, options));
  return ContainerStore(std::shared_ptr<Container>(std::move(c)));
}

std::unique_ptr<Store> ContainerStore(std::shared_ptr<Container> container) {
  return std::make_unique<ContainerStoreImpl>(std::move(container));
}

}  // namespace slabfs
