// ContainerImpl: reading a committed state, at open and when a read-only
// container moves to a newer commit (Refresh), and giving back the space
// that no reader can reach any more (ReleaseHeld).
//
// A read-only open registers the generation it reads before it trusts any
// block of it (engine/txn/reader_table.h), so a writer in another process
// never reuses what that state references. Refresh registers the newest
// generation, loads its tree beside the current one -- unchanged subtrees
// (the same block reference: copy-on-write gives any change a new block,
// and a registered state's blocks are never reused) are copied, not read --
// and swaps it in only when all of it loaded; dataset states keep their
// identity, so handles see the new contents.
#include <algorithm>
#include <ctime>

#include "engine/container_impl.h"
#include "engine/format/free_list.h"
#include "engine/format/layout.h"
#include "engine/format/limits.h"
#include "engine/index/dataset_geometry.h"
#include "engine/txn/newest_state.h"
#include "engine/util/log.h"

namespace slabfs::engine {
Result<Superblock> ContainerImpl::ReadNewestSuperblock() {
  auto found = FindNewestState(file_.get(), &checked_commit_);
  if (!found) {
    if (found.error().message().find(" is not a slabfs container") != std::string::npos) return Err(found.error());
    return Err(found.error().WithContext(path()));
  }
  NewestState& newest = *found;
  if (newest.incomplete_generation && *newest.incomplete_generation != incomplete_logged_) {
    incomplete_logged_ = *newest.incomplete_generation;
    LogWarn(path() + ": the commit of generation " + std::to_string(*newest.incomplete_generation) +
            " did not reach the disk whole (a power failure while it was made); generation " +
            std::to_string(newest.sb.generation) + ", the commit before it, is intact and is used");
  }
  return newest.sb;
}

Status ContainerImpl::CheckLongEnough(const Superblock& sb) {
  SLABFS_ASSIGN_OR_RETURN(uint64_t size, file_->Size());
  if (size >= sb.file_end) return Status::OK();
  return Status::Corruption(path() + " is truncated: " + std::to_string(size) + " bytes, the container needs " +
                            std::to_string(sb.file_end));
}

Result<Superblock> ContainerImpl::HoldNewestState() {
  Superblock sb;
  // Called only from inside this function, which holds commit_mu_.
  auto newest = [&]() -> Result<uint64_t> {
    commit_mu_.AssertHeld();
    SLABFS_ASSIGN_OR_RETURN(sb, ReadNewestSuperblock());
    return sb.generation;
  };
  for (int tries = 0;; ++tries) {
    SLABFS_ASSIGN_OR_RETURN(uint64_t g, reader_.HoldNewest(newest));
    (void)g;
    Status s = CheckLongEnough(sb);
    if (s.ok()) return sb;
    // The file ends before the state says it does. A commit made after the
    // superblock was read may have cut free space off the end that this
    // state's file end still counts (never space the state uses); then a
    // newer state is there to read. Otherwise the file really is short.
    SLABFS_ASSIGN_OR_RETURN(Superblock again, ReadNewestSuperblock());
    if (again.generation == sb.generation || tries == 100) return Err(s);
  }
}

Status ContainerImpl::Load() {
  // No other thread knows the container yet: the locks only keep the
  // contracts of what this calls.
  WriterLock cl(commit_mu_);
  WriterLock ns(ns_mu_);
  Superblock sb;
  if (read_only_) {
    auto held = HoldNewestState();
    if (!held) return held.error();
    sb = *held;
    reader_.Keep(sb.generation);
  } else {
    // The writer's lock is held: nobody else commits.
    auto newest = ReadNewestSuperblock();
    if (!newest) return newest.error();
    sb = *newest;
    SLABFS_RETURN_IF_ERROR(CheckLongEnough(sb));
  }
  alloc_.Reset(sb.file_end, {});  // the bounds BlockStore checks references against
  LoadTarget t;
  SLABFS_RETURN_IF_ERROR(LoadTree(sb, &t));
  bool rebuilt = false;
  FreeListChain chain;
  SLABFS_ASSIGN_OR_RETURN(std::vector<FreedExtent> free, ReadOrRebuildFreeList(sb, t.nodes, &rebuilt, &chain));
  free_log_.Reset(std::move(chain));
  if (rebuilt) {
    ns_dirty_ = true;  // the next commit writes the rebuilt list
    free_log_.ForceBase();
  }
  nodes_ = std::move(t.nodes);
  root_ = t.root;
  sb_ = sb;
  sb_next_id_ = sb.next_object_id;
  // A reader never allocates; its allocator only answers space().
  alloc_.Reset(sb.file_end, free);
  if (!read_only_) ReleaseHeld();
  return Status::OK();
}

Result<std::vector<FreedExtent>> ContainerImpl::ReadFreeList(const Superblock& sb, FreeListChain* chain) {
  auto decoded = ReadFreeListChain(store_, sb, chain);
  if (!decoded) return Err(decoded.error().WithContext(path()));
  return decoded;
}

Result<std::vector<FreedExtent>> ContainerImpl::ReadOrRebuildFreeList(const Superblock& sb, const NodeMap& nodes,
                                                                      bool* rebuilt, FreeListChain* chain) {
  *rebuilt = false;
  if (rebuild_free_list_) {
    (void)ReadFreeListChain(store_, sb, chain);  // only its readable blocks matter
    SLABFS_ASSIGN_OR_RETURN(std::vector<FreedExtent> derived, RebuildFreeList(sb, nodes, chain->blocks));
    *rebuilt = true;
    return derived;
  }
  auto free = ReadFreeList(sb, chain);
  if (free || free.error().code() != Code::kCorruption) return free;
  if (read_only_) {
    LogWarn(free.error().ToString() +
            "; the free list is ignored by this read-only open (slab fsck --repair "
            "rebuilds it)");
    return std::vector<FreedExtent>();
  }
  auto derived = RebuildFreeList(sb, nodes, chain->blocks);
  if (!derived) return Err(derived.error().WithContext("rebuilding the damaged free list"));
  LogWarn(free.error().ToString() + "; rebuilt it from what the tree references (" + std::to_string(derived->size()) +
          " free extents); the next commit writes it");
  *rebuilt = true;
  return derived;
}

Status ContainerImpl::LoadTree(const Superblock& sb, LoadTarget* t) {
  t->sb = sb;
  if (sb.root.empty()) {
    // A container no commit has changed yet: an empty root group.
    auto root = std::make_unique<Node>();
    root->id = kRootId;
    root->kind = ObjectKind::kGroup;
    t->root = root.get();
    t->nodes.emplace(kRootId, std::move(root));
    return Status::OK();
  }
  Status s = LoadNode(sb.root, ObjectKind::kGroup, kRootId, nullptr, "", 0, t);
  if (!s.ok()) return s.WithContext(path());
  return Status::OK();
}

Status ContainerImpl::LoadNode(const BlockRef& ref, ObjectKind kind, ObjectId expect_id, Node* parent, std::string name,
                               int depth, LoadTarget* t) {
  if (depth > kLoadMaxDepth && read_only_) {
    // A reader still serves the rest of the tree, so that it can be
    // exported; nothing below this depth is shown.
    LogWarn(path() + ": object " + std::to_string(expect_id) + " under " + (parent ? PathOfLocked(parent) : "/") +
            " is nested deeper than " + std::to_string(kLoadMaxDepth) +
            " levels and is left out of this read-only open");
    return Status::OK();
  }
  if (depth > kLoadMaxDepth) {
    return Status::Corruption("groups nested deeper than " + std::to_string(kLoadMaxDepth) + " (object " +
                              std::to_string(expect_id) + " under " + (parent ? PathOfLocked(parent) : "/") +
                              "); open it read-only to export the rest");
  }
  const Node* before = nullptr;
  if (t->old) {
    auto it = t->old->find(expect_id);
    if (it != t->old->end() && it->second->kind == kind) before = it->second.get();
    if (before && before->block == ref) return CopySubtree(*before, parent, std::move(name), t);
  }
  std::string what = "object " + std::to_string(expect_id);
  uint8_t version = 1;
  SLABFS_ASSIGN_OR_RETURN(std::string payload, store_.Read(ref, BlockTypeOf(kind), what, &version));
  SLABFS_ASSIGN_OR_RETURN(ObjectRecord rec, DecodeObject(payload, BlockTypeOf(kind), t->sb.file_end, version));
  if (rec.id != expect_id) return Status::Corruption(what + ": block holds object " + std::to_string(rec.id));
  if (rec.id >= t->sb.next_object_id) return Status::Corruption(what + ": id beyond the superblock's next id");
  if (t->nodes.count(rec.id)) return Status::Corruption(what + " appears twice in the tree");
  auto owned = std::make_unique<Node>();
  Node* n = owned.get();
  n->id = rec.id;
  n->kind = kind;
  n->parent = parent;
  n->name = std::move(name);
  n->attrs = std::move(rec.attrs);
  n->attr_bytes = AttributeBytes(n->attrs);
  n->block = ref;
  t->nodes.emplace(n->id, std::move(owned));
  if (!parent)
    t->root = n;
  else
    AddChildLocked(parent, n);
  if (t->info) t->info->changed_objects.push_back(n->id);
  if (kind == ObjectKind::kDataset) {
    const DatasetRecord& d = rec.dataset;
    auto index = OpenChunkIndex(d.index, GeometryOf(d), d.index_root, &store_, PathOfLocked(n));
    if (!index) {
      if (index.error().code() == Code::kNotSupported) return index.error();
      return Status::Corruption(index.error().message());
    }
    n->ds = std::make_shared<DatasetState>(this, n->id, rec.dataset, std::move(*index));
    // A dataset read before keeps its state (handles point at it); it takes
    // these contents once the whole tree has loaded.
    if (before && before->ds) t->replaced.emplace_back(before->ds, n->ds);
    return Status::OK();
  }
  std::vector<ChildPageRef> page_table;
  SLABFS_ASSIGN_OR_RETURN(std::vector<ChildRecord> children,
                          ReadGroupChildren(store_, rec, t->sb.file_end, nullptr, &page_table));
  for (const ChildRecord& c : children)
    SLABFS_RETURN_IF_ERROR(LoadNode(c.block, c.kind, c.id, n, c.name, depth + 1, t));
  n->pages.Adopt(page_table, rec.child_tables);  // after the children, which would touch its pages
  return Status::OK();
}

Status ContainerImpl::CopySubtree(const Node& from, Node* parent, std::string name, LoadTarget* t) {
  if (t->nodes.count(from.id)) {
    return Status::Corruption("object " + std::to_string(from.id) + " appears twice in the tree");
  }
  auto owned = std::make_unique<Node>();
  Node* n = owned.get();
  n->id = from.id;
  n->kind = from.kind;
  n->parent = parent;
  n->name = std::move(name);  // a rename changes the parent's block, not this one
  n->attrs = from.attrs;
  n->attr_bytes = from.attr_bytes;
  n->block = from.block;
  n->ds = from.ds;
  t->nodes.emplace(n->id, std::move(owned));
  if (!parent)
    t->root = n;
  else
    AddChildLocked(parent, n);
  for (const auto& [child_name, child] : from.children) {
    SLABFS_RETURN_IF_ERROR(CopySubtree(*child, n, child_name, t));
  }
  return Status::OK();
}

Result<RefreshInfo> ContainerImpl::Refresh() {
  WriterLock cl(commit_mu_);
  // sb_ changes only under commit_mu_ held exclusively, as here; ns_mu_ is
  // taken only while the newest state is read and loaded.
  const uint64_t current = [this] {
    ReaderLock ns(ns_mu_);
    return sb_.generation;
  }();
  RefreshInfo info;
  info.generation = current;
  if (closed_) return Err(Status::InvalidArgument(path() + " is closed"));
  if (!read_only_) return info;

  auto held = HoldNewestState();
  if (!held) {
    reader_.Keep(current);
    return Err(held.error());
  }
  const Superblock sb = *held;
  const uint64_t g = sb.generation;
  if (g == current) {
    reader_.Keep(g);  // whatever else a retry registered on the way
    return info;
  }

  WriterLock ns(ns_mu_);
  const uint64_t old_end = alloc_.file_end();
  const std::vector<FreedExtent> old_free = alloc_.Unreferenced();
  alloc_.Reset(sb.file_end, {});
  LoadTarget t;
  t.old = &nodes_;
  t.info = &info;
  Status s = LoadTree(sb, &t);
  bool rebuilt = false;  // never, read-only
  FreeListChain chain;
  auto free = s.ok() ? ReadOrRebuildFreeList(sb, t.nodes, &rebuilt, &chain) : Err(s);
  if (!free) {
    s = free.error();
    // Nothing changed: the old state stays read, and registered.
    alloc_.Reset(old_end, old_free);
    reader_.Keep(sb_.generation);
    return Err(s);
  }
  for (const auto& [id, n] : nodes_) {
    auto now = t.nodes.find(id);
    if (n->parent) {
      const Node* moved = now == t.nodes.end() ? nullptr : now->second.get();
      if (!moved || !moved->parent || moved->parent->id != n->parent->id || moved->name != n->name) {
        info.dropped_names.push_back({n->parent->id, n->name});
      }
    }
    if (now != t.nodes.end()) continue;
    info.removed_objects.push_back(id);
    if (n->ds) n->ds->MarkGone();
  }
  for (auto& [live, fresh] : t.replaced) {
    live->ReplaceContents(*fresh);
    t.nodes.at(live->id())->ds = live;
  }
  nodes_ = std::move(t.nodes);
  root_ = t.root;
  sb_ = sb;
  sb_next_id_ = sb.next_object_id;
  alloc_.Reset(sb.file_end, *free);
  reader_.Keep(g);
  info.generation = g;
  info.changed = true;
  std::sort(info.changed_objects.begin(), info.changed_objects.end());
  std::sort(info.removed_objects.begin(), info.removed_objects.end());
  return info;
}

void ContainerImpl::ReleaseHeld() {
  if (alloc_.held_bytes() == 0) return;
  // An extent born at generation b and freed by the commit of f is seen by
  // readers of b .. f-1 only: one lock query for that range of the reader
  // table (reader_table.h), per distinct (b, f).
  bool warned = false;
  auto seen = [&](uint64_t born, uint64_t freed) {
    if (freed <= born) return false;
    auto at = file_->LowestLockIn(kReaderLockBase + born, freed - born);
    if (!at) {
      if (!warned) {
        LogWarn("reading the reader locks of " + path() + ": " + at.error().ToString() + "; freed space is kept back");
        warned = true;
      }
      return true;
    }
    return at->has_value();
  };
  alloc_.Release(seen, static_cast<int64_t>(std::time(nullptr)) - reuse_delay_s_);
}

}  // namespace slabfs::engine
