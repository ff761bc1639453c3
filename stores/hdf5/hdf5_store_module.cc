// The entry of slabfs-hdf5.so (and of the linked-in HDF5 store).
#include "stores/hdf5/hdf5_store_module.h"

#include "stores/modules/build_id.h"

extern "C" __attribute__((visibility("default"))) const void* slabfs_hdf5_store_module() {
  static const slabfs::stores::Hdf5StoreModule kModule{{SLABFS_BUILD_ID}, &slabfs::stores::OpenHdf5Store};
  return &kModule;
}
