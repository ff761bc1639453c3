// The public API (include/slabfs/container.h) over the engine.
#include "engine/api_access.h"
#include "engine/container_impl.h"
#include "engine/util/crc32c.h"
#include "slabfs/checksum.h"

namespace slabfs {

using engine::ContainerImpl;

namespace {

// Guards every handle call: a Dataset used after its Container closed.
Status NoState() { return Status::InvalidArgument("dataset handle is empty"); }

}  // namespace

Result<std::vector<std::string>> SplitPath(std::string_view path) {
  if (path.empty() || path.front() != '/')
    return Err(Status::InvalidArgument("path '" + std::string(path) + "' must start with '/'"));
  std::vector<std::string> parts;
  size_t pos = 0;
  while (pos < path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view part = path.substr(pos, slash - pos);
    if (!part.empty()) {
      Status s = ValidateName(part);
      if (!s.ok()) return Err(s.WithContext("path '" + std::string(path) + "'"));
      parts.emplace_back(part);
    }
    pos = slash + 1;
  }
  return parts;
}

uint32_t Crc32c(const void* data, size_t n) { return engine::Crc32c(data, n); }

// ------------------------------------------------------------- Container

struct Container::Rep {
  std::unique_ptr<ContainerImpl> impl;
};

Container::Container(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
Container::~Container() = default;

namespace engine {

std::unique_ptr<Container> ApiAccess::Wrap(std::unique_ptr<ContainerImpl> impl) {
  return std::unique_ptr<Container>(new Container(std::make_unique<Container::Rep>(std::move(impl))));
}

ContainerImpl& ApiAccess::Impl(const Container& c) { return *c.rep_->impl; }

}  // namespace engine

Result<std::unique_ptr<Container>> Container::Open(const std::string& path, const OpenOptions& options) {
  if (path.empty()) return Err(Status::InvalidArgument("empty container path"));
  if (options.create) {
    if (options.read_only) return Err(Status::InvalidArgument("cannot create a container read-only"));
    SLABFS_RETURN_IF_ERROR_R(engine::CreateFileAtomically(path, ContainerImpl::Format));
  }
  SLABFS_ASSIGN_OR_RETURN(auto file, engine::OpenPosixFile(path, {.writable = !options.read_only, .create = false}));
  SLABFS_ASSIGN_OR_RETURN(auto impl, ContainerImpl::Open(std::move(file), options));
  return engine::ApiAccess::Wrap(std::move(impl));
}

Status Container::Close() { return rep_->impl->Close(); }
void Container::Discard() { rep_->impl->Discard(); }

const char* Version() { return SLABFS_VERSION; }
Status Container::Commit() { return rep_->impl->Commit(); }
Result<RefreshInfo> Container::Refresh() { return rep_->impl->Refresh(); }
bool Container::dirty() const { return rep_->impl->dirty(); }
bool Container::read_only() const { return rep_->impl->read_only(); }
const std::string& Container::path() const { return rep_->impl->path(); }

Result<ObjectId> Container::Resolve(std::string_view path) const { return rep_->impl->Resolve(path); }
Result<ObjectId> Container::Lookup(ObjectId parent, std::string_view name) const {
  return rep_->impl->Lookup(parent, name);
}
Result<ObjectInfo> Container::Stat(ObjectId id) const { return rep_->impl->Stat(id); }
Result<std::vector<Entry>> Container::List(ObjectId group) const { return rep_->impl->List(group); }
Result<std::string> Container::PathOf(ObjectId id) const { return rep_->impl->PathOf(id); }
Result<ObjectId> Container::CreateGroup(ObjectId parent, std::string_view name) {
  return rep_->impl->CreateGroup(parent, name);
}
Result<ObjectId> Container::MakeGroups(std::string_view path, bool parents) {
  return rep_->impl->MakeGroups(path, parents);
}

Result<Dataset> Container::CreateDataset(ObjectId parent, std::string_view name, const DatasetOptions& options) {
  SLABFS_ASSIGN_OR_RETURN(auto ds, rep_->impl->CreateDataset(parent, name, options));
  return Dataset(std::move(ds));
}

namespace {
// "/a/b/c" -> ("/a/b", "c").
Result<std::pair<std::string, std::string>> SplitParent(std::string_view path) {
  SLABFS_ASSIGN_OR_RETURN(std::vector<std::string> parts, SplitPath(path));
  if (parts.empty()) return Err(Status::InvalidArgument("the root group has no name"));
  std::string parent;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    parent += '/';
    parent += parts[i];
  }
  if (parent.empty()) parent.push_back('/');
  return std::make_pair(parent, parts.back());
}
}  // namespace

Result<Dataset> Container::CreateDataset(std::string_view path, const DatasetOptions& options) {
  SLABFS_ASSIGN_OR_RETURN(auto pn, SplitParent(path));
  SLABFS_ASSIGN_OR_RETURN(ObjectId parent, rep_->impl->Resolve(pn.first));
  return CreateDataset(parent, pn.second, options);
}

Result<Dataset> Container::OpenDataset(ObjectId id) const {
  SLABFS_ASSIGN_OR_RETURN(auto ds, rep_->impl->OpenDataset(id));
  return Dataset(std::move(ds));
}

Result<Dataset> Container::OpenDataset(std::string_view path) const {
  SLABFS_ASSIGN_OR_RETURN(ObjectId id, rep_->impl->Resolve(path));
  auto ds = rep_->impl->OpenDataset(id);
  if (!ds)
    return Err(ds.error().code() == Code::kNotADataset
                   ? Status::NotADataset(std::string(path) + " is a group, not a dataset")
                   : ds.error());
  return Dataset(std::move(*ds));
}

Status Container::Remove(ObjectId parent, std::string_view name) { return rep_->impl->Remove(parent, name); }

Status Container::Remove(std::string_view path) {
  SLABFS_ASSIGN_OR_RETURN(auto pn, SplitParent(path));
  SLABFS_ASSIGN_OR_RETURN(ObjectId parent, rep_->impl->Resolve(pn.first));
  return rep_->impl->Remove(parent, pn.second);
}

Status Container::Rename(ObjectId from_parent, std::string_view from_name, ObjectId to_parent, std::string_view to_name,
                         bool no_replace) {
  return rep_->impl->Rename(from_parent, from_name, to_parent, to_name, no_replace);
}

Status Container::Rename(std::string_view from_path, std::string_view to_path) {
  SLABFS_ASSIGN_OR_RETURN(auto from, SplitParent(from_path));
  SLABFS_ASSIGN_OR_RETURN(auto to, SplitParent(to_path));
  SLABFS_ASSIGN_OR_RETURN(ObjectId fp, rep_->impl->Resolve(from.first));
  SLABFS_ASSIGN_OR_RETURN(ObjectId tp, rep_->impl->Resolve(to.first));
  return rep_->impl->Rename(fp, from.second, tp, to.second, false);
}

Result<std::vector<std::string>> Container::ListAttributes(ObjectId id) const { return rep_->impl->ListAttributes(id); }
Result<Attribute> Container::GetAttribute(ObjectId id, std::string_view name) const {
  return rep_->impl->GetAttribute(id, name);
}
Status Container::SetAttribute(ObjectId id, std::string_view name, const Attribute& value) {
  return rep_->impl->SetAttribute(id, name, value);
}
Status Container::DeleteAttribute(ObjectId id, std::string_view name) { return rep_->impl->DeleteAttribute(id, name); }
CacheStats Container::cache_stats() const { return rep_->impl->cache_stats(); }
SpaceInfo Container::space() const { return rep_->impl->space(); }

// --------------------------------------------------------------- Dataset

ObjectId Dataset::id() const { return state_ ? state_->id() : 0; }
DatasetInfo Dataset::info() const { return state_ ? state_->Info() : DatasetInfo{}; }
size_t Dataset::item_size() const { return state_ ? state_->item_size() : 0; }
uint64_t Dataset::num_elements() const { return state_ ? state_->num_elements() : 0; }
uint64_t Dataset::size_bytes() const { return state_ ? state_->size_bytes() : 0; }

Status Dataset::Read(const Slab& sel, void* buf, const MemSpace* mem) const {
  return state_ ? state_->Read(sel, buf, mem) : NoState();
}
Status Dataset::Write(const Slab& sel, const void* buf, const MemSpace* mem) {
  return state_ ? state_->Write(sel, buf, mem) : NoState();
}
Status Dataset::ReadElements(uint64_t first, uint64_t count, void* buf) const {
  return state_ ? state_->ReadElements(first, count, buf) : NoState();
}
Status Dataset::WriteElements(uint64_t first, uint64_t count, const void* buf) {
  return state_ ? state_->WriteElements(first, count, buf) : NoState();
}
Result<size_t> Dataset::ReadBytes(uint64_t offset, size_t length, void* buf) const {
  if (!state_) return Err(NoState());
  return state_->ReadBytes(offset, length, buf);
}
Result<bool> Dataset::WithFileExtents(uint64_t offset, size_t length, size_t max_extents,
                                      const FileExtentUser& use) const {
  if (!state_) return Err(NoState());
  return state_->WithFileExtents(offset, length, max_extents, use);
}
Status Dataset::WriteBytes(uint64_t offset, size_t length, const void* buf, Growth growth) {
  return state_ ? state_->WriteBytes(offset, length, buf, growth == Growth::kGrowRows) : NoState();
}
Result<size_t> Dataset::WriteBytesUpTo(uint64_t offset, size_t length, const void* buf, Growth growth) {
  if (!state_) return Err(NoState());
  size_t written = 0;
  SLABFS_RETURN_IF_ERROR_R(state_->WriteBytes(offset, length, buf, growth == Growth::kGrowRows, &written));
  return written;
}
Status Dataset::WriteEncodedChunk(std::span<const uint64_t> chunk, std::string_view image, uint32_t filter_mask) {
  return state_ ? state_->WriteEncodedChunk(chunk, image, filter_mask) : NoState();
}
Status Dataset::Clear() { return state_ ? state_->Clear() : NoState(); }
Status Dataset::Resize(const Dims& shape) { return state_ ? state_->Resize(shape) : NoState(); }
Status Dataset::SetSizeBytes(uint64_t size) { return state_ ? state_->SetSizeBytes(size) : NoState(); }
Result<std::vector<Box>> Dataset::Defined(const Slab& sel) const {
  if (!state_) return Err(NoState());
  return state_->Defined(sel);
}
Result<std::vector<ElementRun>> Dataset::DefinedRuns(uint64_t first, uint64_t count) const {
  if (!state_) return Err(NoState());
  return state_->DefinedRuns(first, count);
}
Status Dataset::ForEachDefinedRun(uint64_t first, uint64_t count, const RunVisitor& fn, const WalkCheck& check) const {
  return state_ ? state_->ForEachDefinedRun(first, count, fn, check) : NoState();
}
Result<uint64_t> Dataset::CountDefined(const WalkCheck& check) const {
  if (!state_) return Err(NoState());
  return state_->CountDefined(check);
}
Status Dataset::Erase(const Slab& sel) { return state_ ? state_->Erase(sel) : NoState(); }

Status Dataset::Relayout(const DatasetOptions& options) {
  if (!state_) return NoState();
  SLABFS_ASSIGN_OR_RETURN(engine::DatasetRecord rec, engine::MakeDatasetRecord(options));
  return state_->Relayout(std::move(rec));
}

Status Dataset::TakeLostWrites() { return state_ ? state_->TakeLostWrites() : NoState(); }

Result<std::vector<StoredChunk>> Dataset::StoredChunks() const {
  if (!state_) return Err(NoState());
  return state_->StoredChunks();
}

}  // namespace slabfs
