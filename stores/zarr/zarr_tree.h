// The Zarr store's tree (a TreeStore that knows each group's and array's
// directory) and, when opened for writing, its writer (zarr_writer.h).
// Opening walks the directory into it (zarr_store.cc).
#ifndef SLABFS_STORES_ZARR_ZARR_TREE_H_
#define SLABFS_STORES_ZARR_ZARR_TREE_H_

#include <memory>
#include <string>
#include <string_view>

#include "stores/store_tree.h"
#include "stores/zarr/zarr_dataset.h"

namespace slabfs::stores {

class ZarrWriter;

class ZarrStore final : public TreeStore {
 public:
  ZarrStore(std::string path, std::shared_ptr<engine::ChunkCache> cache, bool v3);
  ~ZarrStore() override;

  std::string_view format() const override { return "zarr"; }
  // The writer when the store was opened for writing, else null.
  StoreWriter* writer() override;
  // Opens the writer; called once, after the walk.
  void MakeWritable();

  bool v3() const { return v3_; }
  using TreeStore::cache;
  using TreeStore::tree_mu;

 private:
  std::shared_ptr<const StoreDataset> MakeDataset(const StoreNode& n, ObjectId id) const override {
    return std::make_shared<ZarrDataset>(std::static_pointer_cast<const ZarrLayout>(n.layout), cache(), id);
  }

  const bool v3_;
  std::unique_ptr<ZarrWriter> writer_;
};

}  // namespace slabfs::stores

#endif  // SLABFS_STORES_ZARR_ZARR_TREE_H_
