// The entry of slabfs-hdf5.so (and of the linked-in HDF5 store).
#include "stores/hdf5/hdf5_store_module.h"

#include "stores/modules/build_id.h"

namespace slabfs::stores {
namespace {

Result<std::unique_ptr<Store>> Open(const std::string& path, const Hdf5StoreOptions& options) {
  return OpenHdf5Store(path, options);
}

}  // namespace
}  // namespace slabfs::stores

extern "C" __attribute__((visibility("default"))) const void* slabfs_hdf5_store_module() {
  static const slabfs::stores::Hdf5StoreModule kModule{{SLABFS_BUILD_ID}, &slabfs::stores::Open};
  return &kModule;
}
