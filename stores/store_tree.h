// The tree a foreign store found when it opened (groups, datasets,
// attributes, what it skipped), and the Store methods that answer from it:
// the HDF5 store and the Zarr store each walk their source once into a
// TreeStore and say only how a dataset is opened (MakeDataset).
//
// Thread safety: filled by the store's walk before the store is handed
// out. A store that changes in place (the Zarr store opened for writing)
// adds nodes and changes attributes later, holding tree_mu() exclusively;
// every const method holds it shared, so any of them may run from any
// number of threads at once. Lock order: a dataset's ChunkedLayout::mu,
// then tree_mu(); the tree's methods take a layout's lock only after
// letting go of tree_mu().
#ifndef SLABFS_STORES_STORE_TREE_H_
#define SLABFS_STORES_STORE_TREE_H_

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "slabfs/store.h"
#include "stores/chunked_dataset.h"

namespace slabfs::engine {
class ChunkCache;
}  // namespace slabfs::engine

namespace slabfs::stores {

struct StoreNode {
  std::string name;
  std::string path;
  ObjectId parent = 0;
  ObjectKind kind = ObjectKind::kGroup;
  std::map<std::string, ObjectId, std::less<>> children;
  std::map<std::string, Attribute, std::less<>> attrs;
  std::shared_ptr<ChunkedLayout> layout;  // datasets
  // Where the store keeps the object, when it says (the Zarr store: the
  // group's or array's directory; "" for a root it made up).
  std::string location;
};

class TreeStore : public Store {
 public:
  TreeStore(std::string path, std::shared_ptr<engine::ChunkCache> cache);
  ~TreeStore() override;

  const std::string& path() const final { return path_; }
  Result<ObjectId> Lookup(ObjectId parent, std::string_view name) const final;
  Result<ObjectInfo> Stat(ObjectId id) const final;
  Result<std::vector<Entry>> List(ObjectId group) const final;
  Result<std::string> PathOf(ObjectId id) const final;
  Result<std::vector<std::string>> ListAttributes(ObjectId id) const final;
  Result<Attribute> GetAttribute(ObjectId id, std::string_view name) const final;
  Result<std::shared_ptr<const StoreDataset>> OpenDataset(ObjectId id) const final;
  std::vector<SkippedObject> Skipped() const final { return skipped_; }
  CacheStats cache_stats() const final;
  using Store::OpenDataset;

  // For the walk (and a writable store, holding tree_mu() exclusively).
  // The root ("/", kRootId) first, then nodes under it. node() references
  // stay valid as nodes are added.
  ObjectId AddRoot();
  ObjectId AddNode(ObjectId parent, const std::string& name, const std::string& path, ObjectKind kind);
  StoreNode& node(ObjectId id) { return nodes_[id - 1]; }
  size_t num_nodes() const { return nodes_.size(); }
  // Leaves `path` out, with `reason` (and an info line in the log).
  void Skip(std::string path, std::string reason);
  // The same for something whose metadata is damaged (SkippedObject::damaged).
  void SkipDamaged(std::string path, std::string reason);

 protected:
  // The dataset of node n (which has a layout), id its id.
  virtual std::shared_ptr<const StoreDataset> MakeDataset(const StoreNode& n, ObjectId id) const = 0;
  const std::shared_ptr<engine::ChunkCache>& cache() const { return cache_; }
  std::shared_mutex& tree_mu() const { return mu_; }

 private:
  Result<const StoreNode*> Get(ObjectId id) const;

  std::string path_;
  std::shared_ptr<engine::ChunkCache> cache_;
  mutable std::shared_mutex mu_;
  std::deque<StoreNode> nodes_;  // id - 1
  std::vector<SkippedObject> skipped_;
};

}  // namespace slabfs::stores

#endif  // SLABFS_STORES_STORE_TREE_H_
