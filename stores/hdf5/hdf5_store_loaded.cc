// The HDF5 store loaded from slabfs-hdf5.so on first use: `slab` and `slabfs`.
#include "stores/hdf5/hdf5_store_module.h"

namespace slabfs::stores {

Result<const Hdf5StoreModule*> Hdf5StoreEntry() {
  return LoadFormatModuleTable<Hdf5StoreModule>("hdf5", "slabfs_hdf5_store_module");
}

}  // namespace slabfs::stores
