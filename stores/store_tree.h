// The tree a foreign store found when it opened (groups, datasets,
// attributes, what it skipped), and the Store methods that answer from it:
// the HDF5 store and the Zarr store each walk their source once into a
// TreeStore and say only how a dataset is opened (MakeDataset).
//
// Thread safety: filled by the store's walk before the store is handed
// out, then never changed, so every const method may run from any number
// of threads at once.
#ifndef SLABFS_STORES_STORE_TREE_H_
#define SLABFS_STORES_STORE_TREE_H_

#include <functional>
#include <map>
#include <memory>
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
  std::shared_ptr<const ChunkedLayout> layout;  // datasets
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

  // For the walk. The root ("/", kRootId) first, then nodes under it.
  ObjectId AddRoot();
  ObjectId AddNode(ObjectId parent, const std::string& name, const std::string& path, ObjectKind kind);
  StoreNode& node(ObjectId id) { return nodes_[id - 1]; }
  // Leaves `path` out, with `reason` (and an info line in the log).
  void Skip(std::string path, std::string reason);
  // The same for something whose metadata is damaged (SkippedObject::damaged).
  void SkipDamaged(std::string path, std::string reason);

 protected:
  // The dataset of node n (which has a layout), id its id.
  virtual std::shared_ptr<const StoreDataset> MakeDataset(const StoreNode& n, ObjectId id) const = 0;
  const std::shared_ptr<engine::ChunkCache>& cache() const { return cache_; }

 private:
  Result<const StoreNode*> Get(ObjectId id) const;

  std::string path_;
  std::shared_ptr<engine::ChunkCache> cache_;
  std::vector<StoreNode> nodes_;  // id - 1
  std::vector<SkippedObject> skipped_;
};

}  // namespace slabfs::stores

#endif  // SLABFS_STORES_STORE_TREE_H_
