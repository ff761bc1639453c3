// ContainerImpl: opening a container, the tree of groups and datasets,
// attributes, and the commit protocol.
//
// Commit protocol (copy-on-write, after LMDB):
//   1. write dirty chunks and index pages to extents that no committed state
//      references (fresh extents are rewritten in place);
//   2. write every changed object block, children before parents, up to a
//      new root block;
//   3. write the free list of the new state (a delta on the last state's
//      free list where that is cheaper: engine/txn/free_list_log.h);
//   4. fdatasync, unless the commit wrote at most kMaxWrittenExtents
//      extents of at most kMaxWrittenBytes (every small commit: a new file,
//      a rename, a removal): then the superblock lists them with their
//      checksums (format/superblock.h) and no fdatasync is made here;
//   5. write the superblock of generation g+1 into slot (g+1) % 2;
//   6. fdatasync. The commit is now durable: extents the new state no longer
//      references become reusable (Allocator::MarkDurable) once no reader
//      reads an older state (Allocator::Release, engine/txn/reader_table.h).
// A crash before 6 completes leaves slot g % 2 as the newest complete
// commit: either slot (g+1) % 2 is not valid, or its record names an extent
// that did not reach the disk (engine/txn/newest_state.h); nothing the
// commit of g references was overwritten.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unordered_set>

#include "engine/container_impl.h"
#include "engine/format/free_list.h"
#include "engine/format/layout.h"
#include "engine/format/limits.h"
#include "engine/index/dataset_geometry.h"
#include "engine/io/writer_lock.h"
#include "engine/util/crc32c.h"
#include "engine/util/expensive_checks.h"
#include "engine/util/math.h"

namespace slabfs::engine {
namespace {

constexpr uint64_t kAutoChunkBytes = 1 << 20;
// OpenOptions::reuse_delay_seconds on network and FUSE filesystems.
constexpr int64_t kRemoteReuseDelaySeconds = 60;

// Chunks of at most kAutoChunkBytes: bounded dimensions start at their
// maximum and the largest is halved until the chunk fits; an unlimited
// dimension starts at 1 and doubles while the chunk stays within the
// target, so a stream of frames is chunked by whole frames.
Dims AutoChunks(const Dims& max_shape, size_t item_size) {
  Dims c(max_shape.size());
  for (size_t d = 0; d < c.size(); ++d) c[d] = max_shape[d] == kUnlimited ? 1 : max_shape[d];
  auto bytes = [&] {
    slabfs_u128 b = item_size;
    for (uint64_t v : c) b *= v;
    return b;
  };
  while (bytes() > kAutoChunkBytes) {
    size_t d = static_cast<size_t>(std::max_element(c.begin(), c.end()) - c.begin());
    if (c[d] <= 1) break;
    c[d] = CeilDiv(c[d], 2);
  }
  // A maximum of 0 (refused by ValidateDatasetShape next) leaves nothing to
  // grow: doubling would never reach the target.
  if (bytes() == 0) return c;
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t d = 0; d < c.size(); ++d) {
      if (max_shape[d] != kUnlimited || bytes() * 2 > kAutoChunkBytes) continue;
      c[d] *= 2;
      grew = true;
    }
  }
  return c;
}

}  // namespace

// ------------------------------------------------------------- open/close

ContainerImpl::ContainerImpl(std::unique_ptr<File> file, const OpenOptions& o)
    : file_(std::move(file)),
      read_only_(o.read_only),
      reader_(file_.get()),
      holder_(o.holder),
      holder_mount_(o.holder_mount),
      rebuild_free_list_(o.rebuild_free_list && !o.read_only),
      store_(file_.get(), &alloc_),
      cache_(o.cache_bytes, std::max(o.cache_bytes, o.cache_max_bytes)),
      room_(file_->name()) {
  alloc_.set_packed(o.pack);
  reuse_delay_s_ = o.reuse_delay_seconds;
  if (reuse_delay_s_ < 0) {
    // Locks on network filesystems may stay on one host (see reader_table.h).
    auto remote = OnNetworkFilesystem(file_->name());
    reuse_delay_s_ = remote && *remote ? kRemoteReuseDelaySeconds : 0;
  }
}

ContainerImpl::~ContainerImpl() {
  if (!closed_) {
    Status s = Close();
    if (!s.ok()) LogWarn("closing " + path() + ": " + s.ToString());
  }
}

Status ContainerImpl::Format(File* file) {
  // No blocks at all: an empty root reference is an empty root group, so
  // the first commit frees nothing and leaves no hole.
  Superblock sb;
  sb.generation = 1;
  sb.root = BlockRef{};
  sb.file_end = kDataStart;
  sb.next_object_id = kRootId + 1;
  std::string zeros(kSuperblockSlotBytes, '\0');
  SLABFS_RETURN_IF_ERROR(file->WriteAt(kSuperblockSlot0, zeros.data(), zeros.size()));
  std::string enc = EncodeSuperblock(sb);
  enc.resize(kSuperblockSlotBytes, '\0');
  SLABFS_RETURN_IF_ERROR(file->WriteAt(kSuperblockSlot1, enc.data(), enc.size()));
  std::string lock(kDataStart - kLockRecordOffset, '\0');
  return file->WriteAt(kLockRecordOffset, lock.data(), lock.size());
}

Result<std::unique_ptr<ContainerImpl>> ContainerImpl::Open(std::unique_ptr<File> file, const OpenOptions& o) {
  std::unique_ptr<ContainerImpl> c(new ContainerImpl(std::move(file), o));
  // A container that did not open is destroyed without a commit.
  auto fail = [&c](const Status& s) {
    c->Discard();
    return Err(s);
  };
  if (!o.read_only) {
    // Waits for a daemon that is finishing its last commit after an
    // unmount (writer_lock.h); Busy naming any other holder.
    Status s = AcquireWriterLock(c->file_.get());
    if (!s.ok()) return fail(s);
  } else {
    // A reader opened after an unmount sees the daemon's last commit.
    WaitForUnmountingWriter(c->file_.get());
  }
  Status s = c->Load();
  if (!s.ok()) return fail(s);
  if (!o.read_only) {
    s = c->WriteLockRecord();
    if (!s.ok()) return fail(s);
  }
  return c;
}

Status ContainerImpl::WriteLockRecord() {
  // Informational (and for WaitForUnmountingWriter): not synced, and read
  // only while the lock is held.
  const std::string rec = EncodeLockRecord(OwnLockRecord(holder_, holder_mount_));
  return file_->WriteAt(kLockRecordOffset, rec.data(), rec.size());
}

Status ContainerImpl::Close() {
  WriterLock cl(commit_mu_);
  if (closed_) return Status::OK();
  Status s;
  if (!read_only_) {
    {
      WriterLock ns(ns_mu_);
      // Handles cannot outlive the container: reclaim every removed dataset,
      // and commit what that frees (else a dataset removed while a handle
      // still used it at the last commit would leak its space).
      if (!detached_.empty()) data_dirty_ = true;
      for (auto& ds : detached_) {
        Status r = ds->ReclaimDetached();
        if (!r.ok()) LogWarn("reclaiming " + ds->what() + ": " + r.ToString());
      }
      detached_.clear();
    }
    s = CommitLocked(/*last=*/true);
  }
  closed_ = true;
  return s;
}

void ContainerImpl::Discard() {
  // Nothing is written: the file holds the last commit, and chunks written
  // since then went only to extents that commit does not reference.
  WriterLock cl(commit_mu_);
  closed_ = true;
}

// ------------------------------------------------------------------ tree

Status ContainerImpl::CheckWritable() const {
  if (read_only_) return Status::ReadOnly(path() + " is open read-only");
  return Status::OK();
}

Result<ContainerImpl::Node*> ContainerImpl::GetNode(ObjectId id) {
  auto it = nodes_.find(id);
  if (it == nodes_.end()) return Err(Status::NotFound("no object with id " + std::to_string(id)));
  return it->second.get();
}

Result<ContainerImpl::Node*> ContainerImpl::GetGroup(ObjectId id) {
  SLABFS_ASSIGN_OR_RETURN(Node * n, GetNode(id));
  if (n->kind != ObjectKind::kGroup) return Err(Status::NotAGroup(PathOfLocked(n) + " is a dataset, not a group"));
  return n;
}

std::string ContainerImpl::PathOfLocked(const Node* n) const {
  if (!n->parent) return "/";
  std::vector<const std::string*> parts;
  for (const Node* p = n; p->parent; p = p->parent) parts.push_back(&p->name);
  std::string s;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) s += "/" + **it;
  return s;
}

std::string ContainerImpl::ChildPathLocked(const Node* parent, std::string_view name) const {
  return PathOfLocked(parent) + (parent->parent ? "/" : "") + std::string(name);
}

Status ContainerImpl::CheckNewChildLocked(const Node* parent, std::string_view name) const {
  if (parent->children.count(name)) return Status::AlreadyExists(ChildPathLocked(parent, name) + " already exists");
  if (parent->children.size() >= kMaxChildrenPerGroup)
    return Status::NoSpace(PathOfLocked(parent) + " has " + std::to_string(kMaxChildrenPerGroup) + " children already");
  return CheckDepthLocked(parent, 0, ChildPathLocked(parent, name));
}

int ContainerImpl::DepthOfLocked(const Node* n) {
  int depth = 0;
  for (; n->parent; n = n->parent) ++depth;
  return depth;
}

int ContainerImpl::HeightOfLocked(const Node* n) {
  // Levels below n (0 for a dataset or an empty group), breadth first: the
  // tree may be as deep as the loader accepts.
  int height = 0;
  std::vector<const Node*> level{n}, next;
  for (;;) {
    next.clear();
    for (const Node* p : level)
      for (const auto& [name, c] : p->children) next.push_back(c);
    if (next.empty()) return height;
    ++height;
    level.swap(next);
  }
}

Status ContainerImpl::CheckDepthLocked(const Node* parent, int height, const std::string& what) const {
  const int deepest = DepthOfLocked(parent) + 1 + height;
  if (deepest <= kMaxDepth) return Status::OK();
  return Status::InvalidArgument(what + ": groups may be nested at most " + std::to_string(kMaxDepth) +
                                 " levels deep; this would reach " + std::to_string(deepest));
}

void ContainerImpl::MarkDirtyLocked(Node* n) {
  for (; n && !n->dirty; n = n->parent) {
    n->dirty = true;
    if (n->parent) n->parent->dirty_children.push_back(n->id);
  }
  ns_dirty_ = true;
}

void ContainerImpl::AddChildLocked(Node* parent, Node* n) {
  parent->children.emplace(n->name, n);
  parent->child_bytes += ChildEntryBytes(n->name);
  parent->pages.Touch(n->name);
  if (n->dirty) parent->dirty_children.push_back(n->id);
}

void ContainerImpl::RemoveChildLocked(Node* parent, const std::string& name) {
  parent->children.erase(name);
  parent->child_bytes -= ChildEntryBytes(name);
  parent->pages.Touch(name);
}

ContainerImpl::Node* ContainerImpl::NewNodeLocked(ObjectKind kind, Node* parent, std::string name) {
  auto owned = std::make_unique<Node>();
  Node* n = owned.get();
  n->id = sb_next_id_++;
  n->kind = kind;
  n->parent = parent;
  n->name = std::move(name);
  nodes_.emplace(n->id, std::move(owned));
  AddChildLocked(parent, n);
  MarkDirtyLocked(n);
  return n;
}

void ContainerImpl::DetachLocked(Node* n) {
  store_.Free(n->block);
  n->pages.FreeAll(store_);
  if (n->ds) {
    n->ds->set_detached();
    detached_.push_back(n->ds);
  }
  Node* parent = n->parent;
  RemoveChildLocked(parent, n->name);
  MarkDirtyLocked(parent);
  nodes_.erase(n->id);
}

Result<ObjectId> ContainerImpl::Lookup(ObjectId parent, std::string_view name) {
  SLABFS_RETURN_IF_ERROR_R(ValidateName(name));
  ReaderLock ns(ns_mu_);
  SLABFS_ASSIGN_OR_RETURN(Node * p, GetGroup(parent));
  auto it = p->children.find(name);
  if (it == p->children.end()) return Err(Status::NotFound(ChildPathLocked(p, name) + ": no such object"));
  return it->second->id;
}

Result<ObjectId> ContainerImpl::Resolve(std::string_view path) {
  SLABFS_ASSIGN_OR_RETURN(std::vector<std::string> parts, SplitPath(path));
  ReaderLock ns(ns_mu_);
  Node* n = root_;
  std::string walked;
  for (const auto& part : parts) {
    if (n->kind != ObjectKind::kGroup) return Err(Status::NotAGroup(walked + " is a dataset, not a group"));
    auto it = n->children.find(part);
    walked += "/" + part;
    if (it == n->children.end()) return Err(Status::NotFound(walked + ": no such object"));
    n = it->second;
  }
  return n->id;
}

Result<ObjectInfo> ContainerImpl::Stat(ObjectId id) {
  ReaderLock ns(ns_mu_);
  SLABFS_ASSIGN_OR_RETURN(Node * n, GetNode(id));
  ObjectInfo info;
  info.id = n->id;
  info.kind = n->kind;
  info.num_children = n->children.size();
  if (n->ds) {
    info.size_bytes = n->ds->size_bytes();
    info.stored_bytes = n->ds->stored_bytes();
  }
  return info;
}

Result<std::vector<Entry>> ContainerImpl::List(ObjectId group) {
  ReaderLock ns(ns_mu_);
  SLABFS_ASSIGN_OR_RETURN(Node * g, GetGroup(group));
  std::vector<Entry> out;
  out.reserve(g->children.size());
  for (const auto& [name, c] : g->children) out.push_back({name, c->id, c->kind});
  return out;
}

Result<std::string> ContainerImpl::PathOf(ObjectId id) {
  ReaderLock ns(ns_mu_);
  SLABFS_ASSIGN_OR_RETURN(Node * n, GetNode(id));
  return PathOfLocked(n);
}

Result<ObjectId> ContainerImpl::CreateGroup(ObjectId parent, std::string_view name) {
  SLABFS_RETURN_IF_ERROR_R(CheckWritable());
  SLABFS_RETURN_IF_ERROR_R(ValidateName(name));
  ReaderLock cl(commit_mu_);
  WriterLock ns(ns_mu_);
  SLABFS_ASSIGN_OR_RETURN(Node * p, GetGroup(parent));
  SLABFS_RETURN_IF_ERROR_R(CheckNewChildLocked(p, name));
  return NewNodeLocked(ObjectKind::kGroup, p, std::string(name))->id;
}

Result<ObjectId> ContainerImpl::MakeGroups(std::string_view path, bool parents) {
  SLABFS_RETURN_IF_ERROR_R(CheckWritable());
  SLABFS_ASSIGN_OR_RETURN(std::vector<std::string> parts, SplitPath(path));
  if (parts.empty()) {
    if (parents) return kRootId;
    return Err(Status::AlreadyExists("/ already exists"));
  }
  ObjectId cur = kRootId;
  for (size_t i = 0; i < parts.size(); ++i) {
    auto child = Lookup(cur, parts[i]);
    bool last = i + 1 == parts.size();
    if (child) {
      SLABFS_ASSIGN_OR_RETURN(ObjectInfo info, Stat(*child));
      if (info.kind != ObjectKind::kGroup)
        return Err(Status::NotAGroup(std::string(path) + ": " + parts[i] + " is a dataset"));
      if (last && !parents) return Err(Status::AlreadyExists(std::string(path) + " already exists"));
      cur = *child;
      continue;
    }
    if (child.error().code() != Code::kNotFound) return Err(child.error());
    if (!last && !parents) return Err(child.error());
    SLABFS_ASSIGN_OR_RETURN(cur, CreateGroup(cur, parts[i]));
  }
  return cur;
}

Result<DatasetRecord> MakeDatasetRecord(const DatasetOptions& o) {
  if (!IsValidDTypeCode(static_cast<unsigned>(o.dtype))) return Err(Status::InvalidArgument("unknown dtype"));
  DatasetRecord rec;
  rec.dtype = o.dtype;
  rec.shape = o.shape;
  rec.max_shape = o.max_shape.empty() ? o.shape : o.max_shape;
  if (o.shape.empty() || o.shape.size() > kMaxRank)
    return Err(Status::InvalidArgument("rank must be 1 to " + std::to_string(kMaxRank) + ", not " +
                                       std::to_string(o.shape.size())));
  if (rec.max_shape.size() != rec.shape.size())
    return Err(Status::InvalidArgument("max shape has rank " + std::to_string(rec.max_shape.size()) +
                                       ", shape has rank " + std::to_string(rec.shape.size())));
  rec.chunks = o.chunks.empty() ? AutoChunks(rec.max_shape, ItemSize(o.dtype)) : o.chunks;
  SLABFS_RETURN_IF_ERROR_R(ValidateDatasetShape(rec.dtype, rec.shape, rec.max_shape, rec.chunks));
  if (o.fill.empty())
    rec.fill.assign(ItemSize(o.dtype), '\0');
  else if (o.fill.size() != ItemSize(o.dtype))
    return Err(Status::InvalidArgument("fill value has " + std::to_string(o.fill.size()) + " bytes, a " +
                                       std::string(DTypeName(o.dtype)) + " element has " +
                                       std::to_string(ItemSize(o.dtype))));
  else
    rec.fill = o.fill;
  SLABFS_ASSIGN_OR_RETURN(rec.filters, FilterPipeline::Parse(o.filters));
  if (!rec.filters.empty()) rec.flags |= kDatasetFlagFiltered;
  if (o.sparse) rec.flags |= kDatasetFlagSparse;
  if (o.length_resizable.value_or(rec.max_shape[0] != rec.shape[0])) rec.flags |= kDatasetFlagLengthResizable;
  // Dense chunks of a dataset whose length can change store only what lies
  // inside it (a new file's 6 bytes take 6 bytes, not a 1 MiB chunk).
  // Filtered chunks already shrink by their filters and sparse ones keep
  // only what is defined.
  if (rec.filters.empty() && !o.sparse &&
      ((rec.flags & kDatasetFlagLengthResizable) || rec.max_shape[0] != rec.shape[0]))
    rec.flags |= kDatasetFlagTrimmedEdge;
  SLABFS_ASSIGN_OR_RETURN(rec.index, ChooseIndexKind(o.index, GeometryOf(rec), o.compact_limit));
  return rec;
}

Result<std::shared_ptr<DatasetState>> ContainerImpl::NewDatasetState(ObjectId id, DatasetRecord rec) {
  SLABFS_ASSIGN_OR_RETURN(auto index,
                          OpenChunkIndex(rec.index, GeometryOf(rec), "", &store_, "dataset " + std::to_string(id)));
  return std::make_shared<DatasetState>(this, id, std::move(rec), std::move(index));
}

Result<std::shared_ptr<DatasetState>> ContainerImpl::CreateDataset(ObjectId parent, std::string_view name,
                                                                   const DatasetOptions& o) {
  SLABFS_RETURN_IF_ERROR_R(CheckWritable());
  SLABFS_RETURN_IF_ERROR_R(ValidateName(name));
  SLABFS_ASSIGN_OR_RETURN(DatasetRecord rec, MakeDatasetRecord(o));

  ReaderLock cl(commit_mu_);
  WriterLock ns(ns_mu_);
  SLABFS_ASSIGN_OR_RETURN(Node * p, GetGroup(parent));
  SLABFS_RETURN_IF_ERROR_R(CheckNewChildLocked(p, name));
  SLABFS_ASSIGN_OR_RETURN(auto state, NewDatasetState(sb_next_id_, std::move(rec)));
  Node* n = NewNodeLocked(ObjectKind::kDataset, p, std::string(name));
  n->ds = std::move(state);
  n->ds->set_path(PathOfLocked(n));
  return n->ds;
}

Result<std::shared_ptr<DatasetState>> ContainerImpl::OpenDataset(ObjectId id) {
  ReaderLock ns(ns_mu_);
  SLABFS_ASSIGN_OR_RETURN(Node * n, GetNode(id));
  if (!n->ds) return Err(Status::NotADataset(PathOfLocked(n) + " is a group, not a dataset"));
  n->ds->set_path(PathOfLocked(n));
  return n->ds;
}

Status ContainerImpl::Remove(ObjectId parent, std::string_view name) {
  SLABFS_RETURN_IF_ERROR(CheckWritable());
  SLABFS_RETURN_IF_ERROR(ValidateName(name));
  ReaderLock cl(commit_mu_);
  WriterLock ns(ns_mu_);
  SLABFS_ASSIGN_OR_RETURN(Node * p, GetGroup(parent));
  auto it = p->children.find(name);
  if (it == p->children.end()) return Status::NotFound(ChildPathLocked(p, name) + ": no such object");
  Node* n = it->second;
  if (!n->children.empty()) return Status::NotEmpty(PathOfLocked(n) + " is not empty");
  DetachLocked(n);
  return Status::OK();
}

Status ContainerImpl::Rename(ObjectId from_parent, std::string_view from_name, ObjectId to_parent,
                             std::string_view to_name, bool no_replace) {
  SLABFS_RETURN_IF_ERROR(CheckWritable());
  SLABFS_RETURN_IF_ERROR(ValidateName(from_name));
  SLABFS_RETURN_IF_ERROR(ValidateName(to_name));
  ReaderLock cl(commit_mu_);
  WriterLock ns(ns_mu_);
  SLABFS_ASSIGN_OR_RETURN(Node * src_parent, GetGroup(from_parent));
  SLABFS_ASSIGN_OR_RETURN(Node * dst_parent, GetGroup(to_parent));
  auto it = src_parent->children.find(from_name);
  if (it == src_parent->children.end())
    return Status::NotFound(ChildPathLocked(src_parent, from_name) + ": no such object");
  Node* n = it->second;
  // A group may not move into itself or below itself.
  for (Node* a = dst_parent; a; a = a->parent)
    if (a == n) return Status::InvalidArgument("cannot move " + PathOfLocked(n) + " into itself");
  auto target = dst_parent->children.find(to_name);
  Node* replaced = nullptr;
  if (target != dst_parent->children.end()) {
    Node* t = target->second;
    if (t == n) return Status::OK();
    std::string tpath = PathOfLocked(t);
    if (no_replace) return Status::AlreadyExists(tpath + " already exists");
    if (t->kind != n->kind)
      return t->kind == ObjectKind::kGroup ? Status::NotADataset(tpath + " is a group")
                                           : Status::NotAGroup(tpath + " is a dataset");
    if (!t->children.empty()) return Status::NotEmpty(tpath + " is not empty");
    replaced = t;
  }
  // Every check before anything changes.
  if (dst_parent != src_parent) {
    if (!replaced && dst_parent->children.size() >= kMaxChildrenPerGroup)
      return Status::NoSpace(PathOfLocked(dst_parent) + " is full");
    SLABFS_RETURN_IF_ERROR(CheckDepthLocked(dst_parent, HeightOfLocked(n), ChildPathLocked(dst_parent, to_name)));
  }
  if (replaced) DetachLocked(replaced);
  RemoveChildLocked(src_parent, n->name);
  MarkDirtyLocked(src_parent);
  n->name = std::string(to_name);
  n->parent = dst_parent;
  AddChildLocked(dst_parent, n);  // a dirty n is now written under dst_parent
  MarkDirtyLocked(dst_parent);
  if (n->ds) n->ds->set_path(PathOfLocked(n));
  return Status::OK();
}

// ------------------------------------------------------------- attributes

Result<std::vector<std::string>> ContainerImpl::ListAttributes(ObjectId id) {
  ReaderLock ns(ns_mu_);
  SLABFS_ASSIGN_OR_RETURN(Node * n, GetNode(id));
  std::vector<std::string> out;
  for (const auto& a : n->attrs) out.push_back(a.name);
  return out;
}

Result<Attribute> ContainerImpl::GetAttribute(ObjectId id, std::string_view name) {
  ReaderLock ns(ns_mu_);
  SLABFS_ASSIGN_OR_RETURN(Node * n, GetNode(id));
  for (const auto& a : n->attrs)
    if (a.name == name) return a.value;
  return Err(Status::NotFound(PathOfLocked(n) + ": no attribute '" + std::string(name) + "'"));
}

Status ContainerImpl::SetAttribute(ObjectId id, std::string_view name, const Attribute& value) {
  SLABFS_RETURN_IF_ERROR(CheckWritable());
  SLABFS_RETURN_IF_ERROR(ValidateName(name));
  if (value.data.size() > kMaxAttributeBytes)
    return Status::InvalidArgument("attribute '" + std::string(name) + "' has " + std::to_string(value.data.size()) +
                                   " bytes; the limit is " + std::to_string(kMaxAttributeBytes));
  if (value.kind == Attribute::Kind::kNumeric) {
    if (!IsValidDTypeCode(static_cast<unsigned>(value.dtype)))
      return Status::InvalidArgument("attribute '" + std::string(name) + "': unknown dtype");
    if (value.data.empty() || value.data.size() % ItemSize(value.dtype) != 0)
      return Status::InvalidArgument("attribute '" + std::string(name) + "': length is not a whole number of " +
                                     std::string(DTypeName(value.dtype)) + " elements");
  } else if (value.kind != Attribute::Kind::kString) {
    return Status::InvalidArgument("attribute '" + std::string(name) + "': unknown kind");
  }
  ReaderLock cl(commit_mu_);
  WriterLock ns(ns_mu_);
  SLABFS_ASSIGN_OR_RETURN(Node * n, GetNode(id));
  auto it = std::lower_bound(n->attrs.begin(), n->attrs.end(), name,
                             [](const AttributeRecord& a, std::string_view k) { return a.name < k; });
  const bool exists = it != n->attrs.end() && it->name == name;
  const size_t replaced = exists ? it->name.size() + it->value.data.size() : 0;
  const size_t total = n->attr_bytes - replaced + name.size() + value.data.size();
  if (total > kMaxAttributeBytesPerObject)
    return Status::NoSpace(PathOfLocked(n) + ": attributes would exceed " +
                           std::to_string(kMaxAttributeBytesPerObject >> 20) + " MiB");
  if (!exists && n->attrs.size() >= kMaxAttributesPerObject)
    return Status::NoSpace(PathOfLocked(n) + " has " + std::to_string(kMaxAttributesPerObject) + " attributes already");
  if (exists)
    it->value = value;
  else
    n->attrs.insert(it, AttributeRecord{std::string(name), value});
  n->attr_bytes = total;
  MarkDirtyLocked(n);
  return Status::OK();
}

Status ContainerImpl::DeleteAttribute(ObjectId id, std::string_view name) {
  SLABFS_RETURN_IF_ERROR(CheckWritable());
  ReaderLock cl(commit_mu_);
  WriterLock ns(ns_mu_);
  SLABFS_ASSIGN_OR_RETURN(Node * n, GetNode(id));
  auto it = std::lower_bound(n->attrs.begin(), n->attrs.end(), name,
                             [](const AttributeRecord& a, std::string_view k) { return a.name < k; });
  if (it == n->attrs.end() || it->name != name) {
    return Status::NotFound(PathOfLocked(n) + ": no attribute '" + std::string(name) + "'");
  }
  n->attr_bytes -= it->name.size() + it->value.data.size();
  n->attrs.erase(it);
  MarkDirtyLocked(n);
  return Status::OK();
}

SpaceInfo ContainerImpl::space() {
  SpaceInfo s;
  if (auto size = file_->Size()) s.file_bytes = *size;
  s.free_bytes = alloc_.free_bytes();
  s.held_bytes = alloc_.held_bytes();
  s.free_list_bytes = free_list_bytes();
  if (auto d = DiskSpaceOf(path())) {
    s.disk_free_bytes = d->free_bytes;
    s.disk_total_bytes = d->total_bytes;
  }
  ReaderLock ns(ns_mu_);
  s.num_objects = nodes_.size();
  s.generation = sb_.generation;
  return s;
}

// ----------------------------------------------------------------- commit

bool ContainerImpl::dirty() const {
  return ns_dirty_.load(std::memory_order_relaxed) || data_dirty_.load(std::memory_order_relaxed);
}

Status ContainerImpl::Commit() {
  SLABFS_RETURN_IF_ERROR(CheckWritable());
  WriterLock cl(commit_mu_);
  return CommitLocked();
}

Status ContainerImpl::WriteNodesLocked(Node* n) {
  if (!n->dirty) return Status::OK();
  // The children that changed, before their parent (which names their
  // blocks). An id may be gone (removed), moved to another group (written
  // there) or listed twice (written once).
  std::vector<ObjectId> kids;
  kids.swap(n->dirty_children);
  for (size_t i = 0; i < kids.size(); ++i) {
    auto it = nodes_.find(kids[i]);
    if (it == nodes_.end() || it->second->parent != n) continue;
    Status s = WriteNodesLocked(it->second.get());
    if (!s.ok()) {
      // The rest wait for the next attempt.
      n->dirty_children.insert(n->dirty_children.end(), kids.begin() + static_cast<long>(i), kids.end());
      return s;
    }
  }
  ObjectRecord rec;
  rec.id = n->id;
  rec.kind = n->kind;
  rec.attrs = n->attrs;
  if (n->kind == ObjectKind::kGroup && n->pages.WantPages(n->child_bytes)) {
    auto collect = [n](std::string_view lo, const std::string* hi, std::vector<ChildRecord>* out) {
      for (auto it = n->children.lower_bound(lo); it != n->children.end() && (!hi || it->first < *hi); ++it)
        out->push_back({it->first, it->second->kind, it->second->id, it->second->block});
    };
    SLABFS_RETURN_IF_ERROR(n->pages.Write(store_, n->id, collect, &rec));
  } else if (n->kind == ObjectKind::kGroup) {
    n->pages.FreeAll(store_);
    for (const auto& [name, c] : n->children) rec.children.push_back({name, c->kind, c->id, c->block});
  }
  if (n->ds) rec.dataset = n->ds->Record();
  SLABFS_ASSIGN_OR_RETURN(BlockRef ref, store_.Write(BlockTypeOf(n->kind), EncodeObject(rec), ObjectBlockVersion(rec)));
  store_.Free(n->block);
  n->block = ref;
  n->dirty = false;
  if (n->parent) n->parent->pages.Touch(n->name);  // its entry names the new block
  return Status::OK();
}

Status ContainerImpl::SealLocked() {
  if (sb_.written.empty()) return Status::OK();
  // The last commit's fdatasync returned: all it wrote is durable.
  Superblock next = sb_;
  next.generation = sb_.generation + 1;
  next.written.clear();
  const std::string enc = EncodeSuperblock(next);
  Status s = file_->WriteAt(next.generation % 2 ? kSuperblockSlot1 : kSuperblockSlot0, enc.data(), enc.size());
  if (s.ok()) s = file_->Sync();
  if (!s.ok()) {
    LogWarn("sealing the last commit of " + path() + " failed: " + s.ToString());
    return s;
  }
  sb_ = next;
  return Status::OK();
}

Result<std::vector<WrittenExtent>> ContainerImpl::WrittenForRecord() {
  std::vector<WrittenExtent> out;
  // Every write since the last commit went to a fresh extent (copy-on-
  // write), and nothing writes the file while the commit holds commit_mu_
  // exclusively: the fresh extents are all the new state may hold that is
  // not durable yet.
  auto fresh = alloc_.FreshExtents(kMaxWrittenExtents, kMaxWrittenBytes);
  if (!fresh || fresh->empty()) return out;
  std::string buf;
  out.reserve(fresh->size());
  for (const auto& [addr, len] : *fresh) {
    buf.resize(len);
    SLABFS_RETURN_IF_ERROR_R(file_->ReadAt(addr, buf.data(), len));
    out.push_back({addr, static_cast<uint32_t>(len), Crc32c(buf.data(), len)});
  }
  return out;
}

Status ContainerImpl::CommitLocked(bool last) {
  if (read_only_) return Status::OK();
  WriterLock ns(ns_mu_);
  if (!ns_dirty_ && !data_dirty_ && detached_.empty()) return last ? SealLocked() : Status::OK();
  auto fail = [&](const Status& s) {
    LogWarn("commit of " + path() + " failed: " + s.ToString());
    return s;
  };
  // Removed datasets that no handle uses any more give their space back.
  for (auto it = detached_.begin(); it != detached_.end();) {
    if (it->use_count() == 1) {
      Status s = (*it)->ReclaimDetached();
      if (!s.ok()) return fail(s);
      it = detached_.erase(it);
    } else {
      ++it;
    }
  }
  data_dirty_ = false;  // writes after this point set it again
  // Only the datasets that changed since the last commit.
  std::unordered_set<ObjectId> changed_ds;
  {
    MutexLock lock(dirty_ds_mu_);
    changed_ds.swap(dirty_ds_);
  }
  // A failed commit leaves everything to the next attempt.
  auto retry_later = [&] {
    data_dirty_ = true;
    MutexLock lock(dirty_ds_mu_);
    dirty_ds_.insert(changed_ds.begin(), changed_ds.end());
  };
  for (ObjectId id : changed_ds) {
    auto it = nodes_.find(id);
    if (it == nodes_.end() || !it->second->ds) continue;  // removed: Reclaim frees it
    auto changed = it->second->ds->FlushForCommit();
    if (!changed) {
      retry_later();
      return fail(changed.error());
    }
    if (*changed) MarkDirtyLocked(it->second.get());
  }
  if (ExpensiveChecks()) {
    for (auto& [id, n] : nodes_) {
      if (n->ds && !changed_ds.count(id) && n->ds->HasUnflushedChanges()) {
        LogWarn("commit of " + path() + ": dataset " + PathOfLocked(n.get()) +
                " changed without ContainerImpl::NoteDirty; its changes would not be committed");
        std::abort();
      }
    }
  }
  Status s = WriteNodesLocked(root_);
  if (!s.ok()) {
    retry_later();
    return fail(s);
  }

  // The free list of the new state (a delta on the last one's, or a new
  // base): what this commit frees is tagged with its generation and time,
  // so that the space is reused only once no reader reads an older commit
  // (a writer that opens later reads the tags back).
  const uint64_t generation = sb_.generation + 1;
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  Result<BlockRef> fl = free_log_.Write(store_, generation, now);
  s = fl ? Status::OK() : fl.error();
  if (s.ok()) {
    // The new state is valid only in a file at least file_end long (an open
    // checks it). Space allocated but never written (a chunk whose write
    // failed on a full disk) can leave the file shorter: make it up with a
    // hole, which costs no space, or fail the commit.
    auto size = file_->Size();
    if (!size)
      s = size.error();
    else if (*size < alloc_.file_end())
      s = file_->Truncate(alloc_.file_end());
  }
  // A small commit names what it wrote in its superblock and makes one
  // fdatasync; a larger one makes the first here (step 4).
  std::vector<WrittenExtent> written;
  if (s.ok() && !last) {
    auto r = WrittenForRecord();
    if (!r)
      s = r.error();
    else
      written = std::move(*r);
  }
  if (s.ok() && written.empty()) s = file_->Sync();
  if (!s.ok()) {
    retry_later();
    return fail(s);
  }

  Superblock next = sb_;
  next.generation = generation;
  next.root = root_->block;
  next.free_list = *fl;
  next.file_end = alloc_.file_end();
  next.next_object_id = sb_next_id_;
  next.written = std::move(written);
  std::string enc = EncodeSuperblock(next);
  s = file_->WriteAt(next.generation % 2 ? kSuperblockSlot1 : kSuperblockSlot0, enc.data(), enc.size());
  if (s.ok()) s = file_->Sync();
  if (!s.ok()) {
    retry_later();
    return fail(s);
  }
  // Durable. Nothing wrote the listed extents after they were read back
  // (commit_mu_ is held exclusively): checked here in expensive-check runs.
  if (ExpensiveChecks() && !next.written.empty()) {
    Status c = CheckCommitComplete(file_.get(), next);
    if (!c.ok()) {
      LogWarn("commit of " + path() + ": an extent changed after its commit record was made: " + c.ToString());
      std::abort();
    }
  }
  sb_ = next;
  alloc_.MarkDurable(generation, now);
  free_log_.Durable();
  ReleaseHeld();
  ns_dirty_ = false;
  auto size = file_->Size();
  if (size && *size > sb_.file_end) {
    Status t = file_->Truncate(sb_.file_end);
    if (!t.ok()) LogWarn("could not trim " + path() + ": " + t.ToString());
  }
  return Status::OK();
}

}  // namespace slabfs::engine
