#include "stores/store_tree.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <mutex>
#include <shared_mutex>

#include "engine/cache/chunk_cache.h"

namespace slabfs::stores {

TreeStore::TreeStore(std::string path, std::shared_ptr<engine::ChunkCache> cache)
    : path_(std::move(path)), cache_(std::move(cache)) {}

TreeStore::~TreeStore() = default;

Result<const StoreNode*> TreeStore::Get(ObjectId id) const {
  if (id < 1 || id > nodes_.size()) return Err(Status::NotFound(fmt::format("{}: no object {}", path_, id)));
  return &nodes_[id - 1];
}

Result<ObjectId> TreeStore::Lookup(ObjectId parent, std::string_view name) const {
  std::shared_lock lock(mu_);
  SLABFS_ASSIGN_OR_RETURN(const StoreNode* p, Get(parent));
  if (p->kind != ObjectKind::kGroup) return Err(Status::NotAGroup(p->path + ": not a group"));
  auto it = p->children.find(name);
  if (it == p->children.end()) return Err(Status::NotFound(fmt::format("{}: no {} in {}", path_, name, p->path)));
  return it->second;
}

Result<ObjectInfo> TreeStore::Stat(ObjectId id) const {
  ObjectInfo info;
  std::shared_ptr<const ChunkedLayout> layout;
  {
    std::shared_lock lock(mu_);
    SLABFS_ASSIGN_OR_RETURN(const StoreNode* n, Get(id));
    info.id = id;
    info.kind = n->kind;
    info.num_children = n->children.size();
    layout = n->layout;
  }
  if (layout) {
    std::shared_lock lock(layout->mu);
    info.size_bytes = layout->info.dataset.size_bytes;
    info.stored_bytes = layout->info.dataset.stored_bytes;
  }
  return info;
}

Result<std::vector<Entry>> TreeStore::List(ObjectId group) const {
  std::shared_lock lock(mu_);
  SLABFS_ASSIGN_OR_RETURN(const StoreNode* g, Get(group));
  if (g->kind != ObjectKind::kGroup) return Err(Status::NotAGroup(g->path + ": not a group"));
  std::vector<Entry> out;
  out.reserve(g->children.size());
  for (const auto& [name, id] : g->children) out.push_back({name, id, nodes_[id - 1].kind});
  return out;
}

Result<std::string> TreeStore::PathOf(ObjectId id) const {
  std::shared_lock lock(mu_);
  SLABFS_ASSIGN_OR_RETURN(const StoreNode* n, Get(id));
  return n->path;
}

Result<std::vector<std::string>> TreeStore::ListAttributes(ObjectId id) const {
  std::shared_lock lock(mu_);
  SLABFS_ASSIGN_OR_RETURN(const StoreNode* n, Get(id));
  std::vector<std::string> names;
  for (const auto& [name, _] : n->attrs) names.push_back(name);
  return names;
}

Result<Attribute> TreeStore::GetAttribute(ObjectId id, std::string_view name) const {
  std::shared_lock lock(mu_);
  SLABFS_ASSIGN_OR_RETURN(const StoreNode* n, Get(id));
  auto it = n->attrs.find(name);
  if (it == n->attrs.end())
    return Err(Status::NotFound(fmt::format("{}: no attribute '{}' on {}", path_, name, n->path)));
  return it->second;
}

Result<std::shared_ptr<const StoreDataset>> TreeStore::OpenDataset(ObjectId id) const {
  std::shared_lock lock(mu_);
  SLABFS_ASSIGN_OR_RETURN(const StoreNode* n, Get(id));
  if (!n->layout) return Err(Status::NotADataset(n->path + ": not a dataset"));
  return MakeDataset(*n, id);
}

CacheStats TreeStore::cache_stats() const { return cache_->stats(); }

ObjectId TreeStore::AddRoot() {
  StoreNode n;
  n.name = "/";
  n.path = "/";
  nodes_.push_back(std::move(n));
  return kRootId;
}

ObjectId TreeStore::AddNode(ObjectId parent, const std::string& name, const std::string& path, ObjectKind kind) {
  StoreNode n;
  n.name = name;
  n.path = path;
  n.parent = parent;
  n.kind = kind;
  nodes_.push_back(std::move(n));
  const ObjectId id = nodes_.size();
  nodes_[parent - 1].children.emplace(name, id);
  return id;
}

void TreeStore::Skip(std::string path, std::string reason) {
  spdlog::info("{} store {}: skipped {}: {}", format(), path_, path, reason);
  skipped_.push_back({std::move(path), std::move(reason)});
}

void TreeStore::SkipDamaged(std::string path, std::string reason) {
  spdlog::warn("{} store {}: skipped {}, which is damaged: {}", format(), path_, path, reason);
  skipped_.push_back({std::move(path), std::move(reason), /*damaged=*/true});
}

}  // namespace slabfs::stores
